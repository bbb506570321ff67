#!/usr/bin/env bash
# The orchestrator's foundations on a real systemd: a private systemd booted as PID 1 of a PID + mount namespace
# (deploy/systemd-ns) takes transient units from orchestrator/units over sd-bus (driven by
# tests/tools/vb_unitctl, run inside the namespace). Checked: CPU affinity of the process, the memory limit as
# systemd and the kernel hold it, the size of the private /dev/shm, journal tails, sampling rows, clean stops,
# D-Bus errors, a SIGKILL that is not an OOM kill, and an OOM kill reported as such. Then, from the engine
# image (deploy/image-build db-trixie, built here when missing, ~3 min), PostgreSQL 17 + pgvector and MariaDB
# 11.8 start as units and answer real queries; a broken server option fails with the server's own words.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../../deploy/systemd-ns"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CTL=${VB_UNITCTL:-$ROOT/${BUILD:-build}/tools/vb_unitctl}

why=$(vb_ns_skip_reason)
[ -n "$why" ] || [ -x "$CTL" ] || why="the test driver $CTL is not built (make tools)"
[ -z "$why" ] || skip_all "$why"

kv() { printf '%s\n' "$2" | sed -n "s/^$1=//p" | head -1; }  # kv KEY TEXT: the value of KEY=... in TEXT
ctl() { vb_ns_run "$CTL" "$@"; }

t0=$(date +%s.%N)
# The repository is shared too: its test driver must be reachable inside even when the clone lives under /tmp.
vb_ns_start "$SCRATCH" "$ROOT"
ok $? "systemd boots as PID 1 of a new PID + mount namespace"
[ -n "$VB_NS_PID" ] || { done_testing; exit 1; }
echo "# booted in $(echo "$(date +%s.%N) - $t0" | bc) s; cgroup root $VB_NS_CGROUP"

# --- the namespace itself ------------------------------------------------------------------------------------
vb_ns_canary_ok
ok $? "the canary in the host's /tmp survived the boot"
vb_ns_run sh -c 'echo inside > /tmp/vbench-inside-only'
[ "$(vb_ns_run cat /tmp/vbench-inside-only)" = inside ] && [ ! -e /tmp/vbench-inside-only ]
ok $? "/tmp inside the namespace is private (a file written there is read back inside, absent outside)"
is "$(vb_ns_run systemctl is-active sysinit.target)" "inactive" "sysinit.target did not run (no tmpfiles, no boot services)"
services=$(vb_ns_run systemctl list-units --type=service --state=active --no-legend --plain | awk '{print $1}' | tr '\n' ' ')
is "$services" "systemd-journald.service " "journald is the only service running"
is "$(vb_ns_run cat /proc/1/comm)" "systemd" "PID 1 inside is systemd"

# --- a confined unit -----------------------------------------------------------------------------------------
out=$(ctl start vbt-sleep --cpus 0 --memory-max 64M --shm 16M --nofile 1024 --bind "$SCRATCH" \
      -- /bin/sh -c "df -k /dev/shm > $SCRATCH/df.txt; echo hello-from-unit; exec sleep 300" 2>&1)
ok $? "a transient unit starts (StartTransientUnit, job awaited through JobRemoved)"
is "$(kv active_state "$out")/$(kv sub_state "$out")" "active/running" "it is active/running"
pid=$(kv main_pid "$out")
cg=$(kv control_group "$out")
[ "${pid:-0}" -gt 0 ] && [ -n "$cg" ]
ok $? "it has a MainPID ($pid) and a cgroup ($cg)"
is "$(vb_ns_run awk '/^Cpus_allowed_list/ {print $2}' /proc/$pid/status)" "0" "the process may run on CPU 0 only"
is "$(ctl prop vbt-sleep MemoryMax u64)" "67108864" "MemoryMax reads back as 64M"
is "$(ctl prop vbt-sleep MemorySwapMax u64)" "0" "MemorySwapMax reads back as 0"
is "$(ctl prop vbt-sleep CPUAffinity cpus)" "0" "CPUAffinity reads back as 0"
is "$(ctl prop vbt-sleep AllowedCPUs cpus)" "0" "AllowedCPUs reads back as 0"
is "$(ctl prop vbt-sleep LimitNOFILE u64)" "1024" "LimitNOFILE reads back as 1024"
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then kernel_limit=$(cat "/sys/fs/cgroup$cg/memory.max")
else kernel_limit=$(cat "/sys/fs/cgroup/memory$cg/memory.limit_in_bytes"); fi
is "$kernel_limit" "67108864" "the kernel enforces 64M on the unit's memory cgroup"
is "$(awk 'NR == 2 {print $2}' "$SCRATCH/df.txt")" "16384" "/dev/shm inside the unit is a 16M tmpfs (df from the unit)"
is "$(vb_ns_run nsenter -t "$pid" -m -r df -k --output=size /dev/shm | tail -1 | tr -d ' ')" "16384" \
   "/dev/shm in the unit's mount namespace is 16M (df via nsenter)"
like "$(ctl journal vbt-sleep 5)" "hello-from-unit" "the journal tail holds the unit's output"

out=$(ctl sample vbt-sleep 1.2 --rows)
ok $? "the sampler samples the unit's cgroup"
rows=$(printf '%s\n' "$out" | grep -c '^row ')
[ "$rows" -ge 4 ] && [ "$rows" -le 7 ]
ok $? "about one row per 250 ms over 1.2 s ($rows rows)"
[ "$(kv peak_cgroup_bytes "$out")" -gt 0 ] && [ "$(kv peak_rss_bytes "$out")" -gt 0 ]
ok $? "cgroup and RSS peaks are kept ($(kv peak_cgroup_bytes "$out") / $(kv peak_rss_bytes "$out") bytes)"
echo "# sampler: cgroup v$(kv cgroup_version "$out"), cpu from $(kv cpu_source "$out"), oom watch $(kv oom_watch "$out")"

t=$(date +%s.%N)
ctl stop vbt-sleep
ok $? "a clean stop (StopUnit, job awaited)"
echo "# stop took $(echo "$(date +%s.%N) - $t" | bc) s"
is "$(kv active_state "$(ctl state vbt-sleep)")" "inactive" "the unit is gone after the stop"
[ ! -d "/sys/fs/cgroup/memory$cg" ] && [ ! -d "/sys/fs/cgroup$cg" ]
ok $? "its cgroup is removed"

# --- errors carry the D-Bus error and the unit's result -------------------------------------------------------
ctl start vbt-dup -- /bin/sleep 30 >/dev/null
err=$(ctl start vbt-dup -- /bin/sleep 30 2>&1)
like "$err" "org.freedesktop.systemd1.UnitExists" "starting a unit twice names the D-Bus error"
ctl stop vbt-dup
err=$(ctl start vbt-bad -- /nonexistent/server 2>&1)
[ $? -ne 0 ]
ok $? "a unit whose binary is missing fails to start"
like "$err" "Result=exit-code, exit status 203" "the error gives systemd's result and status (203/EXEC)"
like "$(ctl journal vbt-bad 5)" "/nonexistent/server" "the journal tail says what failed"
ctl reset-failed vbt-bad
is "$(kv loaded "$(ctl state vbt-bad)")" "0" "reset-failed forgets the failed unit"

# --- killed by a signal is not an OOM kill; killed by the memory limit is --------------------------------------
out=$(ctl start vbt-killed --memory-max 64M --sample 10 -- /bin/sh -c 'sleep 0.5; kill -9 $$')
is "$(kv result "$out")/$(kv exec_main_status "$out")" "signal/9" "a SIGKILL from elsewhere is Result=signal"
is "$(kv oom_kills "$out")" "0" "and no OOM kill is seen"
ctl reset-failed vbt-killed
out=$(ctl start vbt-oom --memory-max 64M --sample 20 -- /usr/bin/python3 -c \
      'import time; a = []; [a.append(bytearray(1 << 20)) or time.sleep(0.01) for i in range(400)]')
is "$(kv result "$out")" "oom-kill" "a unit killed by its memory limit is reported as Result=oom-kill"
[ "$(kv oom_kills "$out")" -ge 1 ]
ok $? "the sampler saw the OOM kill in the unit's cgroup ($(kv oom_kills "$out"))"
echo "# systemd itself said Result=$(kv systemd_result "$out") (systemd 252 reads OOM kills from cgroup v2 only)"
peak=$(kv peak_cgroup_bytes "$out")
[ "${peak:-0}" -ge $((48 << 20)) ] && [ "$peak" -le $((64 << 20)) ]
ok $? "its cgroup peak is near the 64M limit ($peak bytes)"
ctl reset-failed vbt-oom

# --- the engine image: PostgreSQL 17 + pgvector, MariaDB 11.8 ---------------------------------------------------
IMG=$("$ROOT/deploy/image-build" --path-only db-trixie)
if [ $? -ne 0 ]; then
    if [ "${VB_SKIP_IMAGE_BUILD:-0}" = 1 ]; then
        IMG=
        skip "the image db-trixie is not built and VB_SKIP_IMAGE_BUILD=1: no database units"
    else
        echo "# building the image db-trixie (debootstrap, about 3 minutes; cached in /var/cache/vbench/images)"
        t=$(date +%s)
        IMG=$("$ROOT/deploy/image-build" db-trixie 2>"$SCRATCH/image.txt")
        ok $? "the image db-trixie builds ($(($(date +%s) - t)) s)" || { diag <"$SCRATCH/image.txt"; IMG=; }
    fi
fi

if [ -n "$IMG" ]; then
    echo "# image $IMG: $(du -sh --one-file-system "$IMG" | cut -f1)"
    like "$(cat "$IMG/vbench-packages.txt")" "postgresql-17-pgvector	0.8" "the image's package list has pgvector 0.8"
    PGB=/usr/lib/postgresql/17/bin
    pg=$SCRATCH/pg
    mkdir -p "$pg"
    chown "$(awk -F: '$1 == "postgres" {print $3 ":" $4}' "$IMG/etc/passwd")" "$pg"
    chmod 700 "$pg"
    as_pg=(--root "$IMG" --bind "$pg:/var/lib/vbench" --image-user postgres)
    out=$(ctl start vbt-pg-init --type oneshot "${as_pg[@]}" -- $PGB/initdb -D /var/lib/vbench/data -U postgres \
          --auth=trust --locale=C.UTF-8 -E UTF8 -N 2>&1)
    ok $? "initdb runs as a oneshot unit inside the image, as the image's postgres user" || echo "$out" | diag
    t=$(date +%s.%N)
    out=$(ctl start vbt-pg --cpus 0 --memory-max 512M --shm 64M --nofile 4096 "${as_pg[@]}" -- \
          $PGB/postgres -D /var/lib/vbench/data -c listen_addresses= -c unix_socket_directories=/var/lib/vbench \
          -c shared_buffers=32MB 2>&1)
    ok $? "PostgreSQL 17 starts as a unit with RootDirectory=image, BindPaths=data dir" || echo "$out" | diag
    pid=$(kv main_pid "$out")
    out=$(ctl ready vbt-pg vbt-pg-probe --timeout 60 "${as_pg[@]}" -- $PGB/psql -h /var/lib/vbench -U postgres \
          -Atc 'SELECT 1' 2>&1)
    ok $? "PostgreSQL answers SELECT 1 (readiness as a real query)" || echo "$out" | diag
    echo "# PostgreSQL ready $(echo "$(date +%s.%N) - $t" | bc) s after the start ($(kv attempts "$out") probes)"
    ctl start vbt-pg-q --type oneshot "${as_pg[@]}" --stdout "truncate:$pg/q.out" -- $PGB/psql -h /var/lib/vbench \
        -U postgres -Atc "CREATE EXTENSION vector; SELECT extversion FROM pg_extension WHERE extname = 'vector';
                          SELECT '[1,2,3]'::vector <-> '[1,2,5]'" >/dev/null
    is "$(tr '\n' ' ' <"$pg/q.out")" "CREATE EXTENSION 0.8.0 2 " "pgvector 0.8.0 computes an L2 distance"
    is "$(vb_ns_run awk '/^Cpus_allowed_list/ {print $2}' /proc/$pid/status)" "0" "the postmaster runs on CPU 0 only"
    is "$(vb_ns_run nsenter -t "$pid" -m -r df -k --output=size /dev/shm | tail -1 | tr -d ' ')" "65536" \
       "the postmaster's /dev/shm is 64M"
    is "$(ctl prop vbt-pg MemoryMax u64)" "536870912" "the server's MemoryMax is 512M"
    out=$(ctl sample vbt-pg 1)
    [ "$(kv samples "$out")" -ge 4 ] && [ "$(kv peak_rss_bytes "$out")" -gt $((10 << 20)) ]
    ok $? "sampling the server: $(kv samples "$out") rows, peaks cgroup $(kv peak_cgroup_bytes "$out") / RSS $(kv peak_rss_bytes "$out") bytes"
    ctl stop vbt-pg
    ok $? "PostgreSQL stops cleanly"
    [ ! -e "$pg/data/postmaster.pid" ]
    ok $? "no postmaster.pid is left (a clean shutdown)"
    like "$(ctl journal vbt-pg 3)" "database system is shut down" "the journal tail has the server's last words"

    # A broken server option: the start job succeeds (the binary ran), readiness fails at once with its log.
    out=$(ctl start vbt-pg-bad "${as_pg[@]}" -- $PGB/postgres -D /var/lib/vbench/data -c no_such_option=1 2>&1)
    ok $? "a server with a bad option starts (Type=exec: the binary ran)"
    t=$(date +%s)
    err=$(ctl ready vbt-pg-bad vbt-pg-probe --timeout 60 "${as_pg[@]}" -- $PGB/psql -h /var/lib/vbench \
          -U postgres -Atc 'SELECT 1' 2>&1)
    [ $? -eq 1 ] && [ $(($(date +%s) - t)) -lt 10 ]
    ok $? "readiness fails at once when the server dies"
    like "$err" 'unrecognized configuration parameter "no_such_option"' "the error carries PostgreSQL's own message"
    ctl reset-failed vbt-pg-bad

    my=$SCRATCH/my
    mkdir -p "$my"
    chown "$(awk -F: '$1 == "mysql" {print $3 ":" $4}' "$IMG/etc/passwd")" "$my"
    chmod 700 "$my"
    as_my=(--root "$IMG" --bind "$my:/var/lib/vbench" --image-user mysql)
    out=$(ctl start vbt-my-init --type oneshot "${as_my[@]}" -- /usr/bin/mariadb-install-db --no-defaults \
          --datadir=/var/lib/vbench/data --auth-root-authentication-method=normal --skip-test-db 2>&1)
    ok $? "mariadb-install-db runs as a oneshot unit inside the image" || echo "$out" | diag
    t=$(date +%s.%N)
    out=$(ctl start vbt-my --cpus 0 --memory-max 512M --shm 64M --nofile 4096 "${as_my[@]}" -- /usr/sbin/mariadbd \
          --no-defaults --datadir=/var/lib/vbench/data --socket=/var/lib/vbench/mysqld.sock --skip-networking \
          --innodb-buffer-pool-size=64M --pid-file=/var/lib/vbench/mariadbd.pid 2>&1)
    ok $? "MariaDB 11.8 starts as a unit from the image" || echo "$out" | diag
    out=$(ctl ready vbt-my vbt-my-probe --timeout 60 "${as_my[@]}" -- /usr/bin/mariadb --no-defaults \
          -S /var/lib/vbench/mysqld.sock -u root -N -e 'SELECT 1' 2>&1)
    ok $? "MariaDB answers SELECT 1 (readiness as a real query)" || echo "$out" | diag
    echo "# MariaDB ready $(echo "$(date +%s.%N) - $t" | bc) s after the start ($(kv attempts "$out") probes)"
    ctl start vbt-my-q --type oneshot "${as_my[@]}" --stdout "truncate:$my/q.out" -- /usr/bin/mariadb --no-defaults \
        -S /var/lib/vbench/mysqld.sock -u root -N -e "SELECT VERSION(); CREATE DATABASE vb;
        CREATE TABLE vb.v (id INT PRIMARY KEY, v VECTOR(3) NOT NULL, VECTOR INDEX (v));
        INSERT INTO vb.v VALUES (1, VEC_FromText('[1,2,3]'));
        SELECT VEC_DISTANCE_EUCLIDEAN(v, VEC_FromText('[1,2,5]')) FROM vb.v" >/dev/null
    like "$(tr '\n' ' ' <"$my/q.out")" "11.8" "the server is MariaDB 11.8"
    like "$(tr '\n' ' ' <"$my/q.out")" " 2 " "a VECTOR column with a VECTOR INDEX computes a Euclidean distance"
    ctl stop vbt-my
    ok $? "MariaDB stops cleanly"
    [ ! -e "$my/mariadbd.pid" ]
    ok $? "no pid file is left (a clean shutdown)"
fi

# --- teardown ------------------------------------------------------------------------------------------------
nspid=$VB_NS_PID
nscg=$VB_NS_CGROUP
vb_ns_stop
ok $? "the namespace tears down: no process left, cgroups removed, the host's /tmp canary intact"
[ -n "$nspid" ] && { [ ! -e "/proc/$nspid" ] || [ "$(cat /proc/$nspid/comm 2>/dev/null)" != systemd ]; }
ok $? "the namespace's systemd (host pid ${nspid:-unknown}) is gone"
left=$(find /sys/fs/cgroup -maxdepth 6 -path "*$nscg" 2>/dev/null | head -1)
is_empty "$left" "no cgroup of the namespace is left"
done_testing
