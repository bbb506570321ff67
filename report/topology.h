/* The topology read side (issue 39): an engine of several servers (shards: a router and its shards; replicas: a
 * primary and its standbys) read back per node. The points of each topology (recall, QPS, latency, what limited
 * them) are the view v_topology_points (store/views.sql); the per-node table is built here, from the columns v_nodes
 * has in the file at hand, so that a column a later vbench adds to v_nodes (the host a node ran on, a node's own build
 * time) is one line of this file's list and a file without it still reads. show, the report and their tests use it. */
#ifndef VB_REPORT_TOPOLOGY_H
#define VB_REPORT_TOPOLOGY_H

#include <sqlite3.h>
#include <stddef.h>

/* The per-node table as one SELECT over v_nodes: a row per configuration, dataset and node, from the configuration's
 * last reading after its build or a window (rows, sizes, the server's own search count, replay lag then), with the
 * largest lag of any of the node's readings (max_lag_bytes) and the orchestrator's facts of the node (CPUs, memory
 * limit, peak memory, CPU seconds over its life). Only the columns of the list that v_nodes has in every one of the
 * n databases are selected. lead: the first column's expression (the report's "{label} AS series"), NULL for the
 * configuration's label as `engine`. Returns malloc'd SQL the caller frees; NULL when out of memory. */
char *vb_topology_nodes_sql(sqlite3 *const *dbs, size_t n, const char *lead);

#endif
