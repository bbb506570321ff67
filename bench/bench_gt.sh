#!/bin/sh
# Ground truth, vbench against numpy: runs bench_gt (C, vb_groundtruth_compute) and then the same k-NN
# computation in numpy (matrix product, argpartition, sort of the k) on the same .npy files in the same run,
# checks that both find the same neighbours, and prints one table. Also prints which BLAS numpy really loaded.
#
# usage: sh bench/bench_gt.sh path/to/bench_gt [bench_gt options, e.g. --rows 20000]
# env:   BENCH_GT_DIR (default /tmp/vbench-bench-gt), BENCH_GT_REPEAT (runs per measurement, default 3),
#        BENCH_GT_ROWS, BENCH_GT_QUERIES, BENCH_GT_DIM (bench_gt's --rows, --queries, --dim: 100000, 1000, 768 unset;
#        make bench-gt passes no options, so these size it; tests/e2e/07-bench-smoke.t runs it at 2,000 x 16)
set -eu
BIN=${1:?usage: bench_gt.sh path/to/bench_gt [options]}
shift
DIR=${BENCH_GT_DIR:-/tmp/vbench-bench-gt}
REPEAT=${BENCH_GT_REPEAT:-3}
PY=/usr/bin/python3   # Debian's python: it has numpy (the python3 on PATH may not)
[ -n "${BENCH_GT_DIM:-}" ] && set -- --dim "$BENCH_GT_DIM" "$@"
[ -n "${BENCH_GT_QUERIES:-}" ] && set -- --queries "$BENCH_GT_QUERIES" "$@"
[ -n "${BENCH_GT_ROWS:-}" ] && set -- --rows "$BENCH_GT_ROWS" "$@"
mkdir -p "$DIR"

echo "== vbench (C): $BIN --dir $DIR --repeat $REPEAT $*"
"$BIN" --dir "$DIR" --repeat "$REPEAT" "$@" | tee "$DIR/vbench.out"

echo "== numpy: same data, same run"
"$PY" - "$DIR" "$REPEAT" <<'PYEOF'
import ctypes, os, re, statistics, sys, time
import numpy as np

d, repeat = sys.argv[1], int(sys.argv[2])
X = np.load(os.path.join(d, "corpus.npy"))
Q = np.load(os.path.join(d, "queries.npy"))

# Which BLAS numpy runs on: the build-time config and the libraries actually mapped into this process.
print("numpy %s; build-time BLAS config:" % np.__version__)
cfg = np.__config__.get_info("blas_opt_info") if hasattr(np.__config__, "get_info") else {}
print("   blas_opt_info:", {k: v for k, v in cfg.items() if k in ("libraries", "library_dirs")})
maps = open("/proc/self/maps").read().split("\n")
libs = sorted({l.split()[-1] for l in maps if re.search(r"blas|lapack", l) and "/" in l})
openblas = None
for lib in libs:
    print("   loaded: %s -> %s" % (lib, os.path.realpath(lib)))
    try:
        h = ctypes.CDLL(lib)
        h.openblas_get_config.restype = ctypes.c_char_p
        openblas = (h.openblas_get_config().decode(), h.openblas_get_num_threads(), os.path.realpath(lib))
    except (OSError, AttributeError):
        pass
if openblas:
    variant = "pthread" if "openblas-pthread" in openblas[2] else ("openmp" if "openmp" in openblas[2] else "serial?")
    print("   numpy runs on %s (%s variant), %d threads" % (openblas[0], variant, openblas[1]))
else:
    print("   WARNING: numpy is not running on OpenBLAS; the comparison is not like for like")

# Agreement: vbench's ids ranked by exact (float64) distance must be at least as close as numpy's at every rank.
def exact(metric, q, rows):
    a = q.astype(np.float64); b = X[rows].astype(np.float64)
    if metric == "euclidean":
        return np.sqrt(((b - a) ** 2).sum(1))
    na, nb = np.linalg.norm(a), np.linalg.norm(b, axis=1)
    return 1.0 - (b @ a) / np.where(nb * na == 0, 1, nb * na)

def knn(metric, k):
    S = Q @ X.T                                   # sgemm, (queries x rows) float32
    if metric == "euclidean":
        S *= -2.0
        S += np.einsum("ij,ij->i", X, X)[None, :]  # |x|^2 - 2<q,x>, same order as |q - x|
    else:
        S *= -1.0 / np.linalg.norm(X, axis=1)[None, :]   # -cos * |q|, same order as 1 - cos
    idx = np.argpartition(S, k - 1, axis=1)[:, :k]
    order = np.argsort(np.take_along_axis(S, idx, 1), axis=1, kind="stable")
    return np.take_along_axis(idx, order, 1)

results = []
for line in open(os.path.join(d, "vbench.out")):
    if line.startswith("RESULT "):
        _, method, metric, sec, qps, cpu = line.split()[:6]
        results.append((method, metric, float(sec), float(cpu)))

ok_all = True
numpy_sec = {}
for metric in ("euclidean", "angular"):
    vb_ids = np.load(os.path.join(d, "vbench_%s_ids.npy" % metric))
    vb_d = np.load(os.path.join(d, "vbench_%s_dists.npy" % metric))
    k = vb_ids.shape[1]
    times, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        np_ids = knn(metric, k)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    numpy_sec[metric] = statistics.median(times)
    results.append(("numpy", metric, numpy_sec[metric], statistics.median(cpu)))
    same = worse = 0
    max_derr = 0.0
    for i in range(len(Q)):
        ev = exact(metric, Q[i], vb_ids[i])
        max_derr = max(max_derr, float(np.max(np.abs(ev - vb_d[i]) / (1 + np.abs(ev)))))
        if set(vb_ids[i]) == set(np_ids[i]):
            same += 1
            continue
        en = np.sort(exact(metric, Q[i], np_ids[i]))
        if np.any(np.sort(ev) > en + 1e-6 * (1 + np.abs(en))):
            worse += 1
    ok_all &= worse == 0 and max_derr < 1e-5
    print("%-9s identical neighbour sets for %d of %d queries; %d where vbench's are farther than numpy's "
          "(must be 0; the others differ only by ties or numpy's float32 rounding); "
          "stored distances within %.1e of float64" % (metric, same, len(Q), worse, max_derr))

print()
print("load average now: %.2f %.2f %.2f (2 cores; foreign load inflates every row alike)" % os.getloadavg())
print("%-22s %-10s %9s %11s %8s %9s" % ("method", "metric", "seconds", "queries/s", "ratio", "cpu-s"))
order = {"numpy": 0}
for method, metric, sec, cpu in sorted(results, key=lambda r: (r[1] != "euclidean", order.get(r[0], 1), r[0])):
    print("%-22s %-10s %9.3f %11.1f %7.2fx %9.2f" % (method, metric, sec, len(Q) / sec, numpy_sec[metric] / sec, cpu))
print("seconds: wall, median of %d runs; ratio = numpy seconds / method seconds (above 1: faster than numpy);" % repeat)
print("cpu-s: CPU seconds of the whole process (all threads), median of %d runs" % repeat)
print("neighbours agree: %s" % ("yes" if ok_all else "NO"))
sys.exit(0 if ok_all else 1)
PYEOF
