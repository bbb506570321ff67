-- Views over the results tables: derived data only, so they are recreated whenever a results database is
-- opened for writing, and created as TEMP views when one is opened for reading (show, status): an older
-- file is read with the current definitions. Each view is one statement starting with the words create view.

CREATE VIEW v_build AS
    SELECT b.engine, b.dataset, b.rows, b.load_s, b.build_s, b.first_query_s, b.rows_per_s, b.index_bytes,
           b.table_bytes, b.client_cpu_s, b.engine_version
    FROM build_result AS b JOIN plan ON plan.key = b.item_key
    ORDER BY plan.seq;

CREATE VIEW v_recall_sweep AS
    SELECT s.engine, s.dataset, s.ef_search, s.recall, s.id_overlap, s.qps, s.p50_ms, s.p95_ms, s.p99_ms,
           s.queries, s.short_answers, s.errors, s.duplicate_answers
    FROM sweep_result AS s JOIN plan ON plan.key = s.item_key
    ORDER BY plan.seq;

-- "Best QPS whose recall still passes" 0.90 / 0.95 / 0.99, per engine and dataset (NULL: never reached).
CREATE VIEW v_recall_targets AS
    SELECT engine, dataset,
           MAX(CASE WHEN recall >= 0.90 THEN qps END) AS qps_at_0_90,
           MAX(CASE WHEN recall >= 0.95 THEN qps END) AS qps_at_0_95,
           MAX(CASE WHEN recall >= 0.99 THEN qps END) AS qps_at_0_99
    FROM sweep_result
    GROUP BY engine, dataset
    ORDER BY MIN(rowid);

-- Efficiency QPS(n) / (n x QPS(1)) is shown only when the client kept at least n/2 queries in flight;
-- otherwise the row says why not (SPEC 4). QPS(1) is the mean over the closed-loop 1-client windows of the same
-- pair. An open-loop window (target_rate set) has no efficiency: its QPS is what the target asked for.
CREATE VIEW v_concurrency AS
    SELECT w.engine, w.dataset, w.clients, w.repeat, w.qps, w.p50_ms, w.p99_ms, w.p999_ms, w.in_flight,
           w.qps_x_p50, w.fraction_in_call_mean AS fraction_in_call,
           CASE WHEN w.target_rate IS NULL AND w.in_flight >= w.clients / 2.0 AND one.qps1 > 0
                THEN w.qps / (w.clients * one.qps1) END AS efficiency,
           CASE WHEN w.target_rate IS NOT NULL THEN 'open loop: QPS is set by the target rate'
                WHEN one.qps1 IS NULL THEN 'no 1-client window to compare with'
                WHEN w.in_flight < w.clients / 2.0
                THEN printf('refused: in flight %.2f < %d/2, the client did not keep the queries in flight',
                            w.in_flight, w.clients) END AS efficiency_refused,
           w.client_cpu_s, w.errors, w.target_rate, w.late_starts, w.lag_p99_ms
    FROM window_result AS w JOIN plan ON plan.key = w.item_key
    LEFT JOIN (SELECT engine, dataset, AVG(qps) AS qps1 FROM window_result WHERE clients = 1 AND target_rate IS NULL
               GROUP BY engine, dataset) AS one ON one.engine = w.engine AND one.dataset = w.dataset
    ORDER BY plan.seq;

CREATE VIEW v_filtered AS
    SELECT f.engine, f.dataset, f.selectivity, f.passing_rows, f.ef_search, f.recall, f.id_overlap, f.qps,
           f.p99_ms, f.short_answers, f.queries, f.errors, f.duplicate_answers
    FROM filtered_result AS f JOIN plan ON plan.key = f.item_key
    ORDER BY plan.seq;

CREATE VIEW v_churn AS
    SELECT c.engine, c.dataset,
           MAX(CASE WHEN stage = 'before' THEN qps END) AS qps_before,
           MAX(CASE WHEN stage = 'after' THEN qps END) AS qps_after,
           MAX(CASE WHEN stage = 'before' THEN recall END) AS recall_before,
           MAX(CASE WHEN stage = 'after' THEN recall END) AS recall_after,
           MAX(CASE WHEN stage IN ('reinsert', 'checkpoint') THEN rows_done END) AS rows_done,
           MAX(rows_planned) AS rows_planned,
           -- over all attempts: rows inserted / seconds spent inserting them, each attempt counted up to its last
           -- committed report (a crashed attempt up to its last checkpoint); restores after a resume are untimed
           (SELECT SUM(a.rows) / NULLIF(SUM(a.secs), 0) FROM
               (SELECT MAX(r.rows_done) - r.rows_from AS rows, MAX(r.seconds) AS secs FROM churn_result AS r
                WHERE r.item_key = c.item_key AND r.stage IN ('reinsert', 'checkpoint') GROUP BY r.rows_from) AS a)
               AS rows_per_s,
           SUM(CASE WHEN stage = 'reinsert' THEN 1 ELSE 0 END) AS attempts,
           COALESCE(MAX(CASE WHEN stage = 'reinsert' THEN completed END), 0) AS completed,
           MAX(CASE WHEN stage = 'reinsert' THEN ids_reused END) AS ids_reused,
           MAX(CASE WHEN stage = 'maintain' THEN seconds END) AS maintain_s
    FROM churn_result AS c JOIN plan ON plan.key = c.item_key
    GROUP BY c.item_key
    ORDER BY MIN(plan.seq);

CREATE VIEW v_progress AS
    SELECT status, COUNT(*) AS items FROM plan GROUP BY status;

-- Per plan item: the server's memory peaks (cgroup, with page cache; RSS summed over its processes, shared
-- memory once per process; Pss, shared memory once) and CPU seconds.
CREATE VIEW v_server_phase AS
    SELECT s.engine, s.item_key AS item, p.phase, p.seq, COUNT(*) AS samples,
           MAX(s.t) - MIN(s.t) AS seconds,
           MAX(s.cgroup_bytes) AS peak_cgroup_bytes, MAX(s.rss_bytes) AS peak_rss_bytes,
           MAX(s.pss_bytes) AS peak_pss_bytes,
           MAX(s.cpu_s) - MIN(s.cpu_s) AS server_cpu_s
    FROM server_sample AS s LEFT JOIN plan AS p ON p.key = s.item_key
    GROUP BY s.engine, s.item_key;

-- One row per server the orchestrator ran: its confinement as systemd applied it, and its life's peaks.
CREATE VIEW v_servers AS
    SELECT e.engine,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.unit.cpu_affinity' THEN m.value END) AS cpus,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.unit.memory_max' THEN CAST(m.value AS INTEGER) END) AS memory_max,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.unit.dev_shm_bytes' THEN CAST(m.value AS INTEGER) END) AS dev_shm_bytes,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.ready_s' THEN CAST(m.value AS REAL) END) AS ready_s,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.at_stop.peak_cgroup_bytes' THEN CAST(m.value AS INTEGER) END) AS peak_cgroup_bytes,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.at_stop.peak_rss_bytes' THEN CAST(m.value AS INTEGER) END) AS peak_rss_bytes,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.at_stop.peak_pss_bytes' THEN CAST(m.value AS INTEGER) END) AS peak_pss_bytes,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.at_stop.cpu_s' THEN CAST(m.value AS REAL) END) AS cpu_s,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.at_stop.total' THEN CAST(m.value AS INTEGER) END) AS disk_bytes,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.unit' THEN m.value END) AS unit
    FROM (SELECT DISTINCT engine FROM server_log) AS e
    JOIN manifest AS m ON m.key LIKE 'server.' || e.engine || '.%'
    GROUP BY e.engine;

-- The load is bound by the server, not by vbench, when the client's CPU seconds during the build item are at
-- most 25 % of the server's (issue #5).
CREATE VIEW v_load_cpu AS
    SELECT b.engine, b.dataset, b.item_key AS item, b.client_cpu_s, sp.server_cpu_s,
           CASE WHEN sp.server_cpu_s > 0 THEN b.client_cpu_s / sp.server_cpu_s END AS client_to_server
    FROM build_result AS b JOIN v_server_phase AS sp ON sp.item = b.item_key AND sp.engine = b.engine;

-- Validity: everything that makes a number less than it seems, one row per finding (SPEC 6). Short answers,
-- answers that repeat an id, failed queries, refused efficiency, a saturated client, open-loop late starts, a
-- churn that did not complete, a client that may have bound the load, a server that died, a server near its
-- memory limit, a plan that does not use the vector index.
CREATE VIEW v_validity AS
    SELECT engine, dataset, item_key AS item, 'short answers' AS "check",
           printf('%d of %d answers had fewer than k distinct rows (recall %.4f)', short_answers, queries, recall)
               AS detail
    FROM sweep_result WHERE short_answers > 0
    UNION ALL
    SELECT engine, dataset, item_key, 'short answers',
           printf('%d of %d answers had fewer than k distinct rows at %s (%d rows pass)', short_answers, queries,
                  filter, passing_rows)
    FROM filtered_result WHERE short_answers > 0
    UNION ALL
    -- an engine that returns the same row twice in one answer (MariaDB 11.8.9 in filtered answers): the answer is
    -- scored on its distinct ids, so each repeat is a miss (metrics/recall.h), counted here and not an error
    SELECT engine, dataset, item_key, 'duplicate ids',
           printf('%d of %d answers repeated an id (first: %s); repeats count as misses', duplicate_answers, queries,
                  COALESCE(duplicate_example, 'not recorded'))
    FROM sweep_result WHERE duplicate_answers > 0
    UNION ALL
    SELECT engine, dataset, item_key, 'duplicate ids',
           printf('%d of %d answers repeated an id at %s (first: %s); repeats count as misses', duplicate_answers,
                  queries, filter, COALESCE(duplicate_example, 'not recorded'))
    FROM filtered_result WHERE duplicate_answers > 0
    UNION ALL
    SELECT engine, dataset, item_key, 'duplicate ids',
           printf('%d of %d answers %s the churn repeated an id (first: %s); repeats count as misses',
                  duplicate_answers, queries, stage, COALESCE(duplicate_example, 'not recorded'))
    FROM churn_result WHERE stage IN ('before', 'after') AND duplicate_answers > 0
    UNION ALL
    SELECT engine, dataset, item_key, 'failed queries', printf('%d of %d queries failed', errors, queries)
    FROM sweep_result WHERE errors > 0
    UNION ALL
    SELECT engine, dataset, item_key, 'failed queries', printf('%d of %d queries failed', errors, queries)
    FROM filtered_result WHERE errors > 0
    UNION ALL
    SELECT engine, dataset, item_key, 'failed queries', printf('%d queries failed in the window', errors)
    FROM window_result WHERE errors > 0
    UNION ALL
    SELECT c.engine, c.dataset, w.item_key, 'refused efficiency', c.efficiency_refused
    FROM v_concurrency AS c JOIN window_result AS w
         ON w.engine = c.engine AND w.dataset = c.dataset AND w.clients = c.clients AND w.repeat = c.repeat
            AND w.target_rate IS NULL
    WHERE c.efficiency_refused LIKE 'refused%'
    UNION ALL
    -- the client threads used at least 90 % of the CPUs their agent may use: the client may be the bottleneck
    -- (with an embedded engine the search itself runs in those threads, so this is expected there)
    SELECT w.engine, w.dataset, w.item_key, 'client CPU saturated',
           printf('client threads used %.2f CPU-s per second of window on %d CPUs', w.client_cpu_s / w.window_s,
                  a.n_cpus)
    FROM window_result AS w
    JOIN (SELECT id, length(cpus) - length(replace(cpus, ',', '')) + 1 AS n_cpus FROM agent
          WHERE cpus NOT LIKE '%-%') AS a ON a.id = w.agent
    WHERE w.window_s > 0 AND w.client_cpu_s / w.window_s >= 0.9 * MIN(a.n_cpus, w.clients)
    UNION ALL
    SELECT engine, dataset, item_key, 'late starts',
           printf('%d of %d open-loop queries started late (target %.0f/s, achieved %.0f/s)', late_starts, queries,
                  target_rate, qps)
    FROM window_result WHERE target_rate IS NOT NULL AND late_starts > 0.05 * queries
    UNION ALL
    SELECT engine, dataset, NULL, 'churn incomplete',
           printf('%d of %d rows reinserted before the limit', rows_done, rows_planned)
    FROM v_churn WHERE completed = 0
    UNION ALL
    SELECT engine, dataset, item_key, 'index not used',
           printf('the plan at ef_search %d does not scan the vector index: %s', ef_search, replace(plan, char(10), ' | '))
    FROM sweep_result WHERE index_used = 0
    UNION ALL
    SELECT engine, dataset, item_key, 'index not used',
           printf('the plan for %s does not scan the vector index: %s', filter, replace(plan, char(10), ' | '))
    FROM filtered_result WHERE index_used = 0
    UNION ALL
    SELECT engine, dataset, item, 'client CPU during load',
           printf('the client used %.1f CPU-s while the server used %.1f (%.0f %%, above 25 %%): the client may bound the load',
                  client_cpu_s, server_cpu_s, 100.0 * client_to_server)
    FROM v_load_cpu WHERE client_to_server > 0.25
    UNION ALL
    SELECT engine, NULL, NULL, 'server died', message FROM server_log WHERE state = 'died'
    UNION ALL
    SELECT sp.engine, NULL, sp.item, 'memory pressure',
           printf('server cgroup memory peaked at %.1f MiB, %.0f %% of its limit', sp.peak_cgroup_bytes / 1048576.0,
                  100.0 * sp.peak_cgroup_bytes / CAST(m.value AS REAL))
    FROM v_server_phase AS sp JOIN manifest AS m ON m.key = 'server.' || sp.engine || '.unit.memory_max'
    WHERE CAST(m.value AS REAL) > 0 AND sp.peak_cgroup_bytes > 0.9 * CAST(m.value AS REAL);
