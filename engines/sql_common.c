/* The layer the SQL adapters share (see engines/sql_common.h for what and why). */
#include "engines/sql_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- identifiers ------------------------------------------------------------------------------------- */

int vb_sql_ident_check(const char *engine, const char *param, const char *value, size_t max_len,
                       vb_sql_ident_kind kind, vb_error *err) {
    const char *rule = kind == VB_SQL_IDENT_PLAIN ? "lower-case letters, digits and _, not starting with a digit"
                                                  : "letters, digits and _";
    int good = value[0] && strlen(value) <= max_len && !(kind == VB_SQL_IDENT_PLAIN && value[0] >= '0' && value[0] <= '9');
    for (const char *p = value; good && *p; p++)
        good = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' ||
               (kind == VB_SQL_IDENT_QUOTED && *p >= 'A' && *p <= 'Z');
    if (good) return VB_OK;
    return vb_error_set(err, "config", 1, "%s: parameter %s=\"%s\": use %s (at most %zu)", engine, param, value, rule,
                        max_len);
}

/* ---- the kNN statement cache --------------------------------------------------------------------------- */

void *vb_sql_knn_get(vb_sql_knn_cache *c, int filtered, int k, vb_sql_stmt_release release, void *ctx) {
    int i = filtered >= 0 && filtered < VB_FILTER_KINDS ? filtered : 1;
    if (c->stmt[i] && c->k[i] == k) return c->stmt[i];
    if (c->stmt[i] && release) release(ctx, c->stmt[i]);
    c->stmt[i] = NULL;
    c->k[i] = 0;
    return NULL;
}

void vb_sql_knn_put(vb_sql_knn_cache *c, int filtered, int k, void *stmt) {
    int i = filtered >= 0 && filtered < VB_FILTER_KINDS ? filtered : 1;
    c->stmt[i] = stmt;
    c->k[i] = stmt ? k : 0;
}

void vb_sql_knn_clear(vb_sql_knn_cache *c, vb_sql_stmt_release release, void *ctx) {
    for (int i = 0; i < VB_FILTER_KINDS; i++) {
        if (c->stmt[i] && release) release(ctx, c->stmt[i]);
        c->stmt[i] = NULL;
        c->k[i] = 0;
    }
}

/* ---- EXPLAIN ----------------------------------------------------------------------------------------- */

void vb_sql_plan_init(vb_sql_plan *p, char *buf, size_t len) {
    p->buf = len ? buf : NULL;
    p->len = p->buf ? len : 0;
    p->used = 0;
    if (p->buf) p->buf[0] = '\0';
}

void vb_sql_plan_add(vb_sql_plan *p, const char *fmt, ...) {
    if (!p->buf || p->used + 1 >= p->len) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(p->buf + p->used, p->len - p->used, fmt, ap);
    va_end(ap);
    if (w > 0) p->used = p->used + (size_t)w < p->len ? p->used + (size_t)w : p->len - 1;
}

float *vb_sql_ones(size_t dim) {
    float *v = malloc((dim ? dim : 1) * sizeof *v);
    for (size_t j = 0; v && j < dim; j++) v[j] = 1.0f;
    return v;
}

/* ---- buffers ----------------------------------------------------------------------------------------- */

int vb_sql_reserve(char **buf, size_t *cap, size_t want, const char *engine, vb_error *err) {
    if (want <= *cap) return VB_OK;
    size_t n = *cap ? *cap : 65536;
    while (n < want) n *= 2;
    char *b = realloc(*buf, n);
    if (!b) return vb_error_set(err, engine, 1, "%s: out of memory for a %zu-byte buffer", engine, n);
    *buf = b;
    *cap = n;
    return VB_OK;
}
