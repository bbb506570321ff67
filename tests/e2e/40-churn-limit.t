#!/usr/bin/env bash
# Churn under a wall-clock limit: a reinsert that cannot finish in its limit records the rows done and the rate,
# ends within limit + 2 s, and `vbench resume` continues it from the checkpoint until it completes, every row
# counted once.
. "$(dirname "$0")/lib.sh"
db="$SCRATCH/churn.sqlite"
cat >"$SCRATCH/churn.yml" <<'YML'
name: churn-limit
datasets:
  - name: synth-euc-20k
    source: synthetic
    rows: 20000
    queries: 300
    dim: 64
    clusters: 32
    metric: euclidean
    seed: 3
engines:
  - name: hnswlib
    m: 16
    ef_construction: 100
phases:
  build: {}
  churn:
    fraction: 0.25
    limit_s: 1
    queries: 300
YML

"$VBENCH" run --profile "$SCRATCH/churn.yml" --out "$db" --quiet 2>"$SCRATCH/run.txt"
rc=$?
is "$rc" "1" "a campaign with an expired limit exits 1"
is "$(q "$db" "SELECT status FROM plan WHERE phase = 'churn'")" "expired" "the churn item is marked expired"
is "$(q "$db" "SELECT status FROM campaign")" "incomplete" "the campaign is incomplete, not failed"
row=$(q "$db" "SELECT rows_done || ' ' || rows_planned || ' ' || completed FROM churn_result WHERE stage = 'reinsert'")
set -- $row
[ "$1" -gt 0 ] && [ "$1" -lt "$2" ] && [ "$3" = "0" ]
ok $? "partial rows recorded: $1 of $2, not completed"
secs=$(q "$db" "SELECT seconds FROM churn_result WHERE stage = 'reinsert'")
/usr/bin/python3 -c "import sys; sys.exit(0 if 1.0 <= float('$secs') <= 3.0 else 1)"
ok $? "the reinsert ended within limit + 2 s (${secs}s for a 1 s limit)"
rate=$(q "$db" "SELECT rows_per_s FROM churn_result WHERE stage = 'reinsert'")
/usr/bin/python3 -c "import sys; sys.exit(0 if float('$rate') > 0 else 1)"
ok $? "the rate is recorded ($rate rows/s)"

# Resume until it completes: each attempt gets another second, and each must move the checkpoint forward
# (the number of attempts depends on the machine's speed, the progress does not).
stalled=0
for attempt in $(seq 1 100); do
    before=$(q "$db" "SELECT COALESCE(MAX(rows_done), 0) FROM churn_result WHERE stage = 'reinsert'")
    "$VBENCH" resume --out "$db" --quiet 2>>"$SCRATCH/run.txt" && break
    after=$(q "$db" "SELECT COALESCE(MAX(rows_done), 0) FROM churn_result WHERE stage = 'reinsert'")
    [ "$after" -gt "$before" ] || stalled=1
done
[ $stalled -eq 0 ]; ok $? "every resume moved the reinsert forward"
is "$(q "$db" "SELECT status FROM campaign")" "finished" "resumes complete the campaign"
is "$(q "$db" "SELECT rows_done || ' ' || rows_planned || ' ' || completed FROM v_churn")" "5000 5000 1" "every planned row made it"
attempts=$(q "$db" "SELECT COUNT(*) FROM churn_result WHERE stage = 'reinsert'")
[ "$attempts" -ge 2 ]; ok $? "the reinsert took $attempts attempts"
# Rows are never counted twice: each attempt starts where the committed one ended, so the per-attempt counts
# (rows_done minus the previous attempt's) add up to exactly the planned rows.
is "$(q "$db" "SELECT SUM(d) FROM (SELECT rows_done - COALESCE(LAG(rows_done) OVER (ORDER BY rowid), 0) AS d FROM churn_result WHERE stage = 'reinsert')")" \
   "5000" "per-attempt row counts add up to the planned rows"
is "$(q "$db" "SELECT COUNT(*) FROM churn_result WHERE stage IN ('before', 'delete', 'maintain', 'after')")" "4" "before, delete, maintain and after recorded once each"
is "$(q "$db" "SELECT COUNT(*) FROM event WHERE message LIKE '%continuing the reinsert from row%'")" "$((attempts - 1))" "each resume continued from the checkpoint"
rec=$(q "$db" "SELECT recall_after FROM v_churn")
/usr/bin/python3 -c "import sys; sys.exit(0 if float('$rec') > 0.9 else 1)"
ok $? "recall after the churn is high ($rec): the rows are really back"
is "$(q "$db" "SELECT COUNT(*) FROM build_result")" "1" "the corpus was loaded once (no reload on resume)"
out=$("$VBENCH" show "$db")
like "$out" "Churn" "vbench show prints the churn table"
done_testing
