#!/usr/bin/env bash
# The client against a real server: vbench's client beside pgbench and a Python-threads client, all three running
# the same kNN query on the same throwaway PostgreSQL 17 + pgvector 0.8.0 (tests/e2e/pg-server.sh: the engine
# image db-trixie, chrooted, reached through a unix socket directory; needs root), in one run:
#   1. bench_client_pg load: 20k x 96 angular rows (seeded uniform) into vbench_items through the pgvector engine
#      (binary COPY), HNSW m = 16, ef_construction = 64, and the query vectors written to a file.
#   2. for each client count N, ROUNDS rounds of one window of each client (the order rotated every round; each
#      round opens new connections and has its own warm-up):
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
#   3. one table: QPS, mean latency and in flight of each over all rounds, vbench QPS / pgbench QPS (and its range
#      over the rounds), python / pgbench; client CPU per query.
# The server is always stopped (trap).
#
# usage: bash bench/bench_client_pg.sh path/to/bench_client_pg
# env:   BENCH_CLIENTS (default 1,2,4,8,16,32), BENCH_ROUNDS (5), BENCH_WINDOW (whole seconds per round, 2),
#        BENCH_WARMUP (whole seconds, 1), BENCH_ROWS (20000), BENCH_DIM (96), BENCH_QUERIES (8, at most 128:
#        pgbench's script limit; few, so that pgbench's lazy per-connection PREPARE of each script, about
#        0.15 ms of server time each, happens in the warm-up even at 32 clients), BENCH_EF (40)
set -u
BIN=${1:?usage: bench_client_pg.sh path/to/bench_client_pg}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CLIENTS=${BENCH_CLIENTS:-1,2,4,8,16,32}
WINDOW=${BENCH_WINDOW:-2}
WARMUP=${BENCH_WARMUP:-1}
ROUNDS=${BENCH_ROUNDS:-5}
ROWS=${BENCH_ROWS:-20000}
DIM=${BENCH_DIM:-96}
NQ=${BENCH_QUERIES:-8}
EF=${BENCH_EF:-40}
PY=/usr/bin/python3
PGBENCH=$(command -v pgbench || true)

. "$ROOT/tests/e2e/pg-server.sh"
why=$(vb_pg_skip_reason)
[ -z "$PGBENCH" ] && why="${why:+$why; }no pgbench (apt-get install postgresql-contrib)"
"$PY" -c 'import psycopg' 2>/dev/null || why="${why:+$why; }no psycopg 3 for $PY (apt-get install python3-psycopg)"
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
vb_pg_start "$DIR" "$PW" || { echo "bench-client-pg: the server did not start" >&2; exit 1; }
echo "== server: $(vb_pg_psql 'SELECT version()' | cut -d, -f1) from $(vb_pg_image), socket in $DIR"
SECONDS=0
"$BIN" load --host "$DIR" --password "$PW" --rows "$ROWS" --dim "$DIM" --queries "$NQ" \
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
echo "== windows: $ROUNDS rounds of $WARMUP s warm-up + $WINDOW s, closed loop, clients $CLIENTS, $NQ query vectors, ef_search $EF, k 10"

run_pgbench() { # N: prints "RESULT pgbench N qps mean_ms in_flight errors queries cpu_us_per_query"
    local n=$1 logdir=$SCRATCH/pgbench TIMEFORMAT='%U %S' cpu
    rm -rf "$logdir" && mkdir -p "$logdir"
    cpu=$( { time "$PGBENCH" -h "$DIR" -U postgres -n -M prepared -c "$n" -j "$n" -T $((WARMUP + WINDOW + 1)) \
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
    "$PY" - "$DIR" "$PW" "$SCRATCH/queries.txt" "$1" "$WINDOW" "$WARMUP" "$EF" <<'PYEOF'
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

# Per client count, ROUNDS rounds of one window of each client, the order rotated every round: the host's other
# load (and any drift) then falls on the three alike instead of on whichever ran in a bad moment.
rc=0
for n in ${CLIENTS//,/ }; do
    l0=$(cut -d' ' -f1 /proc/loadavg)
    order=(vbench pgbench python)
    for r in $(seq 1 "$ROUNDS"); do
        for kind in "${order[@]}"; do
            case $kind in
            vbench) "$BIN" run --host "$DIR" --password "$PW" --queries-in "$SCRATCH/queries.txt" --rows "$ROWS" \
                        --clients "$n" --window "$WINDOW" --warmup "$WARMUP" --ef-search "$EF" >>"$OUT" ;;
            pgbench) run_pgbench "$n" >>"$OUT" ;;
            python) run_python "$n" >>"$OUT" ;;
            esac || { echo "bench-client-pg: $kind, $n clients, round $r failed" >&2; rc=1; }
        done
        order=("${order[@]:1}" "${order[0]}")
    done
    echo "LOAD $n $l0 $(cut -d' ' -f1 /proc/loadavg)" >>"$OUT"
    grep "^RESULT [a-z]* $n " "$OUT" | sed 's/^/   /'
done

"$PY" - "$OUT" "$WINDOW" "$ROUNDS" <<'PYEOF'
import os, sys
runs, load = {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "RESULT":
        runs.setdefault((f[1], int(f[2])), []).append([float(x) for x in f[3:]])
    elif f[0] == "LOAD":
        load[int(f[1])] = (f[2], f[3])
window, rounds = float(sys.argv[2]), int(sys.argv[3])
kinds = ("vbench", "pgbench", "python")
names = {"vbench": "vbench (C, libpq)", "pgbench": "pgbench -M prepared", "python": "Python threads, psycopg 3"}

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

print()
print("%d rounds x %g s windows per client and count (order rotated each round), closed loop; load average now "
      "%.2f %.2f %.2f" % ((rounds, window) + os.getloadavg()))
print("%7s | " % "" + " | ".join("%-25s" % names[k] for k in kinds) +
      " | vbench/  python/ vbench/pgbench | cpu us/query (client) |")
print("%7s | " % "clients" + " | ".join("%8s %8s %7s" % ("qps", "mean_ms", "flight") for _ in kinds) +
      " | pgbench  pgbench  per round    | vbench pgbench python | load 1m")
for n in sorted({k[1] for k in runs}):
    t = [total(runs.get((k, n))) for k in kinds]
    per = [a[0] / b[0] for a, b in zip(runs.get(("vbench", n), []), runs.get(("pgbench", n), [])) if b[0]]
    spread = ("%.2f-%.2f" % (min(per), max(per))) if per else "-"
    cpu = " ".join(("%6.1f" % x[5]) if x else "%6s" % "-" for x in t)
    ld = load.get(n, ("-", "-"))
    print("%7d | " % n + " | ".join(cell(x) for x in t) + " | %s  %s  %-13s | %s | %s-%s" % (
        ratio(t[0], t[1]), ratio(t[2], t[1]), spread, cpu, ld[0], ld[1]))
errs = {k: sum(int(v[3]) for (kk, _), rs in runs.items() if kk == k for v in rs) for k in kinds}
print()
print("failed queries: " + ", ".join("%s %d" % (k, errs[k]) for k in kinds))
print("qps: counted queries of all rounds / (rounds x window); mean_ms: mean latency of the counted queries;")
print("flight: in-call time / window (pgbench: sum of the latencies of the transactions logged in the window /")
print("window), averaged over rounds; per round: the lowest and highest vbench/pgbench QPS ratio of a single round")
print("(round i of vbench against round i of pgbench); cpu us/query: the client's CPU time over its whole run /")
print("every query it ran (vbench: its worker threads; pgbench, python: the whole process).")
PYEOF
exit $rc
