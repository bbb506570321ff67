/* The streaming phase: search while the corpus grows (issue 25; docs/metrics.md "Streaming").
 *
 * The item builds its own index of the first initial_fraction of the corpus (untimed), then one writer thread
 * inserts the remaining rows in order, batch i due at t0 + i x insert_batch / insert_rate (open loop, as wrk2 and
 * pgbench --rate): a batch that is late starts at once and its lag (start - due) is measured; nothing is skipped,
 * so when the engine cannot keep the rate the shortfall grows and is reported. insert_rate 0 (`max`) inserts
 * back to back. Rows are acknowledged in order, so the acknowledged rows are always a prefix [0, acked).
 *
 * Searches run the whole time: between windows, short unscored closed-loop runs of the same clients; at each
 * stage (the moment the acknowledged rows reach the stage's fraction) a measured window of window_s. Its recall is
 * scored against the exact ground truth of the rows acknowledged when the window began (rows_visible), made from
 * the previous stage's by vb_groundtruth_extend over the new rows only; ids acknowledged during the window are
 * counted apart (fresh_rows_found). A probe thread measures freshness: for the latest acknowledged batch it
 * searches with its first row's own vector until the row is returned (ack -> found), giving up after window_s.
 * After the last stage (all rows in, the writer stopped) one window at rest on the same index.
 *
 * Resume: the item has no checkpoint. A killed attempt runs again from its build (the table is created anew), and
 * its results carry the attempt in their key; v_streaming shows the last attempt's. limit_s bounds the item from
 * the start of the stream: at the limit the writer stops, what was measured stays, and the item fails naming the
 * limit. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/measure.h"
#include "agent/phase.h"
#include "agent/workload.h"
#include "agent/writer.h"
#include "datasets/groundtruth.h"
#include "util/clock.h"

#define GAP_WINDOW_S 0.25        /* the unscored search runs between stage windows */

/* What the writer and the probe share with the phase thread. Counters are cumulative; the phase thread takes
 * the differences at each window's start (interval_take). */
typedef struct stream {
    vb_phase_ctx *ctx;
    vb_session *s;
    size_t initial, total;
    long batch;
    double rate;                 /* rows/s; 0 = max */
    int k, ef_search;
    double window_s;
    uint64_t t0;
    atomic_size_t acked;         /* rows [0, acked) are acknowledged */
    vb_writer w;                 /* the writer's stop flag, locks and end (agent/writer.h); w.lock guards below */
    vb_histogram *insert_lat;    /* this interval's insert calls */
    vb_histogram *fresh;         /* this interval's found probes: ack -> returned */
    uint64_t fresh_probes, fresh_never, insert_errors;
    int fresh_node;              /* the node the probe searches on (read replicas: the last one), -1 one server */
    uint64_t max_lag_ns;         /* the stream's largest lag so far */
    uint64_t interval_lag_ns;    /* this interval's largest lag */
} stream;

/* Rows due by time now (relative to t0) under the schedule, at most the rows to insert. */
static size_t rows_due(const stream *st, uint64_t now) {
    size_t todo = st->total - st->initial;
    if (st->rate <= 0) return atomic_load(&((stream *)st)->acked) - st->initial;
    double secs = now > st->t0 ? (double)(now - st->t0) / 1e9 : 0;
    /* batch i is due at i x batch / rate: by secs, batches 0 .. floor(secs x rate / batch) are due */
    double batches = floor(secs * st->rate / (double)st->batch) + 1;
    double rows = batches * (double)st->batch;
    return rows >= (double)todo ? todo : (size_t)rows;
}

/* One batch of the stream: vb_conn_insert through vb_writer_call. */
typedef struct batch {
    const int64_t *ids;
    const float *vecs;
    const int32_t *tags, *classes;
    size_t n;
} batch;

static int insert_batch(vb_conn *c, void *arg, vb_error *err) {
    const batch *b = arg;
    return vb_conn_insert(c, b->ids, b->vecs, b->tags, b->classes, b->n, err);
}

static void *writer_main(void *arg) {
    stream *st = arg;
    const vb_dataset *ds = st->s->ds;
    vb_conn *c = NULL;
    int64_t *ids = malloc((size_t)st->batch * sizeof *ids);
    int32_t *tags = malloc((size_t)st->batch * sizeof *tags);
    vb_error err = {0};
    int rc = ids && tags ? vb_engine_connect(st->s->engine, &c, &err) : vb_error_set(&err, "agent", 1, "out of memory");
    size_t b = (size_t)st->batch;
    for (size_t row = st->initial, i = 0; rc == VB_OK && row < st->total; row += b, i++) {
        if (atomic_load(&st->w.stop)) break;
        size_t n = row + b <= st->total ? b : st->total - row;
        uint64_t due = st->rate > 0 ? st->t0 + (uint64_t)llround((double)i * (double)b / st->rate * 1e9) : 0;
        if (due > vb_now_ns()) vb_writer_sleep_until(due);
        for (size_t j = 0; j < n; j++) {
            ids[j] = (int64_t)(row + j);
            tags[j] = vb_dataset_tag(ids[j]);
        }
        /* a wait for the count lock is the phase thread reading the counts: lag; a lost connection is retried once
         * on a new one, the batch never skipped */
        batch bt = {ids, ds->train + row * ds->dim, tags, ds->train_class ? ds->train_class + row : NULL, n};
        uint64_t start, ack;
        int retried;
        rc = vb_writer_call(&st->w, st->s->engine, &c, insert_batch, &bt, &retried, &start, &ack, &err);
        if (retried) {
            pthread_mutex_lock(&st->w.lock);
            st->insert_errors++;
            pthread_mutex_unlock(&st->w.lock);
        }
        if (rc != VB_OK) break;
        atomic_store(&st->acked, row + n);
        pthread_mutex_lock(&st->w.lock);
        vb_histogram_record(st->insert_lat, ack - start);
        if (due && start > due && start - due > st->max_lag_ns) st->max_lag_ns = start - due;
        if (due && start > due && start - due > st->interval_lag_ns) st->interval_lag_ns = start - due;
        vb_writer_acked(&st->w, (int64_t)row, (int32_t)row, ack);   /* the probe follows the batch's first row */
        pthread_mutex_unlock(&st->w.lock);
    }
    vb_conn_close(&c);
    free(ids);
    free(tags);
    vb_writer_finish(&st->w, rc, &err);
    return NULL;
}

/* The freshness probe: the latest acknowledged batch's first row, searched with its own vector until returned. */
static void *probe_main(void *arg) {
    stream *st = arg;
    const vb_dataset *ds = st->s->ds;
    vb_conn *c = NULL;
    vb_error err;
    if (vb_writer_probe_connect(st->s->engine, st->ef_search, &c, &err) != VB_OK) return NULL;
    /* with read replicas, the probe reads on the last one (fresh_node, set before this thread started): a row is
     * fresh when that replica returns it, so the freshness counts the replication lag */
    int chosen;
    if (st->fresh_node > 0 && vb_conn_read_on(c, st->fresh_node, &chosen, &err) != VB_OK) {
        vb_phase_log(st->ctx, "warn", "the freshness probe cannot read on replica %d: %s", st->fresh_node, err.message);
        vb_conn_close(&c);
        return NULL;
    }
    int64_t *got = malloc((size_t)st->k * sizeof *got);
    uint64_t last = 0, give_up = (uint64_t)llround(st->window_s * 1e9);
    while (got && !atomic_load(&st->w.stop)) {
        int64_t id;
        int32_t src_row;
        uint64_t ack;
        int next = vb_writer_next_ack(&st->w, &last, &id, &src_row, &ack);
        if (next < 0) break;
        if (next == 0) continue;
        int found = 0;
        uint64_t now = vb_now_ns();
        while (!found && now - ack <= give_up && !atomic_load(&st->w.stop)) {
            int n = 0;
            int src = vb_writer_probe_search(&st->w, c, ds->train + (size_t)id * ds->dim, st->k, got, &n, &err);
            if (src == VB_OK)
                for (int j = 0; j < n && !found; j++) found = got[j] == id;
            now = vb_now_ns();
            if (!found) vb_sleep_ns(1000000ull);
        }
        if (atomic_load(&st->w.stop) && !found) break;   /* cut by the end of the stream, not an answer */
        pthread_mutex_lock(&st->w.lock);
        st->fresh_probes++;
        if (found) vb_histogram_record(st->fresh, now > ack ? now - ack : 1000);
        else st->fresh_never++;
        pthread_mutex_unlock(&st->w.lock);
    }
    free(got);
    vb_conn_close(&c);
    return NULL;
}

/* One interval's insert and freshness figures, taken (and the interval restarted) at a window's start. */
typedef struct interval {
    uint64_t start_ns, end_ns;
    size_t acked_start, acked_end, due_start, due_end;
    vb_histogram *insert_lat, *fresh;
    uint64_t fresh_probes, fresh_never, insert_errors, max_lag_ns, interval_lag_ns;
} interval;

static void interval_take(stream *st, interval *iv, uint64_t now) {
    iv->end_ns = now;
    iv->acked_end = atomic_load(&st->acked);
    iv->due_end = st->initial + rows_due(st, now);
    pthread_mutex_lock(&st->w.lock);
    vb_histogram_merge(iv->insert_lat, st->insert_lat);
    vb_histogram_reset(st->insert_lat);
    vb_histogram_merge(iv->fresh, st->fresh);
    vb_histogram_reset(st->fresh);
    iv->fresh_probes = st->fresh_probes, iv->fresh_never = st->fresh_never, iv->insert_errors = st->insert_errors;
    st->fresh_probes = st->fresh_never = st->insert_errors = 0;
    iv->max_lag_ns = st->max_lag_ns;
    iv->interval_lag_ns = st->interval_lag_ns;
    st->interval_lag_ns = 0;
    pthread_mutex_unlock(&st->w.lock);
}

/* The rows acknowledged and due when a window's clock ended (vb_measure_stream_window's at_end): the rows acknowledged
 * during the window are those, not the ones acknowledged by the time its answers were scored (issue 36.1). */
typedef struct window_end {
    stream *st;
    size_t acked, due;
} window_end;

static void on_window_end(void *arg) {
    window_end *we = arg;
    we->acked = atomic_load(&we->st->acked);
    we->due = we->st->initial + rows_due(we->st, vb_now_ns());
}

static void send_window(stream *st, const interval *iv, int stage_index, double stage, int at_rest, size_t visible,
                        const window_end *we, const vb_measure *m, int clients) {
    vb_phase_ctx *ctx = st->ctx;
    vb_measure_wire mw;
    vb_measure_to_wire(m, &mw);
    if (m->covered == 0) mw.msg.recall = 0, mw.msg.queries = m->queries;
    Vbench__Histogram ih = VBENCH__HISTOGRAM__INIT, fh = VBENCH__HISTOGRAM__INIT;
    vb_phase_histogram_to_wire(iv->insert_lat, &ih);
    vb_phase_histogram_to_wire(iv->fresh, &fh);
    Vbench__StreamingResult r = VBENCH__STREAMING_RESULT__INIT;
    r.stage_index = (uint32_t)stage_index;
    r.stage = stage;
    r.at_rest = at_rest;
    r.insert_rate = st->rate;
    r.rows_total = st->total;
    r.rows_initial = st->initial;
    r.rows_visible = visible;
    r.m = &mw.msg;
    r.clients = (uint32_t)clients;
    r.fresh_rows_found = m->fresh_found;
    r.rows_during_window = we->acked > visible ? we->acked - visible : 0;
    r.rows_scheduled_window_end = st->rate > 0 ? we->due - st->initial : we->acked - st->initial;
    r.fresh_row_max = m->fresh_max;
    r.interval_s = (double)(iv->end_ns - iv->start_ns) / 1e9;
    r.rows_inserted = iv->acked_end - iv->acked_start;
    r.rows_scheduled = st->rate > 0 ? iv->due_end - iv->due_start : r.rows_inserted;
    r.offered_rows_s = r.interval_s > 0 ? (double)r.rows_scheduled / r.interval_s : 0;
    r.achieved_rows_s = r.interval_s > 0 ? (double)r.rows_inserted / r.interval_s : 0;
    r.insert_latency = &ih;
    r.max_lag_s = (double)iv->max_lag_ns / 1e9;
    r.interval_max_lag_s = (double)iv->interval_lag_ns / 1e9;
    r.fresh_probes = iv->fresh_probes;
    r.fresh_never = iv->fresh_never;
    r.freshness = &fh;
    r.insert_errors = iv->insert_errors;
    r.rows_inserted_total = iv->acked_end - st->initial;
    r.rows_scheduled_total = st->rate > 0 ? iv->due_end - st->initial : r.rows_inserted_total;
    r.recall_full = m->covered ? m->recall_full : -1;
    r.fresh_node = st->fresh_node;
    Vbench__Result res = VBENCH__RESULT__INIT;
    res.body_case = VBENCH__RESULT__BODY_STREAMING;
    res.streaming = &r;
    res.completes_item = at_rest;
    char suffix[64];
    if (at_rest) snprintf(suffix, sizeof suffix, "a%u/rest", ctx->assign->attempt);
    else snprintf(suffix, sizeof suffix, "a%u/stage=%d", ctx->assign->attempt, stage_index);
    vb_writer_result(&st->w, ctx, &res, suffix);
    vb_phase_histogram_wire_free(&ih);
    vb_phase_histogram_wire_free(&fh);
    vb_measure_wire_free(&mw);
}

int vb_phase_streaming(vb_phase_ctx *ctx, vb_error *err) {
    const vb_point *p = &ctx->point;
    if (!(p->fraction > 0 && p->fraction < 1) || p->n_stages < 1 || p->insert_batch < 1 || p->clients < 1 ||
        p->ef_search < 1 || !(p->window_s > 0) || p->insert_rate < 0)
        return vb_error_set(err, "agent", 1, "streaming point: initial_fraction %g, %d stages, insert_batch %ld, "
                            "clients %ld, ef_search %ld, window_s %g, insert_rate %g", p->fraction, p->n_stages,
                            p->insert_batch, p->clients, p->ef_search, p->window_s, p->insert_rate);
    vb_session *s = NULL;
    {
        /* the session (dataset and engine) first, to know the corpus size */
        const Vbench__Assign *a = ctx->assign;
        int opened;
        if (vb_session_get(ctx->session, a->engine, a->config, ctx->engine_params, ctx->n_engine_params, a->dataset,
                           ctx->dataset_params, ctx->n_dataset_params, (int)a->k, (long)a->io_timeout_s,
                           ctx->work_dir, ctx->cache_dir, &opened, err) != VB_OK)
            return VB_ERROR;
        s = *ctx->session;
    }
    const vb_engine_ops *ops = vb_engine_ops_of(s->engine);
    if (!ops->insert) return vb_error_set(err, "engine", 1, "%s cannot insert rows: no streaming", s->engine_name);
    size_t n = s->ds->n_train;
    size_t initial = (size_t)llround(p->fraction * (double)n);
    if (initial < 1) initial = 1;
    vb_phase_log(ctx, "info", "%s on %s: building the index of the first %zu of %zu rows (untimed)", s->engine_name,
                 s->dataset_name, initial, n);
    vb_phase_progress(ctx, "build initial fraction", 0, initial, 0, 1);
    /* the full corpus's ground truth, only for the contrast column (recall_full) */
    if (vb_phase_groundtruth(ctx, s, NULL, err)) return VB_ERROR;
    if (vb_phase_build_prefix(ctx, initial, err)) return VB_ERROR;
    s = *ctx->session;
    vb_phase_count_begin(ctx, s->engine);

    stream st = {.ctx = ctx, .s = s, .initial = initial, .total = n, .batch = p->insert_batch,
                 .rate = p->insert_rate, .k = s->k, .ef_search = (int)p->ef_search, .window_s = p->window_s};
    atomic_init(&st.acked, initial);
    vb_writer_init(&st.w);
    st.insert_lat = vb_histogram_new();
    st.fresh = vb_histogram_new();
    interval iv = {0};
    iv.insert_lat = vb_histogram_new();
    iv.fresh = vb_histogram_new();
    vb_groundtruth gt = {0};
    size_t gt_rows = 0;
    int rc = st.insert_lat && st.fresh && iv.insert_lat && iv.fresh ? VB_OK
                                                                  : vb_error_set(err, "agent", 1, "out of memory");
    pthread_t writer, probe;
    int writer_started = 0, probe_started = 0;
    st.t0 = vb_now_ns();
    iv.start_ns = st.t0, iv.acked_start = initial, iv.due_start = initial;
    uint64_t limit_at = st.t0 + (uint64_t)(p->limit_s > 0 ? p->limit_s : 2592000) * 1000000000ull;
    /* read replicas: the probe's node chosen here (vb_conn_read_on on its connection), each replica's lag sampled
     * while the writer runs */
    vb_lag_sampler *lag = vb_lag_sampler_start(s->engine, VB_LAG_SAMPLE_S);
    st.fresh_node = lag ? (int)vb_lag_sampler_nodes(lag) - 1 : -1;
    if (rc == VB_OK && pthread_create(&writer, NULL, writer_main, &st) == 0) writer_started = 1;
    else if (rc == VB_OK) rc = vb_error_set(err, "agent", 1, "cannot start the writer thread");
    if (rc == VB_OK && pthread_create(&probe, NULL, probe_main, &st) == 0) probe_started = 1;
    int limit_hit = 0;
    for (int j = 0; rc == VB_OK && j <= p->n_stages; j++) {
        int at_rest = j == p->n_stages;
        double stage = at_rest ? 1 : p->stages[j];
        size_t target = at_rest ? n : (size_t)ceil(stage * (double)n);
        if (target > n) target = n;
        /* search while the writer reaches the stage */
        while (rc == VB_OK && atomic_load(&st.acked) < target) {
            if ((rc = vb_writer_failed(&st.w, s->engine_name, "insert of the stream", err))) break;
            if (ctx->stop && atomic_load(ctx->stop)) rc = vb_error_set(err, "agent", 1, "aborted");
            else if (vb_now_ns() >= limit_at) {
                limit_hit = 1;
                rc = VB_ERROR;
            } else {
                size_t a = atomic_load(&st.acked);
                double secs = (double)(vb_now_ns() - st.t0) / 1e9;
                char label[64];
                snprintf(label, sizeof label, "stream to stage %g", stage);
                vb_phase_progress(ctx, label, a, n, secs > 0 ? (double)(a - initial) / secs : 0, 0);
                rc = vb_writer_gap_search(ctx, s, GAP_WINDOW_S, p->mode == VB_POINT_OPEN, p->target_rate, NULL, err);
            }
        }
        if (rc != VB_OK) break;
        if (at_rest) {   /* every row is in: stop the writer and the probe, so the index is at rest */
            atomic_store(&st.w.stop, 1);
            pthread_join(writer, NULL);
            writer_started = 0;
            if (probe_started) pthread_join(probe, NULL);
            probe_started = 0;
            vb_lag_sampler_stop(ctx, &lag, "streaming");
            /* read replicas: the window at rest reads replicas that have applied every row (lag 0) */
            if ((rc = vb_engine_catch_up(s->engine, err)) != VB_OK) break;
        }
        /* the window's rows: those acknowledged now; their ground truth is the previous stage's merged with the
         * new rows' (rows acknowledged while it is computed, a few ms, count as fresh rows of the window) */
        uint64_t now = vb_now_ns();
        interval_take(&st, &iv, now);
        size_t visible = iv.acked_end;
        vb_groundtruth next;
        rc = vb_groundtruth_extend(gt_rows ? &gt : NULL, s->ds->train, gt_rows, visible, s->ds->test, s->ds->n_test,
                                   s->ds->dim, s->ds->metric, (size_t)s->k, 1, &next, err);
        if (rc != VB_OK) break;
        vb_groundtruth_free(&gt);
        gt = next;
        gt_rows = visible;
        vb_measure m;
        window_end we = {&st, visible, visible};
        char label[64];
        snprintf(label, sizeof label, at_rest ? "window at rest" : "window at stage %g", stage);
        vb_phase_progress(ctx, label, (uint64_t)j, (uint64_t)p->n_stages + 1, 0, 1);
        rc = vb_measure_stream_window(ctx, s, (int)p->ef_search, (int)p->clients, p->window_s,
                                      p->mode == VB_POINT_OPEN, p->target_rate, visible, &gt,
                                      s->have_gt ? &s->gt : NULL, on_window_end, &we, &m, err);
        if (rc == VB_OK) send_window(&st, &iv, j + 1, stage, at_rest, visible, &we, &m, (int)p->clients);
        vb_measure_free(&m);
        if (rc != VB_OK) break;
        /* restart the interval at this window's start */
        vb_histogram_reset(iv.insert_lat);
        vb_histogram_reset(iv.fresh);
        iv.start_ns = now, iv.acked_start = iv.acked_end, iv.due_start = iv.due_end;
    }
    atomic_store(&st.w.stop, 1);
    if (writer_started) pthread_join(writer, NULL);
    if (probe_started) pthread_join(probe, NULL);
    vb_lag_sampler_stop(ctx, &lag, "streaming");
    vb_groundtruth_free(&gt);
    vb_histogram_destroy(&st.insert_lat);
    vb_histogram_destroy(&st.fresh);
    vb_histogram_destroy(&iv.insert_lat);
    vb_histogram_destroy(&iv.fresh);
    vb_writer_destroy(&st.w);
    if (limit_hit) {
        size_t a = atomic_load(&st.acked);
        return vb_error_set(err, "limit", 1, "streaming stopped at its limit of %ld s with %zu of %zu rows in; the "
                            "windows measured before it are kept", p->limit_s, a, n);
    }
    if (rc == VB_OK) s->ready = 1;   /* the index holds the whole corpus again */
    return rc;
}
