#!/usr/bin/env bash
# The runtime estimate (issue 16): printed before the start per engine and in total, recorded in the manifest,
# compared with the truth at the end (an event and a status line); the measured rates go into the history under
# the cache ($VBENCH_CACHE/history.sqlite) and the next estimate uses them; `status` shows elapsed time, the ETA
# and the time since the last result while the campaign runs, and `status --watch` ends with the campaign.
. "$(dirname "$0")/lib.sh"
need sqlite3

cat >"$SCRATCH/est.yml" <<'YML'
name: est
datasets:
  - name: synth-est
    source: synthetic
    rows: 3000
    queries: 100
    dim: 16
    metric: euclidean
engines:
  - name: hnswlib
    m: 8
    ef_construction: 32
  - name: exact
phases:
  build: {}
  recall_sweep: {ef_search: [10, 40]}
  concurrency: {clients: [1, 2], window_s: 1, repeats: 1, warmup_s: 0.2, ef_search: 20}
YML
DB="$SCRATCH/est.sqlite"
"$VBENCH" run --profile "$SCRATCH/est.yml" --out "$DB" >"$SCRATCH/run.out" 2>"$SCRATCH/run.err" &
pid=$!
for _ in $(seq 1 100); do
    [ "$(q "$DB" "SELECT count(*) FROM plan WHERE status = 'done'" 2>/dev/null)" -ge 3 ] 2>/dev/null && break
    sleep 0.2
done
st=$("$VBENCH" status "$DB" 2>&1)
like "$st" "time: elapsed ~" "status while running: elapsed time"
like "$st" "last result ~" "status while running: time since the last result"
like "$st" "ETA: ~" "status while running: the ETA"
watch=$(timeout 120 "$VBENCH" status --watch 1 "$DB" 2>&1); rc=$?
is "$rc" 0 "status --watch ends (exit 0) when the campaign ends"
wait $pid
is "$?" 0 "the campaign finished"
err=$(cat "$SCRATCH/run.err")
like "$err" "estimate: hnswlib ~" "the estimate per engine is printed before the start"
like "$err" "| total ~" "... and the total"
like "$(q "$DB" "SELECT message FROM event WHERE message LIKE 'estimate vs actual:%'")" "estimate vs actual: estimated ~" \
    "an event compares the estimate with the truth"
ratio=$(q "$DB" "SELECT value FROM manifest WHERE key = 'estimate.ratio'")
[ -n "$ratio" ]; ok $? "the manifest has estimate.ratio ($ratio)"
[ -n "$(q "$DB" "SELECT value FROM manifest WHERE key = 'estimate.engine.hnswlib_s'")" ]; ok $? "... and the engine's estimate"
like "$watch" "estimate: ~" "the last status of --watch compares the estimate with the truth"
like "$("$VBENCH" status "$DB")" "actual / estimate" "status after the end shows estimate against actual"
n=$(q "$SCRATCH/cache/history.sqlite" "SELECT count(*) FROM measured WHERE campaign = 'est' AND dim = 16")
is "$n" 2 "the history holds the measured rates of both engines"
load=$(q "$SCRATCH/cache/history.sqlite" "SELECT load_rows_s > 0 FROM measured WHERE engine = 'hnswlib'")
is "$load" 1 "... with a load rate"
chk=$("$VBENCH" run --profile "$SCRATCH/est.yml" --out "$SCRATCH/again.sqlite" --check 2>&1)
like "$chk" "hnswlib: measured here" "the next estimate uses the measured rates"
done_testing
