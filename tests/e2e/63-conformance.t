#!/usr/bin/env bash
# The engine contract (engines/engine.h) on every registered engine, with one script (engines/conformance.c)
# driven by tests/tools/vb_conformance: hnswlib and exact in process, PostgreSQL 17 + pgvector, MariaDB 11.8 and Redis 8.0
# from the engine image as transient units of a private systemd (deploy/systemd-ns, started through
# tests/tools/vb_unitctl as the orchestrator starts them), restarted in the middle of the script to check
# VB_RETRY and recovery; engines that cannot run here (alisql, doris, mongodb, and valkey: Debian has no
# valkey-search module) are listed as skipped with the reason.
# Then each server's own section (pgvector: halfvec, iterative scan at 1 %, EXPLAIN, a terminated backend,
# attach, sizes, version, its error messages; MariaDB: recall at a high ef_search, attach, EXPLAIN, a killed
# connection, sizes, version, its error messages), and what a campaign does with wrong credentials
# (on_item_failure continue / stop). Replaces the former 60-pgvector.t and 61-mariadb.t (numbers used again since)
# and their two drivers; whole campaigns on both servers are 62-orchestrator.t's.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/ns-servers.sh"
TOOLS=${VB_TOOLS:-$ROOT/${BUILD:-build}/tools}
CONF=$TOOLS/vb_conformance
CTL=$TOOLS/vb_unitctl
{ [ -x "$CONF" ] && [ -x "$CTL" ]; } || skip_all "the test tools are not built in $TOOLS (make unit)"
ctl() { vb_ns_run "$CTL" "$@"; }
vb_ns_servers_boot
IMG=$(vb_image_path db-trixie)

# --- PostgreSQL 17 + pgvector: scram password on the socket, so a wrong password is a real server error --------
PGB=/usr/lib/postgresql/17/bin
PW=vbench-pw-$$
pg=$SCRATCH/pg
mkdir -p "$pg" && printf '%s\n' "$PW" >"$pg/pwfile" && chown -R "$(awk -F: '$1 == "postgres" {print $3 ":" $4}' "$IMG/etc/passwd")" "$pg" && chmod 700 "$pg"
as_pg="--root $IMG --bind $pg:/var/lib/vbench --image-user postgres"
cat >"$SCRATCH/pg.sh" <<SH
# start | restart the PostgreSQL unit and wait until it answers (run inside the namespace)
set -e
if [ "\$1" = restart ]; then "$CTL" kill vbc-pg 2 main; "$CTL" wait vbc-pg 60; fi
"$CTL" reset-failed vbc-pg >/dev/null 2>&1 || true
"$CTL" start vbc-pg --memory-max 1G --shm 256M $as_pg -- $PGB/postgres -D /var/lib/vbench/data -c listen_addresses= \
    -c unix_socket_directories=/var/lib/vbench -c shared_buffers=128MB -c fsync=off -c max_connections=100 >/dev/null
"$CTL" ready vbc-pg vbc-pg-probe --timeout 60 $as_pg --env PGPASSWORD=$PW -- $PGB/psql -h /var/lib/vbench \
    -U postgres -d postgres -Atc 'SELECT 1' >/dev/null
SH
out=$(ctl start vbc-pg-init --type oneshot $as_pg -- $PGB/initdb -D /var/lib/vbench/data -U postgres \
      --auth=scram-sha-256 --pwfile=/var/lib/vbench/pwfile --locale=C.UTF-8 -E UTF8 -N 2>&1)
rc=$?; ok $rc "initdb (scram-sha-256) as a oneshot unit in the image"; [ $rc -eq 0 ] || echo "$out" | diag
out=$(vb_ns_run sh "$SCRATCH/pg.sh" start 2>&1)
rc=$?; ok $rc "PostgreSQL 17 starts as a unit and answers"; [ $rc -eq 0 ] || echo "$out" | diag
psql() { ctl start "vbc-psql-$RANDOM" --type oneshot $as_pg --env PGPASSWORD=$PW --stdout "truncate:$pg/psql.out" -- \
         $PGB/psql -h /var/lib/vbench -U postgres -d postgres -v ON_ERROR_STOP=1 -Atc "$1" >/dev/null 2>&1; }
# A role and a database where pgvector is not installed and may not be created (it is not a trusted extension).
psql "CREATE ROLE vb_noext LOGIN PASSWORD 'noext'" && psql "CREATE DATABASE vb_noext OWNER vb_noext"
ok $? "a role without the right to create the extension, and its database"

# --- MariaDB 11.8 ------------------------------------------------------------------------------------------
my=$SCRATCH/my
mkdir -p "$my" && chown "$(awk -F: '$1 == "mysql" {print $3 ":" $4}' "$IMG/etc/passwd")" "$my" && chmod 700 "$my"
as_my="--root $IMG --bind $my:/var/lib/vbench --image-user mysql"
cat >"$SCRATCH/my.sh" <<SH
set -e
if [ "\$1" = restart ]; then "$CTL" stop vbc-my; fi
"$CTL" reset-failed vbc-my >/dev/null 2>&1 || true
"$CTL" start vbc-my --memory-max 1G $as_my -- /usr/sbin/mariadbd --no-defaults --datadir=/var/lib/vbench/data \
    --socket=/var/lib/vbench/mysqld.sock --skip-networking --innodb-buffer-pool-size=256M \
    --pid-file=/var/lib/vbench/mariadbd.pid >/dev/null
"$CTL" ready vbc-my vbc-my-probe --timeout 60 $as_my -- /usr/bin/mariadb --no-defaults -S /var/lib/vbench/mysqld.sock \
    -u root -N -e 'SELECT 1' >/dev/null
SH
out=$(ctl start vbc-my-init --type oneshot $as_my -- /usr/bin/mariadb-install-db --no-defaults \
      --datadir=/var/lib/vbench/data --auth-root-authentication-method=normal --skip-test-db 2>&1)
rc=$?; ok $rc "mariadb-install-db as a oneshot unit in the image"; [ $rc -eq 0 ] || echo "$out" | diag
out=$(vb_ns_run sh "$SCRATCH/my.sh" start 2>&1)
rc=$?; ok $rc "MariaDB 11.8 starts as a unit and answers"; [ $rc -eq 0 ] || echo "$out" | diag

# --- Redis 8.0.2 (vector sets) from db-trixie ----------------------------------------------------------------------
# The restart check wants the rows to survive, so the restart is SHUTDOWN SAVE and the start loads
# dump.rdb (vector sets are saved with it). quantization=noquant: the contract's "closest first" is judged on exact
# distances, and int8 storage reorders near ties by about 1 % (measured: a worst step of 1.05 %).
rs=$SCRATCH/rs
mkdir -p "$rs" && chown "$(awk -F: '$1 == "redis" {print $3 ":" $4}' "$IMG/etc/passwd")" "$rs" && chmod 700 "$rs"
as_rs="--root $IMG --bind $rs:/var/lib/vbench --image-user redis"
cat >"$SCRATCH/rs.sh" <<SH
set -e
if [ "\$1" = restart ]; then
    "$CTL" start vbc-rs-stop-\$\$ --type oneshot $as_rs -- /usr/bin/redis-cli -s /var/lib/vbench/redis.sock SHUTDOWN SAVE >/dev/null 2>&1 || true
    "$CTL" wait vbc-rs 60
fi
"$CTL" reset-failed vbc-rs >/dev/null 2>&1 || true
"$CTL" start vbc-rs --memory-max 1G $as_rs -- /usr/bin/redis-server --port 0 --unixsocket /var/lib/vbench/redis.sock \
    --unixsocketperm 700 --dir /var/lib/vbench --save "" --appendonly no --maxmemory 900mb --maxmemory-policy noeviction >/dev/null
"$CTL" ready vbc-rs vbc-rs-probe --timeout 60 $as_rs -- /bin/sh -c \
    '/usr/bin/redis-cli -s /var/lib/vbench/redis.sock PING | grep -qx PONG' >/dev/null
SH
out=$(vb_ns_run sh "$SCRATCH/rs.sh" start 2>&1)
rc=$?; ok $rc "Redis 8.0.2 starts as a unit and answers"; [ $rc -eq 0 ] || echo "$out" | diag
RS_ARGS=(--engine redis socket="$rs/redis.sock" quantization=noquant --restart "sh $SCRATCH/rs.sh restart")

# --- the conformance script over the registry ------------------------------------------------------------------
# pgvector: 3,000 rows without statistics get a sequential scan and a sort from the planner (exact answers: the
# remove, upsert and reinsert checks would never reach the HNSW index), so its sessions run with enable_seqscan off
# (libpq's PGOPTIONS); the script checks the plan with EXPLAIN at each stage whose answers it judges.
t0=$(date +%s)
vb_ns_run env PGOPTIONS="-c enable_seqscan=off" "$CONF" \
    --engine pgvector host="$pg" user=postgres password="$PW" dbname=postgres --restart "sh $SCRATCH/pg.sh restart" \
    --engine mariadb socket="$my/mysqld.sock" database=vbconf insert_batch=200 --restart "sh $SCRATCH/my.sh restart" \
    --known-filtered-defects "MariaDB 11.8 repeats a row in some filtered answers and returns some out of order (worst step 2.6 % in 2 of 86 script runs); the agent scores repeats as misses, records 'duplicate ids', and scores recall as a set" \
    --known-unreachable "MariaDB 11.8's graph leaves a counted row unreachable even at ef_search 1000 now and then (2 rows in 86 script runs, never two in one check); recall counts such a row as missed" \
    "${RS_ARGS[@]}" \
    >"$SCRATCH/conf.out" 2>"$SCRATCH/conf.err"
crc=$?
# Its TAP, renumbered into this test's (directives kept).
while IFS= read -r line; do
    case "$line" in
        "ok "*|"not ok "*)
            name=$(printf '%s\n' "$line" | sed -E 's/^(not )?ok [0-9]+ - //')
            case "$line" in ok*) pass=0 ;; *) pass=1 ;; esac
            case "$name" in *"# TODO"*) T_N=$((T_N + 1)); echo "$( [ $pass = 0 ] && echo ok || echo not ok) $T_N - $name" ;;
                            *) ok $pass "$name" ;; esac ;;
        "1.."*) ;;
        *) echo "$line" ;;
    esac
done <"$SCRATCH/conf.out"
ok $crc "vb_conformance exits 0 ($(($(date +%s) - t0)) s)"; [ $crc -eq 0 ] || tail -20 "$SCRATCH/conf.err" | diag
servers="pgvector mariadb"
for e in hnswlib exact $servers; do
    for m in euclidean angular; do
        grep -q "^ok [0-9]* - $e ($m): the conformance script passes" "$SCRATCH/conf.out"
        ok $? "$e ($m): the script ran and passed"
    done
done
grep -q "^ok [0-9]* - redis (angular): the conformance script passes" "$SCRATCH/conf.out"
ok $? "redis (angular): the script ran and passed"
grep -q "^ok [0-9]* - redis (euclidean): the conformance script # SKIP the engine does not compare by this metric" "$SCRATCH/conf.out" &&
    grep -q "^ok [0-9]* - redis (euclidean): create refuses the table, naming the metric" "$SCRATCH/conf.out"
ok $? "redis (euclidean): skipped visibly, and create refuses the table naming the metric"
grep -q "^ok [0-9]* - redis: a new connection answers after the restart" "$SCRATCH/conf.out"
ok $? "redis: the restart check ran (SHUTDOWN SAVE and a new server in the middle of the script)"
for e in alisql doris mongodb valkey; do
    grep -q "^ok [0-9]* - $e: the contract # SKIP no server for it here" "$SCRATCH/conf.out"
    ok $? "$e is listed as skipped, with the reason"
done
n_servers=$(echo $servers | wc -w)
[ "$(grep -c 'VB_RETRY after a server restart # SKIP embedded' "$SCRATCH/conf.out")" -eq 4 ] &&
    [ "$(grep -c '^ok [0-9]* - [a-z]*: a new connection answers after the restart' "$SCRATCH/conf.out")" -ge $((2 * n_servers)) ]
ok $? "the restart check ran on every server ($servers) for both metrics, and was skipped (visibly) for the two embedded engines"

# --- what a campaign does with wrong credentials -----------------------------------------------------------
bad() { # bad NAME POLICY: pgvector with a wrong password, then exact
    cat >"$SCRATCH/$1.yml" <<YML
name: $1
datasets: [{name: t, source: synthetic, rows: 2000, queries: 20, dim: 16, metric: euclidean, seed: 5}]
engines:
  - {name: pgvector, host: "$pg", user: postgres, password: wrong-$PW, dbname: postgres}
  - {name: exact}
phases: {build: {}, recall_sweep: {ef_search: [40]}}
limits: {on_item_failure: $2}
YML
    vb_ns_run "$VBENCH" run --profile "$SCRATCH/$1.yml" --out "$SCRATCH/$1.sqlite" --quiet >/dev/null 2>&1
}
bad badpw-continue continue
is $? "1" "wrong credentials, on_item_failure continue: the campaign ends with failures (exit 1)"
like "$(q "$SCRATCH/badpw-continue.sqlite" "SELECT error FROM plan WHERE key = 'badpw-continue/pgvector/t/build'")" \
     "password authentication failed" "the build failed with PostgreSQL's own words"
is "$(q "$SCRATCH/badpw-continue.sqlite" "SELECT group_concat(status) FROM plan WHERE engine = 'exact'")" "done,done" \
   "and the next engine ran"
bad badpw-stop stop
is $? "2" "on_item_failure stop: the campaign stops as interrupted (exit 2)"
is "$(q "$SCRATCH/badpw-stop.sqlite" "SELECT status FROM campaign")" "interrupted" "the database says interrupted"
is "$(q "$SCRATCH/badpw-stop.sqlite" "SELECT group_concat(status) FROM plan WHERE engine = 'exact'")" "pending,pending" \
   "nothing after the failure ran"

ctl kill vbc-pg 2 main >/dev/null && ctl wait vbc-pg 60 >/dev/null
ok $? "PostgreSQL stops"
ctl stop vbc-my
ok $? "MariaDB stops"
ctl stop vbc-rs
ok $? "Redis stops"
vb_ns_stop
ok $? "the namespace tears down"
done_testing
