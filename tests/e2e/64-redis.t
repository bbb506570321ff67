#!/usr/bin/env bash
# Redis 8 vector sets in whole campaigns (issue 24): `vbench run --profile dev --engines redis` on a real systemd booted in a PID +
# mount namespace (deploy/systemd-ns), the server started by a local orchestrator agent from the recipe
# deploy/engines/redis.yml and Debian's redis-server 8.0.2 in the db-trixie image (8.0.6 from db-sid in 2b). One namespace:
#   1. the shipped dev profile with --engines redis (20,000 x 96 angular, five phases; every phase lasts long enough for the
#      250 ms memory sampler): every item done; recall rises with ef_search to >= 0.95; filtered search at 10 % and
#      1 % with the short answers counted; churn rows exactly once; per-phase server peaks in every phase; the
#      server's own VSIM count (INFO commandstats) equal to vbench's in every window and result, VADD's to the rows
#      written; the manifest's settings and the server's redis_version; the report's validity section;
#   2. a matrix of quantization q8 / noquant / bin in one campaign: recall noquant >= q8 > bin at the same
#      ef_search, memory (MEMORY USAGE of each key) the other way, all three in one report;
#   3. a euclidean dataset refused before anything starts, naming the dataset and the metric, nothing created.
# As root a missing image or namespace fails the test (it does not skip): the engine is Debian's own package.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/ns-servers.sh"
vb_ns_servers_boot db-trixie db-sid

# ---- 1. the dev campaign -------------------------------------------------------------------------------------
# The shipped dev profile, as a user runs it: 20,000 x 96 angular, M 16, ef_construction 128, q8 (the default).
db=$SCRATCH/rs.sqlite
m() { q "$db" "SELECT value FROM manifest WHERE key = '$1'"; }
t0=$(date +%s)
vb_ns_run "$VBENCH" run --profile dev --engines redis --out "$db" >"$SCRATCH/run.out" 2>"$SCRATCH/run.err"
rc=$?
ok $rc "vbench run --profile dev --engines redis exits 0 ($(($(date +%s) - t0)) s)"
[ $rc -eq 0 ] || tail -30 "$SCRATCH/run.err" | diag
is "$(q "$db" "SELECT COUNT(DISTINCT phase) || '/' || SUM(status <> 'done') FROM plan WHERE engine = 'redis'")" "5/0" \
   "all five phases ran and every item is done"
q "$db" "SELECT key, status, error FROM plan WHERE status <> 'done'" | diag

is "$(q "$db" "SELECT rows FROM build_result WHERE engine = 'redis'")" "20000" "build: 20000 rows"
like "$(q "$db" "SELECT engine_version FROM build_result WHERE engine = 'redis'")" "Redis 8.0.2, vector set quant-type int8, hnsw-m 16" \
     "build: the server's version, and the quantization and M VINFO reports for the key"
is "$(q "$db" "SELECT index_bytes > 20000 * 96 AND table_bytes > 0 FROM build_result WHERE engine = 'redis'")" "1" \
   "build: MEMORY USAGE of the key as the index (more than a byte per dimension and row), the rest of used_memory"

q "$db" "SELECT ef_search, printf('%.4f', recall), printf('%.0f', qps), short_answers FROM sweep_result WHERE engine = 'redis' ORDER BY ef_search" | diag
is "$(q "$db" "SELECT COUNT(*) FROM sweep_result WHERE engine = 'redis'")" "8" "recall sweep: dev's eight ef_search points"
lo=$(q "$db" "SELECT recall FROM sweep_result WHERE engine = 'redis' ORDER BY ef_search LIMIT 1")
hi=$(q "$db" "SELECT recall FROM sweep_result WHERE engine = 'redis' ORDER BY ef_search DESC LIMIT 1")
is "$(echo "$hi > $lo && $hi >= 0.95" | bc)" "1" "recall rises with ef_search ($lo at 10, $hi at 800) and reaches 0.95"
is "$(q "$db" "SELECT SUM(errors) FROM sweep_result WHERE engine = 'redis'")" "0" "no errors in the sweep"

q "$db" "SELECT selectivity, passing_rows, printf('%.4f', recall), short_answers, queries FROM filtered_result WHERE engine = 'redis'" | diag
is "$(q "$db" "SELECT COUNT(*) FROM filtered_result WHERE engine = 'redis' AND errors = 0 AND short_answers IS NOT NULL
               AND queries = 200 AND filter LIKE 'tag < %'")" "2" \
   "filtered search at 10 % and 1 %: 200 queries each, no errors, short answers counted"
is "$(q "$db" "SELECT COUNT(*) FROM filtered_result WHERE engine = 'redis' AND selectivity = 0.1 AND recall >= 0.9")" "1" \
   "filtered at 10 %: recall >= 0.9 against the filtered ground truth"
short=$(q "$db" "SELECT short_answers FROM filtered_result WHERE engine = 'redis' AND selectivity = 0.01")
vshort=$(q "$db" "SELECT COUNT(*) FROM v_validity WHERE \"check\" = 'short answers' AND engine = 'redis'")
{ [ "${short:-0}" -eq 0 ] && [ "$vshort" -eq 0 ]; } || { [ "$short" -gt 0 ] && [ "$vshort" -ge 1 ]; }
ok $? "filtered at 1 %: $short short answers, and the validity section lists them when there are any ($vshort)"

q "$db" "SELECT stage, printf('%.4f', recall), rows_done, completed FROM churn_result WHERE engine = 'redis'" | diag
is "$(q "$db" "SELECT COUNT(*) FROM churn_result WHERE engine = 'redis' AND stage IN ('before', 'after') AND recall >= 0.9")" "2" \
   "churn: recall before and after the reinsert"
is "$(q "$db" "SELECT COUNT(*) || '/' || MAX(rows_done) FROM churn_result WHERE engine = 'redis' AND stage = 'reinsert' AND completed = 1")" "1/2000" \
   "churn: 2000 rows deleted and inserted again, one reinsert row"
is "$(q "$db" "SELECT SUM(sent) FROM v_server_count WHERE phase = 'churn' AND command = 'write'")" "2000" \
   "churn: the reinsert's rows were written exactly once (vbench's count)"

# per-phase server peaks: every phase
have=$(q "$db" "SELECT COUNT(DISTINCT p.phase) FROM v_server_phase AS sp JOIN plan AS p ON p.key = sp.item
                WHERE sp.engine = 'redis' AND sp.peak_rss_bytes > 0 AND sp.peak_cgroup_bytes > 0")
is "$have" "5" "per-phase server peaks (cgroup and RSS) in every phase"

# the server's own counts
q "$db" "SELECT phase, command, SUM(sent), SUM(server) FROM v_server_count GROUP BY 1, 2" | diag
is "$(q "$db" "SELECT COUNT(*) FROM window_result AS w JOIN v_server_count AS c ON c.result = w.result_key
               WHERE w.engine = 'redis' AND c.command = 'search' AND c.agrees")" \
   "$(q "$db" "SELECT COUNT(*) FROM window_result WHERE engine = 'redis'")" \
   "every window: the server's VSIM calls equal vbench's searches"
is "$(q "$db" "SELECT COUNT(*) FROM window_result AS w JOIN v_server_count AS c ON c.result = w.result_key
               WHERE c.command = 'search' AND c.sent >= w.queries + w.warmup_queries AND c.sent <= w.queries + w.warmup_queries + w.clients + w.errors")" \
   "4" "every window: vbench's count is its queries + warm-up + at most one query per client at the edge"
is "$(q "$db" "SELECT COUNT(*) || '/' || SUM(agrees) FROM v_server_count WHERE engine = 'redis'")" \
   "$(q "$db" "SELECT (COUNT(*) * 2) || '/' || (COUNT(*) * 2) FROM (SELECT DISTINCT result_key FROM server_count)")" \
   "every result of every phase: the server's VSIM and VADD counts equal vbench's"
is "$(q "$db" "SELECT sent || '/' || server FROM v_server_count WHERE phase = 'build' AND command = 'write'")" "20000/20000" \
   "build: 20000 VADD calls for 20000 rows"
is "$(q "$db" "SELECT COUNT(*) FROM v_validity WHERE \"check\" = 'server count mismatch'")" "0" "no count mismatch finding"

# manifest, provenance, report
like "$(m server.redis.probe_answer)" "Redis 8.0.2" "the manifest has the server's redis_version"
is "$(m server.redis.package.redis-server)" "5:8.0.2-3+deb13u3" "and the package's version"
like "$(m server.redis.setting.maxmemory)" "mb" "maxmemory from the budget ($(m server.redis.setting.maxmemory))"
is "$(m server.redis.setting.maxmemory_policy)/$(m server.redis.setting.appendonly)/$(m server.redis.setting.port)" \
   "noeviction/no/0" "the manifest records noeviction, appendonly no, port 0"
is "$(q "$db" "SELECT COUNT(*) FROM manifest WHERE key = 'server.redis.setting.save' AND value = ''")" "1" "and save \"\""
show=$("$VBENCH" show "$db" 2>&1)
like "$show" "redis" "vbench show lists redis"
"$VBENCH" report "$db" -o "$SCRATCH/rs-report" --quiet >/dev/null 2>"$SCRATCH/report.err"
ok $? "vbench report writes the report"
rmd=$(cat "$SCRATCH/rs-report/report.md" 2>/dev/null)
like "$rmd" "redis" "the report names redis"
like "$rmd" "### Server counts" "the report's validity section has the server counts"
counts=$(printf '%s\n' "$rmd" | sed -n '/^### Server counts/,/^##/p' | grep -oE '\| [0-9]+ of [0-9]+ \|' | tr -d '|')
is "$(printf '%s\n' "$counts" | awk 'NF { n++; if ($1 != $3) bad++ } END { print (n > 0 && bad == 0) }')" "1" \
   "one row per phase and command, every result agreeing ($(echo $counts | tr '\n' ' '))"
like "$show" "Server counts" "vbench show has the server-count check (the server ran what vbench sent)"
is "$(q "$db" "SELECT COUNT(*) FROM server_log WHERE engine = 'redis' AND state IN ('ready', 'stopped')")" "2" \
   "the server started and stopped"

# ---- 2. quantization as a matrix ----------------------------------------------------------------------------------
cat >"$SCRATCH/quant.yml" <<YML
name: quant
k: 10
datasets:
  - {name: synth, source: synthetic, rows: 10000, queries: 200, dim: 64, clusters: 16, metric: angular, seed: 5}
engines:
  - {name: redis, recipe: redis, m: 16, ef_construction: 100, quantization: [q8, noquant, bin]}
resources:
  layout: small
phases:
  build:
  recall_sweep: {ef_search: [40, 200]}
YML
qdb=$SCRATCH/quant.sqlite
t0=$(date +%s)
vb_ns_run "$VBENCH" run --profile "$SCRATCH/quant.yml" --out "$qdb" >"$SCRATCH/quant.out" 2>"$SCRATCH/quant.err"
rc=$?
ok $rc "the quantization matrix (q8, noquant, bin) runs in one campaign ($(($(date +%s) - t0)) s)"
[ $rc -eq 0 ] || tail -20 "$SCRATCH/quant.err" | diag
q "$qdb" "SELECT config, ef_search, printf('%.4f', recall) FROM sweep_result ORDER BY config, ef_search" | diag
q "$qdb" "SELECT config, index_bytes, engine_version FROM build_result ORDER BY config" | diag
rq() { q "$qdb" "SELECT recall FROM sweep_result WHERE config = 'redis[quantization=$1]' AND ef_search = $2"; }
mem() { q "$qdb" "SELECT index_bytes FROM build_result WHERE config = 'redis[quantization=$1]'"; }
for ef in 40 200; do
    is "$(echo "$(rq noquant $ef) >= $(rq q8 $ef) && $(rq q8 $ef) > $(rq bin $ef)" | bc)" "1" \
       "ef_search $ef: recall noquant $(rq noquant $ef) >= q8 $(rq q8 $ef) > bin $(rq bin $ef)"
done
is "$(echo "$(mem noquant) > $(mem q8) && $(mem q8) > $(mem bin)" | bc)" "1" \
   "memory the other way: noquant $(mem noquant) > q8 $(mem q8) > bin $(mem bin) bytes (MEMORY USAGE)"
like "$(q "$qdb" "SELECT group_concat(engine_version, ' | ') FROM build_result")" "quant-type f32" \
     "VINFO confirms the server stored float32 for noquant"
like "$(q "$qdb" "SELECT group_concat(engine_version, ' | ') FROM build_result")" "quant-type bin" "and binary for bin"
is "$(q "$qdb" "SELECT COUNT(DISTINCT value) FROM manifest WHERE key LIKE 'server.%.probe_answer'")" "1" \
   "one server for the three configurations"
"$VBENCH" report "$qdb" -o "$SCRATCH/quant-report" --quiet >/dev/null 2>&1
rep=$(cat "$SCRATCH/quant-report/report.md" 2>/dev/null)
like "$rep" "redis[quantization=noquant]" "one report: noquant"
like "$rep" "redis[quantization=q8]" "one report: q8"
like "$rep" "redis[quantization=bin]" "one report: bin"

# ---- 2b. unstable's Redis 8.0.6 from db-sid (recipe parameter redis_version=unstable) ---------------------------
cat >"$SCRATCH/sid.yml" <<YML
name: rs-sid
k: 10
datasets:
  - {name: synth, source: synthetic, rows: 2000, queries: 50, dim: 16, metric: angular, seed: 3}
engines:
  - {name: redis, recipe: redis redis_version=unstable, m: 16, ef_construction: 100}
phases:
  build:
  recall_sweep: {ef_search: [40, 200]}
YML
sdb=$SCRATCH/sid.sqlite
vb_ns_run "$VBENCH" run --profile "$SCRATCH/sid.yml" --engines redis --out "$sdb" >/dev/null 2>"$SCRATCH/sid.err"
rc=$?; ok $rc "a campaign on redis_version=unstable exits 0"; [ $rc -eq 0 ] || tail -20 "$SCRATCH/sid.err" | diag
like "$(q "$sdb" "SELECT value FROM manifest WHERE key = 'server.redis.probe_answer'")" "Redis 8.0.6" \
     "the server answers as unstable's Redis 8.0.6"
is "$(q "$sdb" "SELECT value FROM manifest WHERE key = 'server.redis.image.suite'")" "sid" "from the db-sid image (Debian unstable)"
like "$(q "$sdb" "SELECT value FROM manifest WHERE key = 'server.redis.package.redis-server'")" "8.0.6" "its package version"
is "$(q "$sdb" "SELECT COUNT(*) FROM sweep_result WHERE engine = 'redis' AND recall > 0.9 AND errors = 0")" "2" \
   "both sweep points answer with recall above 0.9"

# ---- 3. a euclidean dataset is refused before anything starts ---------------------------------------------------
cat >"$SCRATCH/eu.yml" <<YML
name: rs-euclid
k: 10
datasets:
  - {name: synth, source: synthetic, rows: 2000, queries: 50, dim: 16, metric: euclidean, seed: 3}
engines:
  - {name: redis, recipe: redis}
phases:
  build:
  recall_sweep: {ef_search: [40]}
YML
edb=$SCRATCH/eu.sqlite
out=$(vb_ns_run "$VBENCH" run --profile "$SCRATCH/eu.yml" --engines redis --out "$edb" 2>&1)
rc=$?
ok $([ $rc -ne 0 ]; echo $?) "a euclidean dataset with redis: the campaign is refused (exit $rc)"
like "$out" "dataset 'synth': its metric is euclidean" "the message names the dataset and the metric"
like "$out" "cosine" "and says what vector sets compare by"
ok $([ ! -e "$edb" ] && [ ! -e "$edb.d" ]; echo $?) "nothing was created (no results database, no server directory)"

vb_ns_stop
ok $? "the namespace tears down"
done_testing
