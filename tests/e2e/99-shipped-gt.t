#!/usr/bin/env bash
# A shipped ground truth (issue 29): with `ground_truth: shipped` the dataset's own neighbours are used instead of
# recomputing them, only after a sample of queries is checked exactly against the corpus. An ann-benchmarks file
# whose neighbours are right is accepted (the exact engine then scores recall 1 against them); the same file with
# one neighbour id changed is refused, naming the query; a synthetic dataset with ground_truth: shipped is refused
# before anything runs, naming the profile's line.
. "$(dirname "$0")/../lib/lib.sh"
need /usr/bin/python3 sqlite3
/usr/bin/python3 -c 'import h5py, numpy' 2>/dev/null ||
    skip_all "python3-h5py is not installed (bash deploy/install-deps --with-tests installs it)"

/usr/bin/python3 - "$SCRATCH" <<'PY'
import sys, h5py, numpy as np
rng = np.random.default_rng(29)
train = rng.standard_normal((4000, 16)).astype(np.float32)
test = rng.standard_normal((120, 16)).astype(np.float32)
a, b = train.astype(np.float64), test.astype(np.float64)
d = 1.0 - (b / np.linalg.norm(b, axis=1, keepdims=True)) @ (a / np.linalg.norm(a, axis=1, keepdims=True)).T
idx = np.argsort(d, axis=1, kind="stable")[:, :100].astype(np.int32)
for name, nb in (("right", idx), ("wrong", idx.copy())):
    if name == "wrong":
        nb[7, 3] = nb[7, 60]          # query 7's 4th neighbour replaced by its 61st
    with h5py.File("%s/%s.hdf5" % (sys.argv[1], name), "w") as f:
        f.attrs["distance"] = "angular"
        f["train"], f["test"] = train, test
        f["neighbors"] = nb
        f["distances"] = np.take_along_axis(d, idx, 1).astype(np.float32)
PY
ok $? "an ann-benchmarks file with its true neighbours, and a copy with one id changed"

profile() { # profile NAME FILE CHECK
    cat <<YML
name: $1
k: 10
datasets:
  - {name: ds-$1, source: hdf5, path: $2, ground_truth: shipped, ground_truth_check: $3}
engines:
  - {name: exact}
phases:
  build:
  recall_sweep: {ef_search: [10]}
YML
}
profile right "$SCRATCH/right.hdf5" 50 >"$SCRATCH/right.yml"
"$VBENCH" run --profile "$SCRATCH/right.yml" --out "$SCRATCH/right.sqlite" >"$SCRATCH/right.out" 2>"$SCRATCH/right.err"
is "$?" 0 "the right shipped ground truth is accepted and the campaign runs"
like "$(cat "$SCRATCH/right.err")" "shipped neighbours, checked exactly on a sample" "the run says it used the shipped neighbours"
is "$(q "$SCRATCH/right.sqlite" "SELECT printf('%.4f', recall) FROM sweep_result")" "1.0000" \
    "the exact engine scores recall 1 against them"
ls "$VBENCH_CACHE"/gt-*.bin >/dev/null 2>&1
ok $((! $?)) "no ground truth was computed over the whole query set (no gt-*.bin in the cache)"

profile wrong "$SCRATCH/wrong.hdf5" 120 >"$SCRATCH/wrong.yml"
"$VBENCH" run --profile "$SCRATCH/wrong.yml" --out "$SCRATCH/wrong.sqlite" >"$SCRATCH/wrong.out" 2>"$SCRATCH/wrong.err"
rc=$?
[ "$rc" -ne 0 ]; ok $? "a shipped ground truth with one wrong id is refused (exit $rc)"
all=$(cat "$SCRATCH/wrong.err" "$SCRATCH/wrong.out"; q "$SCRATCH/wrong.sqlite" "SELECT message FROM event" 2>/dev/null;
      q "$SCRATCH/wrong.sqlite" "SELECT error FROM plan" 2>/dev/null)
like "$all" "disagrees with the exact neighbours computed here for 1 of 120 sampled queries (query ids 7)" \
    "the refusal names the query that disagrees"
is "$(q "$SCRATCH/wrong.sqlite" "SELECT COUNT(*) FROM sweep_result")" 0 "nothing was measured against it"

cat >"$SCRATCH/synth.yml" <<'YML'
name: synth
datasets:
  - name: s
    source: synthetic
    rows: 100
    queries: 10
    dim: 4
    metric: euclidean
    ground_truth: shipped
engines:
  - {name: exact}
phases:
  build:
YML
out=$("$VBENCH" run --profile "$SCRATCH/synth.yml" --out "$SCRATCH/synth.sqlite" 2>&1)
[ $? -ne 0 ]; ok $? "a synthetic dataset with ground_truth: shipped is refused"
like "$out" "synth.yml:9" "... naming the profile's line: $out"
like "$out" "ships no neighbours" "... and why"
done_testing
