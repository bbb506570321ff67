#!/usr/bin/env bash
# An agent of another protocol version (VBENCH_AGENT_PROTOCOL=3 makes this build say protocol 3 in its Hello, as a
# vbench of protocol 3 does) joins a campaign over CURVE: the coordinator records one event and answers with a Bye
# (code BYE_PROTOCOL) that names both versions and what to do; the agent prints it and exits 1 instead of saying
# Hello forever. The campaign runs on with the agents of its own version.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/hosts.sh"
hosts_up
ok $? "three hosts: coord, bench and orch"
hosts_keys bench orch old
ok $? "keys for bench, orch and old on the allow-list"

db="$SCRATCH/version.sqlite"
WINDOW_S=1 REPEATS=1 tiny_profile "$SCRATCH/tiny.yml"
start_campaign "$SCRATCH/tiny.yml" "$db"
wait_sql "$db" "SELECT COUNT(*) FROM agent" 2 60
ok $? "both agents of this version joined"

VBENCH_AGENT_PROTOCOL=3 agent bench old 2>"$SCRATCH/old.txt" &
old=$!
HOST_PIDS="$HOST_PIDS $old"
wait_pid $old 60
is "$WAIT_RC" "1" "the agent of protocol 3 exits 1 (not 124: it did not wait for a Welcome forever)"
like "$(cat "$SCRATCH/old.txt")" "sent this agent away: agent old speaks protocol 3, this coordinator" \
     "the agent prints the coordinator's reason"
like "$(cat "$SCRATCH/old.txt")" "install the same vbench version" "... which says what to do"
is "$(q "$db" "SELECT COUNT(*) FROM event WHERE kind = 'protocol_refused' AND message LIKE 'agent old speaks protocol 3, %'")" "1" \
   "the coordinator records one event naming both versions"
is "$(q "$db" "SELECT COUNT(*) FROM agent WHERE id = 'old'")" "0" "the agent of protocol 3 is not taken on"

wait_pid $coord 300
is "$WAIT_RC" "0" "the campaign completes with the agents of its own version"
[ "$WAIT_RC" = 0 ] || sed 's/^/#   /' "$SCRATCH/coord.txt" | tail -20
check_complete "$db"
done_testing
