#!/usr/bin/env bash
# The coordinator's CURVE port under abuse while a campaign runs (three hosts, tests/lib/hosts.sh; the abuse comes
# from the orchestrator's host through tests/tools/vb_wireprobe):
#   junk      200 plain TCP connections sending bytes that are not ZMTP (libzmq 4.3.4 closes them without a
#             handshake event, so they make no event at all: checked here is that they flood nothing)
#   rogue     2,000 CURVE connections with a key that is not on the allow-list
#   big       one 200 MB frame from an allowed key: libzmq drops it at its header (ZMQ_MAXMSGSIZE, proto/wire.h)
#             and closes that connection; the coordinator's memory does not grow
#   hijack    an allowed key (orch's) connecting as the client agent's id while that agent runs a window: it gets
#             nothing back, and the client's window is neither interrupted nor run again
# The refusals are counted, a handful of events with counts (never one row each), and the campaign completes with
# every result once.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/hosts.sh"
PROBE=${VB_PROBE:-$VB_BIN/../build/tools/vb_wireprobe}
[ -x "$PROBE" ] || skip_all "$PROBE is not built (make tools)"
hosts_up
ok $? "three hosts: coord, bench and orch"
hosts_keys bench orch heavy
ok $? "keys for bench, orch and heavy (allowed, no agent) on the allow-list"
"$VBENCH" keys rogue --dir "$KEYS/rogue" >/dev/null
ok $? "a key that is not on the allow-list"

db="$SCRATCH/wire.sqlite"
# The sleep engine (200 us a query, no CPU while "served"): the windows keep the campaign running while the wire
# is abused, without taking the CPU the rest of the suite runs on. It has no filters: no filtered phase.
ENGINE_ENTRY="  - {name: sleep, service_us: 200}" FILTERED_LINE="" WINDOW_S=6 REPEATS=3 tiny_profile "$SCRATCH/tiny.yml"
start_campaign "$SCRATCH/tiny.yml" "$db"
wait_sql "$db" "SELECT COUNT(*) FROM agent" 2 60
ok $? "both agents joined over CURVE"
# The hijack: orch's key (allowed) with the id of the client agent, while it runs a concurrency window
# (sleep: a second into the window).
wait_sql "$db" "SELECT COUNT(*) FROM plan WHERE phase = 'concurrency' AND status = 'running'" 1 120
ok $? "a concurrency window is running on the client agent"
window=$(q "$db" "SELECT key FROM plan WHERE phase = 'concurrency' AND status = 'running'")
sleep 1
out=$(on_host orch "$PROBE" hijack "$ENDPOINT" "$KEYS/orch/orch.key" "$KEYS/coord/coordinator.pub" bench 4 2>&1)
is "$out" "received 0 messages:" "the hijacker, speaking as agent bench with orch's key, gets nothing back"

rss_kb() { sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$coord/status"; }
hwm0=$(rss_kb)

out=$(on_host orch "$PROBE" junk "$COORD_ADDR" "$PORT" 200 2>&1)
is "$out" "junk sent on 200 of 200 connections" "200 connections of junk bytes"
out=$(on_host orch "$PROBE" rogue "$ENDPOINT" "$KEYS/rogue/rogue.key" "$KEYS/coord/coordinator.pub" 2000 2>&1)
is "$out" "refused 2000 of 2000" "2,000 connections with a key that is not on the allow-list, each refused"
out=$(on_host orch "$PROBE" big "$ENDPOINT" "$KEYS/heavy/heavy.key" "$KEYS/coord/coordinator.pub" heavy 200000000 2>&1)
is "$out" "closed" "a 200 MB frame from an allowed key: the coordinator closes that connection"
hwm1=$(rss_kb)
ok $((hwm1 - hwm0 < 65536 ? 0 : 1)) "the coordinator's peak memory grew by less than 64 MB ($hwm0 kB -> $hwm1 kB)"
kill -0 "$coord" 2>/dev/null
ok $? "the coordinator runs on"


wait_pid $coord 240
is "$WAIT_RC" "0" "the campaign completes (exit 0)"
[ "$WAIT_RC" = 0 ] || sed 's/^/#   /' "$SCRATCH/coord.txt" | tail -20
check_complete "$db"
is "$(q "$db" "SELECT attempts || ' ' || agent FROM plan WHERE key = '$window'")" "1 bench" \
   "the window that ran during the hijack ran once, on the real agent"
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE attempts <> 1")" "0" "every item ran once"
is "$(q "$db" "SELECT COUNT(*) FROM event WHERE kind IN ('agent_lost', 'local_agent_killed') AND message LIKE '%bench%'")" "0" \
   "the client agent was never taken for lost"

# The counts: the rogue key's refusals add up to 2,000 in a handful of rows.
rogue_key=$(sed -n 's/^ *public-key = "\(.*\)"$/\1/p' "$KEYS/rogue/rogue.pub")
rows=$(q "$db" "SELECT message FROM event WHERE source = 'transport' AND message LIKE 'refused %$rogue_key%'")
n_rows=$(printf '%s\n' "$rows" | grep -c .)
sum=$(printf '%s\n' "$rows" | sed -n -e 's/^refused agent key .*/1/p' -e 's/^refused \([0-9,]*\) connections of agent key .*/\1/p' |
      tr -d , | awk '{ s += $1 } END { print s + 0 }')
is "$sum" "2000" "the events count the rogue key's 2,000 refusals"
ok $((n_rows >= 1 && n_rows <= 4 ? 0 : 1)) "... in $n_rows rows (one at the first refusal, then one a minute)"
total=$(q "$db" "SELECT COUNT(*) FROM event WHERE source = 'transport'")
ok $((total <= 20 ? 0 : 1)) "all the abuse made $total transport events, not thousands"
[ "$total" -le 20 ] || q "$db" "SELECT message FROM event WHERE source = 'transport' LIMIT 5" | sed 's/^/#   /'
wait_pid $bench 30; is "$WAIT_RC" "0" "the client agent leaves with the campaign's end"
done_testing
