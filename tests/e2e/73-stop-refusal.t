#!/usr/bin/env bash
# The sender check holds while the coordinator waits for its servers to stop, not only in its main loop. Three
# hosts (tests/lib/hosts.sh), CURVE: a campaign on a server engine (recipe pgvector) whose orchestrator agent
# (tests/tools/vb_wireprobe orchestrator, as orch with orch's key) says Hello and heartbeats but never answers, so
# the server stays "starting". SIGINT: the coordinator leaves its main loop and waits (up to 120 s) for the
# server, answering messages meanwhile. Then the holder of orch's key (allowed) speaks as agent bench, an allowed
# id that is not connected (libzmq ignores a second connection under a live id): its Hello is refused (an event,
# a Bye) and bench is never welcomed. Before one receive path served both loops, the stop loop welcomed it.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/hosts.sh"
PROBE=${VB_PROBE:-$VB_BIN/../build/tools/vb_wireprobe}
[ -x "$PROBE" ] || skip_all "$PROBE is not built (make tools)"
hosts_up
ok $? "three hosts: coord, bench and orch"
hosts_keys bench orch
ok $? "keys for bench and orch on the allow-list"

db="$SCRATCH/stop.sqlite"
cat >"$SCRATCH/stop.yml" <<'YML'
name: stop-refusal
datasets: [{name: t, source: synthetic, rows: 1000, queries: 10, dim: 8, clusters: 4, metric: euclidean, seed: 3}]
engines:
  - {name: pgvector, recipe: pgvector, m: 8}
phases:
  build: {}
limits:
  agent_silent_s: 600
YML
coordinator run --profile "$SCRATCH/stop.yml" --out "$db" 2>"$SCRATCH/coord.txt" &
coord=$!
on_host orch "$PROBE" orchestrator "$ENDPOINT" "$KEYS/orch/orch.key" "$KEYS/coord/coordinator.pub" orch 30 \
    >"$SCRATCH/orch.out" 2>&1 &
orch=$!
HOST_PIDS="$coord $orch"
wait_sql "$db" "SELECT COUNT(*) FROM agent WHERE id = 'orch'" 1 60
ok $? "the silent orchestrator joined over CURVE"
wait_until 20 grep -q '^< server_request' "$SCRATCH/orch.out"
ok $? "the coordinator asked it for the pgvector server, which stays starting"

# The impostor: orch's key (allowed) as agent bench, an allowed id that is not connected (libzmq ignores a second
# connection under a live id), a Hello every second for 6 s: two or three before SIGINT, the rest in the stop loop.
on_host bench "$PROBE" hijack "$ENDPOINT" "$KEYS/orch/orch.key" "$KEYS/coord/coordinator.pub" bench 6 \
    >"$SCRATCH/hijack.out" 2>&1 &
hijack=$!
HOST_PIDS="$HOST_PIDS $hijack"
sleep 2.5
kill -INT "$coord"
sleep 1   # the main loop polls every 100 ms; then the stop loop waits for the starting server
kill -0 "$coord" 2>/dev/null
ok $? "after SIGINT the coordinator waits for the server to stop"
wait_pid $hijack 30
# A connection made during the stop (after the first is gone: the id is free again): its handshake is answered (ZAP)
# and what it says is refused too.
late=$(on_host bench "$PROBE" hijack "$ENDPOINT" "$KEYS/orch/orch.key" "$KEYS/coord/coordinator.pub" bench 2 2>&1)
out=$(cat "$SCRATCH/hijack.out")
is "$out" "received 6 messages: bye bye bye bye bye bye" \
   "each of the 6 Hellos as bench with orch's key is sent away, in the main loop and in the stop loop"
like "$late" "received 2 messages: bye bye" "a connection made during the stop is authenticated, and sent away as well"
like "$(q "$db" "SELECT group_concat(message, ' | ') FROM event WHERE source = 'transport' AND message LIKE 'refused messages of agent bench: %'")" \
     "the key of agent orch cannot speak for agent bench" "the refusal is an event naming both the key and the id"
kill -0 "$coord" 2>/dev/null
ok $? "the coordinator still waits for the server (the refusals happened in its stop loop)"
is "$(q "$db" "SELECT group_concat(id) FROM agent")" "orch" "no agent bench was ever recorded: only orch joined"
[ "$T_FAILED" -eq 0 ] || { sed "s/^/#   /" "$SCRATCH/coord.txt" | tail -20; q "$db" "SELECT kind, message FROM event" | sed "s/^/#   /" | tail -20; cat "$SCRATCH/orch.out"; }
kill -KILL "$coord" "$orch" 2>/dev/null
done_testing
