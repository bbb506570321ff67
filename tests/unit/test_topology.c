/* The topology read side (issue 39) over a real results database: v_topology reads each configuration's shards,
 * replicas, node count and server from the resolved profile (an entry's first configuration runs on the server named
 * after the entry, so `replicas: [1, 2]` has servers pgvector and pgvector[replicas=2]), and leaves out entries without
 * a topology key; v_nodes finds the orchestrator's facts of a node on that server; the per-node SQL of
 * report/topology.c selects the columns v_nodes has and gains a column v_nodes gains (a lag in seconds) with nothing else
 * changed, reading the configuration's last reading after the build or a window. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/topology.h"
#include "store/store.h"
#include "tests/tap.h"

static int exec(sqlite3 *db, const char *sql) {
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) printf("#   %s\n", msg ? msg : "?");
    sqlite3_free(msg);
    return rc;
}

/* The first column of the first row of sql as text ("" none, "NULL" a NULL) into buf. */
static const char *one(sqlite3 *db, const char *sql, char *buf, size_t len) {
    sqlite3_stmt *st = NULL;
    snprintf(buf, len, "%s", "");
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(buf, len, "error: %s", sqlite3_errmsg(db));
        return buf;
    }
    if (sqlite3_step(st) == SQLITE_ROW)
        snprintf(buf, len, "%s", sqlite3_column_type(st, 0) == SQLITE_NULL ? "NULL" : (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return buf;
}

int main(void) {
    char dir[] = "/tmp/vbench-topology.XXXXXX", path[128], b[4096];
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/r.sqlite", dir);
    vb_error err = {0};
    vb_store *s = NULL;
    if (!ok(vb_store_open(path, 1, &s, &err) == VB_OK, "a new results database (%s)", err.message)) return done_testing();
    sqlite3 *db = vb_store_db(s);
    /* the resolved profile of `replicas: [1, 2]` on pgvector, `shards: 3` on a second entry, and an engine without */
    exec(db, "INSERT INTO manifest VALUES ('profile.resolved', '{\"engines\": ["
             "{\"name\": \"pgvector[replicas=1]\", \"engine\": \"pgvector\", \"entry\": \"pgvector\", "
             "\"params\": {\"recipe\": \"pgvector\", \"replicas\": \"1\"}}, "
             "{\"name\": \"pgvector[replicas=2]\", \"engine\": \"pgvector\", \"entry\": \"pgvector\", "
             "\"params\": {\"recipe\": \"pgvector\", \"replicas\": \"2\"}}, "
             "{\"name\": \"sharded\", \"params\": {\"recipe\": \"pgvector\", \"shards\": \"3\"}}, "
             "{\"name\": \"hnswlib\", \"params\": {\"m\": \"8\"}}]}', 'now'), "
             "('server.pgvector.unit', 'u0', 'now'), ('server.pgvector.node.1.unit', 'u1', 'now'), "
             "('server.pgvector.node.1.unit.cpu_affinity', '1', 'now'), "
             "('server.pgvector.at_stop.node.1.peak_cgroup_bytes', '5000', 'now')");
    is_str(one(db, "SELECT group_concat(engine || ':' || nodes || ':' || kind || ':' || server, ' ') FROM v_topology",
               b, sizeof b),
           "pgvector[replicas=1]:2:replicas:pgvector pgvector[replicas=2]:3:replicas:pgvector[replicas=2] "
           "sharded:4:shards:sharded",
           "v_topology: nodes (a primary and its replicas; a router and its shards), kind, and the server: the entry's "
           "name for its first configuration, its own label for the next; an engine without shards or replicas absent");
    /* three readings of pgvector[replicas=1]: after the build, then after two windows (the last one the node table shows,
     * with the searches since the window before it) */
    exec(db, "INSERT INTO plan (key, seq, phase, engine, dataset) VALUES ('b', 1, 'build', 'pgvector', 's'), "
             "('w', 2, 'concurrency', 'pgvector', 's'), ('w2', 3, 'concurrency', 'pgvector', 's');"
             "INSERT INTO node_reading (result_key, item_key, engine, config, dataset, after, nodes, agent, recorded_at) "
             "VALUES ('rb', 'b', 'pgvector', 'pgvector[replicas=1]', 's', 'build', 2, NULL, 'now'), "
             "('rw', 'w', 'pgvector', 'pgvector[replicas=1]', 's', 'window', 2, NULL, 'now'), "
             "('rw2', 'w2', 'pgvector', 'pgvector[replicas=1]', 's', 'window', 2, NULL, 'now');"
             "INSERT INTO node_result (result_key, node, role, rows, index_bytes, table_bytes, searches, lag_bytes) "
             "VALUES ('rb', 0, 'primary', 100, 10, 20, 0, 0), ('rb', 1, 'replica', 100, 10, 20, "
             "0, 700), ('rw', 0, 'primary', 100, 10, 20, 40, 0), ('rw', 1, 'replica', 100, 10, 20, 60, 0), "
             "('rw2', 0, 'primary', 100, 10, 20, 45, 0), ('rw2', 1, 'replica', 100, 10, 20, 90, 0)");
    is_str(one(db, "SELECT unit || ' ' || cpus || ' ' || peak_bytes FROM v_nodes WHERE node = 1 LIMIT 1", b, sizeof b),
           "u1 1 5000", "v_nodes: node 1 of the entry's first configuration has its facts from server pgvector's keys");
    sqlite3 *dbs[1] = {db};
    char *sql = vb_topology_nodes_sql(dbs, 1, NULL);
    ok(sql && !strstr(sql, "lag_s"), "the per-node SQL leaves out a column v_nodes has not got (lag_s)");
    ok(sql && strstr(sql, "v.host"), "and shows one it has (host: where the node ran)");
    char q[8192];
    snprintf(q, sizeof q, "SELECT group_concat(engine || ' ' || node || ' ' || reading || ' ' || searches || ' ' || "
                          "last_window_searches || ' ' || lag_bytes || ' ' || max_lag_bytes || ' ' || IFNULL(peak_bytes, 'NULL'), '; ') FROM (%s)", sql ? sql : "");
    is_str(one(db, q, b, sizeof b),
           "pgvector[replicas=1] 0 window 45 5 0 0 NULL; pgvector[replicas=1] 1 window 90 30 0 700 5000",
           "per node: the last reading (after the last window), its searches in that window, the most lag any reading "
           "saw, the node's peak memory");
    free(sql);
    /* v_nodes with one more column (as a later vbench may add a lag in seconds): shown, nothing else changed */
    exec(db, "CREATE TEMP VIEW v_nodes AS SELECT *, 'lag-' || node AS lag_s FROM main.v_nodes");
    sql = vb_topology_nodes_sql(dbs, 1, NULL);
    snprintf(q, sizeof q, "SELECT group_concat(lag_s, ' ') FROM (%s)", sql ? sql : "");
    is_str(one(db, q, b, sizeof b), "lag-0 lag-1", "a column v_nodes gains (lag_s) is in the per-node table");
    free(sql);
    vb_store_close(&s);
    unlink(path);
    rmdir(dir);
    return done_testing();
}
