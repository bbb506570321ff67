/* Writes the generated part of the seed corpus: `make fuzz-seeds` runs it as gen_corpus tests/fuzz/corpus.
 *
 * Seeds are small valid inputs (and a few broken ones) for the targets whose inputs are binary: an encoded
 * Envelope of every message kind and every result kind (wire), tiny .fvecs / .fbin / .bvecs / .u8bin file pairs
 * in the layout of fuzz_vecs.h, .ivecs / .ibin ground truth in the layout of fuzz_gt.h, and file descriptions for
 * fuzz_hdf5.c, and IDX files (plain, gzipped by the target, a raw gzip stream) for fuzz_idx.c. Text seeds (profiles, YAML, dataset specs) are plain files in the corpus directories. Files named bug-* reproduce a fixed bug: most are crashing inputs libFuzzer
 * saved, committed as they were; this program writes only the few that are easier to build than to find. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zlib.h>

#include "proto/wire.h"

static const char *g_root;

static void put(const char *target, const char *name, const void *data, size_t len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", g_root, target);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%s", g_root, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

/* ---- wire ------------------------------------------------------------------------------------------------- */

static void put_env(const char *name, const Vbench__Envelope *env) {
    size_t len = vbench__envelope__get_packed_size(env);
    uint8_t *buf = malloc(len ? len : 1);
    vbench__envelope__pack(env, buf);
    put("wire", name, buf, len);
    free(buf);
}

static Vbench__KV kv_a = {PROTOBUF_C_MESSAGE_INIT(&vbench__kv__descriptor), "ef_search", "40"},
                  kv_b = {PROTOBUF_C_MESSAGE_INIT(&vbench__kv__descriptor), "m", "16"};
static Vbench__KV *kvs[] = {&kv_a, &kv_b};

/* A latency histogram of three buckets; bad = 1 gives it one count too few, bad = 2 an index out of range,
 * bad = 3 counts that wrap around 2^64 (their sum is 1). */
static void histogram(Vbench__Histogram *h, int bad) {
    static uint32_t idx[3] = {100, 900, 1500}, idx_bad[3] = {100, 900, 99999};
    static uint64_t counts[3] = {5, 90, 5}, counts_wrap[3] = {UINT64_MAX, 1, 1};
    vbench__histogram__init(h);
    h->n_idx = 3;
    h->idx = bad == 2 ? idx_bad : idx;
    h->n_counts = bad == 1 ? 2 : 3;
    h->counts = bad == 3 ? counts_wrap : counts;
    h->min_ns = 1100;
    h->max_ns = 4000000;
}

static void gen_wire(void) {
    Vbench__Envelope env;
    char *roles[] = {"client", "orchestrator"};
    int32_t cpus[] = {0, 1, 2, 3};

    Vbench__Hello hello = VBENCH__HELLO__INIT;
    hello.protocol = VB_PROTOCOL_VERSION;
    hello.agent_id = "agent-1";
    hello.host = "host-a";
    hello.n_roles = 2;
    hello.roles = roles;
    hello.cores = 4;
    hello.n_cpus = 4;
    hello.cpus = cpus;
    hello.memory_bytes = 8ull << 30;
    hello.n_versions = 2;
    hello.versions = kvs;
    hello.pid = 4242;
    vbench__envelope__init(&env);
    env.body_case = VBENCH__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    put_env("hello.pb", &env);

    Vbench__Welcome welcome = VBENCH__WELCOME__INIT;
    welcome.campaign = "dev";
    welcome.heartbeat_ms = 1000;
    env.body_case = VBENCH__ENVELOPE__BODY_WELCOME;
    env.welcome = &welcome;
    put_env("welcome.pb", &env);

    Vbench__Assign assign = VBENCH__ASSIGN__INIT;
    assign.item_key = "dev/hnswlib/synth-angular-20k/recall_sweep/ef_search=40";
    assign.phase = VBENCH__PHASE__PHASE_RECALL_SWEEP;
    assign.engine = "hnswlib";
    assign.n_engine_params = 1;
    assign.engine_params = &kvs[1];
    assign.dataset = "synth-angular-20k";
    assign.n_dataset_params = 2;
    assign.dataset_params = kvs;
    Vbench__Point point = VBENCH__POINT__INIT;
    point.ef_search = 40;
    point.load_connections = 2;
    point.load_batch = 1000;
    assign.point = &point;
    assign.k = 10;
    assign.attempt = 1;
    env.body_case = VBENCH__ENVELOPE__BODY_ASSIGN;
    env.assign = &assign;
    put_env("assign.pb", &env);

    Vbench__Progress progress = VBENCH__PROGRESS__INIT;
    progress.item_key = assign.item_key;
    progress.stage = "queries";
    progress.done = 250;
    progress.total = 500;
    progress.rate = 1234.5;
    progress.elapsed_s = 0.2;
    progress.churn_stage = VBENCH__CHURN_STAGE__CHURN_NONE;
    env.body_case = VBENCH__ENVELOPE__BODY_PROGRESS;
    env.progress = &progress;
    put_env("progress.pb", &env);

    Vbench__Heartbeat hb = VBENCH__HEARTBEAT__INIT;
    hb.seq = 7;
    env.body_case = VBENCH__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    put_env("heartbeat.pb", &env);

    Vbench__Done done = VBENCH__DONE__INIT;
    done.item_key = assign.item_key;
    env.body_case = VBENCH__ENVELOPE__BODY_DONE;
    env.done = &done;
    put_env("done.pb", &env);

    Vbench__Failed failed = VBENCH__FAILED__INIT;
    failed.item_key = assign.item_key;
    failed.domain = "engine";
    failed.message = "ERROR: relation \"items\" does not exist";
    failed.kind = VBENCH__FAIL_KIND__FAIL_ERROR;
    env.body_case = VBENCH__ENVELOPE__BODY_FAILED;
    env.failed = &failed;
    put_env("failed.pb", &env);

    Vbench__Abort abort_ = VBENCH__ABORT__INIT;
    abort_.item_key = assign.item_key;
    abort_.reason = VBENCH__ABORT_REASON__ABORT_PHASE_TIMEOUT;
    abort_.detail = "exceeded limits.phase_timeout_s = 3600 s";
    env.body_case = VBENCH__ENVELOPE__BODY_ABORT;
    env.abort = &abort_;
    put_env("abort.pb", &env);

    Vbench__Ack ack = VBENCH__ACK__INIT;
    ack.result_key = "r-1";
    env.body_case = VBENCH__ENVELOPE__BODY_ACK;
    env.ack = &ack;
    put_env("ack.pb", &env);

    Vbench__Log log = VBENCH__LOG__INIT;
    log.item_key = assign.item_key;
    log.level = VBENCH__LOG_LEVEL__LOG_WARN;
    log.message = "short answers: 3";
    env.body_case = VBENCH__ENVELOPE__BODY_LOG;
    env.log = &log;
    put_env("log.pb", &env);

    Vbench__Bye bye = VBENCH__BYE__INIT;
    bye.reason = "campaign over";
    env.body_case = VBENCH__ENVELOPE__BODY_BYE;
    env.bye = &bye;
    put_env("bye.pb", &env);
    bye.code = VBENCH__BYE_CODE__BYE_PROTOCOL;
    bye.reason = "agent a speaks protocol 3, this coordinator (vbench x) protocol 4: install the same vbench version";
    put_env("bye-protocol.pb", &env);

    /* server requests and reports: one of each body */
    Vbench__ServerRequest srq = VBENCH__SERVER_REQUEST__INIT;
    srq.engine = "pgvector";
    srq.recipe = "pgvector";
    srq.action = VBENCH__SERVER_ACTION__SERVER_PHASE;
    srq.item_key = assign.item_key;
    srq.campaign = "dev";
    env.body_case = VBENCH__ENVELOPE__BODY_SERVER_REQUEST;
    env.server_request = &srq;
    put_env("server-request.pb", &env);
    Vbench__ServerReport srep = VBENCH__SERVER_REPORT__INIT;
    srep.engine = "pgvector";
    srep.unit = "vbench-dev-pgvector.service";
    env.body_case = VBENCH__ENVELOPE__BODY_SERVER_REPORT;
    env.server_report = &srep;
    Vbench__ServerReady ready = VBENCH__SERVER_READY__INIT;
    ready.message = "started";
    ready.n_connect = 1;
    ready.connect = &kvs[1];
    ready.n_facts = 1;
    ready.facts = kvs;
    srep.body_case = VBENCH__SERVER_REPORT__BODY_READY;
    srep.ready = &ready;
    put_env("server-ready.pb", &env);
    Vbench__ServerEnd died = VBENCH__SERVER_END__INIT;
    died.message = "the unit ended";
    died.log_tail = "FATAL: out of memory\n";
    died.n_facts = 1;
    died.facts = kvs;
    srep.body_case = VBENCH__SERVER_REPORT__BODY_DIED;
    srep.died = &died;
    put_env("server-died.pb", &env);
    Vbench__ServerSample sample = VBENCH__SERVER_SAMPLE__INIT, *samplep = &sample;
    sample.wall = 1.7e9;
    sample.rss_bytes = 1u << 20;
    Vbench__ServerSamples samples = VBENCH__SERVER_SAMPLES__INIT;
    samples.item_key = assign.item_key;
    samples.n_samples = 1;
    samples.samples = &samplep;
    srep.body_case = VBENCH__SERVER_REPORT__BODY_SAMPLES;
    srep.samples = &samples;
    put_env("server-samples.pb", &env);
    Vbench__ProfileFunction fn = VBENCH__PROFILE_FUNCTION__INIT, *fnp = &fn;
    fn.name = "ExecScan";
    fn.samples = 12;
    Vbench__ServerProfile prof = VBENCH__SERVER_PROFILE__INIT;
    prof.item_key = assign.item_key;
    prof.window_start = 1.7e9;
    prof.window_end = 1.7e9 + 2;
    prof.samples = 12;
    prof.n_top = 1;
    prof.top = &fnp;
    prof.folded = "postgres;PostgresMain;ExecScan 12\n";
    srep.body_case = VBENCH__SERVER_REPORT__BODY_PROFILE;
    srep.profile = &prof;
    put_env("server-profile.pb", &env);
    srep.body_case = VBENCH__SERVER_REPORT__BODY__NOT_SET;
    put_env("broken-server-report-no-body.pb", &env);
    env.body_case = VBENCH__ENVELOPE__BODY_SERVER_REQUEST;
    srq.action = VBENCH__SERVER_ACTION__SERVER_PROFILE;
    srq.profile_start = 1.7e9;
    srq.profile_end = 1.7e9 + 2;
    put_env("server-request-profile.pb", &env);

    /* results: one of each kind, for items of the dev plan */
    Vbench__Result res = VBENCH__RESULT__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_RESULT;
    env.result = &res;
    res.result_key = "r-build";
    res.item_key = "dev/hnswlib/synth-angular-20k/build";
    res.completes_item = 1;
    Vbench__BuildResult build = VBENCH__BUILD_RESULT__INIT;
    build.rows = 20000;
    build.load_s = 1.5;
    build.build_s = 3.25;
    build.first_query_s = 4.9;
    build.rows_per_s = 13333;
    build.index_bytes = 12345678;
    build.table_bytes = -1;
    build.engine_version = "hnswlib 0.8.0";
    build.dataset_hash = "0123456789abcdef0123456789abcdef";
    res.body_case = VBENCH__RESULT__BODY_BUILD;
    res.build = &build;
    put_env("result-build.pb", &env);

    Vbench__Histogram lat, lag;
    histogram(&lat, 0);
    histogram(&lag, 0);
    Vbench__Measurement sm = VBENCH__MEASUREMENT__INIT;
    sm.queries = 500;
    sm.recall = 0.93;
    sm.id_overlap = 0.92;
    sm.elapsed_s = 0.4;
    sm.qps = 1250;
    sm.latency = &lat;
    sm.index_used = 1;
    sm.plan = "Index Scan using items_embedding_idx on items";
    Vbench__SweepResult sweep = VBENCH__SWEEP_RESULT__INIT;
    sweep.ef_search = 40;
    sweep.m = &sm;
    sweep.clients = 1;
    res.result_key = "r-sweep";
    res.item_key = "dev/hnswlib/synth-angular-20k/recall_sweep/ef_search=40";
    res.body_case = VBENCH__RESULT__BODY_SWEEP;
    res.sweep = &sweep;
    put_env("result-sweep.pb", &env);
    /* The same with its answers (SweepResult.answers: header, then 2 queries x k = 2, the second one short). */
    static const uint8_t answers[16 + 2 * (4 + 16)] = {
        'V', 'B', 'A', '1', 2, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
        0x6f, 0x12, 0x83, 0x3a, 7, 0, 0, 0, 0, 0, 0x80, 0x3e, 9, 0, 0, 0, 0, 0, 0xa0, 0x3e,
        0x6f, 0x12, 0x83, 0x3a, 3, 0, 0, 0, 0, 0, 0x80, 0x3e, 0xff, 0xff, 0xff, 0xff, 0, 0, 0x80, 0x7f,
    };
    sweep.answers.data = (uint8_t *)answers;
    sweep.answers.len = sizeof answers;
    put_env("result-sweep-answers.pb", &env);
    sweep.answers.data = NULL;
    sweep.answers.len = 0;

    double fractions[] = {0.74, 0.75};
    Vbench__WindowResult win = VBENCH__WINDOW_RESULT__INIT;
    win.clients = 2;
    win.repeat = 1;
    win.ef_search = 100;
    win.window_s = 2.0;
    win.queries = 4000;
    win.qps = 2000;
    win.latency = &lat;
    win.in_call_s = 2.98;
    win.n_fraction_in_call = 2;
    win.fraction_in_call = fractions;
    win.target_rate = 2500;
    win.late_starts = 3;
    win.lag = &lag;
    res.result_key = "r-window";
    res.item_key = "dev/hnswlib/synth-angular-20k/concurrency/clients=2,repeat=1";
    res.body_case = VBENCH__RESULT__BODY_WINDOW;
    res.window = &win;
    put_env("result-window.pb", &env);

    Vbench__Measurement fm = VBENCH__MEASUREMENT__INIT;
    fm.queries = 200;
    fm.recall = 0.5;
    fm.short_answers = 120;
    fm.duplicate_answers = 3;
    fm.duplicate_example = "query 164: id 46667 at rows 5 and 7";
    fm.qps = 900;
    fm.latency = &lat;
    Vbench__FilteredResult filt = VBENCH__FILTERED_RESULT__INIT;
    filt.selectivity = 0.01;
    filt.passing_rows = 200;
    filt.ef_search = 100;
    filt.m = &fm;
    filt.filter = "tag < 100";
    res.result_key = "r-filtered";
    res.item_key = "dev/hnswlib/synth-angular-20k/filtered/selectivity=0.01";
    res.body_case = VBENCH__RESULT__BODY_FILTERED;
    res.filtered = &filt;
    put_env("result-filtered.pb", &env);

    Vbench__ChurnResult churn = VBENCH__CHURN_RESULT__INIT;
    churn.stage = VBENCH__CHURN_STAGE__CHURN_REINSERT;
    churn.rows_planned = 2000;
    churn.rows_done = 1500;
    churn.seconds = 3;
    churn.rows_per_s = 500;
    churn.rows_from = 100;
    res.result_key = "r-churn";
    res.item_key = "dev/hnswlib/synth-angular-20k/churn";
    res.body_case = VBENCH__RESULT__BODY_CHURN;
    res.churn = &churn;
    put_env("result-churn.pb", &env);
    Vbench__Measurement cm = VBENCH__MEASUREMENT__INIT;
    churn.stage = VBENCH__CHURN_STAGE__CHURN_AFTER;
    churn.m = &cm;
    cm.qps = 1100;
    cm.recall = 0.95;
    cm.latency = &lat;
    cm.queries = 500;
    cm.duplicate_answers = 2;
    cm.duplicate_example = "query 24: id 26888 at rows 3 and 4";
    res.result_key = "r-churn-after";
    put_env("result-churn-after.pb", &env);

    /* a cold start, measured (a failed warm query among them) and not applicable */
    uint64_t cold_ns[12] = {9000000, 900000, 400000, 300000, 250000, 200000, 190000, 180000, 180000, 170000, 170000,
                            160000};
    uint64_t warm_ns[12] = {1500000, 170000, 160000, 170000, 160000, 150000, 160000, 170000, 150000, 160000, 150000,
                            160000};
    uint32_t warm_failed[1] = {3};
    Vbench__ColdStartResult cs = VBENCH__COLD_START_RESULT__INIT;
    cs.applicable = 1;
    cs.ef_search = 40;
    cs.n_cold_ns = cs.n_warm_ns = 12;
    cs.cold_ns = cold_ns;
    cs.warm_ns = warm_ns;
    cs.n_warm_failed = 1;
    cs.warm_failed = warm_failed;
    cs.evicted_files = 979;
    cs.evicted_bytes = 42358962;
    cs.restart_s = 0.4;
    cs.first_error = "server closed the connection unexpectedly";
    res.result_key = "r-cold-start";
    res.item_key = "dev/pgvector/synth-angular-20k/cold_start";
    res.body_case = VBENCH__RESULT__BODY_COLD_START;
    res.cold_start = &cs;
    put_env("result-cold-start.pb", &env);
    Vbench__ColdStartResult na = VBENCH__COLD_START_RESULT__INIT;
    na.reason = "hnswlib is an embedded engine: it runs inside the client process";
    res.result_key = "r-cold-start-na";
    res.cold_start = &na;
    put_env("result-cold-start-na.pb", &env);

    /* broken: histogram arrays of different lengths, a bucket out of range, counts that wrap, no body, cut short */
    Vbench__Histogram bad1, bad2, bad3;
    histogram(&bad1, 1);
    histogram(&bad2, 2);
    histogram(&bad3, 3);
    sm.latency = &bad1;
    res.result_key = "r-bad-counts";
    res.item_key = "dev/hnswlib/synth-angular-20k/recall_sweep/ef_search=40";
    res.body_case = VBENCH__RESULT__BODY_SWEEP;
    res.sweep = &sweep;
    put_env("broken-histogram-lengths.pb", &env);
    sm.latency = &bad2;
    res.result_key = "r-bad-index";
    put_env("broken-histogram-index.pb", &env);
    sm.latency = &bad3;
    res.result_key = "r-bad-wrap";
    put_env("bug-histogram-counts-wrap.pb", &env);
    vbench__envelope__init(&env);
    put_env("broken-no-body.pb", &env);
    env.body_case = VBENCH__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    size_t len = vbench__envelope__get_packed_size(&env);
    uint8_t *buf = malloc(len);
    vbench__envelope__pack(&env, buf);
    put("wire", "broken-truncated.pb", buf, len / 2);
    free(buf);
}

/* ---- fvecs / fbin / bvecs / u8bin: metric byte, base length (2 bytes), base file, query file -------------- */

/* A vector file: fbin = 1 for the big-ann layout (rows, dim header), else TEXMEX (a dimension word per row,
 * dim + 1 in row bad_row); elem 4 (float32) or 1 (uint8). */
static size_t vecs_file(uint8_t *out, int fbin, size_t elem, uint32_t rows, uint32_t dim, int32_t bad_row) {
    uint8_t *p = out;
    if (fbin) {
        memcpy(p, &rows, 4);
        memcpy(p + 4, &dim, 4);
        p += 8;
    }
    for (uint32_t i = 0; i < rows; i++) {
        if (!fbin) {
            int32_t d = (int32_t)i == bad_row ? (int32_t)dim + 1 : (int32_t)dim;
            memcpy(p, &d, 4);
            p += 4;
        }
        for (uint32_t j = 0; j < dim; j++, p += elem) {
            float v = (float)(i + 1) * 0.25f - (float)j;
            if (elem == 4)
                memcpy(p, &v, 4);
            else
                *p = (uint8_t)(i * 37 + j * 11 + (i == 0 && j == 0 ? 255 : 0));
        }
    }
    return (size_t)(p - out);
}

static void put_vecs(const char *target, const char *name, int fbin, size_t elem, uint8_t metric, uint32_t rows,
                     uint32_t dim, uint32_t qrows, uint32_t qdim, int32_t bad_row, long trim) {
    static uint8_t buf[1 << 16];
    buf[0] = metric;
    size_t b = vecs_file(buf + 3, fbin, elem, rows, dim, bad_row);
    buf[1] = (uint8_t)b;
    buf[2] = (uint8_t)(b >> 8);
    size_t q = vecs_file(buf + 3 + b, fbin, elem, qrows, qdim, -1);
    put(target, name, buf, 3 + b + q - (size_t)trim);
}

static void gen_vecs(void) {
    static const struct {
        const char *target;
        int fbin;
        size_t elem;
    } t[] = {{"fvecs", 0, 4}, {"fbin", 1, 4}, {"bvecs", 0, 1}, {"u8bin", 1, 1}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        const char *g = t[i].target;
        int fbin = t[i].fbin;
        size_t e = t[i].elem;
        put_vecs(g, "valid-angular.bin", fbin, e, 0, 6, 4, 2, 4, -1, 0);
        put_vecs(g, "valid-euclidean.bin", fbin, e, 1, 3, 16, 3, 16, -1, 0);
        put_vecs(g, "valid-dot-dim1.bin", fbin, e, 2, 5, 1, 1, 1, -1, 0);
        put_vecs(g, "broken-query-dim.bin", fbin, e, 0, 4, 4, 2, 3, -1, 0);
        put_vecs(g, "broken-short.bin", fbin, e, 1, 4, 4, 2, 4, -1, 3);
        put_vecs(g, "broken-metric.bin", fbin, e, 3, 4, 4, 2, 4, -1, 0);
        if (!fbin) put_vecs(g, "broken-row-dim.bin", fbin, e, 0, 4, 4, 2, 4, 2, 0);
    }
    /* u8bin: 2^32 - 1 rows of 65536 in an 8-byte file (2^48 bytes declared) */
    uint8_t wrap[3 + 8 + 8] = {1, 8, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 1, 0};
    put("u8bin", "broken-header-huge.bin", wrap, sizeof wrap);
}

/* ---- ivecs / ibin: corpus rows - 1, queries - 1 (mod 8), ground-truth file (see fuzz_gt.h) ---------------- */

/* queries x k neighbours over `rows` corpus rows; bad: 1 an id equal to rows, 2 a different k in row 1 (ivecs),
 * 3 no distances (ibin), 4 one query fewer in the dataset than rows in the file. */
static void put_gt(const char *target, const char *name, uint32_t rows, uint32_t queries, uint32_t k, int bad) {
    static uint8_t buf[1 << 16];
    int ibin = strcmp(target, "ibin") == 0;
    uint8_t *p = buf;
    *p++ = (uint8_t)(rows - 1);
    *p++ = (uint8_t)(queries - 1 - (bad == 4));
    if (ibin) {
        memcpy(p, &queries, 4);
        memcpy(p + 4, &k, 4);
        p += 8;
    }
    for (uint32_t q = 0; q < queries; q++) {
        uint32_t kk = bad == 2 && q == 1 ? k - 1 : k;
        if (!ibin) {
            memcpy(p, &kk, 4);
            p += 4;
        }
        for (uint32_t j = 0; j < kk; j++, p += 4) {
            uint32_t id = bad == 1 && q == queries - 1 && j == 0 ? rows : (q * 5 + j * 3) % rows;
            memcpy(p, &id, 4);
        }
    }
    for (uint32_t i = 0; ibin && bad != 3 && i < queries * k; i++, p += 4) {
        float d = (float)i * 0.5f;
        memcpy(p, &d, 4);
    }
    put(target, name, buf, (size_t)(p - buf));
}

static void gen_gt(void) {
    put_gt("ivecs", "valid-3x4.bin", 20, 3, 4, 0);
    put_gt("ivecs", "valid-1x1.bin", 1, 1, 1, 0);
    put_gt("ivecs", "broken-id.bin", 20, 3, 4, 1);
    put_gt("ivecs", "broken-k-row1.bin", 20, 3, 4, 2);
    put_gt("ivecs", "broken-rows.bin", 20, 4, 4, 4);
    put_gt("ibin", "valid-3x4-distances.bin", 20, 3, 4, 0);
    put_gt("ibin", "valid-3x4-ids-only.bin", 20, 3, 4, 3);
    put_gt("ibin", "valid-1x1.bin", 1, 1, 1, 0);
    put_gt("ibin", "broken-id.bin", 20, 3, 4, 1);
    put_gt("ibin", "broken-rows.bin", 20, 4, 4, 4);
    /* 2^32 - 1 queries x 2^32 - 1 neighbours in an 8-byte file */
    uint8_t huge[2 + 8] = {19, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    put("ibin", "broken-header-huge.bin", huge, sizeof huge);
}

/* ---- hdf5: a file description (see fuzz_hdf5.c) ----------------------------------------------------------- */

typedef struct h5_arr {
    uint8_t kind, rank, d[3], type, layout;
} h5_arr;

enum { ABSENT = 0x00, GROUP = 0x10, DANGLING = 0x20, ARRAY = 0x40 };
enum { F32LE, F32BE, F64LE, F64BE, I32LE, I8LE, U64BE, U16LE, STR4, COMPOUND, B8, ENUM };
enum { CONTIG, CHUNKED, DEFLATE, COMPACT, SHUFFLE, LATE };
enum { ATTR_NONE, ATTR_FIXED, ATTR_VLEN, ATTR_FIXED_ARRAY, ATTR_VLEN_ARRAY, ATTR_INT, ATTR_DOUBLE, ATTR_NULL };

#define A2(r, c, t, l) {ARRAY, 0, {(r) - 1, (c) - 1, 0}, t, l}

static void put_h5(const char *name, uint8_t attr_form, uint8_t attr_pick, const h5_arr *arrs) {
    uint8_t buf[64 + 4 * 64];
    size_t n = 0;
    buf[n++] = attr_form;
    buf[n++] = attr_pick;
    for (int i = 0; i < 4; i++) {
        const h5_arr *a = &arrs[i];
        buf[n++] = a->kind;
        buf[n++] = a->rank;
        int rank = a->rank < 0xE0 ? 2 : a->rank % 4;
        if (a->kind) for (int j = 0; j < rank; j++) buf[n++] = a->d[j];
        else for (int j = 0; j < rank; j++) buf[n++] = 0;
        buf[n++] = a->type;
        buf[n++] = a->layout;
    }
    for (int i = 0; i < 64; i++) {   /* element bytes: small floats whatever their alignment */
        float v = (float)i * 0.125f;
        memcpy(buf + n, &v, 4);
        n += 4;
    }
    put("hdf5", name, buf, n);
}

static void gen_hdf5(void) {
    const h5_arr none = {0};
    /* attribute picks: 0 angular, 1 euclidean, 2 dot (with the NUL); +0x20: without it */
    put_h5("valid-contiguous-f32.h5d", ATTR_FIXED, 0,
           (h5_arr[]){A2(20, 8, F32LE, CONTIG), A2(5, 8, F32LE, CONTIG), A2(5, 3, I32LE, CONTIG),
                      A2(5, 3, F32LE, CONTIG)});
    put_h5("valid-chunked-gzip-f64.h5d", ATTR_VLEN, 1,
           (h5_arr[]){A2(17, 6, F32LE, DEFLATE), A2(4, 6, F64LE, DEFLATE), none, none});
    put_h5("valid-compact-dot.h5d", ATTR_FIXED, 0x22,
           (h5_arr[]){A2(4, 4, F32LE, COMPACT), A2(2, 4, F32BE, SHUFFLE), A2(2, 2, I8LE, CHUNKED), none});
    put_h5("valid-unwritten.h5d", ATTR_FIXED, 1,
           (h5_arr[]){A2(6, 3, F32LE, LATE), A2(2, 3, U16LE, LATE), none, none});
    put_h5("broken-no-test.h5d", ATTR_FIXED, 0, (h5_arr[]){A2(10, 4, F32LE, CONTIG), none, none, none});
    put_h5("broken-test-rank3.h5d", ATTR_FIXED, 0,
           (h5_arr[]){A2(10, 4, F32LE, CONTIG), {ARRAY, 0xE3, {2, 2, 3}, F32LE, CONTIG}, none, none});
    put_h5("broken-train-group.h5d", ATTR_FIXED, 0,
           (h5_arr[]){{GROUP, 0, {0}, 0, 0}, A2(2, 4, F32LE, CONTIG), none, none});
    put_h5("broken-test-dangling.h5d", ATTR_FIXED, 0,
           (h5_arr[]){A2(10, 4, F32LE, CONTIG), {DANGLING, 0, {0}, 0, 0}, none, none});
    put_h5("broken-dim-mismatch.h5d", ATTR_FIXED, 1,
           (h5_arr[]){A2(10, 8, F32LE, CONTIG), A2(3, 5, F32LE, CONTIG), none, none});
    put_h5("broken-neighbors-rows.h5d", ATTR_FIXED, 1,
           (h5_arr[]){A2(10, 4, F32LE, CONTIG), A2(3, 4, F32LE, CONTIG), A2(2, 3, I32LE, CONTIG), none});
    put_h5("broken-string-train.h5d", ATTR_FIXED, 0,
           (h5_arr[]){A2(10, 4, STR4, CONTIG), A2(3, 4, F32LE, CONTIG), none, none});
    put_h5("broken-attr-int.h5d", ATTR_INT, 0,
           (h5_arr[]){A2(10, 4, F32LE, CONTIG), A2(3, 4, F32LE, CONTIG), none, none});
    put_h5("broken-attr-hamming.h5d", ATTR_VLEN, 6,
           (h5_arr[]){A2(10, 4, F32LE, CONTIG), A2(3, 4, F32LE, CONTIG), none, none});
    put_h5("broken-no-attr.h5d", ATTR_NONE, 0,
           (h5_arr[]){A2(10, 4, F32LE, CONTIG), A2(3, 4, F32LE, CONTIG), none, none});
}

/* ---- idx: form byte (bit 0 labels, bit 1 gzipped by the target), then the file ------------------------------ */

static void put_idx(const char *name, uint8_t form, uint32_t magic, unsigned nd, const uint32_t *dims, long cut) {
    uint8_t buf[512];
    size_t len = 1, data = 1;
    buf[0] = form;
    for (int b = 3; b >= 0; b--) buf[len++] = (uint8_t)(magic >> (8 * b));
    for (unsigned i = 0; i < nd; i++) {
        for (int b = 3; b >= 0; b--) buf[len++] = (uint8_t)(dims[i] >> (8 * b));
        data *= dims[i];
    }
    for (size_t i = 0; i < data && len < sizeof buf; i++) buf[len++] = (uint8_t)(i * 37 % (nd == 1 ? 10 : 256));
    put("idx", name, buf, cut >= 0 && (size_t)cut < len ? (size_t)cut : len);
}

static void gen_idx(void) {
    uint32_t img[3] = {3, 4, 5}, lab[1] = {7}, zero[3] = {2, 0, 3}, many[1] = {4000000000u};
    put_idx("valid-images.bin", 0, 0x803, 3, img, -1);
    put_idx("valid-images-gz.bin", 2, 0x803, 3, img, -1);
    put_idx("valid-labels.bin", 1, 0x801, 1, lab, -1);
    put_idx("valid-labels-gz.bin", 3, 0x801, 1, lab, -1);
    put_idx("broken-truncated-header.bin", 0, 0x803, 3, img, 10);
    put_idx("broken-truncated-data.bin", 2, 0x803, 3, img, 40);
    put_idx("broken-magic.bin", 0, 0x801, 1, lab, -1);
    put_idx("broken-zero-dim.bin", 0, 0x803, 3, zero, -1);
    put_idx("broken-huge-count.bin", 3, 0x801, 1, many, 9);
    /* a gzip stream written out (form bit 1 clear): the fuzzer mutates its bytes, so corrupt and cut streams */
    uint8_t raw[64] = {0}, gzb[256];
    size_t n = 0;
    raw[0] = 0, raw[1] = 0, raw[2] = 8, raw[3] = 1, raw[7] = 5;
    for (int i = 0; i < 5; i++) raw[8 + i] = (uint8_t)i;
    z_stream z = {0};
    deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    z.next_in = raw, z.avail_in = 13, z.next_out = gzb + 1, z.avail_out = sizeof gzb - 1;
    deflate(&z, Z_FINISH);
    n = 1 + z.total_out;
    deflateEnd(&z);
    gzb[0] = 1;
    put("idx", "valid-labels-raw-gzip.bin", gzb, n);
    gzb[n - 8] ^= 0xff;   /* its CRC */
    put("idx", "broken-crc.bin", gzb, n);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: gen_corpus DIR (tests/fuzz/corpus)\n");
        return 2;
    }
    g_root = argv[1];
    mkdir(g_root, 0755);
    gen_wire();
    gen_vecs();
    gen_gt();
    gen_hdf5();
    gen_idx();
    return 0;
}
