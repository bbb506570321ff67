#!/usr/bin/env bash
# Engine configurations side by side (issue 14): a matrix entry (hnswlib m: [8, 16]) and a named entry of another
# adapter run in one campaign; every configuration has its label in the plan keys, in its result rows, in `show`,
# `show --json` and the manifest, and its own index (m=16 builds a bigger one than m=8). A coordinator killed in
# the middle of the matrix resumes and finishes every configuration exactly once.
. "$(dirname "$0")/../lib/lib.sh"
need pgrep python3
db="$SCRATCH/matrix.sqlite"
cat >"$SCRATCH/matrix.yml" <<'YML'
name: matrix
k: 10
datasets:
  - name: synth-20k
    source: synthetic
    rows: 20000
    queries: 100
    dim: 32
    clusters: 16
    metric: euclidean
    seed: 3
engines:
  - name: hnswlib
    m: [8, 16]
    ef_construction: 64
  - name: flat
    engine: exact
phases:
  build:
  recall_sweep:
    ef_search: [10, 20, 40, 80, 120, 200]
YML

# Killed once the first configuration is done and before the matrix is.
"$VBENCH" run --profile "$SCRATCH/matrix.yml" --out "$db" --quiet 2>"$SCRATCH/run1.txt" &
pid=$!
wait_sql "$db" "SELECT COUNT(*) FROM plan WHERE status = 'done'" 8 120
ok $? "the first run gets past the first configuration"
kill -9 $pid; wait $pid 2>/dev/null
for _ in $(seq 1 100); do pgrep -f "vbench-agent.*$SCRATCH" >/dev/null || break; sleep 0.1; done
done1=$(q "$db" "SELECT COUNT(*) FROM plan WHERE status = 'done'")
[ "$done1" -lt 21 ]; ok $? "killed in the middle of the matrix ($done1 of 21 items done)"

"$VBENCH" resume --out "$db" --quiet 2>"$SCRATCH/run2.txt"
rc=$?
ok $rc "resume completes the campaign"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/run2.txt" | tail -20

is "$(q "$db" "SELECT status FROM campaign")" "finished" "campaign finished"
is "$(q "$db" "SELECT group_concat(config || ':' || n, ' ') FROM (SELECT config, COUNT(*) AS n FROM build_result GROUP BY config ORDER BY config)")" \
   "flat:1 hnswlib[m=16]:1 hnswlib[m=8]:1" "exactly one build row per configuration, under its label"
is "$(q "$db" "SELECT group_concat(config || ':' || n, ' ') FROM (SELECT config, COUNT(*) AS n, COUNT(DISTINCT ef_search) AS d FROM sweep_result GROUP BY config HAVING n = d ORDER BY config)")" \
   "flat:6 hnswlib[m=16]:6 hnswlib[m=8]:6" "every sweep point once per configuration"
is "$(q "$db" "SELECT group_concat(DISTINCT engine) FROM build_result")" "hnswlib,exact" \
   "a result row's engine is its adapter, its config the configuration's label"
is "$(q "$db" "SELECT key FROM plan WHERE seq = 0")" "matrix/hnswlib[m=8]/synth-20k/build" "the label is in the plan key"
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE key LIKE 'matrix/flat/%'")" "7" "a named entry keys by its name"
i8=$(q "$db" "SELECT index_bytes FROM build_result WHERE config = 'hnswlib[m=8]'")
i16=$(q "$db" "SELECT index_bytes FROM build_result WHERE config = 'hnswlib[m=16]'")
[ -n "$i8" ] && [ -n "$i16" ] && [ "$i16" -gt "$i8" ]
ok $? "each configuration built its own index: m=16 is bigger than m=8 ($i16 > $i8 bytes)"
is "$(q "$db" "SELECT COUNT(*) FROM sweep_result WHERE config = 'flat' AND printf('%.3f', recall) <> '1.000'")" "0" \
   "the named entry runs its adapter (exact: recall 1 everywhere)"

"$VBENCH" show "$db" >"$SCRATCH/show.txt"
ok $? "vbench show exits 0"
for label in 'hnswlib\[m=8\]' 'hnswlib\[m=16\]' 'flat'; do
    n=$(grep -c "^$label " "$SCRATCH/show.txt")
    [ "$n" -ge 6 ]; ok $? "show has the rows of $label ($n)"
done
"$VBENCH" show --json "$db" >"$SCRATCH/show.json"
python3 - "$SCRATCH/show.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
labels = sorted({r["engine"] for r in d["recall_sweep"]})
assert labels == ["flat", "hnswlib[m=16]", "hnswlib[m=8]"], labels
assert len(d["build"]) == 3, d["build"]
PY
ok $? "show --json carries one series per configuration"
q "$db" "SELECT value FROM manifest WHERE key = 'profile.resolved'" | python3 -c '
import json, sys
e = {x["name"]: x for x in json.load(sys.stdin)["engines"]}
assert e["hnswlib[m=8]"]["engine"] == "hnswlib" and e["hnswlib[m=8]"]["entry"] == "hnswlib", e
assert e["hnswlib[m=8]"]["params"]["m"] in (8, "8"), e
assert e["flat"]["engine"] == "exact", e
'
ok $? "the manifest's profile names each configuration, its adapter and its entry"
# The history records each configuration under its label (a result row's engine is its adapter, config its label):
# before, a matrix's configurations were never recorded, and the next campaign estimated them from defaults.
is "$(q "$VBENCH_CACHE/history.sqlite" "SELECT group_concat(engine, ' ') FROM (SELECT engine FROM measured WHERE campaign = 'matrix' AND load_rows_s > 0 AND sweep_qps100 > 0 ORDER BY engine)")" \
   "flat hnswlib[m=16] hnswlib[m=8]" "the history holds every configuration's rates under its label"
done_testing
