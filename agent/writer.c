/* The writer shared by the streaming and mixed phases (agent/writer.h). */
#include "agent/writer.h"

#include <time.h>

#include "agent/workload.h"
#include "util/clock.h"

void vb_writer_init(vb_writer *w) {
    atomic_init(&w->stop, 0);
    w->rc = VB_OK, w->done = 0;
    w->err = (vb_error){0};
    w->probe_id = -1, w->probe_src = -1, w->probe_ack_ns = 0;
    pthread_mutex_init(&w->lock, NULL);
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&w->count_lock, &ra);
    pthread_rwlockattr_destroy(&ra);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->acked_cond, &ca);
    pthread_condattr_destroy(&ca);
}

void vb_writer_destroy(vb_writer *w) {
    pthread_mutex_destroy(&w->lock);
    pthread_rwlock_destroy(&w->count_lock);
    pthread_cond_destroy(&w->acked_cond);
}

void vb_writer_sleep_until(uint64_t t) {
    struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {}
}

int vb_writer_call(vb_writer *w, vb_engine *e, vb_conn **c, vb_write_fn fn, void *arg, int *retried, uint64_t *start,
                   uint64_t *ack, vb_error *err) {
    *retried = 0;
    pthread_rwlock_rdlock(&w->count_lock);   /* a wait here is the phase thread reading the counts */
    *start = vb_now_ns();
    int rc = fn(*c, arg, err);
    if (rc == VB_RETRY) {   /* a lost connection: once more on a new one (every write is idempotent) */
        *retried = 1;
        vb_conn_close(c);
        rc = vb_engine_connect(e, c, err);
        if (rc == VB_OK) rc = fn(*c, arg, err);
    }
    *ack = vb_now_ns();
    pthread_rwlock_unlock(&w->count_lock);
    return rc;
}

void vb_writer_finish(vb_writer *w, int rc, const vb_error *err) {
    pthread_mutex_lock(&w->lock);
    w->rc = rc == VB_OK ? VB_OK : VB_ERROR;
    if (rc != VB_OK) w->err = *err;
    w->done = 1;
    pthread_cond_signal(&w->acked_cond);
    pthread_mutex_unlock(&w->lock);
}

int vb_writer_failed(vb_writer *w, const char *engine, const char *what, vb_error *err) {
    pthread_mutex_lock(&w->lock);
    int failed = w->done && w->rc != VB_OK;
    if (failed) *err = w->err;
    pthread_mutex_unlock(&w->lock);
    return failed ? vb_error_prefix(err, "%s: %s", engine, what) : VB_OK;
}

void vb_writer_acked(vb_writer *w, int64_t id, int32_t src, uint64_t ack) {
    w->probe_id = id, w->probe_src = src, w->probe_ack_ns = ack;
    pthread_cond_signal(&w->acked_cond);
}

int vb_writer_probe_connect(vb_engine *e, int ef_search, vb_conn **c, vb_error *err) {
    if (vb_engine_connect(e, c, err) != VB_OK) return VB_ERROR;
    vb_search_params sp = {.ef_search = ef_search};
    vb_conn_set_search(*c, &sp, err);
    return VB_OK;
}

int vb_writer_next_ack(vb_writer *w, uint64_t *last_ack, int64_t *id, int32_t *src, uint64_t *ack) {
    pthread_mutex_lock(&w->lock);
    if ((w->probe_id < 0 || w->probe_ack_ns == *last_ack) && !w->done) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += 50000000L;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&w->acked_cond, &w->lock, &until);
    }
    int fresh = w->probe_id >= 0 && w->probe_ack_ns != *last_ack, done = w->done;
    if (fresh) *id = w->probe_id, *src = w->probe_src, *ack = *last_ack = w->probe_ack_ns;
    pthread_mutex_unlock(&w->lock);
    return fresh ? 1 : done ? -1 : 0;
}

int vb_writer_probe_search(vb_writer *w, vb_conn *c, const float *query, int k, int64_t *ids, int *n, vb_error *err) {
    vb_filter nf = {.kind = VB_FILTER_NONE};
    pthread_rwlock_rdlock(&w->count_lock);
    int rc = vb_conn_search(c, query, k, &nf, ids, n, err);
    vb_conn_sent_flush(c);
    pthread_rwlock_unlock(&w->count_lock);
    return rc;
}

void vb_writer_result(vb_writer *w, vb_phase_ctx *ctx, Vbench__Result *r, const char *suffix) {
    pthread_rwlock_wrlock(&w->count_lock);
    vb_phase_result(ctx, r, suffix);
    pthread_rwlock_unlock(&w->count_lock);
}

int vb_writer_gap_search(vb_phase_ctx *ctx, vb_session *s, double secs, int open, double rate, double *qps,
                         vb_error *err) {
    const vb_point *p = &ctx->point;
    vb_workload_config cfg = {
        .engine = s->engine, .clients = (int)p->clients, .cpus = ctx->cpus, .n_cpus = ctx->n_cpus,
        .queries = s->ds->test, .n_queries = s->ds->n_test, .dim = s->ds->dim, .k = s->k,
        .search = {.ef_search = (int)p->ef_search}, .filter = {VB_FILTER_NONE, 0},
        .window_ns = (uint64_t)(secs * 1e9), .stop = ctx->stop,
        .loop = open ? VB_LOOP_OPEN : VB_LOOP_CLOSED, .target_rate = rate, .seed = 7,
    };
    vb_workload_result res;
    int rc = vb_workload_run(&cfg, &res, err);
    if (qps) *qps = res.qps;
    vb_workload_result_free(&res);
    return rc;
}
