#!/usr/bin/env bash
# The coordinator's host loses its process 20 times: SIGKILL at random moments of a three-host campaign over
# CURVE, `vbench resume` each time. The agents on the other hosts are never restarted: they notice, reattach
# to the new coordinator process on the same endpoint, say what they run and resend what was not
# acknowledged; the new coordinator takes over the item that was running instead of running it again. In the
# end every item is done and every result is in the database exactly once.
# VB_SEED=N repeats the moments of an earlier run (the seed is printed).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/hosts.sh"
KILLS=${VB_KILLS:-20}
hosts_up
ok $? "three hosts: coord, bench and orch"
hosts_keys bench orch
ok $? "keys and allow-list"

db="$SCRATCH/kills.sqlite"
# A longer churn (the last item, about 7 s) takes the kills that fall at the end of the plan.
WINDOW_S=3 REPEATS=3 SILENT_S=5 CHURN_FRACTION=0.5 tiny_profile "$SCRATCH/tiny.yml"
start_campaign "$SCRATCH/tiny.yml" "$db"
wait_sql "$db" "SELECT COUNT(*) FROM agent" 2 60
ok $? "both agents joined"

# The moments: KILLS positions in the plan (a number of items done, drawn uniformly, sorted), each followed by
# a random 0 .. 1 s; so the kills fall into every phase, whatever the machine's speed.
seed=${VB_SEED:-$(( $(date +%s) % 100000 ))}
RANDOM=$seed
echo "# random seed $seed (VB_SEED=$seed repeats these moments)"
n_items=$(q "$db" "SELECT COUNT(*) FROM plan")
draws=""
# At most n_items - 3 done: at least the last filtered point and the churn item (seconds long) are left, so the
# 0 .. 1 s delay after a draw cannot outlast the campaign (with draws up to n_items - 1 the campaign sometimes
# finished before the last kill).
for _ in $(seq 1 "$KILLS"); do draws="$draws $((RANDOM % (n_items - 2)))"; done   # here: a subshell reseeds RANDOM
targets=$(printf '%s\n' $draws | sort -n | tr '\n' ' ')
kills=0 ended_early=0 moments=""
for target in $targets; do
    wait_sql "$db" "SELECT COUNT(*) FROM plan WHERE status = 'done'" "$target" 120 || break
    ms=$((RANDOM % 1000))
    sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
    if ! kill -0 "$coord" 2>/dev/null; then ended_early=1; break; fi
    running=$(q "$db" "SELECT phase || '/' || point FROM plan WHERE status = 'running'" 2>/dev/null | sed 's/,ef_search.*//')
    kill -9 "$coord"
    wait "$coord" 2>/dev/null
    kills=$((kills + 1))
    moments="$moments $target+${ms}ms:${running:-between-items}"
    coordinator resume --out "$db" 2>>"$SCRATCH/coord.txt" &
    coord=$!
    HOST_PIDS="$HOST_PIDS $coord"
done
echo "# kills (items done + delay: item running):$moments"
is "$kills $ended_early" "$KILLS 0" "the coordinator was killed $KILLS times while the campaign ran"

wait_pid $coord 170
is "$WAIT_RC" "0" "the last resume completes the campaign"
[ "$WAIT_RC" = 0 ] || sed 's/^/#   /' "$SCRATCH/coord.txt" | tail -30
check_complete "$db"
runs=$(q "$db" "SELECT runs FROM campaign")
is "$((runs - 1))" "$(q "$db" "SELECT COUNT(*) FROM event WHERE kind = 'resumed'")" \
   "$runs coordinator processes ran it, each resume recorded (the others were killed before they opened the database)"
pids=$(q "$db" "SELECT message FROM event WHERE message LIKE 'agent bench (%' OR message LIKE 'agent orch (%'" |
       sed -n 's/^agent \([a-z]*\) ([^,]*, PID \([0-9]*\).*/\1:\2/p' | sort -u | tr '\n' ' ')
is "$pids" "bench:$bench orch:$orch " "the agents were never restarted: one process each through every coordinator"
joined=$(q "$db" "SELECT COUNT(*) FROM event WHERE kind = 'agent_joined' AND message LIKE 'agent bench (%'")
last=$(q "$db" "SELECT COUNT(*) FROM event WHERE kind = 'agent_joined' AND message LIKE 'agent bench (%' AND id > (SELECT MAX(id) FROM event WHERE kind = 'resumed')")
is "$last" "1" "the client agent reattached to the last coordinator (and to earlier ones: $joined times in all)"
taken=$(q "$db" "SELECT COUNT(*) FROM event WHERE kind = 'item_taken_over'")
[ "$taken" -ge 1 ]; ok $? "items still running on the agent were taken over, not run again ($taken times)"
reruns=$(q "$db" "SELECT COALESCE(SUM(attempts - 1), 0) FROM plan")
stale=$(q "$db" "SELECT COUNT(*) FROM event WHERE kind = 'not_recorded'")
echo "# attempts beyond the first: $reruns; late messages of interrupted attempts kept out of the tables: $stale"
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE attempts > 1 AND key NOT IN (SELECT item_key FROM event WHERE message LIKE 'interrupted%' OR message LIKE '%runs again%' OR message LIKE '%no longer current%')")" \
   "0" "every item that ran more than once has its interruption in the events table"
wait_pid $bench 30; is "$WAIT_RC" "0" "the client agent leaves with the campaign's end"
wait_pid $orch 30; is "$WAIT_RC" "0" "the orchestrator agent leaves with the campaign's end"
is "$(find "$SCRATCH/bench.d/outbox/bench" -name '*.pb' | wc -l)" "0" "the client's outbox ends empty"
done_testing
