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
#include <time.h>

#include "agent/phase.h"
#include "util/clock.h"
#include "util/fs.h"

/* How long an item waits for a server that cannot be reached before it fails. */
#define SERVER_WAIT_S 120

/* Opens the session (or takes the open one) and makes one connection to see that the engine answers. */
static int session_and_probe(vb_phase_ctx *ctx, vb_error *err) {
    int opened;
    const Vbench__Assign *a = ctx->assign;
    int rc = vb_session_get(ctx->session, a->engine, a->config, ctx->engine_params, ctx->n_engine_params, a->dataset,
                            ctx->dataset_params, ctx->n_dataset_params, (int)a->k, (long)a->io_timeout_s, ctx->work_dir, ctx->cache_dir,
                            &opened, err);
    /* An embedded engine has no server to wait for (and a test engine counts its connections). */
    if (rc != VB_OK || (vb_engine_ops_of((*ctx->session)->engine)->flags & VB_ENGINE_EMBEDDED)) return rc;
    vb_conn *c = NULL;
    vb_error perr;
    rc = vb_engine_connect((*ctx->session)->engine, &c, &perr);
    vb_conn_close(&c);
    /* Only "cannot be reached" is waited for; any other answer (e.g. a database the build has not created yet)
     * is the phase's to meet and report. */
    if (rc != VB_RETRY) return VB_OK;
    *err = perr;
    return VB_RETRY;
}

/* A server that cannot be reached (restarting after a crash: by the orchestrator, or by a supervisor of its own
 * for a server vbench did not start) is waited for, up to SERVER_WAIT_S, instead of failing this item and, in
 * the same second, every item after it (seen in the soak: 17 items failed within 0.2 s of a PostgreSQL
 * restart, "the database system is starting up"). The probe connection matters when the session is already
 * open: its clients would otherwise find the server gone only once the item runs. */
static int open_session(vb_phase_ctx *ctx, vb_session **out, vb_error *err) {
    int rc;
    const Vbench__Assign *a = ctx->assign;
    uint64_t deadline = vb_now_ns() + SERVER_WAIT_S * 1000000000ull;
    int said = 0;
    while ((rc = session_and_probe(ctx, err)) == VB_RETRY && vb_now_ns() < deadline &&
           !(ctx->stop && atomic_load(ctx->stop))) {
        if (!said)
            vb_phase_log(ctx, "warn", "%s: the server cannot be reached (%s): waiting up to %d s for it", a->engine,
                         err->message, SERVER_WAIT_S);
        said = 1;
        vb_sleep_ns(500000000ull);
    }
    if (rc != VB_OK) return VB_ERROR;
    if (said) vb_phase_log(ctx, "info", "%s: the server answers again", a->engine);
    *out = *ctx->session;
    return VB_OK;
}

static int phase_params(vb_phase_ctx *ctx, long *conns, long *batch, vb_error *err) {
    *conns = ctx->point.load_connections;
    *batch = ctx->point.load_batch;
    if (*conns < 1 || *batch < 1)
        return vb_error_set(err, "agent", 1, "build point: load_connections %ld, load_batch %ld (the coordinator's "
                            "plan gives both >= 1: is it another version?)", *conns, *batch);
    return VB_OK;
}

typedef struct build_job {
    vb_engine *engine;
    vb_error err;
    int rc;
    uint64_t t_end;            /* taken by the build thread the moment the engine returns */
    int done;                  /* under lock; cond signalled when it turns 1 */
    pthread_mutex_t lock;
    pthread_cond_t cond;
} build_job;

static void *build_thread(void *arg) {
    build_job *j = arg;
    j->rc = vb_engine_build(j->engine, &j->err);
    j->t_end = vb_now_ns();
    pthread_mutex_lock(&j->lock);
    j->done = 1;
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&j->lock);
    return NULL;
}

/* Waits up to one second for the build thread; returns 1 once it is done. The wait ends the moment the thread
 * signals, so the progress reports never delay what follows the build (first_query_s). */
static int build_wait(build_job *j) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += 1;
    pthread_mutex_lock(&j->lock);
    while (!j->done && pthread_cond_timedwait(&j->cond, &j->lock, &until) == 0) {}
    int done = j->done;
    pthread_mutex_unlock(&j->lock);
    return done;
}

/* The index build (CREATE INDEX and the like) can take hours on a large corpus: it runs on a thread of its own
 * while this one reports the engine's progress every second (percent, rate, ETA) where the engine can say.
 * *t_end is when the engine's build returned, measured by the thread that ran it: the progress wait is not
 * part of the build time. An engine without a build step (the graph grows on insert, or no index at all) has
 * nothing to time: *t_end is the start, and build_s is exactly 0. */
static int build_with_progress(vb_phase_ctx *ctx, vb_session *s, uint64_t t_start, uint64_t *t_end, vb_error *err) {
    *t_end = t_start;
    if (!vb_engine_ops_of(s->engine)->build) return VB_OK;
    vb_phase_progress(ctx, "build", 0, 1, 0, 1);
    build_job j = {.engine = s->engine};
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j.cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&j.lock, NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, build_thread, &j) != 0) {
        build_thread(&j);   /* no thread: build here, without progress reports */
    } else {
        while (!build_wait(&j)) {
            uint64_t done = 0, total = 0;
            char stage[96];
            vb_error perr;
            if (vb_engine_build_progress(s->engine, &done, &total, stage, sizeof stage, &perr) == VB_OK && total) {
                double secs = (double)(vb_now_ns() - t_start) / 1e9;
                char label[128];
                snprintf(label, sizeof label, "build: %s", stage);
                vb_phase_progress(ctx, label, done, total, secs > 0 ? (double)done / secs : 0, 0);
            }
        }
        pthread_join(t, NULL);
    }
    pthread_cond_destroy(&j.cond);
    pthread_mutex_destroy(&j.lock);
    *t_end = j.t_end;
    if (j.rc != VB_OK && err) *err = j.err;
    return j.rc;
}

/* Whether this attempt's load continues from the committed checkpoint (Point.load_resume_rows, from the
 * coordinator): where the engine allows it (a server whose graph grows on insert, MariaDB MHNSW and AliSQL VIDX:
 * the rows it holds are the index; or one whose index is built after the load, VB_ENGINE_LOAD_RESUMES, pgvector:
 * its committed COPY batches stay, and the build makes the index once the load is complete; with an upsert for
 * the rows around the checkpoint) and the server still holds
 * the table with at least the rows the checkpoint vouches for. *cont = 0: create the table and load from the first
 * row, said why. The rows committed after the last checkpoint are in the table too: the table's count bounds how
 * many, so each slice writes that many rows after its checkpoint again, as upserts. */
static int load_resume(vb_phase_ctx *ctx, vb_session *s, long conns, vb_load_resume *lr, int *cont, vb_error *err) {
    const vb_point *p = &ctx->point;
    const vb_engine_ops *ops = vb_engine_ops_of(s->engine);
    *cont = 0;
    if (p->load_resume_rows <= 0) return VB_OK;
    size_t vouched = vb_load_vouched(s->ds->n_train, (int)conns, (size_t)p->load_resume_rows);
    if ((ops->flags & VB_ENGINE_EMBEDDED) || !(ops->flags & (VB_ENGINE_BUILD_ON_INSERT | VB_ENGINE_LOAD_RESUMES)) ||
        !ops->insert || !ops->attach) {
        vb_phase_log(ctx, "warn", "%s on %s: the load's checkpoint (%zu rows) cannot be continued on this engine: "
                     "loading from the first row", s->engine_name, s->dataset_name, vouched);
        return VB_OK;
    }
    vb_table_spec spec = s->spec;
    spec.attach_missing = spec.capacity;   /* a load in progress: any number of rows, this table's schema */
    int found = 0;
    if (vb_engine_attach(s->engine, &spec, &found, err) != VB_OK) return VB_ERROR;
    vb_sizes sz = {.rows = -1};
    if (found && vb_engine_sizes(s->engine, &sz, err) != VB_OK) return VB_ERROR;
    if (!found || sz.rows < (int64_t)vouched) {
        vb_phase_log(ctx, "warn", "%s on %s: the load's checkpoint vouches for %zu rows, but the server %s: loading "
                     "from the first row", s->engine_name, s->dataset_name, vouched,
                     !found ? "has no such table" : "holds fewer");
        return VB_OK;
    }
    lr->slice_rows = (size_t)p->load_resume_rows;
    lr->upsert_rows = (size_t)sz.rows - vouched;
    lr->prior_s = p->load_resume_s;
    lr->prior_attempts = p->load_resume_attempts;
    *cont = 1;
    vb_phase_log(ctx, "info", "%s on %s: continuing the load from its checkpoint at row %zu: %zu of %zu rows in "
                 "(row %zu of each of %ld slices), %zu more in the table written again as upserts, %.1f s of load in %ld "
                 "earlier attempt%s", s->engine_name, s->dataset_name, vouched, vouched, s->ds->n_train, lr->slice_rows,
                 conns, lr->upsert_rows, lr->prior_s, lr->prior_attempts, lr->prior_attempts == 1 ? "" : "s");
    if (vouched >= s->ds->n_train && ops->build)
        vb_phase_log(ctx, "info", "%s on %s: the load was complete before the restart: only the index is built again",
                     s->engine_name, s->dataset_name);
    return VB_OK;
}

/* create + load + build; shared by the timed build and the untimed rebuild. Fills the three timestamps. With
 * resume (the timed build), the load continues from its checkpoint where it can and sends checkpoints. */
static int load_and_build(vb_phase_ctx *ctx, vb_session *s, vb_load_resume *resume, uint64_t *t_start,
                          uint64_t *t_loaded, uint64_t *t_built, long *conns_out, vb_error *err) {
    long conns, batch;
    if (phase_params(ctx, &conns, &batch, err)) return VB_ERROR;
    *conns_out = conns;
    s->ready = 0;
    s->churn_deleted = 0;
    s->churn_reinserted = 0;
    s->sweep_warmed = 0;   /* a new index: the sweep warms it again (issue 36.5) */
    int cont = 0;
    if (resume && load_resume(ctx, s, conns, resume, &cont, err)) return VB_ERROR;
    if (!cont && resume) {
        /* From the first row: the earlier checkpoints no longer hold once the table is made again (a checkpoint of
         * 0 rows, sent before create, is this attempt's, which the coordinator's next Assign goes by). */
        *resume = (vb_load_resume){.checkpoints = 1};
        if (ctx->point.load_resume_rows > 0) vb_phase_load_checkpoint(ctx, (int)conns, 0, 0, 0, 1);
    }
    if (!cont && vb_engine_create(s->engine, &s->spec, err) != VB_OK) return VB_ERROR;
    *t_start = vb_now_ns();
    if (vb_phase_load_corpus(ctx, s, (int)conns, (int)batch, resume, t_loaded, err) != VB_OK) return VB_ERROR;
    return build_with_progress(ctx, s, *t_loaded, t_built, err);
}

int vb_phase_ensure_index_churn(vb_phase_ctx *ctx, double fraction, vb_error *err) {
    vb_session *s;
    if (open_session(ctx, &s, err)) return VB_ERROR;
    size_t missing = fraction > 0 && fraction <= 1 ? vb_churn_rows(fraction, s->spec.capacity) : 0;
    /* The session's attach wanted every row: a table in the middle of a churn has fewer. The churn item runs only
     * after the build item is done and nothing else deletes rows, so a table short by at most the churn's rows is
     * the build's table, not a load that stopped half-way. */
    if (!s->ready && missing > 0 && !(vb_engine_ops_of(s->engine)->flags & VB_ENGINE_EMBEDDED)) {
        vb_table_spec spec = s->spec;
        spec.attach_missing = missing;
        int found = 0;
        if (vb_engine_attach(s->engine, &spec, &found, err) != VB_OK) return VB_ERROR;
        s->ready = found;
    }
    return vb_phase_ensure_index(ctx, err);
}

/* The index is there, and the server's command counts have their baseline (taken after any rebuild). */
int vb_phase_ensure_index(vb_phase_ctx *ctx, vb_error *err) {
    vb_session *s;
    if (open_session(ctx, &s, err)) return VB_ERROR;
    if (s->ready && s->build && ctx->point.build && s->build != ctx->point.build) {
        /* build_repeats: this item measures another build than the one the session holds (the plan runs each build's
         * sweep before the next build, so only a change of plan order gets here): build it again, said so */
        vb_phase_log(ctx, "warn", "%s on %s: the index is build %ld, this item measures build %ld; rebuilding it "
                     "untimed, the recorded build row stands", s->engine_name, s->dataset_name, s->build,
                     ctx->point.build);
        s->ready = 0;
    } else if (s->ready) {
        vb_phase_count_begin(ctx, s->engine);
        return VB_OK;
    } else if ((vb_engine_ops_of(s->engine)->flags & VB_ENGINE_EMBEDDED) && ctx->assign && ctx->assign->helper_of &&
               ctx->assign->helper_of[0]) {
        /* a helper lent to a capacity item (agent/phase_capacity.c): an embedded engine runs in each agent */
        vb_phase_log(ctx, "info", "%s on %s: building this agent's own copy of the index, untimed (an embedded engine runs "
                                  "in each client agent: lent to agent %s's capacity item)", s->engine_name,
                     s->dataset_name, ctx->assign->helper_of);
    } else if (vb_engine_ops_of(s->engine)->flags & VB_ENGINE_EMBEDDED) {
        /* A server keeps its table over agent restarts (the session attached to it when it opened): no table there
         * is data the server lost, and what is measured on the rebuilt one is a finding (v_validity "measured after
         * a rebuild"), found by this message's words "the server lost the table". */
        vb_phase_log(ctx, "warn", "%s on %s: no index in this agent (restart?); rebuilding it untimed, the recorded "
                                  "build row stands", s->engine_name, s->dataset_name);
    } else {
        vb_phase_log(ctx, "warn", "%s on %s: the server lost the table (it does not hold the built index any more); "
                                  "rebuilding it untimed, the recorded build row stands and what is measured on the "
                                  "rebuilt table is flagged", s->engine_name, s->dataset_name);
    }
    uint64_t t0, t1, t2;
    long conns;
    if (load_and_build(ctx, s, NULL, &t0, &t1, &t2, &conns, err)) return VB_ERROR;
    s->ready = 1;
    s->build = ctx->point.build;
    if (vb_engine_persist(s->engine, err) != VB_OK) return VB_ERROR;
    /* read replicas: every replica has applied the rebuild before anything is measured */
    if (vb_engine_catch_up(s->engine, err) != VB_OK) return VB_ERROR;
    vb_phase_count_begin(ctx, s->engine);
    return VB_OK;
}

int vb_phase_build_prefix(vb_phase_ctx *ctx, size_t rows, vb_error *err) {
    vb_session *s;
    if (open_session(ctx, &s, err)) return VB_ERROR;
    s->ready = 0;
    s->churn_deleted = 0;
    s->churn_reinserted = 0;
    s->sweep_warmed = 0;   /* a new index: the sweep warms it again (issue 36.5) */
    if (vb_engine_create(s->engine, &s->spec, err) != VB_OK) return VB_ERROR;
    uint64_t t_loaded, t_built;
    if (vb_phase_load_rows(ctx, s, rows, 2, 1000, NULL, &t_loaded, err) != VB_OK) return VB_ERROR;
    if (build_with_progress(ctx, s, t_loaded, &t_built, err) != VB_OK) return VB_ERROR;
    return vb_engine_catch_up(s->engine, err);   /* read replicas: the stream starts from replicas at lag 0 */
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
    int had_gt = s->have_gt, computed = 0;
    long long rb0, rb1;
    vb_fs_io_self(&rb0, NULL);
    if (!had_gt)
        vb_phase_log(ctx, "info", "dataset %s (%zu x %zu, %zu queries): opened in %.2f s, %.1f MiB read and %.1f MiB "
                     "written (the float32 cache: written when it was not there)", s->dataset_name, s->ds->n_train,
                     s->ds->dim, s->ds->n_test, s->ds_open_s,
                     s->ds_read_bytes >= 0 ? (double)s->ds_read_bytes / 1048576.0 : -1.0,
                     s->ds_written_bytes >= 0 ? (double)s->ds_written_bytes / 1048576.0 : -1.0);
    uint64_t gt0 = vb_now_ns();
    if (vb_phase_groundtruth(ctx, s, &computed, err)) return VB_ERROR;
    if (!had_gt) {
        /* what the ground truth read from disk against the corpus's size: about once when it streams, many
         * times when it thrashes under a memory limit (docs/benchmarks.md, bench-scale) */
        vb_fs_io_self(&rb1, NULL);
        double corpus_mib = (double)s->ds->n_train * (double)s->ds->dim * sizeof(float) / 1048576.0;
        vb_phase_log(ctx, "info", "ground truth for %s (%zu queries, k=%d): %s in %.2f s, %.1f MiB read from disk "
                     "for a corpus of %.1f MiB", s->dataset_name, s->ds->n_test, s->k,
                     computed                 ? "computed and cached"
                     : s->ds->use_shipped_gt ? "the dataset's shipped neighbours, checked exactly on a sample"
                                             : "loaded from the cache",
                     (double)(vb_now_ns() - gt0) / 1e9,
                     rb0 >= 0 && rb1 >= rb0 ? (double)(rb1 - rb0) / 1048576.0 : -1.0, corpus_mib);
    }

    uint64_t cpu0 = vb_process_cpu_ns(), t0, t1, t2;
    long conns;
    vb_phase_count_begin(ctx, s->engine);   /* the load's writes and the first query, against the server's counts */
    vb_load_resume lr = {.checkpoints = 1};
    if (load_and_build(ctx, s, &lr, &t0, &t1, &t2, &conns, err)) return VB_ERROR;
    if (first_answer(ctx, s, err)) return VB_ERROR;
    uint64_t t3 = vb_now_ns(), cpu1 = vb_process_cpu_ns();
    s->ready = 1;
    s->build = ctx->point.build;

    vb_sizes sz;
    char version[256] = "";
    if (vb_engine_sizes(s->engine, &sz, err) || vb_engine_version(s->engine, version, sizeof version, err))
        return VB_ERROR;
    vb_phase_progress(ctx, "persist", 0, 1, 0, 1);
    if (vb_engine_persist(s->engine, err) != VB_OK) return VB_ERROR;
    /* read replicas: every replica has applied the build (and the sizes' ANALYZE) before anything is measured */
    if (vb_engine_catch_up(s->engine, err) != VB_OK) return VB_ERROR;

    Vbench__BuildResult b = VBENCH__BUILD_RESULT__INIT;
    b.rows = s->ds->n_train;
    /* A load continued from its checkpoint: its time is the sum of the attempts' load work (lr.prior_s, what the
     * last checkpoint of the earlier attempts said), first_query_s likewise; client_cpu_s is this attempt's. */
    b.load_s = lr.prior_s + (double)(t1 - t0) / 1e9;
    b.build_s = (double)(t2 - t1) / 1e9;
    b.first_query_s = lr.prior_s + (double)(t3 - t0) / 1e9;
    b.attempts = (uint32_t)(lr.prior_attempts + 1);
    b.rows_per_s = b.load_s > 0 ? (double)b.rows / b.load_s : 0;
    b.index_bytes = sz.index_bytes;
    b.table_bytes = sz.table_bytes;
    b.client_cpu_s = (double)(cpu1 - cpu0) / 1e9;
    b.engine_version = version;
    b.load_connections = (uint32_t)conns;
    b.dataset_hash = s->ds->content_hash;
    vb_phase_node_result(ctx, s->engine, "build");
    Vbench__Result r = VBENCH__RESULT__INIT;
    r.completes_item = 1;
    r.body_case = VBENCH__RESULT__BODY_BUILD;
    r.build = &b;
    vb_phase_result(ctx, &r, "build");
    return VB_OK;
}
