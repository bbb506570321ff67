-- vbench results database: one file per campaign, written only by the coordinator.
--
-- Durability: the coordinator commits every result in its own transaction (WAL, synchronous=FULL), together
-- with the plan item it completes, so a killed process loses nothing committed and `vbench resume` finds the
-- checkpoint (the plan table) in the same file. Results are keyed by result_key: a resent result is ignored.
-- Times are UTC ISO-8601 text; durations are seconds; sizes are bytes; latencies in the tables are ms.

CREATE TABLE IF NOT EXISTS campaign (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    name            TEXT NOT NULL,
    profile_source  TEXT NOT NULL,          -- path, or embedded:profiles/NAME.yml
    profile_yaml    TEXT NOT NULL,          -- the profile text as run (resume re-reads this, not the file)
    engines         TEXT,                   -- --engines selection, NULL = all of the profile
    status          TEXT NOT NULL CHECK (status IN ('running', 'finished', 'incomplete', 'failed', 'interrupted')),
    runs            INTEGER NOT NULL DEFAULT 0,   -- coordinator starts: 1 + number of resumes
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    finished_at     TEXT
);

-- Everything needed to reproduce or judge the run: host, libraries, versions, resolved profile, git revision.
CREATE TABLE IF NOT EXISTS manifest (
    key             TEXT PRIMARY KEY,
    value           TEXT NOT NULL,
    recorded_at     TEXT NOT NULL
);

-- The plan and the checkpoint: one row per work item, in execution order. 'expired': stopped at its wall-clock
-- limit (churn reinsert) with partial results; resume continues it.
CREATE TABLE IF NOT EXISTS plan (
    key             TEXT PRIMARY KEY,
    seq             INTEGER NOT NULL UNIQUE,
    phase           TEXT NOT NULL,
    engine          TEXT NOT NULL,
    dataset         TEXT NOT NULL,
    point           TEXT NOT NULL DEFAULT '',
    status          TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'running', 'done', 'failed', 'skipped', 'interrupted', 'expired')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    agent           TEXT,
    started_at      TEXT,
    finished_at     TEXT,
    error           TEXT,
    build           INTEGER                 -- the build of its configuration's index the item runs on (profile
                                            -- build_repeats: 1..N; 1 with one build); NULL: an older file
);

CREATE TABLE IF NOT EXISTS agent (
    id              TEXT PRIMARY KEY,
    host            TEXT NOT NULL,
    roles           TEXT NOT NULL,
    cores           INTEGER,
    cpus            TEXT,
    memory_bytes    INTEGER,
    versions        TEXT,                   -- JSON object
    first_seen      TEXT NOT NULL,
    last_seen       TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS build_result (
    result_key      TEXT PRIMARY KEY,
    item_key        TEXT NOT NULL REFERENCES plan(key),
    engine          TEXT NOT NULL,          -- the adapter (hnswlib, pgvector, ...)
    config          TEXT,                   -- the configuration's label ("pgvector[variant=halfvec]"); NULL: older file
    dataset         TEXT NOT NULL,
    rows            INTEGER NOT NULL,
    load_s          REAL NOT NULL,
    build_s         REAL NOT NULL,
    first_query_s   REAL NOT NULL,
    rows_per_s      REAL NOT NULL,
    index_bytes     INTEGER,                -- NULL: the engine cannot say
    table_bytes     INTEGER,
    client_cpu_s    REAL,
    load_connections INTEGER,
    engine_version  TEXT,
    dataset_hash    TEXT,
    agent           TEXT,
    recorded_at     TEXT NOT NULL,
    attempts        INTEGER,                -- the attempts whose load work load_s sums (a load continued from its
                                            -- checkpoint); NULL: an older file, one attempt
    build           INTEGER                 -- which build of the configuration this is (build_repeats: 1..N, the
                                            -- plan item's); NULL: an older file, one build
);

-- A build's load checkpoint (proto BuildResult.checkpoint), about every second of a load that can continue after
-- a restart (agent/phase.c): each of the `connections` slices holds its first slice_rows rows, `rows` in all;
-- load_s the load seconds so far over every attempt. The next attempt continues from the largest.
CREATE TABLE IF NOT EXISTS load_checkpoint (
    result_key      TEXT PRIMARY KEY,
    item_key        TEXT NOT NULL REFERENCES plan(key),
    attempt         INTEGER NOT NULL,
    connections     INTEGER NOT NULL,
    slice_rows      INTEGER NOT NULL,
    rows            INTEGER NOT NULL,
    load_s          REAL NOT NULL,
    attempts        INTEGER NOT NULL,       -- the attempts that loaded rows so far, this one included
    agent           TEXT,
    recorded_at     TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS sweep_result (
    result_key      TEXT PRIMARY KEY,
    item_key        TEXT NOT NULL REFERENCES plan(key),
    engine          TEXT NOT NULL,          -- the adapter (hnswlib, pgvector, ...)
    config          TEXT,                   -- the configuration's label ("pgvector[variant=halfvec]"); NULL: older file
    dataset         TEXT NOT NULL,
    ef_search       INTEGER NOT NULL,
    clients         INTEGER NOT NULL,
    queries         INTEGER NOT NULL,
    recall          REAL NOT NULL,          -- ann-benchmarks distance-threshold recall@k
    id_overlap      REAL NOT NULL,          -- id-overlap recall@k
    short_answers   INTEGER NOT NULL,       -- answers with fewer than k distinct ids
    errors          INTEGER NOT NULL,
    elapsed_s       REAL NOT NULL,
    qps             REAL NOT NULL,
    mean_ms         REAL,
    p50_ms          REAL,
    p95_ms          REAL,
    p99_ms          REAL,
    p999_ms         REAL,
    max_ms          REAL,
    client_cpu_s    REAL,
    latency_hist    BLOB,                   -- sparse log-linear histogram: (u32 bucket, u64 count) little-endian pairs
    agent           TEXT,
    recorded_at     TEXT NOT NULL,
    index_used      INTEGER,                -- the server's plan scans the vector index: 1 / 0; NULL: no planner
    plan            TEXT,                   -- EXPLAIN's text
    duplicate_answers INTEGER NOT NULL DEFAULT 0,  -- answers that returned an id twice (repeats scored as misses)
    duplicate_example TEXT,                 -- the first: 'query 164: id 46667 at rows 5 and 7' (rows 0-based)
    answers         BLOB,                   -- every query's answer, for the annb export; NULL when not kept.
                                            -- Little-endian: 'VBA1', u32 queries, u32 k, u32 metric, then per query: f32
                                            -- seconds, k x (u32 row id, f32 distance); a missing row: 0xFFFFFFFF, +inf
    build           INTEGER,                -- the build of the index this point measured (build_repeats: 1..N, the
                                            -- plan item's); NULL: an older file, one build
    warmup_queries  INTEGER,                -- the warm-up before the sweep's first point (not counted); NULL: none
    warmup_s        REAL
);

-- Concurrency: one row per timed window (clients x repeat). in_flight = in_call_s / window_s (docs/design.md §4).
CREATE TABLE IF NOT EXISTS window_result (
    result_key      TEXT PRIMARY KEY,
    item_key        TEXT NOT NULL REFERENCES plan(key),
    engine          TEXT NOT NULL,          -- the adapter (hnswlib, pgvector, ...)
    config          TEXT,                   -- the configuration's label ("pgvector[variant=halfvec]"); NULL: older file
    dataset         TEXT NOT NULL,
    clients         INTEGER NOT NULL,
    repeat          INTEGER NOT NULL,
    ef_search       INTEGER NOT NULL,
    window_s        REAL NOT NULL,
    queries         INTEGER NOT NULL,       -- started and finished inside the window
    errors          INTEGER NOT NULL,
    qps             REAL NOT NULL,
    mean_ms         REAL,
    p50_ms          REAL,
    p95_ms          REAL,
    p99_ms          REAL,
    p999_ms         REAL,
    max_ms          REAL,
    in_call_s       REAL NOT NULL,
    in_flight       REAL NOT NULL,
    qps_x_p50       REAL,                   -- QPS x median latency, as the reference stand printed it
    fraction_in_call_min  REAL,
    fraction_in_call_mean REAL,
    fraction_in_call TEXT,                  -- JSON array, one value per client
    client_cpu_s    REAL,
    warmup_queries  INTEGER,                -- started in the warm-up (one that ended inside the window too)
    edge_queries    INTEGER,                -- started inside the window, ended after it; NULL: older file
    server_calls    INTEGER,                -- the server's executions of the kNN statement over the item (warm-up,
                                            -- window, edge); NULL: the engine cannot say
    server_exec_s   REAL,                   -- the server's execution time of them (pg_stat_statements, P_S)
    server_window_calls INTEGER,            -- the same from the window's start to its last query (server time per
    server_window_exec_s REAL,              -- query is computed from these: the warm-up left out); NULL: unknown
    wait_rounds     INTEGER,                -- wait profile: sampling rounds (window_wait); NULL: none
    wait_unit       TEXT,                   -- what window_wait.samples count: session-samples | us (MariaDB: timed)
    window_start    REAL,                   -- epoch seconds (agent's clock); NULL: older file
    target_rate     REAL,                   -- open loop; NULL for closed loop
    late_starts     INTEGER,
    lag_p99_ms      REAL,
    clients_lost    INTEGER,
    latency_hist    BLOB,
    agent           TEXT,
    recorded_at     TEXT NOT NULL
);

-- Filtered search: one row per selectivity; recall against ground truth over the passing rows only.
CREATE TABLE IF NOT EXISTS filtered_result (
    result_key      TEXT PRIMARY KEY,
    item_key        TEXT NOT NULL REFERENCES plan(key),
    engine          TEXT NOT NULL,          -- the adapter (hnswlib, pgvector, ...)
    config          TEXT,                   -- the configuration's label ("pgvector[variant=halfvec]"); NULL: older file
    dataset         TEXT NOT NULL,
    selectivity     REAL NOT NULL,
    passing_rows    INTEGER NOT NULL,
    filter          TEXT,
    predicate       TEXT,                   -- range, equality, and, label_own, label_other, class (engines/filter.h);
                                            -- NULL: range (older file)
    passed_share    REAL,                   -- the mean over the queries of the share of rows passing each one's
                                            -- filter (per query for the class predicates); NULL: older file
    ef_search       INTEGER NOT NULL,
    queries         INTEGER NOT NULL,
    recall          REAL NOT NULL,
    id_overlap      REAL NOT NULL,
    short_answers   INTEGER NOT NULL,
    errors          INTEGER NOT NULL,
    elapsed_s       REAL NOT NULL,
    qps             REAL NOT NULL,
    mean_ms         REAL,
    p50_ms          REAL,
    p95_ms          REAL,
    p99_ms          REAL,
    p999_ms         REAL,
    max_ms          REAL,
    client_cpu_s    REAL,
    latency_hist    BLOB,
    agent           TEXT,
    recorded_at     TEXT NOT NULL,
    index_used      INTEGER,                -- as in sweep_result
    plan            TEXT,
    duplicate_answers INTEGER NOT NULL DEFAULT 0,  -- as in sweep_result
    duplicate_example TEXT
);

-- Churn: one row per stage (before, delete, reinsert, maintain, after). Reinsert progress is written at every
-- checkpoint and at the end of each attempt; rows_done is cumulative over attempts (the largest is the total),
-- rows_from says where the attempt started, so rows_done - rows_from rows took `seconds` in that attempt.
CREATE TABLE IF NOT EXISTS churn_result (
    result_key      TEXT PRIMARY KEY,
    item_key        TEXT NOT NULL REFERENCES plan(key),
    engine          TEXT NOT NULL,          -- the adapter (hnswlib, pgvector, ...)
    config          TEXT,                   -- the configuration's label ("pgvector[variant=halfvec]"); NULL: older file
    dataset         TEXT NOT NULL,
    stage           TEXT NOT NULL CHECK (stage IN ('before', 'delete', 'reinsert', 'checkpoint', 'maintain', 'after')),
    qps             REAL,
    recall          REAL,
    p50_ms          REAL,
    p99_ms          REAL,
    queries         INTEGER,
    short_answers   INTEGER,
    errors          INTEGER,
    rows_planned    INTEGER,
    rows_done       INTEGER,
    rows_from       INTEGER,                -- reinsert / checkpoint: where this attempt started
    seconds         REAL,                   -- reinsert / checkpoint: since this attempt started
    rows_per_s      REAL,                   -- this attempt's rate
    completed       INTEGER,
    ids_reused      INTEGER,
    agent           TEXT,
    recorded_at     TEXT NOT NULL,
    duplicate_answers INTEGER NOT NULL DEFAULT 0,  -- before / after: as in sweep_result; 0 for the other stages
    duplicate_example TEXT,
    repeat          INTEGER                 -- before / after: 1..phases.churn.repeats; NULL for the other stages
);

-- Cold start (docs/metrics.md "Cold start"): one row per cold_start item. Measured (applicable 1): the server was
-- stopped, its data directory evicted from the page cache (evicted_files, evicted_bytes) and started again
-- (restart_s), then the first `queries` queries ran one at a time, then the same queries warm; every number below
-- is computed from cold_start_query at commit (metrics/coldstart.h). Not applicable (applicable 0): an embedded
-- engine, or a server vbench does not start; reason says which, and the number columns are NULL.
CREATE TABLE IF NOT EXISTS cold_start_result (
    result_key      TEXT PRIMARY KEY,
    item_key        TEXT NOT NULL REFERENCES plan(key),
    engine          TEXT NOT NULL,          -- the adapter (hnswlib, pgvector, ...)
    config          TEXT,                   -- the configuration's label
    dataset         TEXT NOT NULL,
    applicable      INTEGER NOT NULL,
    reason          TEXT,                   -- not applicable: why
    ef_search       INTEGER,
    queries         INTEGER,                -- cold queries (and as many warm ones)
    errors          INTEGER,                -- failed queries of both passes (left out of the numbers)
    rolling_window  INTEGER,                -- the rolling median's queries (VB_COLDSTART_WINDOW)
    tolerance       REAL,                   -- warm again: the rolling median at most (1 + tolerance) x warm_p50_ms
    evicted_files   INTEGER,
    evicted_bytes   INTEGER,
    restart_s       REAL,                   -- from the cold start request until the server answered
    first_ms        REAL,                   -- the first query after the restart
    cold_mean_ms    REAL,
    cold_p50_ms     REAL,
    cold_max_ms     REAL,
    warm_first_ms   REAL,
    warm_mean_ms    REAL,
    warm_p50_ms     REAL,
    ratio_first     REAL,                   -- first_ms / warm_p50_ms
    ratio_mean      REAL,                   -- cold_mean_ms / warm_mean_ms
    ratio_p50       REAL,                   -- cold_p50_ms / warm_p50_ms
    warm_after      INTEGER,                -- queries until the rolling median is within tolerance of warm_p50_ms; NULL: not
    warm_after_s    REAL,                   --   within the cold queries; and their time
    session_reopened INTEGER,               -- the agent opened the table after the restart (a validity finding)
    first_error     TEXT,
    agent           TEXT,
    recorded_at     TEXT NOT NULL
);

-- Every query of a cold start, in the order it ran: pass 'cold' (right after the restart) or 'warm' (the same
-- queries again), n from 1; rolling_p50_ms (cold only, from the window's last query on): the median of the window.
CREATE TABLE IF NOT EXISTS cold_start_query (
    result_key      TEXT NOT NULL REFERENCES cold_start_result(result_key),
    pass            TEXT NOT NULL CHECK (pass IN ('cold', 'warm')),
    n               INTEGER NOT NULL,
    latency_ms      REAL NOT NULL,
    ok              INTEGER NOT NULL,       -- 0: the query failed
    rolling_p50_ms  REAL,
    PRIMARY KEY (result_key, pass, n)
);

-- The validity cross-check of each result (proto ServerCount): what the server itself counted since the item's
-- previous result (Redis: INFO commandstats calls of VSIM / VADD) beside what vbench sent (searches, including
-- warm-up and the queries that ended after a window; rows written). A mismatch is a finding (v_validity).
CREATE TABLE IF NOT EXISTS server_count (
    result_key      TEXT NOT NULL,
    item_key        TEXT NOT NULL REFERENCES plan(key),
    command         TEXT NOT NULL,          -- 'search' or 'write'
    sent            INTEGER NOT NULL,       -- by vbench
    server          INTEGER,                -- by the server; NULL: unknown (it restarted in between)
    PRIMARY KEY (result_key, command)
);

-- The wait profile of a concurrency window (proto WaitCount): the server's sessions running the kNN statement,
-- sampled every 50 ms over the item (warm-up and window), per wait class and event the session-samples found in it
-- (PostgreSQL pg_stat_activity; class 'CPU': no wait). v_window_waits gives the shares.
CREATE TABLE IF NOT EXISTS window_wait (
    result_key      TEXT NOT NULL,
    item_key        TEXT NOT NULL REFERENCES plan(key),
    wait_class      TEXT NOT NULL,
    event           TEXT NOT NULL,
    samples         INTEGER NOT NULL,
    rounds          INTEGER NOT NULL,       -- sampling rounds of the window
    PRIMARY KEY (result_key, wait_class, event)
);

-- The distribution of per-query recall of each measured point (proto Measurement, metrics/recall.h): one row per
-- result that scored recall (a sweep point, a filtered point, churn before / after, a streaming window), beside its
-- mean recall in that result's own table. Percentiles are nearest-rank over the exact per-query values
-- (docs/metrics.md "Recall distribution"); queries: those they are over (a window: the ones it answered).
-- query_recall: every query's recall in query order, float32 little-endian, NaN: not answered; NULL: not kept.
-- A result from an older agent has no row here.
CREATE TABLE IF NOT EXISTS recall_dist (
    result_key      TEXT PRIMARY KEY,
    item_key        TEXT NOT NULL REFERENCES plan(key),
    queries         INTEGER NOT NULL,
    recall_min      REAL NOT NULL,
    recall_p1       REAL NOT NULL,
    recall_p10      REAL NOT NULL,
    recall_p50      REAL NOT NULL,
    zero_share      REAL NOT NULL,          -- of the queries: recall exactly 0
    below_half_share REAL NOT NULL,         -- recall < 0.5
    query_recall    BLOB
);

-- The CPU profile of the first concurrency window whose efficiency fell below 0.5 (phases.concurrency.profile:
-- perf; orchestrator/perf.h): perf's samples of the server unit's cgroup in the window, folded ("comm;outer;...;leaf
-- N" per line, most samples first), one per configuration and dataset. server_profile_function: its hottest
-- functions by self samples (the frame on top of the stack).
CREATE TABLE IF NOT EXISTS server_profile (
    item_key        TEXT PRIMARY KEY REFERENCES plan(key),
    engine          TEXT NOT NULL,          -- the server's name
    config          TEXT NOT NULL,          -- the configuration's label
    dataset         TEXT NOT NULL,
    clients         INTEGER NOT NULL,
    efficiency      REAL,                   -- the window's, when it was picked (v_concurrency)
    window_start    REAL NOT NULL,          -- epoch seconds
    window_end      REAL NOT NULL,
    samples         INTEGER NOT NULL,
    malformed       INTEGER NOT NULL,       -- lines of perf script output the parser did not understand
    dropped         INTEGER NOT NULL,       -- samples beyond the cap of distinct stacks
    folded          TEXT NOT NULL,
    recorded_at     TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS server_profile_function (
    item_key        TEXT NOT NULL REFERENCES server_profile(item_key),
    rank            INTEGER NOT NULL,       -- 1: the hottest
    function        TEXT NOT NULL,          -- its symbol; [object] where the binary carries none
    samples         INTEGER NOT NULL,       -- self samples
    PRIMARY KEY (item_key, rank)
);

-- Everything said during the campaign: failures with the engine's own text, interruptions, resumes.
CREATE TABLE IF NOT EXISTS event (
    id              INTEGER PRIMARY KEY,
    at              TEXT NOT NULL,
    level           TEXT NOT NULL CHECK (level IN ('info', 'warn', 'error')),
    item_key        TEXT,
    source          TEXT NOT NULL,          -- "coordinator", or the agent id
    message         TEXT NOT NULL,
    -- What happened, as a stable word (store/store.h vb_event_kind): tests and tools match it, not the
    -- English of the message. 'note' for events written before kinds existed.
    kind            TEXT NOT NULL DEFAULT 'note'
);

-- Database servers started by the orchestrator (docs/design.md §1): the unit's memory and CPU every 250 ms, tied to the
-- plan item that ran at the time (NULL: between items, e.g. while the server started). cpu_s is the unit's CPU
-- time so far; cgroup_bytes includes page cache, rss_bytes (summed VmRSS of its processes) does not and counts
-- shared memory once per process that maps it; pss_bytes (summed Pss) counts it once.
CREATE TABLE IF NOT EXISTS server_sample (
    engine          TEXT NOT NULL,
    item_key        TEXT,
    t               REAL NOT NULL,          -- epoch seconds
    cgroup_bytes    INTEGER NOT NULL,
    rss_bytes       INTEGER NOT NULL,
    cpu_s           REAL NOT NULL,
    pss_bytes       INTEGER,
    PRIMARY KEY (engine, t)
);

-- On-disk size of the server's files (the recipe's `sizes` paths below its data directory) at the start of
-- each plan item and when the server stops (item_key NULL).
CREATE TABLE IF NOT EXISTS server_size (
    engine          TEXT NOT NULL,
    item_key        TEXT,
    path            TEXT NOT NULL,          -- recipe path, or 'total'
    bytes           INTEGER NOT NULL,
    recorded_at     TEXT NOT NULL
);

-- What happened to each server: started, failed to start, died, stopped; with the engine's own log tail
-- (the unit's journal) whenever something went wrong.
CREATE TABLE IF NOT EXISTS server_log (
    engine          TEXT NOT NULL,
    unit            TEXT,
    state           TEXT NOT NULL,          -- ready, failed, died, stopped; lost: closed at resume (its
                                            -- coordinator was killed with the server up)
    message         TEXT,
    log_tail        TEXT,
    recorded_at     TEXT NOT NULL
);

-- One window of a mixed item (issue 38; docs/metrics.md "Mixed"): `windows` windows while rows are updated, deleted
-- and inserted (phase 'write'), one at rest ('rest') and one after the engine's maintenance ('maintained'). recall is
-- against the exact top-k over the rows and vectors acknowledged before the window began (rows_live of them);
-- ghost_answers: returned ids absent then and not written during the window; stale_answers: returned rows answered
-- from the vector they held before their last update. The op columns cover the interval from the previous window's
-- end to this window's end (offered: due by the open loop's schedule, or the closed loop's ratio; NULL at rest). An interrupted item
-- runs again from its build (attempt): v_mixed shows the last attempt's rows only.
CREATE TABLE IF NOT EXISTS mixed_result (
    result_key      TEXT PRIMARY KEY,
    item_key        TEXT NOT NULL REFERENCES plan(key),
    engine          TEXT NOT NULL,
    config          TEXT,
    dataset         TEXT NOT NULL,
    attempt         INTEGER NOT NULL,
    window_index    INTEGER NOT NULL,
    phase           TEXT NOT NULL,          -- write, rest, maintained
    zipf_s          REAL NOT NULL,          -- the rows' choice: 0 uniform, else zipf's exponent
    rate            REAL NOT NULL,          -- offered operations/s in all; 0 closed loop
    clients         INTEGER NOT NULL,
    rows_live       INTEGER NOT NULL,
    queries         INTEGER NOT NULL,
    recall          REAL,
    answers_scored  INTEGER NOT NULL,
    ghost_answers   INTEGER NOT NULL,
    ghost_example   TEXT,
    stale_answers   INTEGER NOT NULL,
    short_answers   INTEGER NOT NULL,
    errors          INTEGER NOT NULL,
    elapsed_s       REAL NOT NULL,
    qps             REAL NOT NULL,
    mean_ms REAL, p50_ms REAL, p95_ms REAL, p99_ms REAL, p999_ms REAL, max_ms REAL,
    latency_hist    BLOB,
    interval_s      REAL NOT NULL,
    update_done INTEGER NOT NULL, update_offered INTEGER, update_errors INTEGER NOT NULL,
    update_mean_ms REAL, update_p50_ms REAL, update_p99_ms REAL, update_max_ms REAL,
    delete_done INTEGER NOT NULL, delete_offered INTEGER, delete_errors INTEGER NOT NULL,
    delete_mean_ms REAL, delete_p50_ms REAL, delete_p99_ms REAL, delete_max_ms REAL,
    insert_done INTEGER NOT NULL, insert_offered INTEGER, insert_errors INTEGER NOT NULL,
    insert_mean_ms REAL, insert_p50_ms REAL, insert_p99_ms REAL, insert_max_ms REAL,
    writes_total    INTEGER NOT NULL,
    fresh_probes    INTEGER NOT NULL,
    fresh_never     INTEGER NOT NULL,
    fresh_p50_ms REAL, fresh_p99_ms REAL,
    maintain_s      REAL,
    live_id_sum     INTEGER NOT NULL,       -- the live ids before the window: sum and sum of squares (the set's check
    live_id_sumsq   INTEGER NOT NULL,       -- against a server's table: SUM(id), SUM(id * id))
    rows_engine     INTEGER,                -- rest, maintained: the rows the engine counts (against rows_live)
    agent           TEXT,
    recorded_at     TEXT NOT NULL,
    maintenance     TEXT,                   -- maintained: what the maintenance ran ("VACUUM (ANALYZE)", "none")
    rows_checked    INTEGER,                -- maintained: ids compared, the engine's rows against the write log's
    rows_vectors_checked INTEGER,           -- of them, rows whose vector was compared too
    rows_differ     INTEGER,                -- ids on one side only, or holding another vector than the log's
    rows_diff_example TEXT                  -- the first of them ("id 17: deleted in the log, on the engine; ...")
);

-- One window of a streaming item (issue 25; docs/metrics.md "Streaming"): each stage's, then one at rest (at_rest,
-- stage_index = stages + 1). recall is against the exact ground truth of the rows_visible rows acknowledged before
-- the window began; fresh_rows_found counts returned rows acknowledged during the window. The insert columns cover
-- the stage's interval (previous window's start, or the stream's, to this window's start). An interrupted item runs
-- again from its build (attempt): v_streaming shows the last attempt's rows only.
CREATE TABLE IF NOT EXISTS streaming_result (
    result_key      TEXT PRIMARY KEY,
    item_key        TEXT NOT NULL REFERENCES plan(key),
    engine          TEXT NOT NULL,
    config          TEXT,
    dataset         TEXT NOT NULL,
    attempt         INTEGER NOT NULL,
    stage_index     INTEGER NOT NULL,
    stage           REAL NOT NULL,
    at_rest         INTEGER NOT NULL,
    insert_rate     REAL NOT NULL,          -- offered rows/s as configured; 0 = max
    clients         INTEGER NOT NULL,
    rows_total      INTEGER NOT NULL,
    rows_initial    INTEGER NOT NULL,
    rows_visible    INTEGER NOT NULL,
    queries         INTEGER NOT NULL,
    recall          REAL,
    short_answers   INTEGER NOT NULL,
    errors          INTEGER NOT NULL,
    elapsed_s       REAL NOT NULL,
    qps             REAL NOT NULL,
    mean_ms REAL, p50_ms REAL, p95_ms REAL, p99_ms REAL, p999_ms REAL, max_ms REAL,
    latency_hist    BLOB,
    fresh_rows_found INTEGER NOT NULL,
    rows_during_window INTEGER NOT NULL,
    rows_scheduled  INTEGER NOT NULL,
    rows_inserted   INTEGER NOT NULL,
    interval_s      REAL NOT NULL,
    offered_rows_s  REAL,
    achieved_rows_s REAL,
    insert_p50_ms REAL, insert_p99_ms REAL,
    max_lag_s       REAL NOT NULL,
    fresh_probes    INTEGER NOT NULL,
    fresh_never     INTEGER NOT NULL,
    fresh_p50_ms REAL, fresh_p99_ms REAL,
    insert_errors   INTEGER NOT NULL,
    rows_inserted_total INTEGER NOT NULL,
    rows_scheduled_total INTEGER NOT NULL,
    recall_full     REAL,                   -- the same answers against the full corpus's ground truth (contrast)
    rows_scheduled_window_end INTEGER,      -- rows due since the stream began when the window ended (issue 36.1)
    fresh_row_max   INTEGER,                -- the largest fresh id returned in the window; NULL none
    interval_max_lag_s REAL,                -- the interval's largest lag (max_lag_s: the stream's so far)
    fresh_node      INTEGER,                -- read replicas (issue 39): the node the freshness probe read on; NULL one server
    agent           TEXT,
    recorded_at     TEXT NOT NULL
);

-- Capacity (docs/metrics.md "Capacity"): every open-loop window of a capacity item's search, in the order measured
-- (step from 1), kept so the curve of latency against offered load can be drawn; attempt: the item's attempt that
-- measured it (a killed attempt's windows stay, as that attempt's). stage: grow, bisect, descend (the search), confirm,
-- knee (target_ms: the target they are for). met: bit i set when the window met p99 target i of targets (the item's
-- targets ascending, comma-separated). offered_rate is the rate asked for; scheduled / started the arrivals the Poisson
-- schedule put in the window and the queries that started in it (achieved >= 0.99 x offered is started >= 0.99 x
-- scheduled); latency from the intended start less the client's own delay (docs/metrics.md "Capacity"). client_limited: the client could not offer the rate (client_reason):
-- the window meets and fails nothing. The server's accounting and wait profile as window_result's (window_wait rows
-- under the same result_key).
CREATE TABLE IF NOT EXISTS capacity_window (
    result_key      TEXT PRIMARY KEY,
    item_key        TEXT NOT NULL REFERENCES plan(key),
    engine          TEXT NOT NULL,
    config          TEXT,
    dataset         TEXT NOT NULL,
    attempt         INTEGER NOT NULL,
    step            INTEGER NOT NULL,
    stage           TEXT NOT NULL CHECK (stage IN ('grow', 'bisect', 'descend', 'confirm', 'knee')),
    target_ms       REAL,
    targets         TEXT NOT NULL,
    met             INTEGER NOT NULL,
    offered_rate    REAL NOT NULL,
    achieved_rate   REAL NOT NULL,
    scheduled       INTEGER NOT NULL,
    started         INTEGER NOT NULL,
    clients         INTEGER NOT NULL,
    ef_search       INTEGER NOT NULL,
    recall          REAL,                   -- the operating point's; NULL unknown
    start_rate      REAL,
    window_s        REAL NOT NULL,
    window_start    REAL,                   -- epoch seconds (agent's clock): the server's samples inside it
    queries         INTEGER NOT NULL,       -- started and finished inside the window
    errors          INTEGER NOT NULL,
    p50_ms REAL, p99_ms REAL, p999_ms REAL, -- the objective's: from the intended start less the client's own delay
    latency_hist    BLOB,
    own_p99_ms      REAL,                   -- the client's own delay (wake-up, loop), p99
    uncorrected_p99_ms REAL,                -- from the intended start with that delay left in
    host_pause_ms   REAL,                   -- the client host's longest pause (agent/hiccup.h); NULL unmeasured
    discounted      INTEGER,                -- bit i: failed target i while the host paused: measured again, no vote
    late_starts     INTEGER,
    in_flight       REAL,
    client_cores    REAL,                   -- the workers' CPU seconds per second of the window
    client_cpus     INTEGER,
    client_limited  INTEGER NOT NULL,
    client_reason   TEXT,
    server_calls    INTEGER,
    server_exec_s   REAL,
    server_window_calls INTEGER,
    server_window_exec_s REAL,
    wait_rounds     INTEGER,
    wait_unit       TEXT,
    agent           TEXT,
    recorded_at     TEXT NOT NULL,
    agents          INTEGER                 -- the client agents that offered it (capacity_window_share); NULL: older
);

-- Each client agent's part of a capacity window (docs/design.md §8, "A capacity window on several client agents"): share
-- 1..agents, the agent, its share of the offered rate on its own Poisson schedule, its counts, its own p99 from the
-- intended start (the window's p99 is from the merged histograms), whether its own client guard found it at its limit.
CREATE TABLE IF NOT EXISTS capacity_window_share (
    result_key      TEXT NOT NULL,          -- the capacity_window's
    item_key        TEXT NOT NULL REFERENCES plan(key),
    share           INTEGER NOT NULL,
    agent           TEXT NOT NULL,
    offered_rate    REAL NOT NULL,
    scheduled       INTEGER NOT NULL,
    started         INTEGER NOT NULL,
    errors          INTEGER NOT NULL,
    p99_ms          REAL,
    client_limited  INTEGER NOT NULL,
    client_cores    REAL,
    window_start    REAL,                   -- when its measured window started (epoch s): the shares start together
    PRIMARY KEY (result_key, share)
);

-- A capacity item's answer per p99 target (one row per target and attempt), or its one row when it measured nothing
-- (status recall_unreachable, target_ms 0). status: found (rate is the capacity), recall_unreachable, client_limit (the
-- client could not offer more than client_max_rate where the engine still met the target: no capacity),
-- target_unreachable, not_converged. p50 / p99 / p999 at the found rate: the medians over its confirmation windows.
CREATE TABLE IF NOT EXISTS capacity_result (
    result_key      TEXT PRIMARY KEY,
    item_key        TEXT NOT NULL REFERENCES plan(key),
    engine          TEXT NOT NULL,
    config          TEXT,
    dataset         TEXT NOT NULL,
    attempt         INTEGER NOT NULL,
    target_ms       REAL NOT NULL,
    recall_target   REAL NOT NULL,
    status          TEXT NOT NULL,
    reason          TEXT,
    ef_search       INTEGER,
    recall          REAL,
    op_source       TEXT NOT NULL,          -- sweep, probe, given, unreachable: where ef_search came from
    rate            REAL,
    fail_rate       REAL,
    p50_ms REAL, p99_ms REAL, p999_ms REAL,
    repeats         INTEGER,
    repeats_met     INTEGER,
    knee_rate       REAL,
    knee_p99_ms     REAL,
    knee_failed     INTEGER,
    windows         INTEGER,
    start_rate      REAL,
    client_max_rate REAL,
    agent           TEXT,
    recorded_at     TEXT NOT NULL
);

-- Topology (issue 39, proto NodeResult): an engine of several servers (replicas: R) read each server's own numbers
-- after the build and after each concurrency window: one row per reading here, one per node in node_result. The
-- orchestrator's per-node memory, CPU, sizes and log tail are in the manifest (server.NAME.node.K.*,
-- server.NAME.at_stop.node.K.*); v_nodes puts them beside these.
CREATE TABLE IF NOT EXISTS node_reading (
    result_key      TEXT PRIMARY KEY,
    item_key        TEXT NOT NULL REFERENCES plan(key),
    engine          TEXT NOT NULL,
    config          TEXT,
    dataset         TEXT NOT NULL,
    after           TEXT NOT NULL,          -- build, window, churn-delete, churn-reinsert; churn, streaming: lag samples
    nodes           INTEGER NOT NULL,
    at_s            REAL,                   -- a lag sample's seconds since the churn's or the stream's writes began
    agent           TEXT,
    recorded_at     TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS node_result (
    result_key      TEXT NOT NULL,
    node            INTEGER NOT NULL,       -- 0 the primary, K a replica
    role            TEXT NOT NULL,
    rows            INTEGER,                -- NULL: the engine cannot say
    index_bytes     INTEGER,
    table_bytes     INTEGER,
    searches        INTEGER,                -- the server's own kNN statement count since it started
    lag_bytes       INTEGER,                -- WAL not replayed yet against the primary's position at the reading
    build_ms        INTEGER,                -- a shard's own index build (shards: N); NULL: not measured
    PRIMARY KEY (result_key, node)
);
