#!/usr/bin/env bash
# The client host's only link goes down for 10 s in the middle of a concurrency window (ip link set down in its
# namespace: nothing is reset, packets just stop), with limits.agent_silent_s = 3. The coordinator marks the
# agent lost and the window interrupted; the agent, which goes on measuring, notices the silence and keeps
# connecting again on new sockets. When the link is back it says hello, tells that it finished the window
# and resends it from its outbox: that result belongs to the interrupted attempt, so it is acknowledged and
# recorded as an event, not as a result. The window runs again (attempt 2) and is recorded once.
. "$(dirname "$0")/../lib/lib.sh"
need python3
. "$(dirname "$0")/../lib/hosts.sh"
CUT_S=${VB_CUT_S:-10}
hosts_up
ok $? "three hosts: coord, bench and orch"
hosts_keys bench orch
ok $? "keys and allow-list"

db="$SCRATCH/cut.sqlite"
WINDOW_S=4 SILENT_S=3 tiny_profile "$SCRATCH/tiny.yml"
start_campaign "$SCRATCH/tiny.yml" "$db"

wait_sql "$db" "SELECT COUNT(*) FROM plan WHERE phase = 'concurrency' AND status = 'running'" 1 120
ok $? "a concurrency window is running"
window=$(q "$db" "SELECT key FROM plan WHERE phase = 'concurrency' AND status = 'running'")
sleep 1   # into the window (warm-up 0.2 s, window 4 s)
link_down
ok $? "the client's link is down"
cut_at=$(date +%s.%N)
wait_sql "$db" "SELECT COUNT(*) FROM event WHERE kind = 'agent_lost' AND message LIKE 'agent bench %(was busy)'" 1 30
ok $? "the coordinator marks the silent agent lost"
# "marked lost" and "interrupted" are two writes: wait for the second rather than race it.
wait_sql "$db" "SELECT COUNT(*) FROM event WHERE item_key = '$window' AND kind = 'item_interrupted'" 1 10
ok $? "... and the running window interrupted"
is "$(q "$db" "SELECT status FROM plan WHERE key = '$window'")" "interrupted" "the plan marks it interrupted while no client is there"
sleep "$(python3 -c "import time; print(max(0.0, $CUT_S - (time.time() - $cut_at)))")"
link_up
ok $? "the link is back after $CUT_S s"
back=$(date -u +%Y-%m-%dT%H:%M:%S)

wait_pid $coord 170
is "$WAIT_RC" "0" "the campaign completes (exit 0)"
[ "$WAIT_RC" = 0 ] || sed 's/^/#   /' "$SCRATCH/coord.txt" | tail -20
check_complete "$db"
is "$(q "$db" "SELECT attempts FROM plan WHERE key = '$window'")" "2" "the interrupted window ran again, twice in all"
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE attempts <> 1 AND key <> '$window'")" "0" "every other item ran once"
is "$(q "$db" "SELECT COUNT(*) FROM window_result WHERE item_key = '$window' AND recorded_at > '$back'")" "1" \
   "its one recorded result is the second attempt's, measured after the link came back"
like "$(q "$db" "SELECT group_concat(message, ' | ') FROM event WHERE item_key = '$window'")" \
     "result $window#window of attempt 1 arrived after that attempt was interrupted: not recorded" \
     "the first attempt's result, resent from the outbox, is acknowledged and kept out of the tables"
like "$(q "$db" "SELECT group_concat(message, ' | ') FROM event WHERE kind = 'agent_back' AND message LIKE 'agent bench %'")" \
     "(was lost): " "the agent came back by itself and said hello again"
like "$(cat "$SCRATCH/bench.txt")" "the coordinator has been silent for" "the agent noticed the silence itself"
is "$(q "$db" "SELECT COUNT(*) FROM event WHERE kind = 'agent_lost' AND message LIKE 'agent orch %'")" "0" "the orchestrator host, whose link stayed up, was never lost"
pids=$(q "$db" "SELECT message FROM event WHERE message LIKE 'agent bench (%'" | sed -n 's/^[^(]*([^,]*, PID \([0-9][0-9]*\).*/\1/p' | sort -u)
is "$pids" "$bench" "the client agent is the same process throughout"
wait_pid $bench 30; is "$WAIT_RC" "0" "the agent leaves with the campaign's end"
is "$(find "$SCRATCH/bench.d/outbox/bench" -maxdepth 1 -name '*.pb' | wc -l)" "0" "its outbox ends empty"
done_testing
