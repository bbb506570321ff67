#!/usr/bin/env bash
# The mariadb engine adapter against a real MariaDB 11.8 from the engine image (deploy/image-build db-trixie):
# the server runs chrooted in the image in a private mount namespace (tests/e2e/mariadb-server.sh), reached
# through its socket file. First the C driver (tests/tools/vb_mariadb_check.c): create, parallel load, recall
# against a brute-force scan (euclidean and angular), mhnsw_ef_search, the filter, remove / insert, sizes,
# version, EXPLAIN, and errors with the server's text. Then a small campaign end to end through
# `vbench run --profile FILE` with engine mariadb. The server is always stopped (trap). Needs root and the image;
# skipped without them.
. "$(dirname "$0")/lib.sh"
vb_ensure_image db-trixie
. "$(dirname "$0")/mariadb-server.sh"
TOOLS=${VB_TOOLS:-$(cd "$VB_BIN/.." && pwd)/build/tools}

if [ "$(id -u)" -ne 0 ]; then echo "1..0 # SKIP needs root (mount namespace, chroot)"; exit 0; fi
if [ -z "$MDB_IMG" ] || [ ! -x "$MDB_IMG/usr/sbin/mariadbd" ]; then
    echo "1..0 # SKIP no engine image with MariaDB (make image)"; exit 0
fi
if [ ! -x "$TOOLS/vb_mariadb_check" ]; then echo "1..0 # SKIP $TOOLS/vb_mariadb_check not built (make unit)"; exit 0; fi

trap 'mdb_stop; rm -rf "$SCRATCH"' EXIT
mdb_start "$SCRATCH/my" 2>"$SCRATCH/start.err"
ok $? "MariaDB starts from the image ($MDB_IMG)" || { sed 's/^/# /' "$SCRATCH/start.err"; done_testing; exit 1; }

# --- the adapter, driven directly ----------------------------------------------------------------------------
"$TOOLS/vb_mariadb_check" "$MDB_SOCK" >"$SCRATCH/check.out" 2>&1
check_rc=$?
grep -v '^1\.\.' "$SCRATCH/check.out" | while IFS= read -r line; do
    case "$line" in
        "ok "*|"not ok "*) n=$(echo "$line" | sed -E 's/^(not )?ok [0-9]+ - //'); echo "$line" | grep -q '^ok' &&
            echo "ok - $n" || echo "not ok - $n" ;;
        *) echo "$line" ;;
    esac
done
n_ok=$(grep -c '^ok ' "$SCRATCH/check.out")
n_bad=$(grep -c '^not ok ' "$SCRATCH/check.out")
T_N=$((T_N + n_ok + n_bad))
T_FAILED=$((T_FAILED + n_bad))
ok $check_rc "the adapter driver exits 0"

# --- a campaign end to end -------------------------------------------------------------------------------------
db="$SCRATCH/mariadb.sqlite"
cat >"$SCRATCH/mariadb.yml" <<YML
name: mariadb-e2e
k: 10
datasets:
  - name: synth-euclid-2k
    source: synthetic
    rows: 2000
    queries: 100
    dim: 32
    clusters: 16
    metric: euclidean
    seed: 1
engines:
  - name: mariadb
    socket: $MDB_SOCK
    database: vbcampaign
    m: 16
    insert_batch: 200
phases:
  build:
  recall_sweep: {ef_search: [10, 40, 100]}
  concurrency: {clients: [1, 2], window_s: 1, repeats: 1, warmup_s: 0.2, ef_search: 40}
  filtered: {selectivity: [0.1, 0.01], queries: 50, ef_search: 40}
  churn: {fraction: 0.1, limit_s: 60, queries: 100, ef_search: 40}
YML
(cd "$SCRATCH" && timeout 300 "$VBENCH" run --profile "$SCRATCH/mariadb.yml" --out "$db") \
    >"$SCRATCH/run.out" 2>"$SCRATCH/run.err"
rc=$?
ok $rc "vbench run --profile with engine mariadb exits 0" || { tail -20 "$SCRATCH/run.err" | sed 's/^/# /'; }
is "$(q "$db" "SELECT COUNT(*) FROM build_result")" 1 "one build row"
like "$(q "$db" "SELECT engine_version FROM v_build")" "11.8" "the build row names the server version"
is "$(q "$db" "SELECT COUNT(*) FROM v_recall_sweep")" 3 "three recall-sweep rows"
is "$(q "$db" "SELECT COUNT(*) FROM v_recall_sweep WHERE recall >= 0.9 AND errors = 0")" 3 \
   "every sweep point has recall >= 0.9 and no errors"
is "$(q "$db" "SELECT COUNT(*) FROM v_concurrency")" 2 "two concurrency windows"
is "$(q "$db" "SELECT COUNT(*) FROM v_filtered")" 2 "two filtered rows"
is "$(q "$db" "SELECT COUNT(*) FROM v_churn WHERE completed = 1")" 1 "the churn completed"
is "$(q "$db" "SELECT COUNT(*) FROM v_build WHERE index_bytes > 0 AND table_bytes > 0")" 1 \
   "index and table sizes are recorded"
q "$db" "SELECT 'build: load_s=' || load_s || ' rows_per_s=' || rows_per_s || ' index_bytes=' || index_bytes FROM v_build;
         SELECT 'sweep: ef=' || ef_search || ' recall=' || recall || ' qps=' || qps FROM v_recall_sweep;
         SELECT 'filtered: s=' || selectivity || ' recall=' || recall || ' short=' || short_answers ||
                ' repeating an id=' || duplicate_answers FROM v_filtered" |
    sed 's/^/# /'

mdb_stop
ok $? "MariaDB stops"
done_testing
