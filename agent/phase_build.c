/* The build phase: bulk load, index build, time to the first successful query, sizes.
 *
 * Timings: load_s covers the bulk load (for engines that grow the graph on insert it includes the graph),
 * build_s the separate index build (0 where there is none), first_query_s runs from the start of the load to
 * the first successful answer. Ground truth is computed before the clock starts, and the index is persisted
 * for resume after it stops, so neither is counted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <stdatomic.h>

#include "agent/phase.h"
#include "util/clock.h"

static int open_session(vb_phase_ctx *ctx, vb_session **out, vb_error *err) {
    int opened;
    const Vbench__Assign *a = ctx->assign;
    if (vb_session_get(ctx->session, a->engine, ctx->engine_params, ctx->n_engine_params, a->dataset,
                       ctx->dataset_params, ctx->n_dataset_params, (int)a->k, ctx->work_dir, ctx->cache_dir,
                       &opened, err) != VB_OK)
        return VB_ERROR;
    *out = *ctx->session;
    return VB_OK;
}

static int phase_params(vb_phase_ctx *ctx, long *conns, long *batch, vb_error *err) {
    if (vb_kv_get_long(ctx->phase_params, ctx->n_phase_params, "load_connections", 2, 1, 1024, conns, err) ||
        vb_kv_get_long(ctx->phase_params, ctx->n_phase_params, "load_batch", 1000, 1, 10000000, batch, err))
        return vb_error_prefix(err, "phases.build");
    return VB_OK;
}

typedef struct build_job {
    vb_engine *engine;
    vb_error err;
    int rc;
    atomic_int done;
} build_job;

static void *build_thread(void *arg) {
    build_job *j = arg;
    j->rc = vb_engine_build(j->engine, &j->err);
    atomic_store(&j->done, 1);
    return NULL;
}

/* The index build (CREATE INDEX and the like) can take hours on a large corpus: it runs on a thread of its own
 * while this one reports the engine's progress every second (percent, rate, ETA) where the engine can say. */
static int build_with_progress(vb_phase_ctx *ctx, vb_session *s, vb_error *err) {
    vb_phase_progress(ctx, "build", 0, 1, 0, 1);
    build_job j = {.engine = s->engine};
    pthread_t t;
    if (pthread_create(&t, NULL, build_thread, &j) != 0) return vb_engine_build(s->engine, err);
    uint64_t t0 = vb_now_ns();
    while (!atomic_load(&j.done)) {
        for (int i = 0; i < 10 && !atomic_load(&j.done); i++) vb_sleep_ns(100000000ull);
        uint64_t done = 0, total = 0;
        char stage[96];
        vb_error perr;
        if (!atomic_load(&j.done) &&
            vb_engine_build_progress(s->engine, &done, &total, stage, sizeof stage, &perr) == VB_OK && total) {
            double secs = (double)(vb_now_ns() - t0) / 1e9;
            char label[128];
            snprintf(label, sizeof label, "build: %s", stage);
            vb_phase_progress(ctx, label, done, total, secs > 0 ? (double)done / secs : 0, 0);
        }
    }
    pthread_join(t, NULL);
    if (j.rc != VB_OK && err) *err = j.err;
    return j.rc;
}

/* create + load + build; shared by the timed build and the untimed rebuild. Fills the three timestamps. */
static int load_and_build(vb_phase_ctx *ctx, vb_session *s, uint64_t *t_start, uint64_t *t_loaded,
                          uint64_t *t_built, long *conns_out, vb_error *err) {
    long conns, batch;
    if (phase_params(ctx, &conns, &batch, err)) return VB_ERROR;
    *conns_out = conns;
    s->ready = 0;
    s->churn_deleted = 0;
    s->churn_reinserted = 0;
    if (vb_engine_create(s->engine, &s->spec, err) != VB_OK) return VB_ERROR;
    *t_start = vb_now_ns();
    if (vb_phase_load_corpus(ctx, s, (int)conns, (int)batch, err) != VB_OK) return VB_ERROR;
    *t_loaded = vb_now_ns();
    if (build_with_progress(ctx, s, err) != VB_OK) return VB_ERROR;
    *t_built = vb_now_ns();
    return VB_OK;
}

int vb_phase_ensure_index(vb_phase_ctx *ctx, vb_error *err) {
    vb_session *s;
    if (open_session(ctx, &s, err)) return VB_ERROR;
    if (s->ready) return VB_OK;
    vb_phase_log(ctx, "warn", "%s on %s: no index in this agent (restart?); rebuilding it untimed, the recorded "
                              "build row stands", s->engine_name, s->dataset_name);
    uint64_t t0, t1, t2;
    long conns;
    if (load_and_build(ctx, s, &t0, &t1, &t2, &conns, err)) return VB_ERROR;
    s->ready = 1;
    if (vb_engine_persist(s->engine, err) != VB_OK) return VB_ERROR;
    return VB_OK;
}

/* Polls with the first query until the engine answers: some engines accept queries only after a while. */
static int first_answer(vb_phase_ctx *ctx, vb_session *s, vb_error *err) {
    vb_conn *c = NULL;
    if (vb_engine_connect(s->engine, &c, err) != VB_OK) return VB_ERROR;
    int64_t ids[1024];
    int k = s->k < 1024 ? s->k : 1024, n = 0, rc;
    uint64_t deadline = vb_now_ns() + 600ull * 1000000000ull;
    while ((rc = vb_conn_search(c, s->ds->test, k, NULL, ids, &n, err)) != VB_OK) {
        if ((ctx->stop && atomic_load(ctx->stop)) || vb_now_ns() > deadline) break;
        vb_sleep_ns(10000000ull);
    }
    vb_conn_close(&c);
    if (rc != VB_OK) vb_error_prefix(err, "no successful query after the build");
    return rc;
}

int vb_phase_build(vb_phase_ctx *ctx, vb_error *err) {
    vb_session *s;
    if (open_session(ctx, &s, err)) return VB_ERROR;
    vb_phase_progress(ctx, "ground truth", 0, s->ds->n_test, 0, 1);
    if (vb_session_groundtruth(s, ctx->cache_dir, err)) return VB_ERROR;

    uint64_t cpu0 = vb_process_cpu_ns(), t0, t1, t2;
    long conns;
    if (load_and_build(ctx, s, &t0, &t1, &t2, &conns, err)) return VB_ERROR;
    if (first_answer(ctx, s, err)) return VB_ERROR;
    uint64_t t3 = vb_now_ns(), cpu1 = vb_process_cpu_ns();
    s->ready = 1;

    vb_sizes sz;
    char version[256] = "";
    if (vb_engine_sizes(s->engine, &sz, err) || vb_engine_version(s->engine, version, sizeof version, err))
        return VB_ERROR;
    vb_phase_progress(ctx, "persist", 0, 1, 0, 1);
    if (vb_engine_persist(s->engine, err) != VB_OK) return VB_ERROR;

    Vbench__BuildResult b = VBENCH__BUILD_RESULT__INIT;
    b.rows = s->ds->n_train;
    b.load_s = (double)(t1 - t0) / 1e9;
    b.build_s = (double)(t2 - t1) / 1e9;
    b.first_query_s = (double)(t3 - t0) / 1e9;
    b.rows_per_s = b.load_s > 0 ? (double)b.rows / b.load_s : 0;
    b.index_bytes = sz.index_bytes;
    b.table_bytes = sz.table_bytes;
    b.client_cpu_s = (double)(cpu1 - cpu0) / 1e9;
    b.engine_version = version;
    b.load_connections = (uint32_t)conns;
    b.dataset_hash = s->ds->content_hash;
    Vbench__Result r = VBENCH__RESULT__INIT;
    r.completes_item = 1;
    r.body_case = VBENCH__RESULT__BODY_BUILD;
    r.build = &b;
    vb_phase_result(ctx, &r, "build");
    return VB_OK;
}
