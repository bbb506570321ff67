# The checks of the dev campaign (README command one: the dev profile on the embedded engines, into a real SQLite
# file, with the coordinator and the agent as separate processes over ZeroMQ), sourced by 06-readme.t right after it
# runs the README's `bin/vbench run --profile dev` as written: one campaign serves both (it was run twice, here and
# in 06). Expects: $db the campaign's database, $rc the run's exit status, $SCRATCH/out.txt and $SCRATCH/err.txt its
# standard output and error.
ok $rc "vbench run --profile dev exits 0"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/err.txt" | tail -20

is "$(q "$db" "SELECT status FROM campaign")" "finished" "campaign finished"
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every plan item done"
for e in hnswlib exact; do
    is "$(q "$db" "SELECT COUNT(*) FROM build_result WHERE engine = '$e'")" "1" "$e has one build row"
    n=$(q "$db" "SELECT COUNT(*) FROM sweep_result WHERE engine = '$e'")
    [ "$n" -ge 8 ]; ok $? "$e has at least 8 recall-sweep points ($n)"
    is "$(q "$db" "SELECT COUNT(*) FROM build_result WHERE engine = '$e' AND rows = 20000 AND load_s > 0 AND first_query_s >= load_s AND rows_per_s > 0")" "1" "$e build row has rows, load time, time to first query, rate"
done
is "$(q "$db" "SELECT COUNT(*) FROM sweep_result WHERE engine = 'exact' AND printf('%.3f', recall) <> '1.000'")" "0" "exact has recall 1.000 at every point"
is "$(q "$db" "SELECT COUNT(*) FROM sweep_result WHERE engine = 'exact' AND (short_answers > 0 OR errors > 0)")" "0" "exact: no short answers, no errors"
is "$(q "$db" "SELECT (SELECT COUNT(*) FROM sweep_result WHERE duplicate_answers > 0) + (SELECT COUNT(*) FROM filtered_result WHERE duplicate_answers > 0) + (SELECT COUNT(*) FROM churn_result WHERE duplicate_answers > 0)")" \
   "0" "the embedded engines never return an id twice in one answer"

# hnswlib's recall rises with ef_search: non-decreasing point to point (small noise allowed), and clearly up overall.
rec=$(q "$db" "SELECT recall FROM sweep_result WHERE engine = 'hnswlib' ORDER BY ef_search")
/usr/bin/python3 - "$rec" <<'PY'
import sys
r = [float(x) for x in sys.argv[1].split()]
ok = all(b >= a - 0.002 for a, b in zip(r, r[1:])) and r[-1] > r[0] + 0.02 and r[-1] > 0.95
sys.exit(0 if ok else 1)
PY
ok $? "hnswlib recall rises with ef_search: $(echo $rec | tr '\n' ' ')"
is "$(q "$db" "SELECT COUNT(*) FROM sweep_result WHERE p50_ms > 0 AND p99_ms >= p50_ms AND qps > 0")" \
   "$(q "$db" "SELECT COUNT(*) FROM sweep_result")" "every sweep point has QPS and ordered percentiles"

# Manifest: host, libraries, resolved profile, git revision, the agent's hello.
for k in host.cpu_model host.cpu_flags host.kernel host.cores host.memory_bytes lib.zmq lib.openblas lib.hdf5 \
         vbench.git_revision profile.resolved engine.hnswlib.version dataset.synth-angular-20k.content_hash; do
    v=$(q "$db" "SELECT value FROM manifest WHERE key = '$k'")
    [ -n "$v" ]; ok $? "manifest has $k"
done
is "$(q "$db" "SELECT COUNT(*) FROM agent WHERE id = 'local-client' AND roles = 'client'")" "1" "the local agent is recorded"

# show --json: one array per table, with the documented fields.
"$VBENCH" show --json "$db" >"$SCRATCH/show.json"
ok $? "vbench show --json exits 0"
/usr/bin/python3 - "$SCRATCH/show.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for row in d["recall_sweep"]:
    for k in ("engine", "dataset", "ef_search", "recall", "qps", "p50_ms", "p99_ms"):
        assert k in row, k
for row in d["build"]:
    for k in ("engine", "dataset", "load_s", "build_s", "first_query_s", "rows_per_s", "index_bytes"):
        assert k in row, k
assert len(d["build"]) == 2 and len(d["recall_sweep"]) == 16
for table in ("recall_targets", "concurrency", "filtered", "churn", "validity", "failures"):
    assert table in d, table
for row in d["churn"]:
    for k in ("qps_before", "qps_after", "recall_before", "recall_after", "rows_done", "rows_planned",
              "rows_per_s", "completed"):
        assert k in row, k
for row in d["validity"]:
    assert row["check"] and row["detail"], row
PY
ok $? "show --json has build and recall_sweep tables with the documented fields"
out=$("$VBENCH" show "$db")
like "$out" "Recall sweep" "vbench show prints the recall sweep table"
like "$out" "Best QPS whose recall passes" "vbench show prints the recall targets"
# Issue 36.14: the tables fit 120 columns (the dev campaign's were 64 lines over 120, the widest 267); what is left
# out is named under its table, --wide shows every column, --json is the same with or without it.
is "$(printf '%s\n' "$out" | awk 'length($0) > 120' | wc -l)" 0 \
   "vbench show fits 120 columns (widest line: $(printf '%s\n' "$out" | awk '{ if (length($0) > m) m = length($0) } END { print m }'))"
like "$out" "(not shown: 0 in every row: short_answers, errors; 1 in every row: repeats, builds; equal to qps (one repeat, no" \
     "a column left out is named under its table, with why"
like "$out" "Recall sweep (one client, every query once; with a clients list, a window per client count): dataset synth-angular-20k," \
     "the dataset every row shares is said once in the title"
wide=$("$VBENCH" show --wide "$db")
like "$wide" "qps_min" "show --wide has every column (qps_min)"
[ "$(printf '%s\n' "$wide" | awk '{ if (length($0) > m) m = length($0) } END { print m }')" -gt 120 ]
ok $? "... as wide as it is (over 120 columns)"
is "$("$VBENCH" show --json --wide "$db" | md5sum)" "$("$VBENCH" show --json "$db" | md5sum)" "--json is not narrowed"
out=$("$VBENCH" status --out "$db")
like "$out" "finished" "vbench status says finished"
like "$(cat "$SCRATCH/out.txt")" "ef_search" "the run prints the result tables at the end"
is "$(sed -n '/^Build/,$p' "$SCRATCH/out.txt" | awk 'length($0) > 120' | wc -l)" 0 "... fitting 120 columns as show does"

# Recall as a distribution (issue 35, docs/metrics.md "Recall distribution"): every measured point has one, from its
# per-query values; on exact every percentile is 1 and no query is at 0; hnswlib at ef_search 10 has queries well
# below its mean. show (p10 and zero share in the sweep), show --recall, show --json and show --worst carry it.
is "$(q "$db" "SELECT COUNT(*) FROM recall_dist")" \
   "$(q "$db" "SELECT (SELECT COUNT(*) FROM sweep_result) + (SELECT COUNT(*) FROM filtered_result)
               + (SELECT COUNT(*) FROM churn_result WHERE stage IN ('before', 'after'))")" \
   "recall distribution: one per measured point (sweep, filtered, churn before / after)"
is "$(q "$db" "SELECT COUNT(*) FROM v_recall_dist WHERE engine = 'exact' AND (recall_min <> 1 OR recall_p1 <> 1
               OR recall_p10 <> 1 OR recall_p50 <> 1 OR zero_share <> 0 OR below_half_share <> 0)")" "0" \
   "exact: min, p1, p10, p50 all 1.0 and no query at recall 0 or below 0.5, at every point"
is "$(q "$db" "SELECT COUNT(*) FROM v_recall_dist WHERE engine = 'exact' AND queries > 0")" "12" \
   "exact: 12 points with a distribution (8 sweep, 2 filtered, churn before and after)"
is "$(q "$db" "SELECT COUNT(*) FROM v_recall_sweep WHERE engine = 'hnswlib' AND ef_search = 10
               AND (recall_p1 < recall OR recall_min < recall) AND recall_min <= recall_p1 AND recall_p1 <= recall_p10
               AND recall_p10 <= recall_p50 AND recall_p50 <= 1")" "1" \
   "hnswlib at ef_search 10: p1 or the minimum below the mean, min <= p1 <= p10 <= p50 <= 1 ($(q "$db" "SELECT
    printf('mean %.4f min %g p1 %g p10 %g p50 %g zero %g', recall, recall_min, recall_p1, recall_p10, recall_p50,
    zero_share) FROM v_recall_sweep WHERE engine = 'hnswlib' AND ef_search = 10"))"
# The per-query values behind it: their mean is the recorded mean recall, and their order statistics are the
# recorded ones (nearest rank); show --worst 5 names the 5 lowest of them with their recall.
"$VBENCH" show --worst 5 "$db" >"$SCRATCH/worst.txt"
ok $? "vbench show --worst 5 exits 0"
/usr/bin/python3 - "$db" "$SCRATCH/worst.txt" <<'PY'
import math, sqlite3, struct, sys
db = sqlite3.connect(sys.argv[1])
blob, mean, mn, p1, p10, p50, zero = db.execute(
    "SELECT d.query_recall, s.recall, d.recall_min, d.recall_p1, d.recall_p10, d.recall_p50, d.zero_share "
    "FROM sweep_result AS s JOIN recall_dist AS d USING (result_key) WHERE s.engine = 'hnswlib' AND s.ef_search = 10").fetchone()
r = struct.unpack("<%df" % (len(blob) // 4), blob)
assert len(r) == 500, len(r)
assert abs(sum(r) / len(r) - mean) < 1e-6, (sum(r) / len(r), mean)
s = sorted(r)
rank = lambda p: s[max(1, math.ceil(p / 100 * len(s))) - 1]
for got, want in ((mn, s[0]), (p1, rank(1)), (p10, rank(10)), (p50, rank(50)), (zero, sum(v == 0 for v in r) / len(r))):
    assert abs(got - want) < 1e-6, (got, want)
worst = sorted(range(len(r)), key=lambda i: (r[i], i))[:5]
import re
cells = [re.split(r"\s{2,}", l.strip()) for l in open(sys.argv[2])]
rows = [c for c in cells if c[:4] == ["hnswlib", "synth-angular-20k", "recall_sweep", "ef_search 10, 1 client"]]
assert [int(c[6]) for c in rows] == worst, ([c[6] for c in rows], worst)
assert [c[5] for c in rows] == ["1", "2", "3", "4", "5"], rows
assert all(abs(float(c[7]) - r[q]) < 5e-5 for c, q in zip(rows, worst)), rows
print("# worst 5 at ef_search 10:", ", ".join("query %d %.1f" % (q, r[q]) for q in worst))
PY
ok $? "hnswlib ef_search 10: the per-query values average to the mean, give the recorded percentiles, and show --worst 5 names their 5 lowest"
is "$(grep -c "queries at recall 0 behind the mean" "$SCRATCH/err.txt")" "$(q "$db" "SELECT COUNT(*) FROM recall_dist WHERE zero_share > 0")" \
   "the terminal says each point with queries at recall 0 as it happens ($(q "$db" "SELECT COUNT(*) FROM recall_dist WHERE zero_share > 0") points), never for exact"
! grep "queries at recall 0 behind the mean" "$SCRATCH/err.txt" | grep -q "/exact/"; ok $? "exact: no point with a query at recall 0 on the terminal"
is "$(q "$db" "SELECT COUNT(*) FROM v_validity WHERE \"check\" = 'queries at recall 0'")" \
   "$(q "$db" "SELECT COUNT(*) FROM v_recall_dist WHERE zero_share > 0 AND recall >= 0.9")" \
   "validity: every point whose mean recall passes 0.9 with queries at recall 0 behind it is a finding ($(q "$db" "SELECT
    COUNT(*) FROM v_recall_dist WHERE zero_share > 0 AND recall >= 0.9") here)"
is "$(q "$db" "SELECT COUNT(*) FROM v_validity WHERE \"check\" = 'queries at recall 0' AND (engine = 'exact'
               OR detail NOT GLOB '[0-9]* of [0-9]* queries at recall 0 behind a mean recall of 0.9*')")" "0" \
   "validity: none for exact; the finding says how many queries of how many, and the mean"
out=$("$VBENCH" show "$db")
like "$out" "recall_p10  zero_share" "vbench show's recall sweep has the p10 and zero-share columns"
like "$("$VBENCH" show --recall "$db")" "Recall distribution per measured point" "vbench show --recall prints the distribution table"
/usr/bin/python3 - "$SCRATCH/show.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for row in d["recall_sweep"]:
    for k in ("recall_p10", "zero_share"):
        assert k in row, k
assert len(d["recall_distribution"]) == 24, len(d["recall_distribution"])
for row in d["recall_distribution"]:
    for k in ("engine", "phase", "point", "recall", "min", "p1", "p10", "p50", "zero_share", "below_half", "queries"):
        assert k in row, k
PY
ok $? "show --json: the sweep rows carry recall_p10 and zero_share, recall_distribution has every measured point's"
"$VBENCH" show --json --worst 5 "$db" | /usr/bin/python3 -c '
import json, sys
w = [r for r in json.load(sys.stdin)["worst_queries"] if r["engine"] == "hnswlib" and r["point"] == "ef_search 10, 1 client"]
assert [r["rank"] for r in w] == [1, 2, 3, 4, 5] and all(r["answers"] == "kept" for r in w), w
assert w == sorted(w, key=lambda r: (r["recall"], r["query"])), w'
ok $? "show --json --worst 5: 5 ranked queries of hnswlib at ef_search 10, answers kept"

# Concurrency: a closed-loop window per engine and client count (1, 2, 4, 8), each with an efficiency or the
# reason it is refused (docs/design.md §4), and the table in `show`.
is "$(q "$db" "SELECT COUNT(*) FROM window_result WHERE target_rate IS NULL AND queries > 0 AND qps > 0 AND in_flight > 0")" \
   "8" "concurrency: 2 engines x 4 windows with queries, QPS and in flight"
is "$(q "$db" "SELECT COUNT(*) FROM v_concurrency WHERE (efficiency IS NULL) <> (efficiency_refused IS NULL)")" "8" \
   "concurrency: every window has an efficiency or says why not, never both"
like "$("$VBENCH" show "$db")" "Concurrency (closed loop)" "vbench show prints the concurrency table"
is "$(q "$db" "SELECT COUNT(*) FROM sweep_result WHERE index_used IS NOT NULL OR plan IS NOT NULL")" "0" \
   "embedded engines have no planner: no plan, and no 'index not used' finding"
is "$(q "$db" "SELECT COUNT(*) FROM manifest WHERE key = 'budget.layout'")" "0" \
   "no server engine selected: no budget applied (the optional server engines of dev are left out)"

# Measurement nits (issue 12): neither embedded engine has a build step, so build_s is exactly 0 (it was the
# 100 ms poll); the client threads of an embedded engine are the engine, so no 'client CPU saturated'; a churn
# stage that did nothing says so instead of a rate of 0 rows/s.
is "$(q "$db" "SELECT COUNT(*) FROM build_result WHERE build_s = 0")" "2" "no build step: build_s exactly 0 for both"
is "$(q "$db" "SELECT group_concat(value, ' ') FROM manifest WHERE key IN ('engine.hnswlib.kind', 'engine.exact.kind')")" \
   "embedded embedded" "the manifest records both engines as embedded"
is "$(q "$db" "SELECT COUNT(*) FROM v_validity WHERE \"check\" = 'client CPU saturated'")" "0" \
   "embedded engines: no 'client CPU saturated' finding"
! grep -q "(0 rows/s)" "$SCRATCH/err.txt"; ok $? "no churn stage printed as '(0 rows/s)'"
is "$(grep -c "churn.* maintain: none, the engine has no maintenance step" "$SCRATCH/err.txt")" "2" \
   "churn: the maintenance the embedded engines do not have is said as such"

# Where the campaign's time went (v_campaign_time, docs/metrics.md "Campaign time"): the items' seconds, the gaps
# between them and the time after the last item add up to the wall time; a row per engine and phase, each with as
# many items as the plan has and the estimate's seconds for them; a build's detail splits it exactly.
is "$(q "$db" "SELECT printf('%.2f', c.seconds - (SELECT SUM(seconds) FROM v_campaign_time WHERE engine <> '(campaign)')
                - (SELECT MAX(0, (julianday(finished_at) - julianday((SELECT MAX(finished_at) FROM plan))) * 86400.0)
                   FROM campaign)) FROM v_campaign_time AS c WHERE c.engine = '(campaign)'")" "0.00" \
   "campaign time: items + between items + after the last item = the wall time"
is "$(q "$db" "SELECT COUNT(*) FROM v_campaign_time AS t
               WHERE t.part NOT IN ('between items', 'wall time')
                 AND t.items = (SELECT COUNT(*) FROM plan WHERE engine = t.engine AND phase = t.part)
                 AND t.estimated_s > 0")" "$(q "$db" "SELECT COUNT(DISTINCT engine || '/' || phase) FROM plan")" \
   "campaign time: one row per engine and phase, with every item of it and the estimate's seconds"
# (the manifest keeps each item's estimate to 0.1 s: at most 0.05 s of rounding an item)
is "$(q "$db" "SELECT COUNT(*) FROM (SELECT engine, SUM(estimated_s) AS est, SUM(items) AS n FROM v_campaign_time
               WHERE engine <> '(campaign)' AND part <> 'between items' GROUP BY engine) AS t
               WHERE abs(t.est - (SELECT value FROM manifest WHERE key = 'estimate.engine.' || t.engine || '_s'))
                     <= 0.05 * t.n + 1e-9")" "2" \
   "campaign time: each engine's estimated seconds add up to the estimate it printed"
/usr/bin/python3 - "$(q "$db" "SELECT seconds || ' ' || detail FROM v_campaign_time WHERE part = 'build'")" <<'PY'
import re, sys
for line in sys.argv[1].splitlines():
    total = float(line.split()[0])
    load, index, rest = (float(x) for x in re.findall(r"(-?[0-9.]+) s", line))
    assert abs(load + index + rest - total) < 0.015, line
    assert load >= 0 and index >= 0 and rest >= 0, line
PY
ok $? "campaign time: a build's load, index and the rest add up to its item's seconds"
like "$("$VBENCH" show "$db")" "Where the campaign's time went" "vbench show prints where the campaign's time went"
# A campaign whose coordinator is still running (or was killed) has no finished_at, and its updated_at is its start:
# its wall time reaches the last thing it recorded (here the last event), not 0.
cp "$db" "$SCRATCH/running.sqlite"
sqlite3 "$SCRATCH/running.sqlite" "UPDATE campaign SET finished_at = NULL, updated_at = created_at, status = 'running'"
is "$(q "$SCRATCH/running.sqlite" "SELECT printf('%.3f', seconds) FROM v_campaign_time WHERE engine = '(campaign)'")" \
   "$(q "$db" "SELECT printf('%.3f', (julianday(MAX(at)) - julianday((SELECT created_at FROM campaign))) * 86400.0)
               FROM event")" "campaign time of a campaign still running: its wall time reaches its last event"
