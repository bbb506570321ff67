#!/bin/sh
# The report's timing on a campaign of 10,000 results (issue 15: under 10 s): a real small campaign (hnswlib on
# 2,000 synthetic vectors), then 40 engines x (100 sweep points + 100 concurrency windows + 50 filtered points) =
# 10,000 result rows added to its database by SQL, then `vbench report` timed. A benchmark, not a test: it prints
# the time and the verdict.  usage: sh bench/bench_report.sh [BIN]
# env: BENCH_REPORT_ENGINES (default 40: 250 results each; fewer for a smoke run, e.g. tests/e2e/07-bench-smoke.t's 2;
#      the 10 s verdict is for the default's 10,000 results)
set -eu
BIN=${1:-bin}
ENGINES=${BENCH_REPORT_ENGINES:-40}
case $ENGINES in ''|*[!0-9]*|0) echo "bench-report: BENCH_REPORT_ENGINES must be a whole number from 1, not '$ENGINES'" >&2; exit 2 ;; esac
dir=$(mktemp -d /tmp/vbench-bench-report.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/p.yml" <<'YML'
name: bench-report
k: 10
datasets:
  - {name: synth-angular-2k, source: synthetic, rows: 2000, queries: 100, dim: 32, clusters: 16, metric: angular, seed: 1}
engines:
  - {name: hnswlib, m: 8, ef_construction: 64}
phases:
  build:
  recall_sweep: {ef_search: [10, 40]}
YML
VBENCH_CACHE="$dir/cache" "$BIN/vbench" run --profile "$dir/p.yml" --out "$dir/r.sqlite" --quiet
sqlite3 "$dir/r.sqlite" <<SQL
CREATE TEMP TABLE pts AS
WITH RECURSIVE e(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM e WHERE i < $ENGINES),
     n(j) AS (SELECT 1 UNION ALL SELECT j + 1 FROM n WHERE j < 100)
SELECT printf('eng%02d', i) AS engine, j, ph, printf('b/eng%02d/%s/%d', i, ph, j) AS key,
       100000 + i * 1000 + (ph = 'w') * 200 + (ph = 'f') * 400 + j AS seq
FROM e, n, (SELECT 's' AS ph UNION ALL SELECT 'w' UNION ALL SELECT 'f') WHERE ph <> 'f' OR j <= 50;
INSERT INTO plan (key, seq, phase, engine, dataset, status)
SELECT key, seq, CASE ph WHEN 's' THEN 'recall_sweep' WHEN 'w' THEN 'concurrency' ELSE 'filtered' END, engine,
       'synth-angular-2k', 'done' FROM pts;
INSERT INTO sweep_result (result_key, item_key, engine, dataset, ef_search, clients, queries, recall, id_overlap,
    short_answers, errors, elapsed_s, qps, p50_ms, p95_ms, p99_ms, recorded_at)
SELECT key, key, engine, 'synth-angular-2k', 10 * j, 1, 1000, 1 - 0.5 / (1 + j), 1 - 0.5 / (1 + j), 0, 0, 1,
       100000.0 / j, 0.01 * j, 0.02 * j, 0.03 * j, 'x' FROM pts WHERE ph = 's';
INSERT INTO window_result (result_key, item_key, engine, dataset, clients, repeat, ef_search, window_s, queries, errors,
    qps, p50_ms, p99_ms, in_call_s, in_flight, recorded_at)
SELECT key, key, engine, 'synth-angular-2k', 1 << ((j - 1) / 10), 1 + (j - 1) % 10, 100, 1, 1000, 0,
       1000.0 * (1 << ((j - 1) / 10)) * (0.9 + 0.02 * ((j - 1) % 10)), 0.5, 1.5, 0.9, 1 << ((j - 1) / 10), 'x'
FROM pts WHERE ph = 'w';
INSERT INTO filtered_result (result_key, item_key, engine, dataset, selectivity, passing_rows, ef_search, queries,
    recall, id_overlap, short_answers, errors, elapsed_s, qps, p99_ms, recorded_at)
SELECT key, key, engine, 'synth-angular-2k', j / 100.0, 20 * j, 100, 100, 0.9, 0.9, 0, 0, 1, 1000.0 * j, 2, 'x'
FROM pts WHERE ph = 'f';
SQL
n=$(sqlite3 "$dir/r.sqlite" "SELECT (SELECT COUNT(*) FROM sweep_result) + (SELECT COUNT(*) FROM window_result) + (SELECT COUNT(*) FROM filtered_result) + (SELECT COUNT(*) FROM build_result)")
start=$(date +%s.%N)
"$BIN/vbench" report "$dir/r.sqlite" -o "$dir/report" --quiet
end=$(date +%s.%N)
secs=$(echo "$end - $start" | bc)
charts=$(ls "$dir"/report/charts/*.png | wc -l)
size=$(stat -c %s "$dir/report/report.html")
verdict=$(echo "$secs < 10" | bc)
printf 'bench-report: %s results, %s charts, report.html %s bytes, rendered in %.2f s: %s\n' "$n" "$charts" "$size" \
    "$secs" "$([ "$verdict" = 1 ] && echo 'under 10 s' || echo 'OVER 10 s')"
