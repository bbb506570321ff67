/* The mixed phase: search while rows are updated, deleted and inserted (issue 38; docs/metrics.md "Mixed").
 *
 * The item builds its own index (untimed) of the corpus: the dataset's rows but the last pool_fraction of them, the
 * pool, which is kept apart (never loaded). Row ids are the dataset's row numbers. Then one writer thread and the
 * searching clients run together, the writes interleaved at their exact shares (smooth weighted round robin):
 *   update  a live row (chosen uniform or zipf over the corpus's ids: zipf's hot rows are the first ids, updated
 *           again and again) gets the next pool row's vector (round robin), through insert (the engine's upsert);
 *   delete  a live row so chosen is removed;
 *   insert  the next pool row comes in under its own id; once every pool row is in, a deleted row comes back with
 *           the next pool vector.
 * A chosen id that is not live moves on to the next live one. The writer runs its writes one at a time, so the log
 * of acknowledged writes is in order and each is applied to the ground truth's state (agent/mixed_truth.h) when
 * acknowledged: the state before a window is exact. Open loop (rate R): searches at R x search share (the workload's
 * open loop), writes at R x the rest, each write due at its time (late ones start at once; nothing skipped). Closed
 * loop: the clients search back to back and the writer keeps the ratio to the searches' rate measured just before
 * the writes start.
 *
 * Each window's recall is scored against the exact top-k over the state acknowledged when it began (brute force
 * over the live rows), rows written during the window by any vector they held then; ghost answers (an absent row)
 * and stale answers (a row answered from its old vector) are counted apart. A probe measures update freshness: for
 * the latest acknowledged update it searches with the row's new vector until the row is returned (giving up after
 * window_s). After `windows` windows the writer stops: a window at rest, then the engine's maintenance (maintain:
 * VACUUM, OPTIMIZE, none) and one more.
 *
 * Resume: no checkpoint; a killed attempt runs again from its build (the table is created anew, so nothing is
 * applied twice), its results keyed by attempt; v_mixed shows the last attempt's. limit_s bounds the item from the
 * start of the writes: at the limit the writer stops, what was measured stays, and the item fails naming the limit. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/measure.h"
#include "agent/mixed_truth.h"
#include "agent/phase.h"
#include "agent/workload.h"
#include "agent/writer.h"
#include "util/clock.h"
#include "util/mix.h"

#define GAP_S 0.25          /* the unscored searches between windows */
#define CALIBRATE_S 0.5     /* closed loop: the searches' rate measured before the writes start */

static const char *const op_name[4] = {"search", "update", "delete", "insert"};

typedef struct mixed {
    vb_phase_ctx *ctx;
    vb_session *s;
    size_t corpus, n;            /* ids [0, corpus) loaded; pool rows [corpus, n) */
    double share[4];             /* search, update, delete, insert */
    double write_rate;           /* writes/s; 0: back to back */
    double *cdf;                 /* zipf over [0, corpus); NULL uniform */
    int k, ef_search;
    double window_s;
    uint64_t t0, stop_ns;        /* stop_ns: when the writer was told to stop (0: running) */
    vb_writer w;                 /* the writer's stop flag, locks and end (agent/writer.h); w.lock guards below */
    vb_mixed_state st;           /* the acknowledged state */
    uint64_t writes_total;
    int64_t inflight_id;
    int32_t inflight_src;
    int recording;               /* a window runs: each write is added to `during` as it starts */
    vb_mixed_touched during;
    vb_histogram *lat[4];        /* this interval's write calls, per op (1..3) */
    uint64_t done[4], errors[4], due_writes;   /* this interval */
    uint64_t next_insert, next_pool, issued;
    vb_histogram *fresh;
    uint64_t fresh_probes, fresh_never;
} mixed;

static double unit(uint64_t *rng) { return (double)(vb_splitmix64(rng) >> 11) * (1.0 / 9007199254740992.0); }

/* The first id from `from` (wrapping over [0, n)) whose liveness is `live`; -1 none. Under m->w.lock. */
static int64_t next_with(const mixed *m, size_t from, int live) {
    for (size_t j = 0; j < m->n; j++) {
        size_t id = (from + j) % m->n;
        if ((m->st.src[id] >= 0) == live) return (int64_t)id;
    }
    return -1;
}

/* One write of the log: a delete, or an upsert of the row's new vector, through vb_writer_call. */
typedef struct write_one {
    int op;
    int64_t id;
    const float *vec;
    int32_t tag;
    const int32_t *cls;
} write_one;

static int write_call(vb_conn *c, void *arg, vb_error *err) {
    const write_one *x = arg;
    if (x->op == VB_MIXED_DELETE) return vb_conn_remove(c, &x->id, 1, err);
    return vb_conn_insert(c, &x->id, x->vec, &x->tag, x->cls, 1, err);
}

static void *writer_main(void *arg) {
    mixed *m = arg;
    const vb_dataset *ds = m->s->ds;
    vb_conn *c = NULL;
    vb_error err = {0};
    int rc = vb_engine_connect(m->s->engine, &c, &err);
    uint64_t rng = 0x6d69786564ull ^ (uint64_t)m->ctx->assign->attempt;
    double wsum = m->share[1] + m->share[2] + m->share[3], credit[4] = {0, 0, 0, 0};
    size_t pool = m->n - m->corpus;
    /* VBENCH_MIXED_FAULT=skip-write:N (tests): the N-th write is logged as acknowledged but never sent to the engine,
     * the mutation the row check at the end must catch */
    const char *fault = getenv("VBENCH_MIXED_FAULT");
    uint64_t skip = fault && !strncmp(fault, "skip-write:", 11) ? strtoull(fault + 11, NULL, 10) : 0;
    for (uint64_t i = 0; rc == VB_OK && !atomic_load(&m->w.stop); i++) {
        uint64_t due = m->write_rate > 0 ? m->t0 + (uint64_t)llround((double)i / m->write_rate * 1e9) : 0;
        if (due > vb_now_ns()) vb_writer_sleep_until(due);
        if (atomic_load(&m->w.stop)) break;
        /* the operations interleaved at their exact shares (smooth weighted round robin, as nginx's upstreams): every
         * write adds each operation's share to its credit, the largest credit goes and pays the writes' total */
        int op = VB_MIXED_UPDATE;
        for (int o = VB_MIXED_UPDATE; o <= VB_MIXED_INSERT; o++) {
            credit[o] += m->share[o];
            if (credit[o] > credit[op]) op = o;
        }
        credit[op] -= wsum;
        size_t pick = vb_mixed_pick(m->cdf, m->corpus, unit(&rng));
        pthread_mutex_lock(&m->w.lock);
        int64_t id = -1;
        int32_t src = -1;
        if (op == VB_MIXED_INSERT && m->next_insert < pool) {
            id = (int64_t)(m->corpus + m->next_insert++);
            src = (int32_t)id;
        } else {
            id = next_with(m, pick, op != VB_MIXED_INSERT);
            if (op != VB_MIXED_DELETE) src = (int32_t)(m->corpus + m->next_pool++ % pool);
        }
        m->inflight_id = id, m->inflight_src = src;
        if (id >= 0 && m->recording) vb_mixed_touched_add(&m->during, id, src);
        pthread_mutex_unlock(&m->w.lock);
        if (id < 0) continue;   /* nothing to write (no live row, or none to insert): not a write */
        write_one x = {op, id, src >= 0 ? ds->train + (size_t)src * ds->dim : NULL, vb_dataset_tag(id),
                       ds->train_class && src >= 0 ? ds->train_class + src : NULL};
        uint64_t start, ack;
        int retried = 0;
        if (skip && m->writes_total + 1 == skip) start = ack = vb_now_ns();   /* the fault: logged, not sent */
        else rc = vb_writer_call(&m->w, m->s->engine, &c, write_call, &x, &retried, &start, &ack, &err);
        if (rc != VB_OK) break;
        pthread_mutex_lock(&m->w.lock);
        m->errors[op] += (uint64_t)retried;
        vb_mixed_apply(&m->st, op, id, src);
        m->writes_total++;
        m->inflight_id = -1;
        m->done[op]++;
        vb_histogram_record(m->lat[op], ack - start);
        if (op == VB_MIXED_UPDATE) vb_writer_acked(&m->w, id, src, ack);
        pthread_mutex_unlock(&m->w.lock);
    }
    vb_conn_close(&c);
    vb_writer_finish(&m->w, rc, &err);
    return NULL;
}

/* Update freshness: the latest acknowledged update's row, searched with its new vector until returned. */
static void *probe_main(void *arg) {
    mixed *m = arg;
    const vb_dataset *ds = m->s->ds;
    vb_conn *c = NULL;
    vb_error err;
    if (vb_writer_probe_connect(m->s->engine, m->ef_search, &c, &err) != VB_OK) return NULL;
    int64_t *got = malloc((size_t)m->k * sizeof *got);
    uint64_t last_ack = 0, give_up = (uint64_t)llround(m->window_s * 1e9);
    while (got && !atomic_load(&m->w.stop)) {
        int64_t id;
        int32_t src;
        uint64_t ack;
        int next = vb_writer_next_ack(&m->w, &last_ack, &id, &src, &ack);
        if (next < 0) break;
        if (next == 0) continue;
        int found = 0, tied = 0, moved = 0;
        uint64_t now = vb_now_ns();
        while (!found && !tied && !moved && now - ack <= give_up && !atomic_load(&m->w.stop)) {
            int n = 0;
            int src_rc = vb_writer_probe_search(&m->w, c, ds->train + (size_t)src * ds->dim, m->k, got, &n, &err);
            if (src_rc == VB_OK)
                for (int j = 0; j < n && !found; j++) found = got[j] == id;
            /* k other rows at distance 0 hold the same pool vector (a pool row serves several updates): the row is
             * rightly not among them, and the probe says nothing */
            if (!found && src_rc == VB_OK && n == m->k) {
                pthread_mutex_lock(&m->w.lock);
                tied = 1;
                for (int j = 0; j < n && tied; j++)
                    tied = got[j] >= 0 && (size_t)got[j] < m->n && m->st.src[got[j]] >= 0 &&
                           vb_distance(ds->metric, ds->train + (size_t)src * ds->dim,
                                       ds->train + (size_t)m->st.src[got[j]] * ds->dim, ds->dim) <= 1e-6;
                pthread_mutex_unlock(&m->w.lock);
            }
            now = vb_now_ns();
            if (!found) {   /* written again since (a hot row): its new position is the next probe's */
                pthread_mutex_lock(&m->w.lock);
                moved = m->st.src[id] != src;
                pthread_mutex_unlock(&m->w.lock);
            }
            if (!found && !moved && !tied) vb_sleep_ns(1000000ull);
        }
        if (atomic_load(&m->w.stop) && !found) break;
        pthread_mutex_lock(&m->w.lock);
        /* a later write to the row (deleted, updated again) makes the probe moot, not a failure */
        int moot = m->st.src[id] != src || tied;
        if (!moot) {
            m->fresh_probes++;
            if (found) vb_histogram_record(m->fresh, now > ack ? now - ack : 1000);
            else m->fresh_never++;
        }
        pthread_mutex_unlock(&m->w.lock);
    }
    free(got);
    vb_conn_close(&c);
    return NULL;
}

/* One interval's write figures (from the previous window's start), taken at a window's start. */
typedef struct interval {
    uint64_t start_ns, end_ns;
    vb_histogram *lat[4], *fresh;
    uint64_t done[4], errors[4], due_start, due_end, fresh_probes, fresh_never;
} interval;

static uint64_t writes_due(const mixed *m, uint64_t now) {
    if (m->stop_ns && now > m->stop_ns) now = m->stop_ns;   /* none is due after the writer stopped */
    if (m->write_rate <= 0 || now < m->t0) return 0;
    return (uint64_t)floor((double)(now - m->t0) / 1e9 * m->write_rate) + 1;
}

/* Takes the interval's figures (from the previous window's end to this one's: the gap before the window and the
 * window itself). */
static void interval_take(mixed *m, interval *iv, uint64_t now) {
    pthread_mutex_lock(&m->w.lock);
    iv->end_ns = now;
    iv->due_end = writes_due(m, now);
    for (int op = 1; op < 4; op++) {
        vb_histogram_reset(iv->lat[op]);
        vb_histogram_merge(iv->lat[op], m->lat[op]);
        vb_histogram_reset(m->lat[op]);
        iv->done[op] = m->done[op], iv->errors[op] = m->errors[op];
        m->done[op] = m->errors[op] = 0;
    }
    vb_histogram_reset(iv->fresh);
    vb_histogram_merge(iv->fresh, m->fresh);
    vb_histogram_reset(m->fresh);
    iv->fresh_probes = m->fresh_probes, iv->fresh_never = m->fresh_never;
    m->fresh_probes = m->fresh_never = 0;
    pthread_mutex_unlock(&m->w.lock);
}

static void on_window_end(void *arg, int in_window, uint64_t done_ns, uint64_t total_ns) {
    mixed *m = arg;
    if (!in_window || done_ns < total_ns) return;
    pthread_mutex_lock(&m->w.lock);
    m->recording = 0;
    pthread_mutex_unlock(&m->w.lock);
}

/* A window's scores (beside the workload's result). */
typedef struct window_score {
    vb_measure meas;
    uint64_t ghosts, stale, scored;
    char ghost_example[96];
} window_score;

static void score_one(const mixed *m, const vb_mixed_truth *t, const vb_mixed_state *s0, size_t q,
                      const int64_t *ids, int n, uint64_t weight, double *sum, uint64_t *cnt, window_score *ws) {
    const vb_dataset *ds = m->s->ds;
    vb_mixed_score sc;
    vb_mixed_score_answer(t, s0, &m->during, ds->train, ds->dim, ds->metric, ds->test + q * ds->dim, q, ids, n, &sc);
    *sum += sc.recall * (double)weight;
    *cnt += weight;
    ws->ghosts += (uint64_t)sc.ghosts * weight;
    ws->stale += (uint64_t)sc.stale * weight;
    ws->scored += weight;
    size_t expected = t->k < t->live ? t->k : t->live;
    if ((size_t)n < expected) ws->meas.short_answers += weight;
    if (sc.ghosts && !ws->ghost_example[0])
        snprintf(ws->ghost_example, sizeof ws->ghost_example, "query %zu: id %lld", q, (long long)sc.first_ghost);
}

/* Runs one window of searches and scores it against the state s0 (acknowledged when it began). */
static int run_window(mixed *m, const vb_mixed_state *s0, int open, double search_rate, window_score *ws,
                      vb_error *err) {
    vb_phase_ctx *ctx = m->ctx;
    const vb_dataset *ds = m->s->ds;
    memset(ws, 0, sizeof *ws);
    ws->meas.index_used = -1;
    vb_mixed_truth t;
    if (vb_mixed_truth_make(s0, ds->train, ds->dim, ds->metric, ds->test, ds->n_test, (size_t)m->k, &t, err))
        return VB_ERROR;
    vb_workload_config cfg = {
        .engine = m->s->engine, .clients = (int)ctx->point.clients, .cpus = ctx->cpus, .n_cpus = ctx->n_cpus,
        .queries = ds->test, .n_queries = ds->n_test, .dim = ds->dim, .k = m->k,
        .search = {.ef_search = m->ef_search}, .filter = {VB_FILTER_NONE, 0},
        .window_ns = (uint64_t)llround(m->window_s * 1e9), .stop = ctx->stop, .keep_answers = 1,
        .loop = open ? VB_LOOP_OPEN : VB_LOOP_CLOSED, .target_rate = search_rate, .seed = 0x5eed,
        .progress = on_window_end, .progress_arg = m,
    };
    vb_workload_result res;
    int rc = vb_workload_run(&cfg, &res, err);
    pthread_mutex_lock(&m->w.lock);
    m->recording = 0;
    vb_mixed_touched_sort(&m->during);
    pthread_mutex_unlock(&m->w.lock);
    double *per_query = rc == VB_OK ? malloc((ds->n_test ? ds->n_test : 1) * sizeof *per_query) : NULL;
    if (rc == VB_OK && !per_query) rc = vb_error_set(err, "agent", 1, "out of memory");
    size_t answered = 0;
    double total = 0;
    for (size_t q = 0; rc == VB_OK && q < ds->n_test; q++) {
        double sum = 0;
        uint64_t cnt = 0;
        if (res.answer_count && res.answer_count[q])
            score_one(m, &t, s0, q, res.answers + q * (size_t)m->k, res.n_answer[q], res.answer_count[q], &sum, &cnt,
                      ws);
        for (size_t j = 0; j < res.n_extra; j++)
            if (res.extra_query[j] == q)
                score_one(m, &t, s0, q, res.extra_ids + j * (size_t)m->k, res.extra_n[j], 1, &sum, &cnt, ws);
        if (cnt) {
            per_query[answered++] = sum / (double)cnt;
            total += sum / (double)cnt;
        }
    }
    if (rc == VB_OK) {
        vb_measure *me = &ws->meas;
        me->queries = res.queries, me->errors = res.errors, me->elapsed_s = res.elapsed_s, me->qps = res.qps;
        me->client_cpu_s = res.client_cpu_s;
        me->latency = res.latency;
        res.latency = NULL;   /* the measure owns it now */
        me->covered = answered, me->unscored = res.unscored;
        me->recall = answered ? total / (double)answered : 0;
        rc = vb_recall_dist_of(per_query, answered, &me->dist, err);
    }
    free(per_query);
    vb_workload_result_free(&res);
    vb_mixed_truth_free(&t);
    return rc;
}

static void op_wire(const interval *iv, int op, double write_share, double share, Vbench__MixedOp *w,
                    Vbench__Histogram *h) {
    vbench__mixed_op__init(w);
    vbench__histogram__init(h);
    vb_phase_histogram_to_wire(iv->lat[op], h);
    w->op = (char *)op_name[op];
    w->done = iv->done[op];
    w->errors = iv->errors[op];
    w->interval_s = (double)(iv->end_ns - iv->start_ns) / 1e9;
    uint64_t due = iv->due_end - iv->due_start;
    w->offered = due ? (uint64_t)llround((double)due * share / write_share) : w->done;
    w->latency = h;
    const vb_histogram *l = iv->lat[op];
    if (vb_histogram_count(l)) {
        w->mean_ms = vb_histogram_mean(l) / 1e6;
        w->p50_ms = (double)vb_histogram_value_at_percentile(l, 50) / 1e6;
        w->p99_ms = (double)vb_histogram_value_at_percentile(l, 99) / 1e6;
        w->max_ms = (double)vb_histogram_max(l) / 1e6;
    }
}

static void send_window(mixed *m, const interval *iv, int index, const char *phase, const window_score *ws,
                        const vb_mixed_state *s0, int64_t rows_engine, double maintain_s, const vb_mixed_check *chk,
                        int last) {
    vb_phase_ctx *ctx = m->ctx;
    vb_measure_wire mw;
    vb_measure_to_wire(&ws->meas, &mw);
    Vbench__MixedResult r = VBENCH__MIXED_RESULT__INIT;
    Vbench__MixedOp ops[3], *opp[3];
    Vbench__Histogram oh[3], fh = VBENCH__HISTOGRAM__INIT;
    double wshare = m->share[1] + m->share[2] + m->share[3];
    for (int op = 1; op < 4; op++) {
        op_wire(iv, op, wshare > 0 ? wshare : 1, m->share[op], &ops[op - 1], &oh[op - 1]);
        opp[op - 1] = &ops[op - 1];
    }
    vb_phase_histogram_to_wire(iv->fresh, &fh);
    r.window_index = (uint32_t)index;
    r.phase = (char *)phase;
    r.m = &mw.msg;
    r.clients = (uint32_t)ctx->point.clients;
    r.rows_live = s0->live;
    r.ghost_answers = ws->ghosts;
    r.stale_answers = ws->stale;
    r.ghost_example = (char *)ws->ghost_example;
    r.n_ops = 3;
    r.ops = opp;
    r.fresh_probes = iv->fresh_probes;
    r.fresh_never = iv->fresh_never;
    r.freshness = &fh;
    r.writes_total = m->writes_total;
    r.zipf_s = ctx->point.zipf_s;
    r.rate = ctx->point.mode == VB_POINT_OPEN ? ctx->point.target_rate : 0;
    r.maintain_s = maintain_s;
    r.answers_scored = ws->scored;
    r.rows_engine = rows_engine;
    if (last) r.maintenance = (char *)vb_engine_maintenance(m->s->engine);
    if (strcmp(phase, "write") != 0) {
        r.rows_checked = chk->checked, r.rows_vectors_checked = chk->vectors, r.rows_differ = chk->differ;
        r.rows_diff_example = (char *)chk->example;
    }
    for (size_t id = 0; id < m->n; id++)
        if (s0->src[id] >= 0) r.live_id_sum += id, r.live_id_sumsq += (uint64_t)id * id;
    Vbench__Result res = VBENCH__RESULT__INIT;
    res.body_case = VBENCH__RESULT__BODY_MIXED;
    res.mixed = &r;
    res.completes_item = last;
    char suffix[64];
    snprintf(suffix, sizeof suffix, "a%u/%s=%d", ctx->assign->attempt, phase, index);
    vb_writer_result(&m->w, ctx, &res, suffix);
    for (int i = 0; i < 3; i++) vb_phase_histogram_wire_free(&oh[i]);
    vb_phase_histogram_wire_free(&fh);
    vb_measure_wire_free(&mw);
}

/* The engine's rows against the state s (no write in flight); nothing checked (0 rows) on an engine that cannot
 * list them. */
static int check_rows(mixed *m, const vb_mixed_state *s, vb_mixed_check *chk, vb_error *err) {
    const vb_dataset *ds = m->s->ds;
    if (vb_mixed_check_begin(chk, s, ds->train, ds->dim, ds->metric, err)) return VB_ERROR;
    int listed = 0;
    int rc = vb_engine_rows(m->s->engine, vb_mixed_check_row, chk, &listed, err);
    if (rc == VB_OK && listed) vb_mixed_check_end(chk);
    else {
        free(chk->seen);
        memset(chk, 0, sizeof *chk);
    }
    if (rc != VB_OK) vb_error_prefix(err, "%s: the rows after the writes", m->s->engine_name);
    /* Read replicas, caught up before this window: each replica's rows against the same log, folded into the one
     * check (checked counts the ids over every node, an example names its replica). A replica that missed a write
     * is a difference here whatever its index answers; a deleted row answered while every node's table is the log's
     * is the index's (a ghost, not a lag). */
    for (int node = 1; rc == VB_OK && listed && node < VB_ENGINE_MAX_NODES; node++) {
        vb_mixed_check rk;
        if (vb_mixed_check_begin(&rk, s, ds->train, ds->dim, ds->metric, err)) return VB_ERROR;
        int on_node = 0;
        rc = vb_engine_rows_node(m->s->engine, node, vb_mixed_check_row, &rk, &on_node, err);
        if (rc == VB_OK && on_node) vb_mixed_check_end(&rk);
        else free(rk.seen);
        if (rc != VB_OK) {
            vb_error_prefix(err, "%s: the rows of replica %d after the writes", m->s->engine_name, node);
            break;
        }
        if (!on_node) break;
        chk->checked += rk.checked, chk->vectors += rk.vectors;
        if (rk.differ) {
            size_t used = strlen(chk->example);
            snprintf(chk->example + used, sizeof chk->example - used, "%sreplica %d: %s", used ? "; " : "", node,
                     rk.example);
        }
        chk->differ += rk.differ;
    }
    return rc;
}

/* The state now (under the lock), with the interval taken and the window's recording started. */
static int window_begin(mixed *m, interval *iv, int writing, vb_mixed_state *s0, vb_error *err) {
    (void)iv;
    pthread_mutex_lock(&m->w.lock);
    int rc = vb_mixed_state_copy(&m->st, s0, err);
    vb_mixed_touched_clear(&m->during);
    m->recording = writing;
    if (writing && m->inflight_id >= 0) vb_mixed_touched_add(&m->during, m->inflight_id, m->inflight_src);
    pthread_mutex_unlock(&m->w.lock);
    return rc;
}

int vb_phase_mixed(vb_phase_ctx *ctx, vb_error *err) {
    const vb_point *p = &ctx->point;
    double sum = p->mix[0] + p->mix[1] + p->mix[2] + p->mix[3];
    if (fabs(sum - 1) > 1e-6 || p->clients < 1 || p->ef_search < 1 || !(p->window_s > 0) || p->mix_windows < 1 ||
        !(p->pool_fraction > 0 && p->pool_fraction < 1) || p->zipf_s < 0 ||
        (p->mode == VB_POINT_OPEN && !(p->target_rate > 0)))
        return vb_error_set(err, "agent", 1, "mixed point: shares %g/%g/%g/%g, clients %ld, ef_search %ld, window_s %g, "
                            "%ld windows, pool_fraction %g, zipf %g, rate %g", p->mix[0], p->mix[1], p->mix[2],
                            p->mix[3], p->clients, p->ef_search, p->window_s, p->mix_windows, p->pool_fraction,
                            p->zipf_s, p->target_rate);
    vb_session *s = NULL;
    {
        const Vbench__Assign *a = ctx->assign;
        int opened;
        if (vb_session_get(ctx->session, a->engine, a->config, ctx->engine_params, ctx->n_engine_params, a->dataset,
                           ctx->dataset_params, ctx->n_dataset_params, (int)a->k, (long)a->io_timeout_s,
                           ctx->work_dir, ctx->cache_dir, &opened, err) != VB_OK)
            return VB_ERROR;
        s = *ctx->session;
    }
    const vb_engine_ops *ops = vb_engine_ops_of(s->engine);
    if (((p->mix[1] > 0 || p->mix[3] > 0) && !ops->insert) || (p->mix[2] > 0 && !ops->remove))
        return vb_error_set(err, "engine", 1, "%s cannot %s rows: no mixed phase at update %g, delete %g, insert %g",
                            s->engine_name, ops->insert ? "remove" : "insert", p->mix[1], p->mix[2], p->mix[3]);
    size_t n = s->ds->n_train;
    size_t corpus = (size_t)llround((1 - p->pool_fraction) * (double)n);
    if (corpus < 1 || corpus >= n)
        return vb_error_set(err, "agent", 1, "mixed: %zu rows cannot make a corpus and a pool of %g of them", n,
                            p->pool_fraction);
    vb_phase_log(ctx, "info", "%s on %s: building the index of the first %zu of %zu rows (untimed; the last %zu are "
                 "the pool of updates and inserts)", s->engine_name, s->dataset_name, corpus, n, n - corpus);
    vb_phase_progress(ctx, "build corpus", 0, corpus, 0, 1);
    if (vb_phase_build_prefix(ctx, corpus, err)) return VB_ERROR;
    s = *ctx->session;
    vb_phase_count_begin(ctx, s->engine);

    mixed m = {.ctx = ctx, .s = s, .corpus = corpus, .n = n, .k = s->k, .ef_search = (int)p->ef_search,
               .window_s = p->window_s, .inflight_id = -1};
    memcpy(m.share, p->mix, sizeof m.share);
    vb_writer_init(&m.w);
    interval iv = {0};
    int rc = vb_mixed_state_init(&m.st, n, corpus, err);
    if (rc == VB_OK && p->zipf_s > 0 && !(m.cdf = vb_mixed_zipf_cdf(corpus, p->zipf_s)))
        rc = vb_error_set(err, "agent", 1, "out of memory");
    m.fresh = vb_histogram_new();
    iv.fresh = vb_histogram_new();
    for (int op = 1; op < 4; op++) {
        m.lat[op] = vb_histogram_new();
        iv.lat[op] = vb_histogram_new();
        if (rc == VB_OK && (!m.lat[op] || !iv.lat[op])) rc = vb_error_set(err, "agent", 1, "out of memory");
    }
    if (rc == VB_OK && (!m.fresh || !iv.fresh)) rc = vb_error_set(err, "agent", 1, "out of memory");

    int open = p->mode == VB_POINT_OPEN;
    double search_rate = open ? p->target_rate * m.share[0] : 0, wshare = 1 - m.share[0];
    if (rc == VB_OK && open) m.write_rate = p->target_rate * wshare;
    else if (rc == VB_OK && wshare > 0 && m.share[0] > 0) {   /* closed: the writes' ratio to the searches' rate */
        double qps = 0;
        vb_phase_progress(ctx, "searches' rate", 0, 1, 0, 1);
        rc = vb_writer_gap_search(ctx, s, CALIBRATE_S, 0, 0, &qps, err);
        m.write_rate = qps * wshare / m.share[0];
        if (rc == VB_OK && !(m.write_rate > 0)) rc = vb_error_set(err, "agent", 1, "mixed: no search answered");
        if (rc == VB_OK)
            vb_phase_log(ctx, "info", "%s: closed loop searches at %.0f/s; writes offered at %.0f/s to keep the ratio",
                         s->engine_name, qps, m.write_rate);
    }
    pthread_t writer, probe;
    int writer_started = 0, probe_started = 0, limit_hit = 0;
    m.t0 = vb_now_ns();
    iv.start_ns = m.t0;
    uint64_t limit_at = m.t0 + (uint64_t)(p->limit_s > 0 ? p->limit_s : 2592000) * 1000000000ull;
    /* read replicas: each replica's lag sampled while the writes run (a window's stale answers may be its lag) */
    vb_lag_sampler *lag = rc == VB_OK && wshare > 0 ? vb_lag_sampler_start(s->engine, VB_LAG_SAMPLE_S) : NULL;
    if (rc == VB_OK && wshare > 0) {
        if (pthread_create(&writer, NULL, writer_main, &m) == 0) writer_started = 1;
        else rc = vb_error_set(err, "agent", 1, "cannot start the writer thread");
        if (rc == VB_OK && m.share[1] > 0 && pthread_create(&probe, NULL, probe_main, &m) == 0) probe_started = 1;
    }
    int windows = (int)p->mix_windows;
    for (int j = 0; rc == VB_OK && j < windows + 2; j++) {
        int writing = j < windows;
        const char *phase = writing ? "write" : j == windows ? "rest" : "maintained";
        double maintain_s = 0;
        if (writing) {
            if (ctx->stop && atomic_load(ctx->stop)) {
                rc = vb_error_set(err, "agent", 1, "aborted");
                break;
            }
            if (vb_now_ns() >= limit_at) {
                limit_hit = 1;
                rc = VB_ERROR;
                break;
            }
            char label[64];
            snprintf(label, sizeof label, "writes before window %d", j + 1);
            vb_phase_progress(ctx, label, (uint64_t)j, (uint64_t)windows + 2, 0, 1);
            rc = vb_writer_gap_search(ctx, s, GAP_S, open, search_rate, NULL, err);
        } else if (j == windows) {   /* the writes stop: the index at rest */
            m.stop_ns = vb_now_ns();
            atomic_store(&m.w.stop, 1);
            if (writer_started) pthread_join(writer, NULL);
            if (probe_started) pthread_join(probe, NULL);
            writer_started = probe_started = 0;
            vb_lag_sampler_stop(ctx, &lag, "mixed");
            /* read replicas: the window at rest reads replicas that have applied every write (lag 0) */
            rc = vb_engine_catch_up(s->engine, err);
        } else {
            uint64_t t = vb_now_ns();
            vb_phase_progress(ctx, "maintenance", (uint64_t)j, (uint64_t)windows + 2, 0, 1);
            rc = vb_engine_maintain(s->engine, err);
            maintain_s = (double)(vb_now_ns() - t) / 1e9;
            if (rc != VB_OK) vb_error_prefix(err, "%s: maintenance after the writes", s->engine_name);
        }
        if (rc == VB_OK) rc = vb_writer_failed(&m.w, s->engine_name, "a write of the mixed phase", err);
        if (rc != VB_OK) break;
        vb_mixed_state s0;
        if ((rc = window_begin(&m, &iv, writing, &s0, err))) break;
        /* no write in flight: the engine's own count of its rows, against the log's */
        vb_sizes sz = {-1, -1, -1};
        vb_error serr = {0};
        if (!writing && vb_engine_sizes(s->engine, &sz, &serr) != VB_OK) sz.rows = -1;
        /* the windows at rest and after maintenance: the engine's rows (every node's, with read replicas), id by id
         * and vector by vector, against the log's final state, before the searches that the rows may explain */
        vb_mixed_check chk = {0};
        if (!writing && (rc = check_rows(&m, &s0, &chk, err)) != VB_OK) {
            vb_mixed_state_free(&s0);
            break;
        }
        char label[64];
        snprintf(label, sizeof label, "window %d (%s)", j + 1, phase);
        vb_phase_progress(ctx, label, (uint64_t)j, (uint64_t)windows + 2, 0, 1);
        window_score ws;
        rc = run_window(&m, &s0, open, open ? search_rate : 0, &ws, err);
        interval_take(&m, &iv, vb_now_ns());
        if (rc == VB_OK) {
            if (ws.ghosts)
                vb_phase_log(ctx, "warn", "%s, window %d (%s): %llu answers named deleted rows (first: %s)",
                             s->engine_name, j + 1, phase, (unsigned long long)ws.ghosts, ws.ghost_example);
            if (!writing && sz.rows >= 0 && (size_t)sz.rows != s0.live)
                vb_phase_log(ctx, "warn", "%s, window %d (%s): the engine counts %lld rows, the write log %zu",
                             s->engine_name, j + 1, phase, (long long)sz.rows, s0.live);
            if (chk.differ)
                vb_phase_log(ctx, "warn", "%s: %llu of the engine's %llu rows are not the write log's (%s)",
                             s->engine_name, (unsigned long long)chk.differ, (unsigned long long)chk.checked,
                             chk.example);
            send_window(&m, &iv, j + 1, phase, &ws, &s0, writing ? -1 : sz.rows, maintain_s, &chk, j == windows + 1);
        }
        vb_measure_free(&ws.meas);
        vb_mixed_state_free(&s0);
        iv.start_ns = iv.end_ns, iv.due_start = iv.due_end;
    }
    atomic_store(&m.w.stop, 1);
    if (writer_started) pthread_join(writer, NULL);
    if (probe_started) pthread_join(probe, NULL);
    vb_lag_sampler_stop(ctx, &lag, "mixed");
    uint64_t writes = m.writes_total;
    vb_mixed_state_free(&m.st);
    vb_mixed_touched_free(&m.during);
    free(m.cdf);
    vb_histogram_destroy(&m.fresh);
    vb_histogram_destroy(&iv.fresh);
    for (int op = 1; op < 4; op++) {
        vb_histogram_destroy(&m.lat[op]);
        vb_histogram_destroy(&iv.lat[op]);
    }
    vb_writer_destroy(&m.w);
    if (limit_hit)
        return vb_error_set(err, "limit", 1, "mixed stopped at its limit of %ld s after %llu writes; the windows "
                            "measured before it are kept", p->limit_s, (unsigned long long)writes);
    /* the index no longer holds the corpus as loaded: a later phase builds its own */
    s->ready = 0;
    return rc;
}
