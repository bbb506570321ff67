/* What a phase implementation gets from the agent, and how it reports back.
 *
 * A phase runs in the agent's work thread, one item at a time. It reports through ctx->out (an inproc PUSH
 * socket read by the agent's main loop, which owns the coordinator connection): progress as it goes, results
 * as they are measured. It returns VB_OK (the agent then sends Done) or VB_ERROR with err filled (Failed). It
 * checks *ctx->stop between units of work and returns promptly when it is set. */
#ifndef VB_AGENT_PHASE_H
#define VB_AGENT_PHASE_H

#include <czmq.h>
#include <pthread.h>
#include <stdatomic.h>

#include "agent/session.h"
#include "config/plan.h"
#include "metrics/histogram.h"
#include "proto/vbench.pb-c.h"
#include "util/error.h"
#include "util/kv.h"

/* Values of *ctx->stop: why the coordinator stopped the item. */
enum { VB_STOP_NONE = 0, VB_STOP_ABORT = 1, VB_STOP_LIMIT = 2 };

/* Messages of the coordinator for the running item's work thread (a capacity item's ShareRequest and ShareReport:
 * agent/phase_capacity.c): the main thread puts, the work thread takes. */
typedef struct vb_mailbox {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    Vbench__Envelope *q[64];
    int n;
} vb_mailbox;
void vb_mailbox_init(vb_mailbox *m);
/* Takes env (freed when the box is full: the oldest is dropped). */
void vb_mailbox_put(vb_mailbox *m, Vbench__Envelope *env);
/* The oldest message, or NULL once deadline_ns (vb_now_ns) passed or *stop is set; the caller frees it. */
Vbench__Envelope *vb_mailbox_take(vb_mailbox *m, uint64_t deadline_ns, atomic_int *stop);
void vb_mailbox_clear(vb_mailbox *m);

typedef struct vb_phase_ctx {
    const Vbench__Assign *assign;
    vb_point point;            /* the item's parameters as the plan made them (proto/wire.h vb_wire_point_read) */
    vb_kv *engine_params;      /* views of assign's lists */
    size_t n_engine_params;
    vb_kv *dataset_params;
    size_t n_dataset_params;
    vb_session **session;      /* the agent's current session; phases may replace it */
    zsock_t *out;
    atomic_int *stop;
    /* Set by the churn phase once every row is back: a limit abort that arrives later (it crossed the last insert
     * on the wire) is ignored, since the limit is the reinsert's (the coordinator's clock stopped at "maintain"). */
    atomic_int *limit_moot;
    const char *agent_id;
    vb_mailbox *mail;
    const char *work_dir;
    const char *cache_dir;
    const int *cpus;
    int n_cpus;
    uint64_t last_progress_ns;
    /* The validity cross-check of the server's own command counts (engines/engine.h vb_counters) against what
     * vbench sent (vb_engine_sent), per result: vb_phase_count_begin takes the baseline, vb_phase_result attaches
     * both deltas to the result and takes the next baseline. Inactive (nothing attached) for engines without a
     * counters op and until begin. */
    struct {
        vb_engine *engine;
        vb_counters server;
        uint64_t searches, writes;
        int active;
    } count;
} vb_phase_ctx;

typedef int (*vb_phase_fn)(vb_phase_ctx *ctx, vb_error *err);

/* The implementation of a phase, or NULL when this agent cannot run it. */
vb_phase_fn vb_phase_lookup(Vbench__Phase phase);

/* Ground-truth options whose progress callback reports "ground truth" progress for ctx (in queries' worth of the
 * corpus scanned, with its rate), for vb_session_groundtruth and vb_groundtruth_get_opts. gp is the callback's
 * state and must outlive the call. */
typedef struct vb_phase_gt_progress {
    vb_phase_ctx *ctx;
    uint64_t t0_ns, n_queries;
    int computed;          /* the callback ran: the ground truth was computed, not loaded from the cache */
} vb_phase_gt_progress;
vb_gt_opts vb_phase_gt_opts(vb_phase_ctx *ctx, vb_phase_gt_progress *gp, uint64_t n_queries);
/* The same, with the "ground truth" stage shown at 0 of n_queries now; vb_phase_gt_done shows it complete and
 * returns the seconds since vb_phase_gt_start (a ground truth got on its own, outside vb_phase_groundtruth). */
vb_gt_opts vb_phase_gt_start(vb_phase_ctx *ctx, vb_phase_gt_progress *gp, uint64_t n_queries);
double vb_phase_gt_done(const vb_phase_gt_progress *gp);
/* vb_session_groundtruth for ctx's phase, reporting its progress; *computed (may be NULL): 1 when it was computed
 * here, 0 when the session had it, the cache held it or the dataset's shipped neighbours served. */
int vb_phase_groundtruth(vb_phase_ctx *ctx, vb_session *s, int *computed, vb_error *err);

/* Sends progress, at most every 500 ms unless force. */
void vb_phase_progress(vb_phase_ctx *ctx, const char *stage, uint64_t done, uint64_t total, double rate, int force);
/* The same for a churn stage: the coordinator reads the stage (its limit clock starts at CHURN_REINSERT). */
void vb_phase_progress_churn(vb_phase_ctx *ctx, Vbench__ChurnStage churn_stage, const char *stage, uint64_t done,
                             uint64_t total, double rate, int force);
/* level: "info", "warn" or "error" (anything else is sent as info); it travels as a LogLevel. */
void vb_phase_log(vb_phase_ctx *ctx, const char *level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Takes the baseline of the server's command counts and of what vbench sent through e (no-op for an engine without
 * counters, or when the server cannot say now). */
void vb_phase_count_begin(vb_phase_ctx *ctx, vb_engine *e);
/* Sends a result; result_key and item_key are filled in here: key = item key + "#" + suffix. With an active count,
 * the result carries the server's and vbench's counts since the last result (or the baseline): ServerCount "search"
 * (VSIM calls against searches sent) and "write" (VADD calls against rows written). */
void vb_phase_result(vb_phase_ctx *ctx, Vbench__Result *r, const char *suffix);
/* For an engine of several servers (vb_engine_node_stats): each node's rows, sizes, searches and replay lag as a
 * NodeResult "KEY#nodes-AFTER" (not completing the item), sent before the result it accompanies; nothing for an
 * engine of one server. A reading that fails is logged, not the item's failure. */
void vb_phase_node_result(vb_phase_ctx *ctx, vb_engine *e, const char *after);
/* Read replicas' lag sampled while writes run (issue 39): a thread of its own reads each node's lag
 * (vb_engine_node_lag) every interval_s from start until stop, which sends each sample as a NodeResult
 * "KEY#nodes-DURING@I" with after = during and at_s (its time since start); NULL (and nothing sent) for an engine of
 * one server. A reading that fails ends the sampling with a warning, not the item's failure. */
typedef struct vb_lag_sampler vb_lag_sampler;
#define VB_LAG_SAMPLE_S 0.2   /* the churn's and the streaming phase's lag sampling interval */
vb_lag_sampler *vb_lag_sampler_start(vb_engine *e, double interval_s);
void vb_lag_sampler_stop(vb_phase_ctx *ctx, vb_lag_sampler **ls, const char *during);
/* The nodes the sampler reads (primary and replicas), 0 for NULL. */
size_t vb_lag_sampler_nodes(const vb_lag_sampler *ls);
/* Copies a merged latency histogram into its wire form. w->idx and w->counts are malloc'd: release them with
 * vb_phase_histogram_wire_free (which leaves w reusable). */
void vb_phase_histogram_to_wire(const vb_histogram *h, Vbench__Histogram *w);
void vb_phase_histogram_wire_free(Vbench__Histogram *w);

/* Makes sure the session holds a loaded, built index: after a restart it attaches or rebuilds (untimed). */
int vb_phase_ensure_index(vb_phase_ctx *ctx, vb_error *err);
/* The same for the churn phase: a server's table may miss the rows (vb_churn_rows) that an earlier attempt of
 * this churn deleted and has not inserted again; it is attached as it is (the churn puts them back), not
 * reloaded. */
int vb_phase_ensure_index_churn(vb_phase_ctx *ctx, double fraction, vb_error *err);
/* The rows a churn of `fraction` deletes and inserts again in a corpus of n rows (at least one). */
static inline size_t vb_churn_rows(double fraction, size_t n) {
    size_t planned = (size_t)(fraction * (double)n);
    return planned < 1 ? 1 : planned;
}
/* Where a load starts (the build's, continued from its checkpoint after a restart; all 0: from the first row). */
typedef struct vb_load_resume {
    size_t slice_rows;      /* rows already in at the start of each connection's slice: loading starts after them */
    size_t upsert_rows;     /* the next rows of each slice may be in too (committed after the last checkpoint):
                             * they go in with insert, an upsert, so no row is there twice */
    int checkpoints;        /* send load checkpoints (BuildResult.checkpoint) about every second: the timed build */
    double prior_s;         /* the earlier attempts' load seconds, added to the checkpoints' load_s */
    long prior_attempts;    /* the earlier attempts that loaded rows */
} vb_load_resume;
/* A load checkpoint: each of the `connections` slices holds its first `slice_rows` rows (`rows` in all), `load_s`
 * load seconds so far over `attempts` attempts. Sent without the server's command counts (they stay with the
 * build result); key "load-ATTEMPT@ROWS". */
void vb_phase_load_checkpoint(vb_phase_ctx *ctx, int connections, size_t slice_rows, size_t rows, double load_s,
                              long attempts);
/* Rows in slice i of n rows over `connections`, and the rows `slice_rows` of each slice come to. */
size_t vb_load_slice_len(size_t n, int connections, int i);
size_t vb_load_vouched(size_t n, int connections, size_t slice_rows);
/* Bulk-loads the corpus over `connections` parallel connections (each a contiguous slice of the rows) in batches;
 * reports progress. Used by build (timed) and by the rebuild path (untimed). resume (may be NULL: from the first
 * row, no checkpoints). *t_end (may be NULL) gets the moment the last loader finished, on vb_now_ns's clock, so
 * progress reporting is not part of the load time. */
int vb_phase_load_corpus(vb_phase_ctx *ctx, vb_session *s, int connections, int batch, const vb_load_resume *resume,
                         uint64_t *t_end, vb_error *err);

/* vb_phase_load_corpus for rows [0, rows) only (the streaming phase's initial fraction). */
int vb_phase_load_rows(vb_phase_ctx *ctx, vb_session *s, size_t rows, int connections, int batch,
                       const vb_load_resume *resume, uint64_t *t_end, vb_error *err);
/* The streaming phase's own index: opens the session, creates the table, loads rows [0, rows) and builds the
 * index (untimed: the stream is what is measured). The session is not ready until the stream has inserted the
 * rest (the caller sets s->ready). */
int vb_phase_build_prefix(vb_phase_ctx *ctx, size_t rows, vb_error *err);

int vb_phase_build(vb_phase_ctx *ctx, vb_error *err);
int vb_phase_streaming(vb_phase_ctx *ctx, vb_error *err);
int vb_phase_recall_sweep(vb_phase_ctx *ctx, vb_error *err);
int vb_phase_concurrency(vb_phase_ctx *ctx, vb_error *err);
int vb_phase_churn(vb_phase_ctx *ctx, vb_error *err);
int vb_phase_filtered(vb_phase_ctx *ctx, vb_error *err);
int vb_phase_cold_start(vb_phase_ctx *ctx, vb_error *err);
int vb_phase_capacity(vb_phase_ctx *ctx, vb_error *err);
int vb_phase_mixed(vb_phase_ctx *ctx, vb_error *err);

#endif
