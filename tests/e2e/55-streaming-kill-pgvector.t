#!/usr/bin/env bash
# Issue 25, "what must be shown" 3: SIGKILL of the coordinator and its agent in the middle of a streaming stage on
# PostgreSQL 17 + pgvector (tests/lib/pg-server.sh: a real server from the engine image), then `vbench resume`:
# the item runs again from its build (a fresh table of the initial fraction), v_streaming holds every stage exactly
# once (of the last attempt), and the server's table ends with every row of the corpus exactly once (its COUNT
# and COUNT DISTINCT id).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/pg-server.sh"
need pgrep
ROWS=3000

vb_pg_boot "$SCRATCH/pg" stream-pw
pg_table() { vb_pg_psql "SELECT tablename FROM pg_tables WHERE tablename LIKE 'vb_%' LIMIT 1"; }

db=$SCRATCH/k.sqlite
cat >"$SCRATCH/k.yml" <<YML
name: sk
datasets:
  - {name: sk, source: synthetic, rows: $ROWS, queries: 50, dim: 16, clusters: 8, metric: euclidean, seed: 5}
engines:
  - name: pgvector
    host: $SCRATCH/pg
    user: postgres
    password: stream-pw
    dbname: postgres
phases:
  build:
  streaming: {insert_rate: [250], insert_batch: 10, stages: [0.6, 0.8, 1.0], window_s: 0.5, clients: 2, ef_search: 40}
YML
"$VBENCH" run --profile "$SCRATCH/k.yml" --out "$db" --quiet 2>"$SCRATCH/run1.txt" &
pid=$!
wait_sql "$db" "SELECT COUNT(*) FROM streaming_result" 1 120
ok $? "the first run committed the first stage's window"
children=$(pgrep -P "$pid" | tr '\n' ' ')
[ -n "$children" ]; ok $? "the coordinator has its local agent as a child (${children:-none})"
kill -9 "$pid" $children
wait "$pid" 2>/dev/null
tbl=$(pg_table)
mid=$(vb_pg_psql "SELECT COUNT(*) FROM $tbl")
[ "${mid:-0}" -gt $((ROWS / 2)) ] && [ "${mid:-0}" -lt $ROWS ]
ok $? "killed in the middle of the stream: the server's table holds $mid of $ROWS rows"
is "$(q "$db" "SELECT status FROM plan WHERE phase = 'streaming'")" "running" "the killed item is not done"
"$VBENCH" resume --out "$db" --quiet 2>"$SCRATCH/run2.txt"
rc=$?
ok $rc "resume completes the campaign"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/run2.txt" | tail -20
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every item done"
is "$(q "$db" "SELECT COUNT(*), COUNT(DISTINCT stage_index), MIN(attempt) = MAX(attempt), MAX(attempt) > 1 FROM v_streaming" | tr '|' ' ')" \
   "4 4 1 1" "v_streaming: every stage and the window at rest exactly once, of the last attempt"
is "$(q "$db" "SELECT rows_inserted_total || ' ' || rows_scheduled_total || ' ' || rows_visible FROM v_streaming WHERE at_rest = 1")" \
   "1500 1500 $ROWS" "the resumed stream inserted the 1500 scheduled rows"
tbl=$(pg_table)
is "$(vb_pg_psql "SELECT COUNT(*) || ' ' || COUNT(DISTINCT id) FROM $tbl")" "$ROWS $ROWS" \
   "the server's table holds every row of the corpus exactly once"
q "$db" "SELECT attempt, stage_index, rows_visible, printf('%.3f', recall), printf('%.0f', qps),
         printf('%.0f/%.0f', achieved_rows_s, offered_rows_s), printf('%.2f', fresh_p50_ms)
         FROM streaming_result ORDER BY attempt, stage_index" | sed 's/^/# /'
# The mixed phase (issue 38) killed the same way on the same server: SIGKILL of the coordinator and its agent after
# two windows of updates, deletes and inserts, then resume. The item runs again from its build (a new table: nothing
# applied twice), and the server's table at the end holds exactly the write log's rows: its COUNT, SUM(id) and
# SUM(id * id) equal the log's live rows and the sum and sum of squares of their ids.
# The agent checks it too, id by id: every row it lists (SELECT id, embedding) against the log, vector by vector.
db=$SCRATCH/m.sqlite
sed -e 's/^name: sk/name: mk/' -e 's/^  streaming: .*/  mixed: {ops: {search: 0.8, update: 0.1, delete: 0.05, insert: 0.05}, ids: zipf(1.1), rate: 1000, window_s: 0.5, windows: 4, clients: 2, ef_search: 40}/' \
    "$SCRATCH/k.yml" >"$SCRATCH/m.yml"
"$VBENCH" run --profile "$SCRATCH/m.yml" --out "$db" --quiet 2>"$SCRATCH/run3.txt" &
pid=$!
wait_sql "$db" "SELECT COUNT(*) FROM mixed_result" 2 120
ok $? "mixed: the first run committed two windows"
children=$(pgrep -P "$pid" | tr '\n' ' ')
kill -9 "$pid" $children
wait "$pid" 2>/dev/null
is "$(q "$db" "SELECT status FROM plan WHERE phase = 'mixed'")" "running" "mixed: the killed item is not done"
"$VBENCH" resume --out "$db" --quiet 2>"$SCRATCH/run4.txt"
rc=$?
ok $rc "mixed: resume completes the campaign"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/run4.txt" | tail -20
is "$(q "$db" "SELECT COUNT(*), COUNT(DISTINCT window_index), MIN(attempt) = MAX(attempt), MAX(attempt) > 1 FROM v_mixed" | tr '|' ' ')" \
   "6 6 1 1" "mixed: v_mixed has every window once, of the last attempt (the item ran again from its build)"
tbl=$(pg_table)
is "$(vb_pg_psql "SELECT COUNT(*) || ' ' || SUM(id) || ' ' || SUM(id::numeric * id)  || ' ' || COUNT(DISTINCT id) FROM $tbl")" \
   "$(q "$db" "SELECT rows_live || ' ' || live_id_sum || ' ' || live_id_sumsq || ' ' || rows_live FROM v_mixed WHERE phase = 'maintained'")" \
   "mixed: the server's table holds exactly the write log's rows, each once (count, sum and sum of squares of the ids)"
is "$(q "$db" "SELECT rows_checked || ' ' || rows_vectors_checked || ' ' || rows_differ || ' ' || COALESCE(rows_diff_example, '-') FROM v_mixed WHERE phase = 'maintained'")" \
   "$(q "$db" "SELECT rows_live || ' ' || rows_live || ' 0 -' FROM v_mixed WHERE phase = 'maintained'")" \
   "mixed: after the resume the server's rows are the write log's id by id, each with the log's vector (nothing applied twice or missed)"
is "$(q "$db" "SELECT COUNT(*) FROM v_mixed WHERE ghost_answers = 0 AND recall >= 0.8")" "6" \
   "mixed: no ghost answer, recall >= 0.8 in every window: $(q "$db" "SELECT group_concat(printf('%.3f', recall), ' ') FROM v_mixed")"
done_testing
