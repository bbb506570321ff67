/* WindowResult from a workload result, and window progress (see window.h). The window length sent is the one measured (elapsed_s),
 * so QPS = queries / window_s and in flight = in_call_s / window_s hold on the coordinator's side too. */
#include "agent/window.h"

#include <string.h>

#include "agent/phase.h"

void vb_window_wire_fill(vb_window_wire *w, const vb_workload_result *r, int repeat, int ef_search) {
    memset(w, 0, sizeof *w);
    Vbench__WindowResult init = VBENCH__WINDOW_RESULT__INIT;
    Vbench__Histogram hinit = VBENCH__HISTOGRAM__INIT;
    w->msg = init;
    w->latency = hinit;
    w->lag = hinit;
    vb_phase_histogram_to_wire(r->latency, &w->latency);
    Vbench__WindowResult *m = &w->msg;
    m->clients = (uint32_t)r->clients;
    m->repeat = (uint32_t)repeat;
    m->ef_search = ef_search;
    m->window_s = r->elapsed_s;
    m->queries = r->queries;
    m->errors = r->errors;
    m->qps = r->qps;
    m->latency = &w->latency;
    m->in_call_s = r->in_call_s;
    m->n_fraction_in_call = (size_t)r->clients;
    m->fraction_in_call = r->fraction_in_call;
    m->client_cpu_s = r->client_cpu_s;
    m->warmup_queries = r->warmup_queries;
    m->edge_queries = r->edge_queries;
    m->window_start = r->window_start;
    m->clients_lost = (uint64_t)r->clients_lost;
    if (r->target_rate > 0) {
        m->target_rate = r->target_rate;
        m->late_starts = r->late_starts;
        if (r->lag) {
            vb_phase_histogram_to_wire(r->lag, &w->lag);
            m->lag = &w->lag;
        }
    }
}

void vb_window_wire_server(vb_window_wire *w, const vb_server_stats *before, const vb_server_stats *after) {
    if (before->calls < 0 || after->calls < before->calls || after->exec_s < before->exec_s) return;
    w->msg.server_stats = 1;
    w->msg.server_calls = after->calls - before->calls;
    w->msg.server_exec_s = after->exec_s - before->exec_s;
}

void vb_window_wire_waits(vb_window_wire *w, const vb_wait_profile *p) {
    for (size_t i = 0; i < p->n && i < VB_WAIT_EVENTS_MAX; i++) {
        Vbench__WaitCount init = VBENCH__WAIT_COUNT__INIT;
        w->waits[i] = init;
        w->waits[i].wait_class = (char *)p->ev[i].wait_class;
        w->waits[i].event = (char *)p->ev[i].event;
        w->waits[i].samples = p->ev[i].samples;
        w->waitp[i] = &w->waits[i];
    }
    w->msg.n_waits = p->n;
    w->msg.waits = p->n ? w->waitp : NULL;
    w->msg.wait_rounds = p->rounds;
    w->msg.wait_unit = (char *)(p->timed == 2 ? "calls" : p->timed ? "us" : "session-samples");
}

void vb_window_wire_server_window(vb_window_wire *w, const vb_server_stats *at_start, const vb_server_stats *after) {
    if (!w->msg.server_stats || at_start->calls < 0 || after->calls <= at_start->calls) return;
    w->msg.server_window_calls = after->calls - at_start->calls;
    w->msg.server_window_exec_s = after->exec_s - at_start->exec_s;
}

/* Forced when the stage changes and when the window is complete, else at most every 500 ms (vb_phase_progress). */
void vb_window_on_progress(void *arg, int in_window, uint64_t done_ns, uint64_t total_ns) {
    vb_window_progress *p = arg;
    if (in_window && p->stats && p->last_stage != 1) {
        vb_error err = {0};
        if (vb_engine_server_stats(p->stats, &p->at_start, &err) != VB_OK) p->at_start.calls = -1;
    }
    int force = in_window != p->last_stage || done_ns >= total_ns;
    p->last_stage = in_window;
    vb_phase_progress(p->ctx, in_window ? "window" : "warm-up", done_ns / 1000000u, total_ns / 1000000u, 1000.0,
                      force);
}

void vb_window_wire_free(vb_window_wire *w) {
    vb_phase_histogram_wire_free(&w->latency);
    vb_phase_histogram_wire_free(&w->lag);
    w->msg.latency = w->msg.lag = NULL;
}

int vb_window_measured_run(vb_phase_ctx *ctx, vb_engine *engine, vb_workload_config *cfg, vb_window_measured *m,
                           vb_workload_result *res, vb_error *err) {
    memset(m, 0, sizeof *m);
    m->prog = (vb_window_progress){ctx, -1, NULL, {-1, -1}};
    m->before = m->after = (vb_server_stats){-1, -1};
    cfg->progress = vb_window_on_progress;
    cfg->progress_arg = &m->prog;
    /* the server's accounting around the whole run: warm-up, window and the queries that end after it */
    vb_error serr = {0};
    if (vb_engine_server_stats(engine, &m->before, &serr) != VB_OK) {
        vb_phase_log(ctx, "warn", "the server's statement accounting could not be read before the window: %s",
                     serr.message);
        m->before.calls = -1;
    }
    /* the workload calls progress at the window's start exactly (agent/workload.c wait_window), when it reads again */
    if (m->before.calls >= 0) m->prog.stats = engine;
    if (!vb_wait_sampler_start(&m->waits, engine, 0) && m->waits.off[0])
        vb_phase_log(ctx, "info", "no wait profile: %s", m->waits.off);
    int wrc = vb_workload_run(cfg, res, err);
    vb_wait_sampler_stop(&m->waits);
    if (m->waits.error[0]) vb_phase_log(ctx, "warn", "the wait profile stopped: %s", m->waits.error);
    if (wrc == VB_OK && m->before.calls >= 0 && vb_engine_server_stats(engine, &m->after, &serr) != VB_OK) {
        vb_phase_log(ctx, "warn", "the server's statement accounting could not be read after the window: %s",
                     serr.message);
        m->after.calls = -1;
    }
    return wrc;
}

void vb_window_measured_fill(vb_phase_ctx *ctx, vb_window_measured *m, const vb_workload_result *res,
                             vb_window_wire *w, int repeat, int ef_search) {
    vb_window_wire_fill(w, res, repeat, ef_search);
    vb_window_wire_server(w, &m->before, &m->after);
    vb_window_wire_server_window(w, &m->prog.at_start, &m->after);
    int keep_waits = !m->waits.error[0];
    if (keep_waits && m->waits.profile.timed == 1) {
        /* Waits timed by the server (MariaDB): on CPU is the rest of its statements' time over the same span. */
        if (m->before.calls >= 0 && m->after.calls >= 0 && m->after.exec_s >= m->before.exec_s) {
            uint64_t waited = 0;
            for (size_t i = 0; i < m->waits.profile.n; i++) waited += m->waits.profile.ev[i].samples;
            double exec_us = (m->after.exec_s - m->before.exec_s) * 1e6;
            vb_wait_profile_add(&m->waits.profile, "CPU", "CPU", exec_us > (double)waited ? (uint64_t)(exec_us - (double)waited) : 0);
        } else {
            vb_phase_log(ctx, "warn", "the wait profile is left out: without the server's statement time it has no CPU share");
            keep_waits = 0;
        }
    }
    if (keep_waits) vb_window_wire_waits(w, &m->waits.profile);
}
