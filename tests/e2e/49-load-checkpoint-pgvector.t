#!/usr/bin/env bash
# A long pgvector load continues from its checkpoint after a restart (issue 28), as 44-load-checkpoint.t shows
# for MariaDB: a real PostgreSQL 17 + pgvector (tests/lib/pg-server.sh), the coordinator SIGKILLed twice during the
# build's COPY, `vbench resume` each time (a new coordinator, new agents). Each COPY (load_batch rows) is its own
# transaction: the batches committed before a kill stay, the one cut off is rolled back. Each resumed attempt counts
# the server's rows, continues from the last checkpoint of the attempt before (not from row 0) into the same
# table (its pg_class oid: a reload would make a new one), writes the rows committed after the checkpoint again as
# upserts, and the HNSW index is built once, after the load: every row is in the server once (COUNT = COUNT
# DISTINCT id = rows), the attempts are counted, the load time is summed. Then a kill during CREATE INDEX: the
# resume keeps the rows (same table, no row loaded again) and builds only the index again.
# The load is made slow enough to be hit: an event trigger gives each table the test's campaigns create a
# BEFORE INSERT trigger that sleeps 2 ms a row (about 900 rows/s over two connections here), and another sleeps
# 6 s at the start of each CREATE INDEX. Before: pgvector's load started from the first row on every resume.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/load-checkpoint.sh"
. "$(dirname "$0")/../lib/pg-server.sh"
trap 'kill -9 $run 2>/dev/null; vb_pg_stop; rm -rf "$SCRATCH"' EXIT
ROWS=${VB_ROWS:-6000}
KILLS=2

vb_pg_boot "$SCRATCH/pg" ckpt-pw
vb_pg_psql "
CREATE FUNCTION vbt_slow_row() RETURNS trigger LANGUAGE plpgsql AS \$\$BEGIN PERFORM pg_sleep(0.002); RETURN NEW; END\$\$;
CREATE FUNCTION vbt_slow_table() RETURNS event_trigger LANGUAGE plpgsql AS \$\$
DECLARE r record;
BEGIN
  FOR r IN SELECT * FROM pg_event_trigger_ddl_commands() WHERE command_tag = 'CREATE TABLE' AND schema_name = 'public' LOOP
    EXECUTE format('CREATE TRIGGER vbt_slow BEFORE INSERT ON %s FOR EACH ROW EXECUTE FUNCTION vbt_slow_row()', r.object_identity);
  END LOOP;
END\$\$;
CREATE EVENT TRIGGER vbt_slow_table ON ddl_command_end WHEN TAG IN ('CREATE TABLE') EXECUTE FUNCTION vbt_slow_table();
CREATE FUNCTION vbt_slow_index() RETURNS event_trigger LANGUAGE plpgsql AS \$\$BEGIN PERFORM pg_sleep(6); END\$\$;
CREATE EVENT TRIGGER vbt_slow_index ON ddl_command_start WHEN TAG IN ('CREATE INDEX') EXECUTE FUNCTION vbt_slow_index();" >/dev/null
ok $? "the slow-load triggers are in place"
pg_oid() { vb_pg_psql "SELECT oid FROM pg_class WHERE relname = '$1' AND relkind = 'r'"; }
pg_rows() { vb_pg_psql "SELECT count(*) || ' ' || count(DISTINCT id) FROM $1"; }
pg_index() { vb_pg_psql "SELECT count(*) FROM pg_class WHERE relname = '${1}_hnsw' AND relkind = 'i'"; }

profile() { # profile NAME TABLE ROWS
    cat <<YML
name: $1
datasets:
  - {name: synth, source: synthetic, rows: $3, queries: 50, dim: 16, clusters: 16, metric: euclidean, seed: 5}
engines:
  - name: pgvector
    host: $SCRATCH/pg
    user: postgres
    password: ckpt-pw
    dbname: postgres
    table: $2
    m: 8
    ef_construction: 32
phases:
  build: {load_connections: 2, load_batch: 50}
limits: {max_attempts: 5}
YML
}

db=$SCRATCH/load.sqlite
profile pg-load-checkpoint vbload "$ROWS" >"$SCRATCH/load.yml"
"$VBENCH" run --profile "$SCRATCH/load.yml" --out "$db" --quiet 2>"$SCRATCH/run.txt" &
run=$!
# after a kill: the server's rows, its table's oid after the first, and no index yet
after_kill() {
    kill_note="(server $(pg_rows vbload | cut -d' ' -f1))"
    [ "$1" -eq 1 ] && oid=$(pg_oid vbload)
    is "$(pg_index vbload)" "0" "attempt $1 was killed during the load: no index yet"
}
vb_load_kills $KILLS "the COPY" after_kill
echo "# killed with the last checkpoints at rows:$killed_at; server table oid $oid"
wait_pid $run 300
is "$WAIT_RC" "0" "the last resume completes the campaign"
[ "$WAIT_RC" = 0 ] || sed 's/^/#   /' "$SCRATCH/run.txt" | tail -20
is "$(q "$db" "SELECT status || ' ' || attempts FROM plan WHERE phase = 'build'")" "done $((KILLS + 1))" \
   "the build is done after $((KILLS + 1)) attempts, each counted"
vb_load_continued $KILLS "the COPY"
is "$(pg_oid vbload)" "$oid" "the server's table is the one the first attempt made (oid $oid): never dropped"
is "$(pg_rows vbload)" "$ROWS $ROWS" "the server's table holds every row once (COUNT, COUNT DISTINCT id)"
is "$(pg_index vbload)" "1" "the HNSW index is there, built after the load"
is "$(q "$db" "SELECT COUNT(*) || ' ' || rows || ' ' || attempts FROM build_result")" "1 $ROWS $((KILLS + 1))" \
   "one build row: $ROWS rows, its load over $((KILLS + 1)) attempts"
set -- $(q "$db" "SELECT load_s, (SELECT MAX(load_s) FROM load_checkpoint WHERE attempt = $KILLS), build_s FROM build_result" | tr '|' ' ')
awk -v a="${1:-0}" -v b="${2:-1}" 'BEGIN { exit !(a > b && b > 0) }'
ok $? "the build's load_s (${1:-} s) is past the earlier attempts' load work (${2:-} s)"
awk -v c="${3:-0}" 'BEGIN { exit !(c >= 6) }'
ok $? "build_s (${3:-} s) is the one CREATE INDEX (with its 6 s start), apart from the load"
echo "# load_s ${1:-} s over $((KILLS + 1)) attempts, build_s ${3:-} s"
like "$("$VBENCH" show --wide --out "$db" 2>&1)" "over $((KILLS + 1)) attempts" "show says the load ran over $((KILLS + 1)) attempts"

# A kill during CREATE INDEX: the rows are all in (the load's last checkpoint says so), the resume keeps them and
# builds only the index again. The killed coordinator's agent waits for its CREATE INDEX to return before it goes:
# the resumed build cancels that statement (the server's log says so) instead of racing it.
db2=$SCRATCH/index.sqlite
IROWS=2000
profile pg-index-kill vbindex $IROWS >"$SCRATCH/index.yml"
"$VBENCH" run --profile "$SCRATCH/index.yml" --out "$db2" --quiet 2>"$SCRATCH/index.txt" &
run=$!
wait_sql "$db2" "SELECT COALESCE(MAX(rows), 0) FROM load_checkpoint WHERE attempt = 1" $IROWS 120
ok $? "the load's last checkpoint says all $IROWS rows are in"
for i in $(seq 1 100); do
    [ "$(vb_pg_psql "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'CREATE INDEX vbindex_hnsw%' AND state = 'active'")" = 1 ] && break
    sleep 0.1
done
is "$(vb_pg_psql "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'CREATE INDEX vbindex_hnsw%' AND state = 'active'")" "1" \
   "the server runs the CREATE INDEX"
kill -9 $run
wait $run 2>/dev/null
ioid=$(pg_oid vbindex)
is "$(pg_index vbindex)" "0" "no index was left by the killed build"
"$VBENCH" resume --out "$db2" --quiet 2>>"$SCRATCH/index.txt"
rc=$?
is "$rc" "0" "resume completes the campaign"
[ "$rc" = 0 ] || sed 's/^/#   /' "$SCRATCH/index.txt" | tail -20
is "$(grep -A3 'canceling statement due to user request' "$SCRATCH/pg/server.log" | grep -c 'STATEMENT:  CREATE INDEX vbindex_hnsw ON vbindex')" "1" \
   "the earlier attempt's CREATE INDEX, still running, was cancelled by the resumed build (the server's log)"
is "$(q "$db2" "SELECT COUNT(*) FROM event WHERE message LIKE '%continuing the load from its checkpoint at row $IROWS:%'")" "1" \
   "the resumed attempt continued at row $IROWS, the end of the load"
is "$(q "$db2" "SELECT COUNT(*) FROM event WHERE message LIKE '%only the index is built again%'")" "1" \
   "and said that only the index is built again"
is "$(q "$db2" "SELECT COUNT(*) FROM load_checkpoint WHERE attempt = 2")" "0" "it loaded no row: no checkpoint of its own"
is "$(pg_oid vbindex)" "$ioid" "the server's table is the one the first attempt loaded (oid $ioid)"
is "$(pg_rows vbindex)" "$IROWS $IROWS" "it holds every row once"
is "$(pg_index vbindex)" "1" "the index is built"
set -- $(q "$db2" "SELECT attempts, load_s, (SELECT MAX(load_s) FROM load_checkpoint WHERE attempt = 1), build_s FROM build_result" | tr '|' ' ')
is "${1:-}" "2" "the build row counts 2 attempts"
awk -v a="${2:-0}" -v b="${3:-1}" 'BEGIN { exit !(a >= b && b > 0) }'
ok $? "its load_s (${2:-} s) holds the first attempt's load (${3:-} s)"
awk -v c="${4:-0}" 'BEGIN { exit !(c >= 6) }'
ok $? "its build_s (${4:-} s) is the CREATE INDEX built again"
done_testing
