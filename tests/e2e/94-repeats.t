#!/usr/bin/env bash
# Repeats (issue 14): `repeats: 3` on the recall sweep and 2 on the filtered phase give one row per point in
# `show` and `show --json`, with the median QPS (and percentiles) of the repeats and their min-max; the
# per-repeat rows stay in the database, and the medians are checked against them here. Then the sleep engine with
# alternating service times (2 ms, 20 ms: engines/testing.c alternate_us): every point's three repeats fall
# two on one side, one on the other, and the median is the majority's. Then 5 repeats on the sweep and the
# churn, 3 on concurrency (sleep engine): the bootstrap 95 % interval of the median QPS is there from 5 repeats
# (within the range, around the median) and absent below; the concurrency rows are the medians of their windows
# (kept: show --windows); churn measures before and after 5 times each around one reinsert.
. "$(dirname "$0")/../lib/lib.sh"
need python3
db="$SCRATCH/rep.sqlite"
vb_profile "$SCRATCH/rep.yml" rep "rows: 3000, queries: 50, dim: 16, clusters: 8, metric: euclidean, seed: 2" <<'YML'
engines:
  - name: hnswlib
    m: [8, 16]
phases:
  build:
  recall_sweep: {ef_search: [10, 40], repeats: 3}
  filtered: {selectivity: [0.1], queries: 20, repeats: 5}
YML
"$VBENCH" run --profile "$SCRATCH/rep.yml" --out "$db" --quiet 2>"$SCRATCH/run.txt"
rc=$?
ok $rc "the campaign runs"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/run.txt" | tail -20
is "$(q "$db" "SELECT COUNT(*) FROM sweep_result") $(q "$db" "SELECT COUNT(*) FROM filtered_result")" "12 10" \
   "every repeat has its row in the database"
is "$(q "$db" "SELECT key FROM plan WHERE phase = 'recall_sweep' ORDER BY seq LIMIT 1")" \
   "rep/hnswlib[m=8]/s/recall_sweep/ef_search=10,repeat=1" "a repeat's key names it"
"$VBENCH" show --json "$db" >"$SCRATCH/show.json"
ok $? "show --json exits 0"
q "$db" -json "SELECT config, ef_search, qps, p50_ms, p99_ms FROM sweep_result" >"$SCRATCH/raw.json"
q "$db" -json "SELECT config, selectivity, qps FROM filtered_result" >"$SCRATCH/rawf.json"
python3 - "$SCRATCH/show.json" "$SCRATCH/raw.json" "$SCRATCH/rawf.json" <<'PY'
import json, statistics, sys
show = json.load(open(sys.argv[1]))
raw, rawf = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
def close(a, b): return abs(a - b) <= 1e-9 * max(1.0, abs(b))
rows = show["recall_sweep"]
assert len(rows) == 4, rows
for r in rows:
    reps = [x for x in raw if x["config"] == r["engine"] and x["ef_search"] == r["ef_search"]]
    assert len(reps) == 3 and r["repeats"] == 3, (r, reps)
    for k in ("qps", "p50_ms", "p99_ms"):
        assert close(r[k], statistics.median(x[k] for x in reps)), (k, r, reps)
    assert close(r["qps_min"], min(x["qps"] for x in reps)) and close(r["qps_max"], max(x["qps"] for x in reps)), r
rows = show["filtered"]
assert len(rows) == 2, rows
for r in rows:
    reps = [x["qps"] for x in rawf if x["config"] == r["engine"]]
    assert len(reps) == 5 and r["repeats"] == 5
    assert close(r["qps"], statistics.median(reps)), (r, reps)
    assert close(r["qps_min"], min(reps)) and close(r["qps_max"], max(reps)), r
    # 5 repeats: an interval, within the range and around the median
    assert r["qps_ci_lo"] is not None and r["qps_ci_hi"] is not None, r
    assert r["qps_min"] <= r["qps_ci_lo"] <= r["qps"] <= r["qps_ci_hi"] <= r["qps_max"], r
for r in show["recall_sweep"]:   # 3 repeats: no interval
    assert r["qps_ci_lo"] is None and r["qps_ci_hi"] is None, r
for t in show["recall_targets"]:
    meds = [r["qps"] for r in show["recall_sweep"] if r["engine"] == t["engine"] and r["recall"] >= 0.90]
    assert (t["qps_at_0_90"] is None and not meds) or close(t["qps_at_0_90"], max(meds)), (t, meds)
PY
ok $? "show --json: medians, ranges and the best QPS at recall >= 0.90 agree with the per-repeat rows; an interval at 5 repeats, none at 3"
# The recall distribution of a repeated point (issue 35): each repeat's own in v_recall_dist; the point's row (the
# sweep's and the filtered's) has the lowest minimum of its repeats and the mean of their p10 and zero shares.
is "$(q "$db" "SELECT COUNT(*) FROM v_recall_dist WHERE phase = 'recall_sweep'") $(q "$db" "SELECT COUNT(*) FROM v_recall_dist WHERE phase = 'filtered'")" \
   "12 10" "v_recall_dist: one row per repeat"
is "$(q "$db" "SELECT COUNT(*) FROM v_recall_sweep AS v WHERE v.recall_min = (SELECT MIN(d.recall_min) FROM v_recall_dist AS d
               WHERE d.engine = v.engine AND d.phase = 'recall_sweep' AND d.point = printf('ef_search %d, 1 client', v.ef_search))
               AND abs(v.recall_p10 - (SELECT AVG(d.recall_p10) FROM v_recall_dist AS d WHERE d.engine = v.engine
               AND d.phase = 'recall_sweep' AND d.point = printf('ef_search %d, 1 client', v.ef_search))) < 1e-9
               AND abs(v.zero_share - (SELECT AVG(d.zero_share) FROM v_recall_dist AS d WHERE d.engine = v.engine
               AND d.phase = 'recall_sweep' AND d.point = printf('ef_search %d, 1 client', v.ef_search))) < 1e-9")" "4" \
   "v_recall_sweep: a repeated point's minimum is its repeats' lowest, its p10 and zero share their mean"
is "$(q "$db" "SELECT COUNT(*) FROM v_filtered WHERE recall_p50 IS NOT NULL AND recall_min <= recall_p1
               AND recall_p1 <= recall_p10 AND recall_p10 <= recall_p50")" "2" \
   "v_filtered: the distribution of each repeated point, in order"
"$VBENCH" show --wide "$db" >"$SCRATCH/show.txt"
grep -q "repeats  qps_min  qps_max  qps_ci_lo  qps_ci_hi" "$SCRATCH/show.txt"
ok $? "show prints the repeats, the range and the interval"
db2="$SCRATCH/alt.sqlite"
vb_profile "$SCRATCH/alt.yml" alt "rows: 1000, queries: 60, dim: 8, clusters: 4, metric: euclidean, seed: 2" <<'YML'
engines:
  - name: sleep
    service_us: 2000
    alternate_us: 20000
phases:
  build:
  recall_sweep: {ef_search: [10, 20, 40], repeats: 3}
YML
"$VBENCH" run --profile "$SCRATCH/alt.yml" --out "$db2" --quiet 2>"$SCRATCH/run2.txt"
ok $? "the alternating campaign runs"
"$VBENCH" show --json "$db2" >"$SCRATCH/alt.json"
q "$db2" -json "SELECT ef_search, p50_ms, qps FROM sweep_result" >"$SCRATCH/altraw.json"
python3 - "$SCRATCH/alt.json" "$SCRATCH/altraw.json" <<'PY'
import json, sys
rows, raw = json.load(open(sys.argv[1]))["recall_sweep"], json.load(open(sys.argv[2]))
assert len(rows) == 3, rows
for r in rows:
    reps = [x for x in raw if x["ef_search"] == r["ef_search"]]
    slow = [x for x in reps if x["p50_ms"] >= 10.0]   # a 20 ms service time (sleeping never takes less); 2 ms
    # stays under 10 even on a machine so loaded that it read 6 ms
    assert len(reps) == 3 and len(slow) in (1, 2), (r, reps)
    majority_slow = len(slow) == 2
    assert (r["p50_ms"] >= 10.0) == majority_slow, ("the median is the majority's", r, reps)
    assert r["qps_max"] > 1.5 * r["qps_min"], ("the range spans both service times", r)
    mid = sorted(x["qps"] for x in reps)[1]
    assert abs(r["qps"] - mid) < 1e-9 * mid, (r, reps)
PY
ok $? "alternating service times: two repeats of one kind, the median is theirs, the range spans both"

db3="$SCRATCH/ci.sqlite"
vb_profile "$SCRATCH/ci.yml" ci "rows: 1000, queries: 40, dim: 8, clusters: 4, metric: euclidean, seed: 2" <<'YML'
engines:
  - name: sleep
    service_us: 300
phases:
  build:
  recall_sweep: {ef_search: [10], repeats: 5}
  concurrency: {clients: [1, 2], window_s: 1, warmup_s: 0, repeats: 3}
  churn: {fraction: 0.05, queries: 20, repeats: 5}
YML
"$VBENCH" run --profile "$SCRATCH/ci.yml" --out "$db3" --quiet 2>"$SCRATCH/run3.txt"
rc=$?
ok $rc "the campaign with 5 repeats runs"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/run3.txt" | tail -20
is "$(q "$db3" "SELECT key || ' ' || point FROM plan WHERE phase = 'churn'")" \
   "ci/sleep/s/churn fraction=0.05,limit_s=7200,ef_search=100,on_resume=continue,repeats=5" \
   "churn is one item; its point names the repeats"
is "$(q "$db3" "SELECT stage || ':' || group_concat(repeat, ',') FROM (SELECT * FROM churn_result WHERE stage IN ('before', 'after') ORDER BY stage, repeat) GROUP BY stage")" \
   "$(printf 'after:1,2,3,4,5\nbefore:1,2,3,4,5')" "churn: 5 measurements before and 5 after, each its own row"
is "$(q "$db3" "SELECT COUNT(*) FROM churn_result WHERE stage = 'reinsert'") $(q "$db3" "SELECT COUNT(*) FROM churn_result WHERE stage = 'delete'")" \
   "1 1" "churn: one delete and one reinsert"
"$VBENCH" show --json --windows "$db3" >"$SCRATCH/ci.json"
ok $? "show --json --windows exits 0"
q "$db3" -json "SELECT clients, repeat, qps, p50_ms, p99_ms, in_flight FROM window_result" >"$SCRATCH/win.json"
q "$db3" -json "SELECT stage, repeat, qps, recall FROM churn_result WHERE stage IN ('before', 'after')" >"$SCRATCH/churn.json"
q "$db3" -json "SELECT qps FROM sweep_result" >"$SCRATCH/sw.json"
python3 - "$SCRATCH/ci.json" "$SCRATCH/win.json" "$SCRATCH/churn.json" "$SCRATCH/sw.json" <<'PY'
import json, statistics, sys
show = json.load(open(sys.argv[1]))
win, churn, sw = (json.load(open(f)) for f in sys.argv[2:5])
def close(a, b): return abs(a - b) <= 1e-9 * max(1.0, abs(b))
def interval(r, lo, hi, med, mn, mx):
    assert r[lo] is not None and r[hi] is not None, (lo, r)
    assert r[mn] <= r[lo] <= r[med] <= r[hi] <= r[mx], ("the interval lies in the range and holds the median", r)
# sweep: 5 repeats
(r,) = show["recall_sweep"]
qs = [x["qps"] for x in sw]
assert r["repeats"] == 5 and close(r["qps"], statistics.median(qs)), (r, qs)
interval(r, "qps_ci_lo", "qps_ci_hi", "qps", "qps_min", "qps_max")
# concurrency: one row per point, the medians of its 3 windows; no interval at 3
rows = show["concurrency"]
assert [x["clients"] for x in rows] == [1, 2], rows
one = None
for r in rows:
    w = [x for x in win if x["clients"] == r["clients"]]
    assert len(w) == 3 and r["repeats"] == 3, (r, w)
    for k in ("qps", "p50_ms", "p99_ms", "in_flight"):
        assert close(r[k], statistics.median(x[k] for x in w)), (k, r, w)
    assert close(r["qps_min"], min(x["qps"] for x in w)) and close(r["qps_max"], max(x["qps"] for x in w)), r
    assert r["qps_ci_lo"] is None and r["qps_ci_hi"] is None, r
    if r["clients"] == 1: one = r["qps"]
    else:   # efficiency: the median QPS over n x the median 1-client QPS (shown: 2 clients keep 2 in flight)
        assert abs(float(r["efficiency"]) - r["qps"] / (2 * one)) < 1e-3, (r, one)
assert len(show["concurrency_windows"]) == 6 and {x["repeat"] for x in show["concurrency_windows"]} == {1, 2, 3}, \
    show["concurrency_windows"]
# churn: medians of the 5 before and the 5 after, mean recall, intervals
(c,) = show["churn"]
for st in ("before", "after"):
    q = [x["qps"] for x in churn if x["stage"] == st]
    assert len(q) == 5, churn
    assert close(c["qps_" + st], statistics.median(q)), (st, c, q)
    assert close(c["qps_%s_min" % st], min(q)) and close(c["qps_%s_max" % st], max(q)), (st, c)
    interval(c, "qps_%s_ci_lo" % st, "qps_%s_ci_hi" % st, "qps_" + st, "qps_%s_min" % st, "qps_%s_max" % st)
    rec = statistics.mean(x["recall"] for x in churn if x["stage"] == st)
    assert abs(c["recall_" + st] - rec) < 1e-9, (st, c, rec)
assert c["repeats"] == 5 and c["completed"] == 1, c
PY
ok $? "show --json: the sweep's and churn's intervals at 5 repeats; concurrency points are their windows' medians"
"$VBENCH" show --wide "$db3" >"$SCRATCH/ci.txt"
grep -q "clients  repeats  qps *qps_min  qps_max  qps_ci_lo  qps_ci_hi" "$SCRATCH/ci.txt"
ok $? "show: one concurrency row per point, with the range and the interval columns"
is "$(grep -c "concurrency_windows\|Concurrency windows" "$SCRATCH/ci.txt")" "0" "show without --windows: no window rows"
is "$(q "$db3" "SELECT COUNT(*) FROM v_concurrency_points") $(q "$db3" "SELECT COUNT(*) FROM v_concurrency")" "2 6" \
   "the sqlite3 shell reads the stored views: a row per point and a row per window"
done_testing
