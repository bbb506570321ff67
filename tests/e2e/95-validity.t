#!/usr/bin/env bash
# Validity findings computed from the data (issue 14), each planted with a test engine: the sleep engine with
# alternating service times (1 ms, 100 ms per connection: engines/testing.c alternate_us) makes the sweep's QPS
# rise and its p99 jump between neighbouring ef_search points, and gives a 2-client window a heavy tail (one
# client fast, one slow: QPS x p50 far below in flight). A recall that falls with ef_search is planted in the
# results file itself. A well-behaved engine (sleep without alternation) has none of these findings.
. "$(dirname "$0")/../lib/lib.sh"
db="$SCRATCH/val.sqlite"
profile() { # profile SERVICE_US ALTERNATE_US [QUERIES]
    cat <<YML
name: val
k: 10
datasets:
  - {name: s, source: synthetic, rows: 1000, queries: ${3:-60}, dim: 8, clusters: 4, metric: euclidean, seed: 2}
engines:
  - name: sleep
    service_us: $1
    alternate_us: $2
phases:
  build:
  recall_sweep: {ef_search: [10, 20, 40]}
  concurrency: {clients: [2], window_s: 2, warmup_s: 0, repeats: 1, ef_search: 10}
YML
}
profile 1000 100000 >"$SCRATCH/val.yml"   # 100x: a loaded machine cannot hide the cliff
"$VBENCH" run --profile "$SCRATCH/val.yml" --out "$db" --quiet 2>"$SCRATCH/run.txt"
rc=$?
ok $rc "the planted campaign runs"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/run.txt" | tail -20
check() { q "$db" "SELECT COUNT(*) FROM v_validity WHERE \"check\" = '$1'"; }
[ "$(check 'QPS rises with ef_search')" -ge 1 ]; ok $? "QPS rising with ef_search is flagged"
[ "$(check 'latency cliff')" -ge 1 ]; ok $? "a p99 more than 5x the previous point's is flagged"
is "$(check 'heavy latency tail')" "1" "the 2-client window's heavy tail is flagged (QPS x p50 vs in flight)"
like "$(q "$db" "SELECT detail FROM v_validity WHERE \"check\" = 'heavy latency tail'")" "in flight" \
     "the finding gives both figures"
is "$(check 'recall falls with ef_search')" "0" "no falling recall before one is planted"
q "$db" "UPDATE sweep_result SET recall = CASE ef_search WHEN 10 THEN 0.90 WHEN 20 THEN 0.95 ELSE 0.80 END"
is "$(check 'recall falls with ef_search')" "1" "recall falling from ef_search 20 to 40 is flagged"
"$VBENCH" show "$db" >"$SCRATCH/show.txt"
grep -q "QPS rises with ef_search" "$SCRATCH/show.txt"; ok $? "show lists the findings in its validity section"

db="$SCRATCH/calm.sqlite"
# 10 ms a query: the first sweep point's cold start (a few hundred microseconds a query, seen at 1 ms) stays
# well inside the 20 % a rise must exceed. 200 queries a point, so that p99 is not the single slowest query: on a
# loaded machine one late wake-up (tens of ms) would otherwise read as a latency cliff.
profile 10000 0 200 >"$SCRATCH/calm.yml"
"$VBENCH" run --profile "$SCRATCH/calm.yml" --out "$db" --quiet 2>"$SCRATCH/run2.txt"
ok $? "the calm campaign runs"
is "$(q "$db" "SELECT COUNT(*) FROM v_validity WHERE \"check\" IN ('QPS rises with ef_search', 'latency cliff', 'recall falls with ef_search', 'heavy latency tail')")" \
   "0" "a constant service time plants nothing"
[ $T_FAILED -eq 0 ] || q "$db" "SELECT \"check\", detail FROM v_validity" | sed "s/^/#   /"
done_testing
