#!/bin/sh
# Client overhead, vbench's C client against a Python-threads client, over the same engines: runs bench_client
# (the agent's workload loop on the built-in "null" and "sleep" engines), then the same closed loop in Python
# threads (Debian's /usr/bin/python3, threading, ctypes) calling the same engine code from a shared library,
# and prints one table per engine with both clients side by side.
#
# Python variants: "py" loads the library with ctypes.CDLL, which releases the GIL for the duration of the call
# (the driver call itself runs in parallel; the loop's own bookkeeping - perf_counter, list append, argument
# conversion - needs the GIL); "py-gil" loads it with ctypes.PyDLL, which keeps the GIL during the call, like a
# driver that never releases it. Both loops mirror the C loop: clock before and after the call, the latency
# kept (a list append), a query counted when it started and finished inside the window, in-call time clipped
# to the window.
#
# usage: sh bench/bench_client.sh path/to/bench_client path/to/libvbpyengine.so
# env:   BENCH_CLIENTS (default 1,2,4,8,16,32), BENCH_WINDOW (s, default 2), BENCH_WARMUP (s, default 0.2),
#        BENCH_SERVICE_US (sleep engine, default 1000), BENCH_PIN (CPU list for the C client's threads, default none)
set -eu
BIN=${1:?usage: bench_client.sh path/to/bench_client path/to/libvbpyengine.so}
LIB=${2:?usage: bench_client.sh path/to/bench_client path/to/libvbpyengine.so}
CLIENTS=${BENCH_CLIENTS:-1,2,4,8,16,32}
WINDOW=${BENCH_WINDOW:-2}
WARMUP=${BENCH_WARMUP:-0.2}
SERVICE=${BENCH_SERVICE_US:-1000}
PY=/usr/bin/python3
OUT=$(mktemp /tmp/vbench-bench-client.XXXXXX)
trap 'rm -f "$OUT"' EXIT

echo "== host: $(nproc) CPUs online, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== C client: $BIN --clients $CLIENTS --window $WINDOW --warmup $WARMUP --service-us $SERVICE ${BENCH_PIN:+--pin $BENCH_PIN}"
"$BIN" --clients "$CLIENTS" --window "$WINDOW" --warmup "$WARMUP" --service-us "$SERVICE" ${BENCH_PIN:+--pin "$BENCH_PIN"} \
    | tee -a "$OUT" | grep -v '^RESULT'

echo "== Python client: $PY $($PY -c 'import sys; print(sys.version.split()[0])'), threading + ctypes over $LIB"
"$PY" - "$LIB" "$CLIENTS" "$WINDOW" "$WARMUP" "$SERVICE" >>"$OUT" <<'PYEOF'
import ctypes, sys, threading, time

lib_path, counts, window, warmup, service = sys.argv[1], [int(c) for c in sys.argv[2].split(",")], \
    float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
K = 10

def load(kind):
    lib = ctypes.CDLL(lib_path) if kind == "py" else ctypes.PyDLL(lib_path)
    lib.vbpy_open.restype = ctypes.c_void_p
    lib.vbpy_open.argtypes = [ctypes.c_char_p, ctypes.c_uint]
    lib.vbpy_search.restype = ctypes.c_int
    lib.vbpy_search.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int64)]
    lib.vbpy_close.argtypes = [ctypes.c_void_p]
    return lib

def window_run(lib, h, n):
    barrier = threading.Barrier(n + 1)
    bounds = [0.0, 0.0]
    results = [None] * n

    def worker(i):
        search, perf, thread_time = lib.vbpy_search, time.perf_counter, time.thread_time
        ids = (ctypes.c_int64 * K)()
        lat = []
        barrier.wait()
        t0, t1 = bounds
        q, in_call, cpu0 = 0, 0.0, None
        while True:
            s = perf()
            if s >= t1:
                break
            if cpu0 is None and s >= t0:
                cpu0 = thread_time()
            search(h, K, ids)
            e = perf()
            lo, hi = (s if s > t0 else t0), (e if e < t1 else t1)
            if hi > lo:
                in_call += hi - lo
            if s >= t0 and e < t1:
                q += 1
                lat.append(e - s)
        results[i] = (q, in_call, thread_time() - cpu0 if cpu0 is not None else 0.0)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    bounds[0] = time.perf_counter() + warmup
    bounds[1] = bounds[0] + window
    barrier.wait()
    for t in threads:
        t.join()
    return results

for kind, engines in (("py", ("null", "sleep")), ("py-gil", ("sleep",))):
    lib = load(kind)
    for engine in engines:
        h = lib.vbpy_open(engine.encode(), service)
        for n in counts:
            res = window_run(lib, h, n)
            q = sum(r[0] for r in res) or 1
            in_call = sum(r[1] for r in res)
            cpu = sum(r[2] for r in res)
            fr = [r[1] / window for r in res]
            print("RESULT %s %s %d %.1f %.4f %.4f %.4f %.4f %.4f %.4f" % (
                kind, engine, n, q / window, (n * window - in_call) / q * 1e6, cpu / q * 1e6, in_call / window,
                min(fr), sum(fr) / n, cpu), flush=True)
        lib.vbpy_close(h)
PYEOF

"$PY" - "$OUT" "$WINDOW" "$SERVICE" <<'PYEOF'
import os, sys
rows = {}
for line in open(sys.argv[1]):
    if line.startswith("RESULT "):
        f = line.split()
        rows[(f[1], f[2], int(f[3]))] = [float(x) for x in f[4:]]
window, service = sys.argv[2], sys.argv[3]
cols = ("qps", "overhead_us", "cpu_us/q", "in_flight", "frac_min")

def cell(v):
    return ("%9.0f %11.3f %9.3f %9.2f %8.3f" % tuple(v[:5])) if v else "%9s %11s %9s %9s %8s" % (("-",) * 5)

print()
print("load average now: %.2f %.2f %.2f; windows of %s s, closed loop; sleep engine: %s us" % (
    os.getloadavg() + (window, service)))
for engine in ("null", "sleep"):
    kinds = ("c", "py") + (("py-gil",) if engine == "sleep" else ())
    names = {"c": "C client (vbench)", "py": "Python threads, ctypes.CDLL (GIL released)",
             "py-gil": "Python threads, ctypes.PyDLL (GIL held)"}
    print()
    print("engine %s" % engine)
    print("%7s | " % "" + " | ".join("%-50s" % names[k] for k in kinds))
    print("%7s | " % "clients" + " | ".join("%9s %11s %9s %9s %8s" % cols for _ in kinds))
    for n in sorted({k[2] for k in rows if k[1] == engine}):
        print("%7d | " % n + " | ".join(cell(rows.get((k, engine, n))) for k in kinds))
print()
print("overhead_us: time outside the driver call per query, (clients x window - in-call time) / queries, in us;")
print("cpu_us/q: the client threads' CPU time per query; in_flight: in-call time / window; frac_min: the lowest")
print("fraction of the window one client spent inside calls.")
PYEOF
