/* The report document (report_html.h): every section written at once as HTML and as Markdown by a small writer
 * that knows both, so the two files never disagree. Facts come from SQL over each run's views; charts from
 * report_charts.c. */
#include "report/report_html.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <jansson.h>

#include "report/grid.h"
#include "report/show.h"
#include "report/report_runs.h"
#include "report/topology.h"
#include "util/versions.h"
#include "util/fs.h"

typedef struct doc {
    FILE *html, *md;
    vb_report_set *rs;
} doc;

static void html_esc(FILE *f, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* Markdown table cells: pipes escaped, newlines folded. */
static void md_cell(FILE *f, const char *s) {
    for (; s && *s; s++) {
        if (*s == '|') fputs("\\|", f);
        else if (*s == '\n') fputc(' ', f);
        else fputc(*s, f);
    }
}

static void h2(doc *d, const char *id, const char *title) {
    fprintf(d->html, "<section id=\"%s\"><h2>", id);
    html_esc(d->html, title);
    fputs("</h2>\n", d->html);
    fprintf(d->md, "\n## %s\n\n", title);
}

static void end_section(doc *d) { fputs("</section>\n", d->html); }

static void h3(doc *d, const char *title) {
    fputs("<h3>", d->html);
    html_esc(d->html, title);
    fputs("</h3>\n", d->html);
    fprintf(d->md, "\n### %s\n\n", title);
}

static void para(doc *d, const char *cls, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void para(doc *d, const char *cls, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    if (!s) return;
    fprintf(d->html, "<p%s%s%s>", cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
    html_esc(d->html, s);
    fputs("</p>\n", d->html);
    fprintf(d->md, "%s%s\n\n", cls && strcmp(cls, "warn") == 0 ? "> **Caution:** " : "", s);
    free(s);
}

static void pre(doc *d, const char *text) {
    fputs("<pre>", d->html);
    html_esc(d->html, text);
    fputs("</pre>\n", d->html);
    fprintf(d->md, "```\n%s\n```\n\n", text);
}

typedef struct html_part_arg {
    doc *d;
    const vb_grid *g;
} html_part_arg;

/* One part of a table (the columns mask marks): its header and every row, in HTML and Markdown. */
static void html_part(const unsigned char *mask, void *arg) {
    html_part_arg *a = arg;
    doc *d = a->d;
    const vb_grid *g = a->g;
    fputs("<div class=\"scroll\"><table>\n<tr>", d->html);
    fputs("|", d->md);
    int cols = 0;
    for (int i = 0; i < g->cols; i++) {
        if (!mask[i]) continue;
        cols++;
        fputs("<th>", d->html);
        html_esc(d->html, g->name[i]);
        fputs("</th>", d->html);
        fprintf(d->md, " %s |", g->name[i]);
    }
    fputs("</tr>\n", d->html);
    fputs("\n|", d->md);
    for (int i = 0; i < cols; i++) fputs("---|", d->md);
    fputc('\n', d->md);
    for (int r = 0; r < g->rows; r++) {
        fputs("<tr>", d->html);
        fputs("|", d->md);
        for (int i = 0; i < g->cols; i++) {
            if (!mask[i]) continue;
            const char *cell = vb_grid_at(g, r, i);
            /* Numbers right-aligned; short texts kept on one line; prose (a text with spaces) over 40 characters
             * wraps between words (or anywhere, a long token without commas); a long name with commas (a
             * configuration's label) breaks after its commas first (a dataset's name over three lines, issue 36.15). */
            int num = g->num[(size_t)r * (size_t)g->cols + (size_t)i], len = (int)strlen(cell);
            int prose = !num && len > 40 && (strchr(cell, ' ') || !strchr(cell, ','));
            int label = !num && !prose && len > 24 && strchr(cell, ',');
            fputs(num ? "<td class=\"n\">" : prose ? "<td class=\"t\">" : label ? "<td class=\"l\">" : "<td>", d->html);
            if (label)
                for (const char *p = cell; *p; p++) {
                    char one[2] = {*p, 0};
                    html_esc(d->html, one);
                    if (*p == ',') fputs("<wbr>", d->html);
                }
            else
                html_esc(d->html, cell);
            fputs("</td>", d->html);
            fputc(' ', d->md);
            md_cell(d->md, cell);
            fputs(" |", d->md);
        }
        fputs("</tr>\n", d->html);
        fputc('\n', d->md);
    }
    fputs("</table></div>\n", d->html), fputc('\n', d->md);
}

/* A table from SQL ({label} expanded) over every run, with a leading run column when there are several. Returns
 * the rows written. As `vbench show` does (report/grid.h), the columns that carry nothing for these runs are named
 * in a note under the table instead of shown, and what every row shares is said once above it, so a table of four
 * series fits the page; the exports (`vbench export`) keep every column. */
static int table(doc *d, const char *from, const char *sql, vb_error *err) {
    vb_report_set *rs = d->rs;
    vb_grid g;
    int begun = 0;
    for (size_t r = 0; r < rs->n; r++) {
        char *q = vb_report_sql(rs->runs[r].db, from, sql);
        sqlite3_stmt *st;
        int rc = sqlite3_prepare_v2(rs->runs[r].db, q, -1, &st, NULL);
        free(q);
        if (rc != SQLITE_OK) {
            if (begun) vb_grid_free(&g);
            return vb_error_set(err, "report", 1, "%s: reading %s: %s (is this a vbench results database?)",
                                rs->runs[r].path, from, sqlite3_errmsg(rs->runs[r].db));
        }
        if (!begun && vb_grid_begin(&g, st, rs->n > 1 ? "run" : NULL) != 0) {
            sqlite3_finalize(st);
            vb_grid_free(&g);
            return vb_error_set(err, "report", 1, "out of memory reading %s", from);
        }
        begun = 1;
        rc = vb_grid_add_rows(&g, st, rs->runs[r].name);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) {
            vb_grid_free(&g);
            return vb_error_set(err, "report", 1, "%s: reading %s: %s", rs->runs[r].path, from,
                                rc < 0 ? "out of memory" : sqlite3_errmsg(rs->runs[r].db));
        }
    }
    int rows = begun ? g.rows : 0;
    if (!rows) {
        if (begun) vb_grid_free(&g);
        para(d, "none", "No rows.");
        return 0;
    }
    char notes[1024], context[512];
    vb_grid_fit(&g, notes, sizeof notes, context, sizeof context);
    if (context[0]) para(d, "ctx", "%s", context);
    /* A table of many columns in parts that fit the page (1,100 pixels), each with the rows' key, as show does:
     * widths estimated from the longest cell at .85em (8.2 pixels a character, bold headers included, 14 of padding and
     * border), a cell that wraps counted at what it needs at the least. */
    int *w = calloc((size_t)g.cols + 1, sizeof *w);
    if (!w) {
        vb_grid_free(&g);
        return vb_error_set(err, "report", 1, "out of memory writing %s", from);
    }
    for (int c = 0; c < g.cols; c++) {
        int chars = (int)strlen(g.name[c]);
        for (int r = 0; r < g.rows; r++) {
            /* what the cell needs at the least, as html_part classes it: prose wraps between words (its column's
             * min-width is 12em: 22 characters), a label with commas breaks after them (its longest piece) */
            const char *cell = vb_grid_at(&g, r, c);
            int l = (int)strlen(cell), num = g.num[(size_t)r * (size_t)g.cols + (size_t)c];
            if (!num && l > 40 && (strchr(cell, ' ') || !strchr(cell, ','))) l = 22;
            else if (!num && l > 24 && strchr(cell, ',')) {
                int piece = 0, longest = 0;
                for (const char *p = cell; *p; p++) {
                    piece = *p == ',' ? 0 : piece + 1;
                    if (piece > longest) longest = piece;
                }
                l = longest + 1;
            }
            if (l > chars) chars = l;
        }
        w[c] = chars * 82 / 10 + 14;
    }
    html_part_arg pa = {d, &g};
    vb_grid_parts(&g, w, 0, 1060, html_part, &pa);
    free(w);
    if (notes[0]) para(d, "note", "Not shown: %s.", notes);
    vb_grid_free(&g);
    return rows;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int inline_png(FILE *out, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    unsigned char in[3 * 1024];
    size_t n;
    while ((n = fread(in, 1, sizeof in, f)) > 0) {
        for (size_t i = 0; i < n; i += 3) {
            unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
            fputc(b64[v >> 18 & 63], out), fputc(b64[v >> 12 & 63], out);
            fputc(i + 1 < n ? b64[v >> 6 & 63] : '=', out), fputc(i + 2 < n ? b64[v & 63] : '=', out);
        }
        if (n < sizeof in) break; /* a short read is the end (sizeof in is a multiple of 3) */
    }
    fclose(f);
    return 0;
}

/* The section's charts: figures with the PNG inlined (HTML) or linked beside (Markdown). */
static int figures(doc *d, const char *section, vb_error *err) {
    size_t first;
    if (vb_report_charts(d->rs, section, &first, err)) return VB_ERROR;
    for (size_t i = first; i < d->rs->n_charts; i++) {
        vb_chart *c = d->rs->charts[i];
        char png[PATH_MAX];
        snprintf(png, sizeof png, "%s/charts/%s.png", d->rs->dir, vb_chart_name(c));
        fprintf(d->html, "<figure id=\"chart-%s\"><img alt=\"", vb_chart_name(c));
        html_esc(d->html, vb_chart_title(c));
        fputs("\" src=\"data:image/png;base64,", d->html);
        if (inline_png(d->html, png) != 0)
            return vb_error_set(err, "report", errno, "cannot read the chart %s: %s", png, strerror(errno));
        fputs("\"><figcaption>", d->html);
        html_esc(d->html, vb_chart_title(c));
        fputs(" &mdash; ", d->html);
        html_esc(d->html, vb_chart_caption(c));
        fprintf(d->html, " (<a href=\"charts/%s.svg\">SVG</a>)</figcaption></figure>\n", vb_chart_name(c));
        fprintf(d->md, "![%s](charts/%s.svg)\n\n*%s — %s*\n\n", vb_chart_title(c), vb_chart_name(c), vb_chart_title(c),
                vb_chart_caption(c));
    }
    if (first == d->rs->n_charts) para(d, "none", "Nothing to draw: this phase has no results in these runs.");
    return VB_OK;
}

/* ---- capacity: one sentence per configuration and target ------------------------------------------------ */
/* What limited the engine at its found rate: its CPU when the unit's cores were busy at 0.9 of those it was given or
 * more, else the wait class its sessions spent most samples in (the wait profile), else unknown; an embedded engine
 * has no server to sample. */
static void capacity_limit(sqlite3_stmt *st, char *out, size_t len) {
    double busy = sqlite3_column_type(st, 8) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 8);
    int cores = sqlite3_column_int(st, 9);
    const char *wait = (const char *)sqlite3_column_text(st, 10);
    if (isnan(busy) || cores <= 0)
        snprintf(out, len, "no server CPU was sampled (an embedded engine: the client process serves the queries)");
    else if (busy >= 0.9 * cores)
        snprintf(out, len, "limited by its CPU: cores busy %.2f of %d", busy, cores);
    else if (wait)
        snprintf(out, len, "not by its CPU (cores busy %.2f of %d): its sessions waited most on %s", busy, cores, wait);
    else
        snprintf(out, len, "not by its CPU (cores busy %.2f of %d)", busy, cores);
}

static int capacity(doc *d, vb_error *err) {
    vb_report_set *rs = d->rs;
    para(d, NULL, "The highest offered rate (open loop: Poisson arrivals, latency from the intended start, so queueing "
                  "is counted) at which p99 stays within each target, at the smallest ef_search whose recall meets the "
                  "recall target; a rate meets the objective when p99 <= the target, the achieved rate is at least 0.99 "
                  "of the offered and no query failed. The search grows the rate geometrically until the objective "
                  "fails, bisects to the stated precision, measures the found rate again (confirmed: how many of those "
                  "windows met it) and once at 1.2 x (the knee: it must fail). docs/metrics.md, Capacity.");
    int any = 0;
    for (size_t r = 0; r < rs->n; r++) {
        sqlite3 *db = rs->runs[r].db;
        char *q = vb_report_sql(db, "v_capacity", "SELECT {label}, status, rate, p99_target_ms, recall_target, ef_search, "
                                "recall, p99_ms, server_cores_busy, server_cores, top_wait_class, repeats_met, repeats, "
                                "knee_rate, knee_p99_ms, knee_failed, reason FROM v_capacity");
        sqlite3_stmt *st;
        int rc = sqlite3_prepare_v2(db, q, -1, &st, NULL);
        free(q);
        if (rc != SQLITE_OK) return vb_error_set(err, "report", 1, "%s: %s", rs->runs[r].path, sqlite3_errmsg(db));
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (!any++) fputs("<ul class=\"summary\">\n", d->html);
            char name[300], text[1400], limit[200];
            vb_report_series(rs, r, (const char *)sqlite3_column_text(st, 0), name, sizeof name);
            const char *status = (const char *)sqlite3_column_text(st, 1), *reason = (const char *)sqlite3_column_text(st, 16);
            double target = sqlite3_column_double(st, 3), recall_target = sqlite3_column_double(st, 4);
            if (strcmp(status, "found") == 0) {
                capacity_limit(st, limit, sizeof limit);
                size_t o = (size_t)snprintf(text, sizeof text, "%s serves %.0f queries/s at p99 <= %g ms and recall >= %g "
                                            "(ef_search %d: recall %.4f, p99 %.2f ms) on this host, %s; confirmed in %d of "
                                            "%d windows", name, sqlite3_column_double(st, 2), target, recall_target,
                                            sqlite3_column_int(st, 5), sqlite3_column_double(st, 6),
                                            sqlite3_column_double(st, 7), limit, sqlite3_column_int(st, 11),
                                            sqlite3_column_int(st, 12));
                if (sqlite3_column_type(st, 13) != SQLITE_NULL)
                    snprintf(text + o, sizeof text - o, "; at 1.2 x (%.0f/s) p99 was %.2f ms: %s.",
                             sqlite3_column_double(st, 13), sqlite3_column_double(st, 14),
                             sqlite3_column_int(st, 15) ? "the objective failed, the knee is shown" :
                                                          "the objective still held (the knee is not shown)");
                else snprintf(text + o, sizeof text - o, ".");
            } else {
                snprintf(text, sizeof text, "%s: no capacity at p99 <= %g ms and recall >= %g (%s)%s%s.", name, target,
                         recall_target, status, reason ? ": " : "", reason ? reason : "");
            }
            fputs("<li>", d->html);
            html_esc(d->html, text);
            fputs("</li>\n", d->html);
            fprintf(d->md, "- %s\n", text);
        }
        sqlite3_finalize(st);
    }
    if (any) fputs("</ul>\n", d->html), fputs("\n", d->md);
    if (figures(d, "capacity", err)) return VB_ERROR;
    if (table(d, "v_capacity", "SELECT {label} AS series, dataset, recall_target, p99_target_ms, status, rate, ef_search, "
              "recall, p50_ms, p99_ms, p999_ms, printf('%d of %d', repeats_met, repeats) AS confirmed, knee_rate, "
              "knee_p99_ms, server_cores_busy, server_cores, top_wait_class, reason FROM v_capacity", err) < 0)
        return VB_ERROR;
    h3(d, "Every window of the search (the last attempt)");
    return table(d, "v_capacity_windows", "SELECT {label} AS series, dataset, step, stage, targets, met, offered_rate, "
                 "achieved_rate, p50_ms, p99_ms, p999_ms, errors, late_starts, server_cores_busy, client_limited "
                 "FROM v_capacity_windows WHERE attempt = (SELECT MAX(w2.attempt) FROM capacity_window AS w2 "
                 "WHERE w2.item_key = v_capacity_windows.item_key)", err) < 0 ? VB_ERROR : VB_OK;
}

/* ---- summary: one paragraph of computed facts per series ------------------------------------------------- */
static int step_double(sqlite3 *db, const char *table, const char *sql, const char *label, double *out, int n) {
    char *q = vb_report_sql(db, table, sql);
    sqlite3_stmt *st;
    int got = 0;
    for (int i = 0; i < n; i++) out[i] = NAN;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, label, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW) {
            got = 1;
            for (int i = 0; i < n && i < sqlite3_column_count(st); i++)
                if (sqlite3_column_type(st, i) != SQLITE_NULL) out[i] = sqlite3_column_double(st, i);
        }
        sqlite3_finalize(st);
    }
    free(q);
    return got;
}

static void fmt_qps(double v, char *out, size_t len) {
    if (isnan(v)) snprintf(out, len, "not reached");
    else snprintf(out, len, "%.0f QPS", v);
}

/* The median QPS of the closed-loop windows at CLIENTS (SQLite has no median: sorted, middle one or two). */
static double median_qps(sqlite3 *db, const char *label, double clients) {
    double v[3];
    char sql[600];
    snprintf(sql, sizeof sql,
             "WITH w AS (SELECT qps, ROW_NUMBER() OVER (ORDER BY qps) AS i, COUNT(*) OVER () AS n FROM v_concurrency "
             "WHERE {label} = ?1 AND target_rate IS NULL AND clients = %.0f) "
             "SELECT AVG(qps), MAX(n) FROM w WHERE i IN ((n + 1) / 2, (n + 2) / 2)", clients);
    step_double(db, "v_concurrency", sql, label, v, 2);
    return v[0];
}

static int summary(doc *d, vb_error *err) {
    (void)err;
    vb_report_set *rs = d->rs;
    fputs("<ul class=\"summary\">\n", d->html);
    for (size_t r = 0; r < rs->n; r++) {
        sqlite3 *db = rs->runs[r].db;
        char *q = vb_report_sql(db, "plan", "SELECT {label} FROM plan GROUP BY 1 ORDER BY MIN(seq)");
        sqlite3_stmt *st;
        int rc = sqlite3_prepare_v2(db, q, -1, &st, NULL);
        free(q);
        if (rc != SQLITE_OK) return vb_error_set(err, "report", 1, "%s: %s", rs->runs[r].path, sqlite3_errmsg(db));
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *label = (const char *)sqlite3_column_text(st, 0);
            char name[300], a[64], b[64], c[64], text[2048];
            size_t o = 0;
            vb_report_series(rs, r, label, name, sizeof name);
            double v[6];
            if (step_double(db, "sweep_result", "SELECT MAX(CASE WHEN recall >= 0.90 THEN qps END), "
                            "MAX(CASE WHEN recall >= 0.95 THEN qps END), MAX(CASE WHEN recall >= 0.99 THEN qps END), "
                            "COUNT(*) FROM sweep_result WHERE {label} = ?1 AND clients = 1", label, v, 4) && v[3] > 0) {
                fmt_qps(v[0], a, sizeof a), fmt_qps(v[1], b, sizeof b), fmt_qps(v[2], c, sizeof c);
                o += (size_t)snprintf(text + o, sizeof text - o, "best at recall >= 0.90: %s, >= 0.95: %s, >= 0.99: "
                                      "%s (1 client). ", a, b, c);
            }
            /* the distribution behind the means (docs/metrics.md "Recall distribution"): at the lowest ef_search, and
             * how far up the sweep some query still gets nothing right */
            if (step_double(db, "v_recall_sweep", "SELECT ef_search, recall_p10, zero_share, (SELECT MAX(ef_search) FROM "
                            "v_recall_sweep WHERE {label} = ?1 AND clients = 1 AND zero_share > 0) FROM v_recall_sweep "
                            "WHERE {label} = ?1 AND clients = 1 AND recall_p10 IS NOT NULL ORDER BY ef_search LIMIT 1",
                            label, v, 4) && !isnan(v[0])) {
                o += (size_t)snprintf(text + o, sizeof text - o, "Per-query recall at ef_search %.0f: p10 %.4f, %.1f %% "
                                      "of the queries at recall 0", v[0], v[1], 100 * v[2]);
                if (isnan(v[3])) o += (size_t)snprintf(text + o, sizeof text - o, ". ");
                else o += (size_t)snprintf(text + o, sizeof text - o, "; a query at 0 up to ef_search %.0f. ", v[3]);
            }
            /* several builds (build_repeats): their mean, said so */
            if (step_double(db, "build_result", "SELECT AVG(load_s), AVG(build_s), AVG(index_bytes), MAX(rows), "
                            "COUNT(*) FROM build_result WHERE {label} = ?1", label, v, 5) && !isnan(v[0])) {
                o += (size_t)snprintf(text + o, sizeof text - o, "Load %.2f s, index build %.2f s", v[0], v[1]);
                if (!isnan(v[2])) o += (size_t)snprintf(text + o, sizeof text - o, ", index %.1f MiB", v[2] / 1048576.0);
                o += (size_t)snprintf(text + o, sizeof text - o, " for %.0f rows", v[3]);
                if (v[4] > 1) o += (size_t)snprintf(text + o, sizeof text - o, " (the mean of %.0f builds)", v[4]);
                o += (size_t)snprintf(text + o, sizeof text - o, ". ");
            }
            if (step_double(db, "v_concurrency", "SELECT MAX(clients) FROM v_concurrency WHERE {label} = ?1 AND "
                            "target_rate IS NULL", label, v, 1) && !isnan(v[0]) && v[0] > 1) {
                double one = median_qps(db, label, 1), top = median_qps(db, label, v[0]);
                o += (size_t)snprintf(text + o, sizeof text - o, "Scaling 1 -> %.0f clients: %.0f -> %.0f QPS (x%.2f, "
                                      "medians of the repeats). ", v[0], one, top, top / one);
            }
            if (step_double(db, "v_filtered", "SELECT recall, qps, short_answers, selectivity FROM v_filtered WHERE "
                            "{label} = ?1 ORDER BY abs(selectivity - 0.01) LIMIT 1", label, v, 4) && !isnan(v[0]))
                o += (size_t)snprintf(text + o, sizeof text - o, "Filtered at %.3g %% of rows: recall %.4f at %.0f QPS%s. ",
                                      v[3] * 100, v[0], v[1], v[2] > 0 ? " (with short answers)" : "");
            if (step_double(db, "v_cold_start", "SELECT ratio_first, ratio_mean, warm_after, warm_after_s, queries "
                            "FROM v_cold_start WHERE {label} = ?1 AND status = 'measured'", label, v, 5) && !isnan(v[0])) {
                o += (size_t)snprintf(text + o, sizeof text - o, "Cold start: the first query x%.1f the warm median, "
                                      "the first %.0f queries' mean x%.2f the warm mean, ", v[0], v[4], v[1]);
                if (isnan(v[2])) o += (size_t)snprintf(text + o, sizeof text - o, "not warm within them. ");
                else o += (size_t)snprintf(text + o, sizeof text - o, "warm again after %.0f queries (%.3f s). ", v[2], v[3]);
            }
            if (step_double(db, "v_churn", "SELECT qps_before, qps_after, recall_before, recall_after, completed "
                            "FROM v_churn WHERE {label} = ?1", label, v, 5) && !isnan(v[0]))
                o += (size_t)snprintf(text + o, sizeof text - o, "Churn kept %.0f %% of its QPS, recall %.4f -> %.4f%s.",
                                      100 * v[1] / v[0], v[2], v[3], v[4] == 0 ? " (the reinsert did not finish)" : "");
            if (!o) snprintf(text, sizeof text, "no results.");
            fputs("<li><b>", d->html);
            html_esc(d->html, name);
            fputs("</b>: ", d->html);
            html_esc(d->html, text);
            fputs("</li>\n", d->html);
            fprintf(d->md, "- **%s**: %s\n", name, text);
        }
        sqlite3_finalize(st);
    }
    fputs("</ul>\n", d->html);
    fputc('\n', d->md);
    return VB_OK;
}

/* ---- validity: grouped by check, each finding linked to the chart of its phase --------------------------- */
static const char *chart_of_phase(const char *phase) {
    if (!phase) return NULL;
    if (strcmp(phase, "recall_sweep") == 0) return "chart-recall-qps";
    if (strcmp(phase, "concurrency") == 0) return "chart-concurrency-qps";
    if (strcmp(phase, "filtered") == 0) return "chart-filtered-recall";
    if (strcmp(phase, "churn") == 0) return "chart-churn-qps";
    if (strcmp(phase, "mixed") == 0) return "chart-mixed-recall";
    if (strcmp(phase, "cold_start") == 0) return "cold_start";   /* the section: one chart per engine */
    if (strcmp(phase, "build") == 0) return "chart-build-time";
    return NULL;
}

static int validity(doc *d, vb_error *err) {
    vb_report_set *rs = d->rs;
    int total = 0;
    char last[128] = "";
    for (size_t r = 0; r < rs->n; r++) {
        sqlite3 *db = rs->runs[r].db;
        char *q = vb_report_sql(db, "v_validity", "SELECT v.\"check\", v.series, v.detail, v.item, p.phase "
                                "FROM (SELECT {label} AS series, * FROM v_validity) AS v "
                                "LEFT JOIN plan AS p ON p.key = v.item ORDER BY 1");
        sqlite3_stmt *st;
        int rc = sqlite3_prepare_v2(db, q, -1, &st, NULL);
        free(q);
        if (rc != SQLITE_OK)
            return vb_error_set(err, "report", 1, "%s: reading v_validity: %s", rs->runs[r].path, sqlite3_errmsg(db));
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *check = (const char *)sqlite3_column_text(st, 0);
            if (strcmp(check, last) != 0) {
                if (total) fputs("</ul>\n", d->html);
                h3(d, check);
                fputs("<ul>\n", d->html);
                snprintf(last, sizeof last, "%s", check);
            }
            total++;
            char name[300];
            vb_report_series(rs, r, (const char *)sqlite3_column_text(st, 1), name, sizeof name);
            const char *item = (const char *)sqlite3_column_text(st, 3);
            const char *target = chart_of_phase((const char *)sqlite3_column_text(st, 4));
            fputs("<li><b>", d->html);
            html_esc(d->html, name);
            fputs("</b>: ", d->html);
            html_esc(d->html, (const char *)sqlite3_column_text(st, 2));
            if (item) {
                fputs(target ? " &mdash; point <a href=\"#" : " &mdash; point ", d->html);
                if (target) fprintf(d->html, "%s\">", target);
                html_esc(d->html, item);
                if (target) fputs("</a>", d->html);
            }
            fputs("</li>\n", d->html);
            fprintf(d->md, "- **%s**: %s%s%s%s%s%s\n", name, sqlite3_column_text(st, 2), item ? " — point " : "",
                    item && target ? "[" : "", item ? item : "", item && target ? "](#" : "",
                    item && target ? target : "");
            if (item && target) fputs(")", d->md), fputc('\n', d->md);
        }
        sqlite3_finalize(st);
    }
    if (total) fputs("</ul>\n", d->html);
    else para(d, "ok", "No findings: every answer had k distinct rows, no query failed, no efficiency was refused, "
                       "no server came near its limits.");
    /* The check that the server ran what vbench sent, shown whether it agreed or not (a disagreement is also a
     * finding above): the engines whose servers count their commands (Redis: INFO commandstats). */
    h3(d, "Server counts");
    para(d, NULL, "Where the server counts the commands it runs, its own count around each result against what "
                  "vbench sent (queries, warm-up and the queries that straddled a window's edge).");
    int counted = table(d, "v_server_count",
                        "SELECT {label} AS series, phase, command, SUM(sent) AS sent, SUM(server) AS server, counted_as, "
                        "SUM(agrees) || ' of ' || COUNT(*) AS results_agreeing FROM v_server_count "
                        "GROUP BY 1, phase, command ORDER BY MIN(rowid)", err);
    if (counted < 0) return VB_ERROR;
    if (counted == 0) para(d, "none", "No engine of these runs reports its own command counts.");
    return VB_OK;
}

/* ---- known asymmetries, computed ------------------------------------------------------------------------- */
static int asymmetries(doc *d, vb_error *err) {
    h3(d, "When the index is built");
    para(d, NULL, "An index build under 5 %% of the load time is counted as built during the load (on insert); "
                  "otherwise after it. Load rates are not comparable between the two.");
    if (table(d, "build_result",
              "SELECT {label} AS series, printf('%.2f', load_s) AS load_s, printf('%.2f', build_s) AS build_s, "
              "CASE WHEN build_s < 0.05 * load_s THEN 'on insert (during the load)' ELSE 'after the load' END "
              "AS index_built FROM build_result ORDER BY 1", err) < 0)
        return VB_ERROR;
    h3(d, "Parameters one engine has and another lacks");
    if (table(d, "manifest",
              "WITH e AS (SELECT je.value ->> '$.name' AS engine, je.value -> '$.params' AS params FROM manifest AS m, "
              "json_each(m.value, '$.engines') AS je WHERE m.key = 'profile.resolved'), "
              "k AS (SELECT DISTINCT jp.key AS param FROM e, json_each(e.params) AS jp) "
              "SELECT e.engine, group_concat(CASE WHEN json_extract(e.params, '$.' || k.param) IS NOT NULL "
              "THEN k.param || '=' || json_extract(e.params, '$.' || k.param) END, ', ') AS has, "
              "group_concat(CASE WHEN json_extract(e.params, '$.' || k.param) IS NULL THEN k.param END, ', ') AS lacks "
              "FROM e, k GROUP BY e.engine HAVING lacks IS NOT NULL ORDER BY e.engine", err) < 0)
        return VB_ERROR;
    h3(d, "How the servers were built");
    para(d, NULL, "The servers come from Debian's binary packages, which are built for the x86-64 baseline: their "
                  "float32 distance loops use SSE2 unless the engine picks wider code at run time. The reference run "
                  "built its extensions with -march=x86-64-v3 (AVX2, FMA), so on a host with AVX2 or AVX-512 a "
                  "packaged build may understate what the same version does when built for that host; a SIMD "
                  "narrower than the host's is also a finding under Validity.");
    if (table(d, "server_log",
              "SELECT engine, server_version, source, image, suite, target_isa, kernel_isa, build_simd, host_simd "
              "FROM v_engine_provenance ORDER BY engine", err) < 0)
        return VB_ERROR;
    h3(d, "Durability");
    para(d, NULL, "Embedded engines keep their index in the client's memory and write nothing durably; a server's "
                  "durability settings, where its manifest records them, are listed beside it.");
    /* A configuration's server is its entry's ("pgvector[variant=halfvec]" runs on pgvector's: config/profile.h) */
    if (table(d, "plan",
              "SELECT {label} AS series, CASE WHEN p.entry IN (SELECT engine FROM server_log) THEN 'server' ELSE "
              "'embedded: in memory, nothing durable' END AS kind, "
              "(SELECT group_concat(substr(m.key, length('server.' || p.entry || '.') + 1) || '=' || m.value, ', ') "
              "FROM manifest AS m WHERE m.key LIKE 'server.' || p.entry || '.%' AND (m.key LIKE '%fsync%' OR "
              "m.key LIKE '%synchronous%' OR m.key LIKE '%flush_log%' OR m.key LIKE '%sync_binlog%' OR "
              "m.key LIKE '%doublewrite%' OR m.key LIKE '%wal_level%')) AS durability_settings "
              "FROM (SELECT *, IIF(instr(engine, '[') > 0, substr(engine, 1, instr(engine, '[') - 1), engine) AS entry "
              "FROM plan) AS p GROUP BY 1 ORDER BY MIN(seq)", err) < 0)
        return VB_ERROR;
    return VB_OK;
}


/* ---- the environment at a glance, the manifest in an appendix --------------------------------------------- */

/* vb_tidy(value): a manifest value as a reader wants it: a float with more digits than it means (a JSON
 * encoder's 2.3999999999999999) at 6 significant digits, JSON with its floats the same way; anything else as it
 * is. A SQL function on the report's own connections. */
static void tidy_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    const char *v = (const char *)sqlite3_value_text(argv[0]);
    if (!v) return sqlite3_result_null(ctx);
    char *end = NULL;
    double x = strtod(v, &end);
    if (end != v && *end == '\0' && strchr(v, '.')) {
        char buf[64];
        snprintf(buf, sizeof buf, "%.6g", x);
        return sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
    }
    if (v[0] == '{' || v[0] == '[') {
        json_t *j = json_loads(v, JSON_DECODE_ANY, NULL);
        char *t = j ? json_dumps(j, JSON_PRESERVE_ORDER | JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
        json_decref(j);
        if (t) {
            sqlite3_result_text(ctx, t, -1, SQLITE_TRANSIENT);
            free(t);
            return;
        }
    }
    sqlite3_result_text(ctx, v, -1, SQLITE_TRANSIENT);
}

/* The machine in one table (host; every client agent; every server as systemd confined it) and the engines in
 * another (version, origin, ISA, the settings that matter), as the reference post describes its machine in one
 * paragraph. Every value is from the manifest and the agent table; the appendix has all of it. */
static int environment(doc *d, vb_error *err) {
    para(d, NULL, "Where it ran: the host, the client and each server as confined (CPUs, memory limit and /dev/shm "
                  "as systemd applied them). The whole manifest is in the appendix at the end.");
    if (table(d, "manifest",
              "WITH m AS (SELECT key, value FROM manifest) "
              "SELECT 'host ' || COALESCE((SELECT value FROM m WHERE key = 'host.name'), '?') AS part, "
              "(SELECT value FROM m WHERE key = 'host.cpu_model') AS cpu, "
              "(SELECT value FROM m WHERE key = 'host.cores') || ' cores' AS cpus, "
              "printf('%.1f GiB', (SELECT value FROM m WHERE key = 'host.memory_bytes') / 1073741824.0) AS memory, "
              "'-' AS dev_shm, (SELECT value FROM m WHERE key = 'host.kernel') AS kernel "
              "UNION ALL "
              "SELECT 'client ' || a.id, CASE WHEN a.host = (SELECT value FROM m WHERE key = 'host.name') "
              "THEN (SELECT value FROM m WHERE key = 'host.cpu_model') ELSE 'host ' || a.host END, "
              "'CPUs ' || COALESCE(a.cpus, '?') || ' (' || a.cores || ')', "
              "printf('%.1f GiB', a.memory_bytes / 1073741824.0), '-', '-' "
              "FROM agent AS a WHERE a.roles LIKE '%client%' "
              "UNION ALL "
              "SELECT 'server ' || engine, "
              "(SELECT CASE WHEN a.host = (SELECT value FROM m WHERE key = 'host.name') "
              "THEN (SELECT value FROM m WHERE key = 'host.cpu_model') ELSE 'host ' || a.host END FROM agent AS a "
              "WHERE a.roles LIKE '%orchestrator%' ORDER BY a.id LIMIT 1), "
              "'CPUs ' || COALESCE(cpus, '?'), "
              "IIF(memory_max IS NULL, '-', printf('%.1f GiB limit', memory_max / 1073741824.0)), "
              "IIF(dev_shm_bytes IS NULL, '-', printf('%.2f GiB', dev_shm_bytes / 1073741824.0)), '-' "
              "FROM v_servers", err) < 0)
        return VB_ERROR;
    if (table(d, "manifest",
              "WITH m AS (SELECT key, value FROM manifest), "
              "e AS (SELECT je.value ->> '$.name' AS engine, je.value -> '$.params' AS params, je.key AS i "
              "FROM m, json_each(m.value, '$.engines') AS je WHERE m.key = 'profile.resolved') "
              "SELECT e.engine, COALESCE((SELECT value FROM m WHERE key = 'engine.' || e.engine || '.kind'), "
              "'server') AS kind, "
              "COALESCE(p.server_version, (SELECT value FROM m WHERE key = 'engine.' || e.engine || '.version'), '-') "
              "AS version, "
              "COALESCE(p.source || COALESCE(' (image ' || p.image || COALESCE(', ' || p.suite, '') || ')', ''), "
              "IIF((SELECT value FROM m WHERE key = 'engine.' || e.engine || '.kind') = 'embedded', "
              "'in the client process (vbench-agent)', NULL), '-') AS origin, "
              "COALESCE(p.kernel_isa || COALESCE(' (kernels ' || p.build_simd || '; host ' || p.host_simd || ')', ''), "
              "'-') AS isa, "
              "trim(COALESCE((SELECT group_concat(jp.key || '=' || jp.value, ', ') FROM json_each(e.params) AS jp), '') "
              "|| COALESCE('; server: ' || (SELECT group_concat(substr(key, length('server.' || e.server || "
              "'.recipe.parameter.') + 1) || '=' || value, ', ') FROM m WHERE key LIKE 'server.' || e.server || "
              "'.recipe.parameter.%'), ''), '; ') AS key_settings "
              "FROM (SELECT e.*, COALESCE(se.entry, e.engine) AS server FROM e "
              "LEFT JOIN v_series_entry AS se ON se.series = e.engine) AS e "
              "LEFT JOIN v_engine_provenance AS p ON p.engine = e.server ORDER BY e.i", err) < 0)
        return VB_ERROR;
    return VB_OK;
}

/* The appendix: every manifest key of every run (values tidied by vb_tidy), folded so it costs the reader one
 * line until opened. The Markdown gets the same <details> block, which GitHub and most renderers fold too. */
static int appendix(doc *d, vb_error *err) {
    fputs("<details><summary>The manifest: every key vbench recorded about the run (click to open)</summary>\n",
          d->html);
    fputs("<details>\n<summary>The manifest: every key vbench recorded about the run</summary>\n\n", d->md);
    int rc = table(d, "manifest", "SELECT key, vb_tidy(value) AS value FROM manifest ORDER BY key", err) < 0;
    if (!rc) rc = table(d, "agent", "SELECT id AS agent, host, roles, cores, cpus, memory_bytes, versions FROM agent "
                                    "ORDER BY id", err) < 0;
    fputs("</details>\n", d->html);
    fputs("\n</details>\n", d->md);
    return rc ? VB_ERROR : VB_OK;
}

static int reproduce(doc *d, vb_error *err) {
    vb_report_set *rs = d->rs;
    for (size_t r = 0; r < rs->n; r++) {
        sqlite3 *db = rs->runs[r].db;
        char title[300];
        snprintf(title, sizeof title, "Run %s (%.150s)", rs->runs[r].name, rs->runs[r].path);
        if (rs->n > 1) h3(d, title);
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, "SELECT (SELECT value FROM manifest WHERE key = 'command_line'), "
                                   "(SELECT value FROM manifest WHERE key = 'vbench.git_revision'), profile_source, "
                                   "profile_yaml, engines, "
                                   "(SELECT value FROM manifest WHERE key = 'profile.resolved') FROM campaign",
                               -1, &st, NULL) != SQLITE_OK)
            return vb_error_set(err, "report", 1, "%s: reading the campaign: %s", rs->runs[r].path, sqlite3_errmsg(db));
        if (sqlite3_step(st) == SQLITE_ROW) {
            const char *cmd = (const char *)sqlite3_column_text(st, 0);
            const char *rev = (const char *)sqlite3_column_text(st, 1);
            const char *src = (const char *)sqlite3_column_text(st, 2);
            const char *eng = (const char *)sqlite3_column_text(st, 4);
            para(d, NULL, "vbench revision %s. The command as it was run:", rev ? rev : "unknown");
            pre(d, cmd ? cmd : "(not recorded)");
            char again[1200];
            snprintf(again, sizeof again, "vbench run --profile %s%s%s   # with the profile below saved as that file",
                     src ? src : "PROFILE", eng ? " --engines " : "", eng ? eng : "");
            para(d, NULL, "To run it again (same profile, same engines):");
            pre(d, again);
            para(d, NULL, "The profile as run:");
            pre(d, (const char *)sqlite3_column_text(st, 3));
            para(d, NULL, "The resolved profile (every default filled in):");
            pre(d, sqlite3_column_text(st, 5) ? (const char *)sqlite3_column_text(st, 5) : "(not recorded)");
        }
        sqlite3_finalize(st);
    }
    para(d, NULL, "Versions:");
    return table(d, "manifest", "SELECT key, value FROM manifest WHERE key LIKE 'lib.%' OR key LIKE 'engine.%' OR "
                                "key LIKE 'vbench.%' OR key LIKE 'server.%.version' ORDER BY key", err) < 0
               ? VB_ERROR : VB_OK;
}

/* The CPU profile of the first window that stopped scaling (phases.concurrency.profile: perf), per configuration:
 * a sentence with its hottest functions and the table of its top 10; where there is none, what perf did (the
 * manifest's server.NAME.perf). */
static int cpu_profile(doc *d, vb_error *err) {
    sqlite3 *db = d->rs->runs[0].db;
    sqlite3_stmt *st;
    int profiles = 0;
    const char *sql = "SELECT engine, dataset, clients, efficiency, window_samples, group_concat(printf('%s %.0f %%', "
                      "function, 100 * share), ', ') FROM (SELECT * FROM v_server_profile WHERE rank <= 5 ORDER BY "
                      "engine, dataset, rank) GROUP BY engine, dataset";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return VB_OK;   /* an older file: no view */
    while (sqlite3_step(st) == SQLITE_ROW) {
        profiles++;
        para(d, "timegoes", "CPU profile of %s at %d clients on %s, the first window whose efficiency fell below 0.5 "
                            "(%.2f): %d samples of the server's cgroup (perf, 99 Hz); the hottest functions by self "
                            "samples: %s.", (const char *)sqlite3_column_text(st, 0), sqlite3_column_int(st, 2),
             (const char *)sqlite3_column_text(st, 1), sqlite3_column_double(st, 3), sqlite3_column_int(st, 4),
             (const char *)sqlite3_column_text(st, 5));
    }
    sqlite3_finalize(st);
    if (profiles && table(d, "v_server_profile", "SELECT {label} AS series, dataset, clients, rank, function, samples, "
                                                 "share FROM v_server_profile WHERE rank <= 10", err) < 0)
        return VB_ERROR;
    if (sqlite3_prepare_v2(db, "SELECT substr(key, 8, length(key) - 12), value FROM manifest WHERE key LIKE "
                               "'server.%.perf' AND value LIKE 'no CPU profile%' ORDER BY key", -1, &st, NULL) != SQLITE_OK)
        return VB_OK;
    int notes = 0;
    while (sqlite3_step(st) == SQLITE_ROW && !profiles) {
        notes++;
        para(d, "none", "%s: %s.", (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1));
    }
    sqlite3_finalize(st);
    if (!profiles && !notes)
        para(d, "none", "No CPU profile was asked for (phases.concurrency.profile: perf records the server during the "
                        "concurrency items and keeps the first window whose efficiency falls below 0.5).");
    return VB_OK;
}

/* Which spread the sweep's interval covers, and the spread across builds (build_repeats): one sentence per
 * configuration built several times (its widest spread of recall and of QPS across builds against the widest of its
 * query repeats), then v_build_spread. */
static int build_spread(doc *d, vb_error *err) {
    para(d, NULL, "qps_ci_lo / qps_ci_hi above: the bootstrap 95 %% interval of a point's median QPS over its query "
                  "repeats (from 5 repeats). It covers the spread across query repeats only, those of one build (the "
                  "last, when the index was built several times): not the spread across builds, which the next table "
                  "shows as the range of the builds' own values (build_repeats; a handful of builds gives no interval).");
    sqlite3 *db = d->rs->runs[0].db;
    sqlite3_stmt *st;
    const char *sql = "SELECT engine, dataset, MAX(builds), MAX(recall_max - recall_min), MAX(qps_spread), "
                      "MAX(qps_repeat_spread) FROM v_build_spread GROUP BY engine, dataset ORDER BY MIN(seq)";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return VB_OK;   /* an older file: no view */
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        n++;
        char rep[96] = "one repeat per build: no spread across repeats to set beside it";
        if (sqlite3_column_type(st, 5) != SQLITE_NULL)
            snprintf(rep, sizeof rep, "against at most %.1f %% across the query repeats of one build",
                     100 * sqlite3_column_double(st, 5));
        para(d, NULL, "%s on %s was built %d times, the recall sweep run on each build: recall differs by up to "
                      "%.4f between builds, QPS by up to %.1f %% of its mean (%s).",
             (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
             sqlite3_column_int(st, 2), sqlite3_column_double(st, 3), 100 * sqlite3_column_double(st, 4), rep);
    }
    sqlite3_finalize(st);
    if (!n) return VB_OK;
    return table(d, "v_build_spread", "SELECT {label} AS series, dataset, clients, ef_search, builds, repeats, "
                 "recall_mean, recall_min, recall_max, qps_mean, qps_min, qps_max, "
                 "printf('%.1f %%', 100 * qps_spread) AS across_builds, "
                 "IIF(qps_repeat_spread IS NULL, NULL, printf('%.1f %%', 100 * qps_repeat_spread)) AS across_repeats "
                 "FROM v_build_spread", err) < 0 ? VB_ERROR : VB_OK;
}

/* "Where the time goes": the stacked bars, one sentence per configuration computed from its largest client count
 * (the first run's windows), and the table of v_time_split. */
static int timegoes(doc *d, vb_error *err) {
    if (figures(d, "timegoes", err)) return VB_ERROR;
    sqlite3 *db = d->rs->runs[0].db;
    sqlite3_stmt *st;
    const char *sql =
        "SELECT engine, clients, mean_ms, server_ms_per_query, server_share, server_cores_busy, server_cores, cpu_share, "
        "top_wait, wait_unit FROM v_time_split AS t WHERE clients = (SELECT MAX(clients) FROM v_time_split AS u WHERE u.engine = "
        "t.engine) GROUP BY engine ORDER BY MIN(seq)";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return VB_OK;   /* an older file: no view */
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *e = (const char *)sqlite3_column_text(st, 0);
        int n = sqlite3_column_int(st, 1);
        double mean = sqlite3_column_double(st, 2), srv = sqlite3_column_double(st, 3);
        double share = sqlite3_column_double(st, 4);
        char cores[160] = "its CPU use was not sampled", waits[260] = "";
        if (sqlite3_column_type(st, 5) != SQLITE_NULL && sqlite3_column_type(st, 6) != SQLITE_NULL) {
            double busy = sqlite3_column_double(st, 5);
            int given = sqlite3_column_int(st, 6);
            snprintf(cores, sizeof cores, "the server's %d core%s %s %.2f busy (%s)", given, given == 1 ? "" : "s",
                     given == 1 ? "was" : "were", busy,
                     busy >= 0.9 * given ? "saturated" : busy >= 0.5 * given ? "partly idle" : "mostly idle");
        }
        const char *wunit = (const char *)sqlite3_column_text(st, 9);
        if (wunit && strcmp(wunit, "calls") == 0) {
            /* a latency histogram (Redis): its percentiles, not a CPU share */
            sqlite3_stmt *l = NULL;
            if (sqlite3_prepare_v2(db, "SELECT calls, p50_us_at_most, p99_us_at_most FROM v_server_latency WHERE engine = ? "
                                       "AND clients = ? LIMIT 1", -1, &l, NULL) == SQLITE_OK) {
                sqlite3_bind_text(l, 1, e, -1, SQLITE_TRANSIENT);
                sqlite3_bind_int(l, 2, n);
                if (sqlite3_step(l) == SQLITE_ROW)
                    snprintf(waits, sizeof waits, "; its own latency statistics (LATENCY HISTOGRAM) put half of its %lld "
                             "searches at or under %lld us and 99 %% at or under %lld us", sqlite3_column_int64(l, 0),
                             sqlite3_column_int64(l, 1), sqlite3_column_int64(l, 2));
            }
            sqlite3_finalize(l);
        } else if (sqlite3_column_type(st, 7) != SQLITE_NULL) {
            const char *top = (const char *)sqlite3_column_text(st, 8);
            int timed = wunit && strcmp(wunit, "us") == 0;
            snprintf(waits, sizeof waits, "; %s %.0f %% %s on CPU%s%s",
                     timed ? "of its statements' time (performance_schema's timing)" : "of its sampled sessions",
                     100 * sqlite3_column_double(st, 7), timed ? "was" : "were", top ? ", the main wait " : "",
                     top ? top : "");
        }
        para(d, "timegoes", "%s at %d client%s: the server executed each query in %.3f ms of the client's %.3f ms "
                            "(%.0f %%), the other %.0f %% was outside its execution (transport, connector, queueing "
                            "before execution); %s%s.", e, n, n == 1 ? "" : "s", srv, mean, 100 * share,
             100 * (1 - share), cores, waits);
    }
    sqlite3_finalize(st);
    if (table(d, "v_time_split", "SELECT {label} AS series, dataset, clients, repeat, mean_ms, server_ms_per_query, "
                                  "server_cpu_ms, server_wait_ms, outside_ms, server_share, cpu_share, top_wait, "
                                  "server_cores_busy, server_cores FROM v_time_split", err) < 0)
        return VB_ERROR;
    return cpu_profile(d, err);
}

/* ---- topology (issue 39): QPS and recall against the nodes, what limited each point, each node ------------------- */
static int topology(doc *d, vb_error *err) {
    vb_report_set *rs = d->rs;
    para(d, NULL, "An engine entry with shards or replicas runs each configuration on servers of its own (nodes: a "
                  "router and its shards, or a primary and its read replicas), started by the orchestrator from one "
                  "image, each with its share of the budget (on one host the server CPUs and memory are split between "
                  "the nodes). Each point is measured as any other (the sweep: one client; concurrency: a closed loop); "
                  "what limited it is read from what the results record: the client, node 0's CPU against the cores it "
                  "was given, replay lag at the window's node reading; otherwise \"not recorded\" with what was measured "
                  "(only node 0's unit is sampled during a window). docs/metrics.md, Topology.");
    int configs = 0;
    for (size_t r = 0; r < rs->n; r++) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(rs->runs[r].db, "SELECT COUNT(*) FROM v_topology", -1, &st, NULL) != SQLITE_OK)
            return vb_error_set(err, "report", 1, "%s: reading v_topology: %s", rs->runs[r].path,
                                sqlite3_errmsg(rs->runs[r].db));
        if (sqlite3_step(st) == SQLITE_ROW) configs += sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    if (!configs) {
        para(d, "none", "No configuration in these runs has shards or replicas: every engine ran on one server.");
        return VB_OK;
    }
    if (figures(d, "topology", err)) return VB_ERROR;
    /* the seed's table (Doris: one BE node against three, BestQPS and recall): per configuration and dataset its
     * closed-loop point of the highest QPS */
    h3(d, "Best QPS per topology");
    if (table(d, "v_topology_points", "SELECT {label} AS series, nodes, dataset, qps AS best_qps, clients, ef_search, "
              "recall, p99_ms FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY engine, dataset ORDER BY qps DESC) AS r "
              "FROM v_topology_points WHERE phase = 'concurrency') WHERE r = 1 ORDER BY entry, dataset, nodes", err) < 0)
        return VB_ERROR;
    /* one sentence per concurrency point: its QPS and recall beside what limited it */
    int points = 0;
    for (size_t r = 0; r < rs->n; r++) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(rs->runs[r].db, "SELECT engine, nodes, dataset, clients, qps, recall, ef_search, "
                               "limited_by FROM v_topology_points WHERE phase = 'concurrency'", -1, &st, NULL) != SQLITE_OK)
            return vb_error_set(err, "report", 1, "%s: reading v_topology_points: %s", rs->runs[r].path,
                                sqlite3_errmsg(rs->runs[r].db));
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (!points++) h3(d, "What limited each point"), fputs("<ul class=\"summary\">\n", d->html);
            char name[300], text[1200], recall[64] = "recall not measured at this ef_search";
            vb_report_series(rs, r, (const char *)sqlite3_column_text(st, 0), name, sizeof name);
            int nodes = sqlite3_column_int(st, 1), clients = sqlite3_column_int(st, 3);
            if (sqlite3_column_type(st, 5) != SQLITE_NULL)
                snprintf(recall, sizeof recall, "recall %.4f", sqlite3_column_double(st, 5));
            snprintf(text, sizeof text, "%s (%d node%s) on %s at %d client%s, ef_search %d: %.0f QPS, %s; limited by: "
                     "%s.", name, nodes, nodes == 1 ? "" : "s", (const char *)sqlite3_column_text(st, 2), clients,
                     clients == 1 ? "" : "s", sqlite3_column_int(st, 6), sqlite3_column_double(st, 4), recall,
                     (const char *)sqlite3_column_text(st, 7));
            fputs("<li>", d->html);
            html_esc(d->html, text);
            fputs("</li>\n", d->html);
            fprintf(d->md, "- %s\n", text);
        }
        sqlite3_finalize(st);
    }
    if (points) fputs("</ul>\n", d->html), fputs("\n", d->md);
    else para(d, "none", "No concurrency point: the sweep's one-client points only, whose QPS is 1 / latency.");
    h3(d, "Each point beside its topology");
    if (table(d, "v_topology_points", "SELECT {label} AS series, shards, replicas, nodes, dataset, phase, clients, "
              "ef_search, recall, qps, p50_ms, p99_ms, limited_by FROM v_topology_points", err) < 0)
        return VB_ERROR;
    h3(d, "Each node at its configuration's last reading");
    para(d, NULL, "After the build or the configuration's last window: rows, index and table size, the server's own "
                  "count of kNN statements since it started and in the last window (last_window_searches: how the reads "
                  "spread, when the reading before it was a window's), replay lag then and the most any reading saw "
                  "(max_lag_bytes); the orchestrator's CPUs, memory limit, and over the node's life its peak memory and "
                  "CPU seconds. Every reading: `vbench export` (v_nodes).");
    sqlite3 **dbs = calloc(rs->n, sizeof *dbs);
    if (!dbs) return vb_error_set(err, "report", 1, "out of memory writing the topology section");
    for (size_t r = 0; r < rs->n; r++) dbs[r] = rs->runs[r].db;
    char *sql = vb_topology_nodes_sql(dbs, rs->n, "{label} AS series");
    free(dbs);
    if (!sql) return vb_error_set(err, "report", 1, "out of memory writing the topology section");
    int rows = table(d, "v_nodes", sql, err);
    free(sql);
    return rows < 0 ? VB_ERROR : VB_OK;
}

static const char *css =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:1100px;"
    "padding:0 12px 40px;color:#1a1a1a;line-height:1.45}"
    "h1{font-size:1.6em}h2{border-bottom:2px solid #ddd;padding-top:10px}"
    "nav a{margin-right:10px;white-space:nowrap}"
    "figure{margin:16px 0}figure img{width:100%;height:auto;border:1px solid #eee}"
    "figcaption{font-size:.9em;color:#444}"
    ".scroll{overflow-x:auto}table{border-collapse:collapse;font-size:.85em;margin:8px 0}"
    "td{white-space:nowrap}td.t{white-space:normal;min-width:12em;overflow-wrap:anywhere}td.l{white-space:normal;overflow-wrap:anywhere}p.ctx,p.note{font-size:.85em;color:#444;margin:4px 0}"
    "th,td{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}td.n{text-align:right;"
    "font-variant-numeric:tabular-nums}th{background:#f4f4f4}"
    "pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:.85em;white-space:pre-wrap;word-break:break-all}"
    ".warn{background:#fff3cd;border-left:4px solid #d39e00;padding:8px}"
    ".none{color:#777;font-style:italic}.ok{color:#276b2a}"
    "@media (max-width:600px){body{font-size:15px}table{font-size:.75em}}";

static const struct {
    const char *id, *title;
} sections[] = {
    {"summary", "Summary"},
    {"environment", "Environment"},
    {"validity", "Validity"},
    {"asymmetries", "Known asymmetries"},
    {"recall", "Recall vs throughput"},
    {"build", "Build cost"},
    {"concurrency", "Concurrency"},
    {"timegoes", "Where the time goes"},
    {"filtered", "Filtered search"},
    {"cold_start", "Cold start"},
    {"churn", "Churn"},
    {"streaming", "Streaming (search while the corpus grows)"},
    {"capacity", "Capacity at a latency objective"},
    {"mixed", "Mixed (search while rows are updated, deleted and inserted)"},
    {"server", "Server memory and CPU"},
    {"topology", "Topology (several servers of one engine)"},
    {"reproduce", "Reproduce this run"},
    {"appendix", "Appendix: the manifest"},
};

static int body(doc *d, vb_error *err) {
    vb_report_set *rs = d->rs;
    for (size_t s = 0; s < sizeof sections / sizeof sections[0]; s++) {
        const char *id = sections[s].id;
        if (!rs->quiet) fprintf(stderr, "report: section %zu/%zu: %s\n", s + 1, sizeof sections / sizeof sections[0],
                                sections[s].title);
        h2(d, id, sections[s].title);
        int rc = 0;
        if (strcmp(id, "summary") == 0) {
            if (rs->mismatch[0]) para(d, "warn", "These runs are not directly comparable: %s.", rs->mismatch);
            rc = summary(d, err);
        } else if (strcmp(id, "environment") == 0) {
            rc = environment(d, err);
        } else if (strcmp(id, "validity") == 0) {
            rc = validity(d, err);
        } else if (strcmp(id, "asymmetries") == 0) {
            rc = asymmetries(d, err);
        } else if (strcmp(id, "recall") == 0) {
            rc = figures(d, "recall", err);
            if (!rc) rc = table(d, "v_recall_targets", "SELECT {label} AS series, dataset, clients, qps_at_0_90, "
                                                       "qps_at_0_95, qps_at_0_99 FROM v_recall_targets", err) < 0;
            /* one row per point: medians over the repeats, their range and (from 5) the bootstrap interval */
            if (!rc) rc = table(d, "v_recall_sweep_ci", "SELECT {label} AS series, dataset, clients, ef_search, recall, "
                                "id_overlap, qps, mean_ms, p50_ms, p95_ms, p99_ms, p999_ms, queries, short_answers, "
                                "errors, repeats, "
                                "qps_min, qps_max, qps_ci_lo, qps_ci_hi FROM v_recall_sweep_ci", err) < 0;
            if (!rc) rc = build_spread(d, err);
            /* the distribution of per-query recall of every measured point (its repeats pooled) */
            if (!rc) {
                h3(d, "Recall distribution per measured point");
                para(d, NULL, "Per-query recall@k: the minimum, the nearest-rank p1, p10 and p50 over the queries, and "
                              "the shares of the queries at recall 0 (zero_share) and below 0.5 (below_half); recall is "
                              "the mean; a point measured several times (repeats, builds: `measured`) gives the lowest "
                              "minimum and the mean of the others, each measurement's own in `vbench show --recall`. "
                              "`vbench show --worst N` names the hardest queries of each point.");
                /* short names, as show --recall's: the heading says what they are of */
                /* one row per point: its repeats (and builds) pooled as v_recall_sweep pools them, the lowest
                 * minimum and the mean of the percentiles and shares (a campaign of 3 builds x 3 repeats had 366
                 * rows here, 20,000 pixels of page; `vbench show --recall` keeps each measurement's row) */
                rc = table(d, "v_recall_dist", "SELECT {label} AS series, dataset, phase, point, "
                           "ROUND(AVG(recall), 12) AS recall, MIN(recall_min) AS min, AVG(recall_p1) AS p1, "
                           "AVG(recall_p10) AS p10, AVG(recall_p50) AS p50, AVG(zero_share) AS zero_share, "
                           "AVG(below_half_share) AS below_half, SUM(queries) AS queries, COUNT(*) AS measured "
                           "FROM v_recall_dist GROUP BY 1, 2, 3, 4 ORDER BY MIN(rowid)", err) < 0;
            }
        } else if (strcmp(id, "build") == 0) {
            rc = figures(d, "build", err);
            if (!rc) rc = table(d, "v_build", "SELECT {label} AS series, dataset, build, rows, load_s, build_s, "
                                              "first_query_s, rows_per_s, index_bytes, table_bytes, client_cpu_s, "
                                              "engine_version FROM v_build", err) < 0;
            if (!rc) rc = table(d, "v_cost_build", "SELECT {label} AS series, dataset, rows, load_s, build_s, per_hour, "
                                "currency, build_cost FROM v_cost_build", err) < 0;
        } else if (strcmp(id, "concurrency") == 0) {
            rc = figures(d, "concurrency", err);
            if (!rc) rc = table(d, "v_concurrency_points_ci", "SELECT {label} AS series, dataset, clients, target_rate, "
                                "repeats, qps, qps_min, qps_max, qps_ci_lo, qps_ci_hi, mean_ms, p50_ms, p95_ms, p99_ms, p999_ms, "
                                "in_flight, "
                                "qps_x_p50, COALESCE(printf('%.3f', efficiency), efficiency_refused) AS efficiency "
                                "FROM v_concurrency_points_ci", err) < 0;
            /* with a cost in the profile (cost.per_hour in the manifest): queries per unit of money; else no rows */
            if (!rc) rc = table(d, "v_cost_concurrency", "SELECT {label} AS series, dataset, clients, target_rate, qps, "
                                "per_hour, currency, queries_per_unit FROM v_cost_concurrency", err) < 0;
        } else if (strcmp(id, "timegoes") == 0) {
            rc = timegoes(d, err);
        } else if (strcmp(id, "filtered") == 0) {
            rc = figures(d, "filtered", err);
            if (!rc) rc = table(d, "v_filtered_ci", "SELECT {label} AS series, dataset, predicate, selectivity, passing_rows, "
                                "recall, qps, mean_ms, p50_ms, p95_ms, p99_ms, p999_ms, short_answers, queries, repeats, "
                                "qps_min, qps_max, qps_ci_lo, "
                                "qps_ci_hi, CASE index_used WHEN 1 THEN 'index' WHEN 0 THEN 'exact scan' "
                                "ELSE 'no plan (the engine has no EXPLAIN)' END AS plan_ran, plan FROM v_filtered_ci",
                                err) < 0;
            /* the class predicates (issue 35): what a filter that follows the data does, beside one that does not */
            if (!rc) rc = table(d, "v_filtered_classes", "SELECT {label} AS series, dataset, ef_search, "
                                "tags_selectivity, tags_recall, tags_qps, tags_short_answers, own_share, own_recall, "
                                "own_qps, own_short_answers, other_share, other_recall, other_qps, other_short_answers "
                                "FROM v_filtered_classes", err) < 0;
        } else if (strcmp(id, "cold_start") == 0) {
            para(d, NULL, "A cold_start item stops its engine's server, evicts every file of the server's data "
                 "directory from the page cache and starts it again, then runs the first queries one at a time, then "
                 "the same queries warm. ratio_first is the first query against the warm median, ratio_mean the cold "
                 "queries' mean against the warm mean; time_to_warm is when the rolling median of the cold queries "
                 "came within 10 %% of the warm median (docs/metrics.md, Cold start). An embedded engine has no "
                 "server: not applicable.");
            rc = figures(d, "cold_start", err);
            if (!rc) rc = table(d, "v_cold_start", "SELECT {label} AS series, dataset, status, queries, first_ms, "
                                "cold_mean_ms, cold_p50_ms, warm_first_ms, warm_p50_ms, warm_mean_ms, ratio_first, "
                                "ratio_mean, time_to_warm, evicted_files, "
                                "IIF(evicted_bytes IS NULL, NULL, printf('%.1f', evicted_bytes / 1048576.0)) AS evicted_mib, restart_s, "
                                "errors, reason "
                                "FROM v_cold_start", err) < 0;
        } else if (strcmp(id, "churn") == 0) {
            rc = figures(d, "churn", err);
            if (!rc) rc = table(d, "v_churn_ci", "SELECT {label} AS series, dataset, qps_before, qps_after, "
                                "recall_before, recall_after, rows_done, rows_planned, rows_per_s, completed, repeats, "
                                "qps_before_min, qps_before_max, qps_after_min, qps_after_max, qps_before_ci_lo, "
                                "qps_before_ci_hi, qps_after_ci_lo, qps_after_ci_hi FROM v_churn_ci", err) < 0;
        } else if (strcmp(id, "streaming") == 0) {
            rc = figures(d, "streaming", err);
            if (!rc) rc = table(d, "v_streaming", "SELECT {label} AS series, dataset, IIF(insert_rate = 0, 'max', "
                                "printf('%g', insert_rate)) AS insert_rate, IIF(at_rest, 'rest', printf('%g', stage)) "
                                "AS stage, rows_visible, recall, recall_full, qps, p50_ms, p95_ms, p99_ms, p999_ms, "
                                "fresh_rows_found, offered_rows_s, achieved_rows_s, shortfall_rows, insert_p99_ms, "
                                "max_lag_s, fresh_p50_ms, fresh_p99_ms, fresh_never, fresh_probes FROM v_streaming",
                                err) < 0;
            if (!rc) rc = table(d, "v_streaming_cost", "SELECT {label} AS series, dataset, IIF(insert_rate = 0, 'max', "
                                "printf('%g', insert_rate)) AS insert_rate, ingest_qps, rest_qps, throughput_ratio, "
                                "ingest_p99_ms, rest_p99_ms, p99_ratio FROM v_streaming_cost", err) < 0;
        } else if (strcmp(id, "capacity") == 0) {
            rc = capacity(d, err);
        } else if (strcmp(id, "mixed") == 0) {
            /* per window (recall against the write log's state, ghosts, stale answers, QPS, p99) and per operation */
            rc = figures(d, "mixed", err);
            if (!rc) rc = table(d, "v_mixed", "SELECT {label} AS series, dataset, ids, IIF(rate IS NULL, 'closed', printf('%g', "
                       "rate)) AS rate, window_index, phase, rows_live, recall, ghost_answers, stale_answers, "
                       "ghost_example, qps, p50_ms, p99_ms, writes, update_p99_ms, delete_p99_ms, insert_p99_ms, "
                       "fresh_p50_ms, fresh_p99_ms, fresh_never, maintenance, maintain_s, rows_engine, rows_differ, "
                       "rows_diff_example FROM v_mixed", err) < 0;
            if (!rc) rc = table(d, "v_mixed_ops", "SELECT {label} AS series, dataset, ids, window_index, phase, op, done, "
                                "offered, achieved_s, offered_s, errors, mean_ms, p50_ms, p99_ms, max_ms "
                                "FROM v_mixed_ops", err) < 0;
        } else if (strcmp(id, "server") == 0) {
            rc = figures(d, "server", err);
            if (!rc) rc = table(d, "v_servers", "SELECT {label} AS series, cpus, memory_max, ready_s, peak_cgroup_bytes, "
                                "peak_rss_bytes, peak_pss_bytes, cpu_s, disk_bytes FROM v_servers", err) < 0;
            if (!rc) rc = table(d, "v_server_phase", "SELECT {label} AS series, phase, item, samples, seconds, "
                                "peak_cgroup_bytes, peak_rss_bytes, server_cpu_s FROM v_server_phase "
                                "WHERE item IS NOT NULL ORDER BY seq", err) < 0;
        } else if (strcmp(id, "topology") == 0) {
            rc = topology(d, err);
        } else if (strcmp(id, "reproduce") == 0) {
            rc = reproduce(d, err);
        } else if (strcmp(id, "appendix") == 0) {
            rc = appendix(d, err);
        }
        if (rc) return VB_ERROR;
        end_section(d);
    }
    return VB_OK;
}

int vb_report_write(const char *const *paths, size_t n, const char *dir, int quiet, vb_error *err) {
    vb_report_set rs = {.n = 0, .dir = dir, .quiet = quiet};
    rs.runs = calloc(n, sizeof *rs.runs);
    int rc = VB_OK;
    for (size_t i = 0; i < n && rc == VB_OK; i++) {
        vb_report_run *run = &rs.runs[i];
        vb_store_opts so = {.access = VB_STORE_READ};
        snprintf(run->path, sizeof run->path, "%s", paths[i]);
        if (vb_store_open_with(paths[i], &so, &run->store, err) != VB_OK) {
            rc = VB_ERROR;
            break;
        }
        rs.n++;
        run->db = vb_store_db(run->store);
        sqlite3_create_function(run->db, "vb_tidy", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, tidy_fn, NULL, NULL);
        sqlite3_stmt *st;
        snprintf(run->name, sizeof run->name, "run%zu", i + 1);
        if (sqlite3_prepare_v2(run->db, "SELECT name FROM campaign", -1, &st, NULL) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW) snprintf(run->name, sizeof run->name, "%s", sqlite3_column_text(st, 0));
            sqlite3_finalize(st);
        }
        for (size_t j = 0; j < i; j++) /* two runs of one profile: dev, dev#2 */
            if (strcmp(rs.runs[j].name, run->name) == 0) {
                size_t l = strlen(run->name);
                snprintf(run->name + (l > 100 ? 100 : l), sizeof run->name - 100, "#%zu", i + 1);
            }
    }
    FILE *html = NULL, *md = NULL;
    char hp[PATH_MAX], mp[PATH_MAX], tmp_h[PATH_MAX], tmp_m[PATH_MAX];
    if (rc == VB_OK) rc = vb_mkdirs(dir, 0755, err);
    if (rc == VB_OK) {
        snprintf(hp, sizeof hp, "%s/report.html", dir), snprintf(tmp_h, sizeof tmp_h, "%s/.report.html.tmp", dir);
        snprintf(mp, sizeof mp, "%s/report.md", dir), snprintf(tmp_m, sizeof tmp_m, "%s/.report.md.tmp", dir);
        html = fopen(tmp_h, "w"), md = fopen(tmp_m, "w");
        if (!html || !md) rc = vb_error_set(err, "report", errno, "cannot write in %s: %s", dir, strerror(errno));
    }
    if (rc == VB_OK) {
        vb_report_compare(&rs);
        doc d = {html, md, &rs};
        char title[600] = "vbench report: ";
        for (size_t i = 0; i < rs.n; i++)
            snprintf(title + strlen(title), sizeof title - strlen(title), "%s%s", i ? " vs " : "", rs.runs[i].name);
        fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
              "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
              "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
              "style-src 'unsafe-inline'\">\n<title>", html);
        html_esc(html, title);
        fprintf(html, "</title>\n<style>%s</style></head><body>\n<h1>", css);
        html_esc(html, title);
        fputs("</h1>\n<nav>", html);
        fprintf(md, "# %s\n\n", title);
        for (size_t s = 0; s < sizeof sections / sizeof sections[0]; s++) {
            fprintf(html, "<a href=\"#%s\">%s</a> ", sections[s].id, sections[s].title);
            fprintf(md, "%s[%s](#%s)", s ? " · " : "", sections[s].title, sections[s].id);
        }
        fputs("</nav>\n", html);
        fputs("\n\n", md);
        time_t now = time(NULL);
        char stamp[64];
        strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S %z", localtime(&now));
        char from[2048] = "";
        for (size_t i = 0; i < rs.n; i++)
            snprintf(from + strlen(from), sizeof from - strlen(from), "%s%.500s", i ? ", " : "", rs.runs[i].path);
        para(&d, NULL, "Written %s by vbench %s from %s.", stamp, vb_git_revision(), from);
        if (rs.mismatch[0]) para(&d, "warn", "These runs differ and are drawn side by side: %s.", rs.mismatch);
        rc = body(&d, err);
        fputs("</body></html>\n", html);
    }
    if (html && fclose(html) != 0 && rc == VB_OK)
        rc = vb_error_set(err, "report", errno, "cannot write %s: %s", tmp_h, strerror(errno));
    if (md && fclose(md) != 0 && rc == VB_OK)
        rc = vb_error_set(err, "report", errno, "cannot write %s: %s", tmp_m, strerror(errno));
    if (rc == VB_OK && (rename(tmp_h, hp) != 0 || rename(tmp_m, mp) != 0))
        rc = vb_error_set(err, "report", errno, "cannot write %s: %s", hp, strerror(errno));
    if (rc == VB_OK && !quiet) fprintf(stderr, "report: wrote %s, %s and %zu charts in %s/charts\n", hp, mp,
                                       rs.n_charts, dir);
    for (size_t i = 0; i < rs.n_charts; i++) vb_chart_free(rs.charts[i]);
    free(rs.charts);
    for (size_t i = 0; i < rs.n; i++) vb_store_close(&rs.runs[i].store);
    free(rs.runs);
    return rc;
}
