#!/usr/bin/env bash
# The client agent's process dies and is started again, as systemd does with Restart=on-failure, on a three-host
# campaign over CURVE:
#   1. SIGKILL in the middle of a concurrency window: the restarted agent says hello without the item, the window
#      is marked interrupted and runs again (attempt 2); the lost attempt leaves nothing in the tables.
#   2. A crash right after the window's Done was written to the outbox and before it was sent
#      (VBENCH_AGENT_FAULT=crash-after-final:1): the restarted agent loads its outbox, says it finished the
#      window and sends the outbox again; the window is not run a third time.
#   3. A damaged file in the outbox at that start: reported by name (terminal and events table), set aside,
#      and the agent works on.
# In the end: every item done, every result exactly once.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/hosts.sh"
hosts_up
ok $? "three hosts: coord, bench and orch"
hosts_keys bench orch
ok $? "keys and allow-list"

db="$SCRATCH/restart.sqlite"
WINDOW_S=3 SILENT_S=5 tiny_profile "$SCRATCH/tiny.yml"
BENCH_LOG=bench1.txt start_campaign "$SCRATCH/tiny.yml" "$db"
bench1=$bench

# 1. Mid-window: the first window item runs; its warm-up is 0.2 s, its window 3 s.
wait_sql "$db" "SELECT COUNT(*) FROM plan WHERE phase = 'concurrency' AND status = 'running'" 1 120
ok $? "a concurrency window is running"
window=$(q "$db" "SELECT key FROM plan WHERE phase = 'concurrency' AND status = 'running'")
sleep 1.5
kill -9 $bench1
wait $bench1 2>/dev/null
is "$(q "$db" "SELECT COUNT(*) FROM window_result WHERE item_key = '$window'")" "0" "killed before the window ended"
VBENCH_AGENT_FAULT=crash-after-final:1 agent bench bench 2>"$SCRATCH/bench2.txt" &
bench2=$!
HOST_PIDS="$HOST_PIDS $bench2"
wait_sql "$db" "SELECT COUNT(*) FROM event WHERE item_key = '$window' AND kind = 'item_interrupted' AND message LIKE '%the agent restarted during the item%'" 1 60
ok $? "the restarted agent's hello interrupts the window it no longer runs"

# 2. The window's second attempt ends; the agent dies right after writing its Done to the outbox.
wait_pid $bench2 120
is "$WAIT_RC" "137" "the restarted agent crashed where VBENCH_AGENT_FAULT said (SIGKILL)"
like "$(cat "$SCRATCH/bench2.txt")" "crashing after the outbox write of crash-after-final 1" "... right after writing the Done"
box="$SCRATCH/bench.d/outbox/bench"
left=$(find "$box" -maxdepth 1 -name '*.pb' | wc -l)
[ "$left" -ge 1 ]; ok $? "the Done is in the outbox ($left file(s))"

# 3. A damaged file beside it; then the agent starts again (systemd's next restart).
printf 'half a message' >"$box/00000000000bad00.pb"
agent bench bench 2>"$SCRATCH/bench3.txt" &
bench3=$!
HOST_PIDS="$HOST_PIDS $bench3"
wait_pid $coord 170
is "$WAIT_RC" "0" "the campaign completes (exit 0)"
[ "$WAIT_RC" = 0 ] || sed 's/^/#   /' "$SCRATCH/coord.txt" | tail -20
check_complete "$db"
is "$(q "$db" "SELECT attempts FROM plan WHERE key = '$window'")" "2" "the interrupted window ran twice in all"
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE attempts <> 1 AND key <> '$window'")" "0" "every other item ran once"
like "$(q "$db" "SELECT message FROM event WHERE message LIKE 'agent bench % said hello again%' ORDER BY id DESC LIMIT 1")" \
     "(was busy): reconnected, item finished" "after the crash the agent said it had finished the window"
like "$(cat "$SCRATCH/bench3.txt")" "sent the" "... and sent its outbox again"
like "$(q "$db" "SELECT group_concat(message, ' | ') FROM event WHERE item_key = '$window'")" "attempt 2 on agent bench" \
     "the second attempt is in the events table"
pids=$(q "$db" "SELECT message FROM event WHERE message LIKE 'agent bench (%'" | sed -n 's/^[^(]*([^,]*, PID \([0-9][0-9]*\).*/\1/p' | sort -u | wc -l)
is "$pids" "3" "three agent processes took part"
like "$(cat "$SCRATCH/bench3.txt")" "00000000000bad00.pb is damaged (truncated header)" "the damaged outbox file is named on the terminal"
like "$(q "$db" "SELECT message FROM event WHERE source = 'bench' AND message LIKE 'outbox file%'")" \
     "$box/corrupt/00000000000bad00.pb is damaged (truncated header): set aside" "... and in the events table"
[ -f "$box/corrupt/00000000000bad00.pb" ] && [ ! -f "$box/00000000000bad00.pb" ]
ok $? "it was moved to corrupt/"
wait_pid $bench3 30; is "$WAIT_RC" "0" "the agent leaves with the campaign's end"
is "$(find "$box" -maxdepth 1 -name '*.pb' | wc -l)" "0" "its outbox ends empty"
done_testing
