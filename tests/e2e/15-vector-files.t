#!/usr/bin/env bash
# A campaign on uint8 vector files with given ground truth: a TEXMEX pair (.bvecs base and queries, .ivecs
# neighbours) and a big-ann pair (.u8bin, .ibin with distances) holding the same values, through the coordinator
# and a real agent. The uint8 corpus is converted once into a float32 cache file per file; a broken ground-truth
# file fails its dataset's items with the file and the query named; a mismatched pair is refused at load time.
. "$(dirname "$0")/../lib/lib.sh"
db="$SCRATCH/files.sqlite"
d="$SCRATCH/data"
mkdir -p "$d"

/usr/bin/python3 - "$d" <<'PY'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(5)
n, q, dim, k = 4000, 100, 32, 10
centres = rng.uniform(40, 215, (16, dim))
def draw(m):
    x = centres[rng.integers(0, 16, m)] + rng.normal(0, 12, (m, dim))
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)
base, qs = draw(n), draw(q)
d2 = ((qs.astype(np.float64)[:, None, :] - base.astype(np.float64)[None, :, :]) ** 2).sum(-1)
ids = np.argsort(d2, axis=1, kind="stable")[:, :k].astype(np.int32)
dist = np.take_along_axis(d2, ids, 1).astype(np.float32)
def bvecs(path, x):
    rows = np.empty((len(x), 4 + x.shape[1]), np.uint8)
    rows[:, :4] = np.frombuffer(np.int32(x.shape[1]).tobytes(), np.uint8)
    rows[:, 4:] = x
    rows.tofile(path)
def u8bin(path, x):
    with open(path, "wb") as f:
        np.array(x.shape, np.uint32).tofile(f)
        x.tofile(f)
def ivecs(path, ids):
    np.hstack([np.full((len(ids), 1), ids.shape[1], np.int32), ids]).tofile(path)
def ibin(path, ids, dist):
    with open(path, "wb") as f:
        np.array(ids.shape, np.uint32).tofile(f)
        ids.astype(np.uint32).tofile(f)
        dist.tofile(f)
bvecs(f"{d}/base.bvecs", base); bvecs(f"{d}/query.bvecs", qs); ivecs(f"{d}/gt.ivecs", ids)
u8bin(f"{d}/base.u8bin", base); u8bin(f"{d}/query.u8bin", qs); ibin(f"{d}/gt.ibin", ids, dist)
bad = ids.copy(); bad[7, 3] = n
ivecs(f"{d}/bad.ivecs", bad)
PY
ok $? "python wrote the .bvecs/.ivecs and .u8bin/.ibin files"

cat >"$SCRATCH/files.yml" <<YML
name: files-e2e
k: 10
datasets:
  - name: texmex-u8
    source: bvecs
    path: $d/base.bvecs
    queries_path: $d/query.bvecs
    groundtruth_path: $d/gt.ivecs
    metric: euclidean
  - name: bigann-u8
    path: $d/base.u8bin
    queries_path: $d/query.u8bin
    groundtruth_path: $d/gt.ibin
    metric: euclidean
engines:
  - name: hnswlib
    m: 16
    ef_construction: 100
  - name: exact
phases:
  build:
  recall_sweep:
    ef_search: [10, 80]
YML

"$VBENCH" run --profile "$SCRATCH/files.yml" --out "$db" >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt"
rc=$?
ok $rc "vbench run on bvecs+ivecs and u8bin+ibin datasets exits 0"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/err.txt" | tail -20
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every plan item done"
is "$(q "$db" "SELECT COUNT(*) FROM build_result WHERE rows = 4000")" "4" "a build of 4000 rows per engine and dataset"
is "$(q "$db" "SELECT COUNT(*) FROM sweep_result WHERE queries = 100")" "8" "two sweep points per engine and dataset"
is "$(q "$db" "SELECT COUNT(*) FROM sweep_result WHERE engine = 'exact' AND (recall <> 1.0 OR short_answers > 0 OR errors > 0)")" \
   "0" "exact: recall exactly 1 on both datasets"
is "$(q "$db" "SELECT COUNT(*) FROM sweep_result WHERE engine = 'hnswlib' AND ef_search = 80 AND recall >= 0.9")" \
   "2" "hnswlib: recall >= 0.9 at ef_search 80 on both datasets"
h1=$(q "$db" "SELECT value FROM manifest WHERE key = 'dataset.texmex-u8.content_hash'")
h2=$(q "$db" "SELECT value FROM manifest WHERE key = 'dataset.bigann-u8.content_hash'")
[ -n "$h1" ] && [ "$h1" = "$h2" ]; ok $? "the same uint8 values in both formats: one content hash ($h1)"
is "$(ls "$VBENCH_CACHE" | grep -c '^bvecs-.*\.f32$') $(ls "$VBENCH_CACHE" | grep -c '^u8bin-.*\.f32$')" "2 2" \
   "each uint8 file converted once into one float32 cache file (opened by two engines)"

# Ground truth naming a row beyond the corpus: that dataset's items fail with the file and the query named.
sed -e "s|$d/gt.ivecs|$d/bad.ivecs|" -e '/- name: bigann-u8/,/metric: euclidean/d' "$SCRATCH/files.yml" >"$SCRATCH/bad.yml"
"$VBENCH" run --profile "$SCRATCH/bad.yml" --out "$SCRATCH/bad.sqlite" >"$SCRATCH/bad.out" 2>&1
is "$?" "1" "a campaign whose ground truth is broken exits 1"
err=$(q "$SCRATCH/bad.sqlite" "SELECT error FROM plan WHERE phase = 'build' AND engine = 'exact'")
like "$err" "bad.ivecs" "the recorded error names the ground-truth file"
like "$err" "query 7, neighbour 3" "the recorded error names the query and the neighbour"
like "$err" "id 4000 is not a row of the corpus (0..3999)" "the recorded error gives the id and the corpus"
is "$(q "$SCRATCH/bad.sqlite" "SELECT COUNT(*) FROM build_result")" "0" "no build row for the broken dataset"

# A big-ann ground-truth file for a TEXMEX source: refused when the profile loads, with line and key.
sed -e "s|$d/gt.ivecs|$d/gt.ibin|" "$SCRATCH/files.yml" >"$SCRATCH/pair.yml"
out=$("$VBENCH" run --profile "$SCRATCH/pair.yml" --out "$SCRATCH/pair.sqlite" 2>&1)
is "$?" "2" "a mismatched pair exits 2"
like "$out" "pair.yml:8: key 'datasets[0].groundtruth_path'" "the error names the file, line and key"
like "$out" "gt.ibin\": source bvecs takes TEXMEX ground truth, a .ivecs file" "the error names the file given"
[ ! -e "$SCRATCH/pair.sqlite" ]; ok $? "no results database for a profile that does not load"
done_testing
