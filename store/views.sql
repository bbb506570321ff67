-- Views over the results tables: derived data only, so they are recreated whenever a results database is
-- opened for writing, and created as TEMP views when one is opened for reading (show, status): an older
-- file is read with the current definitions. Each view is one statement starting with the words create view.
-- A view's engine column is the configuration's label (issue 14: result rows hold the adapter in engine and the
-- label in config; an older file has no config, and its engine was the label).

-- attempts: the attempts whose load work load_s sums (a load continued from its checkpoint after restarts).
-- build: which build of the configuration (profile build_repeats: one row per build, 1..N; 1 in an older file).
CREATE VIEW v_build AS
    SELECT COALESCE(b.config, b.engine) AS engine, b.dataset, b.rows, b.load_s, b.build_s, b.first_query_s, b.rows_per_s, b.index_bytes,
           b.table_bytes, b.client_cpu_s, b.engine_version, COALESCE(b.attempts, 1) AS attempts,
           COALESCE(b.build, 1) AS build
    FROM build_result AS b JOIN plan ON plan.key = b.item_key
    ORDER BY plan.seq;

-- One row per point (configuration, dataset, ef_search, clients) over its repeats (phases.recall_sweep.repeats):
-- QPS and the latency percentiles are the medians of the repeats (the mean of the middle two for an even count),
-- qps_min / qps_max their range; recall and overlap the mean, rounded to 12 places so that three repeats of recall
-- 0.9 average to 0.9 and pass the 0.90 floor of v_recall_targets (a float sum can land at 0.8999999999999999);
-- counts summed. One repeat: the row as it was. With several builds (build_repeats) the point pools every build's
-- repeats (repeats counts them all; builds says how many builds); v_build_spread shows the builds apart.
-- The per-repeat rows stay in sweep_result. The recall distribution (recall_dist; NULL from an older agent): the
-- lowest minimum of the repeats, and the mean of their p1, p10, p50 and shares (v_recall_dist: each repeat's own).
CREATE VIEW v_recall_sweep AS
    WITH r AS (
        SELECT COALESCE(s.config, s.engine) AS engine, s.dataset, s.ef_search, s.clients, s.recall, s.id_overlap,
               s.qps, s.mean_ms, s.p50_ms, s.p95_ms, s.p99_ms, s.p999_ms, s.queries, s.short_answers, s.errors,
               s.duplicate_answers, d.recall_min, d.recall_p1, d.recall_p10, d.recall_p50, d.zero_share,
               d.below_half_share, plan.seq, COALESCE(s.build, 1) AS build, COUNT(*) OVER w AS n,
               ROW_NUMBER() OVER (w ORDER BY s.qps) AS rq,
               ROW_NUMBER() OVER (w ORDER BY s.mean_ms) AS rmean,
               ROW_NUMBER() OVER (w ORDER BY s.p50_ms) AS r50, ROW_NUMBER() OVER (w ORDER BY s.p95_ms) AS r95,
               ROW_NUMBER() OVER (w ORDER BY s.p99_ms) AS r99, ROW_NUMBER() OVER (w ORDER BY s.p999_ms) AS r999
        FROM sweep_result AS s JOIN plan ON plan.key = s.item_key LEFT JOIN recall_dist AS d ON d.result_key = s.result_key
        WINDOW w AS (PARTITION BY COALESCE(s.config, s.engine), s.dataset, s.ef_search, s.clients))
    SELECT engine, dataset, ef_search, ROUND(AVG(recall), 12) AS recall, ROUND(AVG(id_overlap), 12) AS id_overlap,
           AVG(CASE WHEN rq IN ((n + 1) / 2, (n + 2) / 2) THEN qps END) AS qps,
           AVG(CASE WHEN rmean IN ((n + 1) / 2, (n + 2) / 2) THEN mean_ms END) AS mean_ms,
           AVG(CASE WHEN r50 IN ((n + 1) / 2, (n + 2) / 2) THEN p50_ms END) AS p50_ms,
           AVG(CASE WHEN r95 IN ((n + 1) / 2, (n + 2) / 2) THEN p95_ms END) AS p95_ms,
           AVG(CASE WHEN r99 IN ((n + 1) / 2, (n + 2) / 2) THEN p99_ms END) AS p99_ms,
           AVG(CASE WHEN r999 IN ((n + 1) / 2, (n + 2) / 2) THEN p999_ms END) AS p999_ms,
           MAX(queries) AS queries, SUM(short_answers) AS short_answers, SUM(errors) AS errors,
           SUM(duplicate_answers) AS duplicate_answers, clients, COUNT(*) AS repeats, MIN(qps) AS qps_min,
           MAX(qps) AS qps_max, MIN(recall_min) AS recall_min, ROUND(AVG(recall_p1), 12) AS recall_p1,
           ROUND(AVG(recall_p10), 12) AS recall_p10, ROUND(AVG(recall_p50), 12) AS recall_p50,
           ROUND(AVG(zero_share), 12) AS zero_share, ROUND(AVG(below_half_share), 12) AS below_half_share,
           MIN(seq) AS seq, COUNT(DISTINCT build) AS builds
    FROM r
    GROUP BY engine, dataset, ef_search, clients
    ORDER BY MIN(seq);

-- The spread across builds (profile build_repeats: HNSW builds are not deterministic), one row per sweep point of a
-- configuration built more than once, beside the spread across query repeats. Each build's point first: recall the
-- mean over its repeats, QPS the median of its repeats (as v_recall_sweep), qps_rep_min / qps_rep_max the range of
-- its repeats. Then across the builds: recall_mean the mean of the builds' recalls, recall_min / recall_max their
-- range; qps_mean, qps_min / qps_max likewise over the builds' median QPS; qps_spread = (qps_max - qps_min) /
-- qps_mean, the relative spread across builds, against qps_repeat_spread, the widest relative range of one build's
-- query repeats (NULL with one repeat per build). No interval: a handful of builds is too few for one.
CREATE VIEW v_build_spread AS
    WITH r AS (
        SELECT COALESCE(s.config, s.engine) AS engine, s.dataset, s.ef_search, s.clients, COALESCE(s.build, 1) AS build,
               s.recall, s.qps, plan.seq, COUNT(*) OVER w AS n, ROW_NUMBER() OVER (w ORDER BY s.qps) AS rq
        FROM sweep_result AS s JOIN plan ON plan.key = s.item_key
        WINDOW w AS (PARTITION BY COALESCE(s.config, s.engine), s.dataset, s.ef_search, s.clients, COALESCE(s.build, 1))),
    b AS (
        SELECT engine, dataset, ef_search, clients, build, AVG(recall) AS recall,
               AVG(CASE WHEN rq IN ((n + 1) / 2, (n + 2) / 2) THEN qps END) AS qps, MIN(qps) AS qps_rep_min,
               MAX(qps) AS qps_rep_max, COUNT(*) AS repeats, MIN(seq) AS seq
        FROM r GROUP BY engine, dataset, ef_search, clients, build)
    SELECT engine, dataset, ef_search, clients, COUNT(*) AS builds, MIN(repeats) AS repeats,
           ROUND(AVG(recall), 12) AS recall_mean, MIN(recall) AS recall_min, MAX(recall) AS recall_max,
           AVG(qps) AS qps_mean, MIN(qps) AS qps_min, MAX(qps) AS qps_max,
           (MAX(qps) - MIN(qps)) / NULLIF(AVG(qps), 0) AS qps_spread,
           IIF(MIN(repeats) > 1, MAX((qps_rep_max - qps_rep_min) / NULLIF(qps, 0)), NULL) AS qps_repeat_spread,
           MIN(seq) AS seq
    FROM b
    GROUP BY engine, dataset, ef_search, clients
    HAVING COUNT(*) > 1
    ORDER BY MIN(seq);

-- "Best QPS whose recall still passes" 0.90 / 0.95 / 0.99, per configuration, dataset and client count (NULL:
-- never reached; a sweep without a clients list has one client), over the points of v_recall_sweep: a repeated
-- point counts with its median QPS, not its luckiest repeat, and QPS at 4 clients never stands for 1 client's.
CREATE VIEW v_recall_targets AS
    SELECT engine, dataset, clients,
           MAX(CASE WHEN recall >= 0.90 THEN qps END) AS qps_at_0_90,
           MAX(CASE WHEN recall >= 0.95 THEN qps END) AS qps_at_0_95,
           MAX(CASE WHEN recall >= 0.99 THEN qps END) AS qps_at_0_99
    FROM v_recall_sweep
    GROUP BY engine, dataset, clients
    ORDER BY MIN(seq);

-- The distribution of per-query recall of every measured point, one row per result (each repeat its own): the
-- phase, the point in words, the mean recall and the distribution (recall_dist: nearest-rank percentiles over the
-- exact per-query values, docs/metrics.md "Recall distribution"). per_query: the per-query values are kept (show
-- --worst reads them); answers: the point kept every query's returned rows too (sweep_result.answers, the annb
-- export), so a reader can look at what a hard query got. Results from an older agent have no row.
CREATE VIEW v_recall_dist AS
    SELECT x.engine, x.dataset, x.phase, x.point, x.recall, d.queries, d.recall_min, d.recall_p1, d.recall_p10,
           d.recall_p50, d.zero_share, d.below_half_share, d.query_recall IS NOT NULL AS per_query, x.answers,
           d.result_key, d.item_key
    FROM recall_dist AS d JOIN (
        SELECT result_key, COALESCE(config, engine) AS engine, dataset, 'recall_sweep' AS phase,
               printf('ef_search %d, %d client%s', ef_search, clients, IIF(clients = 1, '', 's')) AS point, recall,
               answers IS NOT NULL AS answers, ef_search AS o1, clients AS o2
        FROM sweep_result
        UNION ALL
        SELECT result_key, COALESCE(config, engine), dataset, 'filtered',
               printf('%s %g, ef_search %d', COALESCE(predicate, 'range'), selectivity, ef_search), recall, 0,
               selectivity, ef_search
        FROM filtered_result
        UNION ALL
        SELECT result_key, COALESCE(config, engine), dataset, 'churn', printf('%s, repeat %d', stage, COALESCE(repeat, 1)),
               recall, 0, stage = 'after', repeat
        FROM churn_result
        UNION ALL
        SELECT result_key, COALESCE(config, engine), dataset, 'streaming',
               IIF(at_rest, 'at rest', printf('stage %g', stage)) || printf(', attempt %d', attempt), recall, 0,
               stage_index, attempt
        FROM streaming_result
        UNION ALL
        SELECT result_key, COALESCE(config, engine), dataset, 'mixed',
               printf('window %d (%s), attempt %d', window_index, phase, attempt), recall, 0, window_index, attempt
        FROM mixed_result) AS x ON x.result_key = d.result_key
    JOIN plan ON plan.key = d.item_key
    ORDER BY plan.seq, x.o1, x.o2, d.result_key;

-- One row per concurrency window (each repeat of each point; v_concurrency_points summarises them per point).
-- queries_sent = queries + warm-up + edge queries: every query the clients sent in the item (docs/metrics.md).
-- server_ms_per_query: the server's own execution time per call over the item; server_share / outside_share: that
-- over the client's mean latency and the rest. server_cores_busy: the unit's CPU seconds per second of the window,
-- against server_cores, the CPUs the unit was given (docs/metrics.md).
-- Efficiency QPS(n) / (n x QPS(1)) is shown only when the client kept at least n/2 queries in flight;
-- otherwise the row says why not (docs/design.md §4). QPS(1) is the median over the closed-loop 1-client windows (its
-- repeats) of the same configuration and dataset. An open-loop window (target_rate set) has no efficiency: its QPS is what the target asked for.
CREATE VIEW v_concurrency AS
    SELECT COALESCE(w.config, w.engine) AS engine, w.dataset, w.clients, w.repeat, w.qps, w.mean_ms, w.p50_ms, w.p95_ms,
           w.p99_ms, w.p999_ms, w.in_flight,
           w.qps_x_p50, w.fraction_in_call_mean AS fraction_in_call,
           CASE WHEN w.target_rate IS NULL AND w.in_flight >= w.clients / 2.0 AND one.qps1 > 0
                THEN w.qps / (w.clients * one.qps1) END AS efficiency,
           CASE WHEN w.target_rate IS NOT NULL THEN 'open loop: QPS is set by the target rate'
                WHEN one.qps1 IS NULL THEN 'no 1-client window to compare with'
                WHEN w.in_flight < w.clients / 2.0
                THEN printf('refused: in flight %.2f < %d/2, the client did not keep the queries in flight',
                            w.in_flight, w.clients) END AS efficiency_refused,
           w.client_cpu_s, w.errors, w.target_rate, w.late_starts, w.lag_p99_ms, w.queries, w.warmup_queries,
           w.edge_queries, w.queries + w.warmup_queries + w.edge_queries AS queries_sent, w.server_calls,
           CASE WHEN w.server_window_calls > 0 THEN 1e3 * w.server_window_exec_s / w.server_window_calls END
               AS server_ms_per_query,
           CASE WHEN w.server_window_calls > 0 AND w.mean_ms > 0
                THEN 1e3 * w.server_window_exec_s / w.server_window_calls / w.mean_ms END AS server_share,
           CASE WHEN w.server_window_calls > 0 AND w.mean_ms > 0
                THEN 1 - 1e3 * w.server_window_exec_s / w.server_window_calls / w.mean_ms END AS outside_share, cpu.cores_busy AS server_cores_busy,
           (SELECT CAST(m.value AS INTEGER) FROM manifest AS m WHERE m.key = 'server.' || cpu.server || '.unit.cpus')
               AS server_cores, plan.seq
    FROM window_result AS w JOIN plan ON plan.key = w.item_key
    -- the server unit's CPU seconds over the window (the orchestrator's samples inside it) / the time they span
    LEFT JOIN (SELECT w2.result_key, MIN(s.engine) AS server,
                      CASE WHEN COUNT(*) >= 2 AND MAX(s.t) > MIN(s.t) THEN (MAX(s.cpu_s) - MIN(s.cpu_s)) / (MAX(s.t) - MIN(s.t))
                      END AS cores_busy
               FROM window_result AS w2 JOIN server_sample AS s ON s.item_key = w2.item_key
                    AND s.t BETWEEN w2.window_start AND w2.window_start + w2.window_s
               GROUP BY w2.result_key) AS cpu ON cpu.result_key = w.result_key
    LEFT JOIN (SELECT cfg, dataset, AVG(qps) AS qps1 FROM
                   (SELECT COALESCE(config, engine) AS cfg, dataset, qps,
                           ROW_NUMBER() OVER (PARTITION BY COALESCE(config, engine), dataset ORDER BY qps) AS rn,
                           COUNT(*) OVER (PARTITION BY COALESCE(config, engine), dataset) AS n
                    FROM window_result WHERE clients = 1 AND target_rate IS NULL)
               WHERE rn IN ((n + 1) / 2, (n + 2) / 2) GROUP BY cfg, dataset) AS one
         ON one.cfg = COALESCE(w.config, w.engine) AND one.dataset = w.dataset
    ORDER BY plan.seq;

-- One row per concurrency point (configuration, dataset, clients, target_rate: NULL for the closed loop) over its
-- repeats (phases.concurrency.repeats), the per-window rows of v_concurrency summarised as v_recall_sweep does:
-- the median of each figure over the windows, qps_min / qps_max their range, errors and late starts summed.
-- Efficiency is the median QPS over n x the median 1-client QPS (the closed-loop point of 1 client), shown when
-- the median window kept at least n/2 queries in flight; v_validity still names every refused window.
CREATE VIEW v_concurrency_points AS
    WITH r AS (
        SELECT engine, dataset, clients, target_rate, qps, mean_ms, p50_ms, p95_ms, p99_ms, p999_ms, in_flight, qps_x_p50,
               fraction_in_call, client_cpu_s, lag_p99_ms, errors, late_starts, seq,
               COUNT(*) OVER w AS n, ROW_NUMBER() OVER (w ORDER BY qps) AS rq,
               ROW_NUMBER() OVER (w ORDER BY mean_ms) AS rmean, ROW_NUMBER() OVER (w ORDER BY p95_ms) AS r95,
               ROW_NUMBER() OVER (w ORDER BY p50_ms) AS r50, ROW_NUMBER() OVER (w ORDER BY p99_ms) AS r99,
               ROW_NUMBER() OVER (w ORDER BY p999_ms) AS r999, ROW_NUMBER() OVER (w ORDER BY in_flight) AS rif,
               ROW_NUMBER() OVER (w ORDER BY qps_x_p50) AS rqp, ROW_NUMBER() OVER (w ORDER BY fraction_in_call) AS rfc,
               ROW_NUMBER() OVER (w ORDER BY client_cpu_s) AS rcpu, ROW_NUMBER() OVER (w ORDER BY lag_p99_ms) AS rlag
        FROM v_concurrency
        WINDOW w AS (PARTITION BY engine, dataset, clients, target_rate)),
    p AS (
        SELECT engine, dataset, clients, target_rate, COUNT(*) AS repeats,
               AVG(CASE WHEN rq IN ((n + 1) / 2, (n + 2) / 2) THEN qps END) AS qps,
               MIN(qps) AS qps_min, MAX(qps) AS qps_max,
               AVG(CASE WHEN rmean IN ((n + 1) / 2, (n + 2) / 2) THEN mean_ms END) AS mean_ms,
               AVG(CASE WHEN r50 IN ((n + 1) / 2, (n + 2) / 2) THEN p50_ms END) AS p50_ms,
               AVG(CASE WHEN r95 IN ((n + 1) / 2, (n + 2) / 2) THEN p95_ms END) AS p95_ms,
               AVG(CASE WHEN r99 IN ((n + 1) / 2, (n + 2) / 2) THEN p99_ms END) AS p99_ms,
               AVG(CASE WHEN r999 IN ((n + 1) / 2, (n + 2) / 2) THEN p999_ms END) AS p999_ms,
               AVG(CASE WHEN rif IN ((n + 1) / 2, (n + 2) / 2) THEN in_flight END) AS in_flight,
               AVG(CASE WHEN rqp IN ((n + 1) / 2, (n + 2) / 2) THEN qps_x_p50 END) AS qps_x_p50,
               AVG(CASE WHEN rfc IN ((n + 1) / 2, (n + 2) / 2) THEN fraction_in_call END) AS fraction_in_call,
               AVG(CASE WHEN rcpu IN ((n + 1) / 2, (n + 2) / 2) THEN client_cpu_s END) AS client_cpu_s,
               AVG(CASE WHEN rlag IN ((n + 1) / 2, (n + 2) / 2) THEN lag_p99_ms END) AS lag_p99_ms,
               SUM(errors) AS errors, SUM(late_starts) AS late_starts, MIN(seq) AS seq
        FROM r
        GROUP BY engine, dataset, clients, target_rate)
    SELECT p.engine, p.dataset, p.clients, p.target_rate, p.repeats, p.qps, p.qps_min, p.qps_max, p.mean_ms, p.p50_ms,
           p.p95_ms, p.p99_ms, p.p999_ms, p.in_flight, p.qps_x_p50, p.fraction_in_call,
           CASE WHEN p.target_rate IS NULL AND p.in_flight >= p.clients / 2.0 AND one.qps > 0
                THEN p.qps / (p.clients * one.qps) END AS efficiency,
           CASE WHEN p.target_rate IS NOT NULL THEN 'open loop: QPS is set by the target rate'
                WHEN one.qps IS NULL THEN 'no 1-client window to compare with'
                WHEN p.in_flight < p.clients / 2.0
                THEN printf('refused: in flight %.2f < %d/2 (median of the windows), the client did not keep the ' ||
                            'queries in flight', p.in_flight, p.clients) END AS efficiency_refused,
           p.client_cpu_s, p.errors, p.late_starts, p.lag_p99_ms, p.seq
    FROM p LEFT JOIN p AS one
         ON one.engine = p.engine AND one.dataset = p.dataset AND one.clients = 1 AND one.target_rate IS NULL
    ORDER BY p.seq;

-- One row per point (predicate, selectivity) over its repeats (phases.filtered.repeats), as v_recall_sweep (the
-- recall distribution too); the
-- plan the engine chose for the point (its EXPLAIN, where it has one) beside it: index_used 1 / 0 and the text.
CREATE VIEW v_filtered AS
    WITH r AS (
        SELECT COALESCE(f.config, f.engine) AS engine, f.dataset, COALESCE(f.predicate, 'range') AS predicate,
               f.filter, f.index_used, f.plan, f.selectivity, f.passing_rows, f.passed_share, f.ef_search,
               f.recall, f.id_overlap, f.qps, f.mean_ms, f.p50_ms, f.p95_ms, f.p99_ms, f.p999_ms, f.short_answers,
               f.queries, f.errors, f.duplicate_answers, d.recall_min, d.recall_p1, d.recall_p10, d.recall_p50,
               d.zero_share, d.below_half_share,
               plan.seq, COUNT(*) OVER w AS n, ROW_NUMBER() OVER (w ORDER BY f.qps) AS rq,
               ROW_NUMBER() OVER (w ORDER BY f.mean_ms) AS rmean, ROW_NUMBER() OVER (w ORDER BY f.p50_ms) AS r50,
               ROW_NUMBER() OVER (w ORDER BY f.p95_ms) AS r95, ROW_NUMBER() OVER (w ORDER BY f.p99_ms) AS r99,
               ROW_NUMBER() OVER (w ORDER BY f.p999_ms) AS r999
        FROM filtered_result AS f JOIN plan ON plan.key = f.item_key LEFT JOIN recall_dist AS d ON d.result_key = f.result_key
        WINDOW w AS (PARTITION BY COALESCE(f.config, f.engine), f.dataset, COALESCE(f.predicate, 'range'),
                     f.selectivity, f.ef_search))
    SELECT engine, dataset, predicate, MAX(filter) AS filter, selectivity, MAX(passing_rows) AS passing_rows,
           MAX(passed_share) AS passed_share, ef_search, ROUND(AVG(recall), 12) AS recall,
           ROUND(AVG(id_overlap), 12) AS id_overlap, AVG(CASE WHEN rq IN ((n + 1) / 2, (n + 2) / 2) THEN qps END) AS qps,
           AVG(CASE WHEN rmean IN ((n + 1) / 2, (n + 2) / 2) THEN mean_ms END) AS mean_ms,
           AVG(CASE WHEN r50 IN ((n + 1) / 2, (n + 2) / 2) THEN p50_ms END) AS p50_ms,
           AVG(CASE WHEN r95 IN ((n + 1) / 2, (n + 2) / 2) THEN p95_ms END) AS p95_ms,
           AVG(CASE WHEN r99 IN ((n + 1) / 2, (n + 2) / 2) THEN p99_ms END) AS p99_ms,
           AVG(CASE WHEN r999 IN ((n + 1) / 2, (n + 2) / 2) THEN p999_ms END) AS p999_ms,
           SUM(short_answers) AS short_answers, MAX(queries) AS queries, SUM(errors) AS errors,
           SUM(duplicate_answers) AS duplicate_answers, COUNT(*) AS repeats, MIN(qps) AS qps_min, MAX(qps) AS qps_max,
           MIN(index_used) AS index_used,
           -- the plan's first line (the node that ran), e.g. "Index Scan using ... hnsw" or "Sort" over a Seq Scan
           MAX(substr(plan, 1, COALESCE(NULLIF(instr(plan, char(10)), 0) - 1, length(plan)))) AS plan,
           MIN(recall_min) AS recall_min, ROUND(AVG(recall_p1), 12) AS recall_p1,
           ROUND(AVG(recall_p10), 12) AS recall_p10, ROUND(AVG(recall_p50), 12) AS recall_p50,
           ROUND(AVG(zero_share), 12) AS zero_share, ROUND(AVG(below_half_share), 12) AS below_half_share,
           MIN(seq) AS seq
    FROM r
    GROUP BY engine, dataset, predicate, selectivity, ef_search
    ORDER BY MIN(seq);

-- Independent tags against real classes (issue 35), per engine, dataset and ef_search: the filter on the query's
-- own class (label_own: keeps its neighbourhood) and on another class (label_other: its true neighbours are all
-- far away) beside the range filter over tags independent of the vectors at the selectivity nearest the own
-- class's mean share (run `range` at that selectivity for a like-for-like row). One row per label_own point.
CREATE VIEW v_filtered_classes AS
    WITH tags AS (SELECT * FROM v_filtered WHERE predicate = 'range'),
         own AS (SELECT * FROM v_filtered WHERE predicate = 'label_own'),
         other AS (SELECT * FROM v_filtered WHERE predicate = 'label_other'),
         near AS (SELECT o.engine, o.dataset, o.ef_search, t.selectivity,
                         ROW_NUMBER() OVER (PARTITION BY o.engine, o.dataset, o.ef_search
                                            ORDER BY abs(t.selectivity - o.passed_share), t.selectivity) AS rank
                  FROM own AS o JOIN tags AS t
                       ON t.engine = o.engine AND t.dataset = o.dataset AND t.ef_search = o.ef_search)
    SELECT o.engine, o.dataset, o.ef_search,
           t.selectivity AS tags_selectivity, t.recall AS tags_recall, t.qps AS tags_qps,
           t.short_answers AS tags_short_answers,
           o.passed_share AS own_share, o.recall AS own_recall, o.qps AS own_qps, o.short_answers AS own_short_answers,
           x.passed_share AS other_share, x.recall AS other_recall, x.qps AS other_qps,
           x.short_answers AS other_short_answers, o.queries
    FROM own AS o
    LEFT JOIN other AS x ON x.engine = o.engine AND x.dataset = o.dataset AND x.ef_search = o.ef_search
    LEFT JOIN near AS nr ON nr.engine = o.engine AND nr.dataset = o.dataset AND nr.ef_search = o.ef_search
         AND nr.rank = 1
    LEFT JOIN tags AS t ON t.engine = o.engine AND t.dataset = o.dataset AND t.ef_search = o.ef_search
         AND t.selectivity = nr.selectivity
    ORDER BY o.seq;

-- One row per cold_start item (docs/metrics.md "Cold start"), measured or not applicable (status; reason says why).
-- warm_after: the queries until the rolling median of rolling_window cold queries came within tolerance (10 %) of
-- the warm median (NULL: not within the cold queries); time_to_warm says it in words.
CREATE VIEW v_cold_start AS
    SELECT COALESCE(c.config, c.engine) AS engine, c.dataset,
           CASE c.applicable WHEN 1 THEN 'measured' ELSE 'not applicable' END AS status, c.reason, c.ef_search,
           c.queries, c.first_ms, c.cold_mean_ms, c.cold_p50_ms, c.cold_max_ms, c.warm_first_ms, c.warm_mean_ms,
           c.warm_p50_ms, c.ratio_first, c.ratio_mean, c.ratio_p50, c.warm_after, c.warm_after_s,
           CASE WHEN c.applicable = 0 THEN NULL
                WHEN c.warm_after IS NULL THEN printf('not within %d queries', c.queries)
                ELSE printf('%d queries, %.3f s', c.warm_after, c.warm_after_s) END AS time_to_warm,
           c.rolling_window, c.tolerance, c.evicted_files, c.evicted_bytes, c.restart_s, c.errors,
           c.session_reopened,
           c.item_key AS item, plan.seq
    FROM cold_start_result AS c JOIN plan ON plan.key = c.item_key
    ORDER BY plan.seq;

-- Every query of every measured cold start, in order (the chart of latency against query number); warm_bound_ms is
-- the bound the rolling median must reach to count as warm again.
CREATE VIEW v_cold_start_queries AS
    SELECT COALESCE(c.config, c.engine) AS engine, c.dataset, q.pass, q.n, q.latency_ms, q.ok, q.rolling_p50_ms,
           c.warm_p50_ms, c.warm_p50_ms * (1 + c.tolerance) AS warm_bound_ms, c.rolling_window, c.item_key AS item
    FROM cold_start_query AS q JOIN cold_start_result AS c ON c.result_key = q.result_key
         JOIN plan ON plan.key = c.item_key
    ORDER BY plan.seq, q.pass, q.n;

-- One row per churn item. With phases.churn.repeats the before and after measurements ran several times each
-- around the one delete and reinsert (agent/phase_churn.c): QPS is their median, with its range
-- (qps_before_min / _max, qps_after_min / _max), recall their mean rounded to 12 places (as v_recall_sweep);
-- repeats counts the after measurements. One measurement each: the row as it was.
CREATE VIEW v_churn AS
    WITH m AS (
        SELECT item_key, stage, qps, COUNT(*) OVER w AS n, ROW_NUMBER() OVER (w ORDER BY qps) AS rq
        FROM churn_result WHERE stage IN ('before', 'after')
        WINDOW w AS (PARTITION BY item_key, stage)),
    med AS (
        SELECT item_key, AVG(CASE WHEN stage = 'before' AND rq IN ((n + 1) / 2, (n + 2) / 2) THEN qps END) AS qps_before,
               AVG(CASE WHEN stage = 'after' AND rq IN ((n + 1) / 2, (n + 2) / 2) THEN qps END) AS qps_after
        FROM m GROUP BY item_key)
    SELECT COALESCE(c.config, c.engine) AS engine, c.dataset,
           MAX(med.qps_before) AS qps_before,
           MAX(med.qps_after) AS qps_after,
           ROUND(AVG(CASE WHEN stage = 'before' THEN recall END), 12) AS recall_before,
           ROUND(AVG(CASE WHEN stage = 'after' THEN recall END), 12) AS recall_after,
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
           MAX(CASE WHEN stage = 'maintain' THEN seconds END) AS maintain_s,
           SUM(CASE WHEN stage = 'after' THEN 1 ELSE 0 END) AS repeats,
           MIN(CASE WHEN stage = 'before' THEN qps END) AS qps_before_min,
           MAX(CASE WHEN stage = 'before' THEN qps END) AS qps_before_max,
           MIN(CASE WHEN stage = 'after' THEN qps END) AS qps_after_min,
           MAX(CASE WHEN stage = 'after' THEN qps END) AS qps_after_max,
           c.item_key AS item, MIN(plan.seq) AS seq
    FROM churn_result AS c JOIN plan ON plan.key = c.item_key LEFT JOIN med ON med.item_key = c.item_key
    GROUP BY c.item_key
    ORDER BY MIN(plan.seq);

-- The bootstrap 95 % interval of the median QPS of every repeated point (metrics/bootstrap.h: 2000 resamples, a
-- fixed seed; NULL below 5 repeats), beside the point's row. It covers the spread across query repeats only: with
-- several builds (build_repeats) the sweep's interval resamples the repeats of the last build (the one the later
-- phases measure), never the builds pooled; the spread across builds is v_build_spread's. TEMP views on vbench's own connections only: they
-- call vbench's SQL functions vb_median_ci_lo / vb_median_ci_hi (store/views.c), which the sqlite3 shell
-- has not got, so they are never stored in the file (the points' views above are).
CREATE TEMP VIEW v_recall_sweep_ci AS
    SELECT v.*, c.qps_ci_lo, c.qps_ci_hi
    FROM v_recall_sweep AS v LEFT JOIN
         (SELECT COALESCE(config, engine) AS engine, dataset, ef_search, clients, vb_median_ci_lo(qps) AS qps_ci_lo,
                 vb_median_ci_hi(qps) AS qps_ci_hi
          FROM sweep_result AS s
          WHERE COALESCE(build, 1) = (SELECT MAX(COALESCE(x.build, 1)) FROM sweep_result AS x
                                      WHERE COALESCE(x.config, x.engine) = COALESCE(s.config, s.engine)
                                        AND x.dataset = s.dataset)
          GROUP BY 1, 2, 3, 4) AS c
         ON c.engine = v.engine AND c.dataset = v.dataset AND c.ef_search = v.ef_search AND c.clients = v.clients
    ORDER BY v.seq;

CREATE TEMP VIEW v_concurrency_points_ci AS
    SELECT v.*, c.qps_ci_lo, c.qps_ci_hi
    FROM v_concurrency_points AS v LEFT JOIN
         (SELECT engine, dataset, clients, target_rate, vb_median_ci_lo(qps) AS qps_ci_lo,
                 vb_median_ci_hi(qps) AS qps_ci_hi
          FROM v_concurrency GROUP BY 1, 2, 3, 4) AS c
         ON c.engine = v.engine AND c.dataset = v.dataset AND c.clients = v.clients AND c.target_rate IS v.target_rate
    ORDER BY v.seq;

CREATE TEMP VIEW v_filtered_ci AS
    SELECT v.*, c.qps_ci_lo, c.qps_ci_hi
    FROM v_filtered AS v LEFT JOIN
         (SELECT COALESCE(config, engine) AS engine, dataset, COALESCE(predicate, 'range') AS predicate, selectivity,
                 ef_search, vb_median_ci_lo(qps) AS qps_ci_lo, vb_median_ci_hi(qps) AS qps_ci_hi
          FROM filtered_result GROUP BY 1, 2, 3, 4, 5) AS c
         ON c.engine = v.engine AND c.dataset = v.dataset AND c.predicate = v.predicate
            AND c.selectivity = v.selectivity AND c.ef_search = v.ef_search
    ORDER BY v.seq;

CREATE TEMP VIEW v_churn_ci AS
    SELECT v.*, c.qps_before_ci_lo, c.qps_before_ci_hi, c.qps_after_ci_lo, c.qps_after_ci_hi
    FROM v_churn AS v LEFT JOIN
         (SELECT item_key, vb_median_ci_lo(CASE WHEN stage = 'before' THEN qps END) AS qps_before_ci_lo,
                 vb_median_ci_hi(CASE WHEN stage = 'before' THEN qps END) AS qps_before_ci_hi,
                 vb_median_ci_lo(CASE WHEN stage = 'after' THEN qps END) AS qps_after_ci_lo,
                 vb_median_ci_hi(CASE WHEN stage = 'after' THEN qps END) AS qps_after_ci_hi
          FROM churn_result GROUP BY item_key) AS c
         ON c.item_key = v.item
    ORDER BY v.seq;

-- The mixed phase (issue 38): one row per window of each item's last attempt (an interrupted item ran again from its
-- build), the write windows in order, then the one at rest and the one after maintenance. ids: uniform or zipf(S).
CREATE VIEW v_mixed AS
    SELECT COALESCE(r.config, r.engine) AS engine, r.dataset,
           IIF(r.zipf_s > 0, printf('zipf(%g)', r.zipf_s), 'uniform') AS ids, IIF(r.rate > 0, r.rate, NULL) AS rate,
           r.window_index, r.phase, r.clients, r.rows_live, r.recall, r.ghost_answers, r.stale_answers, r.ghost_example,
           r.qps, r.p50_ms, r.p95_ms, r.p99_ms, r.p999_ms, r.queries, r.answers_scored, r.short_answers, r.errors,
           r.update_done + r.delete_done + r.insert_done AS writes, r.writes_total, r.interval_s,
           r.update_p99_ms, r.delete_p99_ms, r.insert_p99_ms, r.fresh_probes, r.fresh_never, r.fresh_p50_ms,
           r.fresh_p99_ms, r.maintain_s, r.rows_engine, r.live_id_sum, r.live_id_sumsq, r.attempt, r.item_key,
           r.maintenance, r.rows_checked, r.rows_vectors_checked, r.rows_differ, r.rows_diff_example
    FROM mixed_result AS r JOIN plan ON plan.key = r.item_key
    WHERE r.attempt = (SELECT MAX(x.attempt) FROM mixed_result AS x WHERE x.item_key = r.item_key)
    ORDER BY plan.seq, r.window_index;

-- The mixed phase's write operations: one row per (window, operation) of v_mixed's windows: done, offered and
-- achieved per second over the window's interval, errors and latency.
CREATE VIEW v_mixed_ops AS
    SELECT v.engine, v.dataset, v.ids, v.window_index, v.phase, o.op, o.done, o.offered,
           IIF(r.interval_s > 0, o.done / r.interval_s, NULL) AS achieved_s,
           IIF(r.interval_s > 0 AND o.offered IS NOT NULL, o.offered / r.interval_s, NULL) AS offered_s,
           o.errors, o.mean_ms, o.p50_ms, o.p99_ms, o.max_ms, v.item_key
    FROM v_mixed AS v JOIN mixed_result AS r ON r.item_key = v.item_key AND r.attempt = v.attempt
                                             AND r.window_index = v.window_index
    JOIN (SELECT result_key, 'update' AS op, update_done AS done, update_offered AS offered, update_errors AS errors,
                 update_mean_ms AS mean_ms, update_p50_ms AS p50_ms, update_p99_ms AS p99_ms, update_max_ms AS max_ms
          FROM mixed_result
          UNION ALL
          SELECT result_key, 'delete', delete_done, delete_offered, delete_errors, delete_mean_ms, delete_p50_ms,
                 delete_p99_ms, delete_max_ms FROM mixed_result
          UNION ALL
          SELECT result_key, 'insert', insert_done, insert_offered, insert_errors, insert_mean_ms, insert_p50_ms,
                 insert_p99_ms, insert_max_ms FROM mixed_result) AS o ON o.result_key = r.result_key
    ORDER BY v.item_key, v.window_index, o.op;

-- The streaming phase (issue 25): one row per window of each item's last attempt (an interrupted item ran again
-- from its build), stages in order, the window at rest last. recall: against the rows visible when the window
-- began; shortfall_rows = rows scheduled but not yet inserted at the window's start (the lag, in rows).
CREATE VIEW v_streaming AS
    SELECT COALESCE(r.config, r.engine) AS engine, r.dataset, r.insert_rate, r.stage_index, r.stage, r.at_rest,
           r.clients, r.rows_visible, r.rows_total, r.recall, r.qps, r.p50_ms, r.p95_ms, r.p99_ms, r.p999_ms,
           r.queries, r.errors, r.fresh_rows_found, r.rows_during_window, r.offered_rows_s, r.achieved_rows_s,
           r.rows_scheduled, r.rows_inserted, r.interval_s, r.insert_p50_ms, r.insert_p99_ms, r.max_lag_s, r.fresh_probes,
           r.fresh_never, r.fresh_p50_ms, r.fresh_p99_ms, r.insert_errors, r.rows_inserted_total,
           r.rows_scheduled_total, r.rows_scheduled_total - r.rows_inserted_total AS shortfall_rows, r.recall_full,
           r.rows_scheduled_window_end, r.fresh_row_max, r.interval_max_lag_s, r.attempt,
           r.item_key, r.fresh_node
    FROM streaming_result AS r JOIN plan ON plan.key = r.item_key
    WHERE r.attempt = (SELECT MAX(x.attempt) FROM streaming_result AS x WHERE x.item_key = r.item_key)
    ORDER BY plan.seq, r.stage_index;

-- The cost of concurrent writes: per streaming item, the mean QPS and the largest p99 of the stage windows that ran
-- while rows were inserted (rows_during_window > 0: acknowledged by the window's end, not by the end of its
-- scoring, since issue 36.1), against the window at rest on the same index.
CREATE VIEW v_streaming_cost AS
    SELECT s.engine, s.dataset, s.insert_rate, AVG(s.qps) AS ingest_qps, MAX(s.p99_ms) AS ingest_p99_ms,
           rest.qps AS rest_qps, rest.p99_ms AS rest_p99_ms,
           CASE WHEN rest.qps > 0 THEN AVG(s.qps) / rest.qps END AS throughput_ratio,
           CASE WHEN rest.p99_ms > 0 THEN MAX(s.p99_ms) / rest.p99_ms END AS p99_ratio
    FROM v_streaming AS s JOIN v_streaming AS rest ON rest.item_key = s.item_key AND rest.at_rest = 1
    WHERE s.at_rest = 0 AND s.rows_during_window > 0
    GROUP BY s.item_key;

CREATE VIEW v_progress AS
    SELECT status, COUNT(*) AS items FROM plan GROUP BY status;

-- Per plan item: the server's memory peaks (cgroup, with page cache; RSS summed over its processes, shared
-- memory once per process; Pss, shared memory once) and CPU seconds.
CREATE VIEW v_server_phase AS
    WITH d AS (
        SELECT s.*, LAG(s.t) OVER w AS prev_t, LAG(s.cpu_s) OVER w AS prev_cpu, LAG(s.item_key) OVER w AS prev_item
        FROM server_sample AS s WINDOW w AS (PARTITION BY s.engine ORDER BY s.t))
    -- seconds and CPU from one sample to the next of the same item: an item that ran in several attempts, with
    -- the server started anew for each (a resumed campaign), adds up its attempts, never the time between them
    -- (a step over 5 s: the server was not sampled) nor a server's CPU counter that began again at 0 (a restart:
    -- the new life's CPU so far counts)
    SELECT d.engine, d.item_key AS item, p.phase, p.seq, COUNT(*) AS samples,
           TOTAL(CASE WHEN d.prev_item IS d.item_key AND d.t - d.prev_t <= 5 THEN d.t - d.prev_t END) AS seconds,
           MAX(d.cgroup_bytes) AS peak_cgroup_bytes, MAX(d.rss_bytes) AS peak_rss_bytes,
           MAX(d.pss_bytes) AS peak_pss_bytes,
           TOTAL(CASE WHEN d.prev_item IS NOT d.item_key OR d.t - d.prev_t > 5 THEN NULL
                      WHEN d.cpu_s >= d.prev_cpu THEN d.cpu_s - d.prev_cpu ELSE d.cpu_s END) AS server_cpu_s
    FROM d LEFT JOIN plan AS p ON p.key = d.item_key
    GROUP BY d.engine, d.item_key;

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

-- Where each server engine came from (issue 17): the version the server reports (the build phase's answer, with
-- the extension created; before that, the readiness probe's), the package or the tarball and its sha256, the
-- compiler flags and target ISA of the build, and the widest SIMD its vector kernels use against the widest the
-- host of the server has (the orchestrator's facts, orchestrator/orchestrate.c).
-- Each series (a configuration's label, or an engine entry's name) and the engine entry it belongs to, which names
-- its server (server_log.engine, the manifest's server.ENTRY.*): pgvector[variant=halfvec] runs on the server of
-- entry pgvector. From the resolved profile; a file without one has no rows (a series is then its own entry).
CREATE VIEW v_series_entry AS
    SELECT je.value ->> '$.name' AS series, COALESCE(je.value ->> '$.entry', je.value ->> '$.name') AS entry
    FROM manifest AS m, json_each(m.value, '$.engines') AS je
    WHERE m.key = 'profile.resolved' AND json_valid(m.value);

-- The version: what the build recorded (engine.SERIES.version, read by the agent once the index was built, so with
-- the extension the build created), of the entry or of any of its configurations (issue 36.7: a matrix series
-- records its own key); the readiness probe's answer only when no build recorded one (it ran before any build:
-- pgvector's extension was not created yet).
CREATE VIEW v_engine_provenance AS
    SELECT e.engine,
           COALESCE(MAX(CASE WHEN m.key = 'engine.' || e.engine || '.version' THEN m.value END),
                    (SELECT MAX(x.value) FROM v_series_entry AS se JOIN manifest AS x
                         ON x.key = 'engine.' || se.series || '.version' WHERE se.entry = e.engine),
                    MAX(CASE WHEN m.key = 'server.' || e.engine || '.probe_answer' THEN m.value END)) AS server_version,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.provenance.source' THEN m.value END) AS source,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.image.name' THEN m.value END) AS image,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.image.suite' THEN m.value END) AS suite,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.provenance.source_sha256' THEN m.value END) AS sha256,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.provenance.flags' THEN m.value END) AS flags,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.provenance.target_isa' THEN m.value END) AS target_isa,
           COALESCE(MAX(CASE WHEN m.key = 'server.' || e.engine || '.provenance.kernel_isa' THEN m.value END),
                    MAX(CASE WHEN m.key = 'server.' || e.engine || '.provenance.target_isa' THEN m.value END)) AS kernel_isa,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.provenance.isa_missing' THEN m.value END) AS isa_missing,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.provenance.build_simd' THEN m.value END) AS build_simd,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.provenance.build_simd_bits' THEN CAST(m.value AS INTEGER) END)
               AS build_simd_bits,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.provenance.host_simd' THEN m.value END) AS host_simd,
           MAX(CASE WHEN m.key = 'server.' || e.engine || '.provenance.host_simd_bits' THEN CAST(m.value AS INTEGER) END)
               AS host_simd_bits
    FROM (SELECT DISTINCT engine FROM server_log) AS e
    JOIN manifest AS m ON m.key LIKE 'server.' || e.engine || '.%' OR m.key = 'engine.' || e.engine || '.version'
    GROUP BY e.engine;

-- The load is bound by the server, not by vbench, when the client's CPU seconds during the build item are at
-- most 25 % of the server's (issue #5). Joined on the item alone: the configurations of an engine share its server,
-- whose samples carry the server's name (the engine entry's), not the configuration's label.
CREATE VIEW v_load_cpu AS
    SELECT COALESCE(b.config, b.engine) AS engine, b.dataset, b.item_key AS item, b.client_cpu_s, sp.server_cpu_s,
           CASE WHEN sp.server_cpu_s > 0 THEN b.client_cpu_s / sp.server_cpu_s END AS client_to_server
    FROM build_result AS b JOIN v_server_phase AS sp ON sp.item = b.item_key;

-- Validity: everything that makes a number less than it seems, one row per finding (docs/design.md §6). Short answers,
-- answers that repeat an id, failed queries, refused efficiency, a saturated client, open-loop late starts, a
-- churn that did not complete, a client that may have bound the load, a server that died, a server near its
-- memory limit, a plan that does not use the vector index, an engine built for an ISA its host lacks or
-- narrower than its host's SIMD. From the sweep's points in ef_search order (medians over repeats, per client
-- count): QPS that rises by more than 20 % when ef_search rises (more work should not be faster: a cache
-- warming, a plan change, noise larger than the effect), a latency cliff (p99 more than 5x the previous
-- point's), recall that falls by more than 0.002 when ef_search rises. From the concurrency windows: QPS x p50
-- (the reference stand's Little's-law figure) and in flight (in-call time / window) differing by more than a
-- factor of 1.5: a heavy latency tail, where the median no longer speaks for the window.
-- Each result's cross-check of the server's own command counts (server_count): what the server says it ran since
-- the item's previous result beside what vbench sent; agrees 1 when equal. counted_as names the server's counter.
CREATE VIEW v_server_count AS
    SELECT COALESCE(p.engine, '?') AS engine, p.dataset, c.item_key AS item, c.result_key AS result, p.phase,
           c.command, c.sent, c.server, c.server IS NOT NULL AND c.server = c.sent AS agrees,
           CASE c.command WHEN 'search' THEN 'VSIM calls in INFO commandstats' ELSE 'VADD calls in INFO commandstats' END
               AS counted_as
    FROM server_count AS c LEFT JOIN plan AS p ON p.key = c.item_key;

-- The wait profile per concurrency window: each class and event's share of the window's samples (they sum to 1 per
-- window), and per class (v_window_wait_classes). unit: what samples count, session-samples (pgvector: a session
-- seen at a round), us (MariaDB: microseconds waited as performance_schema timed them, CPU the rest of the
-- statements' time) or calls (Redis: VSIM calls per bucket of its LATENCY HISTOGRAM, class 'VSIM latency', event
-- '<= B us'); NULL in files from before it was recorded (session-samples).
CREATE VIEW v_window_waits AS
    SELECT COALESCE(w.config, w.engine) AS engine, w.dataset, w.clients, w.repeat, x.wait_class, x.event, x.samples,
           COALESCE(w.wait_unit, 'session-samples') AS unit, x.rounds, 1.0 * x.samples / (SELECT SUM(y.samples) FROM window_wait AS y WHERE y.result_key = x.result_key)
               AS share
    FROM window_wait AS x JOIN window_result AS w ON w.result_key = x.result_key;

CREATE VIEW v_window_wait_classes AS
    SELECT engine, dataset, clients, repeat, wait_class, SUM(samples) AS samples, MAX(unit) AS unit, SUM(share) AS share,
           (SELECT event FROM v_window_waits AS t WHERE t.engine = v.engine AND t.dataset = v.dataset AND
                   t.clients = v.clients AND t.repeat = v.repeat AND t.wait_class = v.wait_class
            ORDER BY t.samples DESC LIMIT 1) AS top_event
    FROM v_window_waits AS v GROUP BY engine, dataset, clients, repeat, wait_class;

-- The server's own latency per concurrency window where its profile is a latency histogram (Redis: LATENCY HISTOGRAM
-- VSIM, buckets doubling from 1 us): the calls and the bucket bounds that hold half and 99 % of them (an upper bound:
-- the percentile is at most that many microseconds).
CREATE VIEW v_server_latency AS
    WITH b AS (SELECT x.result_key, CAST(substr(x.event, 4) AS INTEGER) AS bound_us, x.samples
               FROM window_wait AS x JOIN window_result AS w ON w.result_key = x.result_key
               WHERE w.wait_unit = 'calls' AND x.wait_class = 'VSIM latency'),
         c AS (SELECT result_key, bound_us, SUM(samples) OVER (PARTITION BY result_key ORDER BY bound_us) AS cum,
                      SUM(samples) OVER (PARTITION BY result_key) AS total FROM b)
    SELECT COALESCE(w.config, w.engine) AS engine, w.dataset, w.clients, w.repeat, MAX(c.total) AS calls,
           MIN(CASE WHEN c.cum >= 0.5 * c.total THEN c.bound_us END) AS p50_us_at_most,
           MIN(CASE WHEN c.cum >= 0.99 * c.total THEN c.bound_us END) AS p99_us_at_most
    FROM c JOIN window_result AS w ON w.result_key = c.result_key
    GROUP BY c.result_key;

-- The CPU profile of the window where scaling stopped: its hottest functions and their share of its samples.
CREATE VIEW v_server_profile AS
    SELECT p.config AS engine, p.dataset, p.clients, p.efficiency, p.samples AS window_samples, f.rank, f.function,
           f.samples, 1.0 * f.samples / p.samples AS share, p.item_key
    FROM server_profile AS p JOIN server_profile_function AS f ON f.item_key = p.item_key
    ORDER BY p.config, p.dataset, f.rank;

-- Where the time goes, per concurrency window with the server's accounting: the client's mean latency split into the
-- server's execution on CPU, its execution waiting (the wait profile's non-CPU share of it; none when the engine has
-- no wait profile) and the time outside the server's execution; ms per query, with the cores busy beside them.
CREATE VIEW v_time_split AS
    SELECT c.engine, c.dataset, c.clients, c.repeat, c.mean_ms, c.server_ms_per_query,
           c.server_ms_per_query * COALESCE(w.cpu_share, 1) AS server_cpu_ms,
           c.server_ms_per_query * (1 - COALESCE(w.cpu_share, 1)) AS server_wait_ms,
           c.mean_ms - c.server_ms_per_query AS outside_ms, c.server_share, w.cpu_share, w.top_wait, w.wait_unit,
           c.server_cores_busy, c.server_cores, c.efficiency, c.seq
    FROM v_concurrency AS c
    LEFT JOIN (SELECT engine, dataset, clients, repeat,
                      CASE WHEN MAX(unit) = 'calls' THEN NULL  -- a latency histogram says nothing of CPU and waits
                           ELSE SUM(CASE WHEN wait_class = 'CPU' THEN share ELSE 0 END) END AS cpu_share,
                      MAX(unit) AS wait_unit,
                      (SELECT t.wait_class || ':' || t.top_event FROM v_window_wait_classes AS t
                       WHERE t.engine = k.engine AND t.dataset = k.dataset AND t.clients = k.clients AND t.repeat = k.repeat
                         AND t.wait_class <> 'CPU' AND t.unit <> 'calls' ORDER BY t.share DESC LIMIT 1) AS top_wait
               FROM v_window_wait_classes AS k GROUP BY engine, dataset, clients, repeat) AS w
         ON w.engine = c.engine AND w.dataset = c.dataset AND w.clients = c.clients AND w.repeat = c.repeat
    WHERE c.server_ms_per_query IS NOT NULL AND c.target_rate IS NULL;

CREATE VIEW v_validity AS
    WITH sw AS (
        SELECT engine, dataset, clients, ef_search, qps, p99_ms, recall, LAG(ef_search) OVER w AS prev_ef,
               LAG(qps) OVER w AS prev_qps, LAG(p99_ms) OVER w AS prev_p99, LAG(recall) OVER w AS prev_recall
        FROM v_recall_sweep
        WINDOW w AS (PARTITION BY engine, dataset, clients ORDER BY ef_search))
    SELECT engine, dataset, NULL AS item, 'QPS rises with ef_search' AS "check",
           printf('QPS %.0f at ef_search %d, %.0f at %d (%d client%s): more work ran faster', prev_qps, prev_ef, qps,
                  ef_search, clients, CASE WHEN clients = 1 THEN '' ELSE 's' END) AS detail
    FROM sw WHERE prev_qps > 0 AND qps > 1.2 * prev_qps
    UNION ALL
    SELECT engine, dataset, NULL, 'latency cliff',
           printf('p99 %.3f ms at ef_search %d, %.1fx the %.3f ms at %d', p99_ms, ef_search, p99_ms / prev_p99,
                  prev_p99, prev_ef)
    FROM sw WHERE prev_p99 > 0 AND p99_ms > 5 * prev_p99
    UNION ALL
    SELECT engine, dataset, NULL, 'recall falls with ef_search',
           printf('recall %.4f at ef_search %d, %.4f at %d', prev_recall, prev_ef, recall, ef_search)
    FROM sw WHERE recall < prev_recall - 0.002
    UNION ALL
    SELECT engine, dataset, NULL, 'heavy latency tail',
           printf('%d clients, repeat %d: QPS x p50 = %.2f but %.2f in flight (in-call time / window): ' ||
                  'the median does not speak for the window', clients, repeat, qps_x_p50, in_flight)
    FROM v_concurrency
    WHERE target_rate IS NULL AND qps_x_p50 > 0 AND in_flight > 0
      AND (qps_x_p50 > 1.5 * in_flight OR in_flight > 1.5 * qps_x_p50)
    UNION ALL
    -- a streaming writer behind its schedule (nothing skipped: the rows came later): a finding for every stage whose
    -- writer achieved less than 95 % of the rate offered in it, or that began its window with more than 5 % of the
    -- rows due so far not in, each with its own shortfall and lag (issue 36.3: one per item hid later stages still
    -- 23 s behind)
    SELECT engine, dataset, item_key, 'insert rate not kept',
           printf('stage %g: %s, %d rows behind the schedule of %g rows/s at its window''s start, %s', stage,
                  CASE WHEN offered_rows_s > 0 THEN printf('%.0f of %.0f rows/s offered', achieved_rows_s,
                                                           offered_rows_s)
                       ELSE printf('%.0f rows/s after the schedule ended', achieved_rows_s) END,
                  shortfall_rows, insert_rate,
                  CASE WHEN interval_max_lag_s IS NOT NULL THEN printf('largest lag in the stage %.3f s',
                                                                       interval_max_lag_s)
                       ELSE printf('largest lag so far %.3f s', max_lag_s) END)
    FROM v_streaming WHERE insert_rate > 0 AND at_rest = 0
      AND ((offered_rows_s > 0 AND achieved_rows_s < 0.95 * offered_rows_s)
           OR shortfall_rows > 0.05 * rows_scheduled_total)
    UNION ALL
    -- the mixed phase (issue 38): an engine that returned deleted rows (ghosts), or whose row count after the writes
    -- is not the write log's, or whose rows id by id (and vector by vector) are not
    SELECT engine, dataset, item_key, 'deleted rows returned',
           printf('window %d (%s): %d answers named rows deleted before the window (first: %s)', window_index, phase,
                  ghost_answers, COALESCE(ghost_example, '?'))
    FROM v_mixed WHERE ghost_answers > 0
    UNION ALL
    SELECT engine, dataset, item_key, 'rows not the write log''s',
           printf('window %d (%s): the engine counts %d rows, the acknowledged writes leave %d', window_index, phase,
                  rows_engine, rows_live)
    FROM v_mixed WHERE rows_engine IS NOT NULL AND rows_engine <> rows_live
    UNION ALL
    SELECT engine, dataset, item_key, 'rows not the write log''s',
           printf('window %d (%s): %d of %d ids differ from the write log''s final state (%s)', window_index, phase,
                  rows_differ, rows_checked, COALESCE(rows_diff_example, '?'))
    FROM v_mixed WHERE rows_differ > 0
    UNION ALL
    SELECT COALESCE(config, engine) AS engine, dataset, item_key AS item, 'short answers',
           printf('%d of %d answers had fewer than k distinct rows (recall %.4f)', short_answers, queries, recall)
               AS detail
    FROM sweep_result WHERE short_answers > 0
    UNION ALL
    SELECT COALESCE(config, engine), dataset, item_key, 'short answers',
           printf('%d of %d answers had fewer than k distinct rows at %s (%d rows pass)', short_answers, queries,
                  filter, passing_rows)
    FROM filtered_result WHERE short_answers > 0
    UNION ALL
    -- a mean that hides queries with nothing right (issue 35, docs/metrics.md "Recall distribution"): a point whose
    -- mean recall passes 0.9 while some of its queries get recall 0 (one row per result; repeats each their own)
    SELECT engine, dataset, item_key, 'queries at recall 0',
           printf('%d of %d queries at recall 0 behind a mean recall of %.4f (%s, %s; p10 %.4f): show --worst names them',
                  CAST(round(zero_share * queries) AS INTEGER), queries, recall, phase, point, recall_p10)
    FROM v_recall_dist WHERE zero_share > 0 AND recall >= 0.9
    UNION ALL
    -- an engine that returns the same row twice in one answer (MariaDB 11.8.9 in filtered answers): the answer is
    -- scored on its distinct ids, so each repeat is a miss (metrics/recall.h), counted here and not an error
    SELECT COALESCE(config, engine), dataset, item_key, 'duplicate ids',
           printf('%d of %d answers repeated an id (first: %s); repeats count as misses', duplicate_answers, queries,
                  COALESCE(duplicate_example, 'not recorded'))
    FROM sweep_result WHERE duplicate_answers > 0
    UNION ALL
    SELECT COALESCE(config, engine), dataset, item_key, 'duplicate ids',
           printf('%d of %d answers repeated an id at %s (first: %s); repeats count as misses', duplicate_answers,
                  queries, filter, COALESCE(duplicate_example, 'not recorded'))
    FROM filtered_result WHERE duplicate_answers > 0
    UNION ALL
    SELECT COALESCE(config, engine), dataset, item_key, 'duplicate ids',
           printf('%d of %d answers %s the churn repeated an id (first: %s); repeats count as misses',
                  duplicate_answers, queries, stage, COALESCE(duplicate_example, 'not recorded'))
    FROM churn_result WHERE stage IN ('before', 'after') AND duplicate_answers > 0
    UNION ALL
    SELECT COALESCE(config, engine), dataset, item_key, 'failed queries', printf('%d of %d queries failed', errors, queries)
    FROM sweep_result WHERE errors > 0
    UNION ALL
    SELECT COALESCE(config, engine), dataset, item_key, 'failed queries', printf('%d of %d queries failed', errors, queries)
    FROM filtered_result WHERE errors > 0
    UNION ALL
    SELECT COALESCE(config, engine), dataset, item_key, 'failed queries', printf('%d queries failed in the window', errors)
    FROM window_result WHERE errors > 0
    UNION ALL
    SELECT COALESCE(config, engine), dataset, item_key, 'failed queries',
           printf('%d of %d cold start queries failed (first: %s); left out of its numbers', errors, 2 * queries,
                  COALESCE(first_error, 'not recorded'))
    FROM cold_start_result WHERE errors > 0
    UNION ALL
    -- the agent had restarted and opened the table after the cold restart: the open counted its rows, reading the
    -- table before the first query, so the numbers understate the cold start
    SELECT COALESCE(config, engine), dataset, item_key, 'cold start warmed',
           'the agent opened the table after the restart (it had restarted itself) and read its row count before the ' ||
           'first query: the cold numbers understate the cold start'
    FROM cold_start_result WHERE session_reopened = 1
    UNION ALL
    SELECT COALESCE(config, engine), dataset, item_key, 'nothing evicted',
           'the cold start evicted no file from the page cache (an empty data directory?): the server was not cold'
    FROM cold_start_result WHERE applicable = 1 AND COALESCE(evicted_files, 0) = 0
    UNION ALL
    SELECT c.engine, c.dataset, w.item_key, 'refused efficiency', c.efficiency_refused
    FROM v_concurrency AS c JOIN window_result AS w
         ON COALESCE(w.config, w.engine) = c.engine AND w.dataset = c.dataset AND w.clients = c.clients AND w.repeat = c.repeat
            AND w.target_rate IS NULL
    WHERE c.efficiency_refused LIKE 'refused%'
    UNION ALL
    -- the client threads used at least 90 % of the CPUs their agent may use: the client may be the bottleneck.
    -- Not for an embedded engine (manifest engine.NAME.kind): the search itself runs in those threads, so the
    -- CPU is the engine's, and a busy engine is what the window measures
    SELECT COALESCE(w.config, w.engine), w.dataset, w.item_key, 'client CPU saturated',
           printf('client threads used %.2f CPU-s per second of window on %d CPUs', w.client_cpu_s / w.window_s,
                  a.n_cpus)
    FROM window_result AS w
    JOIN (SELECT id, length(cpus) - length(replace(cpus, ',', '')) + 1 AS n_cpus FROM agent
          WHERE cpus NOT LIKE '%-%') AS a ON a.id = w.agent
    WHERE w.window_s > 0 AND w.client_cpu_s / w.window_s >= 0.9 * MIN(a.n_cpus, w.clients)
      AND NOT EXISTS (SELECT 1 FROM manifest WHERE key = 'engine.' || COALESCE(w.config, w.engine) || '.kind' AND value = 'embedded')
    UNION ALL
    SELECT COALESCE(config, engine), dataset, item_key, 'late starts',
           printf('%d of %d open-loop queries started late (target %.0f/s, achieved %.0f/s)', late_starts, queries,
                  target_rate, qps)
    FROM window_result WHERE target_rate IS NOT NULL AND late_starts > 0.05 * queries
    UNION ALL
    SELECT engine, dataset, NULL, 'churn incomplete',
           printf('%d of %d rows reinserted before the limit', rows_done, rows_planned)
    FROM v_churn WHERE completed = 0
    UNION ALL
    SELECT COALESCE(config, engine), dataset, item_key, 'index not used',
           printf('the plan at ef_search %d does not scan the vector index: %s', ef_search, replace(plan, char(10), ' | '))
    FROM sweep_result WHERE index_used = 0
    UNION ALL
    SELECT COALESCE(config, engine), dataset, item_key, 'index not used',
           printf('the plan for %s does not scan the vector index: %s', filter, replace(plan, char(10), ' | '))
    FROM filtered_result WHERE index_used = 0
    UNION ALL
    SELECT engine, dataset, item, 'client CPU during load',
           printf('the client used %.1f CPU-s while the server used %.1f (%.0f %%, above 25 %%): the client may bound the load',
                  client_cpu_s, server_cpu_s, 100.0 * client_to_server)
    FROM v_load_cpu WHERE client_to_server > 0.25
    UNION ALL
    -- the server's own count of the commands it ran for a result differs from what vbench sent (v_server_count)
    SELECT engine, dataset, item, 'server count mismatch',
           printf('%s: the server counted %s %s, vbench sent %d (%s)', result, COALESCE(server, 'unknown (it restarted)'),
                  CASE command WHEN 'search' THEN 'searches' ELSE 'row writes' END, sent, counted_as)
    FROM v_server_count WHERE NOT agrees
    UNION ALL
    -- the server's own executions of the kNN statement over a window (warm-up, window and the queries that ended
    -- after it) differ from what vbench sent (pg_stat_statements calls, performance_schema statement/com/Execute)
    SELECT COALESCE(w.config, w.engine), w.dataset, w.item_key, 'server count mismatch',
           printf('%d clients, repeat %d: the server executed the kNN statement %d times, vbench sent %d (%d in the ' ||
                  'window, %d in the warm-up, %d after it)', w.clients, w.repeat, w.server_calls,
                  w.queries + w.warmup_queries + w.edge_queries, w.queries, w.warmup_queries, w.edge_queries)
    FROM window_result AS w
    WHERE w.server_calls IS NOT NULL AND w.edge_queries IS NOT NULL
      AND w.server_calls <> w.queries + w.warmup_queries + w.edge_queries
    UNION ALL
    SELECT engine, NULL, NULL, 'server died', message FROM server_log WHERE state = 'died'
    UNION ALL
    -- measured on a table the agent rebuilt (untimed) because the server had lost the built one (its data
    -- deleted, a server started empty): the item that rebuilt it and every later one of that configuration and
    -- dataset; the build row is of the table before (the agent's event says "the server lost the table")
    SELECT DISTINCT p.engine, p.dataset, p.key, 'measured after a rebuild',
           printf('measured on a table rebuilt untimed at %s, after the server lost the built one (item %s): the build row is of the table before',
                  e.at, e.item_key)
    FROM event AS e JOIN plan AS r ON r.key = e.item_key
    JOIN plan AS p ON p.engine = r.engine AND p.dataset = r.dataset AND p.phase <> 'build' AND p.status = 'done'
        AND (p.key = r.key OR p.started_at >= e.at)
    WHERE e.kind = 'agent_log' AND e.message LIKE '%the server lost the table%'
    UNION ALL
    -- build_repeats: an item found the index of another build than its own (only a change of plan order gets there)
    -- and the agent built its build again, untimed: that item and the later ones of its build measured an index
    -- that is not the one its build row timed (the agent's event says "this item measures build")
    SELECT DISTINCT p.engine, p.dataset, p.key, 'measured after a rebuild',
           printf('measured on build %d made again untimed at %s (item %s found another build''s index): the build row of build %d is of the index before',
                  COALESCE(r.build, 1), e.at, e.item_key, COALESCE(r.build, 1))
    FROM event AS e JOIN plan AS r ON r.key = e.item_key
    JOIN plan AS p ON p.engine = r.engine AND p.dataset = r.dataset AND p.phase <> 'build' AND p.status = 'done'
        AND p.build IS r.build AND (p.key = r.key OR p.started_at >= e.at)
    WHERE e.kind = 'agent_log' AND e.message LIKE '%this item measures build%'
    UNION ALL
    SELECT sp.engine, NULL, sp.item, 'memory pressure',
           printf('server cgroup memory peaked at %.1f MiB, %.0f %% of its limit', sp.peak_cgroup_bytes / 1048576.0,
                  100.0 * sp.peak_cgroup_bytes / CAST(m.value AS REAL))
    FROM v_server_phase AS sp JOIN manifest AS m ON m.key = 'server.' || sp.engine || '.unit.memory_max'
    WHERE CAST(m.value AS REAL) > 0 AND sp.peak_cgroup_bytes > 0.9 * CAST(m.value AS REAL)
    UNION ALL
    -- an engine compiled for CPU features the host of its server lacks: it dies of SIGILL on the first such
    -- instruction, or (where it dispatches at run time) falls back to slower code
    SELECT engine, NULL, NULL, 'ISA not on host',
           printf('built for %s, which needs %s; the host of the server lacks them: the server would crash (SIGILL) ' ||
                  'or fall back to slower code', target_isa, isa_missing)
    FROM v_engine_provenance WHERE isa_missing <> ''
    UNION ALL
    -- the host has wider SIMD than the engine's vector kernels use (AVX-512 present, built for AVX2)
    SELECT engine, NULL, NULL, 'SIMD narrower than host',
           printf('vector kernels built for %s use at most %s (%d bits); the host of the server has %s (%d bits): ' ||
                  'the numbers understate the hardware', kernel_isa, build_simd, build_simd_bits, host_simd,
                  host_simd_bits)
    FROM v_engine_provenance WHERE host_simd_bits > build_simd_bits;

-- Cost (profile key cost: {per_hour, currency}, recorded in the manifest as cost.per_hour and cost.currency): the
-- server host's price per hour turned into queries per unit of money at each concurrency point (QPS x 3600 /
-- per_hour) and the price of each build (the host's time for load and build: (load_s + build_s) / 3600 x per_hour).
-- No cost.per_hour in the manifest: no rows, and show and the report print nothing.
CREATE VIEW v_cost_concurrency AS
    SELECT p.engine, p.dataset, p.clients, p.target_rate, p.qps, c.per_hour, c.currency,
           p.qps * 3600.0 / c.per_hour AS queries_per_unit
    FROM v_concurrency_points AS p
         JOIN (SELECT CAST(value AS REAL) AS per_hour,
                      COALESCE((SELECT value FROM manifest WHERE key = 'cost.currency'), '') AS currency
               FROM manifest WHERE key = 'cost.per_hour' AND CAST(value AS REAL) > 0) AS c
    ORDER BY p.seq;

CREATE VIEW v_cost_build AS
    SELECT b.engine, b.dataset, b.rows, b.load_s, b.build_s, c.per_hour, c.currency,
           (b.load_s + b.build_s) / 3600.0 * c.per_hour AS build_cost
    FROM v_build AS b
         JOIN (SELECT CAST(value AS REAL) AS per_hour,
                      COALESCE((SELECT value FROM manifest WHERE key = 'cost.currency'), '') AS currency
               FROM manifest WHERE key = 'cost.per_hour' AND CAST(value AS REAL) > 0) AS c;

-- Where a campaign's wall time went (docs/metrics.md "Campaign time"): one row per engine configuration and phase,
-- the items' own seconds (started_at to finished_at of their last attempt) beside the seconds the estimate gave them
-- before the campaign first started (manifest estimate.first.items; estimate.items, the latest run's, in a file
-- written before that key existed); a build's row says how much of it was the load, the index and the rest of the
-- item (the dataset, the ground truth, the sizes, the first query), and for a load continued over attempts how
-- much of the load was this attempt's. Then, per configuration, the time between its items: every gap before one
-- of its items, in the order the items started, counted from the end of the item before it or from the start of
-- the run it began in, so the gap before its first item holds its server's start (server.E.ready_s) and the
-- previous server's stop. A campaign that ran more than once (vbench resume) has the runs from its creation and
-- its 'resumed' events, each to the last thing it recorded before the next began: the time between runs is
-- 'not running'; what the items' last attempts and the gaps do not explain (attempts interrupted, failed or lost,
-- and the stop of an interrupted run) is 'earlier attempts'. A last row per campaign: its wall time from creation to
-- its end (while it runs, or after its coordinator was killed: to the last thing it recorded, an item's start or
-- end or an event), and its parts, which add up to it. Gaps count from 0 (items that overlap, on several client
-- agents, add up past the wall time; 'earlier attempts' never goes below 0).
CREATE VIEW v_campaign_time AS
    WITH rs AS (
        SELECT t AS started_at, LEAD(t) OVER (ORDER BY t) AS next_at
        FROM (SELECT created_at AS t FROM campaign UNION ALL SELECT at FROM event WHERE kind = 'resumed')),
    recs AS (SELECT at AS t FROM event UNION ALL SELECT started_at FROM plan UNION ALL SELECT finished_at FROM plan
             UNION ALL SELECT recorded_at FROM load_checkpoint),
    e AS (SELECT created_at, runs,
                 COALESCE(finished_at, (SELECT MAX(t) FROM (SELECT updated_at AS t FROM campaign
                                                            UNION ALL SELECT MAX(started_at) FROM plan
                                                            UNION ALL SELECT MAX(finished_at) FROM plan
                                                            UNION ALL SELECT MAX(at) FROM event))) AS ended_at
          FROM campaign),
    c AS (SELECT created_at, ended_at, runs, (julianday(ended_at) - julianday(created_at)) * 86400.0 AS wall_s FROM e),
    -- A gap between two runs lasts from the last thing the earlier run recorded to the next run's start, unless an
    -- item's attempt spans it (its agent kept its Done in the outbox, or kept running, and the next run took it
    -- over): that time is the item's, counted once in its row, so the gap ends where that item began (0 s).
    idle AS (SELECT COUNT(*) AS n, COALESCE(SUM(MAX(0, (julianday(MIN(rs.next_at, COALESCE(
                        (SELECT MIN(p.started_at) FROM plan AS p WHERE p.started_at < rs.next_at
                                                                  AND p.finished_at >= rs.next_at), rs.next_at)))
                      - julianday(COALESCE((SELECT MAX(t) FROM recs WHERE t >= rs.started_at AND t < rs.next_at),
                                           rs.started_at))) * 86400.0)), 0) AS s
             FROM rs WHERE rs.next_at IS NOT NULL),
    est AS (SELECT key, value FROM json_each(COALESCE((SELECT value FROM manifest WHERE key = 'estimate.first.items'),
                                                      (SELECT value FROM manifest WHERE key = 'estimate.items')))),
    i AS (
        SELECT p.key, p.seq, p.engine, p.phase, p.attempts,
               (julianday(p.finished_at) - julianday(p.started_at)) * 86400.0 AS s,
               MAX(0, (julianday(p.started_at) - julianday(MAX(COALESCE(
                   LAG(p.finished_at) OVER (ORDER BY p.started_at, p.seq), (SELECT created_at FROM campaign)),
                   (SELECT MAX(rs.started_at) FROM rs WHERE rs.started_at <= p.started_at)))) * 86400.0) AS gap_before,
               est.value AS est_s
        FROM plan AS p LEFT JOIN est ON est.key = p.key
        WHERE p.started_at IS NOT NULL AND p.finished_at IS NOT NULL),
    b AS (SELECT i.engine, i.s, r.load_s, r.build_s, i.attempts,
                 r.load_s - COALESCE((SELECT MAX(l.load_s) FROM load_checkpoint AS l
                                      WHERE l.item_key = i.key AND l.attempt < i.attempts), 0) AS load_now
          FROM i JOIN build_result AS r ON r.item_key = i.key),
    p0 AS (SELECT (SELECT SUM(s) FROM i) AS items, (SELECT SUM(gap_before) FROM i) AS gaps, (SELECT s FROM idle) AS idle,
                  MAX(0, (julianday(c.ended_at) - julianday((SELECT MAX(finished_at) FROM plan))) * 86400.0) AS after,
                  c.runs > 1 OR EXISTS (SELECT 1 FROM plan WHERE attempts > 1) AS retried
           FROM c),
    -- what the items' last attempts, the gaps, the time between runs and the time after the last item leave
    parts AS (SELECT p0.*, MAX(0, c.wall_s - p0.idle - p0.items - p0.gaps - p0.after) AS earlier FROM p0, c)
    SELECT engine, phase AS part, COUNT(*) AS items, SUM(s) AS seconds, SUM(s) / (SELECT wall_s FROM c) AS share,
           SUM(est_s) AS estimated_s,
           CASE WHEN phase = 'build' THEN
               COALESCE((SELECT CASE WHEN SUM(b.load_now) < SUM(b.load_s) - 0.005 THEN
                                    printf('load %.2f s over %d attempts, %.2f s of it in this one; index %.2f s, the rest %.2f s',
                                           SUM(b.load_s), MAX(b.attempts), SUM(b.load_now), SUM(b.build_s),
                                           SUM(b.s) - SUM(b.load_now) - SUM(b.build_s))
                                ELSE printf('load %.2f s, index %.2f s, the rest %.2f s', SUM(b.load_s), SUM(b.build_s),
                                            SUM(b.s) - SUM(b.load_s) - SUM(b.build_s)) END
                         FROM b WHERE b.engine = i.engine HAVING COUNT(*) > 0),
                        (SELECT 'no build result: ' || group_concat(p2.status || ' (' || COALESCE(p2.error, '-') || ')', '; ')
                         FROM plan AS p2 WHERE p2.engine = i.engine AND p2.phase = 'build')) END AS detail,
           MIN(seq) AS seq
    FROM i GROUP BY engine, phase
    UNION ALL
    SELECT engine, 'between items', COUNT(*), SUM(gap_before), SUM(gap_before) / (SELECT wall_s FROM c), NULL,
           (SELECT printf('server start %s s', m.value) FROM manifest AS m
            WHERE m.key = 'server.' || i.engine || '.ready_s'),
           MAX(seq) + 0.5
    FROM i GROUP BY engine
    UNION ALL
    SELECT '(campaign)', 'earlier attempts', (SELECT SUM(attempts) - COUNT(*) FROM i),
           parts.earlier, parts.earlier / c.wall_s, NULL,
           'attempts interrupted, failed or lost before the ones above, and the stops of interrupted runs', 1e18 - 2
    FROM c, parts
    WHERE parts.retried
    UNION ALL
    SELECT '(campaign)', 'not running', idle.n, idle.s, idle.s / c.wall_s, NULL,
           printf('between its %d runs: from the last thing a run recorded to the next one''s start (0 s where a taken-over item spans it)', c.runs), 1e18 - 1
    FROM c, idle WHERE idle.n > 0
    UNION ALL
    SELECT '(campaign)', 'wall time', (SELECT COUNT(*) FROM i), c.wall_s, 1.0,
           (SELECT CAST(value AS REAL) FROM manifest
            WHERE key IN ('estimate.first.total_s', 'estimate.total_s') ORDER BY key = 'estimate.first.total_s' DESC LIMIT 1),
           printf('items %.1f s, between items %.1f s, %ssince the last item ended %.1f s; %d run%s',
                  parts.items, parts.gaps,
                  IIF(parts.retried, printf('earlier attempts %.1f s, not running %.1f s, ', parts.earlier, parts.idle), ''),
                  parts.after, c.runs, IIF(c.runs = 1, '', 's')),
           1e18
    FROM c, parts
    ORDER BY seq;

-- Capacity (docs/metrics.md "Capacity"): every window of every attempt, in the order measured, with the server unit's
-- cores busy over the window (its CPU seconds per second between the orchestrator's samples inside it, as
-- v_concurrency) against the CPUs the unit was given; meets_objective: met the largest target (any target: met > 0);
-- agents: the client agents that offered it, shares: each one's id and offered rate (capacity_window_share).
CREATE VIEW v_capacity_windows AS
    SELECT COALESCE(w.config, w.engine) AS engine, w.dataset, w.attempt, w.step, w.stage, w.target_ms, w.targets, w.met,
           w.met > 0 AS meets_any, w.offered_rate, w.achieved_rate, w.scheduled, w.started, w.clients, w.ef_search,
           w.recall, w.p50_ms, w.p99_ms, w.p999_ms, w.own_p99_ms, w.uncorrected_p99_ms, w.host_pause_ms,
           COALESCE(w.discounted, 0) AS discounted, w.errors, w.late_starts,
           w.in_flight, w.client_cores,
           w.client_cpus, w.client_limited, w.client_reason, cpu.cores_busy AS server_cores_busy,
           (SELECT CAST(m.value AS INTEGER) FROM manifest AS m WHERE m.key = 'server.' || cpu.server || '.unit.cpus')
               AS server_cores,
           CASE WHEN w.server_window_calls > 0 THEN 1e3 * w.server_window_exec_s / w.server_window_calls END
               AS server_ms_per_query, w.window_s, w.window_start, w.result_key, w.item_key, plan.seq,
           COALESCE(w.agents, 1) AS agents,
           (SELECT group_concat(printf('%s %.1f/s', sh.agent, sh.offered_rate), ', ')
              FROM (SELECT * FROM capacity_window_share AS x WHERE x.result_key = w.result_key ORDER BY x.share) AS sh)
               AS shares, w.queries AS answered
    FROM capacity_window AS w JOIN plan ON plan.key = w.item_key
    LEFT JOIN (SELECT w2.result_key, MIN(s.engine) AS server,
                      CASE WHEN COUNT(*) >= 2 AND MAX(s.t) > MIN(s.t) THEN (MAX(s.cpu_s) - MIN(s.cpu_s)) / (MAX(s.t) - MIN(s.t))
                      END AS cores_busy
               FROM capacity_window AS w2 JOIN server_sample AS s ON s.item_key = w2.item_key
                    AND s.t BETWEEN w2.window_start AND w2.window_start + w2.window_s
               GROUP BY w2.result_key) AS cpu ON cpu.result_key = w.result_key
    ORDER BY plan.seq, w.attempt, w.step;

-- The capacity per configuration, dataset and p99 target: the last attempt's answer, with the server's cores busy at
-- the found rate (the mean over that attempt's confirmation windows of the target) and the wait class the server
-- spent most of them in.
CREATE VIEW v_capacity AS
    SELECT COALESCE(r.config, r.engine) AS engine, r.dataset, r.target_ms AS p99_target_ms, r.recall_target, r.status,
           r.rate, r.ef_search, r.recall, r.op_source, r.p50_ms, r.p99_ms, r.p999_ms, r.repeats, r.repeats_met,
           r.knee_rate, r.knee_p99_ms, r.knee_failed, r.fail_rate, r.client_max_rate, r.start_rate, r.windows,
           (SELECT AVG(v.server_cores_busy) FROM v_capacity_windows AS v WHERE v.item_key = r.item_key
                AND v.attempt = r.attempt AND v.stage = 'confirm' AND v.target_ms = r.target_ms) AS server_cores_busy,
           (SELECT MAX(v.server_cores) FROM v_capacity_windows AS v WHERE v.item_key = r.item_key) AS server_cores,
           (SELECT x.wait_class FROM window_wait AS x JOIN capacity_window AS c ON c.result_key = x.result_key
            WHERE c.item_key = r.item_key AND c.attempt = r.attempt AND c.stage = 'confirm' AND c.target_ms = r.target_ms
            GROUP BY x.wait_class ORDER BY SUM(x.samples) DESC LIMIT 1) AS top_wait_class,
           r.reason, r.attempt, r.item_key, plan.seq
    FROM capacity_result AS r JOIN plan ON plan.key = r.item_key
    WHERE r.attempt = (SELECT MAX(r2.attempt) FROM capacity_result AS r2 WHERE r2.item_key = r.item_key)
    ORDER BY plan.seq, r.target_ms;

-- Topology (issue 39): each node of an engine of several servers per reading (after the build, after each window;
-- read replicas' lag samples taken during a churn's writes and a stream's, after 'churn' / 'streaming' with at_s),
-- with the orchestrator's facts of that node from the manifest: its unit, CPUs and memory limit, and at the stop its
-- peak memory and CPU seconds (node 0's facts are the server's own keys), and where it ran (its orchestrator's host
-- and agent id, coordinator/placement.h). The facts are under the server's name (engine.LABEL.server: the entry's
-- name for its first configuration with a server, the label for a later one on a server of its own; results
-- written before that key, v_topology's server name).
CREATE VIEW v_nodes AS
    SELECT engine, dataset, after, node, role, rows, index_bytes, table_bytes, searches, lag_bytes,
           (SELECT value FROM manifest WHERE key = 'server.' || srv || nk || '.unit') AS unit,
           (SELECT value FROM manifest WHERE key = 'server.' || srv || nk || '.unit.cpu_affinity') AS cpus,
           (SELECT value FROM manifest WHERE key = 'server.' || srv || nk || '.unit.memory_max') AS memory_max,
           (SELECT value FROM manifest WHERE key = 'server.' || srv || '.at_stop' || nk || '.peak_cgroup_bytes') AS peak_bytes,
           (SELECT value FROM manifest WHERE key = 'server.' || srv || '.at_stop' || nk || '.cpu_s') AS cpu_s,
           item, seq, at_s,
           (SELECT value FROM manifest WHERE key = 'server.' || srv || nk || '.host') AS host,
           (SELECT value FROM manifest WHERE key = 'server.' || srv || nk || '.agent') AS agent, build_ms
    FROM (SELECT COALESCE(r.config, r.engine) AS engine, r.dataset, r.after, n.node, n.role, n.rows, n.index_bytes,
                 n.table_bytes, n.searches, n.lag_bytes, n.build_ms, r.item_key AS item, plan.seq, r.at_s,
                 COALESCE((SELECT value FROM manifest WHERE key = 'engine.' || COALESCE(r.config, r.engine) || '.server'),
                          (SELECT t.server FROM v_topology AS t WHERE t.engine = COALESCE(r.config, r.engine)),
                          COALESCE(r.config, r.engine)) AS srv,
                 CASE n.node WHEN 0 THEN '' ELSE '.node.' || n.node END AS nk
          FROM node_result AS n JOIN node_reading AS r ON r.result_key = n.result_key JOIN plan ON plan.key = r.item_key)
    ORDER BY seq, at_s, node;

-- Topology (issue 39): each configuration of an engine entry that has shards or replicas (one of its configurations
-- says either, `replicas: 0` included: the single server to compare with), from the resolved profile: its shards, its
-- replicas, the servers it takes (nodes: a router and its shards, or a primary and its replicas; as
-- vb_profile_engine_nodes counts them), its kind (shards, replicas or single) and the name of the server it ran on
-- (the manifest's server.NAME.*: the entry's name for the entry's first server, else the label of the configuration
-- that owns it; coordinator/servers.c vb_campaign_server_name, configurations of the same recipe and node count
-- share one server).
CREATE VIEW v_topology AS
    WITH c AS (
        SELECT CAST(je.key AS INTEGER) AS i, je.value ->> '$.name' AS series,
               COALESCE(je.value ->> '$.entry', je.value ->> '$.name') AS entry,
               je.value ->> '$.params.recipe' AS recipe,
               CAST(COALESCE(je.value ->> '$.params.shards', 1) AS INTEGER) AS shards,
               CAST(COALESCE(je.value ->> '$.params.replicas', 0) AS INTEGER) AS replicas,
               (je.value ->> '$.params.shards') IS NOT NULL OR (je.value ->> '$.params.replicas') IS NOT NULL AS said
        FROM manifest AS m, json_each(m.value, '$.engines') AS je
        WHERE m.key = 'profile.resolved' AND json_valid(m.value)),
    n AS (SELECT c.*, CASE WHEN shards > 1 THEN 1 + shards ELSE 1 + replicas END AS nodes FROM c),
    o AS (SELECT n.*, (SELECT MIN(x.i) FROM n AS x WHERE x.entry = n.entry AND x.recipe IS n.recipe
                                                          AND x.nodes = n.nodes) AS owner,
                      (SELECT MIN(x.i) FROM n AS x WHERE x.entry = n.entry) AS first FROM n)
    SELECT o.series AS engine, o.entry, o.shards, o.replicas, o.nodes,
           CASE WHEN o.shards > 1 THEN 'shards' WHEN o.replicas > 0 THEN 'replicas' ELSE 'single' END AS kind,
           CASE WHEN o.owner = o.first THEN o.entry ELSE (SELECT x.series FROM n AS x WHERE x.i = o.owner) END AS server,
           o.i AS seq
    FROM o WHERE o.entry IN (SELECT entry FROM c WHERE said)
    ORDER BY o.i;

-- Topology (issue 39): every measured point of those configurations beside its topology, the seed's single node
-- against several, for our engines: the recall sweep's points (v_recall_sweep: medians over the repeats) and the
-- closed-loop concurrency points (v_concurrency_points; recall: the one-client sweep's at the window's ef_search),
-- and what limited the point, from what the results record and nothing else (docs/metrics.md "Topology"): the
-- client (in flight under half its clients, or its CPU saturated: v_validity's finding), node 0's CPU (the router
-- of shards, the primary of replicas: its unit's cores busy in the windows against the cores it was given: its
-- share), replay lag at the window's node reading, else "not recorded" with what was measured (node 0's cores busy,
-- the CPUs the nodes share, server_share: the part of the client's latency the servers' own statistics say they
-- executed, as v_concurrency; the queries the client kept in flight). Only node 0's unit is sampled during a window:
-- the other nodes' CPU in the window is not recorded (their CPU seconds over their life are, in v_nodes), and the
-- line says so.
CREATE VIEW v_topology_points AS
    WITH pt AS (
        SELECT t.entry, t.engine, t.shards, t.replicas, t.nodes, t.kind, s.dataset, 'recall_sweep' AS phase,
               s.clients, s.ef_search, s.recall, s.qps, s.qps_min, s.qps_max, s.p50_ms, s.p99_ms, NULL AS in_flight,
               NULL AS refused,
               NULL AS client_saturated, NULL AS cores_busy, NULL AS cores, NULL AS server_share, NULL AS lag_bytes,
               NULL AS shared_cpus, s.seq
        FROM v_topology AS t JOIN v_recall_sweep AS s ON s.engine = t.engine
        UNION ALL
        SELECT t.entry, t.engine, t.shards, t.replicas, t.nodes, t.kind, c.dataset, 'concurrency', c.clients, w.ef,
               (SELECT s.recall FROM v_recall_sweep AS s WHERE s.engine = c.engine AND s.dataset = c.dataset
                    AND s.clients = 1 AND s.ef_search = w.ef),
               c.qps, c.qps_min, c.qps_max, c.p50_ms, c.p99_ms, c.in_flight, c.efficiency_refused LIKE 'refused%',
               (SELECT group_concat(DISTINCT v.detail) FROM v_validity AS v WHERE v."check" = 'client CPU saturated'
                    AND v.item IN (SELECT item_key FROM window_result AS x WHERE COALESCE(x.config, x.engine) = c.engine
                                   AND x.dataset = c.dataset AND x.clients = c.clients AND x.target_rate IS NULL)),
               (SELECT AVG(k.server_cores_busy) FROM v_concurrency AS k WHERE k.engine = c.engine
                    AND k.dataset = c.dataset AND k.clients = c.clients AND k.target_rate IS NULL),
               (SELECT MAX(k.server_cores) FROM v_concurrency AS k WHERE k.engine = c.engine
                    AND k.dataset = c.dataset AND k.clients = c.clients AND k.target_rate IS NULL),
               (SELECT AVG(k.server_share) FROM v_concurrency AS k WHERE k.engine = c.engine
                    AND k.dataset = c.dataset AND k.clients = c.clients AND k.target_rate IS NULL),
               (SELECT MAX(n.lag_bytes) FROM v_nodes AS n WHERE n.engine = c.engine AND n.after = 'window'
                    AND n.item IN (SELECT item_key FROM window_result AS x WHERE COALESCE(x.config, x.engine) = c.engine
                                   AND x.dataset = c.dataset AND x.clients = c.clients AND x.target_rate IS NULL)),
               -- the CPUs every node of the configuration was given, when they are all the same set
               (SELECT IIF(COUNT(DISTINCT n.cpus) = 1 AND COUNT(DISTINCT n.node) > 1, MAX(n.cpus), NULL)
                    FROM v_nodes AS n WHERE n.engine = c.engine),
               c.seq
        FROM v_topology AS t JOIN v_concurrency_points AS c ON c.engine = t.engine AND c.target_rate IS NULL
        JOIN (SELECT COALESCE(config, engine) AS cfg, dataset, clients, MAX(ef_search) AS ef FROM window_result
              WHERE target_rate IS NULL GROUP BY 1, 2, 3) AS w
             ON w.cfg = c.engine AND w.dataset = c.dataset AND w.clients = c.clients)
    SELECT entry, engine, shards, replicas, nodes, kind, dataset, phase, clients, ef_search, recall, qps, qps_min,
           qps_max, p50_ms, p99_ms, in_flight, cores_busy AS node0_cores_busy, cores AS node0_cores, server_share, lag_bytes AS max_lag_bytes,
           CASE
           WHEN phase = 'recall_sweep' AND clients = 1 THEN 'one client: QPS = 1 / latency'
           WHEN refused THEN printf('the client: %.2f of %d queries in flight', in_flight, clients)
           WHEN client_saturated IS NOT NULL THEN 'the client guard: ' || client_saturated
           WHEN cores_busy >= 0.9 * cores
           THEN printf('node 0 CPU (%s): %.2f of its %d core%s busy', IIF(kind = 'shards', 'router',
                       IIF(kind = 'replicas', 'primary', 'server')), cores_busy, cores, IIF(cores = 1, '', 's'))
           WHEN lag_bytes > 0 THEN printf('replay lag: a replica %d bytes behind', lag_bytes)
           WHEN phase = 'recall_sweep' THEN 'not recorded (no server CPU sampled in the sweep)'
           ELSE 'not recorded (' ||
                IIF(cores_busy IS NULL, 'no server CPU sampled',
                    printf('node 0 %.2f of %d core%s busy', cores_busy, cores, IIF(cores = 1, '', 's'))) ||
                IIF(nodes > 1, ', other nodes not sampled', '') ||
                IIF(shared_cpus IS NOT NULL, printf(', all %d nodes on CPU %s', nodes, shared_cpus), '') ||
                IIF(server_share IS NULL, '', printf(', the servers executed %.0f %% of the latency', 100 * server_share)) ||
                printf(', %.2f of %d in flight)', in_flight, clients)
           END AS limited_by, seq
    FROM pt ORDER BY entry, dataset, phase DESC, clients, ef_search, nodes;
