/* One concurrency window in its wire form: a workload result turned into the WindowResult message the
 * coordinator commits (proto/vbench.proto). Shared by the concurrency phase and by the tests that put windows
 * into a real results database, so both go through the same conversion. Also the windows' progress reports,
 * shared by the concurrency phase and the recall sweep at several client counts. */
#ifndef VB_AGENT_WINDOW_H
#define VB_AGENT_WINDOW_H

#include "agent/waits.h"
#include "agent/workload.h"
#include "proto/vbench.pb-c.h"

typedef struct vb_window_wire {
    Vbench__WindowResult msg;      /* points into this struct (histograms) and into the workload result
                                    * (fraction_in_call): keep both alive and in place while msg is used */
    Vbench__Histogram latency, lag;
    Vbench__WaitCount waits[VB_WAIT_EVENTS_MAX];
    Vbench__WaitCount *waitp[VB_WAIT_EVENTS_MAX];
} vb_window_wire;

/* Fills w from a window-mode result: counts, QPS, the merged latency histogram (from the intended start in the
 * open loop), in-call time, fraction in call per client, client CPU, and for the open loop target rate, late
 * starts and the lag histogram. Histogram arrays are malloc'd; release them with vb_window_wire_free. */
void vb_window_wire_fill(vb_window_wire *w, const vb_workload_result *r, int repeat, int ef_search);
/* The server's accounting over the window (after - before, engine.h vb_server_stats) into w; nothing when either
 * snapshot is unknown (calls < 0) or the counts went back (the server restarted in between). */
void vb_window_wire_server(vb_window_wire *w, const vb_server_stats *before, const vb_server_stats *after);
/* The server's execution time per call inside the window: from at_start (read when the workload's progress
 * call crosses the window's start: the queries in flight then are counted in the window) to after; nothing when at_start is unknown. */
void vb_window_wire_server_window(vb_window_wire *w, const vb_server_stats *at_start, const vb_server_stats *after);
/* The wait profile into w (its strings are borrowed from p: keep p alive while w is used). */
void vb_window_wire_waits(vb_window_wire *w, const vb_wait_profile *p);
void vb_window_wire_free(vb_window_wire *w);

/* Window progress for the coordinator, in ms ("warm-up", then "window": done = elapsed ms, total = window ms),
 * hence percent and ETA: the workload's progress callback, with a vb_window_progress as its argument. */
typedef struct vb_window_progress {
    struct vb_phase_ctx *ctx;
    int last_stage;           /* -1 before the first report; then 0 warm-up, 1 window */
    vb_engine *stats;         /* not NULL: read the server's accounting (vb_server_stats) when the window starts */
    vb_server_stats at_start; /* that reading; calls -1 until taken (or when it failed) */
} vb_window_progress;
void vb_window_on_progress(void *arg, int in_window, uint64_t done_ns, uint64_t total_ns);

/* A window measured as the concurrency phase measures it: the server's statement accounting read before the run, at
 * the window's start (through the progress callback) and after it, and the wait profile sampled while it runs; then
 * all of it put into the window's wire form. Shared by the concurrency phase and the capacity phase's windows. */
typedef struct vb_window_measured {
    vb_window_progress prog;
    vb_server_stats before, after;
    vb_wait_sampler waits;
} vb_window_measured;
/* Runs cfg (its progress callback and argument are set here) on engine with the accounting and the wait profile
 * around it; warnings go to ctx's log. The return value and res are vb_workload_run's. */
int vb_window_measured_run(struct vb_phase_ctx *ctx, vb_engine *engine, vb_workload_config *cfg, vb_window_measured *m,
                           vb_workload_result *res, vb_error *err);
/* Fills w from res (vb_window_wire_fill) with m's accounting and wait profile; w borrows m's wait profile, so keep m
 * alive while w is used. Release w with vb_window_wire_free. */
void vb_window_measured_fill(struct vb_phase_ctx *ctx, vb_window_measured *m, const vb_workload_result *res,
                             vb_window_wire *w, int repeat, int ef_search);

#endif
