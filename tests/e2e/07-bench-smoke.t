#!/usr/bin/env bash
# Every benchmark target of the Makefile runs at its smallest size and prints its table, so none rots unseen
# (issue 36.10: make bench-client-pg stopped at once, "vb_image_path: command not found", and nothing noticed).
# Each runs through make, exactly as a user types it, with the size knobs of its script (bench/*.sh): bench-gt
# (2,000 x 16 against numpy), bench-client (1 client, 0.2 s windows), bench-client-pg (1 client, 1 round of 1 s
# against a throwaway PostgreSQL 17 + pgvector from the engine image, 300 interleaved pairs: root), bench-scale
# (2,000 rows), bench-report (2 engines' results). Numbers are not checked (they are the host's): each ran, exited 0 and printed its table.
. "$(dirname "$0")/../lib/lib.sh"
need make python3 sqlite3
ROOT=$VB_ROOT
bench() { # bench TARGET: make TARGET in the tree, its output in $SCRATCH/TARGET.out; the exit status in RC
    make --no-print-directory -C "$ROOT" "$1" >"$SCRATCH/$1.out" 2>&1
    RC=$?
    OUT=$(cat "$SCRATCH/$1.out")
    [ "$RC" -eq 0 ] || tail -15 "$SCRATCH/$1.out" | diag
}

BENCH_GT_DIR=$SCRATCH/gt BENCH_GT_REPEAT=1 BENCH_GT_ROWS=2000 BENCH_GT_QUERIES=50 BENCH_GT_DIM=16 bench bench-gt
is "$RC" 0 "make bench-gt (2,000 x 16, 50 queries) exits 0"
like "$OUT" "--rows 2000" "bench-gt: BENCH_GT_ROWS sizes bench_gt"
like "$OUT" "method                 metric       seconds   queries/s" "bench-gt prints its table"
like "$OUT" "neighbours agree: yes" "bench-gt: vbench's and numpy's neighbours agree"

BENCH_CLIENTS=1 BENCH_WINDOW=0.2 BENCH_WARMUP=0.05 BENCH_SERVICE_US=100 bench bench-client
is "$RC" 0 "make bench-client (1 client, 0.2 s windows) exits 0"
n=$(grep -c '^      1 | ' "$SCRATCH/bench-client.out")
is "$n" 2 "bench-client prints its two tables (null and sleep engines), a row for 1 client in each"

if [ "$(id -u)" -ne 0 ]; then
    skip "bench-client-pg needs root (a throwaway server in a mount namespace, chrooted in the engine image)"
else
    vb_ensure_image db-trixie
    BENCH_CLIENTS=1 BENCH_ROUNDS=1 BENCH_ROWS=2000 BENCH_WINDOW=1 BENCH_WARMUP=1 BENCH_PAIRS=300 bench bench-client-pg
    is "$RC" 0 "make bench-client-pg (1 client, 1 round of 1 s, 2,000 rows) exits 0"
    unlike "$OUT" "command not found" "bench-client-pg: every shell function it calls is defined"
    like "$OUT" "vbench/pgbench: pooled  median [95 % CI]" "bench-client-pg prints its table"
    row=$(grep -E '^ +1 \| +[0-9]+ +[0-9.]+ +[0-9.]+ \| +[0-9]+ ' "$SCRATCH/bench-client-pg.out")
    [ -n "$row" ]; ok $? "bench-client-pg: a row for 1 client with vbench's and pgbench's numbers"
    like "$OUT" "failed queries: vbench 0, pgbench 0, python 0" "bench-client-pg: no query failed"
    pair='^  (no io bound|io_timeout_s 3600).* vbench +[0-9.]+ us, pgbench +[0-9.]+ us per query: vbench/pgbench [0-9.]+$'
    n=$(grep -cE "$pair" "$SCRATCH/bench-client-pg.out")
    is "$n" 2 "bench-client-pg: the driver call alone, interleaved with pgbench's, without and with the io bound"
fi

BENCH_SCALE_ROWS=2000 BENCH_SCALE_QUERIES=50 BENCH_SCALE_DIM=8 BENCH_SCALE_DIR=$SCRATCH/scale bench bench-scale
is "$RC" 0 "make bench-scale (2,000 rows) exits 0"
like "$OUT" "rows  gen_s" "bench-scale prints its table"
grep -qE '^2000 +[0-9.]+ ' "$SCRATCH/bench-scale.out"; ok $? "bench-scale: a row for 2,000 rows"

BENCH_REPORT_ENGINES=2 bench bench-report
is "$RC" 0 "make bench-report (2 engines' results) exits 0"
like "$OUT" "bench-report: 503 results" "bench-report prints its line: 2 x 250 results added to the campaign's 3"
done_testing
