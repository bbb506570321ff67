#!/usr/bin/env bash
# Issue 26, "what must be shown" 1: a filtered sweep of six selectivities and the three predicate kinds (range,
# equality, and) on pgvector, MariaDB and hnswlib, the servers started by the orchestrator as systemd units in a
# namespace booted once (deploy/systemd-ns). Per point: recall against the exact ground truth over the rows that
# pass the predicate, short answers counted, the plan the server chose (EXPLAIN: the vector index or an exact
# scan); the report's filtered table says which plan ran and draws the selectivity chart. Small data (3000 rows,
# 20 queries a point) so that the three campaigns take a few minutes on two cores. Then the class predicates of issue
# 35 on the three servers (Redis too), beside exact; then the capacity phase of issue 37 on the three servers.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/ns-servers.sh"
vb_ns_servers_boot

# One campaign for the three kinds (a build per engine, the servers started once): `predicate` is an axis of the
# phase, and the six selectivities are labels' shares so that equality takes them too (three campaigns before, one
# per kind, each starting both servers and building three indexes again).
cat >"$SCRATCH/f.yml" <<YML
name: fs
k: 10
datasets:
  - {name: fs, source: synthetic, rows: 3000, queries: 40, dim: 16, clusters: 8, metric: euclidean, seed: 5}
engines:
  - {name: pgvector, recipe: pgvector}
  - {name: mariadb, recipe: mariadb}
  - {name: hnswlib, m: 16, ef_construction: 64}
phases:
  build:
  filtered: {predicate: [range, equality, and], selectivity: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5], queries: 20, ef_search: 40}
YML
db=$SCRATCH/f.sqlite
vb_ns_campaign "$SCRATCH/f.yml" "$db" "the campaign on pgvector, mariadb and hnswlib, three predicate kinds"
for pred in range equality and; do
    is "$(q "$db" "SELECT COUNT(*) FROM filtered_result WHERE predicate = '$pred' AND queries = 20 AND recall IS NOT NULL
                   AND short_answers IS NOT NULL AND errors = 0")" "18" \
       "$pred: six points per engine, each with its recall, its short answers and no errors"
    is "$(q "$db" "SELECT COUNT(DISTINCT selectivity || ':' || passing_rows) FROM filtered_result WHERE predicate = '$pred'")" "6" \
       "$pred: the three engines agree on the rows that pass at each point (one ground truth)"
    is "$(q "$db" "SELECT COUNT(*) FROM filtered_result WHERE predicate = '$pred' AND engine IN ('pgvector', 'mariadb')
                   AND index_used IN (0, 1) AND plan <> ''")" "12" "$pred: every server point records the plan it ran"
    # An exact scan over the passing rows answers exactly: where the planner chose one, recall is 1.
    is "$(q "$db" "SELECT COUNT(*) FROM filtered_result WHERE predicate = '$pred' AND index_used = 0 AND recall < 1")" "0" \
       "$pred: every point whose plan is an exact scan has recall 1 ($(q "$db" "SELECT COUNT(*) FROM filtered_result WHERE predicate = '$pred' AND index_used = 0") such points)"
    is "$(q "$db" "SELECT COUNT(*) FROM filtered_result WHERE predicate = '$pred' AND engine = 'hnswlib' AND selectivity >= 0.1
                   AND recall < 0.9")" "0" \
       "$pred: hnswlib's recall is at least 0.9 from 10 % up"
    # the distribution of per-query recall at every point of every engine (issue 35); an exact scan has every query at 1
    is "$(q "$db" "SELECT COUNT(*) FROM v_recall_dist AS d JOIN filtered_result AS f USING (result_key) WHERE d.queries = 20
                   AND f.predicate = '$pred' AND d.recall_min <= d.recall_p10 AND d.recall_p10 <= d.recall_p50
                   AND d.recall_p50 <= 1 AND (f.index_used IS NOT 0 OR (d.recall_min = 1 AND d.zero_share = 0))")" "18" \
       "$pred: every point has its recall distribution over its 20 queries ($(q "$db" "SELECT group_concat(DISTINCT
        d.engine || ' ' || f.selectivity || ': p10 ' || d.recall_p10 || ', zero ' || d.zero_share) FROM v_recall_dist AS d
        JOIN filtered_result AS f USING (result_key) WHERE d.zero_share > 0 AND f.predicate = '$pred'"))"
    q "$db" "SELECT engine, selectivity, passing_rows, printf('%.3f', recall), short_answers, printf('%.0f', qps),
             CASE index_used WHEN 1 THEN 'index' WHEN 0 THEN 'exact scan' ELSE '-' END,
             substr(plan, 1, COALESCE(NULLIF(instr(plan, char(10)), 0) - 1, 60))
             FROM filtered_result WHERE predicate = '$pred' ORDER BY engine, selectivity" | sed "s/^/# $pred: /"
done
like "$(q "$db" "SELECT plan FROM filtered_result WHERE engine = 'pgvector' AND predicate = 'equality' LIMIT 1")" "label" \
     "pgvector's plan for equality filters on the label column"
like "$(q "$db" "SELECT group_concat(plan) FROM filtered_result WHERE engine = 'mariadb' AND predicate = 'and'")" "key=v" \
     "MariaDB's EXPLAIN for and is kept (its key column)"
like "$(q "$db" "SELECT filter FROM filtered_result WHERE predicate = 'and' AND selectivity = 0.01 LIMIT 1")" \
     "tag < 1000 AND tag2 < 1000" "and: two columns of sqrt(s) each"

out=$("$VBENCH" show "$db")
like "$out" "Filtered search" "vbench show prints the filtered table"
"$VBENCH" report "$db" >/dev/null 2>"$SCRATCH/report.err"
ok $? "vbench report of the filtered campaign exits 0" || tail -5 "$SCRATCH/report.err" | diag
html=$SCRATCH/f-report/report.html
like "$(cat "$html" 2>/dev/null)" "plan_ran" "the report's filtered table has a column saying which plan ran"
n=$(grep -Ec '<td>(index|exact scan)</td>' "$html" 2>/dev/null)
[ "${n:-0}" -ge 36 ]; ok $? "naming index or exact scan at every server point ($n cells)"
ls "$SCRATCH/f-report/charts/" | grep -q filtered; ok $? "the selectivity chart is drawn"

# Issue 35: the class predicates on every server engine that runs here (pgvector, MariaDB, Redis vector sets), beside
# exact in the same campaign: an angular corpus (Redis compares by cosine only) whose 8 clusters are its classes.
# Each engine stores the class of every row and runs label_own (each query on its own class) and label_other (each
# on another class): one filter per query, every returned row checked against its query's class by the phase (the
# item fails otherwise), recall scored against the exact ground truth per query over the rows of its class, which
# exact reproduces (recall 1). Range at 0.2 (about the own class's share) is the independent-tags row beside them.
cat >"$SCRATCH/cls.yml" <<YML
name: fs-classes
k: 10
datasets:
  - {name: fc, source: synthetic, rows: 3000, queries: 40, dim: 16, clusters: 8, metric: angular, seed: 5}
engines:
  - {name: pgvector, recipe: pgvector}
  - {name: mariadb, recipe: mariadb}
  - {name: redis, recipe: redis, m: 16, ef_construction: 64}
  - {name: exact}
phases:
  build:
  filtered: {predicate: [range, label_own, label_other], selectivity: [0.2], queries: 20, ef_search: 40}
YML
cdb=$SCRATCH/cls.sqlite
vb_ns_campaign "$SCRATCH/cls.yml" "$cdb" "class predicates: the campaign on pgvector, mariadb, redis and exact"
q "$cdb" "SELECT engine, predicate, printf('%.3f', passed_share), printf('%.3f', recall), short_answers, printf('%.0f', qps),
          CASE index_used WHEN 1 THEN 'index' WHEN 0 THEN 'exact scan' ELSE '-' END, filter
          FROM filtered_result ORDER BY engine, predicate" | sed 's/^/# classes: /'
for e in pgvector mariadb redis exact; do
    is "$(q "$cdb" "SELECT COUNT(*) FROM filtered_result WHERE engine = '$e' AND predicate IN ('label_own', 'label_other')
                    AND queries = 20 AND errors = 0 AND recall IS NOT NULL AND short_answers IS NOT NULL")" "2" \
       "$e: label_own and label_other ran, 20 queries each, no errors, every returned row of the query's class"
done
is "$(q "$cdb" "SELECT COUNT(*) FROM filtered_result WHERE engine = 'exact' AND predicate <> 'range' AND recall = 1
                AND short_answers = 0")" "2" "exact: recall exactly 1 on both (the ground truth is per query, over its class)"
is "$(q "$cdb" "SELECT COUNT(DISTINCT predicate || ':' || passed_share) FROM filtered_result")" "3" \
   "the four engines agree on the share each predicate passes (one ground truth per predicate)"
is "$(q "$cdb" "SELECT COUNT(*) FROM filtered_result WHERE predicate = 'label_own' AND recall >= 0.9")" "4" \
   "label_own keeps the query's neighbourhood: recall >= 0.9 on every engine"
is "$(q "$cdb" "SELECT COUNT(*) FROM filtered_result WHERE engine IN ('pgvector', 'mariadb') AND predicate <> 'range'
                AND index_used IN (0, 1) AND plan <> ''")" "4" "pgvector and MariaDB record the plan each class filter ran"
like "$(q "$cdb" "SELECT group_concat(plan) FROM filtered_result WHERE engine = 'pgvector' AND predicate = 'label_own'")" \
     "class = " "pgvector's plan filters on the class column"
out=$("$VBENCH" show "$cdb")
like "$out" "the query's own class and another class side by side" "vbench show: the side-by-side table"
is "$(q "$cdb" "SELECT COUNT(*) FROM v_filtered_classes WHERE tags_selectivity = 0.2 AND own_recall IS NOT NULL
                AND other_recall IS NOT NULL")" "4" "one side-by-side row per engine: tags, own class, other class"

# Issue 37: the capacity phase on the three servers (the same corpus, the namespace already booted). The recall sweep
# runs first, so the operating point comes from it (the coordinator reads the committed sweep): the smallest ef_search
# whose recall meets 0.95. Two targets from one search, p99 <= 20 ms and <= 200 ms: each engine must have a rate for
# one of them at least (on a loaded 2-core host a server's stalls can put 20 ms out of reach at any rate, and a fast
# engine can saturate the client agent's CPUs, which it shares with the server here, before it fails 200 ms: refused
# as the client's limit, the item then fails), every
# window of its search a row of the curve, and the server's cores busy at its found rate. 1 s windows, and the
# coarsest precision (0.5: the search stops once the lowest rate that failed is within 1.5 times the highest that met,
# one bisection after the growth's doubling instead of three): none of these checks asks how close the found rate is
# to the knee (47-capacity does, on the sleep engine), and the three searches took 20 windows each at 0.1.
cat >"$SCRATCH/cap.yml" <<YML
name: fs-capacity
k: 10
datasets:
  - {name: fc, source: synthetic, rows: 3000, queries: 40, dim: 16, clusters: 8, metric: angular, seed: 5}
engines:
  - {name: pgvector, recipe: pgvector}
  - {name: mariadb, recipe: mariadb}
  - {name: redis, recipe: redis, m: 16, ef_construction: 64}
phases:
  build:
  recall_sweep: {ef_search: [10, 40, 100]}
  capacity: {recall: 0.95, p99_ms: [20, 200], window_s: 1, warmup_s: 0.3, repeats: 1, precision: 0.5, clients: 32}
YML
kdb=$SCRATCH/cap.sqlite
vb_ns_run "$VBENCH" run --profile "$SCRATCH/cap.yml" --out "$kdb" --quiet >"$kdb.out" 2>"$kdb.err"
echo "# capacity campaign exit $? (an item refused as the client's limit fails it: $(q "$kdb" "SELECT group_concat(key || ': ' || substr(error, 1, 160), '; ') FROM plan WHERE status <> 'done'"))"
q "$kdb" "SELECT engine, p99_target_ms, status, printf('%.0f', rate), ef_search, printf('%.3f', recall), op_source,
          printf('%.2f', p99_ms), printf('%.2f', server_cores_busy), server_cores, windows, top_wait_class FROM v_capacity" |
    sed 's/^/# capacity: /'
for e in pgvector mariadb redis; do
    is "$(q "$kdb" "SELECT COUNT(*) > 0 FROM v_capacity WHERE engine = '$e' AND status = 'found' AND rate > 0
                    AND op_source = 'sweep' AND recall >= 0.95
                    AND ef_search = (SELECT MIN(ef_search) FROM v_recall_sweep WHERE engine = '$e' AND recall >= 0.95)")" \
       "1" "$e: a rate found ($(q "$kdb" "SELECT group_concat(printf('%.0f/s at p99 <= %g ms', rate, p99_target_ms), ', ') FROM v_capacity WHERE engine = '$e' AND status = 'found'")), at the sweep's smallest ef_search with recall >= 0.95"
    # a window in which the server answered nothing (a stall) has no latency: listed with its offered rate, no point
    is "$(q "$kdb" "SELECT COUNT(*) = (SELECT MAX(windows) FROM v_capacity WHERE engine = '$e') FROM v_capacity_windows
                    WHERE engine = '$e' AND offered_rate > 0 AND scheduled > 0
                    AND ((achieved_rate > 0 AND p99_ms > 0) OR (answered = 0 AND meets_any = 0))")" "1" \
       "$e: every window of the search is a row of the curve, or answered nothing and met nothing ($(q "$kdb" "SELECT group_concat(printf('%.0f:%s', offered_rate, IIF(answered = 0, 'none answered', printf('%.1f', p99_ms))), ' ') FROM v_capacity_windows WHERE engine = '$e'"))"
    is "$(q "$kdb" "SELECT MIN(server_cores_busy > 0 AND server_cores > 0) FROM v_capacity WHERE engine = '$e' AND status = 'found'")" "1" \
       "$e: the server's cores busy at each found rate ($(q "$kdb" "SELECT group_concat(printf('%.2f of %d', server_cores_busy, server_cores), ', ') FROM v_capacity WHERE engine = '$e' AND status = 'found'"))"
done

is "$(vb_ns_run systemctl list-units --all --no-legend --plain 'vbench-*.service' | awk '$3 == "active"' | wc -l)" "0" \
   "no server unit is left running"

done_testing
