#!/usr/bin/env bash
# `vbench keys NAME`: a CURVE key pair in czmq's zcert format, the secret half private, never overwritten by
# accident. What the keys do on the wire is tests/unit/test_transport.c.
. "$(dirname "$0")/../lib/lib.sh"

out=$("$VBENCH" keys --help 2>&1)
ok $? "keys --help exits 0"
like "$out" "usage: vbench keys NAME" "keys --help shows the usage"

out=$("$VBENCH" keys agent-1 --dir "$SCRATCH/k/d" 2>&1)
ok $? "keys writes a pair"
like "$out" "$SCRATCH/k/d/agent-1.key" "it names the secret file"
like "$out" "$SCRATCH/k/d/agent-1.pub" "it names the public file"
key=$(printf '%s\n' "$out" | sed -n 's/^public key: //p')
is "${#key}" "40" "it prints the public key (40 Z85 characters)"
is "$(stat -c %a "$SCRATCH/k/d/agent-1.key")" "600" "the .key is mode 0600"
is "$(stat -c %a "$SCRATCH/k/d/agent-1.pub")" "644" "the .pub is mode 0644"
is "$(stat -c %a "$SCRATCH/k/d")" "700" "a directory it creates is mode 0700"
grep -qF "public-key = \"$key\"" "$SCRATCH/k/d/agent-1.pub"; ok $? "the .pub holds the printed key"
! grep -q "secret-key" "$SCRATCH/k/d/agent-1.pub"; ok $? "the .pub holds no secret"
grep -q "secret-key" "$SCRATCH/k/d/agent-1.key"; ok $? "the .key holds the secret"

out=$("$VBENCH" keys agent-1 --dir "$SCRATCH/k/d" 2>&1)
is "$?" "1" "an existing pair is not overwritten (exit 1)"
like "$out" "already exists" "... saying so"
like "$out" "--force" "... and how to replace it"
grep -qF "public-key = \"$key\"" "$SCRATCH/k/d/agent-1.pub"; ok $? "... and the old pair is intact"

out=$("$VBENCH" keys agent-1 --dir "$SCRATCH/k/d" --force 2>&1)
ok $? "--force replaces the pair"
key2=$(printf '%s\n' "$out" | sed -n 's/^public key: //p')
[ -n "$key2" ] && [ "$key2" != "$key" ]; ok $? "... with a new key"

"$VBENCH" keys >/dev/null 2>&1
is "$?" "2" "keys without a NAME exits 2"
out=$("$VBENCH" keys ../escape --dir "$SCRATCH/k" 2>&1)
is "$?" "1" "a NAME with a slash is refused"
like "$out" "bad key name" "... saying why"

# A coordinator listening with CURVE on loopback keeps its local agent: the agent gets a throw-away key pair of its
# own, named by its id (an agent's id is bound to its key's name), and the campaign completes.
mkdir -p "$SCRATCH/c/allow" && "$VBENCH" keys coordinator --dir "$SCRATCH/c" >/dev/null
port=$((20000 + RANDOM % 20000))
"$VBENCH" run --profile "$(dirname "$0")/../profiles/tiny.yml" --out "$SCRATCH/c/tiny.sqlite" --quiet \
    --listen "tcp://127.0.0.1:$port" --cert "$SCRATCH/c/coordinator.key" --allow "$SCRATCH/c/allow" \
    >"$SCRATCH/c/out.txt" 2>&1
is "$?" "0" "a campaign listening with CURVE, with its local agent, completes"
is "$(sqlite3 "$SCRATCH/c/tiny.sqlite" "SELECT COUNT(*) FROM event WHERE message LIKE 'allowed agent key % (local-client) from %'")" \
   "1" "the local agent connects with a key named by its own id"
is "$(sqlite3 "$SCRATCH/c/tiny.sqlite" "SELECT COUNT(*) FROM event WHERE message LIKE 'refused%'")" "0" "nothing was refused"
done_testing
