#!/usr/bin/env bash
# Churn under a wall-clock limit: a reinsert that cannot finish in its limit records the rows done and the rate,
# ends within limit + 2 s, and `vbench resume` continues it from the checkpoint until it completes, every row
# counted once.
. "$(dirname "$0")/../lib/lib.sh"
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

# A crash in the middle of the reinsert: SIGKILL the coordinator after the first checkpoint, resume, and the
# reinsert continues from that checkpoint; every row is still counted once.
db2="$SCRATCH/crash.sqlite"
sed -e 's/limit_s: 1$/limit_s: 600/' "$SCRATCH/churn.yml" >"$SCRATCH/crash.yml"
"$VBENCH" run --profile "$SCRATCH/crash.yml" --out "$db2" --quiet 2>"$SCRATCH/crash.txt" &
pid=$!
for _ in $(seq 1 600); do
    n=$(q "$db2" "SELECT COUNT(*) FROM churn_result WHERE stage = 'checkpoint'" 2>/dev/null || echo 0)
    [ "${n:-0}" -ge 1 ] && break
    sleep 0.1
done
kill -9 $pid; wait $pid 2>/dev/null
ckpt=$(q "$db2" "SELECT MAX(rows_done) FROM churn_result WHERE stage = 'checkpoint'")
[ -n "$ckpt" ] && [ "$ckpt" -gt 0 ] && [ "$ckpt" -lt 5000 ]
ok $? "killed during the reinsert, after a checkpoint of $ckpt rows"
sleep 1   # the agent follows its coordinator (parent-death signal)
"$VBENCH" resume --out "$db2" --quiet 2>>"$SCRATCH/crash.txt"
ok $? "resume after the crash completes"
is "$(q "$db2" "SELECT rows_done || ' ' || completed FROM v_churn")" "5000 1" "every planned row made it after the crash"
first=$(q "$db2" "SELECT MIN(rows_done) FROM churn_result WHERE stage = 'reinsert'")
[ "$first" = "5000" ]; ok $? "the only reinsert row is the completed one (the killed attempt never reported a total)"
like "$(q "$db2" "SELECT group_concat(message, ' | ') FROM event")" "continuing the reinsert from row $ckpt of 5000" \
     "the resumed attempt continued from the committed checkpoint"
is "$(q "$db2" "SELECT COUNT(*) FROM build_result")" "1" "no reload of the corpus after the crash"
# The overall rate counts each attempt's rows over that attempt's seconds: the killed attempt up to its last
# checkpoint, the resumed one from that checkpoint to the end.
is "$(q "$db2" "SELECT printf('%.3f', rows_per_s) FROM v_churn")" \
   "$(q "$db2" "SELECT printf('%.3f', 5000.0 / ((SELECT MAX(seconds) FROM churn_result WHERE stage = 'checkpoint' AND rows_from = 0) + (SELECT seconds FROM churn_result WHERE stage = 'reinsert')))")" \
   "the overall rate is all rows over the time of the attempts that inserted them"
done_testing
