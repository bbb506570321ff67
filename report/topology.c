/* The per-node table of a topology (topology.h): the list of v_nodes columns it shows, in one place. */
#include "report/topology.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One column of the per-node table: shown when v_nodes has the column `needs`; expr selects it (named as it is unless
 * expr says AS). A new per-node fact is one line here (and its column in v_nodes). */
typedef struct node_col {
    const char *needs, *expr;
} node_col;

static const node_col node_cols[] = {
    {"dataset", "v.dataset"},
    {"after", "v.after AS reading"},   /* the reading shown: after the build, or after the last window */
    {"node", "v.node"},
    {"role", "v.role"},                /* primary, replica; router, shard */
    {"host", "v.host"},                /* the orchestrator host the node ran on (several hosts) */
    {"rows", "v.rows"},
    {"index_bytes", "v.index_bytes"},
    {"table_bytes", "v.table_bytes"},
    {"build_s", "v.build_s"},          /* the node's own index build, where the engine times one per node */
    {"searches", "v.searches"},        /* the server's own count of kNN statements since it started */
    {"searches", "(SELECT v.searches - p.searches FROM v_nodes AS p WHERE p.engine = v.engine AND p.dataset = v.dataset "
                 "AND p.node = v.node AND p.after = 'window' AND p.seq = (SELECT MAX(x.seq) FROM v_nodes AS x WHERE "
                 "x.engine = v.engine AND x.dataset = v.dataset AND x.node = v.node AND x.seq < v.seq)) "
                 "AS last_window_searches"},   /* how the last window's reads spread: since the window before it */
    {"lag_bytes", "v.lag_bytes"},
    {"lag_bytes", "(SELECT MAX(w.lag_bytes) FROM v_nodes AS w WHERE w.engine = v.engine AND w.dataset = v.dataset "
                  "AND w.node = v.node) AS max_lag_bytes"},
    {"lag_s", "v.lag_s"},              /* a lag in seconds, where the engine reports one */
    {"cpus", "v.cpus"},
    {"memory_max", "CAST(v.memory_max AS INTEGER) AS memory_max"},
    {"peak_bytes", "CAST(v.peak_bytes AS INTEGER) AS peak_bytes"},
    {"cpu_s", "CAST(v.cpu_s AS REAL) AS cpu_s"},        /* at the stop: the node's CPU seconds over its life */
    {"unit", "v.unit"},
};

/* Whether v_nodes has the column in db. */
static int has_column(sqlite3 *db, const char *name) {
    sqlite3_stmt *st;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info('v_nodes') WHERE name = ?1", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

char *vb_topology_nodes_sql(sqlite3 *const *dbs, size_t n, const char *lead) {
    size_t cap = 4096, len = 0;
    char *sql = malloc(cap);
    if (!sql) return NULL;
    len += (size_t)snprintf(sql, cap, "SELECT %s", lead ? lead : "v.engine");
    for (size_t c = 0; c < sizeof node_cols / sizeof node_cols[0]; c++) {
        int everywhere = 1;
        for (size_t i = 0; i < n && everywhere; i++) everywhere = has_column(dbs[i], node_cols[c].needs);
        if (!everywhere) continue;
        size_t need = len + strlen(node_cols[c].expr) + 3;
        if (need > cap) {
            char *grown = realloc(sql, cap = 2 * need);
            if (!grown) return free(sql), NULL;
            sql = grown;
        }
        len += (size_t)snprintf(sql + len, cap - len, ", %s", node_cols[c].expr);
    }
    static const char tail[] =
        " FROM v_nodes AS v WHERE v.after IN ('build', 'window') AND v.seq = (SELECT MAX(w.seq) FROM v_nodes AS w "
        "WHERE w.engine = v.engine AND w.dataset = v.dataset AND w.after IN ('build', 'window')) ORDER BY v.seq, v.node";
    if (len + sizeof tail > cap) {
        char *grown = realloc(sql, cap = len + sizeof tail);
        if (!grown) return free(sql), NULL;
        sql = grown;
    }
    memcpy(sql + len, tail, sizeof tail);
    return sql;
}
