#!/usr/bin/env bash
# Placement (issue 39, step 3): a server's nodes over several orchestrator hosts. Four hosts in network namespaces
# (tests/lib/hosts.sh, CURVE as in 71): the coordinator, the client agent, and TWO orchestrator agents, each under a
# systemd of its own booted in its host's network namespace (on_host_systemd), so the units it starts have that host's
# address. pgvector with replicas [1, 2] and resources.orchestrators: 2, one campaign: the coordinator places node K
# on orchestrator K mod 2; each orchestrator starts its nodes from the same recipe and image under its own host's
# budget, listening on TCP at its host's address (node K on 5432 + K); a replica on the other host than node 0 is
# copied by pg_basebackup over the network and streams from it. Checked for replicas 1 (primary on one host, replica
# on the other): the manifest and v_nodes say where each node ran (host, agent, unit, data directory, address); the
# replica's primary_conninfo names the other host; both nodes hold the rows at replay lag 0 after the build and both
# served searches in the window, whose statement counts sum to vbench's; recall is one server's. For replicas 2:
# nodes 0 and 2 share the first host (its budget halved, node 2 copied over node 0's socket), node 1 on the second;
# then node 1 is killed in the middle of the window on its host: the window fails with its unit's death (the server's
# death, as on one host), the first host's nodes are stopped, the campaign goes on to its end. MariaDB with replicas
# 1 the same way (node K on port 3306 + K at its host's address; the replica dumped from node 0 over TCP and
# replicating from it as root@'%', the account each placed node makes at its start from accounts.sql, root@localhost
# keeping socket authentication): its log names node 0's address, both nodes serve. pgvector with shards 2 (issue 39 item 3: one shard
# per host): the router (node 0) and shard 2 on the first host, shard 1 on the second; the router's postgres_fdw reaches
# the remote shard at its host's address and port, each shard holds its half of the rows, both are scanned at once by
# every search (Async Foreign Scans), and recall is not lower than one server's. Smallest data: 3000
# rows of dimension 8; each host's systemd booted once.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/hosts.sh"
. "$VB_ROOT/deploy/systemd-ns"
why=$(vb_ns_skip_reason)
[ -z "$why" ] || skip_all "$why"
vb_ensure_image db-trixie
hosts_up && hosts_up_orch2
ok $? "four hosts: coord, bench, orch and orch2, routed through coord"
hosts_keys bench orch orch2
ok $? "key pairs for the coordinator and the three agents"
m() { q "$db" "SELECT value FROM manifest WHERE key = '$1'"; }

cat >"$SCRATCH/placed.yml" <<'YML'
name: placed
k: 10
datasets: [{name: t, source: synthetic, rows: 3000, queries: 60, dim: 8, clusters: 8, metric: euclidean, seed: 7}]
engines:
  - name: pgvector
    recipe: pgvector
    m: 8
    ef_construction: 32
    replicas: [1, 2]
  - {name: mariadb, recipe: mariadb, m: 8, replicas: 1}
  - {name: sharded, engine: pgvector, recipe: pgvector, m: 8, ef_construction: 32, shards: 2}
resources: {layout: small, orchestrators: 2}
phases:
  build: {}
  recall_sweep: {ef_search: [40], queries: 60}
  concurrency: {clients: [2], repeats: 1, window_s: 3, warmup_s: 0.3, ef_search: 40}
YML
db="$SCRATCH/placed.sqlite"

# An orchestrator agent NAME on HOST under that host's own systemd. Background it and take $!.
orch_agent() {
    local host=$1 name=$2
    on_host_systemd "$host" "$VB_BIN/vbench-agent" --connect "$ENDPOINT" --id "$name" --cert "$KEYS/$name/$name.key" \
        --server-key "$KEYS/coord/coordinator.pub" --workdir "$SCRATCH/$name.d" --roles orchestrator \
        --bus unix:path=/run/systemd/private
}
t0=$(date +%s)
coordinator run --profile "$SCRATCH/placed.yml" --out "$db" 2>"$SCRATCH/coord.txt" &
coord=$!
orch_agent orch orch 2>"$SCRATCH/orch.txt" &
orch=$!
orch_agent orch2 orch2 2>"$SCRATCH/orch2.txt" &
orch2=$!
agent bench bench 2>"$SCRATCH/bench.txt" &
bench=$!
HOST_PIDS="$coord $orch $orch2 $bench"

# replicas 2's window: node 1, on the second orchestrator's host, is killed in the middle of it (every process of
# its unit, found by its cgroup below that host's systemd: deploy/systemd-ns names it vbench-ns-PID)
r2='pgvector[replicas=2]'
wait_sql "$db" "SELECT COUNT(*) FROM plan WHERE key LIKE 'placed/$r2/t/concurrency%' AND status = 'running'" 1 240
ok $? "replicas 2's window runs"
sleep 1   # into the window (warm-up 0.3 s, window 3 s)
unit1=$(q "$db" "SELECT value FROM manifest WHERE key = 'server.$r2.node.1.unit'")
on1=$(q "$db" "SELECT value FROM manifest WHERE key = 'server.$r2.node.1.agent'")   # the orchestrators join in any order
ns1=$orch; [ "$on1" = orch2 ] && ns1=$orch2
killed=0
for procs in $(find /sys/fs/cgroup -path "*/vbench-ns-$ns1/*/$unit1.service/cgroup.procs" 2>/dev/null); do
    for pid in $(cat "$procs"); do kill -KILL "$pid" 2>/dev/null && killed=$((killed + 1)); done
done
[ "$killed" -gt 0 ]
ok $? "node 1 of replicas 2 ($unit1) killed on its host ($on1): $killed processes"

wait_pid $coord 300
is "$WAIT_RC" "1" "the campaign over two orchestrator hosts goes on to its end (exit 1: one item failed, $(($(date +%s) - t0)) s)"
[ "$WAIT_RC" = 1 ] || { tail -20 "$SCRATCH/coord.txt"; tail -8 "$SCRATCH/orch.txt" "$SCRATCH/orch2.txt"; } | diag
q "$db" "SELECT key, status, error FROM plan WHERE status <> 'done'" | cut -c1-300 | diag
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status = 'done'")" "11" \
   "every other item is done (build, a sweep point, a window for pgvector's and MariaDB's replicas 1 and for shards 2;
    build and sweep for replicas 2)"
is "$(q "$db" "SELECT group_concat(id || ':' || host, ' ') FROM (SELECT * FROM agent ORDER BY id)")" \
   "bench:bench-host orch:orch-host orch2:orch2-host" "the agents, each on its own host"

# --- where each node ran ------------------------------------------------------------------------------------------
a0=$(m server.pgvector.agent); a1=$(m server.pgvector.node.1.agent)
h0=$(m server.pgvector.host); h1=$(m server.pgvector.node.1.host)
[ -n "$a0" ] && [ -n "$a1" ] && [ "$a0" != "$a1" ]
ok $? "node 0 and node 1 ran on different orchestrators ($a0, $a1)"
is "$h0 $h1" "$a0-host $a1-host" "the manifest names each node's host"
like "$(m server.pgvector.placement)" "node 0 on $a0 ($a0-host), node 1 on $a1 ($a1-host)" \
     "the placement in one sentence ($(m server.pgvector.placement))"
like "$(m server.pgvector.node.1.unit)" "-node1" "node 1 is a unit of its own ($(m server.pgvector.node.1.unit))"
like "$(m server.pgvector.data_dir)" "$SCRATCH/$a0.d/servers/" "node 0's data directory is on its orchestrator's host"
like "$(m server.pgvector.node.1.data_dir)" "$SCRATCH/$a1.d/servers/" "node 1's on its own"
addr() { [ "$1" = orch ] && echo 10.77.2.2 || echo 10.77.3.2; }
is "$(m server.pgvector.listen_address)" "$(addr "$a0"):5432" "node 0 listened on TCP at its host's address"
is "$(m server.pgvector.node.1.listen_address)" "$(addr "$a1"):5433" "node 1 at its own host's address, port + 1"
is "$(m server.pgvector.node.1.replica_of)" "$(addr "$a0"):5432 (node 0, on another host)" \
   "node 1 is a replica of node 0 over the network"
like "$(m server.pgvector.at_stop.node.1.log_tail)" "started streaming WAL from primary at" \
     "node 1's own log: a standby streaming from its primary"
conninfo=$(grep primary_conninfo "$(m server.pgvector.node.1.data_dir)/data/postgresql.auto.conf" 2>/dev/null)
case "$conninfo" in *"host=$(addr "$a0") "*"port=5432 "*) ok 0 "... over the network: its primary_conninfo names node 0's host and port" ;;
    *) ok 1 "... over the network: its primary_conninfo names node 0's host and port"; echo "#   $conninfo" ;; esac
n0=$(m server.pgvector.unit.memory_max); n1=$(m server.pgvector.node.1.unit.memory_max)
[ -n "$n0" ] && [ -n "$n1" ] && [ "$n0" = "$n1" ] && [ "$n0" = "$(m server.pgvector.budget.server_memory_bytes)" ]
ok $? "each node has its host's whole server budget: one node per host ($n0 and $n1 bytes)"

# --- v_nodes: the nodes' own readings beside where they ran -------------------------------------------------------
r1='pgvector[replicas=1]'
q "$db" "SELECT engine, after, node, role, rows, searches, lag_bytes, host, agent, unit FROM v_nodes" | diag
is "$(q "$db" "SELECT group_concat(node || ':' || host || ':' || agent, ' ') FROM (SELECT DISTINCT node, host, agent
               FROM v_nodes WHERE engine = '$r1' ORDER BY node)")" "0:$a0-host:$a0 1:$a1-host:$a1" \
   "v_nodes names each node's host and agent"
is "$(q "$db" "SELECT COUNT(*) FROM v_nodes WHERE engine = '$r1' AND after = 'build' AND rows = 3000 AND lag_bytes = 0
               AND unit IS NOT NULL")" "2" "after the build both nodes hold the 3000 rows, the replica at replay lag 0"
is "$(q "$db" "SELECT COUNT(*) FROM v_nodes WHERE engine = '$r1' AND after = 'window' AND searches > 0")" "2" \
   "after the window both nodes served searches (one client each)"
q "$db" "SELECT config, clients, queries, warmup_queries, edge_queries, server_calls FROM window_result" | diag
is "$(q "$db" "SELECT COUNT(*) FROM window_result WHERE config = '$r1' AND server_calls = queries + warmup_queries + edge_queries")" "1" \
   "the two nodes' own statement counts sum to the searches vbench sent"
r=$(q "$db" "SELECT recall FROM sweep_result WHERE config = '$r1'")
awk -v r="$r" 'BEGIN { exit !(r >= 0.9) }'
ok $? "recall through primary and replica on two hosts is one server's ($r at ef_search 40)"

# --- MariaDB with replicas 1 over the two hosts: the replica made and fed over TCP from node 0 on the other host ----
ma0=$(m server.mariadb.agent); ma1=$(m server.mariadb.node.1.agent)
[ -n "$ma0" ] && [ -n "$ma1" ] && [ "$ma0" != "$ma1" ]
ok $? "MariaDB's node 0 and node 1 ran on different orchestrators ($ma0, $ma1)"
is "$(m server.mariadb.listen_address) $(m server.mariadb.node.1.listen_address)" "$(addr "$ma0"):3306 $(addr "$ma1"):3307" \
   "each MariaDB node listened on TCP at its own host's address (node 1 on port + 1)"
is "$(m server.mariadb.node.1.replica_of)" "$(addr "$ma0"):3306 (node 0, on another host)" \
   "MariaDB's node 1 is a replica of node 0 over the network"
like "$(m server.mariadb.at_stop.node.1.log_tail)" "Slave I/O thread: connected to master 'root@$(addr "$ma0"):3306'" \
     "node 1's own log: its replication stream connected to node 0 at the other host's address"
grep -q "^$(addr "$ma0")\$" "$(m server.mariadb.node.1.data_dir)/data/master.info" 2>/dev/null
ok $? "... and its master.info (SHOW SLAVE STATUS's Master_Host) names that address"
mr='mariadb'
q "$db" "SELECT engine, after, node, role, rows, searches, lag_bytes, host, agent FROM v_nodes WHERE engine = '$mr'" | diag
is "$(q "$db" "SELECT group_concat(node || ':' || host || ':' || agent, ' ') FROM (SELECT DISTINCT node, host, agent
               FROM v_nodes WHERE engine = '$mr' ORDER BY node)")" "0:$ma0-host:$ma0 1:$ma1-host:$ma1" \
   "v_nodes names each MariaDB node's host and agent"
is "$(q "$db" "SELECT COUNT(*) FROM v_nodes WHERE engine = '$mr' AND after = 'build' AND rows = 3000 AND lag_bytes = 0")" "2" \
   "after the build both MariaDB nodes hold the 3000 rows, the replica caught up over the network"
is "$(q "$db" "SELECT COUNT(*) FROM v_nodes WHERE engine = '$mr' AND after = 'window' AND searches > 0")" "2" \
   "after the window both MariaDB nodes served searches (one client each, over TCP)"
is "$(q "$db" "SELECT COUNT(*) FROM window_result WHERE config = '$mr' AND server_calls = queries + warmup_queries + edge_queries")" "1" \
   "the two MariaDB nodes' own statement counts sum to the searches vbench sent"

# --- replicas 2: three nodes on two hosts (nodes 0 and 2 on the first), then node 1's death -------------------------
like "$(m "server.$r2.placement")" "node 0 on $a0 ($a0-host), node 1 on $a1 ($a1-host), node 2 on $a0 ($a0-host)" \
     "replicas 2: round robin, node 2 back on the first orchestrator"
is "$(m "server.$r2.node.2.listen_address")" "$(addr "$a0"):5434" "node 2 beside node 0, on port + 2"
is "$(m "server.$r2.node.2.replica_of")" "$(m "server.$r2.unit")" "node 2 copies node 0 on their host (its socket)"
m0=$(m "server.$r2.unit.memory_max"); m2=$(m "server.$r2.node.2.unit.memory_max"); m1=$(m "server.$r2.node.1.unit.memory_max")
[ -n "$m0" ] && [ "$m0" = "$m2" ] && [ "$((m0 * 2))" -le "$m1" ] && [ "$((m0 * 2 + 2))" -ge "$m1" ]
ok $? "nodes 0 and 2 share their host's budget ($m0 + $m2), node 1 has its host's whole ($m1)"
is "$(q "$db" "SELECT group_concat(node || ':' || host, ' ') FROM v_nodes WHERE engine = '$r2' AND after = 'build'
               AND rows = 3000 AND lag_bytes = 0")" "0:$a0-host 1:$a1-host 2:$a0-host" \
   "after the build the three nodes hold the rows at replay lag 0, each on its host"
like "$(q "$db" "SELECT error FROM plan WHERE key LIKE 'placed/$r2/t/concurrency%'")" "$unit1 ended" \
     "the window failed with node 1's death on the other host: a node's death is the server's"
is "$(q "$db" "SELECT COUNT(*) FROM event WHERE kind = 'server_died' AND message LIKE '%$unit1%'")" "1" \
   "one server_died event, naming node 1's unit"
is "$(q "$db" "SELECT COUNT(*) FROM server_log WHERE engine = '$r2' AND state = 'stopped'")" "1" \
   "the first host's part (nodes 0 and 2) was stopped after the death, its answer recorded"
q "$db" "SELECT engine, state, substr(message, 1, 120) FROM server_log" | diag

# --- shards 2 over the two hosts: one shard per host, the router beside shard 2 -------------------------------------
sh=sharded
like "$(m "server.$sh.placement")" "node 0 on $a0 ($a0-host), node 1 on $a1 ($a1-host), node 2 on $a0 ($a0-host)" \
     "shards 2: the router (node 0) and shard 2 on the first host, shard 1 on the second: one shard per host"
is "$(m "server.$sh.node.1.listen_address")" "$(addr "$a1"):5433" "shard 1 listened on TCP at its own host's address"
q "$db" "SELECT engine, after, node, role, rows, searches, host FROM v_nodes WHERE engine = '$sh'" | diag
is "$(q "$db" "SELECT group_concat(node || ':' || role || ':' || rows || ':' || host, ' ') FROM (SELECT * FROM v_nodes
               WHERE engine = '$sh' AND after = 'build' AND role = 'shard' ORDER BY node)")" \
   "1:shard:1500:$a1-host 2:shard:1500:$a0-host" "after the build each shard holds its 1500 rows (id % 2) on its own host"
is "$(q "$db" "SELECT COUNT(*) FROM v_nodes WHERE engine = '$sh' AND after = 'window' AND role = 'shard' AND searches > 0")" "2" \
   "after the window both shards, one on each host, have scanned their index"
plan=$(q "$db" "SELECT plan FROM sweep_result WHERE config = '$sh'")
is "$(grep -c 'Async Foreign Scan' <<<"$plan")" "2" "the router's plan: an Async Foreign Scan per shard, the remote one included"
is "$(grep -c 'Remote SQL: SELECT id, embedding FROM .* ORDER BY (embedding OPERATOR(public.<->) .* LIMIT 10' <<<"$plan")" "2" \
   "every shard, on either host, receives the ORDER BY distance and the LIMIT"
rs=$(q "$db" "SELECT recall FROM sweep_result WHERE config = '$sh'")
awk -v s="$rs" -v r="$r" 'BEGIN { exit !(s >= r) }'
ok $? "recall through the router and two shards on two hosts is not lower than one server's ($rs against $r at ef_search 40)"

wait_pid $bench 30; is "$WAIT_RC" "0" "the client agent leaves when the campaign is over"
wait_pid $orch 60; is "$WAIT_RC" "0" "the first orchestrator leaves, its host's systemd torn down cleanly"
wait_pid $orch2 60; is "$WAIT_RC" "0" "the second orchestrator leaves, its host's systemd torn down cleanly"
done_testing
