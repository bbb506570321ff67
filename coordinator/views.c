/* Installing the result views: each "CREATE VIEW v_name" statement of views.sql is run as is (after dropping the
 * old view) or as "CREATE TEMP VIEW v_name". Statements are delimited with sqlite3_complete(). */
#include "coordinator/views.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/embedded.h"

int vb_views_install(sqlite3 *db, int temp, vb_error *err) {
    const vb_embedded_file *f = vb_embedded_find("results.db/views.sql");
    if (!f) return vb_error_set(err, "results", 1, "the results views are missing from this binary");
    const char *kw = "CREATE VIEW ";
    const char *p = strstr(f->data, kw);
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
            return vb_error_set(err, "results", 2, "views.sql: unterminated statement");
        }
        const char *name = stmt + strlen(kw);
        size_t nlen = strcspn(name, " \n");
        size_t len = strlen(stmt);
        char *sql = malloc(len + 64 + nlen);
        int n = 0;
        if (!temp) n = sprintf(sql, "DROP VIEW IF EXISTS %.*s; ", (int)nlen, name);
        sprintf(sql + n, "CREATE %sVIEW %s", temp ? "TEMP " : "", name);
        char *msg = NULL;
        int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
        free(sql);
        if (rc != SQLITE_OK) {
            vb_error_set(err, "results", 2, "installing view %.*s: %s", (int)nlen, name, msg ? msg : "error");
            sqlite3_free(msg);
            free(stmt);
            return VB_ERROR;
        }
        free(stmt);
        p = strstr(end + 1, kw);
    }
    return VB_OK;
}
