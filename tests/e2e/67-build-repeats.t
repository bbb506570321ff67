#!/usr/bin/env bash
# Builds repeated (issue 35): `build_repeats: 3` on an hnswlib entry builds the index three times, each build followed by
# the recall sweep on it (",build=B" in the keys), the build recorded on every build and sweep row. hnswlib's levels
# come from a fixed seed (hnswlib's random_seed 100), so a build by one thread over one load connection is the same
# graph every time: its recall is the same on each build, said and checked here; a multi-threaded build (threads: 2
# over 2 load connections) inserts in an order the scheduler decides, and its recall differs between builds. show,
# show --json, the exports and the report carry the spread across builds beside the spread across query repeats, and
# the report says which one the interval covers. The estimate counts the three builds. A campaign stopped with build
# 2's Done in the agent's outbox resumes and runs every build item once.
. "$(dirname "$0")/../lib/lib.sh"
need python3
db="$SCRATCH/br.sqlite"
vb_profile "$SCRATCH/br.yml" br "rows: 4000, queries: 200, dim: 16, clusters: 8, metric: euclidean, seed: 4" <<'YML'
engines:
  - name: hnswlib
    m: 8
    ef_construction: 32
    threads: 2
    build_repeats: 3
  - name: single
    engine: hnswlib
    m: 8
    ef_construction: 32
    build_repeats: 3
    phases: {build: {load_connections: 1}}
phases:
  build: {load_connections: 2}
  recall_sweep: {ef_search: [10, 40], repeats: 2}
YML

"$VBENCH" run --profile "$SCRATCH/br.yml" --out "$db" --check >"$SCRATCH/check.txt" 2>&1
ok $? "run --check passes"
grep -q "estimate: hnswlib (3 builds) .*single (3 builds) " "$SCRATCH/check.txt"
ok $? "the estimate names the repeated builds: $(grep estimate: "$SCRATCH/check.txt")"

# First run: the agent stops itself (SIGSTOP) once the sixth item's Done is in its outbox, before it is sent: build 2
# of hnswlib (build 1, then its sweep: two points x two repeats, then build 2). The coordinator and the agent are
# killed there; the resumed run takes the build over from the outbox, and the sweep on build 2 runs on that build.
VBENCH_AGENT_FAULT=stop-after-final:6 "$VBENCH" run --profile "$SCRATCH/br.yml" --out "$db" --quiet \
    2>"$SCRATCH/run1.txt" &
pid=$!
agent=
wait_until 120 vb_agent_stopped "$pid"
ok $? "first run: the agent stopped itself with build 2's Done in its outbox (pid ${agent:-none})"
kill -9 "$pid"; wait "$pid" 2>/dev/null
[ -n "$agent" ] && kill -9 "$agent"
# a build's result completes its item: build 2 is recorded, the sweep on it not started
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status = 'done'") $(q "$db" "SELECT key FROM plan WHERE status <> 'done' ORDER BY seq LIMIT 1")" \
   "6 br/hnswlib/s/recall_sweep/ef_search=10,repeat=1,build=2" "killed after build 2 was recorded, before the sweep on it"
"$VBENCH" resume --out "$db" --quiet 2>"$SCRATCH/run2.txt"
rc=$?
ok $rc "resume completes the campaign"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/run2.txt" | tail -20

is "$(q "$db" "SELECT status FROM campaign")" "finished" "campaign finished"
is "$(q "$db" "SELECT group_concat(key, ' ') FROM (SELECT key FROM plan WHERE engine = 'hnswlib' AND phase = 'build' ORDER BY seq)")" \
   "br/hnswlib/s/build/build=1 br/hnswlib/s/build/build=2 br/hnswlib/s/build/build=3" "three build items, keyed by build"
is "$(q "$db" "SELECT key FROM plan WHERE seq = 1")" "br/hnswlib/s/recall_sweep/ef_search=10,repeat=1,build=1" \
   "the sweep on build 1 follows it"
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE phase = 'build' AND status = 'done' AND attempts = 1")" "6" \
   "every build item done once, the one taken over from the outbox too"
is "$(q "$db" "SELECT group_concat(config || ':' || build, ' ') FROM (SELECT config, build FROM build_result ORDER BY config, build)")" \
   "hnswlib:1 hnswlib:2 hnswlib:3 single:1 single:2 single:3" "three build rows per configuration, each naming its build"
is "$(q "$db" "SELECT COUNT(*) FROM (SELECT config, build, ef_search, COUNT(*) AS n FROM sweep_result GROUP BY 1, 2, 3 HAVING n = 2)")" \
   "12" "three sweeps per configuration: each build's two points, two query repeats each"
is "$(q "$db" "SELECT COUNT(*) FROM event WHERE message LIKE '%rebuilding it untimed%'")" "0" \
   "the resumed agent's sweep on build 2 searched build 2 (hnswlib's persisted index), not a rebuild"
is "$(q "$db" "SELECT COUNT(*) FROM sweep_result AS s JOIN plan ON plan.key = s.item_key WHERE s.build IS NOT plan.build")" \
   "0" "a sweep row's build is its item's"
is "$(q "$db" "SELECT COUNT(DISTINCT recall) FROM sweep_result WHERE config = 'single' AND ef_search = 10")" "1" \
   "one thread, one connection: hnswlib builds the same graph each time (its fixed seed): the same recall on every build"
spread=$(q "$db" "SELECT group_concat(printf('%.4f-%.4f', recall_min, recall_max), ' ') FROM v_build_spread WHERE engine = 'hnswlib'")
[ "$(q "$db" "SELECT COUNT(*) FROM v_build_spread WHERE engine = 'hnswlib' AND recall_max > recall_min")" -ge 1 ]
ok $? "a multi-threaded build: the recall differs between builds ($spread)"

"$VBENCH" show "$db" >"$SCRATCH/show.txt"
ok $? "vbench show exits 0"
sed -n '/^Spread across builds/,/^$/p' "$SCRATCH/show.txt" >"$SCRATCH/spread.txt"
sed 's/^/#   /' "$SCRATCH/spread.txt"
is "$(grep -c '^hnswlib \|^single ' "$SCRATCH/spread.txt")" "4" "show: a spread row per configuration and ef_search"
grep -q "ef  builds  recall  recall_range .* qps  *qps_range .* build_spread  rep_spread" "$SCRATCH/spread.txt"
ok $? "show: recall and QPS with their range across builds, beside the spread across query repeats"
is "$(awk '{ if (length($0) > 120) n++ } END { print n + 0 }' "$SCRATCH/spread.txt")" "0" "show: the table fits 120 columns"
is "$(grep -A3 '^Build' "$SCRATCH/show.txt" | head -2 | tail -1 | awk '{print $NF}')" "build" "show: the build table names the build"

"$VBENCH" show --json "$db" >"$SCRATCH/show.json"
q "$db" -json "SELECT config, build, ef_search, recall, qps FROM sweep_result" >"$SCRATCH/raw.json"
python3 - "$SCRATCH/show.json" "$SCRATCH/raw.json" <<'PY'
import json, statistics, sys
show, raw = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
rows = show["build_spread"]
assert len(rows) == 4, rows
for r in rows:
    per = {}
    for x in raw:
        if x["config"] == r["engine"] and x["ef_search"] == r["ef"]:
            per.setdefault(x["build"], []).append(x)
    assert sorted(per) == [1, 2, 3] and r["builds"] == 3, (r, per)
    rec = [statistics.mean(x["recall"] for x in v) for v in per.values()]
    qps = [statistics.median(x["qps"] for x in v) for v in per.values()]
    assert abs(r["recall"] - statistics.mean(rec)) < 1e-9, (r, rec)
    assert abs(r["qps"] - statistics.mean(qps)) < 1e-9 * r["qps"], (r, qps)
    assert r["recall_range"] == "%.4f-%.4f" % (min(rec), max(rec)), (r, rec)
    assert r["qps_range"] == "%.0f-%.0f" % (min(qps), max(qps)), (r, qps)
assert [b["build"] for b in show["build"]] == [1, 2, 3, 1, 2, 3], show["build"]
assert all(s["builds"] == 3 and s["repeats"] == 6 for s in show["recall_sweep"]), show["recall_sweep"]
PY
ok $? "show --json: the spread rows agree with the per-build rows; the build rows name their build"

"$VBENCH" export "$db" --format csv -o "$SCRATCH/csv" --quiet
ok $? "export csv"
is "$(tail -n +2 "$SCRATCH/csv/build_spread.csv" | wc -l)" "4" "export: build_spread.csv, a row per configuration and ef_search"
head -1 "$SCRATCH/csv/build.csv" | grep -q ',build\b'
ok $? "export: build.csv names the build"
"$VBENCH" export "$db" --format json -o "$SCRATCH/json" --quiet
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["views"]["v_build_spread"]) == 4
assert sorted({r["build"] for r in d["tables"]["sweep_result"]}) == [1, 2, 3]
' "$SCRATCH/json/results.json"
ok $? "export json: the spread view, and the build of every sweep row"

if /usr/bin/python3 -c 'import h5py' 2>/dev/null; then
    "$VBENCH" export "$db" --format annb -o "$SCRATCH/annb" --quiet
    q "$db" -json "SELECT config, build, load_s + build_s AS bt FROM build_result" >"$SCRATCH/builds.json"
    /usr/bin/python3 - "$SCRATCH/annb" "$SCRATCH/builds.json" <<'PY'
import glob, h5py, json, re, sys
builds = {(b["config"], b["build"]): b["bt"] for b in json.load(open(sys.argv[2]))}
files = glob.glob(sys.argv[1] + "/results/*/*/*/*.hdf5")
assert len(files) == 12, files   # 2 configurations x 2 ef_search x 3 builds: a file per build
for fn in files:
    a = h5py.File(fn, "r").attrs
    key = a["vbench_result_key"]
    config, build = key.split("/")[1], int(re.search(r"build=(\d+)", key).group(1))
    assert abs(a["build_time"] - builds[(config, build)]) < 1e-9, (fn, key, a["build_time"], builds)
PY
    ok $? "export annb: a file per build, its build_time the build its sweep row searched"
else
    ok 1 "export annb: python3-h5py is not installed (bash deploy/install-deps --with-tests installs it)"
fi
"$VBENCH" report "$db" -o "$SCRATCH/rep" --quiet
ok $? "vbench report exits 0"
# builds x repeats x the distribution: the recall sweep's table has the most columns of any; it is printed in parts
# with the rows' key so that each fits the page (issue 36.15; the small-datum-2core report's ran to 1,147 px in 1,100)
over=$(vb_report_overflow "$SCRATCH/rep/report.html"); rc=$?
[ $rc -eq 0 ] && [ -z "$over" ]; ok $? "every table of the report fits its page in Chromium at 1400 px${over:+: $over}"
grep -q "covers the spread across query repeats only" "$SCRATCH/rep/report.md"
ok $? "the report says the interval covers the spread across query repeats, not across builds"
grep -q "^- \*\*hnswlib\*\*: .*for 4000 rows (the mean of 3 builds)\. " "$SCRATCH/rep/report.md"
ok $? "the summary's build cost is the mean of the builds, said so"
grep -q "hnswlib on s was built 3 times" "$SCRATCH/rep/report.md"
ok $? "the report says how many times each configuration was built, and its spread"
grep -q "| series | ef_search | builds | repeats | recall_mean | recall_min | recall_max | qps_mean | qps_min | qps_max | across_builds | across_repeats |" "$SCRATCH/rep/report.md"
ok $? "the report has the spread table"
# The validity finding when an item found another build's index and the agent built its build again untimed (the
# agent's warning, agent/phase_build.c; only a change of plan order gets there, so it is played here in a copy):
# that item and the later items of its build, not the next build's.
cp "$db" "$SCRATCH/v.sqlite"
k='br/hnswlib/s/recall_sweep/ef_search=40,repeat=1,build=2'
q "$SCRATCH/v.sqlite" "INSERT INTO event (at, level, kind, item_key, source, message) SELECT started_at, 'warn', 'agent_log', key, 'agent', 'hnswlib on s: the index is build 1, this item measures build 2; rebuilding it untimed, the recorded build row stands' FROM plan WHERE key = '$k'"
is "$(q "$SCRATCH/v.sqlite" "SELECT group_concat(item, ' ') FROM (SELECT item FROM v_validity WHERE \"check\" = 'measured after a rebuild' ORDER BY item)")" \
   "$k br/hnswlib/s/recall_sweep/ef_search=40,repeat=2,build=2" \
   "validity: an item that found another build's index, and the later ones of its build, measured an untimed rebuild"
# The calibration probe (coordinator/calibrate.c) measures rates: it builds a configuration once, whatever its
# build_repeats (the sleep engine: no rates measured on this host, so --probe probes it).
cat >"$SCRATCH/cal.yml" <<'YML'
name: cal
datasets:
  - {name: synth-cal, source: synthetic, rows: 500, queries: 20, dim: 8, metric: euclidean}
engines:
  - {name: sleep, service_us: 50, build_repeats: 2}
phases:
  build: {}
  recall_sweep: {ef_search: [10]}
YML
VBENCH_CACHE="$SCRATCH/cal-cache" "$VBENCH" run --profile "$SCRATCH/cal.yml" --out "$SCRATCH/cal.sqlite" --probe --quiet \
    >"$SCRATCH/cal.out" 2>"$SCRATCH/cal.err"
ok $? "a campaign of build_repeats 2 with its calibration probe runs"
is "$(q "$SCRATCH/cal.sqlite.probe.sqlite" "SELECT COUNT(*) FROM build_result") $(q "$SCRATCH/cal.sqlite" "SELECT COUNT(*) FROM build_result")" \
   "1 2" "the probe builds once, the campaign twice"
# Which spread the interval covers: two builds of five query repeats each. The sweep's bootstrap interval resamples
# the last build's repeats only: with build 1's QPS made 100 times larger in a copy of the database, the interval
# stays within build 2's range (pooled, half of its values would be build 1's and it would reach them).
db3="$SCRATCH/ci.sqlite"
vb_profile "$SCRATCH/ci.yml" ci "rows: 1000, queries: 50, dim: 8, clusters: 4, metric: euclidean, seed: 2" <<'YML'
engines:
  - {name: hnswlib, m: 8, build_repeats: 2}
phases:
  build:
  recall_sweep: {ef_search: [10], repeats: 5}
YML
"$VBENCH" run --profile "$SCRATCH/ci.yml" --out "$db3" --quiet 2>"$SCRATCH/run3.txt"
ok $? "two builds of five repeats run"
cp "$db3" "$SCRATCH/ci2.sqlite"
q "$SCRATCH/ci2.sqlite" "UPDATE sweep_result SET qps = qps * 100 WHERE build = 1"
"$VBENCH" show --json "$SCRATCH/ci2.sqlite" >"$SCRATCH/ci.json"
q "$SCRATCH/ci2.sqlite" -json "SELECT build, qps FROM sweep_result" >"$SCRATCH/ciraw.json"
python3 - "$SCRATCH/ci.json" "$SCRATCH/ciraw.json" <<'PY'
import json, sys
(r,) = json.load(open(sys.argv[1]))["recall_sweep"]
raw = json.load(open(sys.argv[2]))
last = [x["qps"] for x in raw if x["build"] == 2]
assert len(last) == 5 and r["builds"] == 2 and r["repeats"] == 10, (r, raw)
assert r["qps_ci_lo"] is not None, r
eps = 1e-9 * max(last)   # show --json writes 10 significant digits
assert min(last) - eps <= r["qps_ci_lo"] <= r["qps_ci_hi"] <= max(last) + eps, ("the interval is build 2's repeats'", r, last)
PY
ok $? "the sweep's interval covers the query repeats of one build (the last), not the builds pooled"
done_testing
