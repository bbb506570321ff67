#!/usr/bin/env bash
# One coordinator per results database. While `vbench run` works on a database, a second `resume` (what the
# systemd unit does on its own) and a second `run --out` of the same file are refused with who holds it, and
# change nothing in it; `status` and `show` read it meanwhile, and `status` names the running coordinator. A
# SIGKILLed coordinator leaves no lock behind: `status` says the campaign stopped without finishing and how to go
# on, and `resume` completes it. With a second agent (network namespaces, tests/lib/hosts.sh): a second
# coordinator on another port, with an agent of its own, is refused before it can hand out a single item.
. "$(dirname "$0")/../lib/lib.sh"
db="$SCRATCH/one.sqlite"
# About 8 s: windows of 1 s at six client counts on the exact engine.
# The windows run an open loop at 200 queries/s: this file checks faults, not throughput, and a closed loop kept
# both cores busy for every window (CPU the whole suite paid for, issue 40).
cat >"$SCRATCH/slow.yml" <<'YML'
name: onewriter
datasets:
  - {name: synth-tiny, source: synthetic, rows: 2000, queries: 40, dim: 16, clusters: 8, metric: euclidean, seed: 5}
engines:
  - name: exact
phases:
  build: {}
  concurrency: {clients: [1, 2, 3, 4, 5, 6], window_s: 1, repeats: 1, warmup_s: 0, mode: open, target_rate: 200}
YML
for tool in sqlite3 pgrep hostname; do
    command -v $tool >/dev/null || { echo "not ok 1 - $tool is missing (deploy/install-deps)"; echo "1..1"; exit 1; }
done

"$VBENCH" run --profile "$SCRATCH/slow.yml" --out "$db" --quiet 2>"$SCRATCH/run1.txt" &
pid=$!
wait_sql "$db" "SELECT COUNT(*) FROM plan WHERE status = 'running' AND phase = 'concurrency'" 1 60
ok $? "the first coordinator is in its concurrency windows"

out=$("$VBENCH" status --out "$db" 2>&1)
ok $? "status works while the campaign runs"
like "$out" "campaign onewriter: running (coordinator PID $pid on $(hostname) since " "status names the running coordinator: PID, host, start"
"$VBENCH" show --out "$db" >/dev/null 2>"$SCRATCH/show.txt"
ok $? "show works while the campaign runs"

runs=$(q "$db" "SELECT runs FROM campaign")
out=$("$VBENCH" resume --out "$db" --quiet 2>&1)
rc=$?
is "$rc" "3" "a second coordinator (resume) on the same database is refused, exit 3"
like "$out" "campaign onewriter is being run by PID $pid on $(hostname) since " "... saying who holds it"
like "$out" "vbench status --out $db" "... and what to do"
out=$("$VBENCH" run --profile "$SCRATCH/slow.yml" --out "$db" --quiet 2>&1)
is "$?" "3" "a second run --out of the same database is refused too"
like "$out" "is being run by PID $pid" "... naming the holder"
kill -0 $pid 2>/dev/null
ok $? "the first coordinator runs on"
is "$(q "$db" "SELECT runs FROM campaign")" "$runs" "the refused coordinators did not start a run in the database"
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status = 'interrupted'")" "0" "... nor interrupt the running item"
is "$(q "$db" "SELECT COUNT(*) FROM event WHERE kind = 'resumed'")" "0" "... nor record a resume"

# SIGKILL: the kernel drops the lock with the process.
children=$(pgrep -P $pid | tr '\n' ' ')
kill -9 $pid
wait $pid 2>/dev/null
for c in $children; do for _ in $(seq 1 100); do kill -0 "$c" 2>/dev/null || break; sleep 0.1; done; done
out=$("$VBENCH" status --out "$db" 2>&1)
ok $? "status after the coordinator was killed"
like "$out" "campaign onewriter: stopped without finishing (coordinator not running): vbench resume --out $db" \
     "status does not call a campaign without a coordinator running"
case "$out" in *"onewriter: running"*) ok 1 "... and never 'running'" ;; *) ok 0 "... and never 'running'" ;; esac

"$VBENCH" resume --out "$db" --quiet 2>"$SCRATCH/run2.txt"
rc=$?
is "$rc" "0" "resume after SIGKILL takes the lock and completes the campaign"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/run2.txt" | tail -5
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every item done"
is "$(q "$db" "SELECT COUNT(*) || ' ' || COUNT(DISTINCT item_key) FROM window_result")" "6 6" "every window once"
like "$("$VBENCH" status --out "$db" 2>&1)" "campaign onewriter: finished (coordinator runs: 2;" "status: finished"
[ ! -e "$db.lock" ]; ok $? "the lock file is gone after a clean exit"

# A coordinator inside a PID namespace (a container; the systemd namespace of the server tests) is PID 1 there: its
# lock record gives its namespace; a second coordinator on the host is refused with both PIDs, the namespace's and
# the host's, and told to kill the host's (kill 1 would hit the host's init).
if [ "$(id -u)" -eq 0 ]; then
    nsdb="$SCRATCH/ns.sqlite"
    unshare --pid --fork --kill-child --mount-proc "$VBENCH" run --profile "$SCRATCH/slow.yml" --out "$nsdb" --quiet \
        2>"$SCRATCH/ns.txt" &
    ns=$!
    wait_sql "$nsdb" "SELECT COUNT(*) FROM plan WHERE status = 'running' AND phase = 'concurrency'" 1 60
    ok $? "a coordinator in a PID namespace of its own is in its windows"
    inner=$(awk '$1 == "pid" { print $2 }' "$nsdb.lock")
    hostpid=$(awk '{ print $1 }' "/proc/$ns/task/$ns/children")
    is "$inner" "1" "its lock record says PID 1, its namespace's number"
    out=$("$VBENCH" resume --out "$nsdb" --quiet 2>&1)
    is "$?" "3" "a second coordinator on the host is refused, exit 3"
    like "$out" "is being run by PID 1 of another PID namespace (pid:[" "... naming the PID as the holder's namespace numbers it"
    like "$out" "PID $hostpid here" "... and as the host does ($hostpid)"
    like "$out" "(kill $hostpid," "... telling it to kill the host's PID"
    like "$("$VBENCH" status --out "$nsdb" 2>&1)" "coordinator PID 1 of another PID namespace (pid:[" "status says both too"
    # Its agent's events say which namespace their PID is numbered in (the coordinator inside cannot see the host's).
    like "$(q "$nsdb" "SELECT message FROM event WHERE kind = 'agent_joined' LIMIT 1")" \
         "of PID namespace pid:[$(readlink "/proc/$hostpid/ns/pid" | tr -dc 0-9)] (this process's too, not the host's)" \
         "an agent's join event inside the namespace names its PID namespace, not the host's"
    kill -9 $ns 2>/dev/null
    wait $ns 2>/dev/null

    # A coordinator on the host and an agent in a PID namespace of its own: the join event gives both PIDs.
    sock="$SCRATCH/coord.sock"
    "$VBENCH" run --profile "$(dirname "$0")/../profiles/tiny.yml" --out "$SCRATCH/nsagent.sqlite" --listen "ipc://$sock" \
        --no-local-agents --quiet >"$SCRATCH/nsagent.txt" 2>&1 &
    coord=$!
    for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
    unshare --pid --fork --kill-child --mount-proc "$VB_BIN/vbench-agent" --connect "ipc://$sock" --id nsagent \
        --workdir "$SCRATCH/nsagent.d" --cache-dir "$SCRATCH/nsagent.cache" >"$SCRATCH/nsagent-agent.txt" 2>&1 &
    agent_ns=$!
    wait_sql "$SCRATCH/nsagent.sqlite" "SELECT COUNT(*) FROM event WHERE kind = 'agent_joined'" 1 60
    agent_host=$(awk '{ print $1 }' "/proc/$agent_ns/task/$agent_ns/children" 2>/dev/null)
    wait $coord
    is "$?" "0" "a campaign with its agent in a PID namespace of its own completes"
    msg=$(q "$SCRATCH/nsagent.sqlite" "SELECT message FROM event WHERE kind = 'agent_joined' AND message LIKE 'agent nsagent %'")
    like "$msg" "PID 1 of another PID namespace (pid:[" "the agent's join event gives its PID as its namespace numbers it"
    like "$msg" "PID ${agent_host:-?} here" "... and as the host does (${agent_host:-not found})"
    kill -9 $agent_ns 2>/dev/null
    wait $agent_ns 2>/dev/null
fi

# A second agent: two coordinators on one database, each with an agent of its own (different ports), would both
# measure. The second is refused before it binds or assigns anything.
. "$(dirname "$0")/../lib/hosts.sh"
if [ "$(id -u)" -ne 0 ] || ! ip netns add "vbt-probe-$HOSTS_TAG" 2>/dev/null; then
    skip "two coordinators with agents on other hosts: needs root and network namespaces"
    done_testing
    exit
fi
ip netns del "vbt-probe-$HOSTS_TAG"
hosts_up
ok $? "three hosts"
hosts_keys bench bench2
ok $? "keys for the coordinator and two client agents"
mdb="$SCRATCH/multi.sqlite"
cp "$SCRATCH/slow.yml" "$SCRATCH/multi.yml"
coordinator run --profile "$SCRATCH/multi.yml" --out "$mdb" 2>"$SCRATCH/coord.txt" &
coord=$!
agent bench bench 2>"$SCRATCH/bench.txt" &
bench=$!
HOST_PIDS="$coord $bench"
wait_sql "$mdb" "SELECT COUNT(*) FROM plan WHERE status = 'running' AND phase = 'concurrency'" 1 60
ok $? "coordinator 1 with agent bench is in its windows"
on_host coord "$VBENCH" resume --out "$mdb" --listen "tcp://$COORD_ADDR:5556" --cert "$KEYS/coord/coordinator.key" \
    --allow "$KEYS/allow" --no-local-agents --quiet 2>"$SCRATCH/coord2.txt" &
coord2=$!
on_host bench "$VB_BIN/vbench-agent" --connect "tcp://$COORD_ADDR:5556" --id bench2 --cert "$KEYS/bench2/bench2.key" \
    --server-key "$KEYS/coord/coordinator.pub" --workdir "$SCRATCH/bench2.d" 2>"$SCRATCH/bench2.txt" &
bench2=$!
HOST_PIDS="$HOST_PIDS $coord2 $bench2"
wait_pid $coord2 30
is "$WAIT_RC" "3" "coordinator 2 (resume on another port, agent bench2) is refused, exit 3"
like "$(cat "$SCRATCH/coord2.txt")" "is being run by PID" "... naming coordinator 1"
wait_pid $coord 120
is "$WAIT_RC" "0" "coordinator 1 finishes"
is "$(q "$mdb" "SELECT COUNT(*) FROM plan WHERE agent <> 'bench' OR status <> 'done'")" "0" \
   "every item done, all by bench: bench2 measured nothing"
is "$(q "$mdb" "SELECT COUNT(*) FROM agent WHERE id = 'bench2'")" "0" "bench2 never joined the campaign"
is "$(q "$mdb" "SELECT COUNT(*) || ' ' || COUNT(DISTINCT item_key) FROM window_result")" "6 6" "every window once"
kill $bench2 2>/dev/null
done_testing
