/* SQL rows to jansson values (json_rows.h). */
#include "report/json_rows.h"

#include <math.h>

json_t *vb_json_row(sqlite3_stmt *st) {
    json_t *o = json_object();
    int cols = sqlite3_column_count(st);
    for (int i = 0; i < cols; i++) {
        json_t *v;
        switch (sqlite3_column_type(st, i)) {
        case SQLITE_NULL: v = json_null(); break;
        case SQLITE_INTEGER: v = json_integer((json_int_t)sqlite3_column_int64(st, i)); break;
        case SQLITE_FLOAT: {
            double d = sqlite3_column_double(st, i);
            v = isfinite(d) ? json_real(d) : json_null(); /* JSON has no NaN or infinity */
            break;
        }
        case SQLITE_BLOB: v = json_integer(sqlite3_column_bytes(st, i)); break; /* blobs: their size only */
        default: v = json_stringn((const char *)sqlite3_column_text(st, i), (size_t)sqlite3_column_bytes(st, i));
        }
        /* text that is not UTF-8 cannot be a JSON string: kept as null rather than dropping the row */
        json_object_set_new(o, sqlite3_column_name(st, i), v ? v : json_null());
    }
    return o;
}

json_t *vb_json_rows(sqlite3 *db, const char *sql, const char **why) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        if (why) *why = sqlite3_errmsg(db);
        return NULL;
    }
    json_t *a = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) json_array_append_new(a, vb_json_row(st));
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        if (why) *why = sqlite3_errmsg(db);
        json_decref(a);
        return NULL;
    }
    return a;
}
