/* The churn phase: measure, delete a seeded random fraction of the corpus, insert the same vectors again under
 * the coordinator's wall-clock limit, run the engine's maintenance, measure again.
 *
 * The rows to delete are the first rows_planned of a permutation seeded by the corpus size, so every attempt
 * picks the same rows; they are inserted again in that order with the same ids (ids_reused = 1), so the ground
 * truth after the reinsert is the one from before. The reinsert reports a checkpoint (rows inserted so far,
 * cumulative) about every second; when the coordinator aborts it at its limit, it stops between two insert calls
 * and reports the rows done and the rate. A later attempt gets the committed checkpoint as `resume_rows` and
 * continues from there: first it brings the index to exactly "all planned rows deleted, the first resume_rows
 * inserted again" (untimed), then the timed reinsert goes on. Rows are never counted twice.
 *
 * Repeats (phases.churn.repeats): the before and the after measurements run that many times each, back to back,
 * around one delete and reinsert. A second delete-and-reinsert on the same index would start from a churned
 * index, not from the first one's state (deleted graph nodes, dead tuples and the reinserted layout stay), so it
 * would not be a repeat of the first; the spread the repeats give is that of the measurements. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/measure.h"
#include "agent/phase.h"
#include "datasets/dataset.h"
#include "proto/wire.h"
#include "util/clock.h"
#include "util/mix.h"

#define CHECKPOINT_NS 1000000000ull

typedef struct churn {
    vb_phase_ctx *ctx;
    vb_session *s;
    vb_conn *conn;
    int64_t *ids;          /* the rows to delete and insert again, in order */
    size_t planned;
    long batch;
} churn;

/* The first `planned` entries of a Fisher-Yates shuffle of [0, n), the same on every host (splitmix64). */
static int64_t *pick_rows(size_t n, size_t planned) {
    int64_t *all = malloc(n * sizeof *all);
    for (size_t i = 0; i < n; i++) all[i] = (int64_t)i;
    uint64_t seed = 0xc0ffee ^ (uint64_t)n;
    for (size_t i = 0; i < planned; i++) {
        size_t j = i + (size_t)(vb_splitmix64(&seed) % (uint64_t)(n - i));
        int64_t t = all[i];
        all[i] = all[j];
        all[j] = t;
    }
    return all;
}

static int remove_range(churn *c, size_t from, size_t to, vb_error *err) {
    for (size_t i = from; i < to; i += (size_t)c->batch) {
        size_t n = i + (size_t)c->batch <= to ? (size_t)c->batch : to - i;
        if (vb_conn_remove(c->conn, c->ids + i, n, err) != VB_OK) return VB_ERROR;
    }
    return VB_OK;
}

/* Inserts rows [from, to) of the plan; stops between calls when the stop flag is set (returns VB_OK with
 * *done < to). Checkpoints are reported when `report` is set. */
static int insert_range(churn *c, size_t from, size_t to, int report, size_t *done, uint64_t t0, vb_error *err) {
    const vb_dataset *ds = c->s->ds;
    size_t b = (size_t)c->batch;
    float *vecs = malloc(b * ds->dim * sizeof *vecs);
    int32_t *tags = malloc(b * sizeof *tags), *classes = ds->train_class ? malloc(b * sizeof *classes) : NULL;
    uint64_t last_ckpt = vb_now_ns();
    int rc = VB_OK;
    *done = from;
    if (!vecs || !tags || (ds->train_class && !classes)) {
        free(vecs), free(tags), free(classes);
        return vb_error_set(err, "agent", 1, "out of memory for an insert batch of %zu rows", b);
    }
    for (size_t i = from; i < to; i += b) {
        if (c->ctx->stop && atomic_load(c->ctx->stop)) break;
        size_t n = i + b <= to ? b : to - i;
        for (size_t j = 0; j < n; j++) {
            memcpy(vecs + j * ds->dim, ds->train + (size_t)c->ids[i + j] * ds->dim, ds->dim * sizeof *vecs);
            tags[j] = vb_dataset_tag(c->ids[i + j]);
            if (classes) classes[j] = ds->train_class[c->ids[i + j]];
        }
        if ((rc = vb_conn_insert(c->conn, c->ids + i, vecs, tags, classes, n, err)) != VB_OK) break;
        *done = i + n;
        c->s->churn_reinserted = *done;
        if (!report) continue;
        uint64_t now = vb_now_ns();
        double secs = (double)(now - t0) / 1e9;
        vb_phase_progress_churn(c->ctx, VBENCH__CHURN_STAGE__CHURN_REINSERT, "reinsert", *done, c->planned,
                                secs > 0 ? (double)(*done - from) / secs : 0, 0);
        if (now - last_ckpt >= CHECKPOINT_NS) {
            last_ckpt = now;
            Vbench__ChurnResult r = VBENCH__CHURN_RESULT__INIT;
            r.stage = VBENCH__CHURN_STAGE__CHURN_CHECKPOINT;
            r.rows_planned = c->planned;
            r.rows_done = *done;
            r.rows_from = from;
            r.seconds = secs;
            r.rows_per_s = secs > 0 ? (double)(*done - from) / secs : 0;
            r.ids_reused = 1;
            Vbench__Result res = VBENCH__RESULT__INIT;
            res.body_case = VBENCH__RESULT__BODY_CHURN;
            res.churn = &r;
            char suffix[64];
            snprintf(suffix, sizeof suffix, "checkpoint@%zu", *done);
            vb_phase_result(c->ctx, &res, suffix);
        }
    }
    free(vecs);
    free(tags);
    free(classes);
    return rc;
}

/* One measurement, repeat r of the stage: its result key is "before" / "after" for the first (what it was before
 * repeats), "before-R" for the others. */
static void send_measure(vb_phase_ctx *ctx, Vbench__ChurnStage stage, long r, const vb_measure *m, int completes) {
    vb_measure_wire mw;
    Vbench__Result res;
    vb_measure_point_begin(m, completes, &mw, &res);
    Vbench__ChurnResult cr = VBENCH__CHURN_RESULT__INIT;
    cr.stage = stage;
    cr.m = &mw.msg;
    cr.seconds = m->elapsed_s;
    cr.repeat = (uint32_t)r;
    res.body_case = VBENCH__RESULT__BODY_CHURN;
    res.churn = &cr;
    char suffix[64];
    if (r > 1) snprintf(suffix, sizeof suffix, "%s-%ld", vb_wire_churn_stage_name(stage), r);
    else snprintf(suffix, sizeof suffix, "%s", vb_wire_churn_stage_name(stage));
    vb_measure_point_send(ctx, &res, &mw, suffix);
}

/* The stage's measurements, p->repeats of them back to back on the same index (nothing changes it between
 * them); the last "after" completes the item. */
static int measure_repeats(vb_phase_ctx *ctx, vb_session *s, Vbench__ChurnStage stage, const char *what,
                           vb_error *err) {
    const vb_point *p = &ctx->point;
    long n = p->repeats > 0 ? p->repeats : 1;
    for (long r = 1; r <= n; r++) {
        vb_measure m;
        vb_phase_progress(ctx, what, (size_t)(r - 1), (size_t)n, 0, 1);
        if (vb_measure_run(ctx, s, (int)p->ef_search, (size_t)p->queries, NULL, &s->gt, &m, err)) return VB_ERROR;
        send_measure(ctx, stage, r, &m, stage == VBENCH__CHURN_STAGE__CHURN_AFTER && r == n);
        vb_measure_free(&m);
    }
    return VB_OK;
}

static void send_stage(vb_phase_ctx *ctx, Vbench__ChurnStage stage, const char *suffix, size_t planned, size_t from,
                       size_t done, double secs, double rate, int completed) {
    Vbench__ChurnResult r = VBENCH__CHURN_RESULT__INIT;
    r.stage = stage;
    r.rows_planned = planned;
    r.rows_from = from;
    r.rows_done = done;
    r.seconds = secs;
    r.rows_per_s = rate;
    r.completed = completed;
    r.ids_reused = 1;
    Vbench__Result res = VBENCH__RESULT__INIT;
    res.body_case = VBENCH__RESULT__BODY_CHURN;
    res.churn = &r;
    vb_phase_result(ctx, &res, suffix);
}

/* Brings the index to "all planned rows deleted, rows [0, resume) inserted again", untimed. */
static int restore_checkpoint(churn *c, size_t resume, vb_error *err) {
    vb_session *s = c->s;
    int embedded = (vb_engine_ops_of(s->engine)->flags & VB_ENGINE_EMBEDDED) != 0;
    size_t done;
    vb_phase_log(c->ctx, "info", "%s on %s: continuing the reinsert from row %zu of %zu", s->engine_name,
                 s->dataset_name, resume, c->planned);
    if (!embedded && !s->churn_deleted) {
        /* A server keeps its data: the planned rows are deleted and at least `resume` of them are back; rows past
         * the checkpoint may have made it before the stop, uncounted, so they are removed and inserted again. */
        if (remove_range(c, resume, c->planned, err)) return VB_ERROR;
        s->churn_deleted = 1;
        s->churn_reinserted = resume;
        return VB_OK;
    }
    if (!s->churn_deleted) {
        vb_phase_progress(c->ctx, "restore checkpoint", 0, c->planned, 0, 1);
        if (remove_range(c, 0, c->planned, err)) return VB_ERROR;
        s->churn_deleted = 1;
        s->churn_reinserted = 0;
    }
    if (s->churn_reinserted > resume && remove_range(c, resume, s->churn_reinserted, err)) return VB_ERROR;
    if (s->churn_reinserted < resume && insert_range(c, s->churn_reinserted, resume, 0, &done, vb_now_ns(), err))
        return VB_ERROR;
    s->churn_reinserted = resume;
    if (c->ctx->stop && atomic_load(c->ctx->stop))
        return vb_error_set(err, atomic_load(c->ctx->stop) == VB_STOP_LIMIT ? "limit" : "agent", 1,
                            "stopped while restoring the reinsert checkpoint; `vbench resume` continues it");
    return VB_OK;
}

int vb_phase_churn(vb_phase_ctx *ctx, vb_error *err) {
    if (vb_phase_ensure_index_churn(ctx, ctx->point.fraction, err)) return VB_ERROR;
    vb_session *s = *ctx->session;
    if (vb_phase_groundtruth(ctx, s, NULL, err)) return VB_ERROR;
    const vb_engine_ops *ops = vb_engine_ops_of(s->engine);
    if (!ops->remove || !ops->insert)
        return vb_error_set(err, "engine", 1, "%s cannot delete and insert rows: churn is not possible", s->engine_name);

    const vb_point *p = &ctx->point;
    double fraction = p->fraction;
    long ef = p->ef_search, nq = p->queries, batch = p->insert_batch;
    long resume = p->churn_start == VB_CHURN_CONTINUE ? p->resume_rows : -1;   /* -1: a fresh start */
    if (!(fraction > 0 && fraction <= 1) || ef < 1 || nq < 0 || batch < 1 || (resume < -1))
        return vb_error_set(err, "agent", 1, "churn point: fraction %g, ef_search %ld, queries %ld, insert_batch %ld",
                            fraction, ef, nq, batch);

    churn c = {.ctx = ctx, .s = s, .batch = batch};
    c.planned = vb_churn_rows(fraction, s->ds->n_train);
    if (resume > (long)c.planned)
        return vb_error_set(err, "agent", 1, "checkpoint says %ld rows reinserted, but only %zu are planned", resume,
                            c.planned);
    c.ids = pick_rows(s->ds->n_train, c.planned);
    int rc = vb_engine_connect(s->engine, &c.conn, err);
    size_t start = 0, done = 0;
    /* on_resume: restart: put every planned row back first (a server may hold a half-done earlier attempt;
     * inserting a live id updates it), so "before" measures the whole corpus again. */
    int restart = p->churn_start == VB_CHURN_RESTART;
    int embedded = (ops->flags & VB_ENGINE_EMBEDDED) != 0;
    if (rc == VB_OK && restart && (s->churn_deleted || !embedded)) {
        vb_phase_log(ctx, "info", "%s on %s: restarting the churn: restoring all %zu rows first", s->engine_name,
                     s->dataset_name, c.planned);
        rc = insert_range(&c, 0, c.planned, 0, &done, vb_now_ns(), err);
        s->churn_deleted = 0;
        s->churn_reinserted = 0;
    }
    vb_lag_sampler *lag = NULL;   /* read replicas: their lag sampled while the deletes and reinserts run */
    if (rc == VB_OK && resume < 0) {
        rc = measure_repeats(ctx, s, VBENCH__CHURN_STAGE__CHURN_BEFORE, "measure before", err);
        if (rc == VB_OK) lag = vb_lag_sampler_start(s->engine, VB_LAG_SAMPLE_S);
        if (rc == VB_OK) {
            vb_phase_progress(ctx, "delete", 0, c.planned, 0, 1);
            uint64_t t0 = vb_now_ns();
            rc = remove_range(&c, 0, c.planned, err);
            double secs = (double)(vb_now_ns() - t0) / 1e9;
            if (rc == VB_OK) {
                s->churn_deleted = 1;
                s->churn_reinserted = 0;
                vb_phase_node_result(ctx, s->engine, "churn-delete");   /* each node's replay lag, just written */
                send_stage(ctx, VBENCH__CHURN_STAGE__CHURN_DELETE, "delete", c.planned, 0, c.planned, secs, secs > 0 ? (double)c.planned / secs : 0, 1);
            }
        }
    } else if (rc == VB_OK) {
        start = (size_t)resume;
        rc = restore_checkpoint(&c, start, err);
    }
    if (rc == VB_OK && !lag) lag = vb_lag_sampler_start(s->engine, VB_LAG_SAMPLE_S);
    if (rc == VB_OK) {
        /* The first reinsert progress message starts the coordinator's limit clock. */
        vb_phase_progress_churn(ctx, VBENCH__CHURN_STAGE__CHURN_REINSERT, "reinsert", start, c.planned, 0, 1);
        uint64_t t0 = vb_now_ns();
        rc = insert_range(&c, start, c.planned, 1, &done, t0, err);
        double secs = (double)(vb_now_ns() - t0) / 1e9;
        double rate = secs > 0 ? (double)(done - start) / secs : 0;
        char suffix[64];
        snprintf(suffix, sizeof suffix, "reinsert@%zu", done);
        if (rc == VB_OK) vb_phase_node_result(ctx, s->engine, "churn-reinsert");
        if (rc == VB_OK) send_stage(ctx, VBENCH__CHURN_STAGE__CHURN_REINSERT, suffix, c.planned, start, done, secs, rate, done == c.planned);
        if (rc == VB_OK && done < c.planned) {
            int limit = ctx->stop && atomic_load(ctx->stop) == VB_STOP_LIMIT;
            rc = vb_error_set(err, limit ? "limit" : "agent", 1,
                              "reinsert stopped%s after %zu of %zu rows (%.0f rows/s); `vbench resume` continues it",
                              limit ? " at the wall-clock limit" : "", done, c.planned, rate);
        }
    }
    vb_lag_sampler_stop(ctx, &lag, "churn");
    /* Every row is back: a limit abort that crossed the last insert on the wire is moot (the limit is the
     * reinsert's), so maintenance and the after measurement run whole. */
    if (rc == VB_OK && ctx->limit_moot) atomic_store(ctx->limit_moot, 1);   /* later limit aborts are ignored */
    int limit_stop = VB_STOP_LIMIT;
    if (rc == VB_OK && ctx->stop) atomic_compare_exchange_strong(ctx->stop, &limit_stop, VB_STOP_NONE);
    if (rc == VB_OK) {
        vb_phase_progress_churn(ctx, VBENCH__CHURN_STAGE__CHURN_MAINTAIN, "maintain", 0, 1, 0, 1);
        uint64_t t0 = vb_now_ns();
        /* routine upkeep only: a maintenance that rebuilds the table and its index (MariaDB's) is the mixed phase's */
        int routine = ops->maintain && !(ops->flags & VB_ENGINE_MAINTAIN_REBUILDS);
        if (routine) rc = vb_engine_maintain(s->engine, err);
        /* rows_done: the rows the maintenance covered, 0 when the engine has none (nothing ran): the coordinator
         * says so instead of a rate. Maintenance has no row rate of its own. */
        size_t covered = routine ? c.planned : 0;
        if (rc == VB_OK)
            send_stage(ctx, VBENCH__CHURN_STAGE__CHURN_MAINTAIN, "maintain", c.planned, 0, covered, (double)(vb_now_ns() - t0) / 1e9, 0, 1);
    }
    /* read replicas: the after measurement reads replicas that have applied every reinsert (lag 0) */
    if (rc == VB_OK) rc = vb_engine_catch_up(s->engine, err);
    if (rc == VB_OK) rc = measure_repeats(ctx, s, VBENCH__CHURN_STAGE__CHURN_AFTER, "measure after", err);
    vb_conn_close(&c.conn);
    free(c.ids);
    return rc;
}
