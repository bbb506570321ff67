#!/usr/bin/env bash
# Faults at the server never stall a campaign (issue 28), on real servers started by vbench's orchestrator in
# systemd booted in a PID + mount namespace (deploy/systemd-ns), the namespace started once for the file:
#   1. a hung server: PostgreSQL's unit SIGSTOPped in the middle of a concurrency window, limits.phase_timeout_s
#      small. The window fails at the phase timeout; the client threads, bounded by the phase's timeout in the
#      driver, or the agent, killed when it does not answer the Abort within limits.abort_unanswered_s, free the
#      campaign; the server that does not answer the orchestrator's probe is killed and started again
#      (limits.on_server_failure: restart) with its log tail; the next window and the embedded engine's items run.
#      Before: nothing ran after the failed window until SIGCONT (4 min 31 s measured), no event.
#   2. an OOM kill at start: MariaDB under resources.server_memory: 64MB is killed by its memory cgroup before
#      it answers; the failure is named as an OOM from the cgroup's counter, with the limit and the advice.
#      Before: "ended before it answered (result signal, status 9)" on a cgroup-v1 host.
#   3. Ctrl-C during a server's load: the build is interrupted (not failed: its server is stopped only after the
#      item is), and a plain `vbench resume` continues the load from its checkpoint and runs the rest.
#   4. SIGKILL of Redis in the middle of a churn reinsert: the item fails once on the terminal, its error names the
#      death, and the death's event says the server was ready (issue 36.9).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/ns-servers.sh"
run_in() { vb_ns_run "$@"; }
vb_ns_servers_boot

# --- 1. a SIGSTOPped server during a window ------------------------------------------------------------------
# The windows are an open loop at 200 queries/s: the fault needs the window's time, not its throughput (a closed
# loop kept the server and the clients busy on both cores for every window: CPU the whole suite paid for).
db=$SCRATCH/hang.sqlite
cat >"$SCRATCH/hang.yml" <<'YML'
name: hang
k: 10
datasets: [{name: t, source: synthetic, rows: 2000, queries: 100, dim: 16, metric: euclidean, seed: 4}]
engines:
  - {name: pgvector, recipe: pgvector, m: 8, ef_construction: 32}
  - {name: exact, phases: {concurrency: {window_s: 1}}}   # its windows only need to run (8 s each: 16 s for nothing)
phases:
  build: {}
  concurrency: {clients: [2, 1], window_s: 8, repeats: 1, warmup_s: 0.2, ef_search: 40, mode: open, target_rate: 200}
limits: {phase_timeout_s: 20, abort_unanswered_s: 5, on_server_failure: restart}
YML
t0=$(date +%s)
run_in timeout 400 "$VBENCH" run --profile "$SCRATCH/hang.yml" --out "$db" >/dev/null 2>"$SCRATCH/hang.err" &
runpid=$!
w1=hang/pgvector/t/concurrency/clients=2,repeat=1,mode=open,target_rate=200
st=$(wait_status "$db" "$w1" running done failed 300)
is "$st" running "the first window is running"
sleep 2
run_in systemctl kill --signal=STOP vbench-hang-pgvector.service
ok $? "the server's processes are SIGSTOPped two seconds into the window"
t_stop=$(date +%s)
wait $runpid
rc=$?
took=$(($(date +%s) - t_stop))
{ q "$db" "SELECT key, status, COALESCE(error, '') FROM plan"
  q "$db" "SELECT state, COALESCE(message, '') FROM server_log ORDER BY rowid"
  q "$db" "SELECT kind, message FROM event WHERE level <> 'info' ORDER BY rowid"
  tail -20 "$SCRATCH/hang.err"; } >"$SCRATCH/hang.diag" 2>&1
[ "$rc" -le 3 ]; ok $? "the campaign ends by itself (exit $rc, $took s after the stop; the harness gives it 400 s)"
[ "$took" -lt 200 ]; ok $? "within the bounds: phase timeout, abort bound, probe and restart ($took s)"
like "$(q "$db" "SELECT status || ': ' || COALESCE(error, '') FROM plan WHERE key = '$w1'")" "failed: limit error: exceeded limits.phase_timeout_s = 20 s" \
     "the stopped window fails at the phase timeout"
is "$(q "$db" "SELECT status FROM plan WHERE key = 'hang/pgvector/t/concurrency/clients=1,repeat=1,mode=open,target_rate=200'")" "done" \
   "the next window ran on the server started again"
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE engine = 'exact' AND status = 'done'")" "3" "the embedded engine's items queued after it ran"
stuck=$(q "$db" "SELECT message FROM event WHERE kind = 'agent_stuck'")
like "$stuck" "$w1" "an agent_stuck event names the item"
like "$stuck" "within limits.abort_unanswered_s = 5 s (waited" "and the wait"
like "$stuck" "agent local-client" "and the agent"
like "$(q "$db" "SELECT group_concat(state) FROM server_log WHERE engine = 'pgvector' ORDER BY rowid")" "ready,died,ready" \
     "the server log: ready, died (it did not answer), ready again"
hung=$(q "$db" "SELECT message || ' | ' || COALESCE(log_tail, '') FROM server_log WHERE state = 'died'")
like "$hung" "did not answer" "the death says the server did not answer"
like "$hung" "postgres" "with its own log tail"
[ "$T_FAILED" -eq 0 ] || diag <"$SCRATCH/hang.diag"

# --- 2. an OOM kill at server start --------------------------------------------------------------------------
failed_before=$T_FAILED
db=$SCRATCH/oom.sqlite
cat >"$SCRATCH/oom.yml" <<'YML'
name: oom
k: 10
datasets: [{name: t, source: synthetic, rows: 500, queries: 20, dim: 8, metric: euclidean, seed: 4}]
engines: [{name: mariadb, recipe: mariadb}, {name: exact}]
phases: {build: {}}
resources: {layout: small, server_memory: 64MB, shm: 8MB}
limits: {on_server_failure: skip}
YML
run_in timeout 300 "$VBENCH" run --profile "$SCRATCH/oom.yml" --out "$db" >/dev/null 2>"$SCRATCH/oom.err"
rc=$?
[ "$rc" -le 3 ]; ok $? "the campaign ends by itself (exit $rc)"
err=$(q "$db" "SELECT COALESCE(error, '') FROM plan WHERE key = 'oom/mariadb/t/build'")
like "$err" "OOM: killed at its memory limit of 61.0 MiB (64000000 bytes)" "the build's failure names the OOM kill and the limit"
like "$err" "raise resources.server_memory or lower the engine's buffers" "with the advice"
like "$(q "$db" "SELECT message FROM server_log WHERE engine = 'mariadb' AND state = 'failed'")" "OOM" \
     "the server log says OOM too"
is "$(q "$db" "SELECT status FROM plan WHERE key = 'oom/exact/t/build'")" "done" "the next engine runs"
[ "$T_FAILED" -eq "$failed_before" ] || { q "$db" "SELECT key, status, error FROM plan"; tail -20 "$SCRATCH/oom.err"; } | diag

# --- 3. Ctrl-C during a server's load ------------------------------------------------------------------------
# SIGINT to the coordinator while MariaDB (started by the orchestrator) loads: the campaign stops with its server,
# the build is interrupted, not failed, and a plain `vbench resume` (no --retry-failed) continues the load from its
# checkpoint and runs the rest. Before: the server was stopped first, the agent's INSERT lost its connection, and
# that failure was recorded as the build's ("Lost connection to server during query"), its sweep skipped, and
# resume ran nothing of MariaDB (seen on the million-row campaign, docs/results-million-96.md).
failed_before=$T_FAILED
db=$SCRATCH/int.sqlite
cat >"$SCRATCH/int.yml" <<'YML'
name: int
k: 10
datasets: [{name: t, source: synthetic, rows: 10000, queries: 50, dim: 32, clusters: 16, metric: euclidean, seed: 5}]
engines: [{name: mariadb, recipe: mariadb, m: 16}]
phases:
  build: {load_connections: 2, load_batch: 10}
  recall_sweep: {ef_search: [40]}
YML
run_in "$VBENCH" run --profile "$SCRATCH/int.yml" --out "$db" --quiet >/dev/null 2>"$SCRATCH/int.err" &
runpid=$!
# interrupted once the load has passed a checkpoint (the load sends one about every second)
wait_sql "$db" "SELECT COUNT(*) FROM load_checkpoint" 2 300
ok $? "the load into MariaDB has passed its checkpoints"
coord=$(pgrep -f -- "^$VBENCH run .*--out $db" | head -1)   # the coordinator itself, not the nsenter that started it
[ -n "$coord" ] && kill -INT "$coord"
ok $? "SIGINT to the coordinator (PID $coord) during the load"
wait $runpid
is "$?" "2" "the campaign stops as interrupted (exit 2)"
is "$(q "$db" "SELECT status FROM plan WHERE phase = 'build'")" "interrupted" "the build is interrupted, not failed"
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status IN ('failed', 'skipped')")" "0" "nothing failed or skipped"
is "$(q "$db" "SELECT COUNT(*) FROM event WHERE kind = 'item_failed'")" "0" "no item_failed event"
sleep 6   # the server lies stopped at least 6 s between the runs: v_server_phase below does not count it
run_in "$VBENCH" resume --out "$db" --quiet >/dev/null 2>"$SCRATCH/int-resume.err"
is "$?" "0" "a plain vbench resume completes the campaign"
is "$(q "$db" "SELECT group_concat(status || ' ' || attempts, ', ') FROM plan ORDER BY seq")" "done 2, done 1" \
   "the build done on its second attempt, the sweep point on its first"
is "$(q "$db" "SELECT rows || ' ' || attempts FROM build_result")" "10000 2" "one build row of 10000 rows, its load over 2 attempts"
like "$(q "$db" "SELECT message FROM event WHERE kind = 'agent_log'")" "continuing the load from its checkpoint at row" \
     "the second attempt continued the load from its checkpoint"
# The server's time and CPU during the build (v_server_phase) add up its two lives: the samples of each run, split
# at the largest step between two samples (the >= 6 s the server lay stopped), each from its first to its last
# sample; the second life's CPU counter began again at 0. Before, MAX - MIN over both: the stop counted as
# server time, and the CPU was whichever life ended higher minus the first sample.
split="WITH s AS (SELECT t, cpu_s, t - LAG(t) OVER (ORDER BY t) AS step FROM server_sample
                  WHERE item_key = (SELECT key FROM plan WHERE phase = 'build')),
            g AS (SELECT t AS t2 FROM s ORDER BY step DESC LIMIT 1)
       SELECT printf('%.2f %.2f', SUM(span), SUM(cpu)) FROM (
           SELECT MAX(t) - MIN(t) AS span, MAX(cpu_s) - MIN(cpu_s) AS cpu FROM s, g GROUP BY s.t >= g.t2)"
is "$(q "$db" "SELECT printf('%.2f %.2f', seconds, server_cpu_s + 0) FROM v_server_phase WHERE phase = 'build'")" \
   "$(q "$db" "$split")" "the build's server seconds and CPU are its two lives' own, the time between them not counted"
ok "$(q "$db" "SELECT (MAX(t) - MIN(t)) - (SELECT seconds FROM v_server_phase WHERE phase = 'build') >= 6 FROM server_sample
                WHERE item_key = (SELECT key FROM plan WHERE phase = 'build')" | grep -qx 1; echo $?)" \
   "the >= 6 s between the runs is not server time of the build"
[ "$T_FAILED" -eq "$failed_before" ] || { q "$db" "SELECT key, status, error FROM plan"; q "$db" "SELECT kind, message FROM event"; tail -20 "$SCRATCH/int.err" "$SCRATCH/int-resume.err"; } | diag

# --- 4. a server killed in the middle of a churn reinsert (issue 36.9) ------------------------------------------
# SIGKILL to Redis's unit while the churn reinserts one row per call: the agent's insert loses its connection and
# fails the item, and the orchestrator reports the death (found by its own check or at the stop request that the
# failed last item brought). Before: the terminal printed the item's failure twice (the agent's words, then the
# server's), and the event said "server redis died (was stopping)" although the stop was asked after the death.
failed_before=$T_FAILED
db=$SCRATCH/kill.sqlite
cat >"$SCRATCH/kill.yml" <<'YML'
name: kill
k: 10
datasets: [{name: t, source: synthetic, rows: 20000, queries: 20, dim: 16, metric: angular, seed: 4}]
engines: [{name: redis, recipe: redis, m: 8, ef_construction: 32}]
phases:
  build: {}
  churn: {fraction: 0.5, insert_batch: 1, queries: 20, ef_search: 40}
limits: {on_server_failure: skip}
YML
run_in timeout 300 "$VBENCH" run --profile "$SCRATCH/kill.yml" --out "$db" >/dev/null 2>"$SCRATCH/kill.err" &
runpid=$!
wait_sql "$db" "SELECT COUNT(*) FROM event WHERE kind = 'reinsert_started'" 1 240
ok $? "the churn's reinsert started"
sleep 0.2
run_in systemctl kill --signal=KILL vbench-kill-redis.service
ok $? "the server's processes are SIGKILLed during the reinsert"
wait $runpid
rc=$?
[ "$rc" -le 3 ]; ok $? "the campaign ends by itself (exit $rc)"
key=kill/redis/t/churn
is "$(q "$db" "SELECT status FROM plan WHERE key = '$key'")" "failed" "the churn item failed"
like "$(q "$db" "SELECT error FROM plan WHERE key = '$key'")" "server error: server unit vbench-kill-redis ended" \
     "its error names the server's death"
is "$(grep -c "^FAILED $key" "$SCRATCH/kill.err")" "1" "the terminal says the item failed once: $(grep "^FAILED\|the cause" "$SCRATCH/kill.err" | cut -c1-160 | tr '\n' '|')"
died=$(q "$db" "SELECT message FROM event WHERE kind = 'server' AND message LIKE 'server redis died%'")
like "$died" "server redis died (was ready" "the death's event: the server was ready when it died: $died"
[ "$T_FAILED" -eq "$failed_before" ] || { q "$db" "SELECT key, status, error FROM plan"; q "$db" "SELECT kind, message FROM event"; tail -20 "$SCRATCH/kill.err"; } | diag

done_testing
