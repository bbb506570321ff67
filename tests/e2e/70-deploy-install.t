#!/usr/bin/env bash
# deploy/install and the systemd units (systemd/), from an inventory of two hosts:
#  1. into a root prefix (--root): the file tree of each host, modes of keys and directories, the keys themselves
#     (loaded by czmq), environment files and drop-ins, `systemd-analyze verify`, a second run that changes
#     nothing, a changed inventory that prunes what it no longer names, errors that name file, line and key, and
#     --dry-run, which for a remote host prints the ssh command and runs nothing;
#  2. on a real systemd, booted as PID 1 of a PID + mount namespace (deploy/systemd-ns) with overlays on
#     /etc, /usr/local and /var: install runs its remote path with a stand-in for ssh that enters the namespace,
#     so install-apply's systemctl talks to that systemd. Checked: daemon-reload, enable and start; the
#     properties systemd applied (CPUAffinity, AllowedCPUs, MemoryMax, Restart, the sandbox of each role); the
#     orchestrator's sandbox can start a transient unit over sd-bus and the client's cannot; a small campaign
#     (hnswlib, pinned workers, BLAS ground truth) runs in the client's sandbox and limits; a host whose roles
#     change loses the old agents (stopped, disabled, pruned). When bin/vbench-agent takes the flags the unit
#     passes (--cert, --server-key, --recipes, --images), also: the agents run pinned to their CPUs, speak CURVE
#     to the coordinator's address, and come back after a SIGKILL.
. "$(dirname "$0")/../lib/lib.sh"
need python3
. "$(dirname "$0")/../../deploy/systemd-ns"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
INSTALL=$ROOT/deploy/install
ZCERT=$ROOT/${BUILD:-build}/tools/vb_zcert
inst() { "$INSTALL" "$@" --bin "$VB_BIN" --engines "$SCRATCH/engines"; }

LAST=$(( $(nproc) - 1 ))            # the client's CPU: one that exists here
PORT=$(( 20000 + $$ % 20000 ))      # the coordinator's address, where the test listens in part 2
mkdir -p "$SCRATCH/engines" "$SCRATCH/site"
echo "name: a" >"$SCRATCH/engines/a.yml"
echo "name: b" >"$SCRATCH/engines/b.yml"
INV=$SCRATCH/site/inventory.yml
cat >"$INV" <<EOF
coordinator:
  listen: tcp://127.0.0.1:$PORT
  connect: tcp://127.0.0.1:$PORT
  profile: dev
keys: keys
hosts:
  - name: h1
    address: 10.9.0.1
    roles: [coordinator, client]
    cores: 0
    memory: 256M
  - name: h2
    address: 10.9.0.2
    user: bench
    port: 2222
    roles: [orchestrator, client]
    cores: $LAST
    memory: 300M
    recipes: [a]
EOF
KEYS=$SCRATCH/site/keys
R=$SCRATCH/root

# --- 1. into a root prefix ------------------------------------------------------------------------------------
"$VBENCH" inventory "$ROOT/deploy/inventory.example.yml" >/dev/null
ok $? "the example inventory is valid"
out=$(inst "$INV" --root "$R" 2>&1)
ok $? "install --root into a prefix, two hosts" || echo "$out" | diag
tree() { (cd "$1" && find . -type f -printf '%P\n' | sort | tr '\n' ' '); }
is "$(tree "$R/h1")" "etc/systemd/system/vbench-agent@.service etc/systemd/system/vbench-agent@h1-client.service.d/limits.conf etc/systemd/system/vbench-agent@h1-client.service.d/role.conf etc/systemd/system/vbench-coordinator.service etc/vbench/agent-h1-client.env etc/vbench/coordinator.env etc/vbench/keys/allow/h1-client.pub etc/vbench/keys/allow/h2-client.pub etc/vbench/keys/allow/h2-orchestrator.pub etc/vbench/keys/coordinator.key etc/vbench/keys/coordinator.pub etc/vbench/keys/h1-client.key usr/local/bin/vbench usr/local/bin/vbench-agent " \
   "h1 (coordinator, client): binaries, units, drop-ins, env files, its key, the coordinator's, the allow-list"
is "$(tree "$R/h2")" "etc/systemd/system/vbench-agent@.service etc/systemd/system/vbench-agent@h2-client.service.d/limits.conf etc/systemd/system/vbench-agent@h2-client.service.d/role.conf etc/systemd/system/vbench-agent@h2-orchestrator.service.d/role.conf etc/vbench/agent-h2-client.env etc/vbench/agent-h2-orchestrator.env etc/vbench/engines/a.yml etc/vbench/keys/coordinator.pub etc/vbench/keys/h2-client.key etc/vbench/keys/h2-orchestrator.key usr/local/bin/vbench usr/local/bin/vbench-agent " \
   "h2 (orchestrator, client): its recipe, no coordinator secret, no allow-list, no limits for the orchestrator"
modes=$(cd "$R" && find . -path '*/keys*' -printf '%m %u %P\n' | sort -k3 | tr '\n' ';')
bad=$(cd "$R" && find . \( -path '*/keys/*.key' ! -perm 0600 \) -o \( -path '*/keys/*.pub' ! -perm 0644 \) \
      -o \( -type d -path '*/keys*' ! -perm 0700 \) -o \( -path '*/keys*' ! -user "$(id -un)" \))
is_empty "$bad" "secret keys 0600, public keys 0644, key directories 0700, all $(id -un)'s (root's on a host)" ||
    echo "$modes" | tr ';' '\n' | diag
is "$(stat -c %a "$R/h2/usr/local/bin/vbench-agent") $(stat -c %a "$R/h2/etc/vbench/agent-h2-client.env")" "755 644" \
   "binaries 0755, environment files 0644"
is "$(stat -c %a "$KEYS")" "700" "the key directory on the installing machine is 0700"
if [ -x "$ZCERT" ]; then
    good=0
    for k in coordinator h1-client h2-client h2-orchestrator; do
        "$ZCERT" "$KEYS/$k.key" "$KEYS/$k.pub" >/dev/null || good=1
    done
    ok $good "czmq loads every key pair; each secret key gives its public key"
    cmp -s "$KEYS/h2-orchestrator.pub" "$R/h1/etc/vbench/keys/allow/h2-orchestrator.pub" &&
        cmp -s "$KEYS/h2-client.key" "$R/h2/etc/vbench/keys/h2-client.key" &&
        cmp -s "$KEYS/coordinator.pub" "$R/h2/etc/vbench/keys/coordinator.pub"
    ok $? "the hosts got exactly those keys"
else
    echo "# $ZCERT is not built (make tools): key pairs not loaded through czmq"
fi
env2=$(cat "$R/h2/etc/vbench/agent-h2-client.env")
like "$env2" "VBENCH_CONNECT=tcp://127.0.0.1:$PORT" "the client's env file: where to connect"
like "$env2" "VBENCH_ROLES=client" "the client's env file: its role"
like "$env2" "VBENCH_CERT=/etc/vbench/keys/h2-client.key" "the client's env file: its own secret key"
like "$env2" "VBENCH_AGENT_OPTS=--cpus $LAST" "the client's env file: its worker threads' CPUs"
like "$(cat "$R/h2/etc/vbench/agent-h2-orchestrator.env")" "VBENCH_ROLES=orchestrator
VBENCH_WORKDIR=/var/lib/vbench/h2-orchestrator" "the orchestrator's env file: its role and working directory"
like "$(cat "$R/h1/etc/vbench/coordinator.env")" "VBENCH_PROFILE=dev
VBENCH_OUT=/var/lib/vbench/coordinator/results.db/dev.sqlite
VBENCH_LISTEN=tcp://127.0.0.1:$PORT" "coordinator.env: profile, results database, listen address"
lim=$(cat "$R/h2/etc/systemd/system/vbench-agent@h2-client.service.d/limits.conf")
like "$lim" "CPUAffinity=$LAST
AllowedCPUs=$LAST
MemoryMax=300M
MemorySwapMax=0" "the client's limits.conf: CPUs and memory from the inventory"
cmp -s "$R/h2/etc/systemd/system/vbench-agent@h2-client.service.d/role.conf" "$ROOT/systemd/agent-client.conf" &&
    cmp -s "$R/h2/etc/systemd/system/vbench-agent@h2-orchestrator.service.d/role.conf" "$ROOT/systemd/agent-orchestrator.conf"
ok $? "each agent's role.conf is its role's drop-in from systemd/"

# systemd-analyze verify reads the units, drop-ins and environment from the prefix; ExecStart's programs must
# exist there too, so it runs on a copy with /bin/sh and /bin/kill (the coordinator's ExecStart, ExecReload) added.
if command -v systemd-analyze >/dev/null; then
    for h in h1 h2; do
        cp -a "$R/$h" "$SCRATCH/verify-$h"
        mkdir -p "$SCRATCH/verify-$h/bin"
        cp /bin/sh "$SCRATCH/verify-$h/bin/sh"
        cp /bin/kill "$SCRATCH/verify-$h/bin/kill"   # the coordinator's ExecReload
    done
    v=$(systemd-analyze verify --man=no --root="$SCRATCH/verify-h1" vbench-agent@h1-client.service vbench-coordinator.service 2>&1 &&
        systemd-analyze verify --man=no --root="$SCRATCH/verify-h2" vbench-agent@h2-client.service \
            vbench-agent@h2-orchestrator.service 2>&1)
    ok $? "systemd-analyze verify accepts the installed units with their drop-ins"
    is_empty "$v" "and has nothing to say about them"
else
    skip "systemd-analyze is not installed: units not verified (deploy/install-deps --with-tests installs systemd)"
fi

# --- a second run changes nothing -----------------------------------------------------------------------------
state() { (cd "$1" && find . -printf '%P %m %u %s %T@\n' | sort | md5sum); }
before=$(state "$R") keys_before=$(state "$KEYS")
out=$(inst "$INV" --root "$R" 2>&1)
ok $? "a second install runs"
like "$out" "h1: done     0 installed, 0 updated, 0 removed, 14 unchanged" "h1: nothing to do the second time"
like "$out" "h2: done     0 installed, 0 updated, 0 removed, 12 unchanged" "h2: nothing to do the second time"
is "$(state "$R")" "$before" "no file, mode or timestamp in the prefix changed"
is "$(state "$KEYS")" "$keys_before" "no key was made or replaced"

# --- dry runs -------------------------------------------------------------------------------------------------
echo "tampered" >>"$R/h2/etc/vbench/agent-h2-client.env"
chmod 0644 "$R/h2/etc/vbench/keys/h2-client.key"
out=$(inst "$INV" --root "$R" --host h2 --dry-run 2>&1)
like "$out" "h2: would update /etc/vbench/agent-h2-client.env" "--dry-run --root: a changed file would be updated"
like "$out" "h2: would fix /etc/vbench/keys/h2-client.key (0600)" "--dry-run --root: a loosened key mode would be fixed"
is "$(tail -1 "$R/h2/etc/vbench/agent-h2-client.env")/$(stat -c %a "$R/h2/etc/vbench/keys/h2-client.key")" "tampered/644" \
   "--dry-run changed nothing"
out=$(inst "$INV" --root "$R" --host h2 2>&1)
like "$out" "h2: done     0 installed, 2 updated, 0 removed, 10 unchanged" "the real run repairs both"
is "$(stat -c %a "$R/h2/etc/vbench/keys/h2-client.key")" "600" "the key is 0600 again"

printf '#!/bin/sh\ntouch %s/ssh-ran\n' "$SCRATCH" >"$SCRATCH/ssh-must-not-run"
chmod +x "$SCRATCH/ssh-must-not-run"
mkdir -p "$SCRATCH/fresh"
cp "$INV" "$SCRATCH/fresh/inventory.yml"
out=$(VBENCH_SSH=$SCRATCH/ssh-must-not-run inst "$SCRATCH/fresh/inventory.yml" --dry-run 2>&1)
ok $? "--dry-run for remote hosts"
like "$out" "h2: would run: tar -C " "it prints the tar stream ..."
like "$out" "| $SCRATCH/ssh-must-not-run -p 2222 -o BatchMode=yes bench@10.9.0.2 'd=\$(mktemp -d /tmp/vbench-install.XXXXXX) && tar -C \$d -xf - && sudo -n bash \$d/apply \$d / --label h2" \
     "... into ssh with the host's port and user, and sudo for a user other than root"
like "$out" "-p 22 -o BatchMode=yes root@10.9.0.1 'd=\$(mktemp -d /tmp/vbench-install.XXXXXX) && tar -C \$d -xf - && bash" \
     "root needs no sudo"
like "$out" "h2:   0600 /etc/vbench/keys/h2-client.key" "it lists the files it would send, with their modes"
like "$out" "h2:   then: systemctl enable, and start or restart, vbench-agent@h2-orchestrator.service" \
     "and what it would run there"
like "$out" "install: would make the key pair $SCRATCH/fresh/keys/coordinator.key" "missing keys are reported ..."
[ ! -e "$SCRATCH/fresh/keys" ] && [ ! -e "$SCRATCH/ssh-ran" ]
ok $? "... not made, and ssh never ran"

# --- errors name the file, the line and the key; nothing is installed -----------------------------------------
bad_inv() { # NAME SED-SCRIPT WANT...
    local name=$1 script=$2; shift 2
    sed "$script" "$INV" >"$SCRATCH/site/bad.yml"
    local err
    err=$(inst "$SCRATCH/site/bad.yml" --root "$SCRATCH/bad-root" 2>&1)
    [ $? -ne 0 ] && [ ! -e "$SCRATCH/bad-root" ]
    ok $? "$name: refused, nothing installed"
    local w
    for w in "$@"; do like "$err" "$w" "$name: the message says '$w'"; done
}
bad_inv "bad cores" 's/cores: 0/cores: 0-x/' "$SCRATCH/site/bad.yml:10: key 'hosts[0].cores'" 'bad CPU list "0-x"'
bad_inv "unknown recipe" 's/recipes: \[a\]/recipes: [a, zz]/' \
    "$SCRATCH/site/bad.yml:19: key 'hosts[1].recipes[1]': no engine recipe 'zz'"
bad_inv "cores on an orchestrator" 's/roles: \[orchestrator, client\]/roles: [orchestrator]/' \
    "$SCRATCH/site/bad.yml:17: key 'hosts[1].cores'" "client role"
bad_inv "YAML syntax" 's/roles: \[coordinator, client\]/roles: [coordinator, client/' "$SCRATCH/site/bad.yml:10:" \
    "flow sequence at line 9"
bad_inv "typo in a key" 's/    address: 10.9.0.2/    adress: 10.9.0.2/' "$SCRATCH/site/bad.yml:13: unknown key 'hosts[1].adress'"
err=$(inst "$INV" --root "$SCRATCH/bad-root" --host h3 2>&1)
[ $? -ne 0 ] && [ ! -e "$SCRATCH/bad-root" ]
ok $? "an unknown --host is refused"
like "$err" "no host named 'h3' (hosts: h1 h2)" "and the message lists the hosts"

# --- the inventory changes: what it no longer names goes -------------------------------------------------------
sed -e 's/recipes: \[a\]/recipes: [b]/' -e 's/roles: \[orchestrator, client\]/roles: [orchestrator]/' \
    -e "/cores: $LAST/d" -e '/memory: 300M/d' "$INV" >"$SCRATCH/site/inventory2.yml"
out=$(inst "$SCRATCH/site/inventory2.yml" --root "$R" 2>&1)
ok $? "install after h2 lost its client role and changed its recipe" || echo "$out" | diag
like "$out" "h2: skip     systemctl disable --now vbench-agent@h2-client.service" \
     "the removed agent would be stopped and disabled first"
[ -f "$R/h2/etc/vbench/engines/b.yml" ] && [ ! -e "$R/h2/etc/vbench/engines/a.yml" ]
ok $? "recipe a is replaced by b"
[ ! -e "$R/h2/etc/vbench/agent-h2-client.env" ] && [ ! -e "$R/h2/etc/vbench/keys/h2-client.key" ] &&
    [ ! -e "$R/h2/etc/systemd/system/vbench-agent@h2-client.service.d" ]
ok $? "h2's client agent: env file, key and drop-in directory removed"
[ ! -e "$R/h1/etc/vbench/keys/allow/h2-client.pub" ] && [ -f "$R/h1/etc/vbench/keys/allow/h2-orchestrator.pub" ]
ok $? "the coordinator no longer allows h2-client in"
[ -f "$KEYS/h2-client.key" ]
ok $? "the key pair stays on the installing machine"

# --- 2. on a real systemd -------------------------------------------------------------------------------------
host_etc=$(ls -d /etc/vbench /etc/systemd/system/vbench-* 2>/dev/null)
why=$(vb_ns_skip_reason)
if [ -n "$why" ]; then
    skip "the systemd part: $why"
    done_testing
    exit
fi
vb_ns_start "$SCRATCH" "$ROOT"
ok $? "systemd boots as PID 1 of a new PID + mount namespace"
[ -n "$VB_NS_PID" ] || { done_testing; exit 1; }
# Writes to /etc, /usr/local and /var inside go to overlays in $SCRATCH: the host's own stay untouched.
ovl=0
for d in etc usr/local var; do
    n=${d//\//-}
    mkdir -p "$SCRATCH/ovl/$n/up" "$SCRATCH/ovl/$n/work"
    vb_ns_run mount -t overlay "vbench-test-$n" \
        -o "lowerdir=/$d,upperdir=$SCRATCH/ovl/$n/up,workdir=$SCRATCH/ovl/$n/work" "/$d" || ovl=1
done
ok $ovl "overlays on /etc, /usr/local and /var inside the namespace"
if [ $ovl -ne 0 ]; then   # without them install would write the host's own /etc: stop here
    skip "the rest of the systemd part: no overlay file system in the namespace"
    vb_ns_stop
    done_testing
    exit
fi
cat >"$SCRATCH/ssh-into-ns" <<EOF
#!/bin/sh
# Stand-in for ssh: the last argument is the remote command; run it inside the namespace, stdin and all.
for last; do :; done
exec nsenter --target $VB_NS_PID --mount --pid --root --wd -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin sh -c "\$last"
EOF
chmod +x "$SCRATCH/ssh-into-ns"
sshinst() { VBENCH_SSH=$SCRATCH/ssh-into-ns inst "$@"; }
# The same inventory with root as h2's ssh user: the namespace has the host's programs, and sudo may not be one.
INVNS=$SCRATCH/site/inventory-ns.yml
sed '/user: bench/d' "$INV" >"$INVNS"
show() { vb_ns_run systemctl show -p "$2" --value "$1"; }

# A listener where the coordinator would be: it answers with a ZMTP 3.0 CURVE greeting and writes down the
# mechanism and the as-server flag of every peer's greeting.
cat >"$SCRATCH/zmtp-greeting.py" <<'EOF'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(8)
s.settimeout(float(sys.argv[2]))
held = []  # connections stay open mid-handshake: a real agent then waits (it gives up on a peer that drops it)
while True:
    try:
        c, _ = s.accept()
    except socket.timeout:
        break
    c.settimeout(5)
    try:
        c.sendall(b"\xff" + b"\0" * 8 + b"\x7f" + bytes([3, 0]) + b"CURVE".ljust(20, b"\0") + b"\x01" + b"\0" * 31)
        data = b""
        while len(data) < 64:
            chunk = c.recv(64 - len(data))
            if not chunk:
                break
            data += chunk
        if len(data) == 64:
            print(data[12:32].rstrip(b"\0").decode(), data[32], flush=True)
    except OSError:
        pass
    held.append(c)
EOF
python3 "$SCRATCH/zmtp-greeting.py" "$PORT" 40 >"$SCRATCH/greetings.txt" 2>&1 &
listener=$!

help=$("$VB_BIN/vbench-agent" --help 2>&1)
like "$help" "--server-key" "bin/vbench-agent takes --server-key (the units pass it) ..."
like "$help" "--cert" "... and --cert"

# The namespace first plays h1: the coordinator's host with a client.
out=$(sshinst "$INVNS" --host h1 2>&1)
rc=$?
like "$out" "h1: over ssh to root@10.9.0.1:22" "install h1 through the ssh path (a stand-in that enters the namespace)"
like "$out" "h1: run      systemctl daemon-reload" "install-apply reloads systemd there"
like "$out" "h1: run      systemctl enable vbench-agent@h1-client.service" "and enables the agent"
is "$(vb_ns_run systemctl is-enabled vbench-agent@h1-client.service)" "enabled" "vbench-agent@h1-client.service is enabled"
is "$(vb_ns_run systemctl is-enabled vbench-coordinator.service)" "enabled" "vbench-coordinator.service is enabled ..."
is "$(vb_ns_run systemctl is-active vbench-coordinator.service)" "inactive" "... and not started (a start is a campaign)"
is "$(show vbench-coordinator.service Restart)/$(show vbench-coordinator.service RestartPreventExitStatus)" \
   "on-failure/1 3" "the coordinator restarts on failure, except after a finished campaign with failed items or when another coordinator holds the database"
is "$(show vbench-coordinator.service ProtectSystem)/$(show vbench-coordinator.service CapabilityBoundingSet)" \
   "strict/" "the coordinator: read-only system, no capabilities"
# What the coordinator's ExecStart runs, seen by a stand-in for vbench that writes its arguments (and whether its
# sandbox lets it read its secret key) into the state directory, the one place it may write.
vb_ns_run sh -c 'mv /usr/local/bin/vbench /usr/local/bin/vbench.real
printf "#!/bin/sh\necho \"\$*\" >>/var/lib/vbench/coordinator/args\ntest -r \"\$VBENCH_CERT\" && echo key-readable >>/var/lib/vbench/coordinator/args\n" >/usr/local/bin/vbench
chmod 755 /usr/local/bin/vbench'
# `systemctl start` may return before ExecStart ran the stand-in: wait for each run's lines (two a run) before
# the next step, so the database does not appear under the first run.
wait_args() { local i; for i in $(seq 300); do [ "$(vb_ns_run sh -c 'wc -l </var/lib/vbench/coordinator/args' 2>/dev/null || echo 0)" -ge "$1" ] && return 0; sleep 0.1; done; return 1; }
vb_ns_run systemctl start vbench-coordinator.service
wait_args 2
out_db=/var/lib/vbench/coordinator/results.db/dev.sqlite
vb_ns_run touch $out_db
vb_ns_run systemctl start vbench-coordinator.service
wait_args 4
is "$(vb_ns_run cat /var/lib/vbench/coordinator/args | tr '\n' ';')" \
   "run --profile dev --out $out_db --listen tcp://127.0.0.1:$PORT --cert /etc/vbench/keys/coordinator.key --allow /etc/vbench/keys/allow --no-local-agents;key-readable;resume --out $out_db --listen tcp://127.0.0.1:$PORT --cert /etc/vbench/keys/coordinator.key --allow /etc/vbench/keys/allow --no-local-agents;key-readable;" \
   "the coordinator runs the campaign, then resumes it once its database exists; it can read its key"
vb_ns_run sh -c "mv /usr/local/bin/vbench.real /usr/local/bin/vbench; rm -f $out_db /var/lib/vbench/coordinator/args"
is "$(show vbench-agent@h1-client.service CPUAffinity)/$(show vbench-agent@h1-client.service MemoryMax)" \
   "0/268435456" "h1's client: CPUAffinity=0, MemoryMax=256M"
ok $rc "install h1 succeeds" || echo "$out" | diag
st=$(vb_ns_run systemctl is-active vbench-agent@h1-client.service)
is "$st" "active" "h1's client agent runs"
[ "$st" = active ] || vb_ns_run journalctl -u vbench-agent@h1-client.service --no-pager -o cat 2>&1 | tail -12 | diag

# Then it becomes h2: the agents and the coordinator of h1 must go.
out=$(sshinst "$INVNS" --host h2 2>&1)
rc=$?
like "$out" "h2: over ssh to root@10.9.0.2:2222" "install h2 into the same system (now it is h2)"
like "$out" "h2: run      systemctl disable --now vbench-agent@h1-client.service" "h1's agent is stopped and disabled"
like "$out" "h2: run      systemctl disable --now vbench-coordinator.service" "so is the coordinator"
is "$(vb_ns_run systemctl is-enabled vbench-agent@h1-client.service 2>&1)" "disabled" "vbench-agent@h1-client is disabled"
vb_ns_run test ! -e /etc/vbench/keys/coordinator.key -a ! -e /etc/vbench/agent-h1-client.env \
    -a ! -e /etc/systemd/system/vbench-coordinator.service -a ! -d /etc/vbench/keys/allow
ok $? "h1's files are gone: coordinator key, allow-list, env file, coordinator unit"
is "$(vb_ns_run stat -c '%a %u' /etc/vbench/keys /etc/vbench/keys/h2-client.key | tr '\n' ' ')" "700 0 600 0 " \
   "the keys arrived root's, 0700 and 0600"
c=vbench-agent@h2-client.service o=vbench-agent@h2-orchestrator.service
is "$(show $c CPUAffinity)" "$LAST" "client: CPUAffinity from limits.conf"
is "$(show $c AllowedCPUs)" "$LAST" "client: AllowedCPUs from limits.conf"
is "$(show $c MemoryMax)/$(show $c MemorySwapMax)" "314572800/0" "client: MemoryMax=300M, no swap"
is "$(show $c Restart)/$(show $c RestartUSec)/$(show $c RestartPreventExitStatus)" "on-failure/5s/2" \
   "client: Restart=on-failure after 5 s, not after a usage error"
is "$(show $c ProtectSystem)/$(show $c ProtectHome)/$(show $c PrivateTmp)/$(show $c NoNewPrivileges)" \
   "strict/yes/yes/yes" "client: ProtectSystem=strict, ProtectHome, PrivateTmp, NoNewPrivileges"
is_empty "$(show $c CapabilityBoundingSet)" "client: no capabilities"
like "$(show $c InaccessiblePaths)" "/run/systemd/private" "client: systemd's private socket hidden"
is "$(show $o CPUAffinity)/$(show $o MemoryMax)" "/infinity" "orchestrator: no CPU or memory limit of its own"
is "$(show $o ProtectSystem)/$(show $o PrivateTmp)/$(show $o ProtectHome)" "full/no/read-only" \
   "orchestrator: the lighter sandbox (ProtectSystem=full, no PrivateTmp)"
like "$(show $o CapabilityBoundingSet)" "cap_sys_admin" "orchestrator: keeps its capabilities"
like "$(show $c ExecStart)" "--cert \${VBENCH_CERT} --server-key \${VBENCH_SERVER_KEY} \$VBENCH_AGENT_OPTS" \
     "the agent's command line takes its keys from the env file"

ok $rc "install h2 succeeds" || echo "$out" | diag
is "$(vb_ns_run systemctl is-active $c)/$(vb_ns_run systemctl is-active $o)" "active/active" "both agents run"
pid=$(show $c MainPID)
is "$(vb_ns_run awk '/^Cpus_allowed_list/ {print $2}' /proc/$pid/status)" "$LAST" \
   "the client agent may run on CPU $LAST only"
cg=$(show $c ControlGroup)
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then lim=$(cat "/sys/fs/cgroup$cg/memory.max")
else lim=$(cat "/sys/fs/cgroup/memory$cg/memory.limit_in_bytes"); fi
is "$lim" "314572800" "the kernel holds the client's cgroup to 300M"
like "$(vb_ns_run cat /proc/$pid/cmdline | tr '\0' ' ')" "--cpus $LAST" "its worker threads get --cpus $LAST"
for i in $(seq 50); do grep -q '^CURVE 0$' "$SCRATCH/greetings.txt" && break; sleep 0.1; done
like "$(cat "$SCRATCH/greetings.txt")" "CURVE 0" "an agent connects to the coordinator's address as a CURVE client"
vb_ns_run kill -KILL "$pid"
for i in $(seq 100); do
    [ "$(show $c NRestarts)" = 1 ] && [ "$(vb_ns_run systemctl is-active $c)" = active ] && break
    sleep 0.1
done
is "$(show $c NRestarts)/$(vb_ns_run systemctl is-active $c)" "1/active" "after a SIGKILL systemd starts it again"
[ "$(show $c MainPID)" != "$pid" ]
ok $? "with a new process"
before=$(show $o MainPID)
out=$(sshinst "$INVNS" --host h2 2>&1)
ok $? "installing h2 again ..."
like "$out" "h2: done     0 installed, 0 updated, 0 removed, 12 unchanged" "... changes nothing"
is "$(show $o MainPID)" "$before" "... and restarts nothing"

# sd-bus from each role's sandbox: two probe instances of the same template, each with its role's role.conf, run
# systemd-run (StartTransientUnit over /run/systemd/private, as the orchestrator does) instead of the agent.
vb_ns_run sh -c '
for role in orchestrator client; do
    d=/etc/systemd/system/vbench-agent@probe-$role.service.d
    mkdir -p $d
    cp /etc/systemd/system/vbench-agent@h2-$role.service.d/role.conf $d/
    cp /etc/vbench/agent-h2-$role.env /etc/vbench/agent-probe-$role.env
    printf "[Service]\nType=oneshot\nRestart=no\nExecStart=\nExecStart=/usr/bin/systemd-run --unit=vbt-from-$role --property=DefaultDependencies=no /bin/sleep 300\n" >$d/zz-probe.conf
done
systemctl daemon-reload'
vb_ns_run systemctl start vbench-agent@probe-orchestrator.service 2>"$SCRATCH/probe.err"
ok $? "from the orchestrator's sandbox, systemd-run starts a transient unit" || diag <"$SCRATCH/probe.err"
is "$(vb_ns_run systemctl is-active vbt-from-orchestrator.service)" "active" "and that unit runs"
vb_ns_run systemctl start vbench-agent@probe-client.service 2>/dev/null
[ $? -ne 0 ]
ok $? "from the client's sandbox, it cannot"
is "$(vb_ns_run systemctl is-active vbt-from-client.service)" "inactive" "no unit was started"
like "$(vb_ns_run journalctl -u vbench-agent@probe-client.service --no-pager -o cat)" "Failed to connect to bus" \
     "the client's probe could not reach systemd"
vb_ns_run systemctl stop vbt-from-orchestrator.service

# A real workload in the client's sandbox and limits: a small local campaign (coordinator, agent, hnswlib, BLAS
# ground truth, pinned worker threads) as one more instance of the template with h2-client's drop-ins.
cat >"$SCRATCH/tiny.yml" <<'EOF'
name: tiny
k: 10
datasets:
  - {name: synth-2k, source: synthetic, rows: 2000, queries: 100, dim: 32, clusters: 8, metric: angular, seed: 1}
engines:
  - {name: hnswlib, m: 16, ef_construction: 64}
phases:
  build:
  recall_sweep: {ef_search: [10, 40]}
  concurrency: {clients: [1, 2], window_s: 1, repeats: 1, warmup_s: 0.2, ef_search: 40}
EOF
vb_ns_run sh -c "
d=/etc/systemd/system/vbench-agent@probe-work.service.d
mkdir -p \$d
cp /etc/systemd/system/vbench-agent@h2-client.service.d/*.conf \$d/
cp /etc/vbench/agent-h2-client.env /etc/vbench/agent-probe-work.env
cp $SCRATCH/tiny.yml /etc/vbench/probe-tiny.yml
printf '[Service]\nType=oneshot\nRestart=no\nExecStart=\nExecStart=/usr/local/bin/vbench run --profile /etc/vbench/probe-tiny.yml --out /var/lib/vbench/probe-work/t.sqlite --cache-dir /var/cache/vbench/datasets --quiet\n' >\$d/zz-probe.conf
systemctl daemon-reload"
t=$(date +%s.%N)
vb_ns_run systemctl start vbench-agent@probe-work.service 2>"$SCRATCH/probe.err"
ok $? "a small campaign runs in the client's sandbox and limits" ||
    { diag <"$SCRATCH/probe.err"; vb_ns_run journalctl -u vbench-agent@probe-work.service --no-pager -o cat | tail -20 | diag; }
echo "# in $(echo "$(date +%s.%N) - $t" | bc) s"
is "$(q "$SCRATCH/ovl/var/up/lib/vbench/probe-work/t.sqlite" \
      'SELECT (SELECT count(*) FROM sweep_result) || "/" || (SELECT count(*) FROM window_result)')" "2/2" \
   "its results database has both recall sweep points and both concurrency windows"

kill "$listener" 2>/dev/null
wait "$listener" 2>/dev/null
nspid=$VB_NS_PID
vb_ns_stop
ok $? "the namespace tears down: no process left, the host's /tmp canary intact"
is "[$(ls -d /etc/vbench /etc/systemd/system/vbench-* 2>/dev/null)]" "[$host_etc]" "nothing reached the host's /etc (what was there before: [$host_etc])"
done_testing
