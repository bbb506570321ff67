#!/usr/bin/env bash
# Configurations on recipe-started servers (issue 14, "what must be shown" 1), inside the test systemd namespace
# (deploy/systemd-ns): one `vbench run` of pgvector with variant [vector, halfvec] x iterative_scan [off,
# relaxed_order] and MariaDB with m [6, 16], both servers started by the orchestrator from their recipes and the
# engine image. Checked: each engine's configurations run on ONE server (one start and one stop in server_log,
# not one per configuration); a build per distinct index (iterative_scan is a search-time setting, so the
# relaxed_order configurations search the table their off twin built, in the same server; m changes the index,
# so each m builds); each configuration's own table in the server (MariaDB's table files, pgvector's recorded
# plans); `show` has a labelled row per configuration and point; the halfvec index is smaller than the vector
# one; at 1 % selectivity relaxed_order has fewer short answers than off.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/ns-servers.sh"
vb_ns_servers_boot

cat >"$SCRATCH/mxs.yml" <<'YML'
name: mxs
k: 10
datasets: [{name: t, source: synthetic, rows: 5000, queries: 100, dim: 32, clusters: 16, metric: euclidean, seed: 3}]
engines:
  - name: pgvector
    recipe: pgvector
    m: 8
    ef_construction: 32
    variant: [vector, halfvec]
    iterative_scan: [off, relaxed_order]
  - name: mariadb
    recipe: mariadb
    m: [6, 16]
resources: {layout: small}
phases:
  build: {}
  recall_sweep: {ef_search: [10, 40], queries: 100}
  filtered: {selectivity: [0.01], queries: 50, ef_search: 40}
YML
db=$SCRATCH/mxs.sqlite
t0=$(date +%s)
vb_ns_run env VBENCH_CACHE="$SCRATCH/cache" "$VBENCH" run --profile "$SCRATCH/mxs.yml" --out "$db" \
    >"$SCRATCH/run.out" 2>"$SCRATCH/run.err"
rc=$?
ok $rc "one vbench run of six configurations on two recipe-started servers exits 0 ($(($(date +%s) - t0)) s)"
[ $rc -eq 0 ] || tail -30 "$SCRATCH/run.err" | diag
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every item is done"

# --- one server per engine --------------------------------------------------------------------------------------
is "$(q "$db" "SELECT group_concat(engine || ':' || state, ' ') FROM (SELECT engine, state FROM server_log ORDER BY rowid)")" \
   "pgvector:ready pgvector:stopped mariadb:ready mariadb:stopped" \
   "server_log: each engine's server started once and stopped once, not once per configuration"
is "$(grep -c 'starting the .* server' "$SCRATCH/run.err")" "2" "the terminal says two servers start"
# Every server, every phase it ran for at least half a second (two sampler periods): a cgroup and an RSS peak (the property 62-orchestrator asks
# of dev's five). A phase whose items all took less is left out: the sampler takes a sample every 250 ms, and this
# profile's MariaDB sweep items (100 queries on 5,000 x 32) took less than that in a fresh-machine run, so no
# sample can fall inside them; a phase with an item of two periods or more must have one.
q "$db" "SELECT phase, engine, printf('%.2f', (julianday(finished_at) - julianday(started_at)) * 86400) FROM plan" | diag
for e in pgvector mariadb; do
    is "$(q "$db" "SELECT group_concat(phase, ' ') FROM (SELECT DISTINCT phase FROM v_server_phase WHERE engine = '$e' AND peak_rss_bytes > 0 AND peak_cgroup_bytes > 0
                   AND phase IN (SELECT phase FROM plan WHERE (engine = '$e' OR engine LIKE '$e[%')
                                 AND (julianday(finished_at) - julianday(started_at)) * 86400 >= 0.5) ORDER BY phase)")" \
       "$(q "$db" "SELECT group_concat(phase, ' ') FROM (SELECT DISTINCT phase FROM plan WHERE (engine = '$e' OR engine LIKE '$e[%')
                   AND (julianday(finished_at) - julianday(started_at)) * 86400 >= 0.5 ORDER BY phase)")" \
       "$e: per-phase peaks (cgroup and RSS) for every phase with an item of half a second or more"
done
like "$(q "$db" "SELECT value FROM manifest WHERE key = 'server.pgvector.unit'")" "vbench-mxs-pgvector" \
     "the pgvector server's unit is named after the engine, not a configuration"
n=$(q "$db" "SELECT COUNT(DISTINCT p.engine) FROM server_sample AS s JOIN plan AS p ON p.key = s.item_key
             WHERE s.engine = 'pgvector'")
is "$n" "4" "the pgvector server's samples are tied to the items of all four of its configurations"
# A build of a few thousand rows on an idle machine can finish between two server samples: the ratio is asked
# of every build that has samples (which are tied to it by item), and of at least two of the four.
sampled=$(q "$db" "SELECT COUNT(DISTINCT b.item_key) FROM build_result AS b JOIN server_sample AS s ON s.item_key = b.item_key")
[ "$sampled" -ge 2 ]; ok $? "at least two of the four builds have server samples ($sampled)"
is "$(q "$db" "SELECT COUNT(*) FROM v_load_cpu")" "$sampled" \
   "the load's client/server CPU figures are there for each build with server samples, whatever its label"

# --- builds: one per distinct index -----------------------------------------------------------------------------
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE phase = 'build'")" "4" "four builds for six configurations"
is "$(q "$db" "SELECT group_concat(config, ' ') FROM (SELECT config FROM build_result ORDER BY config)")" \
   "mariadb[m=16] mariadb[m=6] pgvector[variant=halfvec,iterative_scan=off] pgvector[variant=vector,iterative_scan=off]" \
   "the builds: both m values (m changes the index), the off configuration of each variant (iterative_scan does not)"
is "$(q "$db" "SELECT COUNT(*) FROM event WHERE message LIKE '%rebuilding it untimed%'")" "0" \
   "the relaxed_order configurations find their twin's table in the same server (no untimed rebuild)"
is "$(q "$db" "SELECT COUNT(DISTINCT config) || ' ' || COUNT(*) FROM sweep_result")" "6 12" "every configuration sweeps"
is "$(q "$db" "SELECT COUNT(DISTINCT config) FROM filtered_result")" "6" "every configuration runs the filtered point"
is "$(q "$db" "SELECT COUNT(*) FROM sweep_result WHERE recall >= 0.5")" "12" "and finds its neighbours (recall >= 0.5 everywhere)"

# --- each configuration's own table in the server -----------------------------------------------------------------
for v in vector halfvec; do
    plan=$(q "$db" "SELECT plan FROM sweep_result WHERE config = 'pgvector[variant=$v,iterative_scan=relaxed_order]' AND ef_search = 40")
    like "$plan" "vb_pgvector_variant_${v}_iterative_scan_off" "pgvector $v, relaxed_order: the plan scans the table its off twin built"
done
tables=$(cd "$db.d/servers/mariadb/data" 2>/dev/null && ls */vb_mariadb_m_*.frm 2>/dev/null | xargs -n1 basename 2>/dev/null | sort | tr '\n' ' ')
is "$tables" "vb_mariadb_m_16.frm vb_mariadb_m_6.frm " "MariaDB's data directory has one table per m"
# the recipe gives MariaDB a temporary directory beside its data (deploy/engines/mariadb.yml: the image's /tmp is shared
# by every unit of the image, where two bootstraps at once collided on their temporary tables' names); mariadbd does
# not start with a --tmpdir that is missing, so the campaign's success says it used it
[ -d "$db.d/servers/mariadb/tmp" ]
ok $? "MariaDB's temporary files have a directory of their own (servers/mariadb/tmp), not the image's shared /tmp"
iv=$(q "$db" "SELECT index_bytes FROM build_result WHERE config = 'pgvector[variant=vector,iterative_scan=off]'")
ih=$(q "$db" "SELECT index_bytes FROM build_result WHERE config = 'pgvector[variant=halfvec,iterative_scan=off]'")
[ -n "$iv" ] && [ -n "$ih" ] && [ "$ih" -lt "$iv" ]
ok $? "the halfvec index is smaller than the vector one ($ih < $iv bytes)"
off=$(q "$db" "SELECT short_answers FROM filtered_result WHERE config = 'pgvector[variant=vector,iterative_scan=off]'")
rel=$(q "$db" "SELECT short_answers FROM filtered_result WHERE config = 'pgvector[variant=vector,iterative_scan=relaxed_order]'")
[ -n "$off" ] && [ -n "$rel" ] && [ "$rel" -lt "$off" ]
ok $? "at 1 % selectivity relaxed_order has fewer short answers than off ($rel < $off of 50)"

# --- show: one labelled row per configuration and point -----------------------------------------------------------
"$VBENCH" show "$db" >"$SCRATCH/show.txt"
for c in 'pgvector[variant=vector,iterative_scan=off]' 'pgvector[variant=vector,iterative_scan=relaxed_order]' \
         'pgvector[variant=halfvec,iterative_scan=off]' 'pgvector[variant=halfvec,iterative_scan=relaxed_order]' \
         'mariadb[m=6]' 'mariadb[m=16]'; do
    n=$(grep -cF "$c " "$SCRATCH/show.txt")
    [ "$n" -ge 3 ]; ok $? "show has labelled rows of $c ($n: two sweep points and the filtered point at least)"
done

# --- issue 36.5: the sweep warms the engine before its first point ------------------------------------------------
# Each configuration is a session of its own: its first point (ef_search 10) ran the 100 queries once, uncounted, then
# a window over them to a second in all, before measuring; the second did not. Measured cold, MariaDB's first point was the slower one
# (1,008 QPS at ef_search 10 against 2,643 at 20 on fashion-mnist); warmed, QPS falls as ef_search rises: on a quiet
# host 5009 vs 1815 (m=16) and 3388 vs 1144 QPS (m=6) here. The order is printed, not asserted: these points are 100
# queries of 0.05-0.2 s, and at a load average of 10-20 (two cores shared with other builds) one point read 82 QPS
# and the next 382, with the warm-up as without it.
is "$(q "$db" "SELECT COUNT(*) FROM sweep_result WHERE ef_search = 10 AND warmup_queries >= 100 AND warmup_s >= 0.99")" "6" \
   "every configuration's first sweep point records its warm-up (the 100 queries and more, a second or more)"
is "$(q "$db" "SELECT COUNT(*) FROM sweep_result WHERE ef_search = 40 AND warmup_queries IS NOT NULL")" "0" \
   "the later points have none"
q "$db" "SELECT config, ef_search, printf('%.0f', qps), COALESCE(warmup_queries || ' in ' || printf('%.3f s', warmup_s), '-')
         FROM sweep_result ORDER BY config, ef_search" | diag
echo "# MariaDB's sweep (QPS; load average $(cut -d' ' -f1 /proc/loadavg)): $(q "$db" "SELECT group_concat(config || ' ' || ef_search || ': ' || printf('%.0f', qps), ', ') FROM sweep_result WHERE engine = 'mariadb'")"

# --- issue 36.7: the version a server's builds recorded, matched to a matrix's series -------------------------------
# The readiness probe ran before the build created the extension; each configuration's build recorded its own
# engine.LABEL.version. The provenance table takes the build's, for the entry's server.
is "$(q "$db" "SELECT COUNT(*) FROM v_engine_provenance WHERE engine = 'pgvector' AND server_version LIKE '%pgvector 0.8%'
               AND server_version NOT LIKE '%not %'")" "1" \
   "v_engine_provenance: pgvector's version is the build's: $(q "$db" "SELECT server_version FROM v_engine_provenance WHERE engine = 'pgvector'")"
! grep -qE 'not installed|not created' "$SCRATCH/show.txt"
ok $? "vbench show's provenance table does not say pgvector is not installed"
# --- the report of a matrix of server engines (issue 36.15) -------------------------------------------------------
"$VBENCH" report "$db" -o "$SCRATCH/report" --quiet
ok $? "vbench report of the six configurations"
dur=$(sed -n '/>Durability</,/<\/table>/p' "$SCRATCH/report/report.html" | sed 's/<wbr>//g; s/<td [^>]*>/<td>/g')
like "$dur" "<td>pgvector[variant=halfvec,iterative_scan=off]</td><td>server</td>" \
     "Durability: a matrix configuration is its entry's server (it was called embedded)"
! grep -q 'embedded' <<<"$dur"; ok $? "Durability: no configuration of these two servers is called embedded"
over=$(vb_report_overflow "$SCRATCH/report/report.html"); rc=$?
[ $rc -eq 0 ] && [ -z "$over" ]; ok $? "every table of the report fits its page in Chromium at 1400 px${over:+: $over}"
/usr/bin/python3 - "$SCRATCH/report/report.html" <<'PY'
import re, sys
t = re.sub(r'<td [^>]*>', '<td>', open(sys.argv[1]).read().replace('<wbr>', ''))
rows = re.findall(r"<tr><td>(pgvector\[[^<]*|mariadb\[[^<]*)</td><td>server</td><td>([^<]*)</td><td>([^<]*)</td>", t)
print("# engines: %s" % rows)
good = [s for s, v, o in rows if ("pgvector 0.8" in v or "MariaDB" in v or "11.8" in v) and o != "-"]
sys.exit(0 if len(good) == 6 else 1)
PY
ok $? "the report's engine table: each configuration with its entry's server version and origin"

is "$(vb_ns_run systemctl list-units --all --no-legend --plain 'vbench-*.service' | awk '$3 == "active"' | wc -l)" "0" \
   "no server unit is left running"
vb_ns_stop
ok $? "the namespace tears down"
done_testing
