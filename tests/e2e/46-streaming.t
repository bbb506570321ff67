#!/usr/bin/env bash
# The streaming phase end to end (issue 25), through the coordinator and a real agent into SQLite, on embedded
# engines: half the corpus built, the other half inserted at an offered rate while two clients search.
#  - exact: recall 1 at every stage, since each stage's ground truth is the staged one over the visible rows
#    (against the full corpus a stage at 60 % would score about 0.6);
#  - hnswlib: recall near what the index gives at every stage, achieved = offered rate, freshness found;
#  - sleep with insert_us (a writer that cannot keep the rate): achieved < offered, the lag and the shortfall
#    measured, every scheduled row inserted;
#  - SIGKILL of the coordinator (and with it its local agent) in the middle of the stream, then resume: the item
#    runs again from its build and v_streaming holds every stage exactly once, of the last attempt.
# `vbench show` and `show --json` print the streaming tables.
. "$(dirname "$0")/../lib/lib.sh"
need pgrep gnuplot chromium /usr/bin/python3

profile() { # profile NAME ENGINES-YAML STREAMING-SECTION [ROWS]
    cat <<YML
name: $1
datasets:
  - {name: synth, source: synthetic, rows: ${4:-4000}, queries: 100, dim: 16, clusters: 8, metric: euclidean, seed: 3}
engines:
$2
phases:
  build:
  streaming: $3
YML
}

db="$SCRATCH/s.sqlite"
profile st "  - name: exact
  - name: hnswlib" "{insert_rate: [600], insert_batch: 50, window_s: 0.5, clients: 2}" >"$SCRATCH/s.yml"
"$VBENCH" run --profile "$SCRATCH/s.yml" --out "$db" >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt"
rc=$?
ok $rc "vbench run exits 0"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/err.txt" | tail -20
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every plan item done"
is "$(q "$db" "SELECT engine || ':' || COUNT(*) FROM v_streaming GROUP BY engine ORDER BY engine" | tr '\n' ' ')" \
   "exact:6 hnswlib:6 " "five stage windows and one at rest per engine"
is "$(q "$db" "SELECT group_concat(printf('%g', stage), ',') FROM v_streaming WHERE engine = 'exact' AND at_rest = 0")" \
   "0.6,0.7,0.8,0.9,1" "the default stages, in order"
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE engine = 'exact' AND printf('%.6f', recall) = '1.000000'")" "6" \
   "exact: recall 1 in every window (the staged ground truth over the visible rows)"
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE rows_visible >= stage * rows_total AND rows_visible <= rows_total")" \
   "12" "every window's visible rows reach its stage"
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE engine = 'exact' AND recall_full < 1.0 * rows_visible / rows_total + 0.1 AND recall_full > 1.0 * rows_visible / rows_total - 0.2")" "6" \
   "exact: against the full corpus's ground truth the same answers would score about the visible fraction: $(q "$db" "SELECT group_concat(printf('%.3f', recall_full), ' ') FROM v_streaming WHERE engine = 'exact'")"
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE engine = 'hnswlib' AND recall >= 0.9")" "6" \
   "hnswlib: recall >= 0.9 in every window: $(q "$db" "SELECT group_concat(printf('%.4f', recall), ' ') FROM v_streaming WHERE engine = 'hnswlib'")"
# the recall distribution of every window (issue 35): exact's per-query recall is 1 for every query of every window
is "$(q "$db" "SELECT COUNT(*) FROM v_recall_dist WHERE phase = 'streaming' AND queries > 0 AND recall_min <= recall_p10
               AND recall_p10 <= recall_p50")" "12" "every streaming window has a recall distribution"
is "$(q "$db" "SELECT COUNT(*) FROM v_recall_dist WHERE phase = 'streaming' AND engine = 'exact' AND recall_min = 1
               AND zero_share = 0")" "6" "exact: every query of every window at recall 1"
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE at_rest = 1 AND rows_inserted_total = 2000 AND rows_scheduled_total = 2000 AND rows_visible = 4000")" \
   "2" "at rest: all 2000 scheduled rows inserted, the index holds the corpus"
# Both keep 600 rows/s. exact's writer waited for its searchers' lock (a lock that preferred readers) and fell 127
# rows behind at its first stage in one of three runs, before issue 36.2 made the lock prefer the writer.
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE at_rest = 0 AND rows_inserted > 0 AND rows_scheduled - rows_inserted <= 50 AND shortfall_rows <= 50")" \
   "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE at_rest = 0 AND rows_inserted > 0")" \
   "exact, hnswlib keep up: achieved = offered within one batch: $(q "$db" "SELECT group_concat(engine || ' ' || printf('%.0f/%.0f', achieved_rows_s, offered_rows_s), ' ') FROM v_streaming WHERE at_rest = 0 AND rows_inserted > 0")"
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE rows_during_window > 0 AND engine = 'hnswlib'")" "4" \
   "hnswlib: the windows of stages 0.6 - 0.9 ran while rows were inserted"
# Issue 36.1: the rows acknowledged during a window are counted when its clock ends, not after its answers were
# scored: the writer never runs ahead of its schedule, so they stay within the rows due by the window's end, and every
# fresh row a window returned is among them (up to the one batch whose call was in flight at the end).
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE at_rest = 0 AND rows_inserted_total + rows_during_window <= rows_scheduled_window_end")" "10" \
   "exact, hnswlib: rows acknowledged by each window's end within the rows due then: $(q "$db" "SELECT group_concat(engine || ' ' || (rows_inserted_total + rows_during_window) || '/' || rows_scheduled_window_end, ', ') FROM v_streaming WHERE at_rest = 0")"
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE at_rest = 0 AND (fresh_rows_found = 0 OR fresh_row_max < rows_visible + rows_during_window + 50)")" "10" \
   "exact, hnswlib: the fresh rows found are rows acknowledged during the window: $(q "$db" "SELECT group_concat(engine || ' ' || fresh_rows_found || ' found, up to row ' || COALESCE(fresh_row_max, '-') || ' of ' || rows_visible || ' + ' || rows_during_window, ', ') FROM v_streaming WHERE at_rest = 0")"
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE engine = 'exact' AND rows_during_window >= 50 AND fresh_rows_found = 0")" "0" \
   "exact: every window during which a batch or more arrived returned some of its rows"
is "$(q "$db" "SELECT SUM(fresh_probes) > 0, SUM(fresh_never) FROM v_streaming WHERE engine = 'hnswlib'" | tr '|' ' ')" "1 0" \
   "hnswlib (synchronous): freshness probes found every row: p50 $(q "$db" "SELECT group_concat(printf('%.3f', fresh_p50_ms), ' ') FROM v_streaming WHERE engine = 'hnswlib' AND fresh_probes > 0") ms"
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming_cost WHERE throughput_ratio > 0 AND p99_ratio > 0")" "2" \
   "the cost of concurrent writes per engine: $(q "$db" "SELECT group_concat(engine || ' ' || printf('%.2f', throughput_ratio) || ' ' || printf('%.2f', p99_ratio), '; ') FROM v_streaming_cost")"
like "$(cat "$SCRATCH/err.txt")" "streaming/insert_rate=600 stage 0.6: " "the console says each window"
out=$("$VBENCH" show "$db")
like "$out" "Streaming (search while the corpus grows" "show prints the streaming table"
like "$out" "Streaming: the cost of concurrent writes" "show prints the cost of concurrent writes"
"$VBENCH" show --json "$db" >"$SCRATCH/show.json"
/usr/bin/python3 - "$SCRATCH/show.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["streaming"]) == 12, len(d["streaming"])
for row in d["streaming"]:
    for k in ("engine", "insert_rate", "stage", "rows_visible", "recall", "qps", "p99_ms", "offered_rows_s",
              "achieved_rows_s", "max_lag_s", "fresh_p50_ms", "fresh_never"):
        assert k in row, k
assert len(d["streaming_cost"]) == 2
PY
ok $? "show --json: the streaming rows and the cost rows with their fields"
"$VBENCH" report "$db" >/dev/null 2>"$SCRATCH/report.err"
ok $? "vbench report exits 0" || tail -5 "$SCRATCH/report.err" | sed 's/^/#   /'
html=$SCRATCH/s-report/report.html
like "$(cat "$html" 2>/dev/null)" "Streaming (search while the corpus grows)" "the report has a streaming section"
like "$(cat "$html" 2>/dev/null)" "throughput_ratio" "the report's streaming section has the cost of concurrent writes"
is "$(ls "$SCRATCH/s-report/charts/" | grep -c '^streaming-.*\.png$')" "5" \
   "the report draws recall, QPS and p99 against the stage, offered against achieved rate, freshness"
# The section seen in headless Chromium (JavaScript off, no network): the report's head and its streaming section
# alone, so that the screenshot shows it.
vb_report_section_shot "$html" streaming "$SCRATCH/streaming.png"

"$VBENCH" export "$db" --format csv -o "$SCRATCH/csv" >/dev/null 2>&1
ok $? "vbench export --format csv exits 0"
is "$(($(wc -l <"$SCRATCH/csv/streaming.csv") - 1)) $(($(wc -l <"$SCRATCH/csv/streaming_cost.csv") - 1))" "12 2" \
   "the csv export has the streaming windows and the cost rows"
"$VBENCH" export "$db" --format json -o "$SCRATCH/json" >/dev/null 2>&1
ok $? "vbench export --format json exits 0"
# A file of an older vbench (no streaming_result table) still reads: show, report and export (the file untouched).
cp "$db" "$SCRATCH/old.sqlite"
sqlite3 "$SCRATCH/old.sqlite" "DROP VIEW v_streaming_cost; DROP VIEW v_streaming; DROP TABLE streaming_result;
                                DROP VIEW v_recall_dist; DROP TABLE recall_dist"
chmod a-w "$SCRATCH/old.sqlite"
sum=$(md5sum <"$SCRATCH/old.sqlite")
"$VBENCH" show "$SCRATCH/old.sqlite" >"$SCRATCH/old.txt" 2>&1 && ! grep -q Streaming "$SCRATCH/old.txt"
ok $? "show reads a file without the streaming table (and prints no streaming table)"
like "$("$VBENCH" show --recall --worst 3 "$SCRATCH/old.sqlite" 2>&1)" "no measured point has per-query recall" \
   "show --worst reads a file without the recall distribution and says it has none"
"$VBENCH" export "$SCRATCH/old.sqlite" --format csv -o "$SCRATCH/old-csv" >/dev/null 2>&1
ok $? "export reads it too"
is "$(md5sum <"$SCRATCH/old.sqlite")" "$sum" "the older file is not written"

# Open-loop searches (mode: open): the windows keep their answers as closed-loop windows do, so exact scores recall 1
# against the visible rows in every window, and the rows acknowledged during a window are counted when returned.
db="$SCRATCH/open.sqlite"
profile open "  - name: exact" "{insert_rate: [600], insert_batch: 50, window_s: 0.5, clients: 2, mode: open, target_rate: 400}" \
    >"$SCRATCH/open.yml"
"$VBENCH" run --profile "$SCRATCH/open.yml" --out "$db" >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt"
rc=$?
ok $rc "open loop: vbench run exits 0"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/err.txt" | tail -20
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE queries > 0 AND printf('%.3f', recall) = '1.000'")" "6" \
   "open loop, exact: recall 1.000 in every window: $(q "$db" "SELECT group_concat(printf('%.3f', recall) || ' (' || queries || ' q)', ' ') FROM v_streaming")"
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE recall_full IS NOT NULL AND recall_full >= 0 AND recall_full < 1.0 * rows_visible / rows_total + 0.1 AND at_rest = 0")" "5" \
   "open loop, exact: against the full corpus the same answers score about the visible fraction: $(q "$db" "SELECT group_concat(printf('%.3f', recall_full), ' ') FROM v_streaming WHERE at_rest = 0")"
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE rows_during_window > 0 AND fresh_rows_found > 0")" \
   "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE rows_during_window > 0")" \
   "open loop, exact: every window during which rows arrived returned some of them: $(q "$db" "SELECT group_concat(fresh_rows_found, ' ') FROM v_streaming WHERE rows_during_window > 0") fresh rows found"

# A writer that cannot keep the rate: 10 rows per call at 20 ms a call is at most 500 rows/s; 2000 are offered. The
# first stage comes after 200 rows (0.4 s at 500 rows/s), while the schedule still has rows due (it ends at 1 s);
# stages 0.7 and 0.85 come after it ended, still 1400 and 900 rows behind; stage 1 only when every row is in.
db="$SCRATCH/slow.sqlite"
profile slow "  - name: sleep
    service_us: 200
    insert_us: 20000" "{insert_rate: [2000], insert_batch: 10, stages: [0.55, 0.7, 0.85, 1], window_s: 0.3, clients: 1}" \
    >"$SCRATCH/slow.yml"
"$VBENCH" run --profile "$SCRATCH/slow.yml" --out "$db" >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt"
rc=$?
ok $rc "slow writer: vbench run exits 0"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/err.txt" | tail -20
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE stage_index = 1 AND offered_rows_s > 1500 AND achieved_rows_s < 600 AND shortfall_rows > 100")" "1" \
   "slow writer: achieved < offered and a shortfall at stage 0.55: $(q "$db" "SELECT printf('%.0f of %.0f rows/s, %d rows behind', achieved_rows_s, offered_rows_s, shortfall_rows) FROM v_streaming WHERE stage_index = 1")"
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE at_rest = 1 AND max_lag_s > 2 AND rows_inserted_total = 2000 AND rows_scheduled_total = 2000")" "1" \
   "slow writer: the largest lag is measured ($(q "$db" "SELECT printf('%.2f', max_lag_s) FROM v_streaming WHERE at_rest = 1") s) and no batch was skipped (2000 of 2000 rows)"
like "$(q "$db" "SELECT \"check\" || ': ' || detail FROM v_validity")" "insert rate not kept: " \
     "slow writer: the validity section says the insert rate was not kept"
# issue 36.3: every stage behind is a finding with its own shortfall and lag, not only the first
is "$(q "$db" "SELECT group_concat(printf('%g', stage), ' ') FROM v_streaming WHERE shortfall_rows > 100 AND at_rest = 0")" "0.55 0.7 0.85" \
   "slow writer: stages 0.55, 0.7 and 0.85 began behind the schedule: $(q "$db" "SELECT group_concat(shortfall_rows, ' ') FROM v_streaming WHERE at_rest = 0") rows"
is "$(q "$db" "SELECT COUNT(*) FROM v_validity WHERE \"check\" = 'insert rate not kept' AND detail LIKE '%largest lag in the stage%'")" "3" \
   "slow writer: a finding for each stage behind, with its lag: $(q "$db" "SELECT detail FROM v_validity WHERE \"check\" = 'insert rate not kept'" | tr '\n' ';')"
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE insert_p50_ms BETWEEN 19 AND 60")" "4" \
   "slow writer: insert latency shows the 20 ms calls: $(q "$db" "SELECT group_concat(printf('%.1f', insert_p50_ms), ' ') FROM v_streaming WHERE insert_p50_ms IS NOT NULL") ms"

# Issue 36.2: exact's writer keeps its offered rate while four clients search all the time. With a lock that preferred
# readers the writer got in only when all four paused at once: it was 250-300 rows (the whole 0.5 s window's schedule)
# behind at the end of every window, and caught up after it; now it is within the batch due last.
db="$SCRATCH/writer.sqlite"
profile writer "  - name: exact" "{insert_rate: [600], insert_batch: 50, window_s: 0.5, clients: 4}" >"$SCRATCH/writer.yml"
"$VBENCH" run --profile "$SCRATCH/writer.yml" --out "$db" >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt"
rc=$?
ok $rc "exact, 4 clients: vbench run exits 0"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/err.txt" | tail -20
# At least 4 of the 5 windows: the reader-preferring lock left the writer 250-300 rows behind at the end of every
# window; on a host at load 17 (the whole suite at four lanes in make fresh-check, beside two more copies of
# 38-replicas, 2026-12-06 18:37) one window of five ended 250 rows behind, the four others 0, the host's own stall.
n=$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE at_rest = 0 AND rows_scheduled_window_end - rows_inserted_total - rows_during_window <= 50 AND shortfall_rows <= 50")
[ "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE at_rest = 0")" = 5 ] && [ "$n" -ge 4 ]
ok $? "exact, 4 clients searching: at the start and end of 4 or 5 of the 5 windows ($n) the writer is within one batch of the schedule: $(q "$db" "SELECT group_concat((rows_scheduled_window_end - rows_inserted_total - rows_during_window) || ' behind at the end (' || shortfall_rows || ' at the start)', ', ') FROM v_streaming WHERE at_rest = 0"); largest lag $(q "$db" "SELECT printf('%.3f', MAX(max_lag_s)) FROM v_streaming") s"

# Issue 36.1, on a window whose answers take long to collect: a 300 ms search (sleep) begun inside a 0.45 s window
# ends 150 ms after it, while the writer keeps its 600 rows/s; those rows are not the window's.
db="$SCRATCH/edge.sqlite"
profile edge "  - name: sleep
    service_us: 300000" "{insert_rate: [600], insert_batch: 10, stages: [0.6, 0.8, 1], window_s: 0.45, clients: 1}" \
    >"$SCRATCH/edge.yml"
"$VBENCH" run --profile "$SCRATCH/edge.yml" --out "$db" >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt"
rc=$?
ok $rc "long searches: vbench run exits 0"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/err.txt" | tail -20
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE at_rest = 0 AND rows_during_window > 0 AND rows_inserted_total + rows_during_window <= rows_scheduled_window_end")" "2" \
   "long searches: the rows during each window are those acknowledged by its end: $(q "$db" "SELECT group_concat((rows_inserted_total + rows_during_window) || ' acknowledged, ' || rows_scheduled_window_end || ' due', '; ') FROM v_streaming WHERE at_rest = 0")"

# The item's limit: the slow writer needs 4 s for its 2000 rows; limit_s 1 stops it after the first stage's window.
db="$SCRATCH/limit.sqlite"
sed 's/clients: 1}/clients: 1, limit_s: 1}/' "$SCRATCH/slow.yml" >"$SCRATCH/limit.yml"
"$VBENCH" run --profile "$SCRATCH/limit.yml" --out "$db" >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt"
is "$?" "1" "limit: vbench run exits 1 (an item stopped at its limit)"
like "$(q "$db" "SELECT status || ': ' || error FROM plan WHERE phase = 'streaming'")" \
     "expired: streaming stopped at its limit of 1 s with " "limit: the item is expired, its message says how far it got"
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE stage_index = 1 AND at_rest = 0")" "1" \
   "limit: the window measured before the limit is kept"

# SIGKILL in the middle of the stream, then resume.
db="$SCRATCH/kill.sqlite"
# (the searches an open loop at 400/s: the kill needs the stream's time, not the clients' throughput)
profile kill "  - name: hnswlib" "{insert_rate: [300], insert_batch: 20, window_s: 0.5, clients: 2, mode: open, target_rate: 400}" >"$SCRATCH/kill.yml"
"$VBENCH" run --profile "$SCRATCH/kill.yml" --out "$db" --quiet 2>"$SCRATCH/run1.txt" &
pid=$!
wait_sql "$db" "SELECT COUNT(*) FROM streaming_result" 2 120
ok $? "first run committed two streaming windows"
children=$(pgrep -P "$pid" | tr '\n' ' ')
[ -n "$children" ]; ok $? "the coordinator has its local agent as a child (${children:-none})"
kill -9 "$pid" $children
wait "$pid" 2>/dev/null
before=$(q "$db" "SELECT COUNT(*) FROM streaming_result")
is "$(q "$db" "SELECT status FROM plan WHERE phase = 'streaming'")" "running" "the killed item is not done"
"$VBENCH" resume --out "$db" --quiet 2>"$SCRATCH/run2.txt"
rc=$?
ok $rc "resume completes the campaign"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/run2.txt" | tail -20
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every item done after the resume"
is "$(q "$db" "SELECT COUNT(*), COUNT(DISTINCT stage_index), MIN(attempt) = MAX(attempt), MAX(attempt) > 1 FROM v_streaming" | tr '|' ' ')" \
   "6 6 1 1" "v_streaming: every stage exactly once, all of the last attempt (the item ran again from its build)"
is "$(q "$db" "SELECT COUNT(*) FROM streaming_result WHERE attempt < (SELECT MAX(attempt) FROM streaming_result)")" "$before" \
   "the first attempt's $before windows stay in the table, apart"
is "$(q "$db" "SELECT rows_inserted_total, rows_visible FROM v_streaming WHERE at_rest = 1" | tr '|' ' ')" "2000 4000" \
   "the resumed stream inserted every row once more into a fresh index of 2000"
# The mixed phase (issue 38): searches while one writer updates, deletes and inserts rows, rows chosen uniform and
# zipf(1.1). Each window is scored against the exact top-k over the rows as the write log acknowledged them before
# the window: exact scores 1 in every window, with no ghost (a deleted row returned) and no stale answer.
mixed_profile() { # mixed_profile NAME ENGINES-YAML MIXED-SECTION
    cat <<YML
name: $1
datasets:
  - {name: synth, source: synthetic, rows: 3000, queries: 100, dim: 16, clusters: 8, metric: euclidean, seed: 3}
engines:
$2
phases:
  build:
  mixed: $3
YML
}
db="$SCRATCH/mixed.sqlite"
mixed_profile mixed "  - name: exact
  - name: hnswlib" "{ops: {search: 0.8, update: 0.1, delete: 0.05, insert: 0.05}, ids: [uniform, zipf(1.1)], window_s: 0.5, windows: 2, clients: 2}" >"$SCRATCH/mixed.yml"
"$VBENCH" run --profile "$SCRATCH/mixed.yml" --out "$db" >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt"
rc=$?
ok $rc "mixed: vbench run exits 0"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/err.txt" | tail -20
is "$(q "$db" "SELECT engine || ' ' || ids || ':' || group_concat(phase, ',') FROM v_mixed GROUP BY engine, ids ORDER BY engine, ids" | tr '\n' ' ')" \
   "exact uniform:write,write,rest,maintained exact zipf(1.1):write,write,rest,maintained hnswlib uniform:write,write,rest,maintained hnswlib zipf(1.1):write,write,rest,maintained " \
   "mixed: two windows while writing, one at rest, one after maintenance, per engine and choice of rows"
is "$(q "$db" "SELECT COUNT(*) FROM v_mixed WHERE engine = 'exact' AND printf('%.6f', recall) = '1.000000' AND ghost_answers = 0 AND stale_answers = 0 AND answers_scored > 100")" "8" \
   "mixed, exact: recall 1, no ghost and no stale answer in every window, uniform and zipf: $(q "$db" "SELECT group_concat(ids || ' ' || printf('%.4f', recall) || '/' || ghost_answers, ' ') FROM v_mixed WHERE engine = 'exact'")"
is "$(q "$db" "SELECT COUNT(*) FROM v_mixed WHERE phase = 'write' AND writes > 100")" "8" \
   "mixed: every write window ran among writes: $(q "$db" "SELECT group_concat(writes, ' ') FROM v_mixed WHERE phase = 'write'")"
is "$(q "$db" "SELECT COUNT(DISTINCT op) FROM v_mixed_ops WHERE phase = 'write' AND done > 0 AND p99_ms > 0 AND offered > 0 AND achieved_s > 0")" "3" \
   "mixed: update, delete and insert each with its latency, offered and achieved rate"
# closed loop: the writer keeps the ratio to the searches' rate, 0.1 : 0.05 : 0.05 between the writes
is "$(q "$db" "SELECT COUNT(*) FROM (SELECT item_key, window_index, SUM(IIF(op = 'update', done, 0)) AS u, SUM(IIF(op <> 'update', done, 0)) AS o FROM v_mixed_ops WHERE phase = 'write' GROUP BY 1, 2) WHERE u BETWEEN 0.8 * o AND 1.25 * o")" "8" \
   "mixed: updates as many as deletes and inserts together, as the shares say"
is "$(q "$db" "SELECT COUNT(*) FROM v_mixed WHERE phase <> 'write' AND rows_engine = rows_live")" "8" \
   "mixed: at rest and after maintenance the engine holds the write log's rows: $(q "$db" "SELECT group_concat(engine || ' ' || rows_engine || '/' || rows_live, ', ') FROM v_mixed WHERE phase = 'rest'")"
is "$(q "$db" "SELECT COUNT(*) FROM v_mixed WHERE phase = 'write' AND fresh_probes > 0 AND fresh_never = 0")" "8" \
   "mixed: update freshness probed in every write window, every updated row found at its new position"
is "$(q "$db" "SELECT COUNT(*) FROM v_mixed WHERE engine = 'hnswlib' AND recall >= 0.95")" "8" \
   "mixed, hnswlib: recall >= 0.95 in every window: $(q "$db" "SELECT group_concat(printf('%.4f', recall), ' ') FROM v_mixed WHERE engine = 'hnswlib'")"
is "$(q "$db" "SELECT engine || ' ' || ids || ' ' || maintenance || ' ' || COALESCE(rows_checked = rows_live AND rows_vectors_checked = rows_live AND rows_differ = 0, '-') FROM v_mixed WHERE phase = 'maintained'" | tr '\n' ';')" \
   "exact uniform none 1;exact zipf(1.1) none 1;hnswlib uniform none 1;hnswlib zipf(1.1) none 1;" \
   "mixed: the maintained window names the maintenance (none: embedded engines); exact's and hnswlib's rows equal the write log's id by id and vector by vector"
is "$(q "$db" "SELECT COUNT(*) FROM v_recall_dist WHERE phase = 'mixed' AND engine = 'exact' AND recall_min = 1")" "8" \
   "mixed: the recall distribution of every window (exact: every query at 1)"
out=$("$VBENCH" show "$db")
like "$out" "Mixed (search while rows are updated" "show prints the mixed table"
like "$out" "Mixed: the write operations per window" "show prints the mixed operations"
"$VBENCH" show --json "$db" >"$SCRATCH/mixed.json"
/usr/bin/python3 - "$SCRATCH/mixed.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["mixed"]) == 16, len(d["mixed"])
for k in ("engine", "ids", "phase", "rows_live", "recall", "ghost_answers", "stale_answers", "qps", "p99_ms",
          "update_p99_ms", "fresh_p50_ms", "rows_engine", "maintenance", "rows_checked", "rows_differ"):
    assert k in d["mixed"][0], k
assert len(d["mixed_ops"]) == 48, len(d["mixed_ops"])
assert "streaming" not in d
PY
ok $? "show --json: the mixed windows and operations with their fields (and no streaming key without streaming)"
"$VBENCH" export "$db" --format csv -o "$SCRATCH/mixed-csv" >/dev/null 2>&1
is "$(tail -n +2 "$SCRATCH/mixed-csv/mixed.csv" 2>/dev/null | wc -l)" "16" "export: mixed.csv has the 16 windows"
is "$(q "$db" "SELECT COUNT(*) FROM v_validity")" "0" "mixed: no validity finding (no ghost, every engine count the log's)"
cp "$db" "$SCRATCH/mixed-ghost.sqlite"
q "$SCRATCH/mixed-ghost.sqlite" "UPDATE mixed_result SET ghost_answers = 2, ghost_example = 'query 1: id 5' WHERE window_index = 1 AND item_key LIKE '%exact%uniform'; UPDATE mixed_result SET rows_engine = rows_live + 1 WHERE phase = 'rest' AND item_key LIKE '%hnswlib%uniform'"
is "$(q "$SCRATCH/mixed-ghost.sqlite" "SELECT engine || ': ' || \"check\" || ': ' || detail FROM v_validity" | tr '\n' ';')" \
   "exact: deleted rows returned: window 1 (write): 2 answers named rows deleted before the window (first: query 1: id 5);hnswlib: rows not the write log's: window 3 (rest): the engine counts $(q "$db" "SELECT rows_live + 1 FROM v_mixed WHERE phase = 'rest' AND engine = 'hnswlib' AND ids = 'uniform'") rows, the acknowledged writes leave $(q "$db" "SELECT rows_live FROM v_mixed WHERE phase = 'rest' AND engine = 'hnswlib' AND ids = 'uniform'");" \
   "mixed: ghosts and a row count that is not the log's are validity findings (the same results with both set)"
"$VBENCH" report "$db" >/dev/null 2>"$SCRATCH/mixed-report.err"
ok $? "mixed: vbench report exits 0" || tail -5 "$SCRATCH/mixed-report.err" | sed 's/^/#   /'
html=$SCRATCH/mixed-report/report.html
like "$(cat "$html" 2>/dev/null)" '<section id="mixed"><h2>Mixed (search while rows are updated, deleted and inserted)' \
     "the report has a mixed section"
/usr/bin/python3 - "$html" <<'PY'
import sys
t = open(sys.argv[1]).read()
i = t.index('<section id="mixed">')
sec = t[i:t.index("</section>", i)]
assert "ghost_answers" in sec and "zipf(1.1)" in sec and "maintained" in sec and "update" in sec, "mixed section content"
PY
ok $? "the report's mixed section has the windows (ghosts, zipf, the maintained window) and the operations"
missing=
for c in mixed-recall mixed-ghosts mixed-qps mixed-p99 mixed-ops; do
    [ -s "$SCRATCH/mixed-report/charts/$c.png" ] && [ -s "$SCRATCH/mixed-report/charts/$c.svg" ] || missing="$missing $c(file)"
    /usr/bin/python3 -c 'import sys; t = open(sys.argv[1]).read(); i = t.index("<section id=\"mixed\">"); sys.exit(("<figure id=\"chart-%s\"><img alt=" % sys.argv[2]) not in t[i:t.index("</section>", i)])' "$html" "$c" || missing="$missing $c(figure)"
done
is "${missing:-none}" "none" "the report's mixed section draws recall, ghosts, QPS and p99 per window and the writes' latency per operation (gnuplot, PNG and SVG)"
over=$(vb_report_overflow "$html"); rc=$?
ok $rc "the mixed report is measured in headless Chromium"
is_empty "$(printf '%s\n' "$over" | grep '^mixed')" "the mixed section's tables fit their page at 1,400 pixels"
vb_report_section_shot "$html" mixed "$SCRATCH/mixed.png"

# An open loop at 3000 operations/s: searches at 2400/s, writes at 600/s, offered = achieved.
db="$SCRATCH/mixed-open.sqlite"
mixed_profile mixedopen "  - name: exact" "{ops: {search: 0.8, update: 0.1, delete: 0.05, insert: 0.05}, ids: zipf(1.1), rate: 3000, window_s: 0.5, windows: 2, clients: 2}" >"$SCRATCH/mixed-open.yml"
"$VBENCH" run --profile "$SCRATCH/mixed-open.yml" --out "$db" >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt"
rc=$?
ok $rc "mixed, open loop: vbench run exits 0"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/err.txt" | tail -20
is "$(q "$db" "SELECT COUNT(*) FROM v_mixed WHERE printf('%.6f', recall) = '1.000000' AND ghost_answers = 0 AND rate = 3000")" "4" \
   "mixed, open loop, exact: recall 1 and no ghost in every window"
is "$(q "$db" "SELECT COUNT(*) FROM v_mixed WHERE phase = 'write' AND qps BETWEEN 2000 AND 2800")" "2" \
   "mixed, open loop: searches at about 2400/s: $(q "$db" "SELECT group_concat(printf('%.0f', qps), ' ') FROM v_mixed WHERE phase = 'write'")"
is "$(q "$db" "SELECT COUNT(*) FROM v_mixed_ops WHERE phase = 'write' AND ABS(done - offered) <= 0.1 * offered + 5")" "6" \
   "mixed, open loop: each operation achieved its offered count: $(q "$db" "SELECT group_concat(op || ' ' || done || '/' || offered, ', ') FROM v_mixed_ops WHERE phase = 'write'")"

# The item's limit: 50 windows of 0.5 s cannot end within limit_s 1; the writes stop at the limit, the windows
# measured before it stay, and the item is expired with a message that says how far it got.
db="$SCRATCH/mixed-limit.sqlite"
mixed_profile mixedlimit "  - name: exact" "{ops: {search: 0.8, update: 0.2}, window_s: 0.5, windows: 50, clients: 1, limit_s: 1}" >"$SCRATCH/mixed-limit.yml"
"$VBENCH" run --profile "$SCRATCH/mixed-limit.yml" --out "$db" >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt"
is "$?" "1" "mixed, limit: vbench run exits 1 (an item stopped at its limit)"
like "$(q "$db" "SELECT status || ': ' || error FROM plan WHERE phase = 'mixed'")" \
     "expired: mixed stopped at its limit of 1 s after " "mixed, limit: the item is expired, its message says how far it got"
is "$(q "$db" "SELECT COUNT(*) > 0, SUM(phase <> 'write') FROM v_mixed" | tr '|' ' ')" "1 0" \
   "mixed, limit: the write windows measured before the limit are kept ($(q "$db" "SELECT COUNT(*) FROM v_mixed"))"

# The row check cannot pass vacuously: the agent's fault VBENCH_MIXED_FAULT=skip-write:5 logs the fifth write as
# acknowledged but never sends it; the checks of the window at rest and of the maintained one find exactly that row
# and name it.
db="$SCRATCH/mixed-skip.sqlite"
mixed_profile mixedskip "  - name: exact" "{ops: {search: 0.8, update: 0.2}, window_s: 0.3, windows: 1, clients: 1}" >"$SCRATCH/mixed-skip.yml"
VBENCH_MIXED_FAULT=skip-write:5 "$VBENCH" run --profile "$SCRATCH/mixed-skip.yml" --out "$db" >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt"
ok $? "mixed, one update logged but not applied: vbench run exits 0 (a finding, not a failure)" || tail -5 "$SCRATCH/err.txt" | sed 's/^/#   /'
is "$(q "$db" "SELECT rows_differ || ' ' || (rows_checked = rows_live) FROM v_mixed WHERE phase = 'maintained'")" "1 1" \
   "mixed, a skipped update: exactly one of the engine's rows differs from the write log's"
is "$(q "$db" "SELECT engine || ': ' || \"check\" || ': ' || detail FROM v_validity" | sed -e 's/ of [0-9]* ids/ of R ids/' -e 's/(id [0-9]*:/(id N:/')" \
   "exact: rows not the write log's: window 2 (rest): 1 of R ids differ from the write log's final state (id N: the vector before its last update (the update not applied))
exact: rows not the write log's: window 3 (maintained): 1 of R ids differ from the write log's final state (id N: the vector before its last update (the update not applied))" \
   "mixed, a skipped update: a validity finding naming the row and why: $(q "$db" "SELECT detail FROM v_validity")"

# SIGKILL of the coordinator and its agent in the middle of the mixed phase, then resume: the item runs again from
# its build; the engine's rows at rest equal the write log's, every window once, of the last attempt (the operations
# an open loop at 400/s: the kill needs the windows' time, not the clients' throughput).
db="$SCRATCH/mixed-kill.sqlite"
mixed_profile mixedkill "  - name: exact
  - name: hnswlib" "{ops: {search: 0.8, update: 0.1, delete: 0.05, insert: 0.05}, ids: zipf(1.1), window_s: 0.5, windows: 4, clients: 2, rate: 400}" >"$SCRATCH/mixed-kill.yml"
"$VBENCH" run --profile "$SCRATCH/mixed-kill.yml" --out "$db" --quiet 2>"$SCRATCH/run1.txt" &
pid=$!
wait_sql "$db" "SELECT COUNT(*) FROM mixed_result" 2 120
ok $? "mixed: the first run committed two windows"
children=$(pgrep -P "$pid" | tr '\n' ' ')
kill -9 "$pid" $children
wait "$pid" 2>/dev/null
before=$(q "$db" "SELECT COUNT(*) FROM mixed_result")
is "$(q "$db" "SELECT group_concat(status, ' ') FROM plan WHERE phase = 'mixed' ORDER BY seq")" "running pending" "mixed: the killed item (exact's) is not done, hnswlib's not started"
"$VBENCH" resume --out "$db" --quiet 2>"$SCRATCH/run2.txt"
rc=$?
ok $rc "mixed: resume completes the campaign"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/run2.txt" | tail -20
is "$(q "$db" "SELECT engine || ':' || COUNT(*) || ' ' || COUNT(DISTINCT window_index) || ' ' || (MIN(attempt) = MAX(attempt)) FROM v_mixed GROUP BY engine ORDER BY engine" | tr '\n' ' ')" \
   "exact:6 6 1 hnswlib:6 6 1 " "mixed: v_mixed has every window once per engine, all of one attempt"
is "$(q "$db" "SELECT MAX(attempt) > 1 FROM v_mixed WHERE engine = 'exact'")" "1" "mixed: the killed item ran again from its build"
is "$(q "$db" "SELECT COUNT(*) FROM mixed_result WHERE attempt < (SELECT MAX(attempt) FROM mixed_result AS x WHERE x.item_key = mixed_result.item_key)")" "$before" \
   "mixed: the first attempt's $before windows stay in the table, apart"
is "$(q "$db" "SELECT rows_checked || ' ' || rows_vectors_checked || ' ' || rows_differ || ' ' || COALESCE(rows_diff_example, '-') FROM v_mixed WHERE engine = 'exact' AND phase = 'maintained'")" \
   "$(q "$db" "SELECT rows_live || ' ' || rows_live || ' 0 -' FROM v_mixed WHERE engine = 'exact' AND phase = 'maintained'")" \
   "mixed, exact after the resume: the engine's rows are the write log's, id by id and vector by vector (nothing applied twice or missed)"
is "$(q "$db" "SELECT COUNT(*) FROM v_mixed WHERE phase <> 'write' AND rows_engine = rows_live")" "4" \
   "mixed: after the resume the engine's rows equal the write log's: $(q "$db" "SELECT group_concat(rows_engine || '/' || rows_live, ' ') FROM v_mixed WHERE phase <> 'write'")"
done_testing
