/* Installing the result views: each "CREATE VIEW v_name" statement of views.sql is run as is (after dropping the
 * old view) or as "CREATE TEMP VIEW v_name". */
#include "coordinator/views.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/embedded.h"

int vb_views_install(sqlite3 *db, int temp, vb_error *err) {
    const vb_embedded_file *f = vb_embedded_find("results.db/views.sql");
    if (!f) return vb_error_set(err, "results", 1, "the results views are missing from this binary");
    const char *p = f->data;
    const char *kw = "CREATE VIEW ";
    while ((p = strstr(p, kw))) {
        const char *end = strstr(p, ";");
        if (!end) break;
        const char *name = p + strlen(kw);
        size_t nlen = strcspn(name, " \n");
        char *sql = malloc((size_t)(end - p) + 64 + nlen);
        int n = 0;
        if (!temp) n = sprintf(sql, "DROP VIEW IF EXISTS %.*s; ", (int)nlen, name);
        sprintf(sql + n, "CREATE %sVIEW %.*s;", temp ? "TEMP " : "", (int)(end - name), name);
        char *msg = NULL;
        int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
        free(sql);
        if (rc != SQLITE_OK) {
            vb_error_set(err, "results", 2, "installing view %.*s: %s", (int)nlen, name, msg ? msg : "error");
            sqlite3_free(msg);
            return VB_ERROR;
        }
        p = end + 1;
    }
    return VB_OK;
}
