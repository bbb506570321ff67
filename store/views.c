/* Installing the result views: each "CREATE VIEW v_name" statement of views.sql is run as is (after dropping the
 * old view) or as "CREATE TEMP VIEW v_name". Statements are delimited with sqlite3_complete().
 *
 * A "CREATE TEMP VIEW" statement of views.sql is always installed as a TEMP view, on every connection: it uses
 * vbench's own SQL functions (registered here first: vb_median_ci_lo / vb_median_ci_hi, the bootstrap interval
 * of metrics/bootstrap.h), which the sqlite3 shell has not got, so it is never stored in the file, where a
 * user's own query of a view would then fail. */
#include "store/views.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/bootstrap.h"
#include "util/embedded.h"

/* The aggregate's state: the non-NULL values seen so far. */
typedef struct ci_acc {
    double *v;
    size_t n, cap;
} ci_acc;

static void ci_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return;
    ci_acc *a = sqlite3_aggregate_context(ctx, sizeof *a);
    if (!a) return sqlite3_result_error_nomem(ctx);
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 8;
        double *v = sqlite3_realloc64(a->v, cap * sizeof *v);
        if (!v) return sqlite3_result_error_nomem(ctx);
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = sqlite3_value_double(argv[0]);
}

/* user data: NULL for the lower bound, non-NULL for the upper; NULL below VB_BOOTSTRAP_MIN_N values */
static void ci_final(sqlite3_context *ctx) {
    ci_acc *a = sqlite3_aggregate_context(ctx, 0);
    double lo, hi;
    if (a && vb_bootstrap_median_ci(a->v, a->n, &lo, &hi))
        sqlite3_result_double(ctx, sqlite3_user_data(ctx) ? hi : lo);
    else
        sqlite3_result_null(ctx);
    if (a) sqlite3_free(a->v);
}

int vb_views_functions(sqlite3 *db, vb_error *err) {
    static int upper = 1;
    if (sqlite3_create_function(db, "vb_median_ci_lo", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, NULL, ci_step,
                                ci_final) != SQLITE_OK ||
        sqlite3_create_function(db, "vb_median_ci_hi", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, &upper, NULL,
                                ci_step, ci_final) != SQLITE_OK)
        return vb_error_set(err, "results", sqlite3_extended_errcode(db), "registering the SQL functions of the views: %s", sqlite3_errmsg(db));
    return VB_OK;
}

/* The next "CREATE VIEW " or "CREATE TEMP VIEW " from p, or NULL; *always_temp says which. */
static const char *next_view(const char *p, int *always_temp, size_t *kw_len) {
    const char *v = strstr(p, "CREATE VIEW "), *t = strstr(p, "CREATE TEMP VIEW ");
    *always_temp = t && (!v || t < v);
    *kw_len = *always_temp ? strlen("CREATE TEMP VIEW ") : strlen("CREATE VIEW ");
    return *always_temp ? t : v;
}

int vb_views_install(sqlite3 *db, int temp, vb_error *err) {
    const vb_embedded_file *f = vb_embedded_find("store/views.sql");
    if (!f) return vb_error_set(err, "results", 0, "the results views are missing from this binary");
    if (vb_views_functions(db, err)) return VB_ERROR;
    int always_temp;
    size_t kw_len;
    const char *p = next_view(f->data, &always_temp, &kw_len);
    while (p) {
        /* The statement ends at the first ';' where SQLite sees a complete statement (comments and strings
         * may hold semicolons of their own). */
        const char *end = p;
        char *stmt = NULL;
        while ((end = strchr(end, ';'))) {
            size_t n = (size_t)(end - p) + 1;
            stmt = realloc(stmt, n + 1);
            memcpy(stmt, p, n);
            stmt[n] = '\0';
            if (sqlite3_complete(stmt)) break;
            end++;
        }
        if (!end) {
            free(stmt);
            return vb_error_set(err, "results", 0, "views.sql: unterminated statement");
        }
        const char *name = stmt + kw_len;
        size_t nlen = strcspn(name, " \n");
        size_t len = strlen(stmt);
        char *sql = malloc(len + 64 + 2 * nlen);
        /* an always-TEMP view: a file written by an older vbench may hold one of that name, shadowed here */
        int n = sprintf(sql, "DROP VIEW IF EXISTS %s%.*s; ", temp || always_temp ? "temp." : "", (int)nlen, name);
        sprintf(sql + n, "CREATE %sVIEW %s", temp || always_temp ? "TEMP " : "", name);
        char *msg = NULL;
        int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
        free(sql);
        if (rc != SQLITE_OK) {
            vb_error_set(err, "results", rc, "installing view %.*s: %s", (int)nlen, name, msg ? msg : "error");
            sqlite3_free(msg);
            free(stmt);
            return VB_ERROR;
        }
        free(stmt);
        p = next_view(end + 1, &always_temp, &kw_len);
    }
    return VB_OK;
}
