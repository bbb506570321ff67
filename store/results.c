/* Committing results (vb_store_commit_result): one transaction per result, with the item it completes. A result
 * goes through its kind's entry in store_result_kinds (result_kinds.c): its checks, its row (the INSERT made from
 * the kind's column list, one named parameter per column), the rows beside it; then what every kind shares (the
 * recall distribution, the server's command counts, the item done). */
#include "store/store_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/histogram.h"

int store_latency_decode(vb_store *s, const Vbench__Histogram *lat, const char *result_key, store_latency *out,
                         vb_error *err) {
    memset(out, 0, sizeof *out);
    out->empty = 1;
    if (lat && lat->n_idx != lat->n_counts)
        return store_poison(s, err, "result %s: latency histogram has %zu buckets but %zu counts",
                            result_key, lat->n_idx, lat->n_counts);
    char why[256];
    if (lat && vb_histogram_decode_check(lat->idx, lat->counts, lat->n_idx, lat->out_of_range, lat->min_ns,
                                         lat->max_ns, why, sizeof why) != 0)
        return store_poison(s, err, "result %s: latency histogram: %s", result_key, why);
    vb_histogram *h = vb_histogram_new();
    if (!h) return store_fail(s, err, VB_STORE_RETRY, ENOMEM, "%s: out of memory", s->path);
    if (lat && vb_histogram_decode_add(h, lat->idx, lat->counts, lat->n_idx) != 0) {
        vb_histogram_destroy(&h);
        return store_poison(s, err, "result %s: latency histogram has a bucket out of range", result_key);
    }
    if (lat) vb_histogram_decode_summary(h, lat->out_of_range, lat->min_ns, lat->max_ns);
    out->empty = vb_histogram_count(h) == 0;
    if (!out->empty) {
        out->mean = vb_histogram_mean(h) / 1e6;
        out->p50 = (double)vb_histogram_value_at_percentile(h, 50) / 1e6;
        out->p95 = (double)vb_histogram_value_at_percentile(h, 95) / 1e6;
        out->p99 = (double)vb_histogram_value_at_percentile(h, 99) / 1e6;
        out->p999 = (double)vb_histogram_value_at_percentile(h, 99.9) / 1e6;
        out->max = (double)vb_histogram_max(h) / 1e6;
    }
    vb_histogram_destroy(&h);
    size_t nb = lat ? lat->n_idx : 0;
    out->blob = malloc(nb * 12 + 1);
    out->blob_len = nb * 12;
    for (size_t i = 0; i < nb; i++) {
        uint32_t ix = lat->idx[i];
        uint64_t c = lat->counts[i];
        for (int b = 0; b < 4; b++) out->blob[i * 12 + b] = (unsigned char)(ix >> (8 * b));
        for (int b = 0; b < 8; b++) out->blob[i * 12 + 4 + b] = (unsigned char)(c >> (8 * b));
    }
    return VB_OK;
}

/* A result's Measurement, or an empty one when the peer sent none (every field reads 0 / empty, as a field a
 * peer does not send does). */
static const Vbench__Measurement *measure_of(const Vbench__Measurement *m) {
    static const Vbench__Measurement none = VBENCH__MEASUREMENT__INIT;
    return m ? m : &none;
}

static void bind_value(sqlite3_stmt *st, int i, store_value v) {
    switch (v.type) {
    case STORE_INT: sqlite3_bind_int64(st, i, v.i); break;
    case STORE_REAL: sqlite3_bind_double(st, i, v.d); break;
    case STORE_TEXT: sqlite3_bind_text(st, i, v.p, -1, SQLITE_TRANSIENT); break;
    case STORE_BLOB: sqlite3_bind_blob64(st, i, v.p ? v.p : "", (sqlite3_uint64)v.n, SQLITE_TRANSIENT); break;
    default: sqlite3_bind_null(st, i);
    }
}

/* Appends to buf; 1 when it did not fit. */
static int append(char *buf, size_t len, size_t *used, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int append(char *buf, size_t len, size_t *used, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = *used < len ? vsnprintf(buf + *used, len - *used, fmt, ap) : -1;
    va_end(ap);
    if (n < 0 || *used + (size_t)n >= len) return 1;
    *used += (size_t)n;
    return 0;
}

/* The kind's row: INSERT INTO table (c1, c2, ...) VALUES (:c1, :c2, ...), made from its column list, each value
 * bound to its column's own named parameter; a column read from the plan item is a subquery on :item_key. */
static int insert_row(vb_store *s, const vb_result_kind *k, const store_row *w, vb_error *err) {
    char cols[4096], vals[8192];
    size_t nc = 0, nv = 0;
    int over = append(cols, sizeof cols, &nc, "INSERT INTO %s (", k->table) | append(vals, sizeof vals, &nv, ") VALUES (");
    for (size_t i = 0; i < k->n_columns; i++) {
        const store_column *c = &k->columns[i];
        over |= append(cols, sizeof cols, &nc, "%s%s", i ? ", " : "", c->name);
        if (c->plan) over |= append(vals, sizeof vals, &nv, "%s(SELECT %s FROM plan WHERE key = :item_key)",
                                    i ? ", " : "", c->plan);
        else over |= append(vals, sizeof vals, &nv, "%s:%s", i ? ", " : "", c->name);
    }
    over |= append(vals, sizeof vals, &nv, ")") | append(cols, sizeof cols, &nc, "%s", vals);
    if (over) return store_fail(s, err, VB_STORE_RETRY, 0, "%s: the INSERT of %s is longer than %zu bytes", s->path,
                                k->table, sizeof cols);
    sqlite3_stmt *st = store_prepare(s, cols, err);
    if (!st) return s->last;
    for (size_t i = 0; i < k->n_columns; i++) {
        const store_column *c = &k->columns[i];
        if (!c->get) continue;
        char name[80];
        snprintf(name, sizeof name, ":%s", c->name);
        bind_value(st, sqlite3_bind_parameter_index(st, name), c->get(w));
    }
    char what[160];
    snprintf(what, sizeof what, "recording %s", k->what);
    return store_run(s, st, err, what);
}

/* Whether a result of that key is stored, in the table of any kind. */
static int result_known(vb_store *s, const char *key, int *known, vb_error *err) {
    char sql[4096];
    size_t used = 0;
    int over = 0;
    for (size_t i = 0; i < store_n_result_kinds; i++)
        over |= append(sql, sizeof sql, &used, "%sSELECT 1 FROM %s WHERE result_key = ?1", i ? " UNION ALL " : "",
                       store_result_kinds[i].table);
    if (over) return store_fail(s, err, VB_STORE_RETRY, 0, "%s: the result key lookup is too long", s->path);
    sqlite3_stmt *st = store_prepare(s, sql, err);
    if (!st) return s->last;
    store_bind_text(st, 1, key);
    int rc = sqlite3_step(st);
    *known = rc == SQLITE_ROW;
    vb_store_class cls = VB_STORE_OK;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) cls = store_db_error(s, err, "looking up a result key");
    sqlite3_finalize(st);
    return cls;
}

/* The one place a Measurement's recall distribution becomes a row (table recall_dist), for every kind of result.
 * The per-query values are kept as sent when their length is whole floats; a blob of another length is a bad
 * result and poisons it. */
static int insert_recall_dist(vb_store *s, const Vbench__Result *r, const Vbench__Measurement *m, vb_error *err) {
    if (m->query_recall.len % 4 != 0)
        return store_poison(s, err, "result %s: query_recall of %zu bytes is not whole float32 values", r->result_key,
                      m->query_recall.len);
    sqlite3_stmt *st = store_prepare(s,
        "INSERT INTO recall_dist (result_key, item_key, queries, recall_min, recall_p1, recall_p10, recall_p50, "
        "zero_share, below_half_share, query_recall) VALUES (?,?,?,?,?,?,?,?,?,?)", err);
    if (!st) return s->last;
    store_bind_text(st, 1, r->result_key);
    store_bind_text(st, 2, r->item_key);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)m->recall_queries);
    sqlite3_bind_double(st, 4, m->recall_min);
    sqlite3_bind_double(st, 5, m->recall_p1);
    sqlite3_bind_double(st, 6, m->recall_p10);
    sqlite3_bind_double(st, 7, m->recall_p50);
    sqlite3_bind_double(st, 8, m->recall_zero_share);
    sqlite3_bind_double(st, 9, m->recall_below_half_share);
    if (m->query_recall.len > 0) sqlite3_bind_blob(st, 10, m->query_recall.data, (int)m->query_recall.len, SQLITE_STATIC);
    else sqlite3_bind_null(st, 10);
    return store_run(s, st, err, "recording a recall distribution");
}

static void row_release(store_row *w) {
    free(w->lat.blob);
    free(w->lat2.blob);
    free(w->lat3.blob);
    free(w->text);
    free(w->cold_failed);
    free(w->warm_failed);
    free(w->rolling);
}

int vb_store_commit_result(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                           const char *agent, int *duplicate, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    *duplicate = 0;
    const vb_result_kind *k = vb_result_kind_of(r);
    if (!k) return store_poison(s, err, "result %s has no body (nothing to record)", r->result_key);
    if (store_exec(s, "BEGIN IMMEDIATE", err)) return s->last;
    int known = 0;
    if (result_known(s, r->result_key, &known, err)) {
        store_rollback(s);
        return s->last;
    }
    if (known) {
        *duplicate = 1;
        return store_commit(s, err);
    }
    const Vbench__Measurement *m = k->measurement ? k->measurement(r) : NULL;
    store_row w = {.r = r, .engine = engine, .dataset = dataset, .agent = agent, .now = now, .m = measure_of(m)};
    int rc = k->prepare ? k->prepare(s, &w, err) : VB_STORE_OK;
    if (rc == VB_STORE_OK) rc = insert_row(s, k, &w, err);
    if (rc == VB_STORE_OK && k->after) rc = k->after(s, &w, err);
    /* the recall distribution of a Measurement that scored it (an older agent sends none) */
    if (rc == VB_STORE_OK && m && m->recall_queries > 0) rc = insert_recall_dist(s, r, m, err);
    for (size_t i = 0; rc == VB_STORE_OK && i < r->n_server_counts; i++) {
        const Vbench__ServerCount *sc = r->server_counts[i];
        sqlite3_stmt *st = store_prepare(s, "INSERT OR REPLACE INTO server_count (result_key, item_key, command, "
                                            "sent, server) VALUES (?, ?, ?, ?, ?)", err);
        if (!st) rc = s->last;
        else {
            store_bind_text(st, 1, r->result_key);
            store_bind_text(st, 2, r->item_key);
            store_bind_text(st, 3, sc->command);
            sqlite3_bind_int64(st, 4, (sqlite3_int64)sc->sent);
            if (sc->server >= 0) sqlite3_bind_int64(st, 5, sc->server);
            else sqlite3_bind_null(st, 5);
            rc = store_run(s, st, err, "recording the server's command counts");
        }
    }
    if (rc == VB_STORE_OK && r->completes_item) {
        sqlite3_stmt *st = store_prepare(s, "UPDATE plan SET status = 'done', finished_at = ?, error = NULL WHERE "
                                            "key = ?", err);
        if (!st) rc = s->last;
        else {
            store_bind_text(st, 1, now);
            store_bind_text(st, 2, r->item_key);
            rc = store_run(s, st, err, "marking an item done");
        }
    }
    row_release(&w);
    if (rc != VB_STORE_OK) {
        store_rollback(s);
        return rc;
    }
    return store_commit(s, err);
}
