/* The capacity phase's read of the results store (store/capacity.h): the operating point from the committed recall
 * sweep, read by the coordinator when it assigns a capacity item. */
#include "store/capacity.h"

#include <string.h>

#include "store/store_int.h"

int vb_store_capacity_op(vb_store *s, const char *config, const char *dataset, double recall_target,
                         vb_capacity_op *out, vb_error *err) {
    memset(out, 0, sizeof *out);
    out->best_recall = -1;
    /* the one-client sweep's points (a sweep at several client counts scores windows, not the query set once) */
    sqlite3_stmt *st = store_prepare(s, "SELECT ef_search, recall FROM v_recall_sweep WHERE engine = ?1 AND "
                                        "dataset = ?2 AND COALESCE(clients, 1) = 1 AND recall IS NOT NULL "
                                        "ORDER BY ef_search", err);
    if (!st) return s->last;
    store_bind_text(st, 1, config);
    store_bind_text(st, 2, dataset);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        long ef = (long)sqlite3_column_int64(st, 0);
        double recall = sqlite3_column_double(st, 1);
        out->points++;
        if (recall > out->best_recall) out->best_recall = recall, out->best_ef = ef;
        if (!out->ef_search && recall >= recall_target) out->ef_search = ef, out->recall = recall;
    }
    vb_store_class cls = VB_STORE_OK;
    if (rc != SQLITE_DONE) cls = store_db_error(s, err, "reading the recall sweep for the capacity phase");
    sqlite3_finalize(st);
    return cls;
}
