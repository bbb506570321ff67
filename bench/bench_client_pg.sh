#!/usr/bin/env bash
# The client against a real server: vbench's client beside pgbench and a Python-threads client, all three running
# the same kNN query on the same throwaway PostgreSQL 17 + pgvector 0.8.0 (tests/lib/pg-server.sh: the engine
# image db-trixie, chrooted, reached through a unix socket directory; needs root), in one run:
#   1. bench_client_pg load: 20k x 96 angular rows (seeded uniform) into vbench_items through the pgvector engine
#      (binary COPY), HNSW m = 16, ef_construction = 64, and the query vectors written to a file.
#   2. a settle pass (pgbench, 3 s, not counted) so that the first counted window does not meet a cold server;
#      then for each client count N, ROUNDS rounds of one window of each client (round r runs the three in the
#      r-th of the six possible orders, so over six rounds each client runs first, second and third twice and
#      after each of the others as often; each round opens new connections and has its own warm-up):
#      vbench  - bench_client_pg run: vb_workload_run (the concurrency phase's loop), N threads, one connection
#                each; the engine's prepared statement SELECT id FROM vbench_items ORDER BY embedding <=> $1
#                LIMIT 10, vector as a binary parameter, binary result, hnsw.ef_search = 40;
#      pgbench - host pgbench -M prepared -c N -j N -n, one script file per query vector holding the same
#                statement with the vector as a literal (pgbench binds no vector parameter; \set holds numbers
#                only), scripts chosen at random; hnsw.ef_search = 40 through PGOPTIONS. Per-second aggregate log:
#                the first WARMUP seconds are dropped, the next WINDOW counted;
#      python  - /usr/bin/python3 threading + psycopg 3 (Debian's python3-psycopg): N threads, one connection
#                each, the same statement prepared (prepare=True) with the vector as a binary parameter (a dumper
#                for pgvector's binary format), SET hnsw.ef_search = 40, timing around execute + fetchall.
#   3. one table: QPS, mean latency and in flight of each over all rounds, vbench QPS / pgbench QPS pooled over the
#      rounds, the median of the per-round ratios (round i of vbench against round i of pgbench, run next to each
#      other) with a bootstrap 95 % interval, python / pgbench; client CPU per query; each client's own spread
#      (highest / lowest QPS of its rounds: the host's noise); then the goal (vbench >= 0.97 x pgbench) per count.
#   4. the driver call alone, load-proof (bench_client_pg pair): on one thread, query by query, vbench's call and
#      pgbench's statement alternate (BENCH_PAIRS pairs, the order swapped every pair), once as the bench's windows
#      run it (no io bound) and once with io_timeout_s 3600 (the bounded wait a campaign's default
#      limits.phase_timeout_s turns on). Separate windows on a shared host move by 1.3-2x between rounds (the
#      spread column); calls that alternate within microseconds see the same host, so this ratio shows whether
#      vbench's own path (engine, libpq calls, the bounded wait) costs more than pgbench's per query.
# Layout (BENCH_LAYOUT): split (default) puts the server and the clients on separate CPUs, as the stand runs them
# (docs/design.md §1: the client pinned to its cores, the server unit to its own; here the budget's `small` split: the
# clients get the last fifth of the CPUs, at least one, the server the rest), so a client's cost shows as its own
# CPU and the server's CPU is the server's. shared leaves everything unpinned: four or more threads on two CPUs,
# where the scheduler's placement (a client next to its backend or not) moves QPS by up to 2x between windows
# of the same client (docs/benchmarks.md).
# The server is always stopped (trap).
#
# usage: bash bench/bench_client_pg.sh path/to/bench_client_pg
# env:   BENCH_LAYOUT (split | shared), BENCH_CLIENTS (default 1,2,4,8,16,32), BENCH_ROUNDS (6),
#        BENCH_WINDOW (whole seconds per round, 2),
#        BENCH_WARMUP (whole seconds, 1), BENCH_ROWS (20000), BENCH_DIM (96), BENCH_QUERIES (8, at most 128:
#        pgbench's script limit; few, so that pgbench's lazy per-connection PREPARE of each script, about
#        0.15 ms of server time each, happens in the warm-up even at 32 clients), BENCH_EF (40), BENCH_PAIRS (3000)
set -u
BIN=${1:?usage: bench_client_pg.sh path/to/bench_client_pg}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CLIENTS=${BENCH_CLIENTS:-1,2,4,8,16,32}
WINDOW=${BENCH_WINDOW:-2}
WARMUP=${BENCH_WARMUP:-1}
ROUNDS=${BENCH_ROUNDS:-6}
LAYOUT=${BENCH_LAYOUT:-split}
ROWS=${BENCH_ROWS:-20000}
DIM=${BENCH_DIM:-96}
NQ=${BENCH_QUERIES:-8}
EF=${BENCH_EF:-40}
PAIRS=${BENCH_PAIRS:-3000}
PY=/usr/bin/python3
PGBENCH=$(command -v pgbench || true)

. "$ROOT/tests/lib/pg-server.sh"
why=$(vb_pg_skip_reason)
[ -z "$PGBENCH" ] && why="${why:+$why; }no pgbench (apt-get install postgresql-contrib)"
"$PY" -c 'import psycopg' 2>/dev/null || why="${why:+$why; }no psycopg 3 for $PY (apt-get install python3-psycopg)"
case $LAYOUT in
split) command -v taskset >/dev/null || why="${why:+$why; }no taskset (util-linux) for BENCH_LAYOUT=split"
       [ "$(nproc)" -ge 2 ] || why="${why:+$why; }BENCH_LAYOUT=split needs 2 CPUs or more (BENCH_LAYOUT=shared runs on one)" ;;
shared) ;;
*) echo "bench-client-pg: BENCH_LAYOUT must be split or shared, not '$LAYOUT'" >&2; exit 2 ;;
esac
if [ -n "$why" ]; then echo "bench-client-pg: cannot run: $why" >&2; exit 1; fi
[ "$NQ" -ge 1 ] && [ "$NQ" -le 128 ] || { echo "bench-client-pg: BENCH_QUERIES must be 1..128" >&2; exit 2; }

SCRATCH=$(mktemp -d /tmp/vbench-bench-pg.XXXXXX)
trap 'vb_pg_stop; rm -rf "$SCRATCH"' EXIT
trap 'exit 130' INT TERM
PW=vbench-bench-$$
DIR=$SCRATCH/pg
OUT=$SCRATCH/results.txt
export PGPASSWORD=$PW

echo "== host: $(nproc) CPUs online, load average $(cut -d' ' -f1-3 /proc/loadavg)"
CL=()   # prefix of every client command
if [ "$LAYOUT" = split ]; then
    # The allowed CPUs in order; the clients take the last fifth (at least one), the server the others.
    mapfile -t cpus < <(taskset -cp $$ | sed 's/.*: //' | tr ',' '\n' |
                        awk -F- '{ hi = NF > 1 ? $2 : $1; for (c = $1; c <= hi; c++) print c }')
    nc=$(( ${#cpus[@]} / 5 )); [ "$nc" -ge 1 ] || nc=1
    VB_PG_CPUS=$(IFS=,; echo "${cpus[*]:0:${#cpus[@]}-nc}")
    CLIENT_CPUS=$(IFS=,; echo "${cpus[*]: -nc}")
    export VB_PG_CPUS
    CL=(taskset -c "$CLIENT_CPUS")
    echo "== layout split: server on CPUs $VB_PG_CPUS, clients on CPUs $CLIENT_CPUS"
else
    echo "== layout shared: server and clients unpinned on CPUs $(taskset -cp $$ | sed 's/.*: //')"
fi
vb_pg_start "$DIR" "$PW" || { echo "bench-client-pg: the server did not start" >&2; exit 1; }
echo "== server: $(vb_pg_psql 'SELECT version()' | cut -d, -f1) from $(vb_pg_image), socket in $DIR"
SECONDS=0
"${CL[@]}" "$BIN" load --host "$DIR" --password "$PW" --rows "$ROWS" --dim "$DIM" --queries "$NQ" \
    --queries-out "$SCRATCH/queries.txt" || exit 1
echo "== load + build: $SECONDS s"

# pgbench: one script per query vector, the engine's statement with the vector as a literal.
scripts=()
i=0
while IFS= read -r v; do
    i=$((i + 1))
    printf "SELECT id FROM vbench_items ORDER BY embedding <=> '%s' LIMIT 10;\n" "$v" >"$SCRATCH/q$i.sql"
    scripts+=(-f "$SCRATCH/q$i.sql@1")
done <"$SCRATCH/queries.txt"
export PGOPTIONS="-c hnsw.ef_search=$EF"
# Checks with the host's psql on a session set up as pgbench's: the setting is pgvector's, the plan the index.
efs=$(psql -X -h "$DIR" -U postgres -d postgres -Atq -c "SELECT '[1]'::vector" -c "SHOW hnsw.ef_search" | tail -1)
plan=$(psql -X -h "$DIR" -U postgres -d postgres -Atq -c "EXPLAIN (COSTS OFF) $(cat "$SCRATCH/q1.sql")" | tr -s ' \n' ' ')
echo "== pgbench sessions: hnsw.ef_search = $efs; plan of a script's statement: $(echo "$plan" | sed "s/'\[[^]]*\]'/'[...]'/")"
echo "== $($PGBENCH --version); $PY $($PY -c 'import sys, psycopg; from psycopg import pq; print(sys.version.split()[0], "psycopg", psycopg.__version__, "libpq wrapper:", pq.__impl__)')"
echo "== windows: $ROUNDS rounds of $WARMUP s warm-up + $WINDOW s, closed loop, clients $CLIENTS, $NQ query vectors, ef_search $EF, k 10, layout $LAYOUT"

run_pgbench() { # N: prints "RESULT pgbench N qps mean_ms in_flight errors queries cpu_us_per_query"
    local n=$1 logdir=$SCRATCH/pgbench TIMEFORMAT='%U %S' cpu
    rm -rf "$logdir" && mkdir -p "$logdir"
    cpu=$( { time "${CL[@]}" "$PGBENCH" -h "$DIR" -U postgres -n -M prepared -c "$n" -j "$n" -T $((WARMUP + WINDOW + 1)) \
        -l --aggregate-interval=1 --log-prefix="$logdir/log" "${scripts[@]}" postgres \
        >"$logdir/out.txt" 2>"$logdir/err.txt"; } 2>&1 )
    grep -q '^number of transactions actually processed' "$logdir/out.txt" ||
        { sed 's/^/# pgbench: /' "$logdir/err.txt" | tail -5 >&2; return 1; }
    # Aggregate log lines: interval_start num_transactions sum_latency sum_latency_2 min max (latency in us),
    # 1 s intervals from each thread's start: drop the first WARMUP, count the next WINDOW.
    awk -v n="$n" -v warm="$WARMUP" -v win="$WINDOW" -v cpu="$cpu" -v out="$logdir/out.txt" '
        FNR == 1 { k = 0 }
        { k++; all += $2; if (k > warm && k <= warm + win) { q += $2; lat += $3 } }
        END {
            fails = 0
            while ((getline line < out) > 0) if (line ~ /^number of failed transactions:/) { split(line, f, " "); fails = f[5] }
            split(cpu, c, " ")
            printf "RESULT pgbench %d %.1f %.4f %.3f %d %d %.2f\n", n, q / win, q ? lat / q / 1000 : 0,
                   lat / (win * 1e6), fails, q, all ? (c[1] + c[2]) / all * 1e6 : 0
        }' "$logdir"/log.*
}

run_python() { # N
    "${CL[@]}" "$PY" - "$DIR" "$PW" "$SCRATCH/queries.txt" "$1" "$WINDOW" "$WARMUP" "$EF" <<'PYEOF'
import struct, sys, threading, time
import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format

host, pw, qfile, n, window, warmup, ef = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), \
    float(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7])
SQL = "SELECT id FROM vbench_items ORDER BY embedding <=> %b LIMIT 10"

class Vec:
    """A query vector already in pgvector's binary format (int16 dim, int16 0, dim float4, big-endian)."""
    __slots__ = ("b",)
    def __init__(self, values):
        self.b = struct.pack(">hh%df" % len(values), len(values), 0, *values)

class VecDumper(Dumper):
    format = Format.BINARY
    oid = 0
    def dump(self, obj):
        return obj.b

queries = [Vec([float(x) for x in line.strip()[1:-1].split(",")]) for line in open(qfile) if line.startswith("[")]

def connect():
    conn = psycopg.connect(host=host, user="postgres", password=pw, dbname="postgres", autocommit=True,
                           application_name="vbench-bench-python")
    conn.execute("SET plan_cache_mode = force_generic_plan")   # as the engine does
    conn.execute("SET hnsw.ef_search = %d" % ef)
    if not VecDumper.oid:
        VecDumper.oid = conn.execute("SELECT 'vector'::regtype::oid").fetchone()[0]
    conn.adapters.register_dumper(Vec, VecDumper)
    return conn

conns = [connect() for _ in range(n)]
barrier = threading.Barrier(n + 1)
bounds = [0.0, 0.0]
results = [None] * n

def worker(i):
    conn = conns[i]
    cur = conn.cursor(binary=True)
    execute, fetchall, perf = cur.execute, cur.fetchall, time.perf_counter
    nq = len(queries)
    j = (i * nq) // n                    # each client walks the query set from its own offset
    lat, in_call, done, errors = [], 0.0, 0, 0
    barrier.wait()
    t0, t1 = bounds
    while True:
        s = perf()
        if s >= t1:
            break
        try:
            execute(SQL, (queries[j],), prepare=True)
            fetchall()
        except psycopg.Error:
            errors += 1
        e = perf()
        done += 1
        j = j + 1 if j + 1 < nq else 0
        lo, hi = (s if s > t0 else t0), (e if e < t1 else t1)
        if hi > lo:
            in_call += hi - lo
        if s >= t0 and e < t1:
            lat.append(e - s)
    results[i] = (lat, in_call, done, errors)

threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
for t in threads:
    t.start()
cpu0 = time.process_time()
bounds[0] = time.perf_counter() + warmup
bounds[1] = bounds[0] + window
barrier.wait()
for t in threads:
    t.join()
cpu = time.process_time() - cpu0
q = sum(len(r[0]) for r in results)
lat = sum(sum(r[0]) for r in results)
print("RESULT python %d %.1f %.4f %.3f %d %d %.2f" % (n, q / window, lat / q * 1e3 if q else 0,
      sum(r[1] for r in results) / window, sum(r[3] for r in results), q,
      cpu / max(1, sum(r[2] for r in results)) * 1e6))
for c in conns:
    c.close()
PYEOF
}

# Settle pass, not counted: the first counted window would otherwise meet cold caches and a server that has
# just built its index.
"${CL[@]}" "$PGBENCH" -h "$DIR" -U postgres -n -M prepared -c 2 -j 2 -T 3 "${scripts[@]}" postgres >/dev/null 2>&1

# Per client count, ROUNDS rounds of one window of each client, round r in the r-th of the six orders of the
# three: the host's other load (and any drift) then falls on the three alike, and no client always runs right
# after the same other one.
orders=("vbench pgbench python" "pgbench python vbench" "python vbench pgbench"
        "vbench python pgbench" "python pgbench vbench" "pgbench vbench python")
rc=0
for n in ${CLIENTS//,/ }; do
    l0=$(cut -d' ' -f1 /proc/loadavg)
    for r in $(seq 1 "$ROUNDS"); do
        for kind in ${orders[$(( (r - 1) % 6 ))]}; do
            case $kind in
            vbench) "${CL[@]}" "$BIN" run --host "$DIR" --password "$PW" --queries-in "$SCRATCH/queries.txt" --rows "$ROWS" \
                        --clients "$n" --window "$WINDOW" --warmup "$WARMUP" --ef-search "$EF" >>"$OUT" ;;
            pgbench) run_pgbench "$n" >>"$OUT" ;;
            python) run_python "$n" >>"$OUT" ;;
            esac || { echo "bench-client-pg: $kind, $n clients, round $r failed" >&2; rc=1; }
        done
    done
    echo "LOAD $n $l0 $(cut -d' ' -f1 /proc/loadavg)" >>"$OUT"
    grep "^RESULT [a-z]* $n " "$OUT" | sed 's/^/   /'
done

"$PY" - "$OUT" "$WINDOW" "$ROUNDS" "$LAYOUT" <<'PYEOF'
import os, random, statistics, sys
runs, load = {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "RESULT":
        runs.setdefault((f[1], int(f[2])), []).append([float(x) for x in f[3:]])
    elif f[0] == "LOAD":
        load[int(f[1])] = (f[2], f[3])
window, rounds, layout = float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
kinds = ("vbench", "pgbench", "python")
names = {"vbench": "vbench (C, libpq)", "pgbench": "pgbench -M prepared", "python": "Python threads, psycopg 3"}
GOAL = 0.97

def total(rs):
    """Rounds summed: qps over all windows, mean latency and cpu/query weighted by queries, in flight averaged."""
    if not rs:
        return None
    q = sum(r[4] for r in rs) or 1
    return [sum(r[4] for r in rs) / (window * len(rs)), sum(r[1] * r[4] for r in rs) / q,
            sum(r[2] for r in rs) / len(rs), sum(r[3] for r in rs), q, sum(r[5] * r[4] for r in rs) / q, len(rs)]

def cell(v):
    return ("%8.0f %8.3f %7.2f" % (v[0], v[1], v[2])) if v else "%8s %8s %7s" % ("-", "-", "-")

def ratio(a, b):
    return ("%7.3f" % (a[0] / b[0])) if a and b and b[0] else "%7s" % "-"

def per_round(kind, n):
    """vbench / pgbench (or python / pgbench) QPS of the same round: the two ran within seconds of each other."""
    return [a[0] / b[0] for a, b in zip(runs.get((kind, n), []), runs.get(("pgbench", n), [])) if b[0]]

def median_ci(xs, seed=1, resamples=2000):
    """Median of the per-round ratios and a percentile-bootstrap 95 % interval of it (seeded: reproducible)."""
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(resamples))
    return statistics.median(xs), meds[int(0.025 * resamples)], meds[int(0.975 * resamples) - 1]

print()
print("%d rounds x %g s windows per client and count (six orders of the three, in turn), closed loop, layout %s; "
      "load average now %.2f %.2f %.2f" % ((rounds, window, layout) + os.getloadavg()))
print("%7s | " % "" + " | ".join("%-25s" % names[k] for k in kinds) +
      " | vbench/pgbench: pooled  median [95 % CI]   | python/ | cpu us/query (client) |")
print("%7s | " % "clients" + " | ".join("%8s %8s %7s" % ("qps", "mean_ms", "flight") for _ in kinds) +
      " |                 %-25s | pgbench | vbench pgbench python | load 1m" % "of the per-round ratios")
counts = sorted({k[1] for k in runs})
verdicts = {}
for n in counts:
    t = [total(runs.get((k, n))) for k in kinds]
    per = per_round("vbench", n)
    if per:
        med, lo, hi = median_ci(per)
        stat = "%.3f [%.3f-%.3f]" % (med, lo, hi)
        verdicts[n] = ("met" if med >= GOAL else "not met" if hi < GOAL else "not shown: the interval holds %.2f" % GOAL,
                       med, lo, hi, min(per), max(per))
    else:
        stat = "-"
    cpu = " ".join(("%6.1f" % x[5]) if x else "%6s" % "-" for x in t)
    ld = load.get(n, ("-", "-"))
    print("%7d | " % n + " | ".join(cell(x) for x in t) + " | %s  %-25s | %s | %s | %s-%s" % (
        ratio(t[0], t[1]), stat, ratio(t[2], t[1]), cpu, ld[0], ld[1]))

print()
print("noise and goal: each client's own spread (highest / lowest QPS of its rounds) and the range of the")
print("per-round vbench/pgbench ratios; goal: vbench >= %.2f x pgbench (median of the per-round ratios)" % GOAL)
print("%7s | %-20s | %-14s | %s" % ("clients", "spread vb/pgb/py", "vb/pgb rounds", "goal"))
for n in counts:
    sp = []
    for k in kinds:
        q = [r[0] for r in runs.get((k, n), []) if r[0] > 0]
        sp.append(("%.2f" % (max(q) / min(q))) if q else "-")
    v = verdicts.get(n)
    rr = ("%.2f-%.2f" % (v[4], v[5])) if v else "-"
    print("%7d | %-20s | %-14s | %s" % (n, " ".join(sp), rr, v[0] if v else "-"))
errs = {k: sum(int(v[3]) for (kk, _), rs in runs.items() if kk == k for v in rs) for k in kinds}
print()
print("failed queries: " + ", ".join("%s %d" % (k, errs[k]) for k in kinds))
print("qps: counted queries of all rounds / (rounds x window); mean_ms: mean latency of the counted queries;")
print("flight: in-call time / window (pgbench: sum of the latencies of the transactions logged in the window /")
print("window), averaged over rounds; pooled: vbench qps / pgbench qps above; median: of the ratios of single")
print("rounds (round i of vbench against round i of pgbench, seconds apart), 95 % CI by percentile bootstrap")
print("(2000 resamples, seeded); cpu us/query: the client's CPU time over its whole run / every query it ran")
print("(vbench: its worker threads; pgbench, python: the whole process).")
PYEOF

# The driver call alone, interleaved query by query on one thread (step 4 above).
echo
echo "driver call alone, vbench's and pgbench's alternating query by query on one thread ($PAIRS pairs after 200"
echo "warm-up, the same query vector in a pair, the order swapped every pair; load-proof where windows are not):"
for bound in 0 3600; do
    res=$("${CL[@]}" "$BIN" pair --host "$DIR" --password "$PW" --queries-in "$SCRATCH/queries.txt" --rows "$ROWS" \
          --pairs "$PAIRS" --ef-search "$EF" --io-timeout "$bound") || { echo "bench-client-pg: pair failed" >&2; rc=1; }
    # RESULT pair PAIRS VBENCH_US PGBENCH_US RATIO ERRORS
    set -- $res
    [ "${1:-}" = RESULT ] && printf '  %-42s vbench %8.1f us, pgbench %8.1f us per query: vbench/pgbench %s\n' \
        "$([ $bound = 0 ] && echo "no io bound (as the windows above)" || echo "io_timeout_s $bound (a campaign's wait)")" \
        "$4" "$5" "$6"
done
exit $rc
