/* Phase dispatch, reporting helpers, and the corpus load shared by build and rebuild. */
#include "agent/phase.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "datasets/dataset.h"
#include "proto/wire.h"
#include "util/clock.h"

vb_phase_fn vb_phase_lookup(Vbench__Phase phase) {
    switch (phase) {
    case VBENCH__PHASE__PHASE_BUILD: return vb_phase_build;
    case VBENCH__PHASE__PHASE_RECALL_SWEEP: return vb_phase_recall_sweep;
    case VBENCH__PHASE__PHASE_CONCURRENCY: return vb_phase_concurrency;
    case VBENCH__PHASE__PHASE_CHURN: return vb_phase_churn;
    case VBENCH__PHASE__PHASE_FILTERED: return vb_phase_filtered;
    case VBENCH__PHASE__PHASE_STREAMING: return vb_phase_streaming;
    case VBENCH__PHASE__PHASE_MIXED: return vb_phase_mixed;
    case VBENCH__PHASE__PHASE_COLD_START: return vb_phase_cold_start;
    case VBENCH__PHASE__PHASE_CAPACITY: return vb_phase_capacity;
    default: return NULL;
    }
}

static void send_env(vb_phase_ctx *ctx, Vbench__Envelope *env) {
    vb_error err;
    if (vb_wire_send(ctx->out, NULL, env, &err) != VB_OK) fprintf(stderr, "vbench-agent: %s\n", err.message);
}

void vb_phase_progress(vb_phase_ctx *ctx, const char *stage, uint64_t done, uint64_t total, double rate, int force) {
    vb_phase_progress_churn(ctx, VBENCH__CHURN_STAGE__CHURN_NONE, stage, done, total, rate, force);
}

void vb_phase_progress_churn(vb_phase_ctx *ctx, Vbench__ChurnStage churn_stage, const char *stage, uint64_t done,
                             uint64_t total, double rate, int force) {
    uint64_t now = vb_now_ns();
    if (!force && now - ctx->last_progress_ns < 500000000ull) return;
    ctx->last_progress_ns = now;
    Vbench__Progress p = VBENCH__PROGRESS__INIT;
    p.item_key = ctx->assign->item_key;
    p.stage = (char *)stage;
    p.done = done;
    p.total = total;
    p.rate = rate;
    p.churn_stage = churn_stage;
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_PROGRESS;
    env.progress = &p;
    send_env(ctx, &env);
}

static void gt_progress(void *arg, uint64_t done, uint64_t total) {
    vb_phase_gt_progress *gp = arg;
    gp->computed = 1;
    double q = total ? (double)done * (double)gp->n_queries / (double)total : 0.0;
    double secs = (double)(vb_now_ns() - gp->t0_ns) / 1e9;
    vb_phase_progress(gp->ctx, "ground truth", (uint64_t)q, gp->n_queries, secs > 0 ? q / secs : 0.0, done == total);
}

vb_gt_opts vb_phase_gt_opts(vb_phase_ctx *ctx, vb_phase_gt_progress *gp, uint64_t n_queries) {
    *gp = (vb_phase_gt_progress){.ctx = ctx, .t0_ns = vb_now_ns(), .n_queries = n_queries};
    return (vb_gt_opts){.progress = gt_progress, .progress_arg = gp, .stop = ctx->stop};
}

vb_gt_opts vb_phase_gt_start(vb_phase_ctx *ctx, vb_phase_gt_progress *gp, uint64_t n_queries) {
    vb_phase_progress(ctx, "ground truth", 0, n_queries, 0, 1);
    return vb_phase_gt_opts(ctx, gp, n_queries);
}

double vb_phase_gt_done(const vb_phase_gt_progress *gp) {
    vb_phase_progress(gp->ctx, "ground truth", gp->n_queries, gp->n_queries, 0, 1);
    return (double)(vb_now_ns() - gp->t0_ns) / 1e9;
}

int vb_phase_groundtruth(vb_phase_ctx *ctx, vb_session *s, int *computed, vb_error *err) {
    vb_phase_gt_progress gp;
    vb_gt_opts go = vb_phase_gt_opts(ctx, &gp, s->ds->n_test);
    int rc = vb_session_groundtruth(s, ctx->cache_dir, &go, err);
    if (computed) *computed = gp.computed;
    return rc;
}

void vb_phase_log(vb_phase_ctx *ctx, const char *level, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    Vbench__Log l = VBENCH__LOG__INIT;
    l.item_key = ctx->assign->item_key;
    l.level = strcmp(level, "error") == 0  ? VBENCH__LOG_LEVEL__LOG_ERROR
            : strcmp(level, "warn") == 0 ? VBENCH__LOG_LEVEL__LOG_WARN
                                         : VBENCH__LOG_LEVEL__LOG_INFO;
    l.message = msg;
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_LOG;
    env.log = &l;
    send_env(ctx, &env);
}

void vb_phase_count_begin(vb_phase_ctx *ctx, vb_engine *e) {
    vb_error err = {0};
    ctx->count.active = 0;
    if (!e || !vb_engine_ops_of(e)->counters || vb_engine_counters(e, &ctx->count.server, &err) != VB_OK ||
        ctx->count.server.searches < 0)
        return;
    vb_engine_sent(e, &ctx->count.searches, &ctx->count.writes);
    ctx->count.engine = e;
    ctx->count.active = 1;
}

void vb_phase_result(vb_phase_ctx *ctx, Vbench__Result *r, const char *suffix) {
    char key[512];
    snprintf(key, sizeof key, "%s#%s", ctx->assign->item_key, suffix);
    r->result_key = key;
    r->item_key = ctx->assign->item_key;
    Vbench__ServerCount sc[2] = {VBENCH__SERVER_COUNT__INIT, VBENCH__SERVER_COUNT__INIT};
    Vbench__ServerCount *scp[2] = {&sc[0], &sc[1]};
    if (ctx->count.active) {
        vb_counters now;
        uint64_t searches, writes;
        vb_error err = {0};
        vb_engine_sent(ctx->count.engine, &searches, &writes);
        if (vb_engine_counters(ctx->count.engine, &now, &err) == VB_OK && now.searches >= 0) {
            /* counts that went back: the server restarted in between (its statistics start at 0), unknown then */
            sc[0].command = "search", sc[0].sent = searches - ctx->count.searches;
            sc[0].server = now.searches >= ctx->count.server.searches ? now.searches - ctx->count.server.searches : -1;
            sc[1].command = "write", sc[1].sent = writes - ctx->count.writes;
            sc[1].server = now.writes >= ctx->count.server.writes ? now.writes - ctx->count.server.writes : -1;
            r->n_server_counts = 2;
            r->server_counts = scp;
            ctx->count.server = now;
            ctx->count.searches = searches, ctx->count.writes = writes;
        } else {
            vb_phase_log(ctx, "warn", "the server's command counts could not be read after %s: %s", suffix, err.message);
            ctx->count.active = 0;
        }
    }
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_RESULT;
    env.result = r;
    send_env(ctx, &env);
    r->n_server_counts = 0;
    r->server_counts = NULL;
}

void vb_phase_histogram_to_wire(const vb_histogram *h, Vbench__Histogram *w) {
    size_t n = vb_histogram_encode(h, NULL, NULL, 0);
    w->idx = malloc((n ? n : 1) * sizeof *w->idx);
    w->counts = malloc((n ? n : 1) * sizeof *w->counts);
    w->n_idx = w->n_counts = vb_histogram_encode(h, w->idx, w->counts, n);
    w->out_of_range = vb_histogram_out_of_range(h);
    w->min_ns = vb_histogram_min(h);
    w->max_ns = vb_histogram_max(h);
}

void vb_phase_histogram_wire_free(Vbench__Histogram *w) {
    free(w->idx);
    free(w->counts);
    w->idx = NULL;
    w->counts = NULL;
    w->n_idx = w->n_counts = 0;
}

/* What the loaders share with the thread that waits for them: how many have finished, and when the last did. */
typedef struct load_state {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int finished;
    uint64_t t_end;
} load_state;

/* One loader thread: its own connection, a contiguous slice of rows [from, to), batches of `batch`. Rows before
 * `start` are in already (a checkpoint); rows [start, upsert_to) may be (committed after the last checkpoint) and
 * go in with insert, an upsert, so none is there twice; the rest with load. `done` is the slice's committed
 * prefix, read by the checkpoints. */
typedef struct loader {
    pthread_t tid;
    load_state *shared;
    vb_engine *engine;
    const vb_dataset *ds;
    size_t from, to, start, upsert_to;
    int batch;
    atomic_ullong *loaded;
    atomic_size_t done;
    atomic_int *stop;
    int rc;
    int joined;
    vb_error err;
} loader;

/* Counts a loader out, noting when it ended (its last row is loaded: the load's end is the last of these). */
static void finish_loader(loader *l) {
    uint64_t now = vb_now_ns();
    pthread_mutex_lock(&l->shared->lock);
    if (now > l->shared->t_end) l->shared->t_end = now;
    l->shared->finished++;
    pthread_cond_signal(&l->shared->cond);
    pthread_mutex_unlock(&l->shared->lock);
}

static void *loader_main(void *arg) {
    loader *l = arg;
    vb_conn *c = NULL;
    l->rc = vb_engine_connect(l->engine, &c, &l->err);
    if (l->rc) {
        finish_loader(l);
        return NULL;
    }
    size_t batch = (size_t)l->batch;
    int64_t *ids = malloc(batch * sizeof *ids);
    int32_t *tags = malloc(batch * sizeof *tags);
    for (size_t row = l->start; row < l->to && l->rc == VB_OK; row += batch) {
        if (l->stop && atomic_load(l->stop)) {
            l->rc = vb_error_set(&l->err, "agent", 1, "aborted");
            break;
        }
        size_t n = row + batch <= l->to ? batch : l->to - row;
        if (row < l->upsert_to && row + n > l->upsert_to) n = l->upsert_to - row;   /* one kind of write a call */
        for (size_t i = 0; i < n; i++) {
            ids[i] = (int64_t)(row + i);
            tags[i] = vb_dataset_tag(ids[i]);
        }
        const float *v = l->ds->train + row * l->ds->dim;
        const int32_t *cl = l->ds->train_class ? l->ds->train_class + row : NULL;   /* the rows' real classes */
        l->rc = row < l->upsert_to ? vb_conn_insert(c, ids, v, tags, cl, n, &l->err)
                                   : vb_conn_load(c, ids, v, tags, cl, n, &l->err);
        if (l->rc == VB_OK) atomic_store(&l->done, row + n - l->from);
        atomic_fetch_add(l->loaded, n);
    }
    free(ids);
    free(tags);
    vb_conn_close(&c);
    finish_loader(l);
    return NULL;
}

void vb_phase_load_checkpoint(vb_phase_ctx *ctx, int connections, size_t slice_rows, size_t rows, double load_s,
                                 long attempts) {
    Vbench__BuildResult b = VBENCH__BUILD_RESULT__INIT;
    b.checkpoint = 1;
    b.rows = rows;
    b.slice_rows = slice_rows;
    b.load_s = load_s;
    b.load_connections = (uint32_t)connections;
    b.attempts = (uint32_t)attempts;
    b.index_bytes = b.table_bytes = -1;
    Vbench__Result r = VBENCH__RESULT__INIT;
    r.body_case = VBENCH__RESULT__BODY_BUILD;
    r.build = &b;
    char suffix[64];
    snprintf(suffix, sizeof suffix, "load-%u@%zu", ctx->assign->attempt, rows);
    int counting = ctx->count.active;
    ctx->count.active = 0;
    vb_phase_result(ctx, &r, suffix);
    ctx->count.active = counting;
}

size_t vb_load_slice_len(size_t n, int connections, int i) {
    return n * (size_t)(i + 1) / (size_t)connections - n * (size_t)i / (size_t)connections;
}

size_t vb_load_vouched(size_t n, int connections, size_t slice_rows) {
    size_t rows = 0;
    for (int i = 0; i < connections; i++) {
        size_t len = vb_load_slice_len(n, connections, i);
        rows += slice_rows < len ? slice_rows : len;
    }
    return rows;
}

int vb_phase_load_corpus(vb_phase_ctx *ctx, vb_session *s, int connections, int batch, const vb_load_resume *resume,
                         uint64_t *t_end, vb_error *err) {
    return vb_phase_load_rows(ctx, s, s->ds->n_train, connections, batch, resume, t_end, err);
}

int vb_phase_load_rows(vb_phase_ctx *ctx, vb_session *s, size_t rows, int connections, int batch,
                       const vb_load_resume *resume, uint64_t *t_end, vb_error *err) {
    const vb_dataset *ds = s->ds;
    if (rows > ds->n_train) rows = ds->n_train;
    static const vb_load_resume fresh = {0};
    if (!resume) resume = &fresh;
    if (connections < 1) connections = 1;
    if (batch < 1) batch = 1;
    atomic_ullong loaded = 0;
    loader *ls = calloc((size_t)connections, sizeof *ls);
    load_state shared = {.finished = 0};
    pthread_mutex_init(&shared.lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&shared.cond, &ca);
    pthread_condattr_destroy(&ca);
    uint64_t t0 = vb_now_ns();
    shared.t_end = t0;
    int started = 0;
    for (int i = 0; i < connections; i++) {
        size_t from = rows * (size_t)i / (size_t)connections;
        size_t to = rows * (size_t)(i + 1) / (size_t)connections;
        size_t start = from + (resume->slice_rows < to - from ? resume->slice_rows : to - from);
        size_t upsert_to = start + (resume->upsert_rows < to - start ? resume->upsert_rows : to - start);
        ls[i] = (loader){.shared = &shared, .engine = s->engine, .ds = ds, .from = from, .to = to, .start = start,
                         .upsert_to = upsert_to, .batch = batch, .loaded = &loaded, .stop = ctx->stop};
        atomic_init(&ls[i].done, start - from);
        atomic_fetch_add(&loaded, start - from);
    }
    /* the rows a continued load found in (its checkpoint): counted as done, but not in this attempt's rate */
    const uint64_t already_in = atomic_load(&loaded);
    for (int i = 0; i < connections; i++) {
        if (pthread_create(&ls[i].tid, NULL, loader_main, &ls[i]) != 0) {
            ls[i].rc = vb_error_set(&ls[i].err, "agent", 1, "cannot start a loader thread");
            break;
        }
        started++;
    }
    /* Report every 50 ms while the loaders run; the wait ends the moment the last one finishes, so the
     * reporting never delays the build that follows. A checkpoint about every second, when the slices' common
     * committed prefix moved. */
    size_t ckpt_rows = resume->slice_rows;
    uint64_t last_ckpt = t0;
    pthread_mutex_lock(&shared.lock);
    while (shared.finished < started) {
        pthread_mutex_unlock(&shared.lock);
        uint64_t done = atomic_load(&loaded), now = vb_now_ns();
        double secs = (double)(now - t0) / 1e9;
        vb_phase_progress(ctx, "load", done, rows, secs > 0 ? (double)(done - already_in) / secs : 0, 0);
        if (resume->checkpoints && started == connections && now - last_ckpt >= 1000000000ull) {
            last_ckpt = now;
            size_t common = (size_t)-1;
            for (int i = 0; i < connections; i++) {
                size_t d = atomic_load(&ls[i].done);
                if (d < common) common = d;
            }
            if (common > ckpt_rows) {
                ckpt_rows = common;
                vb_phase_load_checkpoint(ctx, connections, common, vb_load_vouched(rows, connections, common),
                                     resume->prior_s + secs, resume->prior_attempts + 1);
            }
        }
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += 50000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&shared.lock);
        while (shared.finished < started && pthread_cond_timedwait(&shared.cond, &shared.lock, &until) == 0) {}
    }
    pthread_mutex_unlock(&shared.lock);
    for (int i = 0; i < started; i++) pthread_join(ls[i].tid, NULL);
    if (t_end) *t_end = shared.t_end;
    pthread_cond_destroy(&shared.cond);
    pthread_mutex_destroy(&shared.lock);
    int rc = VB_OK;
    for (int i = 0; i < connections && rc == VB_OK; i++)
        if (ls[i].rc != VB_OK) {
            *err = ls[i].err;
            rc = VB_ERROR;
        }
    /* The load's last checkpoint, where an index build follows a load that can be continued (pgvector's CREATE
     * INDEX): every slice complete, so that a restart during the build builds again without loading a row again. */
    const vb_engine_ops *ops = vb_engine_ops_of(s->engine);
    size_t longest = rows / (size_t)connections + (rows % (size_t)connections != 0);
    if (rc == VB_OK && resume->checkpoints && started == connections && longest > ckpt_rows &&
        (ops->flags & VB_ENGINE_LOAD_RESUMES) && ops->build)
        vb_phase_load_checkpoint(ctx, connections, longest, rows, resume->prior_s + (double)(shared.t_end - t0) / 1e9,
                                 resume->prior_attempts + 1);
    free(ls);
    return rc;
}

void vb_phase_node_result(vb_phase_ctx *ctx, vb_engine *e, const char *after) {
    vb_node_stats ns[VB_ENGINE_MAX_NODES];
    size_t n = 0;
    vb_error err = {0};
    if (vb_engine_node_stats(e, ns, VB_ENGINE_MAX_NODES, &n, &err) != VB_OK) {
        vb_phase_log(ctx, "warn", "the servers' own numbers could not be read after the %s: %s", after, err.message);
        return;
    }
    if (n == 0) return;
    Vbench__NodeStats w[VB_ENGINE_MAX_NODES], *wp[VB_ENGINE_MAX_NODES];
    for (size_t i = 0; i < n; i++) {
        vbench__node_stats__init(&w[i]);
        w[i].node = (uint32_t)ns[i].node;
        w[i].role = ns[i].role;
        w[i].rows = ns[i].rows, w[i].index_bytes = ns[i].index_bytes, w[i].table_bytes = ns[i].table_bytes;
        w[i].searches = ns[i].searches, w[i].lag_bytes = ns[i].lag_bytes, w[i].build_ms = ns[i].build_ms;
        wp[i] = &w[i];
    }
    Vbench__NodeResult nr = VBENCH__NODE_RESULT__INIT;
    nr.after = (char *)after;
    nr.n_nodes = n;
    nr.nodes = wp;
    Vbench__Result r = VBENCH__RESULT__INIT;
    r.body_case = VBENCH__RESULT__BODY_NODES;
    r.nodes = &nr;
    char suffix[64];
    snprintf(suffix, sizeof suffix, "nodes-%s", after);
    vb_phase_result(ctx, &r, suffix);
}

/* ---- the work thread's mailbox ------------------------------------------------------------------------------ */

void vb_mailbox_init(vb_mailbox *m) {
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    m->n = 0;
}

void vb_mailbox_put(vb_mailbox *m, Vbench__Envelope *env) {
    pthread_mutex_lock(&m->mu);
    if (m->n == (int)(sizeof m->q / sizeof m->q[0])) {
        vb_wire_free(m->q[0]);
        memmove(m->q, m->q + 1, (size_t)(m->n - 1) * sizeof m->q[0]);
        m->n--;
    }
    m->q[m->n++] = env;
    pthread_cond_signal(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

Vbench__Envelope *vb_mailbox_take(vb_mailbox *m, uint64_t deadline_ns, atomic_int *stop) {
    Vbench__Envelope *env = NULL;
    pthread_mutex_lock(&m->mu);
    while (m->n == 0 && vb_now_ns() < deadline_ns && !(stop && atomic_load(stop))) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000L;   /* the stop flag is looked at every 100 ms */
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&m->cv, &m->mu, &ts);
    }
    if (m->n > 0) {
        env = m->q[0];
        memmove(m->q, m->q + 1, (size_t)(m->n - 1) * sizeof m->q[0]);
        m->n--;
    }
    pthread_mutex_unlock(&m->mu);
    return env;
}

void vb_mailbox_clear(vb_mailbox *m) {
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < m->n; i++) vb_wire_free(m->q[i]);
    m->n = 0;
    pthread_mutex_unlock(&m->mu);
}

/* ---- replication lag sampled while writes run (read replicas, issue 39) ----------------------------------------- */

#define LAG_MAX_SAMPLES 4096

struct vb_lag_sampler {
    vb_engine *e;
    uint64_t t0, interval_ns;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stop;
    size_t n_nodes, n;              /* nodes per sample, samples taken */
    double *at_s;                   /* [n] */
    int64_t *lag;                   /* [n x n_nodes] */
    char failure[1100];
};

/* One sample of every node's lag into the sampler; non-zero (and failure said) when it cannot be read. */
static int lag_take(vb_lag_sampler *ls) {
    int64_t lag[VB_ENGINE_MAX_NODES];
    size_t n = 0;
    vb_error err = {0};
    uint64_t now = vb_now_ns();
    int rc = vb_engine_node_lag(ls->e, lag, VB_ENGINE_MAX_NODES, &n, &err);
    pthread_mutex_lock(&ls->lock);
    if (rc != VB_OK || n != ls->n_nodes) {
        snprintf(ls->failure, sizeof ls->failure, "%s", rc != VB_OK ? err.message : "the number of nodes changed");
        rc = VB_ERROR;
    } else if (ls->n < LAG_MAX_SAMPLES) {
        ls->at_s[ls->n] = (double)(now - ls->t0) / 1e9;
        memcpy(ls->lag + ls->n * ls->n_nodes, lag, n * sizeof *lag);
        ls->n++;
    }
    pthread_mutex_unlock(&ls->lock);
    return rc;
}

static void *lag_main(void *arg) {
    vb_lag_sampler *ls = arg;
    pthread_mutex_lock(&ls->lock);
    while (!ls->stop && ls->n < LAG_MAX_SAMPLES) {
        pthread_mutex_unlock(&ls->lock);
        int rc = lag_take(ls);
        pthread_mutex_lock(&ls->lock);
        if (rc != VB_OK) break;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        uint64_t ns = (uint64_t)until.tv_nsec + ls->interval_ns;
        until.tv_sec += (time_t)(ns / 1000000000ull);
        until.tv_nsec = (long)(ns % 1000000000ull);
        if (!ls->stop) pthread_cond_timedwait(&ls->cond, &ls->lock, &until);
    }
    pthread_mutex_unlock(&ls->lock);
    return NULL;
}

vb_lag_sampler *vb_lag_sampler_start(vb_engine *e, double interval_s) {
    int64_t lag[VB_ENGINE_MAX_NODES];
    size_t n = 0;
    vb_error err = {0};
    if (vb_engine_node_lag(e, lag, VB_ENGINE_MAX_NODES, &n, &err) != VB_OK || n == 0) return NULL;
    vb_lag_sampler *ls = calloc(1, sizeof *ls);
    if (!ls) return NULL;
    ls->e = e;
    ls->n_nodes = n;
    ls->t0 = vb_now_ns();
    ls->interval_ns = (uint64_t)(interval_s * 1e9);
    ls->at_s = malloc(LAG_MAX_SAMPLES * sizeof *ls->at_s);
    ls->lag = malloc(LAG_MAX_SAMPLES * n * sizeof *ls->lag);
    pthread_mutex_init(&ls->lock, NULL);
    pthread_cond_init(&ls->cond, NULL);
    if (!ls->at_s || !ls->lag || pthread_create(&ls->thread, NULL, lag_main, ls) != 0) {
        free(ls->at_s), free(ls->lag), free(ls);
        return NULL;
    }
    return ls;
}

size_t vb_lag_sampler_nodes(const vb_lag_sampler *ls) { return ls ? ls->n_nodes : 0; }

void vb_lag_sampler_stop(vb_phase_ctx *ctx, vb_lag_sampler **lsp, const char *during) {
    vb_lag_sampler *ls = *lsp;
    if (!ls) return;
    *lsp = NULL;
    pthread_mutex_lock(&ls->lock);
    ls->stop = 1;
    pthread_cond_signal(&ls->cond);
    pthread_mutex_unlock(&ls->lock);
    pthread_join(ls->thread, NULL);
    /* and once more as the writes stop, so a phase shorter than the interval still has its lag at both ends */
    if (!ls->failure[0]) lag_take(ls);
    if (ls->failure[0])
        vb_phase_log(ctx, "warn", "the replicas' lag could not be read during the %s after %zu samples: %s", during,
                     ls->n, ls->failure);
    Vbench__NodeStats w[VB_ENGINE_MAX_NODES], *wp[VB_ENGINE_MAX_NODES];
    for (size_t i = 0; i < ls->n; i++) {
        for (size_t k = 0; k < ls->n_nodes; k++) {
            vbench__node_stats__init(&w[k]);
            w[k].node = (uint32_t)k;
            w[k].role = k ? "replica" : "primary";
            w[k].rows = w[k].index_bytes = w[k].table_bytes = w[k].searches = -1;
            w[k].lag_bytes = ls->lag[i * ls->n_nodes + k];
            wp[k] = &w[k];
        }
        Vbench__NodeResult nr = VBENCH__NODE_RESULT__INIT;
        nr.after = (char *)during;
        nr.n_nodes = ls->n_nodes;
        nr.nodes = wp;
        nr.at_s = ls->at_s[i];
        Vbench__Result r = VBENCH__RESULT__INIT;
        r.body_case = VBENCH__RESULT__BODY_NODES;
        r.nodes = &nr;
        char suffix[96];
        snprintf(suffix, sizeof suffix, "nodes-%s@%zu", during, i);
        vb_phase_result(ctx, &r, suffix);
    }
    pthread_mutex_destroy(&ls->lock);
    pthread_cond_destroy(&ls->cond);
    free(ls->at_s), free(ls->lag), free(ls);
}
