#!/usr/bin/env bash
# Issue 25, "what must be shown" 1: the streaming phase on pgvector and MariaDB, the servers started by the
# orchestrator as systemd units in a namespace booted once (deploy/systemd-ns), beside hnswlib. Half of 3000 rows
# built, the rest inserted at 300 rows/s while two clients search: per stage the recall against the rows visible
# when the window began (and, for contrast, against the full corpus), achieved = offered where the engine keeps
# up, freshness, and every scheduled row inserted.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ns-servers.sh"
vb_ns_servers_boot

cat >"$SCRATCH/s.yml" <<YML
name: ss
k: 10
datasets:
  - {name: ss, source: synthetic, rows: 3000, queries: 40, dim: 16, clusters: 8, metric: euclidean, seed: 5}
engines:
  - {name: pgvector, recipe: pgvector}
  - {name: mariadb, recipe: mariadb}
  - {name: hnswlib, m: 16, ef_construction: 64}
phases:
  build:
  streaming: {insert_rate: [300], insert_batch: 20, stages: [0.7, 0.9, 1.0], window_s: 0.5, clients: 2, ef_search: 40}
YML
db=$SCRATCH/s.sqlite
t0=$(date +%s)
vb_ns_run "$VBENCH" run --profile "$SCRATCH/s.yml" --out "$db" --quiet >"$SCRATCH/s.out" 2>"$SCRATCH/s.err"
rc=$?
ok $rc "the streaming campaign on pgvector, mariadb and hnswlib exits 0 ($(($(date +%s) - t0)) s)"
[ $rc -eq 0 ] || tail -20 "$SCRATCH/s.err" | diag
q "$db" "SELECT key, status, error FROM plan WHERE status <> 'done'" | diag
is "$(q "$db" "SELECT engine || ':' || COUNT(*) FROM v_streaming GROUP BY engine ORDER BY engine" | tr '\n' ' ')" \
   "hnswlib:4 mariadb:4 pgvector:4 " "three stage windows and one at rest per engine"
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE errors = 0 AND queries > 0 AND recall >= 0.8")" "12" \
   "every window answered without errors, recall >= 0.8 against the visible rows"
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE at_rest = 1 AND rows_inserted_total = 1500 AND rows_scheduled_total = 1500 AND rows_visible = 3000")" \
   "3" "at rest: all 1500 scheduled rows inserted on every engine"
# Whether a server keeps 300 rows/s depends on the host's load: on a quiet run all three kept it (pgvector 291-307,
# MariaDB 297-306 rows/s), on a loaded one (two cores shared with other builds) pgvector achieved 159 of 303 and
# MariaDB 209 of 304 at stage 0.7. hnswlib kept it in both (275-308). So: hnswlib keeps up, and a server that does
# not is named by the validity section, never hidden.
is "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE engine = 'hnswlib' AND at_rest = 0 AND rows_inserted > 0 AND shortfall_rows <= 20")" \
   "$(q "$db" "SELECT COUNT(*) FROM v_streaming WHERE engine = 'hnswlib' AND at_rest = 0 AND rows_inserted > 0")" \
   "hnswlib keeps 300 rows/s (shortfall within one batch at every stage)"
is "$(q "$db" "SELECT COUNT(*) FROM (SELECT DISTINCT engine FROM v_streaming WHERE at_rest = 0 AND offered_rows_s > 0 AND achieved_rows_s < 0.95 * offered_rows_s)")" \
   "$(q "$db" "SELECT COUNT(*) FROM v_validity WHERE \"check\" = 'insert rate not kept'")" \
   "every engine that fell behind the offered rate is a validity finding: $(q "$db" "SELECT engine || ' ' || detail FROM v_validity WHERE \"check\" = 'insert rate not kept'" | tr '\n' ';')"
is "$(q "$db" "SELECT COUNT(*) FROM (SELECT engine FROM v_streaming GROUP BY engine HAVING SUM(fresh_probes) > 0)")" "3" \
   "freshness probes ran on every engine"
q "$db" "SELECT engine, IIF(at_rest, 'rest', printf('%g', stage)), rows_visible, printf('%.3f', recall),
         printf('%.3f', recall_full), printf('%.0f', qps), printf('%.2f', p99_ms),
         printf('%.0f/%.0f', achieved_rows_s, offered_rows_s), printf('%.3f', max_lag_s),
         printf('%.2f', fresh_p50_ms), printf('%.2f', fresh_p99_ms), fresh_never || '/' || fresh_probes
         FROM v_streaming" | sed "s/^/# stream: /"
q "$db" "SELECT engine, printf('%.2f', throughput_ratio), printf('%.2f', p99_ratio) FROM v_streaming_cost" | sed "s/^/# cost: /"
is "$(vb_ns_run systemctl list-units --all --no-legend --plain 'vbench-*.service' | awk '$3 == "active"' | wc -l)" "0" \
   "no server unit is left running"
done_testing
