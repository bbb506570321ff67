/* The report's charts (issue 15, charts 1-8), each from SQL over the results views of every run, grouped into
 * series by the label (report_runs.h), handed to gnuplot through charts.h. Repeats of a point are drawn as the
 * median with min-max whiskers; points that did not happen ("not reached", refused, short answers) are marked. */
#include "report/report_runs.h"
#include "metrics/recall.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_SERIES 256

/* One series: rows of (x, y values) from the runs, grouped by label, with repeats of an x aggregated. */
typedef struct point {
    double x, med, lo, hi; /* y: median, min, max over the rows with this x */
    double aux;            /* a second value: its median (e.g. p99 beside p50) */
    double aux2;
    double flag; /* summed flag column (refused windows, short answers) */
    int n;
} point;

typedef struct series {
    char name[256];
    point *p;
    size_t n, cap;
} series;

typedef struct series_set {
    series s[MAX_SERIES];
    size_t n;
} series_set;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    if (n == 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static series *series_get(series_set *ss, const char *name) {
    for (size_t i = 0; i < ss->n; i++)
        if (strcmp(ss->s[i].name, name) == 0) return &ss->s[i];
    if (ss->n == MAX_SERIES) return NULL;
    series *s = &ss->s[ss->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    return s;
}

static void series_free(series_set *ss) {
    for (size_t i = 0; i < ss->n; i++) free(ss->s[i].p);
    ss->n = 0;
}

/* Runs SQL (columns: label, x, y [, aux [, aux2 [, flag]]], NULL y skipped) on every run; consecutive rows with
 * the same label and x are one point (the SQL orders by label, x). */
static int collect(vb_report_set *rs, const char *table, const char *sql, series_set *ss, vb_error *err) {
    for (size_t r = 0; r < rs->n; r++) {
        char *q = vb_report_sql(rs->runs[r].db, table, sql);
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(rs->runs[r].db, q, -1, &st, NULL) != SQLITE_OK) {
            vb_error_set(err, "report", 1, "%s: reading %s: %s", rs->runs[r].path, table,
                         sqlite3_errmsg(rs->runs[r].db));
            free(q);
            return VB_ERROR;
        }
        free(q);
        int cols = sqlite3_column_count(st);
        double *ys = NULL, *as = NULL, *bs = NULL;
        size_t cap = 0;
        int k = 0;
        series *cur = NULL;
        double curx = NAN, flag = 0;
        int rc;
        for (;;) {
            rc = sqlite3_step(st);
            char name[256] = "";
            double x = NAN;
            if (rc == SQLITE_ROW) {
                vb_report_series(rs, r, (const char *)sqlite3_column_text(st, 0), name, sizeof name);
                x = sqlite3_column_double(st, 1);
            }
            int same = rc == SQLITE_ROW && cur && strcmp(cur->name, name) == 0 && x == curx;
            if (!same && cur && k) { /* close the point */
                if (cur->n == cur->cap) {
                    cur->cap = cur->cap ? 2 * cur->cap : 16;
                    cur->p = realloc(cur->p, cur->cap * sizeof *cur->p);
                }
                point *p = &cur->p[cur->n++];
                p->x = curx, p->n = k, p->flag = flag;
                p->aux = median(as, k), p->aux2 = median(bs, k);
                p->med = median(ys, k), p->lo = ys[0], p->hi = ys[k - 1];
            }
            if (rc != SQLITE_ROW) break;
            if (!same) {
                cur = series_get(ss, name), curx = x, k = 0, flag = 0;
                if (!cur) continue;
            }
            if (sqlite3_column_type(st, 2) == SQLITE_NULL) continue;
            if ((size_t)k == cap) {
                cap = cap ? 2 * cap : 16;
                ys = realloc(ys, cap * sizeof *ys), as = realloc(as, cap * sizeof *as), bs = realloc(bs, cap * sizeof *bs);
            }
            ys[k] = sqlite3_column_double(st, 2);
            as[k] = cols > 3 && sqlite3_column_type(st, 3) != SQLITE_NULL ? sqlite3_column_double(st, 3) : NAN;
            bs[k] = cols > 4 && sqlite3_column_type(st, 4) != SQLITE_NULL ? sqlite3_column_double(st, 4) : NAN;
            if (cols > 5) flag += sqlite3_column_double(st, 5);
            k++;
        }
        free(ys), free(as), free(bs);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return vb_error_set(err, "report", 1, "%s: reading %s: %s", rs->runs[r].path, table,
                                sqlite3_errmsg(rs->runs[r].db));
    }
    return VB_OK;
}

/* The caption: dataset(s) and run(s), and the comparison caveat when runs differ and are drawn together. */
static void caption(const vb_report_set *rs, const char *table, char *out, size_t len) {
    size_t o = 0;
    o += (size_t)snprintf(out + o, len - o, "dataset ");
    for (size_t r = 0; r < rs->n && o < len; r++) {
        sqlite3_stmt *st;
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT group_concat(DISTINCT dataset) FROM %s", table);
        const char *d = NULL;
        if (sqlite3_prepare_v2(rs->runs[r].db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
            d = (const char *)sqlite3_column_text(st, 0);
        o += (size_t)snprintf(out + o, len - o, "%s%s (run %s)", r ? "; " : "", d ? d : "-", rs->runs[r].name);
        sqlite3_finalize(st);
    }
    if (rs->mismatch_what[0] && o < len)
        snprintf(out + o, len - o, " -- CAUTION: the runs differ in %s (see the top of the report)", rs->mismatch_what);
}

static vb_chart *chart_new(vb_report_set *rs, const char *name, const char *title, const char *table) {
    char cap[1200];
    caption(rs, table, cap, sizeof cap);
    return vb_chart_new(name, title, cap);
}

static int draw(vb_report_set *rs, vb_chart *c, vb_error *err) {
    if (vb_chart_clauses(c) == 0) {
        vb_chart_free(c);
        return VB_OK;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/charts", rs->dir);
    mkdir(dir, 0755);
    if (!rs->quiet) fprintf(stderr, "report: drawing chart %zu: %s\n", rs->n_charts + 1, vb_chart_name(c));
    if (vb_chart_render(c, dir, err) != VB_OK) {
        vb_chart_free(c);
        return VB_ERROR;
    }
    rs->charts = realloc(rs->charts, (rs->n_charts + 1) * sizeof *rs->charts);
    rs->charts[rs->n_charts++] = c;
    return VB_OK;
}

/* The end of a chart made from ss: ss freed, the chart drawn when ss had a series, dropped (VB_OK) when it had none. */
static int draw_series(vb_report_set *rs, vb_chart *c, series_set *ss, vb_error *err) {
    size_t n = ss->n;
    series_free(ss);
    free(ss);
    if (!n) {
        vb_chart_free(c);
        return VB_OK;
    }
    return draw(rs, c, err);
}

static const char *q(const char *s, char *buf, size_t len) { return vb_chart_quote(s, buf, len); }

/* ---- 1. recall vs QPS, ann-benchmarks style --------------------------------------------------------------- */
static double clamp_recall(double r) { return r < 1e-3 ? 1e-3 : r > 0.9999 ? 0.9999 : r; }

static int chart_recall_qps(vb_report_set *rs, long clients, int several, int zoom, vb_error *err) {
    series_set *ss = calloc(1, sizeof *ss);
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT {label}, recall, qps FROM sweep_result WHERE clients = %ld "
                              "ORDER BY 1, 2, 3", clients);
    /* each (recall, qps) is its own point here: x is recall, so only exact duplicates merge */
    if (collect(rs, "sweep_result", sql, ss, err)) return free(ss), VB_ERROR;
    char name[64], title[160], qb[300];
    snprintf(name, sizeof name, "recall-qps%s%s", zoom ? "-zoom" : "", "");
    if (several) snprintf(name + strlen(name), sizeof name - strlen(name), "-c%ld", clients);
    snprintf(title, sizeof title, "Recall vs QPS%s, %ld client%s (Pareto front over the raw points)",
             zoom ? " at recall >= 0.85" : "", clients, clients == 1 ? "" : "s");
    vb_chart *c = chart_new(rs, name, title, "sweep_result");
    double lo = 0.9999;
    for (size_t i = 0; i < ss->n; i++)
        for (size_t j = 0; j < ss->s[i].n; j++) lo = fmin(lo, clamp_recall(ss->s[i].p[j].x));
    if (zoom) lo = 0.85;
    lo = fmin(lo, 0.5);
    if (zoom) lo = 0.85;
    vb_chart_cmd(c, "set xlabel 'recall@k (logit scale; recall 1 drawn at 0.9999)'");
    vb_chart_cmd(c, "set ylabel 'queries per second (log scale)'");
    vb_chart_cmd(c, "set logscale y");
    vb_chart_cmd(c, "set nonlinear x via log(x/(1-x)) inverse 1/(1+exp(-x))");
    vb_chart_cmd(c, "set xrange [%g:0.9999]", lo);
    vb_chart_cmd(c, "set xtics (%s'0.9' 0.9, '0.95' 0.95, '0.99' 0.99, '0.999' 0.999, '0.9999' 0.9999)",
                 zoom ? "'0.85' 0.85, " : "'0.5' 0.5, '0.7' 0.7, ");
    int any = 0;
    for (size_t i = 0; i < ss->n; i++) {
        series *s = &ss->s[i];
        int raw = vb_chart_block(c);
        for (size_t j = 0; j < s->n; j++)
            if (!zoom || s->p[j].x >= 0.85) vb_chart_row(c, "%.9g %.9g", clamp_recall(s->p[j].x), s->p[j].med), any = 1;
        /* Pareto front: walking from the highest recall down, a point is on it when no point with higher
         * recall has higher QPS (points come sorted by recall ascending) */
        int front = vb_chart_block(c);
        double best = -1;
        size_t *on = calloc(s->n + 1, sizeof *on), m = 0;
        for (size_t j = s->n; j-- > 0;)
            if (s->p[j].med > best) best = s->p[j].med, on[m++] = j;
        while (m-- > 0)
            if (!zoom || s->p[on[m]].x >= 0.85)
                vb_chart_row(c, "%.9g %.9g", clamp_recall(s->p[on[m]].x), s->p[on[m]].med);
        free(on);
        vb_chart_plot(c, "data index %d using 1:2 with points pt 7 ps 0.7 lc %zu notitle", raw, i + 1);
        vb_chart_plot(c, "data index %d using 1:2 with lines lw 2 lc %zu title '%s'", front, i + 1,
                      q(s->name, qb, sizeof qb));
    }
    series_free(ss);
    free(ss);
    if (!any) {
        vb_chart_free(c);
        return VB_OK;
    }
    return draw(rs, c, err);
}

/* ---- 2. best QPS at recall 0.90 / 0.95 / 0.99 ------------------------------------------------------------ */
static int chart_recall_targets(vb_report_set *rs, vb_error *err) {
    static const double floors[] = {0.90, 0.95, 0.99};
    series_set *ss = calloc(1, sizeof *ss);
    /* aux = the best QPS at recall >= 0.95, aux2 at >= 0.99 (NULL: not reached); y at >= 0.90; one row per run */
    if (collect(rs, "sweep_result",
                "SELECT {label}, 0, COALESCE(MAX(CASE WHEN recall >= 0.90 THEN qps END), -1), "
                "MAX(CASE WHEN recall >= 0.95 THEN qps END), MAX(CASE WHEN recall >= 0.99 THEN qps END) "
                "FROM sweep_result WHERE clients = 1 GROUP BY 1 ORDER BY MIN(rowid)", ss, err))
        return free(ss), VB_ERROR;
    if (ss->n == 0) { /* no sweep in these runs (a campaign of other phases): no chart */
        free(ss);
        return VB_OK;
    }
    vb_chart *c = chart_new(rs, "recall-targets", "Best QPS whose recall passes 0.90 / 0.95 / 0.99 (1 client)",
                            "sweep_result");
    double ymax = 1;
    for (size_t i = 0; i < ss->n; i++)
        if (ss->s[i].n) ymax = fmax(ymax, fmax(ss->s[i].p[0].med, fmax(ss->s[i].p[0].aux, ss->s[i].p[0].aux2)));
    char tics[8192] = "", qb[300];
    size_t o = 0;
    int blocks[3], missing = vb_chart_block(c);
    int nmissing = 0;
    for (size_t i = 0; i < ss->n; i++) {
        if (!ss->s[i].n) continue;
        point *p = &ss->s[i].p[0];
        double v[3] = {p->med < 0 ? NAN : p->med, p->aux, p->aux2};
        for (int f = 0; f < 3; f++)
            if (isnan(v[f])) vb_chart_row(c, "%g %g \"not reached\"", i * 4.0 + f, ymax * 0.03), nmissing++;
        o += (size_t)snprintf(tics + o, sizeof tics - o, "%s'%s' %g", o ? ", " : "", q(ss->s[i].name, qb, sizeof qb),
                              i * 4.0 + 1);
    }
    if (!nmissing) vb_chart_row(c, "NaN NaN \"\"");
    for (int f = 0; f < 3; f++) {
        blocks[f] = vb_chart_block(c);
        for (size_t i = 0; i < ss->n; i++) {
            if (!ss->s[i].n) continue;
            point *p = &ss->s[i].p[0];
            double v = f == 0 ? (p->med < 0 ? NAN : p->med) : f == 1 ? p->aux : p->aux2;
            if (!isnan(v)) vb_chart_row(c, "%g %.9g", i * 4.0 + f, v);
        }
        vb_chart_row(c, "NaN NaN");
    }
    vb_chart_cmd(c, "set style fill solid 0.75 border -1\nset boxwidth 0.9");
    vb_chart_cmd(c, "set xtics (%s) rotate by -20", tics);
    vb_chart_cmd(c, "set xrange [-1:%g]\nset yrange [0:%g]", ss->n * 4.0 - 1, ymax * 1.15);
    vb_chart_cmd(c, "set ylabel 'queries per second'");
    for (int f = 0; f < 3; f++)
        vb_chart_plot(c, "data index %d using 1:2 with boxes lc %d title 'recall >= %.2f'", blocks[f], f + 1, floors[f]);
    vb_chart_plot(c, "data index %d using 1:2:3 with labels rotate by 90 left tc rgb '#b00000' notitle", missing);
    vb_chart_plot(c, "data index %d using 1:(0) with points pt 2 ps 1.5 lc rgb '#b00000' title 'not reached'", missing);
    series_free(ss);
    free(ss);
    return draw(rs, c, err);
}

/* ---- 2b. the distribution of per-query recall at one ef_search -------------------------------------------- */
/* One series' per-query recall at one ef_search (1 client), its repeats (and runs of the same name) merged. */
typedef struct dist_series {
    char name[256];
    long ef;
    double *v;
    size_t n;
} dist_series;

/* The CDF of per-query recall per series at the lowest ef_search of the 1-client sweep that every series measured
 * with per-query values (recall_dist.query_recall): the share of the queries whose recall is at or below x, as
 * steps, on a log axis so that a share of 1 query in 500 at recall 0 is as visible as the bulk at 1. A mean of 0.95
 * fits every query at 0.95 and 5 % of the queries with nothing right alike; this chart tells them apart. */
static int chart_recall_distribution(vb_report_set *rs, vb_error *err) {
    dist_series *ds = NULL;
    size_t nds = 0;
    int rc = VB_OK;
    for (size_t r = 0; r < rs->n && rc == VB_OK; r++) {
        char *sql = vb_report_sql(rs->runs[r].db, "sweep_result",
                                  "SELECT {label}, s.ef_search, d.query_recall FROM sweep_result AS s JOIN recall_dist "
                                  "AS d ON d.result_key = s.result_key WHERE s.clients = 1 AND d.query_recall IS NOT "
                                  "NULL ORDER BY s.rowid");
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(rs->runs[r].db, sql, -1, &st, NULL) != SQLITE_OK) {
            free(sql);
            continue;   /* an older file without recall_dist is read through a copy that has it; nothing else fails */
        }
        free(sql);
        while (rc == VB_OK && sqlite3_step(st) == SQLITE_ROW) {
            char name[256];
            vb_report_series(rs, r, (const char *)sqlite3_column_text(st, 0), name, sizeof name);
            long ef = sqlite3_column_int64(st, 1);
            const uint8_t *b = sqlite3_column_blob(st, 2);
            size_t n = (size_t)sqlite3_column_bytes(st, 2) / 4, k = 0;
            while (k < nds && !(ds[k].ef == ef && strcmp(ds[k].name, name) == 0)) k++;
            if (k == nds) {
                dist_series *grown = realloc(ds, (nds + 1) * sizeof *ds);
                if (!grown) {
                    rc = vb_error_set(err, "report", 1, "out of memory for the recall distribution chart");
                    break;
                }
                ds = grown;
                memset(&ds[nds], 0, sizeof ds[nds]);
                snprintf(ds[nds].name, sizeof ds[nds].name, "%s", name);
                ds[nds++].ef = ef;
            }
            double *v = malloc((n ? n : 1) * sizeof *v);
            if (!v) {
                rc = vb_error_set(err, "report", 1, "out of memory for the recall distribution chart");
                break;
            }
            for (size_t i = 0; i < n; i++) {   /* float32 little-endian, NaN: not answered (left out) */
                uint32_t u = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 | (uint32_t)b[4 * i + 2] << 16 |
                             (uint32_t)b[4 * i + 3] << 24;
                float f;
                memcpy(&f, &u, sizeof f);
                v[i] = f;
            }
            rc = vb_recall_dist_merge(&ds[k].v, &ds[k].n, v, n, err);   /* the repeats as one set */
            free(v);
        }
        sqlite3_finalize(st);
    }
    /* the ef_search: the lowest that every series has */
    long ef = -1;
    for (size_t i = 0; i < nds && rc == VB_OK; i++) {
        if (ef >= 0 && ds[i].ef >= ef) continue;
        int everywhere = 1;
        for (size_t j = 0; j < nds && everywhere; j++) {
            int has = 0;
            for (size_t m = 0; m < nds && !has; m++) has = strcmp(ds[m].name, ds[j].name) == 0 && ds[m].ef == ds[i].ef;
            everywhere = has;
        }
        if (everywhere) ef = ds[i].ef;
    }
    if (rc == VB_OK && ef >= 0) {
        char title[200], qb[300];
        snprintf(title, sizeof title, "Per-query recall at ef_search %ld (1 client): share of the queries at or below",
                 ef);
        char cap[1600];
        caption(rs, "sweep_result", cap, sizeof cap);
        size_t o = strlen(cap);
        snprintf(cap + o, sizeof cap - o, "; at x = 0: the queries with nothing right, whatever the mean");
        vb_chart *c = vb_chart_new("recall-distribution", title, cap);
        size_t most = 1, drawn = 0;
        for (size_t i = 0; i < nds; i++) {
            if (ds[i].ef != ef) continue;
            size_t m = 0;
            for (size_t j = 0; j < ds[i].n; j++)
                if (!isnan(ds[i].v[j])) ds[i].v[m++] = ds[i].v[j];
            if (m == 0) continue;
            qsort(ds[i].v, m, sizeof *ds[i].v, cmp_double);
            most = m > most ? m : most;
            int b = vb_chart_block(c);
            double sum = 0;
            for (size_t j = 0; j < m; j++) {
                sum += ds[i].v[j];
                if (j + 1 == m || ds[i].v[j + 1] != ds[i].v[j])   /* the last of equal values: the CDF's step */
                    vb_chart_row(c, "%.6g %.9g", ds[i].v[j], (double)(j + 1) / (double)m);   /* float32: 6 digits */
            }
            vb_chart_plot(c, "data index %d using 1:2 with steps lw 2 lc %zu title '%s (mean %.4f, %zu queries)'", b,
                          drawn + 1, q(ds[i].name, qb, sizeof qb), sum / (double)m, m);
            vb_chart_plot(c, "data index %d using 1:2 with points pt 7 ps 0.6 lc %zu notitle", b, drawn + 1);
            drawn++;
        }
        vb_chart_cmd(c, "set xlabel 'per-query recall@k'\nset ylabel 'share of the queries at or below (log scale)'");
        vb_chart_cmd(c, "set logscale y\nset yrange [%.9g:1.05]\nset xrange [-0.02:1.02]\nset key inside left top box opaque",
                     0.5 / (double)most);
        rc = draw(rs, c, err);
    }
    for (size_t i = 0; i < nds; i++) free(ds[i].v);
    free(ds);
    return rc;
}

/* ---- 3. latency against ef_search ----------------------------------------------------------------------- */
static int chart_latency(vb_report_set *rs, vb_error *err) {
    series_set *ss = calloc(1, sizeof *ss);
    if (collect(rs, "sweep_result", "SELECT {label}, ef_search, p50_ms, p99_ms, p95_ms FROM sweep_result "
                                     "WHERE clients = 1 ORDER BY 1, 2", ss, err))
        return free(ss), VB_ERROR;
    /* Lines, not shaded p50 - p99 bands: four series' bands overlapped into one area that said nothing (issue 36.15) */
    vb_chart *c = chart_new(rs, "latency-ef", "Latency against ef_search (1 client; solid: p50, dashed: p99)",
                            "sweep_result");
    vb_chart_cmd(c, "set logscale x 2\nset logscale y\nset xlabel 'ef_search'\nset ylabel 'latency (ms, log scale)'");
    char qb[300];
    for (size_t i = 0; i < ss->n; i++) {
        int b = vb_chart_block(c);
        for (size_t j = 0; j < ss->s[i].n; j++)
            vb_chart_row(c, "%g %.9g %.9g", ss->s[i].p[j].x, ss->s[i].p[j].med, ss->s[i].p[j].aux);
        vb_chart_plot(c, "data index %d using 1:2 with linespoints pt 7 lw 2 lc %zu title '%s'", b, i + 1,
                      q(ss->s[i].name, qb, sizeof qb));
        vb_chart_plot(c, "data index %d using 1:3 with linespoints pt 6 lw 1 dt 2 lc %zu notitle", b, i + 1);
    }
    series_free(ss);
    free(ss);
    return draw(rs, c, err);
}

/* ---- 4. build cost ---------------------------------------------------------------------------------------- */
/* Grouped bars: one group per series, one bar per column of SQL (label, 0, a, b, c); titles for the bars. */
static int chart_bars(vb_report_set *rs, const char *name, const char *title, const char *table, const char *sql,
                      const char *const bar_titles[3], const char *ylabel, const char *extra, vb_error *err) {
    series_set *ss = calloc(1, sizeof *ss);
    if (collect(rs, table, sql, ss, err)) return free(ss), VB_ERROR;
    vb_chart *c = chart_new(rs, name, title, table);
    char tics[8192] = "", qb[300];
    size_t o = 0;
    for (size_t i = 0; i < ss->n; i++)
        o += (size_t)snprintf(tics + o, sizeof tics - o, "%s'%s' %g", o ? ", " : "", q(ss->s[i].name, qb, sizeof qb),
                              i * 4.0 + 1);
    for (int f = 0; f < 3 && bar_titles[f]; f++) {
        int b = vb_chart_block(c), rows = 0;
        for (size_t i = 0; i < ss->n; i++) {
            if (!ss->s[i].n) continue;
            point *p = &ss->s[i].p[0];
            double v = f == 0 ? p->med : f == 1 ? p->aux : p->aux2;
            if (!isnan(v)) vb_chart_row(c, "%g %.9g", i * 4.0 + f, v), rows++;
        }
        if (!rows) vb_chart_row(c, "NaN NaN");
        vb_chart_plot(c, "data index %d using 1:2 with boxes lc %d title '%s'", b, f + 1, bar_titles[f]);
    }
    vb_chart_cmd(c, "set style fill solid 0.75 border -1\nset boxwidth 0.9\nset yrange [0:*]");
    vb_chart_cmd(c, "set xtics (%s) rotate by -20\nset xrange [-1:%g]", tics, ss->n * 4.0 - 1);
    vb_chart_cmd(c, "set ylabel '%s'", ylabel);
    if (extra) vb_chart_cmd(c, "%s", extra);
    return draw_series(rs, c, ss, err);
}

/* The raw float32 size of each run's corpus (rows x dim x 4 bytes), in MiB, as reference lines. */
static void raw_size_lines(vb_report_set *rs, char *out, size_t len) {
    size_t o = 0;
    out[0] = '\0';
    for (size_t r = 0; r < rs->n; r++) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(rs->runs[r].db,
                               "SELECT d.value ->> '$.name', (d.value ->> '$.rows') * (d.value ->> '$.dim') * 4.0 "
                               "FROM manifest AS m, json_each(m.value, '$.datasets') AS d "
                               "WHERE m.key = 'profile.resolved'", -1, &st, NULL) != SQLITE_OK)
            continue;
        while (sqlite3_step(st) == SQLITE_ROW && o < len) {
            double mib = sqlite3_column_double(st, 1) / 1048576.0;
            if (mib <= 0) continue;
            o += (size_t)snprintf(out + o, len - o,
                                  "set arrow from graph 0, first %.6g to graph 1, first %.6g nohead dt 2 lw 2 lc rgb "
                                  "'#444444'\nset label 'raw float32 corpus %s: %.1f MiB' at graph 0.01, first %.6g "
                                  "offset 0,0.6 noenhanced\n", mib, mib, sqlite3_column_text(st, 0), mib, mib);
        }
        sqlite3_finalize(st);
    }
}

static int charts_build(vb_report_set *rs, vb_error *err) {
    static const char *const time_titles[3] = {"load", "index build", "time to first query"};
    static const char *const size_titles[3] = {"index", "table", NULL};
    static const char *const mem_titles[3] = {"peak cgroup memory", "peak RSS", NULL};
    if (chart_bars(rs, "build-time", "Build cost: load, index build, time to first query", "build_result",
                   "SELECT {label}, 0, load_s, build_s, first_query_s FROM build_result ORDER BY 1", time_titles,
                   "seconds", NULL, err))
        return VB_ERROR;
    char lines[4096];
    raw_size_lines(rs, lines, sizeof lines);
    if (chart_bars(rs, "build-size", "Index and table size (dashed: the raw float32 corpus)", "build_result",
                   "SELECT {label}, 0, index_bytes / 1048576.0, table_bytes / 1048576.0 FROM build_result ORDER BY 1",
                   size_titles, "MiB", lines, err))
        return VB_ERROR;
    return chart_bars(rs, "build-memory", "Server memory during the build (peaks)", "v_server_phase",
                      "SELECT {label}, 0, peak_cgroup_bytes / 1048576.0, peak_rss_bytes / 1048576.0 "
                      "FROM v_server_phase WHERE phase = 'build' ORDER BY 1", mem_titles, "MiB", NULL, err);
}

/* ---- 5. concurrency --------------------------------------------------------------------------------------- */
static int charts_concurrency(vb_report_set *rs, vb_error *err) {
    static const char *const what[3][3] = {
        {"concurrency-qps", "qps", "queries per second"},
        {"concurrency-p99", "p99_ms", "p99 latency (ms)"},
        {"concurrency-inflight", "in_flight", "queries in flight (in-call time / window)"}};
    for (int w = 0; w < 3; w++) {
        series_set *ss = calloc(1, sizeof *ss);
        char sql[512], title[200], qb[300];
        snprintf(sql, sizeof sql,
                 "SELECT {label}, clients, %s, NULL, NULL, efficiency_refused LIKE 'refused%%' FROM v_concurrency "
                 "WHERE target_rate IS NULL ORDER BY 1, 2", what[w][1]);
        if (collect(rs, "v_concurrency", sql, ss, err)) return free(ss), VB_ERROR;
        snprintf(title, sizeof title, "Concurrency: %s against clients (closed loop; median, min-max)", what[w][2]);
        vb_chart *c = chart_new(rs, what[w][0], title, "v_concurrency");
        vb_chart_cmd(c, "set logscale x 2\nset xlabel 'clients'\nset ylabel '%s'\nset yrange [0:*]", what[w][2]);
        int refused = vb_chart_block(c), nref = 0;
        for (size_t i = 0; i < ss->n; i++)
            for (size_t j = 0; j < ss->s[i].n; j++)
                if (ss->s[i].p[j].flag > 0) vb_chart_row(c, "%g %.9g", ss->s[i].p[j].x, ss->s[i].p[j].med), nref++;
        if (!nref) vb_chart_row(c, "NaN NaN");
        for (size_t i = 0; i < ss->n; i++) {
            series *s = &ss->s[i];
            int b = vb_chart_block(c);
            double one = NAN;
            for (size_t j = 0; j < s->n; j++) {
                vb_chart_row(c, "%g %.9g %.9g %.9g", s->p[j].x, s->p[j].med, s->p[j].lo, s->p[j].hi);
                if (s->p[j].x == 1) one = s->p[j].med;
            }
            vb_chart_plot(c, "data index %d using 1:2:3:4 with yerrorlines pt 7 lw 2 lc %zu title '%s'", b, i + 1,
                          q(s->name, qb, sizeof qb));
            if (w == 0 && !isnan(one))
                vb_chart_plot(c, "data index %d using 1:($1*%.9g) with lines dt 3 lc %zu title 'ideal (clients x QPS at 1)'",
                              b, one, i + 1);
            if (w == 2) vb_chart_plot(c, "data index %d using 1:1 with lines dt 3 lc %zu title 'ideal (= clients)'", b, i + 1);
        }
        if (nref)
            vb_chart_plot(c, "data index %d using 1:2 with points pt 6 ps 2.5 lw 2 lc rgb '#b00000' "
                             "title 'refused: in flight < clients/2'", refused);
        series_free(ss);
        free(ss);
        if (draw(rs, c, err)) return VB_ERROR;
    }
    return VB_OK;
}

/* Where the time goes: per series a stacked bar per client count of the client's mean latency (medians over the
 * repeats): the server's execution on CPU, its execution waiting, and outside the server (v_time_split). The
 * stack is drawn as overlapping boxes of the running sums, tallest first. */
static int charts_timegoes(vb_report_set *rs, vb_error *err) {
    series_set *ss = calloc(1, sizeof *ss);
    if (collect(rs, "v_time_split", "SELECT {label}, clients, server_cpu_ms, server_wait_ms, outside_ms FROM v_time_split "
                                    "ORDER BY 1, 2", ss, err))
        return free(ss), VB_ERROR;
    for (size_t i = 0; i < ss->n; i++) {
        series *s = &ss->s[i];
        char name[64], title[400], tics[2048] = "";
        snprintf(name, sizeof name, "timegoes-%zu", i + 1);
        snprintf(title, sizeof title, "Where the time goes: %s, mean latency per query by client count", s->name);
        vb_chart *c = chart_new(rs, name, title, "v_time_split");
        size_t o = 0;
        for (size_t j = 0; j < s->n; j++)
            o += (size_t)snprintf(tics + o, sizeof tics - o, "%s'%g' %zu", j ? ", " : "", s->p[j].x, j);
        static const char *const part[3] = {"outside the server execution", "server execution, waiting",
                                            "server execution, on CPU"};
        for (int f = 0; f < 3; f++) {
            int b = vb_chart_block(c);
            for (size_t j = 0; j < s->n; j++) {
                point *p = &s->p[j];
                double cpu = p->med, wait = isnan(p->aux) ? 0 : p->aux, out = isnan(p->aux2) ? 0 : p->aux2;
                double top = f == 0 ? cpu + wait + out : f == 1 ? cpu + wait : cpu;
                vb_chart_row(c, "%zu %.9g", j, top);
            }
            vb_chart_plot(c, "data index %d using 1:2 with boxes lc %d title '%s'", b, f + 1, part[f]);
        }
        vb_chart_cmd(c, "set style fill solid 0.75 border -1\nset boxwidth 0.6\nset yrange [0:*]");
        vb_chart_cmd(c, "set xtics (%s)\nset xrange [-0.6:%g]\nset xlabel 'clients'\nset ylabel 'ms per query'", tics,
                     s->n - 0.4);
        if (draw(rs, c, err)) {
            series_free(ss);
            free(ss);
            return VB_ERROR;
        }
    }
    series_free(ss);
    free(ss);
    return VB_OK;
}

/* ---- 6. filtered ------------------------------------------------------------------------------------------ */
static int charts_filtered(vb_report_set *rs, vb_error *err) {
    static const char *const what[2][3] = {{"filtered-recall", "recall", "recall@k"},
                                           {"filtered-qps", "qps", "queries per second"}};
    for (int w = 0; w < 2; w++) {
        series_set *ss = calloc(1, sizeof *ss);
        char sql[512], title[200], qb[300];
        /* one line per engine, configuration and predicate (range keeps the engine's name alone) */
        snprintf(sql, sizeof sql, "SELECT {label} || IIF(predicate = 'range', '', ' ' || predicate), selectivity, %s, "
                                  "NULL, NULL, short_answers FROM v_filtered ORDER BY 1, 2", what[w][1]);
        if (collect(rs, "v_filtered", sql, ss, err)) return free(ss), VB_ERROR;
        snprintf(title, sizeof title, "Filtered search: %s against selectivity (1 client)", what[w][2]);
        vb_chart *c = chart_new(rs, what[w][0], title, "v_filtered");
        vb_chart_cmd(c, "set logscale x\nset xlabel 'selectivity (fraction of rows that pass the filter, log)'");
        vb_chart_cmd(c, "set ylabel '%s'\nset yrange [0:%s]", what[w][2], w == 0 ? "1.05" : "*");
        int marks = vb_chart_block(c), nm = 0;
        for (size_t i = 0; i < ss->n; i++)
            for (size_t j = 0; j < ss->s[i].n; j++)
                if (ss->s[i].p[j].flag > 0)
                    vb_chart_row(c, "%g %.9g \"%.0f short\"", ss->s[i].p[j].x, ss->s[i].p[j].med, ss->s[i].p[j].flag), nm++;
        if (!nm) vb_chart_row(c, "NaN NaN \"\"");
        for (size_t i = 0; i < ss->n; i++) {
            int b = vb_chart_block(c);
            for (size_t j = 0; j < ss->s[i].n; j++)
                vb_chart_row(c, "%g %.9g %.9g %.9g", ss->s[i].p[j].x, ss->s[i].p[j].med, ss->s[i].p[j].lo,
                             ss->s[i].p[j].hi);
            vb_chart_plot(c, "data index %d using 1:2:3:4 with yerrorlines pt 7 lw 2 lc %zu title '%s'", b, i + 1,
                          q(ss->s[i].name, qb, sizeof qb));
        }
        if (nm) {
            vb_chart_plot(c, "data index %d using 1:2 with points pt 6 ps 2.5 lw 2 lc rgb '#b00000' "
                             "title 'short answers (fewer than k rows)'", marks);
            vb_chart_plot(c, "data index %d using 1:2:3 with labels offset 0,1.2 tc rgb '#b00000' notitle", marks);
        }
        if (draw_series(rs, c, ss, err)) return VB_ERROR;
    }
    return VB_OK;
}

/* ---- 6b. cold start: latency against query number, cold and warm ---------------------------------------------- */
/* One chart per series: each cold query's latency right after the restart, the rolling median of them (the line
 * that says when the server is warm again, metrics/coldstart.h), the same queries warm (dashed), and the bound the
 * rolling median must reach: 1.1 x the warm median. Log y: the first query is often tens of times the others. */
static int charts_cold_start(vb_report_set *rs, vb_error *err) {
    series_set *cold = calloc(1, sizeof *cold), *warm = calloc(1, sizeof *warm);
    /* aux: the rolling median, aux2: the bound it must reach (the store's tolerance over the warm median) */
    if (collect(rs, "v_cold_start_queries", "SELECT {label}, n, latency_ms, rolling_p50_ms, warm_bound_ms "
                "FROM v_cold_start_queries WHERE pass = 'cold' AND ok = 1 ORDER BY 1, 2", cold, err) ||
        collect(rs, "v_cold_start_queries", "SELECT {label}, n, latency_ms FROM v_cold_start_queries "
                "WHERE pass = 'warm' AND ok = 1 ORDER BY 1, 2", warm, err)) {
        series_free(cold), series_free(warm), free(cold), free(warm);
        return VB_ERROR;
    }
    int rc = VB_OK;
    for (size_t i = 0; i < cold->n && rc == VB_OK; i++) {
        series *c = &cold->s[i], *w = NULL;
        for (size_t j = 0; j < warm->n; j++)
            if (strcmp(warm->s[j].name, c->name) == 0) w = &warm->s[j];
        if (!c->n) continue;
        char name[200], title[400], qb[300];
        snprintf(name, sizeof name, "cold-start-%s", c->name);
        for (char *p = name; *p; p++)
            if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') && !(*p >= '0' && *p <= '9')) *p = '-';
        snprintf(title, sizeof title, "Cold start: %s, latency of each query after the restart against the same "
                 "queries warm", q(c->name, qb, sizeof qb));
        vb_chart *ch = chart_new(rs, name, title, "v_cold_start_queries");
        double bound = c->p[0].aux2;
        vb_chart_cmd(ch, "set logscale y\nset xlabel 'query number (1 = the first after the restart)'");
        vb_chart_cmd(ch, "set ylabel 'latency (ms, log scale)'\nset xrange [0:%g]", c->p[c->n - 1].x + 1);
        int b = vb_chart_block(ch);
        for (size_t j = 0; j < c->n; j++)
            vb_chart_row(ch, "%g %.9g %.9g", c->p[j].x, c->p[j].med, c->p[j].aux);
        vb_chart_plot(ch, "data index %d using 1:2 with linespoints pt 7 ps 0.4 lw 1 lc 1 title 'cold (after the "
                      "restart)'", b);
        vb_chart_plot(ch, "data index %d using 1:3 with lines lw 3 lc 1 title 'cold, rolling median'", b);
        if (w && w->n) {
            int bw = vb_chart_block(ch);
            for (size_t j = 0; j < w->n; j++) vb_chart_row(ch, "%g %.9g", w->p[j].x, w->p[j].med);
            vb_chart_plot(ch, "data index %d using 1:2 with lines dt 2 lw 1.5 lc 2 title 'warm (the same queries again)'",
                          bw);
        }
        if (bound > 0 && !isnan(bound))
            vb_chart_plot(ch, "%.9g with lines dt 3 lw 2 lc rgb '#444444' title 'warm median + 10 %% (%.3f ms): warm "
                          "again below'", bound, bound);
        rc = draw(rs, ch, err);
    }
    series_free(cold), series_free(warm), free(cold), free(warm);
    return rc;
}

/* ---- 7. churn ---------------------------------------------------------------------------------------------- */
static int charts_churn(vb_report_set *rs, vb_error *err) {
    static const char *const qps_titles[3] = {"QPS before", "QPS after", NULL};
    static const char *const rate_titles[3] = {"first load (rows/s)", "reinsert (rows/s)", NULL};
    if (chart_bars(rs, "churn-qps", "Churn: QPS before and after deleting and reinserting rows", "v_churn",
                   "SELECT {label}, 0, qps_before, qps_after FROM v_churn ORDER BY 1", qps_titles,
                   "queries per second", NULL, err))
        return VB_ERROR;
    /* the reinsert's rate beside the first load's; a churn stopped by its limit says how far it got */
    char extra[8192] = "";
    size_t o = 0;
    series_set *ss = calloc(1, sizeof *ss);
    if (collect(rs, "v_churn", "SELECT {label}, 0, rows_done, rows_planned, completed FROM v_churn ORDER BY 1", ss, err))
        return free(ss), VB_ERROR;
    for (size_t i = 0; i < ss->n; i++)
        if (ss->s[i].n && ss->s[i].p[0].aux2 == 0)
            o += (size_t)snprintf(extra + o, sizeof extra - o,
                                  "set label 'limit expired: %.0f of %.0f rows' at %g, graph 0.95 center tc rgb "
                                  "'#b00000'\n", ss->s[i].p[0].med, ss->s[i].p[0].aux, i * 4.0 + 1);
    series_free(ss);
    free(ss);
    return chart_bars(rs, "churn-rate", "Churn: reinsert rate against the first load's rate", "v_churn",
                      "SELECT {label}, 0, (SELECT MAX(b.rows_per_s) FROM build_result AS b WHERE COALESCE(b.config, b.engine) = v_churn.engine "
                      "AND b.dataset = v_churn.dataset), rows_per_s FROM v_churn ORDER BY 1", rate_titles,
                      "rows per second", extra, err);
}

/* ---- 7b. streaming --------------------------------------------------------------------------------------------- */
/* The series of a streaming chart: the configuration and its offered insert rate. */
#define STREAM_SERIES "{label} || ' @ ' || IIF(insert_rate = 0, 'max', printf('%g', insert_rate)) || ' rows/s'"

/* One line per series of `column` against the stage (the visible fraction of the corpus when the window began),
 * and the window at rest drawn apart as an open point at x = 1.02. */
static int chart_stage_lines(vb_report_set *rs, const char *name, const char *title, const char *column,
                             const char *ylabel, const char *yrange, vb_error *err) {
    char sql[640], qb[300];
    series_set *ss = calloc(1, sizeof *ss);
    snprintf(sql, sizeof sql, "SELECT %s, IIF(at_rest, 1.02, 1.0 * rows_visible / rows_total), %s "
                              "FROM v_streaming ORDER BY 1, 2", STREAM_SERIES, column);
    if (collect(rs, "v_streaming", sql, ss, err)) return free(ss), VB_ERROR;
    vb_chart *c = chart_new(rs, name, title, "v_streaming");
    vb_chart_cmd(c, "set xlabel 'rows visible when the window began (fraction of the corpus; 1.02: at rest)'");
    vb_chart_cmd(c, "set ylabel '%s'\nset yrange [%s]", ylabel, yrange);
    for (size_t i = 0; i < ss->n; i++) {
        int b = vb_chart_block(c), rows = 0;
        for (size_t j = 0; j < ss->s[i].n; j++)
            if (ss->s[i].p[j].x <= 1.0) vb_chart_row(c, "%g %.9g", ss->s[i].p[j].x, ss->s[i].p[j].med), rows++;
        if (!rows) vb_chart_row(c, "NaN NaN");
        vb_chart_plot(c, "data index %d using 1:2 with linespoints pt 7 lw 2 lc %zu title '%s'", b, i + 1,
                      q(ss->s[i].name, qb, sizeof qb));
        int r = vb_chart_block(c);
        rows = 0;
        for (size_t j = 0; j < ss->s[i].n; j++)
            if (ss->s[i].p[j].x > 1.0) vb_chart_row(c, "%g %.9g", ss->s[i].p[j].x, ss->s[i].p[j].med), rows++;
        if (!rows) vb_chart_row(c, "NaN NaN");
        vb_chart_plot(c, "data index %d using 1:2 with points pt 6 ps 2 lw 2 lc %zu notitle", r, i + 1);
    }
    return draw_series(rs, c, ss, err);
}

static int charts_streaming(vb_report_set *rs, vb_error *err) {
    static const char *const rate_titles[3] = {"offered (rows/s)", "achieved (rows/s)", NULL};
    static const char *const fresh_titles[3] = {"p50 (ms)", "p99 (ms)", NULL};
    if (chart_stage_lines(rs, "streaming-recall", "Streaming: recall against the visible rows at each stage",
                          "recall", "recall@k", "0:1.05", err) ||
        chart_stage_lines(rs, "streaming-qps", "Streaming: QPS at each stage while rows are inserted", "qps",
                          "queries per second", "0:*", err) ||
        chart_stage_lines(rs, "streaming-p99", "Streaming: p99 latency at each stage", "p99_ms", "p99 (ms)", "0:*",
                          err))
        return VB_ERROR;
    /* the whole stream's rates: rows due and rows inserted over the stage intervals that inserted rows */
    if (chart_bars(rs, "streaming-rate", "Streaming: offered against achieved insert rate", "v_streaming",
                   "SELECT " STREAM_SERIES ", 0, SUM(rows_scheduled) / SUM(interval_s), SUM(rows_inserted) / "
                   "SUM(interval_s) FROM v_streaming WHERE at_rest = 0 AND interval_s > 0 AND rows_inserted > 0 GROUP BY item_key "
                   "ORDER BY 1",
                   rate_titles, "rows per second", NULL, err))
        return VB_ERROR;
    return chart_bars(rs, "streaming-freshness", "Streaming: freshness (insert acknowledged -> returned by a search)",
                      "v_streaming", "SELECT " STREAM_SERIES ", 0, MAX(fresh_p50_ms), MAX(fresh_p99_ms) FROM v_streaming "
                      "WHERE fresh_probes > fresh_never GROUP BY item_key ORDER BY 1", fresh_titles,
                      "milliseconds (the worst stage)", NULL, err);
}

/* ---- 7b'. mixed ------------------------------------------------------------------------------------------------ */
/* The series of a mixed chart: the configuration and its choice of rows (uniform or zipf(s)). */
#define MIXED_SERIES "{label} || ' ' || ids"

/* One line per series of `column` against the window: the write windows 1..W, then the one at rest and the one after
 * maintenance (W + 1, W + 2), which the x axis names. */
static int chart_window_lines(vb_report_set *rs, const char *name, const char *title, const char *column,
                              const char *ylabel, const char *yrange, vb_error *err) {
    char sql[640], qb[300];
    series_set *ss = calloc(1, sizeof *ss);
    snprintf(sql, sizeof sql, "SELECT " MIXED_SERIES ", window_index, %s FROM v_mixed ORDER BY 1, 2", column);
    if (collect(rs, "v_mixed", sql, ss, err)) return free(ss), VB_ERROR;
    vb_chart *c = chart_new(rs, name, title, "v_mixed");
    vb_chart_cmd(c, "set xlabel 'window (the last two of each line: at rest, then after the maintenance)'");
    vb_chart_cmd(c, "set ylabel '%s'\nset yrange [%s]\nset xtics 1", ylabel, yrange);
    for (size_t i = 0; i < ss->n; i++) {
        int b = vb_chart_block(c);
        for (size_t j = 0; j < ss->s[i].n; j++) vb_chart_row(c, "%g %.9g", ss->s[i].p[j].x, ss->s[i].p[j].med);
        if (!ss->s[i].n) vb_chart_row(c, "NaN NaN");
        vb_chart_plot(c, "data index %d using 1:2 with linespoints pt 7 lw 2 lc %zu title '%s'", b, i + 1,
                      q(ss->s[i].name, qb, sizeof qb));
    }
    return draw_series(rs, c, ss, err);
}

static int charts_mixed(vb_report_set *rs, vb_error *err) {
    static const char *const op_titles[3] = {"update p99 (ms)", "delete p99 (ms)", "insert p99 (ms)"};
    if (chart_window_lines(rs, "mixed-recall", "Mixed: recall against the write log's rows, per window", "recall",
                           "recall@k", "0:1.05", err) ||
        chart_window_lines(rs, "mixed-ghosts", "Mixed: ghost answers (deleted rows returned) per window",
                           "ghost_answers", "answers naming a deleted row", "0:*", err) ||
        chart_window_lines(rs, "mixed-qps", "Mixed: search QPS per window while rows are written", "qps",
                           "queries per second", "0:*", err) ||
        chart_window_lines(rs, "mixed-p99", "Mixed: search p99 latency per window", "p99_ms", "p99 (ms)", "0:*", err))
        return VB_ERROR;
    /* each write operation's worst p99 over the item's write windows */
    return chart_bars(rs, "mixed-ops", "Mixed: latency of the writes, per operation", "v_mixed",
                      "SELECT " MIXED_SERIES ", 0, MAX(update_p99_ms), MAX(delete_p99_ms), MAX(insert_p99_ms) "
                      "FROM v_mixed WHERE phase = 'write' GROUP BY item_key ORDER BY 1",
                      op_titles, "milliseconds (the worst write window)", NULL, err);
}

/* ---- 7c. capacity ---------------------------------------------------------------------------------------------- */
/* The hockey stick, one chart per configuration: p50, p99 and p99.9 (from the intended start) of every window of the
 * last attempt's search against its offered rate, the p99 targets as dashed lines, each found rate as a dotted
 * vertical line, and the windows the client could not offer as open red points (they are not the engine's). */
static int charts_capacity(vb_report_set *rs, vb_error *err) {
    series_set *ss = calloc(1, sizeof *ss), *found = calloc(1, sizeof *found), *lim = calloc(1, sizeof *lim);
    /* the last attempt of each item only: an earlier attempt's windows stay in the table, not on the curve */
    static const char last[] = "attempt = (SELECT MAX(w2.attempt) FROM capacity_window AS w2 "
                               "WHERE w2.item_key = v_capacity_windows.item_key)";
    char sql[700];
    snprintf(sql, sizeof sql, "SELECT {label}, offered_rate, p99_ms, p50_ms, p999_ms FROM v_capacity_windows "
                              "WHERE %s AND client_limited = 0 ORDER BY 1, 2", last);
    int rc = collect(rs, "v_capacity_windows", sql, ss, err);
    snprintf(sql, sizeof sql, "SELECT {label}, offered_rate, p99_ms FROM v_capacity_windows "
                              "WHERE %s AND client_limited <> 0 ORDER BY 1, 2", last);
    if (!rc) rc = collect(rs, "v_capacity_windows", sql, lim, err);
    /* x: the p99 target, y: the rate found (NULL when none: the target line is still drawn) */
    if (!rc) rc = collect(rs, "v_capacity", "SELECT {label}, p99_target_ms, COALESCE(IIF(status = 'found', rate, NULL), "
                                            "-1) FROM v_capacity ORDER BY 1, 2", found, err);
    for (size_t i = 0; !rc && i < ss->n; i++) {
        series *s = &ss->s[i];
        char name[64], title[400];
        snprintf(name, sizeof name, "capacity-%zu", i + 1);
        snprintf(title, sizeof title, "Capacity: %s, latency from the intended start against the offered rate", s->name);
        vb_chart *c = chart_new(rs, name, title, "v_capacity_windows");
        vb_chart_cmd(c, "set xlabel 'offered rate (queries/s)'\nset ylabel 'latency (ms, log scale)'\n"
                        "set logscale y\nset xrange [0:*]");
        int b = vb_chart_block(c);
        for (size_t j = 0; j < s->n; j++)
            vb_chart_row(c, "%.9g %.9g %.9g %.9g %.9g %.9g", s->p[j].x, s->p[j].aux, s->p[j].med, s->p[j].lo,
                         s->p[j].hi, s->p[j].aux2);
        vb_chart_plot(c, "data index %d using 1:2 with linespoints pt 6 lw 1 lc 3 title 'p50'", b);
        vb_chart_plot(c, "data index %d using 1:3:4:5 with yerrorlines pt 7 lw 2 lc 1 title 'p99 (median, min-max)'", b);
        vb_chart_plot(c, "data index %d using 1:6 with linespoints pt 4 lw 1 lc 2 title 'p99.9'", b);
        series *f = NULL;
        for (size_t k = 0; k < found->n; k++)
            if (strcmp(found->s[k].name, s->name) == 0) f = &found->s[k];
        int obj = 1;
        for (size_t k = 0; f && k < f->n; k++) {
            double target = f->p[k].x, rate = f->p[k].med;
            vb_chart_plot(c, "%.9g with lines dt %zu lw 1.5 lc rgb '#555555' title 'p99 target %g ms'", target, k + 2,
                          target);
            if (rate > 0) {
                vb_chart_cmd(c, "set arrow %d from first %.9g, graph 0 to first %.9g, graph 1 nohead dt 3 lw 1.5 "
                                "lc rgb '#276b2a'", obj, rate, rate);
                vb_chart_cmd(c, "set label %d '%.0f/s at p99 <= %g ms' at first %.9g, graph %.2f left offset 0.5,0 "
                                "tc rgb '#276b2a'", obj, rate, target, rate, 0.95 - 0.07 * (double)k);
                obj++;
            }
        }
        series *l = NULL;
        for (size_t k = 0; k < lim->n; k++)
            if (strcmp(lim->s[k].name, s->name) == 0) l = &lim->s[k];
        if (l && l->n) {
            int r = vb_chart_block(c);
            for (size_t j = 0; j < l->n; j++) vb_chart_row(c, "%.9g %.9g", l->p[j].x, l->p[j].med);
            vb_chart_plot(c, "data index %d using 1:2 with points pt 6 ps 2 lw 2 lc rgb '#b00000' "
                             "title 'the client could not offer it'", r);
        }
        rc = draw(rs, c, err);
    }
    series_free(ss), series_free(found), series_free(lim);
    free(ss), free(found), free(lim);
    return rc ? VB_ERROR : VB_OK;
}

/* ---- 8. server memory over time, phases shaded ------------------------------------------------------------ */
static int charts_server(vb_report_set *rs, vb_error *err) {
    static const char *const shade[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2"};
    static const char *const phases[] = {"build", "recall_sweep", "concurrency", "filtered", "churn", "cold_start",
                                         NULL};
    for (size_t r = 0; r < rs->n; r++) {
        sqlite3 *db = rs->runs[r].db;
        sqlite3_stmt *eng;
        if (sqlite3_prepare_v2(db, "SELECT DISTINCT engine FROM server_sample ORDER BY engine", -1, &eng, NULL) != SQLITE_OK)
            continue;
        while (sqlite3_step(eng) == SQLITE_ROW) {
            const char *e = (const char *)sqlite3_column_text(eng, 0);
            char name[200], title[400], series_name[300], qb[300];
            snprintf(name, sizeof name, "server-memory-%s%s%s", rs->n > 1 ? rs->runs[r].name : "", rs->n > 1 ? "-" : "", e);
            for (char *p = name; *p; p++)
                if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') && !(*p >= '0' && *p <= '9')) *p = '-';
            vb_report_series(rs, r, e, series_name, sizeof series_name);
            snprintf(title, sizeof title, "Server memory over time: %s (phases shaded)", series_name);
            vb_chart *c = chart_new(rs, name, title, "server_sample");
            vb_chart_cmd(c, "set xlabel 'seconds since the server started'\nset ylabel 'MiB'\nset yrange [0:*]");
            sqlite3_stmt *st;
            double t0 = 0;
            if (sqlite3_prepare_v2(db, "SELECT MIN(t) FROM server_sample WHERE engine = ?1", -1, &st, NULL) == SQLITE_OK) {
                sqlite3_bind_text(st, 1, e, -1, SQLITE_TRANSIENT);
                if (sqlite3_step(st) == SQLITE_ROW) t0 = sqlite3_column_double(st, 0);
                sqlite3_finalize(st);
            }
            int obj = 1;
            if (sqlite3_prepare_v2(db, "SELECT p.phase, MIN(s.t), MAX(s.t) FROM server_sample AS s JOIN plan AS p "
                                       "ON p.key = s.item_key WHERE s.engine = ?1 GROUP BY s.item_key ORDER BY 2",
                                   -1, &st, NULL) == SQLITE_OK) {
                sqlite3_bind_text(st, 1, e, -1, SQLITE_TRANSIENT);
                while (sqlite3_step(st) == SQLITE_ROW) {
                    const char *ph = (const char *)sqlite3_column_text(st, 0);
                    size_t k = 0;
                    while (phases[k] && strcmp(phases[k], ph) != 0) k++;
                    vb_chart_cmd(c, "set object %d rect from first %.3f, graph 0 to first %.3f, graph 1 fc rgb '%s' "
                                    "fs transparent solid 0.15 noborder behind", obj++,
                                 sqlite3_column_double(st, 1) - t0, sqlite3_column_double(st, 2) - t0, shade[k % 6]);
                }
                sqlite3_finalize(st);
            }
            int b = vb_chart_block(c);
            if (sqlite3_prepare_v2(db, "SELECT t, cgroup_bytes / 1048576.0, rss_bytes / 1048576.0 FROM server_sample "
                                       "WHERE engine = ?1 ORDER BY t", -1, &st, NULL) == SQLITE_OK) {
                sqlite3_bind_text(st, 1, e, -1, SQLITE_TRANSIENT);
                while (sqlite3_step(st) == SQLITE_ROW)
                    vb_chart_row(c, "%.3f %.6g %.6g", sqlite3_column_double(st, 0) - t0, sqlite3_column_double(st, 1),
                                 sqlite3_column_double(st, 2));
                sqlite3_finalize(st);
            }
            vb_chart_plot(c, "data index %d using 1:2 with lines lw 2 lc 1 title 'cgroup memory (with page cache)'", b);
            vb_chart_plot(c, "data index %d using 1:3 with lines lw 2 lc 2 title 'RSS'", b);
            /* the shading's legend: one invisible sample per phase colour */
            for (size_t k = 0; phases[k]; k++)
                vb_chart_plot(c, "NaN with boxes fs transparent solid 0.3 lc rgb '%s' title '%s'", shade[k],
                              q(phases[k], qb, sizeof qb));
            if (draw(rs, c, err)) {
                sqlite3_finalize(eng);
                return VB_ERROR;
            }
        }
        sqlite3_finalize(eng);
    }
    return VB_OK;
}

/* ---- topology: QPS and recall against the number of nodes (issue 39) --------------------------------------------- */
/* A line per engine entry and topology kind (shards, replicas: the single server is the first point of each) and per
 * client count (QPS, the closed-loop concurrency points) or ef_search (recall, the one-client sweep), against the
 * nodes the configuration took: the Doris seed's single node against three, for our engines. */
static int chart_topology(vb_report_set *rs, const char *name, const char *title, const char *series, const char *y,
                          const char *where, const char *ylabel, const char *yrange, int whiskers, vb_error *err) {
    char sql[1024], qb[300];
    snprintf(sql, sizeof sql, "SELECT p.entry || ' ' || k.kind || ', ' || %s || IIF((SELECT COUNT(DISTINCT dataset) FROM "
             "v_topology_points) > 1, ' on ' || p.dataset, ''), p.nodes, %s FROM v_topology_points AS p "
             "JOIN (SELECT DISTINCT entry, kind FROM v_topology WHERE kind <> 'single') AS k ON k.entry = p.entry "
             "AND p.kind IN (k.kind, 'single') WHERE %s ORDER BY 1, 2", series, y, where);
    series_set *ss = calloc(1, sizeof *ss);
    if (collect(rs, "v_topology_points", sql, ss, err)) return free(ss), VB_ERROR;
    vb_chart *c = chart_new(rs, name, title, "v_topology_points");
    vb_chart_cmd(c, "set xlabel 'nodes (servers the configuration took)'\nset xtics 1\nset ylabel '%s'\n"
                    "set yrange [%s]\nset offsets 0.3, 0.3, 0, 0", ylabel, yrange);
    for (size_t i = 0; i < ss->n; i++) {
        int b = vb_chart_block(c);
        for (size_t j = 0; j < ss->s[i].n; j++)
            vb_chart_row(c, "%g %.9g %.9g %.9g %.9g %.9g", ss->s[i].p[j].x, ss->s[i].p[j].med, ss->s[i].p[j].lo,
                         ss->s[i].p[j].hi, ss->s[i].p[j].aux, ss->s[i].p[j].aux2);
        /* y's median over its repeats with their range as whiskers (y is "MEDIAN, MIN, MAX"), or the line alone */
        vb_chart_plot(c, "data index %d using 1:2%s with %s pt 7 lw 2 lc %zu title '%s'", b, whiskers ? ":5:6" : "",
                      whiskers ? "yerrorlines" : "linespoints", i + 1, q(ss->s[i].name, qb, sizeof qb));
    }
    return draw_series(rs, c, ss, err);
}

static int charts_topology(vb_report_set *rs, vb_error *err) {
    if (chart_topology(rs, "topology-qps", "Topology: QPS against the number of nodes (closed loop)",
                       "p.clients || ' client' || IIF(p.clients = 1, '', 's')", "p.qps, p.qps_min, p.qps_max",
                       "p.phase = 'concurrency'", "queries per second (median, min-max over the repeats)", "0:*", 1, err))
        return VB_ERROR;
    return chart_topology(rs, "topology-recall", "Topology: recall against the number of nodes (one client)",
                          "'ef_search ' || p.ef_search", "p.recall", "p.phase = 'recall_sweep' AND p.clients = 1",
                          "recall@k", "*:1.0", 0, err);
}

int vb_report_charts(vb_report_set *rs, const char *section, size_t *first, vb_error *err) {
    *first = rs->n_charts;
    if (strcmp(section, "recall") == 0) {
        /* one chart (and one zoom) per client count of the sweep */
        long clients[64];
        size_t nc = 0;
        for (size_t r = 0; r < rs->n; r++) {
            sqlite3_stmt *st;
            if (sqlite3_prepare_v2(rs->runs[r].db, "SELECT DISTINCT clients FROM sweep_result ORDER BY 1", -1, &st,
                                   NULL) != SQLITE_OK)
                continue;
            while (sqlite3_step(st) == SQLITE_ROW && nc < 64) {
                long v = sqlite3_column_int64(st, 0);
                size_t k = 0;
                while (k < nc && clients[k] != v) k++;
                if (k == nc) clients[nc++] = v;
            }
            sqlite3_finalize(st);
        }
        for (size_t i = 0; i < nc; i++)
            if (chart_recall_qps(rs, clients[i], nc > 1, 0, err) || chart_recall_qps(rs, clients[i], nc > 1, 1, err))
                return VB_ERROR;
        if (chart_recall_targets(rs, err) || chart_recall_distribution(rs, err)) return VB_ERROR;
        return chart_latency(rs, err);
    }
    if (strcmp(section, "build") == 0) return charts_build(rs, err);
    if (strcmp(section, "concurrency") == 0) return charts_concurrency(rs, err);
    if (strcmp(section, "filtered") == 0) return charts_filtered(rs, err);
    if (strcmp(section, "timegoes") == 0) return charts_timegoes(rs, err);
    if (strcmp(section, "cold_start") == 0) return charts_cold_start(rs, err);
    if (strcmp(section, "churn") == 0) return charts_churn(rs, err);
    if (strcmp(section, "streaming") == 0) return charts_streaming(rs, err);
    if (strcmp(section, "capacity") == 0) return charts_capacity(rs, err);
    if (strcmp(section, "mixed") == 0) return charts_mixed(rs, err);
    if (strcmp(section, "server") == 0) return charts_server(rs, err);
    if (strcmp(section, "topology") == 0) return charts_topology(rs, err);
    return vb_error_set(err, "report", 1, "no chart section named %s", section);
}
