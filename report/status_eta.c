/* Time and progress lines of `vbench status` (report/status_eta.h). */
#include "report/status_eta.h"

#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "util/clock.h"

void vb_status_progress_write(const char *work_dir, const char *item, const char *stage, uint64_t done,
                              uint64_t total, double rate, int force) {
    static uint64_t last_ns;
    uint64_t now = vb_now_ns();
    if (!force && now - last_ns < 1000000000ull) return;
    last_ns = now;
    char path[PATH_MAX], tmp[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/progress", work_dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return;   /* progress is a convenience: the campaign does not depend on it */
    fprintf(f, "item\t%s\nstage\t%s\ndone\t%llu\ntotal\t%llu\nrate\t%.1f\nat\t%lld\n", item, stage,
            (unsigned long long)done, (unsigned long long)total, rate, (long long)time(NULL));
    if (fclose(f) == 0) rename(tmp, path);
    else unlink(tmp);
}

static double num(sqlite3 *db, const char *sql) {
    sqlite3_stmt *q = NULL;
    double v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW &&
        sqlite3_column_type(q, 0) != SQLITE_NULL)
        v = sqlite3_column_double(q, 0);
    sqlite3_finalize(q);
    return v;
}

static char *text(sqlite3 *db, const char *sql) {
    sqlite3_stmt *q = NULL;
    char *v = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW &&
        sqlite3_column_text(q, 0))
        v = strdup((const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    return v;
}

static void print_progress(sqlite3 *db, const char *path, FILE *out) {
    char file[PATH_MAX + 16], l[1024], item[512] = "", stage[64] = "";
    unsigned long long done = 0, total = 0;
    double rate = 0;
    long long at = 0;
    snprintf(file, sizeof file, "%s.d/progress", path);
    FILE *f = fopen(file, "r");
    if (!f) return;
    while (fgets(l, sizeof l, f)) {
        l[strcspn(l, "\n")] = '\0';
        char *v = strchr(l, '\t');
        if (!v) continue;
        *v++ = '\0';
        if (!strcmp(l, "item")) snprintf(item, sizeof item, "%s", v);
        else if (!strcmp(l, "stage")) snprintf(stage, sizeof stage, "%s", v);
        else if (!strcmp(l, "done")) done = strtoull(v, NULL, 10);
        else if (!strcmp(l, "total")) total = strtoull(v, NULL, 10);
        else if (!strcmp(l, "rate")) rate = atof(v);
        else if (!strcmp(l, "at")) at = atoll(v);
    }
    fclose(f);
    sqlite3_stmt *q = NULL;
    int running = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM plan WHERE key = ? AND status = 'running'", -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_text(q, 1, item, -1, SQLITE_STATIC);
        running = sqlite3_step(q) == SQLITE_ROW;
    }
    sqlite3_finalize(q);
    if (!running) return;   /* the file is of an item that ended */
    fprintf(out, "progress: %s: %s", item, stage);
    if (total) fprintf(out, " %.1f%% (%llu/%llu)", 100.0 * (double)done / (double)total, done, total);
    if (rate > 0) fprintf(out, " %.0f/s", rate);
    if (rate > 0 && total > done) fprintf(out, ", item ETA %.0f s", (double)(total - done) / rate);
    fprintf(out, " (%lld s ago)\n", (long long)time(NULL) - at);
}

void vb_status_eta_print(sqlite3 *db, const char *path, int live, FILE *out) {
    char a[32], b[32], c[32];
    const char *end = live ? "julianday('now')" : "julianday(COALESCE(finished_at, updated_at))";
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT (%s - julianday(created_at)) * 86400 FROM campaign", end);
    double elapsed = num(db, sql);
    double run_started = num(db, "SELECT value FROM manifest WHERE key = 'estimate.run_started'");
    /* the latest row of any result kind's table (store.h vb_result_table) */
    char last_sql[2048];
    size_t used = (size_t)snprintf(last_sql, sizeof last_sql, "SELECT (julianday('now') - julianday(max(t))) * 86400 FROM (");
    for (size_t i = 0; vb_result_table(i) && used < sizeof last_sql; i++)
        used += (size_t)snprintf(last_sql + used, sizeof last_sql - used, "%sSELECT max(recorded_at) AS t FROM %s",
                                 i ? " UNION ALL " : "", vb_result_table(i));
    if (used < sizeof last_sql) snprintf(last_sql + used, sizeof last_sql - used, ")");
    double last = num(db, last_sql);
    if (elapsed >= 0) {
        fprintf(out, "time: elapsed %s", vb_duration_approx(elapsed, a, sizeof a));
        if (live && run_started > 0)
            fprintf(out, " (this coordinator run %s)", vb_duration_approx((double)time(NULL) - run_started, b, sizeof b));
        if (live && last >= 0) fprintf(out, "; last result %s ago", vb_duration_approx(last, c, sizeof c));
        fputc('\n', out);
    }
    double est_total = num(db, "SELECT value FROM manifest WHERE key = 'estimate.total_s'");
    double actual = num(db, "SELECT value FROM manifest WHERE key = 'estimate.actual_s'");
    if (!live && actual >= 0 && est_total > 0) {
        fprintf(out, "estimate: %s, actual %s (actual / estimate %.2f)\n", vb_duration_approx(est_total, a, sizeof a),
                vb_duration_approx(actual, b, sizeof b), actual / est_total);
        return;
    }
    char *items = text(db, "SELECT value FROM manifest WHERE key = 'estimate.items'");
    json_t *est = items ? json_loads(items, 0, NULL) : NULL;
    free(items);
    if (!est) return;
    /* items done in this run against their estimate: the ratio the rest is scaled by */
    sqlite3_stmt *q = NULL;
    double est_done = 0, took = 0, remaining = 0;
    if (sqlite3_prepare_v2(db, "SELECT key, status, (julianday(COALESCE(finished_at, 'now')) - julianday(started_at)) * 86400"
                               " FROM plan", -1, &q, NULL) == SQLITE_OK)
        while (sqlite3_step(q) == SQLITE_ROW) {
            json_t *v = json_object_get(est, (const char *)sqlite3_column_text(q, 0));
            if (!v) continue;
            double e = json_number_value(v), t = sqlite3_column_double(q, 2);
            const char *st = (const char *)sqlite3_column_text(q, 1);
            if (strcmp(st, "done") == 0) est_done += e, took += t;
            else if (strcmp(st, "running") == 0) remaining += e > t ? e - t : 0;
            else if (strcmp(st, "pending") == 0 || strcmp(st, "interrupted") == 0) remaining += e;
        }
    sqlite3_finalize(q);
    json_decref(est);
    double ratio = est_done > 1 ? took / est_done : 1;
    if (ratio < 0.2) ratio = 0.2;
    if (ratio > 5) ratio = 5;
    if (live) {
        fprintf(out, "ETA: %s left", vb_duration_approx(remaining * ratio, a, sizeof a));
        if (est_done > 1) fprintf(out, " (items so far took %.2f x their estimate)", took / est_done);
        fprintf(out, "; estimate at the start of this run %s\n", vb_duration_approx(est_total, b, sizeof b));
        print_progress(db, path, out);
    }
}
