#!/usr/bin/env bash
# The pgvector engine on a real PostgreSQL 17 + pgvector 0.8.0 from the engine image (tests/e2e/pg-server.sh):
# first the adapter alone through its test driver (tests/tools/vb_pgtest: recall against the exact engine for
# angular, halfvec and euclidean, ef_search, the 1 % filter with iterative scan off / relaxed_order /
# strict_order, churn, VACUUM, sizes, version, EXPLAIN, and the errors: wrong password, an extension the user may
# not create, an unsupported metric, no server), then a whole campaign with engine pgvector through
# `vbench run` (coordinator, agent, every phase) into SQLite. The server is always stopped (trap).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg-server.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DRIVER=${VB_PGTEST:-$ROOT/${BUILD:-build}/tools/vb_pgtest}

vb_ensure_image db-trixie
why=$(vb_pg_skip_reason)
[ -n "$why" ] || [ -x "$DRIVER" ] || why="the test driver $DRIVER is not built (make tools)"
if [ -n "$why" ]; then echo "1..0 # SKIP $why"; exit 0; fi
trap 'vb_pg_stop; rm -rf "$SCRATCH"' EXIT

PW=vbench-pw-$$
t0=$(date +%s)
vb_pg_start "$SCRATCH/pg" "$PW"
ok $? "PostgreSQL 17 starts from the engine image (socket in $SCRATCH/pg)"
[ -n "$VB_PG_PID" ] || { done_testing; exit 1; }
like "$(vb_pg_psql 'SELECT version()')" "PostgreSQL 17" "it answers a query"
# A role and a database where pgvector is not installed and may not be created (it is not a trusted extension).
vb_pg_psql "CREATE ROLE vb_noext LOGIN PASSWORD 'noext'" >/dev/null &&
    vb_pg_psql "CREATE DATABASE vb_noext OWNER vb_noext" >/dev/null
ok $? "a role without the right to create the extension, and its database"

# --- the adapter through its driver ----------------------------------------------------------------------------
VB_PG_HOST="$SCRATCH/pg" VB_PG_PASSWORD=$PW "$DRIVER" >"$SCRATCH/driver.txt" 2>"$SCRATCH/driver.err"
drc=$?
checks=0
while IFS= read -r line; do
    case "$line" in
        "check "*) rc=${line#check }; name=${rc#? }; rc=${rc%% *}; ok $((1 - rc)) "$name"; checks=$((checks + 1)) ;;
        "#"*) echo "$line" ;;
    esac
done <"$SCRATCH/driver.txt"
[ "$drc" -eq 0 ] && [ "$checks" -ge 40 ]
ok $? "the driver exits 0 after all its checks ($checks)"
[ "$drc" -eq 0 ] || sed 's/^/#   stderr: /' "$SCRATCH/driver.err" | tail -20

# --- a campaign on pgvector through the coordinator and the agent ------------------------------------------------
db="$SCRATCH/pg.sqlite"
cat >"$SCRATCH/pg.yml" <<YML
name: pgvector-e2e
k: 10
datasets:
  - name: synth-angular-10k
    source: synthetic
    rows: 10000
    queries: 200
    dim: 48
    clusters: 32
    metric: angular
    seed: 1
engines:
  - name: pgvector
    host: "$SCRATCH/pg"
    user: postgres
    password: "$PW"
    dbname: postgres
    iterative_scan: "off"
    maintenance_work_mem: 256MB
    max_parallel_maintenance_workers: 2
    m: 16
    ef_construction: 64
phases:
  build: {load_connections: 4, load_batch: 1000}
  recall_sweep: {ef_search: [10, 40, 200]}
  concurrency: {clients: [1, 2, 4], window_s: 1, repeats: 1, warmup_s: 0.2, ef_search: 100}
  filtered: {selectivity: [0.1, 0.01], queries: 100, ef_search: 40}
  churn: {fraction: 0.1, limit_s: 120, queries: 200, ef_search: 100}
YML
"$VBENCH" run --profile "$SCRATCH/pg.yml" --out "$db" >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt"
rc=$?
ok $rc "vbench run --profile with engine pgvector exits 0"
[ $rc -eq 0 ] || { sed 's/^/#   /' "$SCRATCH/err.txt" | tail -20; sed 's/^/#   /' "$SCRATCH/out.txt" | tail -20; }
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every plan item is done"
for t in build_result sweep_result window_result filtered_result churn_result; do
    n=$(q "$db" "SELECT COUNT(*) FROM $t WHERE engine = 'pgvector'" 2>&1)
    [ "${n:-0}" -gt 0 ] 2>/dev/null
    ok $? "$t has pgvector rows ($n)"
done
like "$(q "$db" "SELECT engine_version FROM build_result WHERE engine = 'pgvector'")" "pgvector 0.8" \
    "the build row records the server and extension versions"
is "$(q "$db" "SELECT index_bytes > 0 AND table_bytes > 0 FROM build_result WHERE engine = 'pgvector'")" "1" \
    "the build row has index and table sizes"
best=$(q "$db" "SELECT MAX(recall) FROM sweep_result WHERE engine = 'pgvector'")
[ "$(echo "$best >= 0.95" | bc)" = 1 ]
ok $? "the recall sweep reaches recall >= 0.95 ($best)"
sh1=$(q "$db" "SELECT short_answers FROM filtered_result WHERE engine = 'pgvector' AND filter = 'tag < 100'")
[ "${sh1:-0}" -gt 50 ]
ok $? "at 1 % with iterative scan off, most of the 100 answers are short ($sh1): pgvector's behaviour is visible"
# Wrong credentials through a whole campaign: the engine's own words, and the policy decides what comes next.
bad() { # bad NAME POLICY: pgvector with a wrong password, then exact
    cat >"$SCRATCH/$1.yml" <<YML
name: $1
datasets: [{name: t, source: synthetic, rows: 2000, queries: 20, dim: 16, metric: euclidean, seed: 5}]
engines:
  - {name: pgvector, host: "$SCRATCH/pg", user: postgres, password: wrong-$PW, dbname: postgres}
  - {name: exact}
phases: {build: {}, recall_sweep: {ef_search: [40]}}
limits: {on_item_failure: $2}
YML
    "$VBENCH" run --profile "$SCRATCH/$1.yml" --out "$SCRATCH/$1.sqlite" --quiet >/dev/null 2>&1
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
   "nothing after the failure ran; resume --retry-failed continues once the cause is fixed"

echo "# campaign tables:"
"$VBENCH" show "$db" 2>&1 | sed 's/^/#   /'
echo "# total $(($(date +%s) - t0)) s"
done_testing
