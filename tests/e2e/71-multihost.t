#!/usr/bin/env bash
# Three hosts (network namespaces with veth links, tests/lib/hosts.sh): the coordinator on one, the client agent
# on another, an agent with role orchestrator on the third, speaking CURVE over TCP with keys made by
# `vbench keys`. A small campaign of all five phases completes, every result recorded once, the agents recorded
# with their hosts. Meanwhile an agent whose key is not on the allow-list is refused (the refusal is in the
# events table), an agent whose key is added to the allow-list after the start is welcomed once the coordinator
# has had SIGHUP, an agent that uses an allowed key with another agent's id is sent away, and an agent that pins
# another coordinator's key refuses to go on, saying why.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/hosts.sh"
hosts_up
ok $? "three hosts: coord, bench and orch, linked by veth pairs"
hosts_keys bench orch
ok $? "key pairs for the coordinator and both agents; their .pub files on the allow-list"
"$VBENCH" keys rogue --dir "$KEYS/rogue" >/dev/null && "$VBENCH" keys coordinator --dir "$KEYS/other" >/dev/null
ok $? "a key pair that is not on the allow-list, and another coordinator's key pair"

db="$SCRATCH/multihost.sqlite"
tiny_profile "$SCRATCH/tiny.yml"
start_campaign "$SCRATCH/tiny.yml" "$db"

wait_sql "$db" "SELECT COUNT(*) FROM agent" 2 60
ok $? "both agents joined over CURVE"
is "$(q "$db" "SELECT value FROM manifest WHERE key = 'transport.coordinator_key'")" \
   "$(sed -n 's/^ *public-key = "\(.*\)"$/\1/p' "$KEYS/coord/coordinator.pub")" \
   "the manifest names the coordinator's public key (transport.security $(q "$db" "SELECT value FROM manifest WHERE key = 'transport.security'"))"

# Admitted mid-campaign: a key put into the allow-list directory after the start counts once the coordinator
# has had SIGHUP (systemctl reload), without a restart.
"$VBENCH" keys late --dir "$KEYS/late" >/dev/null && cp "$KEYS/late/late.pub" "$KEYS/allow/"
ok $? "a third agent's key pair, its .pub copied into the allow-list directory while the campaign runs"
kill -HUP "$coord"
wait_sql "$db" "SELECT COUNT(*) FROM event WHERE source = 'transport' AND message LIKE 'allow-list reloaded from $KEYS/allow: % keys'" 1 30
ok $? "SIGHUP: the coordinator reads the allow-list again ($(q "$db" "SELECT message FROM event WHERE message LIKE 'allow-list reloaded%'"))"
agent orch late --roles orchestrator 2>"$SCRATCH/late.txt" &
late=$!
HOST_PIDS="$HOST_PIDS $late"
wait_sql "$db" "SELECT COUNT(*) FROM agent WHERE id = 'late'" 1 60
ok $? "the agent with the newly allowed key is welcomed"
kill -0 "$coord" 2>/dev/null
ok $? "the coordinator is still running after SIGHUP"

# Refused: a key that is not on the allow-list (the agent stops with the coordinator's answer).
agent orch rogue 2>"$SCRATCH/rogue.txt" &
rogue=$!
HOST_PIDS="$HOST_PIDS $rogue"
wait_pid $rogue 60
is "$WAIT_RC" "1" "an agent whose key is not on the allow-list stops with exit 1"
like "$(cat "$SCRATCH/rogue.txt")" "refused this agent's key (not on its allow-list)" "... saying the coordinator refused its key"
like "$(cat "$SCRATCH/rogue.txt")" "rogue.pub" "... and which file to put into the --allow directory"
wait_sql "$db" "SELECT COUNT(*) FROM event WHERE source = 'transport' AND message LIKE 'refused agent key %'" 1 30
ok $? "the refusal is in the events table"
like "$(q "$db" "SELECT message FROM event WHERE source = 'transport' AND message LIKE 'refused%'")" "10.77.2.2" \
     "... with the refused agent's address"

# Refused by itself: it pins a public key that is not this coordinator's.
agent_as bench wrongkey "$KEYS/bench/bench.key" "$KEYS/other/coordinator.pub" 2>"$SCRATCH/wrongkey.txt" &
wrong=$!
HOST_PIDS="$HOST_PIDS $wrong"
wait_pid $wrong 60
is "$WAIT_RC" "1" "an agent pinning the wrong coordinator key stops with exit 1"
like "$(cat "$SCRATCH/wrongkey.txt")" "did not complete the CURVE handshake" "... saying the handshake never completed"
like "$(cat "$SCRATCH/wrongkey.txt")" "check that --server-key $KEYS/other/coordinator.pub is the coordinator's public key" \
     "... and which file to check"

# Refused by the coordinator after the handshake: an allowed key (bench's) used with another agent's id. The id
# is bound to the key's allow-list name, so one key cannot speak for another agent.
agent_as bench impostor "$KEYS/bench/bench.key" "$KEYS/coord/coordinator.pub" 2>"$SCRATCH/impostor.txt" &
impostor=$!
HOST_PIDS="$HOST_PIDS $impostor"
wait_pid $impostor 60
is "$WAIT_RC" "1" "an agent speaking as another id than its key's stops with exit 1"
like "$(cat "$SCRATCH/impostor.txt")" "the key of agent bench cannot speak for agent impostor: start it with --id bench" \
     "... saying whose key it holds and what to do"
is "$(q "$db" "SELECT COUNT(*) FROM event WHERE source = 'transport' AND message LIKE 'refused messages of agent impostor: %'")" \
   "1" "the refusal is one event, not one per message"
is "$(q "$db" "SELECT COUNT(*) FROM agent WHERE id IN ('rogue', 'wrongkey', 'impostor')")" "0" "no refused agent was ever welcomed"

wait_pid $coord 170
is "$WAIT_RC" "0" "the campaign over CURVE completes (exit 0)"
[ "$WAIT_RC" = 0 ] || sed 's/^/#   /' "$SCRATCH/coord.txt" | tail -20
check_complete "$db"
is "$(q "$db" "SELECT group_concat(id || ':' || host || ':' || roles, ' ') FROM (SELECT * FROM agent ORDER BY id)")" \
   "bench:bench-host:client late:orch-host:orchestrator orch:orch-host:orchestrator" \
   "the agents are recorded with their hosts and roles"
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE agent <> 'bench'")" "0" "every item ran on the client host"
# Twice: the client's own connection, and the impostor's with the same key (allowed by the handshake, then sent
# away for its id).
is "$(q "$db" "SELECT COUNT(*) FROM event WHERE message LIKE 'allowed agent key % (bench) from 10.77.1.2%'")" "2" \
   "the client's key was allowed, from its own address"
is "$(q "$db" "SELECT SUM(attempts) FROM plan")" "$(q "$db" "SELECT COUNT(*) FROM plan")" "no fault, no second attempt"
wait_pid $bench 30; is "$WAIT_RC" "0" "the client agent leaves when the campaign is over"
wait_pid $orch 30; is "$WAIT_RC" "0" "the orchestrator agent leaves when the campaign is over"
wait_pid $late 30; is "$WAIT_RC" "0" "the agent admitted mid-campaign leaves when the campaign is over"
is "$(find "$SCRATCH/bench.d/outbox/bench" -name '*.pb' | wc -l)" "0" "the client's outbox is empty: everything was acknowledged"
done_testing
