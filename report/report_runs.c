/* What the parts of a report share about its runs (report_runs.h): series labels and the comparison of runs. */
#include "report/report_runs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The label expression for TABLE: every label column it has, joined with '/'. A result table's config is the
 * configuration's label and its engine the adapter: the label is COALESCE(config, engine), the views' engine. */
static void label_expr(sqlite3 *db, const char *table, char *out, size_t len) {
    static const char *const cols[] = VB_REPORT_LABEL_COLUMNS;
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT * FROM %s LIMIT 0", table);
    sqlite3_stmt *st;
    size_t o = 0;
    out[0] = '\0';
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        int n = sqlite3_column_count(st), has_config = 0;
        for (int i = 0; i < n; i++) has_config |= strcmp(sqlite3_column_name(st, i), "config") == 0;
        for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
            for (int i = 0; i < n; i++) {
                if (strcmp(sqlite3_column_name(st, i), cols[c]) != 0) continue;
                if (has_config && strcmp(cols[c], "config") == 0) continue;   /* in the engine's place */
                const char *col = has_config && strcmp(cols[c], "engine") == 0 ? "COALESCE(config, engine)" : cols[c];
                o += (size_t)snprintf(out + o, len - o, "%s%s", o ? " || '/' || " : "", col);
            }
        sqlite3_finalize(st);
    }
    if (!out[0]) snprintf(out, len, "'-'");
}

char *vb_report_sql(sqlite3 *db, const char *table, const char *sql) {
    char label[256];
    label_expr(db, table, label, sizeof label);
    size_t cap = strlen(sql) * 2 + 1024, o = 0;
    char *out = malloc(cap);
    if (!out) abort();
    for (const char *p = sql; *p;) {
        if (strncmp(p, "{label}", 7) == 0) {
            if (o + strlen(label) + 3 >= cap) break;
            o += (size_t)snprintf(out + o, cap - o, "(%s)", label);
            p += 7;
        } else if (o + 1 < cap) {
            out[o++] = *p++;
        } else {
            break;
        }
    }
    out[o] = '\0';
    return out;
}

void vb_report_series(const vb_report_set *rs, size_t run, const char *label, char *out, size_t len) {
    if (rs->n > 1) snprintf(out, len, "%s: %s", rs->runs[run].name, label ? label : "-");
    else snprintf(out, len, "%s", label ? label : "-");
}

/* One fact of a run that must match across runs, as "key=value; key=value" sorted by key. */
static void facts(sqlite3 *db, const char *sql, char *out, size_t len) {
    sqlite3_stmt *st;
    size_t o = 0;
    out[0] = '\0';
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return;
    while (sqlite3_step(st) == SQLITE_ROW && o < len)
        o += (size_t)snprintf(out + o, len - o, "%s%s=%s", o ? "; " : "", sqlite3_column_text(st, 0),
                              sqlite3_column_text(st, 1) ? (const char *)sqlite3_column_text(st, 1) : "(none)");
    sqlite3_finalize(st);
}

void vb_report_compare(vb_report_set *rs) {
    static const struct {
        const char *what, *sql;
    } checks[] = {
        {"dataset content hash", "SELECT replace(replace(key, 'dataset.', ''), '.content_hash', ''), value "
                                 "FROM manifest WHERE key LIKE 'dataset.%.content_hash' ORDER BY key"},
        {"k", "SELECT 'k', value ->> '$.k' FROM manifest WHERE key = 'profile.resolved'"},
        {"budget", "SELECT 'resources', value ->> '$.resources' FROM manifest WHERE key = 'profile.resolved'"},
        {"engine versions", "SELECT replace(replace(key, 'engine.', ''), '.version', ''), value FROM manifest "
                            "WHERE key LIKE 'engine.%.version' ORDER BY key"},
    };
    size_t o = 0, w = 0;
    rs->mismatch[0] = rs->mismatch_what[0] = '\0';
    for (size_t c = 0; c < sizeof checks / sizeof checks[0]; c++) {
        char first[2048], other[2048];
        facts(rs->runs[0].db, checks[c].sql, first, sizeof first);
        size_t before = o;
        for (size_t r = 1; r < rs->n; r++) {
            facts(rs->runs[r].db, checks[c].sql, other, sizeof other);
            if (strcmp(first, other) != 0 && o < sizeof rs->mismatch)
                o += (size_t)snprintf(rs->mismatch + o, sizeof rs->mismatch - o, "%s%s differs: %s has %s, %s has %s",
                                      o ? "; " : "", checks[c].what, rs->runs[0].name, first[0] ? first : "(none)",
                                      rs->runs[r].name, other[0] ? other : "(none)");
        }
        if (o != before && w < sizeof rs->mismatch_what)
            w += (size_t)snprintf(rs->mismatch_what + w, sizeof rs->mismatch_what - w, "%s%s", w ? ", " : "",
                                  checks[c].what);
    }
}
