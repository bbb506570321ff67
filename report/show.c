/* Table rendering for show/status: a generic printer over a prepared statement, in text or JSON. */
#include "report/show.h"
#include "report/status_eta.h"

#include "report/grid.h"
#include "report/json_rows.h"
#include "report/topology.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct report_table {
    const char *name;
    const char *title;
    const char *sql;   /* NULL: SQL made for the file at hand (made_sql) */
} report_table;

/* The SQL of a table whose columns depend on the file (sql NULL): the per-node table of a topology from the columns
 * this file's v_nodes has (report/topology.h). malloc'd; NULL when out of memory. */
static char *made_sql(sqlite3 *db, const report_table *t) {
    return strcmp(t->name, "topology_nodes") == 0 ? vb_topology_nodes_sql(&db, 1, NULL) : NULL;
}

/* The cost tables exist only with a cost in the profile, the streaming ones only with a streaming phase, the mixed ones
 * only with a mixed phase, the topology ones only with shards or replicas: without rows they have no key in show
 * --json either. */
static int optional(const report_table *t) {
    return strncmp(t->name, "cost_", 5) == 0 || strncmp(t->name, "streaming", 9) == 0 ||
           strncmp(t->name, "mixed", 5) == 0 ||
           strncmp(t->name, "cpu_profile", 11) == 0 || strcmp(t->name, "build_spread") == 0 ||
           strcmp(t->name, "filtered_classes") == 0 || strncmp(t->name, "capacity", 8) == 0 ||
           strncmp(t->name, "topology", 8) == 0;
}

static const report_table tables[] = {
    {"build", "Build",
     "SELECT engine, dataset, rows, load_s, build_s, first_query_s, rows_per_s, index_bytes, table_bytes, "
     "client_cpu_s, engine_version, "
     /* a load continued from its checkpoint: load_s is the sum of its attempts' work, said so */
     "IIF(attempts > 1, printf('load %.0f s over %d attempts', load_s, attempts), NULL) AS attempts, build FROM v_build"},
    {"recall_sweep", "Recall sweep (one client, every query once; with a clients list, a window per client count)",
     /* recall_p10 and zero_share: the distribution in brief (all of it: `show --recall`) */
     "SELECT engine, dataset, clients, ef_search, recall, recall_p10, zero_share, id_overlap, qps, mean_ms, p50_ms, "
     "p95_ms, p99_ms, p999_ms, "
     "queries, short_answers, "
     "errors, repeats, qps_min, qps_max, qps_ci_lo, qps_ci_hi, builds FROM v_recall_sweep_ci"},
    /* build_repeats (v_build_spread): compact, within 120 columns; the CI of the sweep above covers the repeats */
    {"build_spread", "Spread across builds (build_repeats; rep_spread: the widest QPS range within one build)",
     "SELECT engine, dataset, clients, ef_search AS ef, builds, recall_mean AS recall, "
     "printf('%.4f-%.4f', recall_min, recall_max) AS recall_range, qps_mean AS qps, "
     "printf('%.0f-%.0f', qps_min, qps_max) AS qps_range, printf('%.1f %%', 100 * qps_spread) AS build_spread, "
     "IIF(qps_repeat_spread IS NULL, '-', printf('%.1f %%', 100 * qps_repeat_spread)) AS rep_spread "
     "FROM v_build_spread"},
    {"recall_targets", "Best QPS whose recall passes",
     "SELECT engine, dataset, clients, qps_at_0_90, qps_at_0_95, qps_at_0_99 FROM v_recall_targets"},
    /* one row per point, medians over its repeats (the windows: `show --windows`, v_concurrency) */
    {"concurrency", "Concurrency (closed loop), medians over the repeats",
     "SELECT engine, dataset, clients, repeats, qps, qps_min, qps_max, qps_ci_lo, qps_ci_hi, mean_ms, p50_ms, p95_ms, "
     "p99_ms, p999_ms, in_flight, fraction_in_call, COALESCE(printf('%.3f', efficiency), efficiency_refused) AS efficiency, "
     "client_cpu_s FROM v_concurrency_points_ci WHERE target_rate IS NULL"},
    {"concurrency_open", "Concurrency (open loop: latency from the intended start), medians over the repeats",
     "SELECT engine, dataset, clients, target_rate, repeats, qps, qps_min, qps_max, qps_ci_lo, qps_ci_hi, mean_ms, "
     "p50_ms, p95_ms, p99_ms, p999_ms, late_starts, lag_p99_ms, in_flight, client_cpu_s FROM v_concurrency_points_ci "
     "WHERE target_rate IS NOT NULL"},
    {"filtered", "Filtered search (1 client)",
     "SELECT engine, dataset, predicate, selectivity, passing_rows, passed_share, recall, qps, mean_ms, p50_ms, p95_ms, "
     "p99_ms, p999_ms, short_answers, queries, repeats, qps_min, "
     "qps_max, qps_ci_lo, qps_ci_hi, index_used, plan FROM v_filtered_ci"},
    /* only with the class predicates (issue 35): independent tags against the query's own class and another */
    {"filtered_classes", "Filtered search: independent tags, the query's own class and another class side by side "
                         "(tags at the selectivity nearest the own class's share)",
     "SELECT engine, dataset, ef_search, tags_selectivity, tags_recall, tags_qps, tags_short_answers, own_share, "
     "own_recall, own_qps, own_short_answers, other_share, other_recall, other_qps, other_short_answers, queries "
     "FROM v_filtered_classes"},
    /* measured, or not applicable with the reason (an embedded engine): never absent (docs/metrics.md "Cold start") */
    {"cold_start", "Cold start (1 client: the first queries after a restart with the data files evicted from the page "
                   "cache, against the same queries warm)",
     "SELECT engine, dataset, status, queries, first_ms, cold_mean_ms, cold_p50_ms, warm_p50_ms, warm_mean_ms, "
     "ratio_first, ratio_mean, ratio_p50, warm_after, warm_after_s, time_to_warm, evicted_files, evicted_bytes, "
     "restart_s, errors, reason FROM v_cold_start"},
    {"cost_concurrency", "Cost: queries per unit of money at each concurrency point (the server host at cost.per_hour)",
     "SELECT engine, dataset, clients, target_rate, qps, per_hour, currency, queries_per_unit FROM v_cost_concurrency"},
    {"cost_build", "Cost of each build (the server host's time for load and build at cost.per_hour)",
     "SELECT engine, dataset, rows, load_s, build_s, per_hour, currency, build_cost FROM v_cost_build"},
    {"churn", "Churn (delete and reinsert)",
     "SELECT engine, dataset, qps_before, qps_after, recall_before, recall_after, rows_done, rows_planned, "
     "rows_per_s, completed, repeats, qps_before_min, qps_before_max, qps_after_min, qps_after_max, "
     "qps_before_ci_lo, qps_before_ci_hi, qps_after_ci_lo, qps_after_ci_hi FROM v_churn_ci"},
    {"streaming", "Streaming (search while the corpus grows; recall against the rows visible when each window began)",
     "SELECT engine, dataset, IIF(insert_rate = 0, 'max', printf('%g', insert_rate)) AS insert_rate, "
     "IIF(at_rest, 'rest', printf('%g', stage)) AS stage, rows_visible, recall, recall_full, qps, p50_ms, p99_ms, p999_ms, "
     "fresh_rows_found, offered_rows_s, achieved_rows_s, insert_p99_ms, max_lag_s, shortfall_rows, "
     "fresh_p50_ms, fresh_p99_ms, fresh_never, fresh_probes FROM v_streaming"},
    {"streaming_cost", "Streaming: the cost of concurrent writes (windows during ingestion against the window at rest)",
     "SELECT engine, dataset, IIF(insert_rate = 0, 'max', printf('%g', insert_rate)) AS insert_rate, ingest_qps, "
     "rest_qps, throughput_ratio, ingest_p99_ms, rest_p99_ms, p99_ratio FROM v_streaming_cost"},
    /* capacity (docs/metrics.md "Capacity"): the highest open-loop rate meeting each p99 target at the recall target;
     * each window of the search: `show --windows` */
    {"capacity", "Capacity at a latency objective (open loop, latency from the intended start; the last attempt)",
     "SELECT engine, dataset, recall_target, p99_target_ms, status, rate, ef_search, recall, p50_ms, p99_ms, p999_ms, "
     "printf('%d of %d', repeats_met, repeats) AS confirmed, knee_rate, knee_p99_ms, "
     "IIF(server_cores_busy IS NULL, NULL, printf('%.2f of %d', server_cores_busy, server_cores)) AS server_cores_busy, "
     "top_wait_class, op_source AS ef_from, windows, reason FROM v_capacity"},
    {"mixed", "Mixed (search while rows are updated, deleted and inserted; recall against the rows as acknowledged when "
     "each window began)",
     "SELECT engine, dataset, ids, IIF(rate IS NULL, 'closed', printf('%g', rate)) AS rate, window_index, phase, "
     "rows_live, recall, ghost_answers, stale_answers, ghost_example, qps, p50_ms, p99_ms, writes, update_p99_ms, "
     "delete_p99_ms, insert_p99_ms, fresh_p50_ms, fresh_p99_ms, fresh_never, fresh_probes, maintenance, maintain_s, "
     "rows_engine, rows_checked, rows_differ, rows_diff_example FROM v_mixed"},
    {"mixed_ops", "Mixed: the write operations per window (done, offered and achieved per second, latency)",
     "SELECT engine, dataset, ids, window_index, phase, op, done, offered, achieved_s, offered_s, errors, mean_ms, "
     "p50_ms, p99_ms, max_ms FROM v_mixed_ops"},
    {"servers", "Servers (systemd units started by the orchestrator; peaks over the server's life, when stopped)",
     "SELECT engine, cpus, printf('%.1f', memory_max / 1073741824.0) AS memory_max_gib, "
     "printf('%.2f', dev_shm_bytes / 1073741824.0) AS dev_shm_gib, ready_s, "
     "IIF(peak_cgroup_bytes IS NULL, NULL, printf('%.1f', peak_cgroup_bytes / 1048576.0)) AS peak_cgroup_mib, "
     "IIF(peak_rss_bytes IS NULL, NULL, printf('%.1f', peak_rss_bytes / 1048576.0)) AS peak_rss_mib, "
     "IIF(peak_pss_bytes IS NULL, NULL, printf('%.1f', peak_pss_bytes / 1048576.0)) AS peak_pss_mib, cpu_s, "
     "IIF(disk_bytes IS NULL, NULL, printf('%.1f', disk_bytes / 1048576.0)) AS disk_mib, unit FROM v_servers"},
    /* topology (issue 39, docs/metrics.md "Topology"): each configuration's points beside its servers, what limited
     * them; then each node at the last reading */
    {"topology", "Topology: each configuration of an engine over several servers, its points and what limited them "
                 "(nodes: the servers it took)",
     "SELECT entry, shards, replicas, nodes, dataset, phase, clients, ef_search, recall, qps, p50_ms, p99_ms, "
     "limited_by FROM v_topology_points"},
    {"topology_nodes", "Topology: each node at its configuration's last reading (after the build or its last window; "
                       "last_window_searches: the node's share of the last window; max_lag_bytes: the most any reading saw; cpu_s "
                       "and peak_bytes: over the node's life)",
     NULL},
    {"engine_provenance", "Engine provenance (what the server reports, where it came from, how it was built)",
     "SELECT engine, server_version, source, image, suite, sha256, flags, target_isa, build_simd, host_simd FROM v_engine_provenance"},
    {"server_phases", "Server memory and CPU per phase (sampled every 250 ms)",
     "SELECT engine, phase, item, samples, printf('%.1f', seconds) AS seconds, "
     "printf('%.1f', peak_cgroup_bytes / 1048576.0) AS peak_cgroup_mib, "
     "printf('%.1f', peak_rss_bytes / 1048576.0) AS peak_rss_mib, "
     "IIF(peak_pss_bytes IS NULL, NULL, printf('%.1f', peak_pss_bytes / 1048576.0)) AS peak_pss_mib, "
     "printf('%.2f', server_cpu_s) AS server_cpu_s "
     "FROM v_server_phase WHERE item IS NOT NULL ORDER BY seq"},
    {"server_counts", "Server counts (the check that the server ran what vbench sent: its own count, per phase)",
     "SELECT engine, phase, command, SUM(sent) AS sent, SUM(server) AS server, counted_as, "
     "SUM(agrees) || ' of ' || COUNT(*) AS results_agreeing FROM v_server_count GROUP BY engine, phase, command "
     "ORDER BY MIN(rowid)"},
    /* phases.concurrency.profile: perf (docs/metrics.md "CPU profile"): only when asked for */
    {"cpu_profile", "CPU profile of the first window that stopped scaling (perf, the server's cgroup; self samples)",
     "SELECT engine, dataset, clients, printf('%.3f', efficiency) AS efficiency, window_samples, rank, function, "
     "samples, share FROM v_server_profile WHERE rank <= 10"},
    {"cpu_profile_notes", "CPU profile: what perf did per server",
     "SELECT substr(key, 8, length(key) - 12) AS server, value AS note FROM manifest WHERE key LIKE 'server.%.perf' "
     "ORDER BY key"},
    /* the campaign's wall time per configuration and phase against the estimate (docs/metrics.md "Campaign time") */
    {"campaign_time", "Where the campaign's time went (each item's seconds per phase, the gaps between items, against "
                      "the estimate printed before it started)",
     "SELECT engine, part, items, printf('%.1f', seconds) AS seconds, printf('%.1f %%', 100.0 * share) AS share, "
     "IIF(estimated_s IS NULL, NULL, printf('%.1f', estimated_s)) AS estimated_s, "
     "IIF(estimated_s > 0, printf('%.2f', seconds / estimated_s), NULL) AS actual_over_estimate, detail "
     "FROM v_campaign_time"},
    {"validity", "Validity (what makes a number less than it seems)",
     "SELECT engine, dataset, \"check\", item, detail FROM v_validity"},
    /* Every plan item that is not done (the campaign is complete only when this is empty); JSON key kept. */
    {"failures", "Items not done",
     "SELECT key AS item, status, attempts, error FROM plan WHERE status <> 'done' ORDER BY seq"},
};

/* Human formatting by column meaning: rates whole, ratios and latencies with 3 decimals. */
void vb_report_cell(sqlite3_stmt *st, int i, char *buf, size_t len) {
    const char *name = sqlite3_column_name(st, i);
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL: snprintf(buf, len, "-"); break;
    case SQLITE_INTEGER: snprintf(buf, len, "%lld", (long long)sqlite3_column_int64(st, i)); break;
    case SQLITE_FLOAT: {
        double v = sqlite3_column_double(st, i);
        if (strstr(name, "qps") || strstr(name, "per_s") || strstr(name, "rate")) snprintf(buf, len, "%.0f", v);
        else if (strstr(name, "recall") || strstr(name, "overlap")) snprintf(buf, len, "%.4f", v);
        else snprintf(buf, len, "%.3f", v);
        break;
    }
    default: snprintf(buf, len, "%s", sqlite3_column_text(st, i)); break;
    }
}

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, vb_error *err) {
    if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK)
        return vb_error_set(err, "results", 1, "reading the results: %s (is this a vbench results database?)",
                            sqlite3_errmsg(db));
    return VB_OK;
}

/* One table as a JSON array of row objects, into the document (json_rows.h: the one JSON path). */
static int table_json(sqlite3 *db, const report_table *t, json_t *doc, vb_error *err) {
    const char *why = NULL;
    char *made = t->sql ? NULL : made_sql(db, t);
    if (!t->sql && !made) return vb_error_set(err, "results", 1, "out of memory for the table %s", t->name);
    json_t *rows = vb_json_rows(db, made ? made : t->sql, &why);
    free(made);
    if (!rows)
        return vb_error_set(err, "results", 1, "reading the results: %s (is this a vbench results database?)", why);
    if (optional(t) && json_array_size(rows) == 0) json_decref(rows);
    else json_object_set_new(doc, t->name, rows);
    return VB_OK;
}

/* Text tables fit a terminal of VB_SHOW_WIDTH columns unless --wide (pgbench and wrk print a screen a person reads
 * without scrolling sideways): the columns that carry nothing for this campaign are left out and named in a note
 * under the table, what every row shares goes into the title (report/grid.h says which), then the longest text
 * columns (details, plans, errors: never a number, an engine or a dataset) are narrowed until the line fits: the
 * last column's cells wrap onto lines of their own, any other's are cut with "...". A table of many numbers still
 * wider is printed in parts, each with the rows' key. --wide (and --json) show every column as it is. */
#define VB_SHOW_WIDTH 120
#define CELL_MAX 80    /* --wide: the widest a column gets */
#define TEXT_MIN 16    /* a text column is cut to no less */


static int text_width(const vb_grid *g) {
    int total = 0, n = 0;
    for (int i = 0; i < g->cols; i++)
        if (g->keep[i]) total += g->w[i] + (n++ ? 2 : 0);
    return total;
}

static void grid_widths(vb_grid *g, int cap) {
    for (int c = 0; c < g->cols; c++) {
        g->w[c] = (int)strlen(g->name[c]);
        for (int r = 0; r < g->rows; r++) {
            int l = (int)strlen(vb_grid_at(g, r, c));
            if (l > g->w[c]) g->w[c] = l > cap ? cap : l;
        }
    }
}

/* The widest text column (no numbers in it) over TEXT_MIN, cut until the table fits or none is left to cut. */
static void grid_cut(vb_grid *g) {
    for (int over = text_width(g) - VB_SHOW_WIDTH; over > 0; over = text_width(g) - VB_SHOW_WIDTH) {
        int widest = -1;
        for (int c = 0; c < g->cols; c++) {
            int text = 1;
            for (int r = 0; r < g->rows && text; r++) text = !g->num[(size_t)r * (size_t)g->cols + (size_t)c];
            int name = strcmp(g->name[c], "engine") == 0 || strcmp(g->name[c], "dataset") == 0;
            if (g->keep[c] && text && !name && g->w[c] > TEXT_MIN && (widest < 0 || g->w[c] > g->w[widest]))
                widest = c;
        }
        if (widest < 0) return;
        int w = g->w[widest] - over;
        g->w[widest] = w < TEXT_MIN ? TEXT_MIN : w;
    }
}

/* text, wrapped at VB_SHOW_WIDTH between words; continuation lines start with indent (of that many columns). */
static void put_wrapped(FILE *out, const char *text, const char *indent, int indent_w) {
    int used = 0;
    for (const char *p = text; *p;) {
        const char *sp = strchr(p + 1, ' ');
        int wl = sp ? (int)(sp - p) : (int)strlen(p);
        if (used > indent_w && used + wl > VB_SHOW_WIDTH) {
            fprintf(out, "\n%s", indent);
            used = indent_w;
            if (*p == ' ') p++, wl--;
        }
        fprintf(out, "%.*s", wl, p);
        used += wl, p += wl;
    }
    fputc('\n', out);
}

/* A cell of the last column, w wide, wrapped between words onto lines that start at column `at`. */
static void put_column(FILE *out, const char *text, int w, int at) {
    int used = 0;
    for (const char *p = text; *p;) {
        const char *sp = strchr(p + 1, ' ');
        int wl = sp ? (int)(sp - p) : (int)strlen(p);
        if (used > 0 && used + wl > w) {
            fprintf(out, "\n%*s", at, "");
            used = 0;
            if (*p == ' ') p++, wl--;
        }
        if (wl > w) wl = w;   /* a word longer than the column: cut where the line ends */
        fprintf(out, "%.*s", wl, p);
        used += wl, p += wl;
    }
}

/* The header, its rule and every row of the columns `show` marks. The last one is not padded (no trailing blanks)
 * and its long cells wrap; another column's long cells are cut with "...". */
static void print_part(FILE *out, const vb_grid *g, const unsigned char *show) {
    int last = -1, width = 0, n = 0;
    for (int i = 0; i < g->cols; i++)
        if (show[i]) last = i, width += g->w[i] + (n++ ? 2 : 0);
    /* A table printed in parts had its text cut to fit the whole width; the part's last column takes back the room
     * its part leaves (up to its longest cell), so a reason wraps on a few wide lines, not many narrow ones. */
    int lw = last < 0 ? 0 : g->w[last];
    if (last >= 0) {
        int longest = lw;
        for (int r = 0; r < g->rows; r++) {
            int l = (int)strlen(vb_grid_at(g, r, last));
            if (l > longest) longest = l;
        }
        int room = VB_SHOW_WIDTH - (width - lw);
        if (room > lw) lw = room < longest ? room : longest;
        width += lw - g->w[last];
    }
    int first = 1;
    for (int i = 0; i < g->cols; i++)
        if (show[i]) fprintf(out, "%s%-*s", first ? "" : "  ", i == last ? 0 : g->w[i], g->name[i]), first = 0;
    fputc('\n', out);
    first = 1;
    for (int i = 0; i < g->cols; i++) {
        if (!show[i]) continue;
        fprintf(out, "%s", first ? "" : "  ");
        first = 0;
        for (int j = 0; j < (i == last ? lw : g->w[i]); j++) fputc('-', out);
    }
    fputc('\n', out);
    for (int r = 0; r < g->rows; r++) {
        first = 1;
        for (int i = 0; i < g->cols; i++) {
            if (!show[i]) continue;
            const char *cell = vb_grid_at(g, r, i);
            int numeric = g->num[(size_t)r * (size_t)g->cols + (size_t)i];
            if ((int)strlen(cell) > lw && i == last)   /* the last column wraps at its width */
                fputs(first ? "" : "  ", out), put_column(out, cell, lw, width - lw);
            else if (i == last)
                fprintf(out, "%s%*s", first ? "" : "  ", numeric ? lw : 0, cell);
            else if ((int)strlen(cell) > g->w[i])   /* cut: the start of the text and "..." */
                fprintf(out, "%s%.*s...", first ? "" : "  ", g->w[i] - 3, cell);
            else
                fprintf(out, "%s%*s", first ? "" : "  ", numeric ? g->w[i] : i == last ? 0 : -g->w[i], cell);
            first = 0;
        }
        fputc('\n', out);
    }
}

typedef struct show_part_arg {
    FILE *out;
    const vb_grid *g;
    int n;
} show_part_arg;

static void show_part(const unsigned char *mask, void *arg) {
    show_part_arg *a = arg;
    if (a->n++) fputc('\n', a->out);
    print_part(a->out, a->g, mask);
}

static int table_text(sqlite3 *db, const report_table *t, FILE *out, int wide, vb_error *err) {
    sqlite3_stmt *st;
    char *made = t->sql ? NULL : made_sql(db, t);
    if (!t->sql && !made) return vb_error_set(err, "results", 1, "out of memory for the table %s", t->name);
    int rc = prepare(db, made ? made : t->sql, &st, err);
    free(made);
    if (rc) return VB_ERROR;
    vb_grid g;
    char notes[1024] = "", context[512] = "";
    if (vb_grid_read(&g, st, NULL) != 0) {
        vb_grid_free(&g);
        sqlite3_finalize(st);
        return vb_error_set(err, "results", 1, "out of memory reading the table %s", t->name);
    }
    sqlite3_finalize(st);
    if (g.rows == 0) {
        vb_grid_free(&g);
        return VB_OK;
    }
    if (!wide) vb_grid_fit(&g, notes, sizeof notes, context, sizeof context);
    grid_widths(&g, CELL_MAX);
    if (!wide) grid_cut(&g);
    char title[1200];
    snprintf(title, sizeof title, "%s%s%s", t->title, context[0] ? ": " : "", context);
    fputc('\n', out);
    put_wrapped(out, title, "", 2);
    /* Still too wide (many numbers): in parts of at most VB_SHOW_WIDTH columns, each beginning with the row's key
     * (the engine and what tells its rows apart: clients, ef_search, ...), one after the other. */
    show_part_arg pa = {out, &g, 0};
    if (wide) print_part(out, &g, g.keep);
    else vb_grid_parts(&g, g.w, 2, VB_SHOW_WIDTH + 2, show_part, &pa);
    if (notes[0]) {
        char note[1200];
        snprintf(note, sizeof note, "  (not shown: %s; --wide shows them)", notes);
        put_wrapped(out, note, "   ", 3);
    }
    vb_grid_free(&g);
    return VB_OK;
}

/* `show --windows`: every concurrency window, one row per repeat (the per-point tables summarise them). */
static const report_table window_tables[] = {
    {"concurrency_windows", "Concurrency windows (one row per repeat)",
     "SELECT engine, dataset, clients, repeat, target_rate, qps, mean_ms, p50_ms, p95_ms, p99_ms, p999_ms, in_flight, qps_x_p50, "
     "fraction_in_call, COALESCE(printf('%.3f', efficiency), efficiency_refused) AS efficiency, late_starts, "
     "lag_p99_ms, client_cpu_s, queries, warmup_queries, edge_queries, queries_sent, server_calls, "
     "server_ms_per_query, server_share, outside_share, server_cores_busy, server_cores FROM v_concurrency"},
    {"window_waits", "Wait profile per concurrency window (the server's sessions running the kNN statement, sampled every 50 ms)",
     "SELECT engine, dataset, clients, repeat, wait_class, top_event, samples, share FROM v_window_wait_classes "
     "ORDER BY engine, dataset, clients, repeat, share DESC"},
    {"capacity_windows", "Capacity search windows (every window of every attempt, in the order measured)",
     "SELECT engine, dataset, attempt, step, stage, targets, met, offered_rate, achieved_rate, p50_ms, p99_ms, "
     "p999_ms, errors, late_starts, in_flight, clients, ef_search, client_cores, host_pause_ms, discounted, "
     "client_limited, server_cores_busy, server_cores, server_ms_per_query, agents, shares, client_reason "
     "FROM v_capacity_windows"},
};

/* `show --recall` (and always in show --json): the distribution of per-query recall of every measured point. */
static const report_table recall_tables[] = {
    {"recall_distribution", "Recall distribution per measured point (per-query recall: nearest-rank percentiles, "
                            "shares of the queries at recall 0 and below 0.5)",
     /* short names (the table says what they are of), so that a point's row fits 120 columns */
     "SELECT engine, dataset, phase, point, recall, recall_min AS min, recall_p1 AS p1, recall_p10 AS p10, "
     "recall_p50 AS p50, zero_share, below_half_share AS below_half, queries FROM v_recall_dist"},
};

int vb_report_show(sqlite3 *db, FILE *out, int json, vb_error *err) {
    return vb_report_show_with(db, out, json, 0, err);
}

int vb_report_show_with(sqlite3 *db, FILE *out, int json, int windows, vb_error *err) {
    vb_show_opts o = {.json = json, .windows = windows};
    return vb_report_show_opts(db, out, &o, err);
}

static int cmp_worst(const void *a, const void *b, void *arg) {
    const float *r = arg;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (r[x] != r[y]) return r[x] < r[y] ? -1 : 1;
    return (x > y) - (x < y);
}

/* One row of `show --worst` as text cells (the JSON rows are built apart, typed). */
#define WORST_COLS 9
typedef struct worst_rows {
    char (*cell)[WORST_COLS][96];
    size_t n, cap;
} worst_rows;

static int worst_add(worst_rows *w, const char *const v[WORST_COLS], vb_error *err) {
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 64;
        void *grown = realloc(w->cell, cap * sizeof *w->cell);
        if (!grown) return vb_error_set(err, "results", 1, "out of memory for show --worst");
        w->cell = grown, w->cap = cap;
    }
    for (int i = 0; i < WORST_COLS; i++) snprintf(w->cell[w->n][i], sizeof w->cell[w->n][i], "%s", v[i]);
    w->n++;
    return VB_OK;
}

/* The rows aligned as table_text aligns a table: numbers (mean, rank, query, recall) to the right. Narrow enough for
 * 120 columns with names of the dev campaign's length (the last column holds "kept", "not kept" or a short note). */
static void worst_print(const worst_rows *w, FILE *out) {
    static const char *const head[WORST_COLS] = {"engine", "dataset", "phase", "point", "mean", "rank", "query",
                                                 "recall", "answers"};
    int width[WORST_COLS];
    for (int i = 0; i < WORST_COLS; i++) {
        width[i] = (int)strlen(head[i]);
        for (size_t r = 0; r < w->n; r++)
            if ((int)strlen(w->cell[r][i]) > width[i]) width[i] = (int)strlen(w->cell[r][i]);
    }
    for (int i = 0; i < WORST_COLS; i++)   /* the last column unpadded: no trailing blanks */
        fprintf(out, "%s%-*s", i ? "  " : "", i == WORST_COLS - 1 ? 0 : width[i], head[i]);
    fputc('\n', out);
    for (int i = 0; i < WORST_COLS; i++) {
        fputs(i ? "  " : "", out);
        for (int j = 0; j < width[i]; j++) fputc('-', out);
    }
    fputc('\n', out);
    for (size_t r = 0; r < w->n; r++) {
        for (int i = 0; i < WORST_COLS; i++)
            fprintf(out, "%s%*s", i ? "  " : "", i >= 4 && i <= 7 ? width[i] : i == WORST_COLS - 1 ? 0 : -width[i],
                    w->cell[r][i]);
        fputc('\n', out);
    }
}

/* `show --worst N`: per measured point, the n queries of lowest recall (ties: the lower query index first), read
 * from the per-query recall the agent scored (recall_dist.query_recall). A point without them gets one row that
 * says so; the answers column says whether the point kept its answers (the returned rows), so a reader knows
 * whether what a hard query got can be looked at too. Text, or into doc the JSON array worst_queries. */
static int worst_queries(sqlite3 *db, FILE *out, json_t *doc, long n, vb_error *err) {
    sqlite3_stmt *st;
    if (prepare(db, "SELECT v.engine, v.dataset, v.phase, v.point, v.recall, d.query_recall, v.answers "
                    "FROM v_recall_dist AS v JOIN recall_dist AS d ON d.result_key = v.result_key", &st, err))
        return VB_ERROR;
    json_t *rows = doc ? json_array() : NULL;
    worst_rows text = {0};
    int without_answers = 0, points = 0, rc = VB_OK;
    while (rc == VB_OK && sqlite3_step(st) == SQLITE_ROW) {
        const char *engine = (const char *)sqlite3_column_text(st, 0), *dataset = (const char *)sqlite3_column_text(st, 1),
                   *phase = (const char *)sqlite3_column_text(st, 2), *point = (const char *)sqlite3_column_text(st, 3);
        double mean = sqlite3_column_double(st, 4);
        const uint8_t *blob = sqlite3_column_blob(st, 5);
        size_t nq = (size_t)sqlite3_column_bytes(st, 5) / 4;
        const char *kept = sqlite3_column_int(st, 6) ? "kept" : "not kept";
        without_answers |= !sqlite3_column_int(st, 6);
        points++;
        float *r = malloc((nq ? nq : 1) * sizeof *r);
        uint32_t *idx = malloc((nq ? nq : 1) * sizeof *idx);
        if (!r || !idx) {
            free(r), free(idx);
            rc = vb_error_set(err, "results", 1, "out of memory for the recall of %zu queries", nq);
            break;
        }
        size_t m = 0;
        for (size_t i = 0; i < nq; i++) {   /* float32 little-endian, NaN: not answered */
            const uint8_t *p = blob + 4 * i;
            uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            memcpy(&r[i], &v, sizeof v);
            if (!isnan(r[i])) idx[m++] = (uint32_t)i;
        }
        qsort_r(idx, m, sizeof *idx, cmp_worst, r);
        char meanbuf[32], rank[24], query[24], rec[32];
        snprintf(meanbuf, sizeof meanbuf, "%.4f", mean);
        /* no per-query values (the agent keeps none over VB_WIRE_QUERY_RECALL_MAX queries), or none below 1: one row */
        const char *note = m == 0 ? "no per-query values" : r[idx[0]] >= 1.0f ? "all at recall 1" : NULL;
        if (note) {
            if (rows)
                json_array_append_new(rows, json_pack("{s:s, s:s, s:s, s:s, s:f, s:n, s:n, s:n, s:s, s:s}", "engine",
                                                      engine, "dataset", dataset, "phase", phase, "point", point,
                                                      "mean_recall", mean, "rank", "query", "recall", "answers", kept,
                                                      "note", note));
            else {
                const char *v[WORST_COLS] = {engine, dataset, phase, point, meanbuf, "-", "-", "-", note};
                rc = worst_add(&text, v, err);
            }
        }
        for (size_t j = 0; !note && j < m && (long)j < n && rc == VB_OK; j++) {
            if (rows) {
                json_array_append_new(rows, json_pack("{s:s, s:s, s:s, s:s, s:f, s:I, s:I, s:f, s:s}", "engine", engine,
                                                      "dataset", dataset, "phase", phase, "point", point, "mean_recall",
                                                      mean, "rank", (json_int_t)(j + 1), "query", (json_int_t)idx[j],
                                                      "recall", (double)r[idx[j]], "answers", kept));
                continue;
            }
            snprintf(rank, sizeof rank, "%zu", j + 1);
            snprintf(query, sizeof query, "%u", idx[j]);
            snprintf(rec, sizeof rec, "%.4f", (double)r[idx[j]]);
            const char *v[WORST_COLS] = {engine, dataset, phase, point, meanbuf, rank, query, rec, kept};
            rc = worst_add(&text, v, err);
        }
        free(r), free(idx);
    }
    sqlite3_finalize(st);
    if (rows) {
        if (rc == VB_OK) json_object_set_new(doc, "worst_queries", rows);
        else json_decref(rows);
        return rc;
    }
    if (rc == VB_OK) {
        fprintf(out, "\nHardest queries of each measured point (the %ld of lowest recall; query: its index in the query "
                     "set)\n", n);
        if (points == 0)
            fputs("no measured point has per-query recall (a database from an older vbench keeps the mean recall "
                  "only)\n", out);
        else
            worst_print(&text, out);
        if (without_answers)
            fputs("answers \"not kept\": the point kept no per-query answers (the rows each query returned), only each "
                  "query's recall.\nThe recall sweep keeps them unless the profile says `answers: false` (vbench export "
                  "--format annb writes them\nout); filtered, churn and streaming points and the sweep's windows of "
                  "several clients never do.\n", out);
    }
    free(text.cell);
    return rc;
}

int vb_report_show_opts(sqlite3 *db, FILE *out, const vb_show_opts *o, vb_error *err) {
    int json = o->json, windows = o->windows;
    size_t n = sizeof tables / sizeof tables[0], nw = windows ? sizeof window_tables / sizeof window_tables[0] : 0;
    size_t nr = json || o->recall ? sizeof recall_tables / sizeof recall_tables[0] : 0;
    json_t *doc = json ? json_object() : NULL;
    for (size_t i = 0; i < n + nw + nr; i++) {
        /* the windows come last, after the items not done; then the recall distribution */
        const report_table *t = i < n ? &tables[i] : i < n + nw ? &window_tables[i - n] : &recall_tables[i - n - nw];
        int rc = json ? table_json(db, t, doc, err) : table_text(db, t, out, o->wide, err);
        if (rc) {
            json_decref(doc);
            return VB_ERROR;
        }
    }
    if (o->worst > 0 && worst_queries(db, out, doc, o->worst, err)) {
        json_decref(doc);
        return VB_ERROR;
    }
    if (json) {
        int rc = json_dumpf(doc, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
        json_decref(doc);
        fputc('\n', out);
        if (rc != 0) return vb_error_set(err, "results", 1, "writing the JSON failed");
    }
    return VB_OK;
}

int vb_report_status(sqlite3 *db, const char *path, const vb_lock_holder *holder, FILE *out, vb_error *err) {
    sqlite3_stmt *st;
    if (prepare(db, "SELECT name, status, runs, created_at, updated_at, COALESCE(finished_at, '-') FROM campaign", &st, err))
        return VB_ERROR;
    if (sqlite3_step(st) == SQLITE_ROW) {
        /* The stored status says what the last coordinator wrote; the lock says whether one is alive. */
        const char *status = (const char *)sqlite3_column_text(st, 1);
        int running = strcmp(status, "running") == 0;
        char shown[600];
        if (holder->held)
            snprintf(shown, sizeof shown, "%s (coordinator %s on %s since %s)", running ? "running" : status,
                     holder->pid_text[0] ? holder->pid_text : "PID ?", holder->host, holder->since);
        else if (running)
            snprintf(shown, sizeof shown, "stopped without finishing (coordinator not running): vbench resume --out %s",
                     path);
        else
            snprintf(shown, sizeof shown, "%s", status);
        fprintf(out, "campaign %s: %s (coordinator runs: %d; started %s, updated %s, finished %s)\n",
                sqlite3_column_text(st, 0), shown, sqlite3_column_int(st, 2),
                sqlite3_column_text(st, 3), sqlite3_column_text(st, 4), sqlite3_column_text(st, 5));
    }
    sqlite3_finalize(st);
    if (prepare(db, "SELECT (SELECT COUNT(*) FROM plan), status, COUNT(*) FROM plan GROUP BY status ORDER BY status", &st, err))
        return VB_ERROR;
    fputs("items:", out);
    while (sqlite3_step(st) == SQLITE_ROW)
        fprintf(out, " %s %d/%d;", sqlite3_column_text(st, 1), sqlite3_column_int(st, 2), sqlite3_column_int(st, 0));
    fputc('\n', out);
    sqlite3_finalize(st);
    if (prepare(db, "SELECT key, agent, started_at FROM plan WHERE status = 'running' ORDER BY seq", &st, err))
        return VB_ERROR;
    while (sqlite3_step(st) == SQLITE_ROW)
        fprintf(out, "%s: %s on %s since %s\n", holder->held ? "running" : "was running when its coordinator stopped",
                sqlite3_column_text(st, 0), sqlite3_column_text(st, 1), sqlite3_column_text(st, 2));
    sqlite3_finalize(st);
    vb_status_eta_print(db, path, holder->held, out);   /* elapsed, ETA, last result, progress (issue 16) */
    if (table_text(db, &tables[sizeof tables / sizeof tables[0] - 1], out, 0, err)) return VB_ERROR;
    if (prepare(db, "SELECT at, level, COALESCE(item_key, ''), message FROM "
                    "(SELECT * FROM event ORDER BY id DESC LIMIT 5) ORDER BY id", &st, err))
        return VB_ERROR;
    int first = 1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (first) fputs("\nlast events:\n", out);
        first = 0;
        fprintf(out, "  %s %-5s %s %s\n", sqlite3_column_text(st, 0), sqlite3_column_text(st, 1),
                sqlite3_column_text(st, 2), sqlite3_column_text(st, 3));
    }
    sqlite3_finalize(st);
    return VB_OK;
}
