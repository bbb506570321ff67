/* The runtime estimate (coordinator/estimate.h). */
#include "coordinator/estimate.h"

#include "metrics/capacity.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "coordinator/history.h"
#include "engines/engine.h"
#include "util/clock.h"
#include "datasets/shape.h"

/* Defaults at dimension 128 and DEFAULT_ROWS, for a host without history: each engine's own (its ops' estimate,
 * engines/engine.h vb_engine_estimate), or these for an engine that declares none. */
static const vb_engine_estimate unknown_engine = {.load_rows_s = 2000, .build_rows_s = 1500, .insert_rows_s = 800,
                                                  .qps100 = 500, .filtered_qps = 200, .copies = 2.5,
                                                  .row_overhead = 500};

/* Graph work per row grows with the corpus: an insert and a query walk a larger graph (about log(rows) hops) whose
 * vectors fit the CPU's caches less and less. A rate measured at r0 rows is taken as rate x (r0 / rows)^GRAPH_ROWS_EXP
 * at rows, for the graph's build, inserts and queries (and for the load of an engine whose graph grows on insert).
 * Measured on this project's 2-core host with nothing else running (dev, 20k x 96, against smoke, 100k x 128, the
 * rates scaled by dimension first; tests/smoke-check.sh, docs/smoke-check.md): pgvector's build ran at 0.98 of
 * dev's rate per row, its sweep at 0.89, filtered queries at 0.70, reinserts at 0.58: exponents 0.01 - 0.34,
 * 0.15 as a whole; MariaDB's load with the graph at 100k x 768 (docs/results-medium-100k.md) ran at 0.79 of dev's
 * scaled rate, 0.15 again. (An earlier 0.9 came from runs on a host shared with other test runs, whose rates
 * differed tenfold from minute to minute: it overestimated a quiet smoke run 3.3 times.) */
#define GRAPH_ROWS_EXP 0.15
#define DEFAULT_ROWS 20000.0
/* Exact ground truth: multiply-adds per second of the brute force, per core the process may use. Measured here
 * (docs/benchmarks.md, issue 29): 2M x 96 with 1,000 queries in 5.0 s on 2 vCPUs under a load average of 5
 * (1.9e10 per core); 1.5e10 leaves room for a busier or older host. */
#define GT_MADDS_PER_CORE 1.5e10
/* The float32 cache a dataset's opening writes (synthetic generation, or conversion), bytes per second: measured
 * here, the 2M x 96 synthetic corpus (732 MiB) generated and written in about 5 s (bench-scale's table). */
#define CACHE_WRITE_BPS 150e6
#define SERVER_START_S 15.0    /* initdb / first start of a server, once per engine with a recipe */
#define COLD_RESTART_S 10.0    /* a cold start's stop, eviction and start of a server (cold_start items) */
#define ITEM_OVERHEAD_S 0.1    /* assign, set-up, commit of one item (measured on dev: 0.02 - 0.05 s) */
#define CAMPAIGN_START_S 5.0   /* local agents, dataset open, first hello */

static double gt_rate(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return GT_MADDS_PER_CORE * (double)(n > 0 ? n : 1);
}

/* The preparation of dataset d (shape sh) before its first item: its line into out and its seconds. */
static double prep_of(const vb_profile *p, size_t d, const vb_dataset_shape *sh, vb_estimate *out) {
    const vb_kv *kv = p->datasets[d].params;
    size_t n = p->datasets[d].n_params;
    double rows = (double)sh->rows, dim = (double)sh->dim, nq = (double)sh->queries;
    int shipped = strcmp(vb_kv_get(kv, n, "ground_truth", "compute"), "shipped") == 0;
    double checked = shipped ? atof(vb_kv_get(kv, n, "ground_truth_check", "100")) : nq;
    if (checked > nq) checked = nq;
    double gt_s = checked * rows * dim / gt_rate(), cache_s = (double)sh->cache_bytes / CACHE_WRITE_BPS;
    char a[32], b[32], line[512];
    int len = snprintf(line, sizeof line, "%s:", p->datasets[d].name);
    if (sh->fetch_bytes)
        len += snprintf(line + len, sizeof line - (size_t)len, " download %.1f GiB (not timed: the network's)",
                        (double)sh->fetch_bytes / 1073741824.0);
    if (sh->cache_bytes)
        len += snprintf(line + len, sizeof line - (size_t)len, " float32 cache %.1f GiB %s unless cached,",
                        (double)sh->cache_bytes / 1073741824.0, vb_duration_approx(cache_s, a, sizeof a));
    if (shipped)
        snprintf(line + len, sizeof line - (size_t)len, " shipped ground truth checked on %.0f queries %s", checked,
                 vb_duration_approx(gt_s, b, sizeof b));
    else
        snprintf(line + len, sizeof line - (size_t)len, " ground truth %.0f x %.0f x %.0f %s unless cached", nq, rows,
                 dim, vb_duration_approx(gt_s, b, sizeof b));
    char **np = realloc(out->prep, (out->n_prep + 1) * sizeof *np);
    double *ns = np ? realloc(out->prep_s, (out->n_prep + 1) * sizeof *ns) : NULL;
    if (np) out->prep = np;
    if (ns) out->prep_s = ns;
    if (np && ns && (np[out->n_prep] = strdup(line))) ns[out->n_prep++] = cache_s + gt_s;
    return cache_s + gt_s;
}

/* The adapter's defaults, or the unknown engine's (an adapter not registered, or one that declares none). */
static const vb_engine_estimate *default_of(const char *adapter, int *known) {
    const vb_engine_ops *ops = vb_engine_find(adapter);
    int k = ops && ops->estimate.load_rows_s > 0;
    if (known) *known = k;
    return k ? &ops->estimate : &unknown_engine;
}

static double point_num(const vb_plan_item *it, const char *key, double def) {
    const char *v = vb_kv_get(it->point, it->n_point, key, NULL);
    return v && *v ? atof(v) : def;
}

static double phase_num(const vb_profile *p, const char *kind, const char *key, double def) {
    const vb_profile_phase *ph = vb_profile_phase_find(p, kind);
    const char *v = ph ? vb_kv_get(ph->params, ph->n_params, key, NULL) : NULL;
    return v && *v ? atof(v) : def;
}

/* The engine's rates at dimension dim: measured (scaled from the measured dimension) or default. */
typedef struct rates {
    double load, build, insert, qps100, filtered;
    int measured;
    int brute_force;   /* the adapter's estimate.brute_force: queries/s whatever ef_search */
} rates;

/* Rates measured (or defaulted) at r0 rows, taken to `rows` (GRAPH_ROWS_EXP above). A brute force's are computed. */
static void scale_to_rows(rates *r, const vb_engine_estimate *d, double r0, double rows) {
    if (d->brute_force || r0 <= 0 || rows <= 0) return;
    double f = pow(r0 / rows, GRAPH_ROWS_EXP);
    if (r->build <= 0) r->load *= f;   /* the graph grows on insert: the load builds it */
    r->build *= f, r->insert *= f, r->qps100 *= f, r->filtered *= f;
}

/* engine: the configuration's label (its history); adapter: the engine that runs it (its defaults: a matrix
 * configuration "pgvector[variant=halfvec]" took the unknown engine's rates and sizes before) */
static rates rates_for(const char *engine, const char *adapter, double dim, double rows, const char *cache_dir,
                       char *basis, size_t blen) {
    const vb_engine_estimate *d = default_of(adapter, NULL);
    double scale = 128.0 / (dim > 0 ? dim : 128);
    rates r = {d->load_rows_s * scale, d->build_rows_s * scale, d->insert_rows_s * scale, d->qps100 * scale,
               d->filtered_qps * scale, 0, d->brute_force};
    if (d->brute_force) {
        /* rows x dim multiply-adds per query on one thread */
        r.qps100 = r.filtered = 2e9 / (rows * (dim > 0 ? dim : 128) + 1);
    }
    double r0 = DEFAULT_ROWS;
    vb_history_rates h;
    vb_error herr;
    snprintf(basis, blen, "default rates (nothing measured on this host yet)");
    if (vb_history_lookup(cache_dir, engine, (long)dim, (long)rows, &h, &herr) == VB_OK && h.found) {
        double s = (double)h.dim / (dim > 0 ? dim : 128);
        if (h.load_rows_s > 0) r.load = h.load_rows_s * s;
        r.build = h.build_rows_s > 0 ? h.build_rows_s * s : 0;
        if (h.insert_rows_s > 0) r.insert = h.insert_rows_s * s;
        if (h.sweep_qps100 > 0) r.qps100 = h.sweep_qps100 * s;
        if (h.filtered_qps > 0) r.filtered = h.filtered_qps * s;
        r.measured = 1;
        r0 = (double)h.rows;
        /* a calibration probe's campaign is named probe-NAME (coordinator/calibrate.h) */
        size_t n = (size_t)snprintf(basis, blen, "%s here %s (campaign %s, %ld x %ld",
                                    strncmp(h.campaign, "probe-", 6) == 0 ? "probed" : "measured", h.recorded_at,
                                    h.campaign, h.rows, h.dim);
        if (n < blen) n += (size_t)snprintf(basis + n, blen - n, h.n_runs > 1 ? "; median of %d campaigns)" : ")",
                                            h.n_runs);
        if (n < blen && !d->brute_force && fabs(r0 - rows) > 0.05 * rows)
            snprintf(basis + n, blen - n, ", scaled to %.0f rows", rows);
    }
    scale_to_rows(&r, d, r0, rows);
    return r;
}

double vb_estimate_bytes_per_row(const char *engine, const char *adapter, double dim, const char *cache_dir,
                                 char *basis, size_t blen) {
    int known;
    const vb_engine_estimate *d = default_of(adapter ? adapter : engine, &known);
    if (dim <= 0) dim = 128;
    vb_history_rates h;
    vb_error herr;
    double fixed, per_dim;
    long dims[2];
    if (vb_history_bytes_line(cache_dir, engine, (long)dim, &fixed, &per_dim, dims, &herr) == 1) {
        snprintf(basis, blen, "%.0f B/row: %.0f + %.2f x dim, the line through the sizes measured here at dim %ld and %ld",
                 fixed + per_dim * dim, fixed, per_dim, dims[0] < dims[1] ? dims[0] : dims[1],
                 dims[0] < dims[1] ? dims[1] : dims[0]);
        return fixed + per_dim * dim;
    }
    /* One measured dimension: scaled whole, an overestimate of the fixed part at higher dimensions (pgvector's
     * 1,418 B/row at dim 128 taken to 768 says 8,510 against the 8,299 measured there; SQL engines' fixed part
     * is small beside the vector) */
    if (vb_history_lookup(cache_dir, engine, (long)dim, 0, &h, &herr) == VB_OK && h.found && h.bytes_per_row > 0) {
        snprintf(basis, blen, "%.0f B/row measured here %s at dim %ld", h.bytes_per_row * dim / (double)h.dim,
                 h.recorded_at, h.dim);
        return h.bytes_per_row * dim / (double)h.dim;
    }
    if (d->copies <= 0) {
        snprintf(basis, blen, "nothing on disk grows with the rows (%s)", d->no_disk ? d->no_disk : "no server");
        return 0;
    }
    double per_row = d->copies * 4 * dim + d->row_overhead;
    snprintf(basis, blen, "%.0f B/row, the default for %s (no measurement on this host)", per_row,
             known ? (adapter ? adapter : engine) : "an unknown engine");
    return per_row;
}

int vb_estimate_plan(const vb_profile *p, const vb_plan *plan, const unsigned char *done, const char *cache_dir,
                     vb_estimate *out, vb_error *err) {
    memset(out, 0, sizeof *out);
    out->n_items = plan->n_items;
    out->n_engines = p->n_engines;
    out->item_s = calloc(plan->n_items + 1, sizeof *out->item_s);
    out->engine_s = calloc(p->n_engines + 1, sizeof *out->engine_s);
    out->basis = calloc(p->n_engines + 1, sizeof *out->basis);
    vb_dataset_shape *shapes = calloc(p->n_datasets + 1, sizeof *shapes);
    unsigned char *prepared = calloc(p->n_datasets + 1, 1), *started = calloc(p->n_engines + 1, 1);
    unsigned char *warmed = calloc(p->n_engines + 1, 1);   /* the sweep's warm-up counted for this configuration */
    size_t *uncounted = calloc(p->n_engines + 1, sizeof *uncounted);
    char **why = calloc(p->n_datasets + 1, sizeof *why);
    if (!out->item_s || !out->engine_s || !out->basis || !shapes || !prepared || !started || !warmed || !uncounted ||
        !why) {
        free(shapes), free(prepared), free(started), free(warmed), free(uncounted), free(why);
        vb_estimate_free(out);
        return vb_error_set(err, "estimate", 1, "out of memory");
    }
    /* A dataset whose shape cannot be read yet (a path not there; a registry name knows its shape before the
     * fetch): its items are not counted, and the line and the basis say so instead of a total that looks whole. */
    for (size_t d = 0; d < p->n_datasets; d++)
        if (vb_dataset_shape_of(p->datasets[d].params, p->datasets[d].n_params, cache_dir, &shapes[d], err)) {
            memset(&shapes[d], 0, sizeof shapes[d]);
            why[d] = strdup(err->message);
        }
    for (size_t i = 0; i < plan->n_items; i++) {
        if (done && done[i]) continue;
        const vb_plan_item *it = &plan->items[i];
        const vb_dataset_shape *sh = &shapes[it->dataset];
        const char *engine = p->engines[it->engine].name;
        double rows = (double)sh->rows, dim = (double)sh->dim, nq = (double)sh->queries;
        if (rows <= 0) {
            uncounted[it->engine]++, out->n_uncounted++;
            if (!out->basis[it->engine]) {
                char b[600];
                snprintf(b, sizeof b, "not estimated: dataset '%s' cannot be read yet (%s)",
                         p->datasets[it->dataset].name, why[it->dataset] ? why[it->dataset] : "no rows");
                out->basis[it->engine] = strdup(b);
            }
            continue;
        }
        char basis[256];
        const char *adapter = p->engines[it->engine].adapter ? p->engines[it->engine].adapter : engine;
        rates r = rates_for(engine, adapter, dim, rows, cache_dir, basis, sizeof basis);
        if (!out->basis[it->engine]) out->basis[it->engine] = strdup(basis);
        double s = 0, ef = point_num(it, "ef_search", 100);
        double qps = r.qps100 * 100.0 / (ef > 0 ? ef : 100);
        if (r.brute_force) qps = r.qps100;
        if (!started[it->engine] && vb_profile_engine_recipe(&p->engines[it->engine])) s += SERVER_START_S;
        started[it->engine] = 1;
        if (!prepared[it->dataset]) s += prep_of(p, it->dataset, sh, out); /* the first item opens the dataset */
        prepared[it->dataset] = 1;
        switch (it->kind) {
        case VB_PHASE_BUILD:
            s += rows / r.load + (r.build > 0 ? rows / r.build : 0) + 0.5;
            warmed[it->engine] = 0;   /* a new index: its sweep warms it again */
            break;
        case VB_PHASE_RECALL_SWEEP: {
            double q = point_num(it, "queries", 0);
            if (it->p.clients > 0) s += it->p.warmup_s + it->p.window_s + ITEM_OVERHEAD_S;   /* a window */
            else s += (q > 0 ? q : nq) / qps + ITEM_OVERHEAD_S;
            if (it->p.clients <= 0 && !warmed[it->engine]) {
                /* the first one-client point's warm-up (agent/phase_sweep.c): the queries once, at least a second */
                double pass = (q > 0 ? q : nq) / qps;
                s += pass > 1.0 ? pass : 1.0;
                warmed[it->engine] = 1;
            }
            break;
        }
        case VB_PHASE_CONCURRENCY:
            s += point_num(it, "warmup_s", 5) + point_num(it, "window_s", 60) + ITEM_OVERHEAD_S;
            break;
        case VB_PHASE_FILTERED: {
            double fq = r.filtered * 100.0 / (ef > 0 ? ef : 100), sel = point_num(it, "selectivity", 0.1);
            /* measured at this selectivity (or around it) on this host: that rate, taken to this shape */
            vb_history_filtered_rate fr;
            const char *pred = vb_kv_get(it->point, it->n_point, "predicate", "range");
            if (vb_history_filtered(cache_dir, engine, (long)dim, pred, sel, &fr) && fr.dim > 0)
                fq = fr.qps100 * (double)fr.dim / dim * pow((double)fr.rows / rows, GRAPH_ROWS_EXP) * 100.0 /
                     (ef > 0 ? ef : 100);
            if (r.brute_force) fq = r.filtered;
            s += point_num(it, "queries", 500) / fq + nq * rows * dim * point_num(it, "selectivity", 0.1) / gt_rate() +
                 ITEM_OVERHEAD_S;
            break;
        }
        case VB_PHASE_CAPACITY: {
            /* a bound, not a guess (metrics/capacity.h vb_capacity_windows_bound): the growth from the 1-client
             * QPS up to `clients` x it (the most the clients keep in flight at the 1-client latency), the bisection
             * to the precision per target, repeats + 1 per target, each window after its warm-up; the probe of the
             * operating point (up to 9 ef_search values on 200 queries) and the 1-client run before */
            double start = qps > 0 ? qps : 1, clients = it->p.clients > 0 ? (double)it->p.clients : 32;
            int windows = vb_capacity_windows_bound(start, start * clients, it->p.precision > 0 ? it->p.precision : 0.05,
                                                    it->p.n_p99 > 0 ? it->p.n_p99 : 1, (int)it->p.repeats);
            s += windows * (it->p.window_s + it->p.warmup_s + ITEM_OVERHEAD_S) + 9 * (200 < nq ? 200 : nq) / qps +
                 ITEM_OVERHEAD_S;
            break;
        }
        case VB_PHASE_COLD_START: {   /* a server's restart, then the queries twice (cold, warm); embedded: nothing */
            double q = point_num(it, "queries", 200);
            s += ITEM_OVERHEAD_S;
            if (vb_profile_engine_recipe(&p->engines[it->engine])) s += COLD_RESTART_S + 2 * (q < nq ? q : nq) / qps;
            break;
        }
        case VB_PHASE_STREAMING: {
            /* its own index of the initial fraction, then the rest inserted at the offered rate (or as fast as the
             * engine takes rows: the slower of the two), the stage windows inside it, the last stage's and the one
             * at rest after it, the staged ground truth (the whole corpus once); limit_s cuts the stream */
            double f = it->p.fraction > 0 && it->p.fraction < 1 ? it->p.fraction : 0.5, rest = rows * (1 - f);
            double rate = it->p.insert_rate > 0 && it->p.insert_rate < r.insert ? it->p.insert_rate : r.insert;
            double stream = rest / rate + 2 * (it->p.window_s > 0 ? it->p.window_s : 10);
            double limit = it->p.limit_s > 0 ? (double)it->p.limit_s : 1e12;
            s += rows * f / r.load + (r.build > 0 ? rows * f / r.build : 0) + (stream < limit ? stream : limit) +
                 nq * rows * dim / gt_rate() + ITEM_OVERHEAD_S;
            break;
        }
        case VB_PHASE_MIXED: {
            /* its own index of the corpus (all but the pool), the closed loop's 0.5 s rate run, each window after
             * 0.25 s of searches, the one at rest and the one after maintenance, a ground truth over the live rows
             * per window; limit_s cuts the writes */
            double f = it->p.pool_fraction > 0 && it->p.pool_fraction < 1 ? 1 - it->p.pool_fraction : 0.9;
            double w = it->p.window_s > 0 ? it->p.window_s : 5, nw = it->p.mix_windows > 0 ? (double)it->p.mix_windows : 3;
            double writes = nw * (w + 0.25) + 0.5, limit = it->p.limit_s > 0 ? (double)it->p.limit_s : 1e12;
            s += rows * f / r.load + (r.build > 0 ? rows * f / r.build : 0) + (writes < limit ? writes : limit) +
                 2 * w + (nw + 2) * nq * rows * dim / gt_rate() + ITEM_OVERHEAD_S;
            break;
        }
        case VB_PHASE_CHURN: {
            double moved = rows * point_num(it, "fraction", 0.1), limit = point_num(it, "limit_s", 7200);
            double reinsert = moved / r.insert;
            s += (reinsert < limit ? reinsert : limit) + moved / (r.insert * 4) +
                 2 * (double)(it->p.repeats > 1 ? it->p.repeats : 1) * phase_num(p, "churn", "queries", 1000) / qps +
                 (r.build > 0 ? moved / r.build : 0) + 2;   /* before and after, measured `repeats` times each */
            break;
        }
        default: s += 1;
        }
        out->item_s[i] = s;
        out->engine_s[it->engine] += s;
        out->total_s += s;
    }
    if (out->total_s > 0) out->total_s += CAMPAIGN_START_S;
    size_t n = 0;
    char a[32];
    for (size_t e = 0; e < p->n_engines && n < sizeof out->line; e++) {
        if (uncounted[e])   /* "?" alone, or the counted part "+ ?" */
            n += (size_t)snprintf(out->line + n, sizeof out->line - n, "%s%s %s%s", n ? " | " : "", p->engines[e].name,
                                  out->engine_s[e] > 0 ? vb_duration_approx(out->engine_s[e], a, sizeof a) : "?",
                                  out->engine_s[e] > 0 ? " + ?" : "");
        else if (out->engine_s[e] > 0 || !done) {
            /* build_repeats: the repeated builds (and the sweep on each) are items of the plan, counted above */
            int builds = vb_profile_engine_build_repeats(&p->engines[e]);
            char nb[32] = "";
            if (builds > 1) snprintf(nb, sizeof nb, " (%d builds)", builds);
            n += (size_t)snprintf(out->line + n, sizeof out->line - n, "%s%s%s %s", n ? " | " : "", p->engines[e].name,
                                  nb, vb_duration_approx(out->engine_s[e], a, sizeof a));
        }
    }
    if (n < sizeof out->line)
        snprintf(out->line + n, sizeof out->line - n, "%stotal %s%s", n ? " | " : "",
                 vb_duration_approx(out->total_s, a, sizeof a),
                 out->n_uncounted ? " + ? (items on a dataset not here yet are not counted)" : "");
    for (size_t d = 0; d < p->n_datasets; d++) free(why[d]);
    free(shapes), free(prepared), free(started), free(warmed), free(uncounted), free(why);
    return VB_OK;
}

void vb_estimate_free(vb_estimate *e) {
    for (size_t i = 0; e->basis && i < e->n_engines; i++) free(e->basis[i]);
    for (size_t i = 0; i < e->n_prep; i++) free(e->prep[i]);
    free(e->prep), free(e->prep_s);
    free(e->basis), free(e->item_s), free(e->engine_s);
    memset(e, 0, sizeof *e);
}

void vb_estimate_campaign_start(vb_store *s, const vb_profile *p, const vb_plan *plan, const char *cache_dir,
                                FILE *say) {
    unsigned char *done = calloc(plan->n_items + 1, 1);
    sqlite3_stmt *q = NULL;
    if (done && sqlite3_prepare_v2(vb_store_db(s), "SELECT seq FROM plan WHERE status = 'done'", -1, &q, NULL) == SQLITE_OK)
        while (sqlite3_step(q) == SQLITE_ROW) {
            sqlite3_int64 seq = sqlite3_column_int64(q, 0);
            if (seq >= 0 && (size_t)seq < plan->n_items) done[seq] = 1;
        }
    sqlite3_finalize(q);
    vb_estimate est;
    vb_error err;
    if (!done || vb_estimate_plan(p, plan, done, cache_dir, &est, &err)) {
        vb_store_event(s, VB_EVENT_ESTIMATE, "warn", NULL, "coordinator", "no runtime estimate: %s",
                       done ? err.message : "out of memory");
        free(done);
        return;
    }
    char buf[64], key[200];
    snprintf(buf, sizeof buf, "%.1f", est.total_s);
    vb_store_manifest_set(s, "estimate.total_s", buf, NULL);
    snprintf(buf, sizeof buf, "%lld", (long long)time(NULL));
    vb_store_manifest_set(s, "estimate.run_started", buf, NULL);
    json_t *items = json_object();
    for (size_t i = 0; i < plan->n_items; i++)
        if (!done[i]) json_object_set_new(items, plan->items[i].key, json_real(round(est.item_s[i] * 10) / 10));
    char *js = json_dumps(items, JSON_COMPACT);
    vb_store_manifest_set(s, "estimate.items", js ? js : "{}", NULL);
    /* The first run's estimate stays as it was printed before the campaign started: a resume estimates only what
     * is left, and v_campaign_time sets each item against the estimate that came before it ran at all. Written by
     * the first run only (a file whose first run came before these keys keeps none: the view falls back). */
    int first = 0;
    if (sqlite3_prepare_v2(vb_store_db(s), "SELECT runs = 1 AND NOT EXISTS (SELECT 1 FROM manifest WHERE key = "
                           "'estimate.first.items') FROM campaign", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        first = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    if (first) {
        vb_store_manifest_set(s, "estimate.first.items", js ? js : "{}", NULL);
        snprintf(buf, sizeof buf, "%.1f", est.total_s);
        vb_store_manifest_set(s, "estimate.first.total_s", buf, NULL);
    }
    free(js);
    json_decref(items);
    for (size_t e = 0; e < p->n_engines; e++) {
        snprintf(key, sizeof key, "estimate.engine.%s_s", p->engines[e].name);
        snprintf(buf, sizeof buf, "%.1f", est.engine_s[e]);
        vb_store_manifest_set(s, key, buf, NULL);
        snprintf(key, sizeof key, "estimate.basis.%s", p->engines[e].name);
        vb_store_manifest_set(s, key, est.basis[e] ? est.basis[e] : "nothing left to run", NULL);
        if (say && (est.engine_s[e] > 0 || est.n_uncounted))
            fprintf(say, "  %s: %s\n", p->engines[e].name, est.basis[e] ? est.basis[e] : "");
    }
    for (size_t d = 0; d < est.n_prep; d++) {
        snprintf(key, sizeof key, "estimate.prepare.%zu", d);
        vb_store_manifest_set(s, key, est.prep[d], NULL);
        if (say) fprintf(say, "  prepare %s\n", est.prep[d]);
    }
    vb_store_event(s, VB_EVENT_ESTIMATE, "info", NULL, "coordinator", "estimate: %s", est.line);
    if (say) fprintf(say, "estimate: %s\n", est.line);
    vb_estimate_free(&est);
    free(done);
}

void vb_estimate_campaign_end(vb_store *s, const vb_profile *p, const char *cache_dir, double wall_s, FILE *say) {
    sqlite3_stmt *q = NULL;
    double est = -1;
    if (sqlite3_prepare_v2(vb_store_db(s), "SELECT value FROM manifest WHERE key = 'estimate.total_s'", -1, &q, NULL) ==
            SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        est = sqlite3_column_double(q, 0);
    sqlite3_finalize(q);
    char buf[64], a[32], b[32];
    snprintf(buf, sizeof buf, "%.1f", wall_s);
    vb_store_manifest_set(s, "estimate.actual_s", buf, NULL);
    if (est > 0) {
        snprintf(buf, sizeof buf, "%.2f", wall_s / est);
        vb_store_manifest_set(s, "estimate.ratio", buf, NULL);
        vb_store_event(s, VB_EVENT_ESTIMATE, "info", NULL, "coordinator",
                       "estimate vs actual: estimated %s, took %s (ratio %.2f)",
                       vb_duration_approx(est, a, sizeof a), vb_duration_approx(wall_s, b, sizeof b), wall_s / est);
        if (say) fprintf(say, "estimated %s, took %s (actual / estimate = %.2f)\n", a, b, wall_s / est);
    }
    vb_error err;
    int n = vb_history_record(cache_dir, vb_store_db(s), p, &err);
    char path[1100];
    vb_history_path(cache_dir, path, sizeof path);
    if (n < 0) vb_store_event(s, VB_EVENT_HISTORY, "warn", NULL, "coordinator",
                              "rates not added to the history %s: %s", path, err.message);
    else vb_store_event(s, VB_EVENT_HISTORY, "info", NULL, "coordinator",
                        "rates of %d engine/dataset pairs added to the history %s", n, path);
}
