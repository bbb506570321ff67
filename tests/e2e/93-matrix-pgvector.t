#!/usr/bin/env bash
# pgvector configurations side by side (issue 14): variant [vector, halfvec] x iterative_scan [off, relaxed_order]
# in one campaign against a real PostgreSQL + pgvector (tests/lib/pg-server.sh). Four configurations, two builds:
# iterative_scan is a search-time setting, so the relaxed_order configurations search the table their off twin
# built; each variant has its own table, and the halfvec index is smaller than the vector one.
# Then, on the same server, builds repeated (issue 35): build_repeats: 3 with two load connections and
# max_parallel_maintenance_workers 2 (whether PostgreSQL starts the workers for so small a table is its planner's
# choice); the one table is dropped and built again by each build (one table in the server at the end), each build's
# sweep runs on it, and the recall differs between builds: pgvector draws each element's level from the backend's
# random state (pgvector#786), so even a serial build differs.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/pg-server.sh"
pgdir="$SCRATCH/pg"
vb_pg_boot "$pgdir" secret-pw
db="$SCRATCH/pgmatrix.sqlite"
cat >"$SCRATCH/pgmatrix.yml" <<YML
name: pgmatrix
k: 10
datasets:
  - name: synth-5k
    source: synthetic
    rows: 5000
    queries: 100
    dim: 32
    clusters: 16
    metric: euclidean
    seed: 3
engines:
  - name: pgvector
    host: $pgdir
    user: postgres
    password: secret-pw
    dbname: postgres
    m: 8
    ef_construction: 32
    variant: [vector, halfvec]
    iterative_scan: [off, relaxed_order]
phases:
  build:
  recall_sweep:
    ef_search: [10, 40]
    queries: 100
  filtered:
    selectivity: [0.01]
    queries: 50
    ef_search: 40
YML
"$VBENCH" run --profile "$SCRATCH/pgmatrix.yml" --out "$db" --quiet 2>"$SCRATCH/run.txt"
rc=$?
ok $rc "the campaign runs"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/run.txt" | tail -20
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE phase = 'build'")" "2" "two builds for four configurations"
is "$(q "$db" "SELECT group_concat(config, ' ') FROM (SELECT config FROM build_result ORDER BY config)")" \
   "pgvector[variant=halfvec,iterative_scan=off] pgvector[variant=vector,iterative_scan=off]" "the off configurations build"
is "$(q "$db" "SELECT COUNT(DISTINCT config) || ' ' || COUNT(*) FROM sweep_result")" "4 8" "every configuration sweeps"
is "$(q "$db" "SELECT COUNT(DISTINCT config) FROM filtered_result")" "4" "every configuration runs the filtered point"
tables=$(vb_pg_psql "SELECT string_agg(tablename, ' ' ORDER BY tablename) FROM pg_tables WHERE tablename LIKE 'vb_pgvector%'")
is "$tables" "vb_pgvector_variant_halfvec_iterative_scan_off vb_pgvector_variant_vector_iterative_scan_off" \
   "one table per variant in the server"
iv=$(q "$db" "SELECT index_bytes FROM build_result WHERE config = 'pgvector[variant=vector,iterative_scan=off]'")
ih=$(q "$db" "SELECT index_bytes FROM build_result WHERE config = 'pgvector[variant=halfvec,iterative_scan=off]'")
[ -n "$iv" ] && [ -n "$ih" ] && [ "$ih" -lt "$iv" ]
ok $? "the halfvec index is smaller than the vector one ($ih < $iv bytes)"
off=$(q "$db" "SELECT short_answers FROM filtered_result WHERE config = 'pgvector[variant=vector,iterative_scan=off]'")
rel=$(q "$db" "SELECT short_answers FROM filtered_result WHERE config = 'pgvector[variant=vector,iterative_scan=relaxed_order]'")
# Without iterative scan pgvector filters the ef_search candidates afterwards: at 1 % most answers are short. With
# relaxed_order it keeps scanning, so fewer are (0 = 0 would compare nothing: off must show the defect).
[ -n "$off" ] && [ -n "$rel" ] && [ "$off" -gt 0 ] && [ "$rel" -lt "$off" ]
ok $? "at 1 % selectivity off has short answers and relaxed_order fewer ($rel < $off of 50)"
is "$(q "$db" "SELECT COUNT(*) FROM event WHERE message LIKE '%rebuilding it untimed%'")" "0" \
   "the sharing configurations attach to their twin's table (no untimed rebuild)"
"$VBENCH" show "$db" >"$SCRATCH/show.txt"
n=$(grep -c '^pgvector\[variant=halfvec,iterative_scan=relaxed_order\] ' "$SCRATCH/show.txt")
[ "$n" -ge 3 ]; ok $? "show has labelled rows of a sharing configuration ($n)"

vb_pg_psql "DROP TABLE IF EXISTS vb_pgvector_variant_halfvec_iterative_scan_off, vb_pgvector_variant_vector_iterative_scan_off" >/dev/null
db2="$SCRATCH/pgbuilds.sqlite"
cat >"$SCRATCH/pgbuilds.yml" <<YML
name: pgbuilds
k: 10
datasets:
  - {name: synth-5k, source: synthetic, rows: 5000, queries: 100, dim: 32, clusters: 16, metric: euclidean, seed: 3}
engines:
  - name: pgvector
    host: $pgdir
    user: postgres
    password: secret-pw
    dbname: postgres
    m: 8
    ef_construction: 32
    max_parallel_maintenance_workers: 2
    build_repeats: 3
phases:
  build: {load_connections: 2}
  recall_sweep: {ef_search: [10, 40], queries: 100}
YML
"$VBENCH" run --profile "$SCRATCH/pgbuilds.yml" --out "$db2" --quiet 2>"$SCRATCH/run2.txt"
rc=$?
ok $rc "build_repeats: the campaign runs"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/run2.txt" | tail -20
is "$(q "$db2" "SELECT group_concat(build, ' ') FROM (SELECT build FROM build_result ORDER BY build)")" "1 2 3" \
   "build_repeats: three build rows, each naming its build"
is "$(q "$db2" "SELECT group_concat(b || ':' || n, ' ') FROM (SELECT build AS b, COUNT(*) AS n FROM sweep_result GROUP BY build ORDER BY build)")" \
   "1:2 2:2 3:2" "build_repeats: a sweep on each build"
is "$(vb_pg_psql "SELECT string_agg(tablename, ' ') FROM pg_tables WHERE tablename LIKE 'vb%'")" "vbench_items" \
   "build_repeats: one table in the server, dropped and built again by each build"
is "$(q "$db2" "SELECT COUNT(*) FROM event WHERE message LIKE '%rebuilding it untimed%'")" "0" \
   "build_repeats: each sweep searched its build (no untimed rebuild)"
spread=$(q "$db2" "SELECT group_concat(ef_search || ': ' || printf('%.4f-%.4f', recall_min, recall_max), ', ') FROM v_build_spread")
[ "$(q "$db2" "SELECT COUNT(*) FROM v_build_spread WHERE builds = 3 AND recall_max > recall_min")" -ge 1 ]
ok $? "build_repeats: the recall differs between builds (ef_search $spread)"
"$VBENCH" show "$db2" >"$SCRATCH/show2.txt"
sed -n '/^Spread across builds/,/^$/p' "$SCRATCH/show2.txt" | tee "$SCRATCH/spread2.txt" | sed 's/^/#   /'
is "$(grep -c '^pgvector ' "$SCRATCH/spread2.txt")" "2" "build_repeats: show has the spread across builds per ef_search"
done_testing
