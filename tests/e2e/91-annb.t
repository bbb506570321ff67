#!/usr/bin/env bash
# vbench export --format annb (issue 15): a small campaign on two ann-benchmarks dataset files (angular and
# euclidean, written here by h5py with their true neighbours and distances), exported as ann-benchmarks result
# files and read back by h5py. ann-benchmarks' k-nn recall (plotting/metrics.py: a returned distance counts when it
# is <= the dataset's k-th true distance + 1e-3, the mean over queries / count) computed from each file's
# `distances` and the dataset's `distances` must equal the recall vbench recorded for the same point to 1e-9; the
# files carry the datasets and attributes ann-benchmarks' plot.py and data_export.py read, with its types.
. "$(dirname "$0")/../lib/lib.sh"
need /usr/bin/python3 sqlite3
/usr/bin/python3 -c 'import h5py, numpy' 2>/dev/null ||
    skip_all "python3-h5py is not installed (bash deploy/install-deps --with-tests installs it)"

/usr/bin/python3 - "$SCRATCH" <<'PY'
import sys, h5py, numpy as np
rng = np.random.default_rng(11)
for metric in ("angular", "euclidean"):
    train = rng.standard_normal((3000, 24)).astype(np.float32)
    test = rng.standard_normal((150, 24)).astype(np.float32)
    a, b = train.astype(np.float64), test.astype(np.float64)
    if metric == "angular":
        d = 1.0 - (b / np.linalg.norm(b, axis=1, keepdims=True)) @ (a / np.linalg.norm(a, axis=1, keepdims=True)).T
    else:
        d = np.sqrt(np.maximum(((b[:, None, :] - a[None, :, :]) ** 2).sum(-1), 0))
    idx = np.argsort(d, axis=1, kind="stable")[:, :100]
    with h5py.File("%s/toy-24-%s.hdf5" % (sys.argv[1], metric), "w") as f:
        f.attrs["distance"] = metric
        f["train"], f["test"] = train, test
        f["neighbors"] = idx.astype(np.int32)
        f["distances"] = np.take_along_axis(d, idx, 1).astype(np.float32)
PY
ok $? "two ann-benchmarks dataset files written (angular, euclidean)"

cat > "$SCRATCH/annb.yml" <<YML
name: annb
description: "annb export test: two small ann-benchmarks files, the embedded engines, build and recall sweep."
k: 10
datasets:
  - {name: toy-24-angular, source: hdf5, path: $SCRATCH/toy-24-angular.hdf5}
  - {name: toy-24-euclidean, source: hdf5, path: $SCRATCH/toy-24-euclidean.hdf5}
engines:
  - {name: hnswlib, m: 8, ef_construction: 32}
  - {name: exact}
resources: {layout: small}
phases:
  build:
  recall_sweep: {ef_search: [10, 20, 80]}
YML
"$VBENCH" run --profile "$SCRATCH/annb.yml" --out "$SCRATCH/annb.sqlite" --quiet 2>"$SCRATCH/run.err"
ok $? "the campaign runs" || sed 's/^/#   /' "$SCRATCH/run.err" | tail -5
is "$(q "$SCRATCH/annb.sqlite" "SELECT COUNT(*), SUM(length(answers) = 16 + queries * (4 + 8 * 10)) FROM sweep_result")" \
   "12|12" "every sweep point kept its answers: 16 + queries x (4 + 8 k) bytes"

"$VBENCH" export "$SCRATCH/annb.sqlite" --format annb -o "$SCRATCH/out" 2>"$SCRATCH/export.err"
ok $? "export --format annb exits 0" || sed 's/^/#   /' "$SCRATCH/export.err" | tail -5
is "$(cd "$SCRATCH/out" && find results -name '*.hdf5' | sort | tr '\n' ' ')" \
   "results/toy-24-angular/10/exact/ef_search_10.hdf5 results/toy-24-angular/10/exact/ef_search_20.hdf5 results/toy-24-angular/10/exact/ef_search_80.hdf5 results/toy-24-angular/10/hnswlib/m_8_ef_construction_32_ef_search_10.hdf5 results/toy-24-angular/10/hnswlib/m_8_ef_construction_32_ef_search_20.hdf5 results/toy-24-angular/10/hnswlib/m_8_ef_construction_32_ef_search_80.hdf5 results/toy-24-euclidean/10/exact/ef_search_10.hdf5 results/toy-24-euclidean/10/exact/ef_search_20.hdf5 results/toy-24-euclidean/10/exact/ef_search_80.hdf5 results/toy-24-euclidean/10/hnswlib/m_8_ef_construction_32_ef_search_10.hdf5 results/toy-24-euclidean/10/hnswlib/m_8_ef_construction_32_ef_search_20.hdf5 results/toy-24-euclidean/10/hnswlib/m_8_ef_construction_32_ef_search_80.hdf5 " \
   "one file per (engine, configuration, ef_search) in results/DATASET/K/ALGO/"

/usr/bin/python3 - "$SCRATCH" <<'PY'
import glob, os, sqlite3, sys
import h5py, numpy as np
d = sys.argv[1]
db = sqlite3.connect(os.path.join(d, "annb.sqlite"))
checked, low = 0, 0
for fn in sorted(glob.glob(os.path.join(d, "out/results/*/*/*/*.hdf5"))):
    f = h5py.File(fn, "r")
    a = dict(f.attrs)
    # What ann-benchmarks reads, with the types its code relies on.
    for key, types in (("algo", str), ("name", str), ("dataset", str), ("distance", str), ("count", np.integer),
                       ("run_count", np.integer), ("build_time", np.floating), ("best_search_time", np.floating),
                       ("candidates", np.floating), ("index_size", np.floating), ("batch_mode", np.bool_),
                       ("expect_extra", np.bool_)):
        assert key in a, (fn, key)
        assert isinstance(a[key], types), (fn, key, type(a[key]))
    assert (False != a["batch_mode"]) == False, "load_all_results(batch_mode=False) keeps the file"
    parts = fn.split(os.sep)
    assert parts[-4] == a["dataset"] and parts[-3] == str(a["count"]) and parts[-2] == a["algo"], fn
    ds = h5py.File(os.path.join(d, a["dataset"] + ".hdf5"), "r")
    assert a["distance"] == ds.attrs["distance"], (a["distance"], ds.attrs["distance"])
    count = int(a["count"])
    times, nb, run = np.array(f["times"]), np.array(f["neighbors"]), np.array(f["distances"])
    n = len(ds["test"])
    assert times.dtype == np.float32 and times.shape == (n,), (times.dtype, times.shape)
    assert nb.dtype == np.int32 and nb.shape == (n, count), (nb.dtype, nb.shape)
    assert run.dtype == np.float32 and run.shape == (n, count), (run.dtype, run.shape)
    assert (times > 0).all() and abs(a["best_search_time"] - times.astype(np.float64).mean()) < 1e-9
    # The distances are in ann-benchmarks' convention for the metric: recomputed here from the vectors.
    train, test = np.array(ds["train"], np.float64), np.array(ds["test"], np.float64)
    for i in range(n):
        v = train[nb[i][nb[i] >= 0]]
        q = test[i]
        if a["distance"] == "angular":
            want = 1 - v @ q / (np.linalg.norm(v, axis=1) * np.linalg.norm(q))
        else:
            want = np.linalg.norm(v - q, axis=1)
        assert np.allclose(run[i][: len(want)], want, rtol=0, atol=1e-5), (fn, i, run[i], want)
    # ann-benchmarks' k-nn recall from the dataset's true distances and the run's distances.
    true = np.array(ds["distances"])
    hits = [sum(1 for x in run[i][:count] if x <= true[i][count - 1] + 1e-3) for i in range(n)]
    recall = float(np.mean(hits)) / count
    (vb,) = db.execute("SELECT recall FROM sweep_result WHERE result_key = ?", (a["vbench_result_key"],)).fetchone()
    assert abs(recall - vb) <= 1e-9, (fn, recall, vb)
    checked += 1
    low += recall < 0.99
assert checked == 12, checked
assert low >= 2, "hnswlib at ef_search 10 should miss some neighbours, so the equality is not only 1.0 = 1.0"
print("# %d files: ann-benchmarks' recall equals vbench's to 1e-9 (%d of them below 0.99)" % (checked, low))
PY
ok $? "h5py reads every file back: datasets and attributes ann-benchmarks reads, its distances, its recall = vbench's"

# show --worst 5 (issue 35): the hardest queries of each point by index, with their recall, as the kept answers give
# it: ann-benchmarks' per-query recall computed here from the exported answers and the dataset's true distances.
"$VBENCH" show --json --worst 5 "$SCRATCH/annb.sqlite" >"$SCRATCH/worst.json"
ok $? "vbench show --json --worst 5 exits 0"
/usr/bin/python3 - "$SCRATCH" <<'PY'
import glob, json, os, sqlite3, sys
import h5py, numpy as np
d = sys.argv[1]
db = sqlite3.connect(os.path.join(d, "annb.sqlite"))
worst = json.load(open(os.path.join(d, "worst.json")))["worst_queries"]
checked, below = 0, 0
for fn in sorted(glob.glob(os.path.join(d, "out/results/*/*/*/*.hdf5"))):
    f = h5py.File(fn, "r")
    a = dict(f.attrs)
    engine, dataset, ef = db.execute("SELECT COALESCE(config, engine), dataset, ef_search FROM sweep_result "
                                     "WHERE result_key = ?", (a["vbench_result_key"],)).fetchone()
    ds = h5py.File(os.path.join(d, a["dataset"] + ".hdf5"), "r")
    count, run, true = int(a["count"]), np.array(f["distances"]), np.array(ds["distances"])
    per = [sum(1 for x in run[i][:count] if x <= true[i][count - 1] + 1e-3) / count for i in range(len(run))]
    rows = [r for r in worst if (r["engine"], r["dataset"], r["phase"], r["point"]) ==
            (engine, dataset, "recall_sweep", "ef_search %d, 1 client" % ef)]
    if min(per) == 1.0:
        assert len(rows) == 1 and rows[0]["note"] == "all at recall 1", (fn, rows)
        continue
    want = sorted(range(len(per)), key=lambda i: (per[i], i))[:5]
    assert [r["query"] for r in rows] == want, (fn, [r["query"] for r in rows], want)
    assert all(abs(r["recall"] - per[q]) < 1e-6 and r["answers"] == "kept" for r, q in zip(rows, want)), (fn, rows)
    checked += 1
    below += per[want[0]] < np.mean(per)
assert checked >= 2, checked
print("# %d points: show --worst 5 = the 5 lowest per-query recall of the exported answers (%d with the lowest below the mean)"
      % (checked, below))
PY
ok $? "show --worst 5 lists the 5 query indexes whose recall equals what the kept answers give, lowest first"

# Answers off: nothing kept, and the export says why.
sed 's/recall_sweep: {ef_search: \[10, 20, 80\]}/recall_sweep: {ef_search: [10], answers: false}/' "$SCRATCH/annb.yml" \
    > "$SCRATCH/off.yml"
"$VBENCH" run --profile "$SCRATCH/off.yml" --out "$SCRATCH/off.sqlite" --quiet 2>"$SCRATCH/off.err"
ok $? "a campaign with answers: false runs" || sed 's/^/#   /' "$SCRATCH/off.err" | tail -5
is "$(q "$SCRATCH/off.sqlite" "SELECT COUNT(*), COUNT(answers) FROM sweep_result")" "4|0" "answers: false keeps none"
out=$("$VBENCH" export "$SCRATCH/off.sqlite" --format annb -o "$SCRATCH/off" 2>&1)
[ $? -ne 0 ]; ok $? "export --format annb fails on it"
like "$out" "sweep_result.answers" "and names what is missing"
like "$("$VBENCH" show --worst 3 "$SCRATCH/off.sqlite")" 'answers "not kept": the point kept no per-query answers' \
   "show --worst says when a point kept no per-query answers"
out=$("$VBENCH" show --worst 0 "$SCRATCH/off.sqlite" 2>&1)
is "$?" "2" "show --worst 0 is refused (exit 2)"
like "$out" 'vbench: --worst takes a number of queries (1 to 100000), not "0"' "naming the option and the value"
done_testing
