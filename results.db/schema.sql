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
    status          TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'interrupted')),
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

-- The plan and the checkpoint: one row per work item, in execution order.
CREATE TABLE IF NOT EXISTS plan (
    key             TEXT PRIMARY KEY,
    seq             INTEGER NOT NULL UNIQUE,
    phase           TEXT NOT NULL,
    engine          TEXT NOT NULL,
    dataset         TEXT NOT NULL,
    point           TEXT NOT NULL DEFAULT '',
    status          TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'running', 'done', 'failed', 'skipped', 'interrupted')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    agent           TEXT,
    started_at      TEXT,
    finished_at     TEXT,
    error           TEXT
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
    engine          TEXT NOT NULL,
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
    recorded_at     TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS sweep_result (
    result_key      TEXT PRIMARY KEY,
    item_key        TEXT NOT NULL REFERENCES plan(key),
    engine          TEXT NOT NULL,
    dataset         TEXT NOT NULL,
    ef_search       INTEGER NOT NULL,
    clients         INTEGER NOT NULL,
    queries         INTEGER NOT NULL,
    recall          REAL NOT NULL,          -- ann-benchmarks distance-threshold recall@k
    id_overlap      REAL NOT NULL,          -- id-overlap recall@k
    short_answers   INTEGER NOT NULL,       -- answers with fewer than k rows
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
    recorded_at     TEXT NOT NULL
);

-- Everything said during the campaign: failures with the engine's own text, interruptions, resumes.
CREATE TABLE IF NOT EXISTS event (
    id              INTEGER PRIMARY KEY,
    at              TEXT NOT NULL,
    level           TEXT NOT NULL CHECK (level IN ('info', 'warn', 'error')),
    item_key        TEXT,
    source          TEXT NOT NULL,          -- "coordinator", or the agent id
    message         TEXT NOT NULL
);

CREATE VIEW IF NOT EXISTS v_build AS
    SELECT b.engine, b.dataset, b.rows, b.load_s, b.build_s, b.first_query_s, b.rows_per_s, b.index_bytes,
           b.table_bytes, b.client_cpu_s, b.engine_version
    FROM build_result AS b JOIN plan ON plan.key = b.item_key
    ORDER BY plan.seq;

CREATE VIEW IF NOT EXISTS v_recall_sweep AS
    SELECT s.engine, s.dataset, s.ef_search, s.recall, s.id_overlap, s.qps, s.p50_ms, s.p95_ms, s.p99_ms,
           s.queries, s.short_answers, s.errors
    FROM sweep_result AS s JOIN plan ON plan.key = s.item_key
    ORDER BY plan.seq;

-- "Best QPS whose recall still passes" 0.90 / 0.95 / 0.99, per engine and dataset (NULL: never reached).
CREATE VIEW IF NOT EXISTS v_recall_targets AS
    SELECT engine, dataset,
           MAX(CASE WHEN recall >= 0.90 THEN qps END) AS qps_at_0_90,
           MAX(CASE WHEN recall >= 0.95 THEN qps END) AS qps_at_0_95,
           MAX(CASE WHEN recall >= 0.99 THEN qps END) AS qps_at_0_99
    FROM sweep_result
    GROUP BY engine, dataset
    ORDER BY MIN(rowid);

CREATE VIEW IF NOT EXISTS v_progress AS
    SELECT status, COUNT(*) AS items FROM plan GROUP BY status;
