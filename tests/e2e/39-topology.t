#!/usr/bin/env bash
# Topology (issue 39): pgvector with read replicas, `replicas: [0, 1]` as a matrix axis, in the test systemd
# namespace (deploy/systemd-ns), one campaign for all the checks. The orchestrator starts each configuration's servers
# as units of their own from the same recipe and image: replicas 1 is node 0 (the primary) and node 1, a hot standby
# copied from it by the recipe's replica.run (pg_basebackup -R), each with its own data directory and half the
# server CPUs and memory; the build runs on the primary and the adapter waits until the replica has replayed the
# primary's WAL (replay lag 0) before anything is measured; each client connection reads from one node, round robin,
# and the servers' own statement counts (pg_stat_statements on each node) sum to the searches vbench sent. Checked:
# both configurations done, recall of the replicated configuration the same as with one server (the standby holds the
# same index), the manifest's per-node facts (unit, data directory, CPUs, memory limit; at the stop each node's peak
# memory, CPU seconds, sizes and log tail), the replica's own log says it is a standby that streams from the primary.
# The read side (issue 39, item 5): `vbench show` (text and --json) prints each configuration's points beside its
# topology with what limited them and each node at the last reading, the csv export has them, and the report's Topology
# section draws QPS and recall against the number of nodes, says what limited each point, and is seen in headless
# Chromium. Smallest data: 3000 rows of dimension 8.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/ns-servers.sh"
vb_ns_servers_boot
m() { q "$db" "SELECT value FROM manifest WHERE key = '$1'"; }

cat >"$SCRATCH/topo.yml" <<'YML'
name: topo
k: 10
datasets: [{name: t, source: synthetic, rows: 3000, queries: 300, dim: 8, clusters: 8, metric: euclidean, seed: 7}]
engines:
  - name: pgvector
    recipe: pgvector
    m: 8
    ef_construction: 32
    replicas: [0, 1]
resources: {layout: small}
phases:
  build: {}
  recall_sweep: {ef_search: [10, 40], queries: 300}
  concurrency: {clients: [2], repeats: 1, window_s: 2, warmup_s: 0.3, ef_search: 40}
  churn: {fraction: 0.1, queries: 150, ef_search: 40}
YML
db=$SCRATCH/topo.sqlite
vb_ns_campaign "$SCRATCH/topo.yml" "$db" "pgvector with replicas [0, 1]"
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status = 'done' AND key LIKE 'topo/pgvector[replicas=%'")" "10" \
   "both topologies ran every item (build, two sweep points, a window, a churn each)"

# --- the servers: two sets, the replicated one of two units, each node its own directory and share ---------------
r1='pgvector[replicas=1]'
is "$(m "server.$r1.nodes")" "2" "replicas 1: the orchestrator started two servers"
like "$(m "server.$r1.node.1.unit")" "-node1" "node 1 is a unit of its own ($(m "server.$r1.node.1.unit"))"
d0=$(m "server.$r1.data_dir"); d1=$(m "server.$r1.node.1.data_dir")
[ -n "$d1" ] && [ "$d0" != "$d1" ]; ok $? "node 1 has its own data directory ($d1)"
is "$(m "server.$r1.node.1.replica_of")" "$(m "server.$r1.unit")" "node 1 is a replica of node 0's unit"
n0=$(m "server.$r1.unit.memory_max"); n1=$(m "server.$r1.node.1.unit.memory_max"); all=$(m "server.pgvector.unit.memory_max")
[ -n "$n0" ] && [ -n "$all" ] && [ "$n0" -eq "$n1" ] && [ "$((n0 * 2))" -le "$all" ] && [ "$((n0 * 2 + 2))" -ge "$all" ]
ok $? "each node's memory limit is half the one server's ($n0 + $n1 of $all)"
is "$(m "server.$r1.node.1.unit.cpu_affinity")" "$(m "server.$r1.unit.cpu_affinity")" \
   "fewer CPUs than nodes: both nodes on the one server CPU of the small layout ($(m "server.$r1.unit.cpu_affinity"))"
is "$(q "$db" "SELECT COUNT(*) FROM manifest WHERE key LIKE 'server.pgvector.node.%'")" "0" "replicas 0: one server, no nodes"
for f in peak_cgroup_bytes cpu_s data total; do
    v=$(m "server.$r1.at_stop.node.1.$f")
    [ -n "$v" ] && awk -v v="$v" 'BEGIN { exit !(v > 0) }'
    ok $? "at the stop, node 1's $f is recorded ($v)"
done
like "$(m "server.$r1.at_stop.node.1.log_tail")" "started streaming WAL from primary" \
     "node 1's own log: a standby streaming from the primary"

# --- reads spread, replay caught up, same answers ------------------------------------------------------------------
is "$(q "$db" "SELECT COUNT(*) FROM window_result WHERE config = '$r1' AND server_calls = queries + warmup_queries + edge_queries")" "1" \
   "replicas 1: the two nodes' own statement counts sum to the searches vbench sent in the window (two clients)"
q "$db" "SELECT config, clients, queries, warmup_queries, edge_queries, server_calls FROM window_result" | diag
is "$(q "$db" "SELECT COUNT(*) FROM sweep_result a JOIN sweep_result b ON a.ef_search = b.ef_search
               WHERE a.config = 'pgvector[replicas=0]' AND b.config = '$r1' AND b.recall >= a.recall - 0.02")" "2" \
   "recall on primary + replica is the one server's at each ef_search (same index replayed)"
q "$db" "SELECT config, ef_search, recall, qps FROM sweep_result ORDER BY config, ef_search" | diag

# --- the per-node table (node_reading / node_result, v_nodes): what each server says of itself -------------------
q "$db" "SELECT engine, after, node, role, rows, index_bytes, searches, lag_bytes, unit, cpus, memory_max, peak_bytes,
         cpu_s FROM v_nodes" | diag
is "$(q "$db" "SELECT COUNT(*) FROM v_nodes WHERE engine = '$r1' AND after = 'build' AND rows = 3000 AND index_bytes > 0
               AND lag_bytes = 0")" "2" "after the build, primary and replica each hold the 3000 rows and the index, replay lag 0"
is "$(q "$db" "SELECT COUNT(*) FROM v_nodes WHERE engine = '$r1' AND after = 'window' AND searches > 0")" "2" \
   "after the window, both nodes ran searches (one client each, round robin)"
is "$(q "$db" "SELECT COUNT(*) FROM v_nodes WHERE unit IS NOT NULL AND cpus IS NOT NULL AND memory_max > 0 AND peak_bytes > 0
               AND cpu_s > 0")" "$(q "$db" "SELECT COUNT(*) FROM v_nodes")" \
   "every node's row has its unit, CPUs, memory limit, peak memory and CPU seconds beside it"
is "$(q "$db" "SELECT COUNT(*) FROM node_reading WHERE config = 'pgvector[replicas=0]'")" "0" "one server: no per-node reading"
# churn: each node read right after the deletes and after the reinserts (the replica's lag then, whatever it was: at
# 300 rows it has replayed them already, 0 bytes, so this shows the reading, not a lag),
# and the measurement after the reinserts only once the replica replayed them (maintain waits): same recall as one server
is "$(q "$db" "SELECT COUNT(*) FROM v_nodes WHERE engine = '$r1' AND after IN ('churn-delete', 'churn-reinsert')
               AND lag_bytes IS NOT NULL")" "4" "churn: each node's replay lag read after the deletes and after the reinserts"
is "$(q "$db" "SELECT COUNT(*) FROM v_nodes WHERE engine = '$r1' AND after = 'churn-delete' AND rows = 2700
               AND role = 'primary'")" "1" \
   "churn: the primary had 2700 rows right after deleting 10 % (the replica's count is what it had replayed)"
q "$db" "SELECT config, stage, recall FROM churn_result WHERE stage IN ('before', 'after') ORDER BY config, stage" | diag
is "$(q "$db" "SELECT COUNT(*) FROM churn_result a JOIN churn_result b ON a.stage = b.stage
               WHERE a.config = 'pgvector[replicas=0]' AND b.config = '$r1' AND a.stage = 'after'
               AND b.recall >= a.recall - 0.02")" "1" "churn: recall after the reinserts on primary + replica is one server's"

# --- the read side: show, --json, the exports and the report's Topology section (seen in headless Chromium) --------
out=$("$VBENCH" show "$db")
like "$out" "Topology: each configuration of an engine over several servers" "show prints the topology table"
like "$out" "Topology: each node at its configuration's last reading" "show prints the per-node table"
"$VBENCH" show --json "$db" >"$SCRATCH/show.json"
/usr/bin/python3 - "$SCRATCH/show.json" "$(q "$db" "SELECT qps FROM window_result WHERE config = '$r1'")" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["topology"]
# two configurations x (two sweep points + one concurrency point), each with its topology and what limited it
assert len(t) == 6, t
assert sorted({(r["replicas"], r["nodes"]) for r in t}) == [(0, 1), (1, 2)], t
c = [r for r in t if r["phase"] == "concurrency" and r["nodes"] == 2]
assert len(c) == 1 and abs(c[0]["qps"] - float(sys.argv[2])) < 1e-6 * float(sys.argv[2]), c
assert c[0]["recall"] is not None and c[0]["recall"] >= 0.95, c   # the one-client sweep's at the window's ef_search
# what the results record: node 0's cores busy, the replica not sampled in the window, both nodes on one CPU
assert c[0]["limited_by"].startswith("not recorded (node 0 ") and "other nodes not sampled" in c[0]["limited_by"] \
    and "all 2 nodes on CPU" in c[0]["limited_by"], c[0]["limited_by"]
assert all(r["limited_by"] == "one client: QPS = 1 / latency" for r in t if r["phase"] == "recall_sweep"), t
n = d["topology_nodes"]
assert [(r["node"], r["role"], r["reading"]) for r in n] == [(0, "primary", "window"), (1, "replica", "window")], n
for r in n:
    assert r["rows"] == 3000 and r["index_bytes"] > 0 and r["searches"] > 0 and r["max_lag_bytes"] is not None, r
    assert r["peak_bytes"] > 0 and r["cpu_s"] > 0 and r["memory_max"] > 0, r
PY
ok $? "show --json: topology (6 points, replicas 1's window QPS and recall, what limited it) and topology_nodes (both nodes: rows, index, searches, lag, peak memory, CPU seconds)"
"$VBENCH" export "$db" --format csv -o "$SCRATCH/csv" >/dev/null 2>&1
is "$(($(wc -l <"$SCRATCH/csv/topology_points.csv") - 1)) $(($(wc -l <"$SCRATCH/csv/nodes.csv") - 1))" \
   "6 $(q "$db" "SELECT COUNT(*) FROM node_result")" "the csv export has the topology points and every node reading"
"$VBENCH" report "$db" -o "$SCRATCH/report" >/dev/null 2>"$SCRATCH/report.err"
ok $? "vbench report exits 0" || tail -5 "$SCRATCH/report.err" | sed 's/^/#   /'
html=$SCRATCH/report/report.html
like "$(cat "$html" 2>/dev/null)" '<section id="topology">' "the report has a Topology section"
is "$(ls "$SCRATCH/report/charts/" | grep -c '^topology-\(qps\|recall\)\.png$')" "2" \
   "the report draws QPS and recall against the number of nodes"
grep -q "with yerrorlines .* title 'pgvector replicas, 2 clients'" "$SCRATCH/report/charts/topology-qps.body.gp"
ok $? "the QPS chart has a line for pgvector's replicas at 2 clients (1 and 2 nodes), the repeats' range as whiskers"
like "$(cat "$SCRATCH/report/report.md" 2>/dev/null)" \
     "| pgvector[replicas=1] | 2 | $(printf %.0f "$(q "$db" "SELECT qps FROM window_result WHERE config = '$r1'")") |" \
     "the seed's table: each topology's best QPS beside its node count (replicas 1: 2 nodes, its window's QPS)"
like "$(cat "$html" 2>/dev/null)" "pgvector[replicas=1] (2 nodes) on t at 2 clients, ef_search 40:" \
     "the section says what limited each concurrency point"
over=$(vb_report_overflow "$html"); rc=$?
[ $rc -eq 0 ] && ! printf '%s\n' "$over" | grep -q '^topology:'
ok $? "every table of the Topology section fits its page in Chromium at 1400 px${over:+: $over}"
vb_report_section_shot "$html" topology "$SCRATCH/topology.png"
done_testing
