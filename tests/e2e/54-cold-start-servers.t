#!/usr/bin/env bash
# Issue 26, "what must be shown" 2: cold against warm on pgvector and MariaDB. The cold_start item of each server
# engine has the orchestrator stop its server, evict every file of its data directory from the page cache
# (posix_fadvise DONTNEED per file) and start it again; then the first 200 queries run one at a time, then the same
# 200 warm. Checked: the eviction ran (files and bytes > 0, also in the manifest), the first queries after the restart
# are slower than warm (by the margins measured below), the ratio and the time to warm are in show --json and in the
# report (table and chart), hnswlib (embedded) says "not applicable" with the reason; a coordinator killed during
# the cold start resumes into a second cold start and records the item once; no unit is left running. One namespace
# boot, two campaigns of 3000 rows.
. "$(dirname "$0")/../lib/lib.sh"
need python3 pgrep
. "$(dirname "$0")/../lib/ns-servers.sh"
vb_ns_servers_boot

cat >"$SCRATCH/cold.yml" <<YML
name: cold
k: 10
datasets:
  - {name: cs, source: synthetic, rows: 3000, queries: 200, dim: 16, clusters: 8, metric: euclidean, seed: 5}
engines:
  - {name: pgvector, recipe: pgvector}
  - {name: mariadb, recipe: mariadb}
  - {name: hnswlib, m: 16, ef_construction: 64}
phases:
  build:
  cold_start: {queries: 200, ef_search: 40}
YML
db=$SCRATCH/cold.sqlite
t0=$(date +%s)
vb_ns_run "$VBENCH" run --profile "$SCRATCH/cold.yml" --out "$db" >"$SCRATCH/cold.out" 2>"$SCRATCH/cold.err"
rc=$?
ok $rc "the campaign on pgvector, mariadb and hnswlib exits 0 ($(($(date +%s) - t0)) s)"
[ $rc -eq 0 ] || tail -20 "$SCRATCH/cold.err" | diag
q "$db" "SELECT key, status, error FROM plan WHERE status <> 'done'" | diag
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE phase = 'cold_start' AND status = 'done' AND attempts = 1")" "3" \
   "each engine's cold_start item is done, in one attempt"

for e in pgvector mariadb; do
    q "$db" "SELECT engine, evicted_files, evicted_bytes, printf('%.2f', restart_s), printf('%.3f', first_ms),
             printf('%.3f', cold_mean_ms), printf('%.3f', cold_p50_ms), printf('%.3f', warm_first_ms),
             printf('%.3f', warm_mean_ms), printf('%.3f', warm_p50_ms), printf('%.1f', ratio_first),
             printf('%.2f', ratio_mean), printf('%.2f', ratio_p50), warm_after, errors,
             (SELECT printf('%.2f', rolling_p50_ms / warm_p50_ms) FROM cold_start_query AS q
              WHERE q.result_key = cold_start_result.result_key AND q.pass = 'cold' AND q.n = 10)
             FROM cold_start_result WHERE engine = '$e'" | sed "s/^/# measured: /"
    is "$(q "$db" "SELECT applicable FROM cold_start_result WHERE engine = '$e'")" "1" "$e: the cold start is measured"
    is "$(q "$db" "SELECT evicted_files > 0 AND evicted_bytes > 0 FROM cold_start_result WHERE engine = '$e'")" "1" \
       "$e: its data directory was evicted from the page cache ($(q "$db" "SELECT evicted_files || ' files, ' ||
        evicted_bytes || ' bytes' FROM cold_start_result WHERE engine = '$e'"))"
    is "$(q "$db" "SELECT CAST(value AS INTEGER) > 0 FROM manifest WHERE key = 'server.$e.cold.evicted_files'")" "1" \
       "$e: the manifest's count of evicted files is the orchestrator's, above 0"
    is "$(q "$db" "SELECT COUNT(*) FROM cold_start_query AS q JOIN cold_start_result AS c USING (result_key)
                   WHERE c.engine = '$e' AND q.ok = 1")" "400" "$e: every cold and warm query's latency is kept, in order"
    # Measured on this 2-core machine before these checks were written (17 runs): the first query after the cold
    # restart 56-2336 times the warm median on pgvector, 24-1202 on MariaDB (the largest on a loaded host); the
    # median of the first 10 cold queries 1.9-3.4 times the warm median on pgvector, 5.8-9.2 on MariaDB (5 runs).
    # The warm pass's first query (on a new connection too) was 1.4-4.8 ms on pgvector, 0.25-4.1 ms on MariaDB: one
    # sample, so it is shown, not compared; nor is the mean of all 200 cold queries against the warm mean (0.63-9.3:
    # host noise at 0.2 ms a query decides it). Without the eviction (the restart alone, 4 runs) pgvector's first
    # query took 2.7-2.8 ms instead of 11-25 ms (the runs on an unloaded host).
    is "$(q "$db" "SELECT ratio_first > 5 FROM cold_start_result WHERE engine = '$e'")" "1" \
       "$e: the first query after the cold restart is much slower than the warm median (x$(q "$db" "SELECT printf('%.1f',
        ratio_first) FROM cold_start_result WHERE engine = '$e'"), asked > 5)"
    # The median of the first 10 cold queries is shown, not compared: 1.9-3.4 times the warm median on a quiet host,
    # it fell under it on pgvector in a make test whose other lane loaded the host (2026-12-02): with 3,000 x 16 rows
    # the index is cached after a query or two, so eight of those ten are warm queries and the host's noise decides.
    q "$db" "SELECT printf('%.3f', q.rolling_p50_ms) || ' ms against a warm median of ' || printf('%.3f', c.warm_p50_ms)
             FROM cold_start_query AS q JOIN cold_start_result AS c USING (result_key)
             WHERE c.engine = '$e' AND q.pass = 'cold' AND q.n = 10" | sed "s/^/# $e: the median of the first 10 cold queries: /"
    is "$(q "$db" "SELECT errors FROM cold_start_result WHERE engine = '$e'")" "0" "$e: no query failed"
done
is "$(q "$db" "SELECT applicable || ' ' || (reason LIKE '%embedded%') FROM cold_start_result WHERE engine = 'hnswlib'")" \
   "0 1" "hnswlib: recorded as not applicable, the reason saying it is embedded"

"$VBENCH" show --json "$db" >"$SCRATCH/show.json"
jsonq() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print($1)" "$SCRATCH/show.json"; }
is "$(jsonq "len([r for r in d['cold_start'] if r['status'] == 'measured' and r['ratio_first'] > 5 and r['ratio_mean'] > 0])")" \
   "2" "show --json gives the cold / warm ratios of both server engines"
is "$(jsonq "sorted(r['engine'] for r in d['cold_start'] if r['time_to_warm'])")" "['mariadb', 'pgvector']" \
   "show --json says when each server was warm again (or that it was not within the cold queries)"
is "$(jsonq "[r['status'] for r in d['cold_start'] if r['engine'] == 'hnswlib']")" "['not applicable']" \
   "show --json says hnswlib's cold start is not applicable"
like "$("$VBENCH" show "$db")" "Cold start" "vbench show prints the cold start table"

"$VBENCH" report "$db" >/dev/null 2>"$SCRATCH/report.err"
ok $? "vbench report exits 0" || tail -5 "$SCRATCH/report.err" | diag
html=$SCRATCH/cold-report/report.html
like "$(cat "$html" 2>/dev/null)" 'id="cold_start"' "the report has a cold start section"
like "$(cat "$html" 2>/dev/null)" "ratio_first" "its table gives the cold / warm ratio"
like "$(cat "$html" 2>/dev/null)" "not applicable" "and says not applicable for hnswlib"
for e in pgvector mariadb; do
    [ -s "$SCRATCH/cold-report/charts/cold-start-$e.svg" ]
    ok $? "$e: the chart of latency against query number (cold, its rolling median, warm) is drawn"
done
is "$(awk '/^# block 0/ {b = 1; next} /^# block/ {b = 0} b && NF' "$SCRATCH/cold-report/charts/cold-start-pgvector.dat" \
      2>/dev/null | wc -l)" "200" "pgvector's chart draws each of the 200 cold queries"
# Killed during the cold start: the coordinator (SIGKILL) while the item's cold queries run; `vbench resume` runs it
# again, cold again (a new cold start for the new attempt), and it is recorded exactly once. 5,000 queries a pass,
# so that the kill lands inside the item.
cat >"$SCRATCH/coldk.yml" <<YML
name: coldk
k: 10
datasets:
  - {name: cs, source: synthetic, rows: 3000, queries: 5000, dim: 16, clusters: 8, metric: euclidean, seed: 5}
engines:
  - {name: pgvector, recipe: pgvector}
limits: {agent_silent_s: 3}
phases:
  build:
  cold_start: {queries: 5000, ef_search: 40}
YML
kdb=$SCRATCH/coldk.sqlite
vb_ns_run "$VBENCH" run --profile "$SCRATCH/coldk.yml" --out "$kdb" >/dev/null 2>"$SCRATCH/coldk1.err" &
runner=$!
wait_sql "$kdb" "SELECT COUNT(*) FROM plan WHERE phase = 'cold_start' AND status = 'running'" 1 120
ok $? "the kill campaign reached its cold_start item"
coord=
for p in $(pgrep -f -- "--profile $SCRATCH/coldk.yml"); do [ "$(cat /proc/$p/comm 2>/dev/null)" = vbench ] && coord=$p; done
[ -n "$coord" ] && kill -9 "$coord"
ok $? "the coordinator (pid ${coord:-not found}) is killed during the cold start"
wait "$runner" 2>/dev/null
is "$(q "$kdb" "SELECT status FROM plan WHERE phase = 'cold_start'")" "running" "the item was not done when it was killed"
vb_ns_run "$VBENCH" resume --out "$kdb" --quiet >/dev/null 2>"$SCRATCH/coldk2.err"
ok $? "vbench resume finishes the campaign" || tail -10 "$SCRATCH/coldk2.err" | diag
is "$(q "$kdb" "SELECT status || ' ' || attempts FROM plan WHERE phase = 'cold_start'")" "done 2" \
   "the cold_start item is done, in its second attempt"
is "$(q "$kdb" "SELECT COUNT(*) FROM cold_start_result")" "1" "its result is recorded once"
is "$(q "$kdb" "SELECT COUNT(*) FROM cold_start_query")" "10000" "with each of its 5,000 cold and 5,000 warm queries once"
is "$(q "$kdb" "SELECT COUNT(*) FROM server_log WHERE engine = 'pgvector' AND state = 'ready' AND message = 'started cold'")" \
   "2" "each attempt had its own cold start (the second after the resume)"
is "$(q "$kdb" "SELECT applicable = 1 AND evicted_files > 0 AND ratio_first > 1 FROM cold_start_result")" "1" \
   "the resumed attempt measured a cold start: files evicted, the first query slower than warm (x$(q "$kdb" \
    "SELECT printf('%.1f', ratio_first) FROM cold_start_result"))"
is "$(vb_ns_run systemctl list-units --all --no-legend --plain 'vbench-*.service' | awk '$3 == "active"' | wc -l)" "0" \
   "no server unit is left running"

done_testing
