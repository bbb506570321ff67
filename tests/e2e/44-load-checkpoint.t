#!/usr/bin/env bash
# A long load continues from its checkpoint after a restart (issue 28): the coordinator SIGKILLed twice during
# the build's load into a real MariaDB 11.8 (tests/lib/mariadb-server.sh; MHNSW, whose graph grows on insert:
# the rows in the table are the index), `vbench resume` each time (a new coordinator, new agents). The load
# sends a checkpoint about every second (table load_checkpoint); each resumed attempt continues from the last
# checkpoint of the attempt before, not from row 0, against the same server table (MariaDB's CREATE_TIME and
# InnoDB TABLE_ID: a reload would change them); the rows committed after the checkpoint are written again as
# upserts. In the end every row is in the server exactly once (COUNT = COUNT DISTINCT id = rows), the build
# row's load time is the sum of the attempts' load work, its attempts are counted, and `show` says so.
# Before: each resume dropped the table and loaded from the first row.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/load-checkpoint.sh"
. "$(dirname "$0")/../lib/mariadb-server.sh"
trap 'kill -9 $run 2>/dev/null; mdb_stop; rm -rf "$SCRATCH"' EXIT
ROWS=${VB_ROWS:-12000}
KILLS=2

mdb_boot "$SCRATCH/my"
my_table() { mdb_sql "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'vbload' LIMIT 1"; }
my_ident() { mdb_sql "SELECT CONCAT(CREATE_TIME, ' ', TABLE_ID) FROM information_schema.TABLES t JOIN information_schema.INNODB_SYS_TABLES s ON s.NAME = CONCAT(t.TABLE_SCHEMA, '/', t.TABLE_NAME) WHERE t.TABLE_SCHEMA = 'vbload' AND t.TABLE_NAME = '$1'"; }
my_rows() { mdb_sql "SELECT CONCAT(COUNT(*), ' ', COUNT(DISTINCT id)) FROM vbload.\`$1\`"; }

db=$SCRATCH/load.sqlite
# Two load connections of 10-row batches into an M=16 graph: some 15 s of load here, so both kills fall in it.
cat >"$SCRATCH/load.yml" <<YML
name: load-checkpoint
datasets:
  - {name: synth, source: synthetic, rows: $ROWS, queries: 100, dim: 32, clusters: 16, metric: euclidean, seed: 5}
engines:
  - name: mariadb
    socket: $MDB_SOCK
    database: vbload
    m: 16
phases:
  build: {load_connections: 2, load_batch: 10}
limits: {max_attempts: 5}
YML
"$VBENCH" run --profile "$SCRATCH/load.yml" --out "$db" --quiet 2>"$SCRATCH/run.txt" &
run=$!
# after a kill: the server's table as the first attempt made it (its identity is checked after the resumes)
after_kill() { [ "$1" -eq 1 ] && { tbl=$(my_table); ident=$(my_ident "$tbl"); }; true; }
vb_load_kills $KILLS "the load" after_kill
echo "# killed with the last checkpoints at rows:$killed_at; server table $tbl ($ident)"
wait_pid $run 300
is "$WAIT_RC" "0" "the last resume completes the campaign"
[ "$WAIT_RC" = 0 ] || sed 's/^/#   /' "$SCRATCH/run.txt" | tail -20
is "$(q "$db" "SELECT status || ' ' || attempts FROM plan WHERE phase = 'build'")" "done $((KILLS + 1))" \
   "the build is done after $((KILLS + 1)) attempts, each counted"

# Each resumed attempt started at the last checkpoint of the attempt before it, said by the agent.
vb_load_continued $KILLS "the load"
is "$(my_ident "$tbl")" "$ident" "the server's table is the one the first attempt made ($ident): never dropped"
is "$(my_rows "$tbl")" "$ROWS $ROWS" "the server's table holds every row once (COUNT, COUNT DISTINCT id)"
is "$(q "$db" "SELECT COUNT(*) || ' ' || rows || ' ' || attempts FROM build_result")" "1 $ROWS $((KILLS + 1))" \
   "one build row: $ROWS rows, its load over $((KILLS + 1)) attempts"
# The load time is the sum of the attempts' work: at least what the last checkpoint of the killed attempts said.
set -- $(q "$db" "SELECT load_s, (SELECT MAX(load_s) FROM load_checkpoint WHERE attempt = $KILLS) FROM build_result" | tr '|' ' ')
awk -v a="${1:-0}" -v b="${2:-1}" 'BEGIN { exit !(a > b && b > 0) }'
ok $? "the build's load_s ($1 s) is past the earlier attempts' load work ($2 s)"
like "$("$VBENCH" show --wide --out "$db" 2>&1)" "over $((KILLS + 1)) attempts" "show says the load ran over $((KILLS + 1)) attempts"
is "$(q "$db" "SELECT group_concat(DISTINCT attempts) FROM load_checkpoint WHERE attempt = $((KILLS + 1))")" "$((KILLS + 1))" \
   "the last attempt's checkpoints count the $((KILLS + 1)) attempts whose load work they sum"

# A window measured after a rebuild that followed data loss is a finding: the coordinator SIGKILLed right after
# the build, the server's table dropped (data lost), `vbench resume`: the new agent finds no table on the server,
# rebuilds it untimed, and every recall-sweep point measured on the rebuilt table is flagged in v_validity.
db2=$SCRATCH/lost.sqlite
cat >"$SCRATCH/lost.yml" <<YML
name: lost-table
datasets:
  - {name: synth, source: synthetic, rows: 3000, queries: 300, dim: 32, clusters: 16, metric: euclidean, seed: 6}
engines:
  - name: mariadb
    socket: $MDB_SOCK
    database: vblost
    m: 8
phases:
  build: {}
  recall_sweep: {ef_search: [10, 20, 40, 80, 160, 320]}
YML
"$VBENCH" run --profile "$SCRATCH/lost.yml" --out "$db2" --quiet 2>"$SCRATCH/lost.txt" &
run=$!
wait_sql "$db2" "SELECT COUNT(*) FROM plan WHERE phase = 'build' AND status = 'done'" 1 120
ok $? "the build is done"
kill -9 $run
wait $run 2>/dev/null
left=$(q "$db2" "SELECT COUNT(*) FROM plan WHERE phase = 'recall_sweep' AND status <> 'done'")
mdb_sql "DROP DATABASE vblost"
ok $? "the server's table is gone (DROP DATABASE, as a lost data directory would)"
"$VBENCH" resume --out "$db2" --quiet 2>>"$SCRATCH/lost.txt"
is "$?" "0" "resume completes the campaign"
is "$(q "$db2" "SELECT COUNT(*) FROM event WHERE message LIKE '%the server lost the table%rebuilding it untimed%'")" "1" \
   "the agent said the server lost the table and rebuilt it untimed, once"
[ "$left" -ge 1 ]; ok $? "$left sweep points were left for the resume"
is "$(q "$db2" "SELECT COUNT(*) FROM v_validity WHERE \"check\" = 'measured after a rebuild'")" "$left" \
   "each of them is a validity finding: measured after a rebuild that followed data loss"
like "$("$VBENCH" show --wide --out "$db2" 2>&1)" "measured on a table rebuilt untimed at" "show lists the finding"
done_testing
