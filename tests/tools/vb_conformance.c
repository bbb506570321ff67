/* The engine contract's conformance script (engines/conformance.c) over every registered engine, as TAP.
 *
 *   vb_conformance [--metric M]... [--engine NAME [KEY=VALUE]... [--restart CMD] [--known-filtered-defects WHY]
 *                  [--known-unreachable WHY]]...
 *
 * Walks the registry: stubs are skipped (they are not indexes), in-process engines always run, a server engine
 * runs when --engine NAME gives its parameters (where the server is) and is otherwise listed as "# SKIP no
 * server for it here" with the engine's own description, so an engine added to the registry shows up here
 * without an edit. --restart CMD (run by sh) restarts that server and returns once it answers: the script then
 * checks VB_RETRY and recovery. --known-filtered-defects and --known-unreachable name a server's known defects
 * (vb_conformance_opts says what each allows). --metric (euclidean, angular; default both) may repeat.
 *
 * After the shared script, engine-specific sections keep what the per-server drivers checked before it existed
 * (tests/tools/vb_pgtest.c and vb_mariadb_check.c, now gone): pgvector's halfvec variant, iterative scan at a
 * 1 % filter, EXPLAIN through the explain op, a terminated backend, attach, sizes, version and its error
 * messages; MariaDB's recall at a high ef_search, attach, EXPLAIN, a killed connection, sizes, version and
 * error messages; Valkey's recall at a high ef_search, attach, sizes, version, ef_search per connection and the
 * check that fails a build when the server evicted rows. tests/e2e/63-conformance.t starts the servers and runs
 * this. Exit 0 when every check passed. */
#include <hiredis/hiredis.h>
#include <libpq-fe.h>
#include <math.h>
#include <mysql.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/dataset.h"
#include "datasets/distance.h"
#include "engines/conformance.h"
#include "engines/engine.h"
#include "tests/tap.h"

#define MAX_ENGINES 8
#define MAX_KV 16
#define K 10

typedef struct server_arg {
    const char *name;
    vb_kv kv[MAX_KV];
    size_t n_kv;
    const char *restart, *known_filtered_defects, *known_unreachable;
} server_arg;

static server_arg servers[MAX_ENGINES];
static int n_servers;

static void tap_check(void *arg, int pass, const char *name) {
    (void)arg;
    ok(pass, "%s", name);
}

static void tap_note(void *arg, const char *text) {
    (void)arg;
    printf("# %s\n", text);
}

static int run_restart(void *arg, vb_error *err) {
    const server_arg *s = arg;
    fflush(stdout);
    int rc = system(s->restart);
    if (rc != 0) return vb_error_set(err, "conformance", 1, "restart command exited with %d: %s", rc, s->restart);
    return VB_OK;
}

static const char *param(const server_arg *s, const char *key, const char *def) {
    return vb_kv_get(s->kv, s->n_kv, key, def);
}

/* A copy of the server's parameters with some replaced or added (KEY, VALUE pairs, NULL-terminated). */
static size_t with(const server_arg *s, const char *const *extra, vb_kv *out) {
    size_t n = s->n_kv;
    memcpy(out, s->kv, n * sizeof *out);
    for (size_t i = 0; extra && extra[i]; i += 2) {
        size_t j = 0;
        while (j < n && strcmp(out[j].key, extra[i])) j++;
        out[j] = (vb_kv){extra[i], extra[i + 1]};
        if (j == n) n++;
    }
    return n;
}

/* ---- a fixture for the engine-specific sections ------------------------------------------------------ */

static uint64_t rng = 42;
static double urand(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}
static float nrand(void) { return (float)(sqrt(-2.0 * log(urand())) * cos(6.283185307179586 * urand())); }

typedef struct fixture {
    size_t n, d, nq;
    int64_t *ids;
    int32_t *tags;
    float *vecs, *queries;
} fixture;

/* n rows around 20 centres, or plain gaussian (a hard set for a graph) when clustered is 0. */
static void fixture_init(fixture *f, size_t n, size_t d, size_t nq, int clustered) {
    float *c = malloc(20 * d * sizeof *c);
    f->n = n, f->d = d, f->nq = nq;
    f->vecs = malloc((n + nq) * d * sizeof *f->vecs);
    f->queries = f->vecs + n * d;
    f->ids = malloc(n * sizeof *f->ids);
    f->tags = malloc(n * sizeof *f->tags);
    for (size_t i = 0; i < 20 * d; i++) c[i] = clustered ? nrand() * 3.0f : 0.0f;
    for (size_t i = 0; i < n + nq; i++) {
        size_t k = (size_t)(urand() * 20) % 20;
        for (size_t j = 0; j < d; j++) f->vecs[i * d + j] = c[k * d + j] + nrand();
    }
    for (size_t i = 0; i < n; i++) {
        f->ids[i] = (int64_t)i;
        f->tags[i] = vb_dataset_tag(f->ids[i]);
    }
    free(c);
}

static void fixture_free(fixture *f) {
    free(f->vecs);
    free(f->ids);
    free(f->tags);
}

static int fill(vb_engine *e, const vb_table_spec *spec, const fixture *f, vb_error *err) {
    vb_conn *c = NULL;
    int rc = vb_engine_create(e, spec, err);
    if (rc == VB_OK) rc = vb_engine_connect(e, &c, err);
    for (size_t i = 0; rc == VB_OK && i < f->n; i += 500) {
        size_t m = f->n - i < 500 ? f->n - i : 500;
        rc = vb_conn_load(c, f->ids + i, f->vecs + i * f->d, f->tags + i, NULL, m, err);
    }
    vb_conn_close(&c);
    if (rc == VB_OK) rc = vb_engine_build(e, err);
    return rc;
}

typedef struct answers {
    int64_t ids[K];
    int n;
} answers;

/* Runs the fixture's queries at ef on a new connection of e; *a gets nq answers. */
static int query_all(vb_engine *e, const fixture *f, int ef, const vb_filter *flt, answers *a, vb_error *err) {
    vb_conn *c = NULL;
    vb_search_params p = {ef};
    int rc = vb_engine_connect(e, &c, err);
    if (rc == VB_OK && ef > 0) rc = vb_conn_set_search(c, &p, err);
    for (size_t q = 0; rc == VB_OK && q < f->nq; q++)
        rc = vb_conn_search(c, f->queries + q * f->d, K, flt, a[q].ids, &a[q].n, err);
    vb_conn_close(&c);
    return rc;
}

static double overlap(const answers *got, const answers *want, size_t nq) {
    long hit = 0, total = 0;
    for (size_t q = 0; q < nq; q++) {
        total += want[q].n;
        for (int i = 0; i < got[q].n; i++) {
            int seen = 0;
            for (int j = 0; j < i && !seen; j++) seen = got[q].ids[j] == got[q].ids[i];
            for (int j = 0; j < want[q].n && !seen; j++) hit += got[q].ids[i] == want[q].ids[j];
        }
    }
    return total ? (double)hit / (double)total : 0.0;
}

static int short_answers(const answers *a, size_t nq) {
    int s = 0;
    for (size_t q = 0; q < nq; q++) s += a[q].n < K;
    return s;
}

/* The reference answers from the exact engine. */
static int exact_answers(const vb_table_spec *spec, const fixture *f, const vb_filter *flt, answers *a) {
    vb_engine *ex = NULL;
    vb_error err = {0};
    int rc = vb_engine_open("exact", NULL, &ex, &err);
    if (rc == VB_OK) rc = fill(ex, spec, f, &err);
    if (rc == VB_OK) rc = query_all(ex, f, 0, flt, a, &err);
    vb_engine_close(&ex);
    return rc;
}

static vb_engine *open_with(const server_arg *s, const char *const *extra, vb_error *err) {
    vb_kv kv[MAX_KV + 8];
    size_t n = with(s, extra, kv);
    vb_engine_config cfg = {kv, n, NULL, 0};
    vb_engine *e = NULL;
    vb_engine_open(s->name, &cfg, &e, err);
    return e;
}

/* ef_search is a setting of the connection (engine contract): a at ef lo, b at hi, then a again must keep lo's
 * answers. Here because on the script's 3000-row table PostgreSQL plans a sequential scan (exact answers at
 * any ef_search), so the script cannot see ef_search act there; on this table the plan scans the index. */
static void per_connection_ef(vb_engine *e, const char *name, const fixture *f, const answers *want, int lo, int hi) {
    answers *a1 = calloc(f->nq, sizeof *a1), *b = calloc(f->nq, sizeof *b), *a2 = calloc(f->nq, sizeof *a2);
    vb_conn *ca = NULL, *cb = NULL;
    vb_error err = {0};
    vb_search_params plo = {lo}, phi = {hi};
    int rc = vb_engine_connect(e, &ca, &err);
    if (rc == VB_OK) rc = vb_engine_connect(e, &cb, &err);
    if (rc == VB_OK) rc = vb_conn_set_search(ca, &plo, &err);
    for (size_t q = 0; rc == VB_OK && q < f->nq; q++)
        rc = vb_conn_search(ca, f->queries + q * f->d, K, NULL, a1[q].ids, &a1[q].n, &err);
    if (rc == VB_OK) rc = vb_conn_set_search(cb, &phi, &err);
    for (size_t q = 0; rc == VB_OK && q < f->nq; q++)
        rc = vb_conn_search(cb, f->queries + q * f->d, K, NULL, b[q].ids, &b[q].n, &err);
    for (size_t q = 0; rc == VB_OK && q < f->nq; q++)
        rc = vb_conn_search(ca, f->queries + q * f->d, K, NULL, a2[q].ids, &a2[q].n, &err);
    double r1 = overlap(a1, want, f->nq), rb = overlap(b, want, f->nq), r2 = overlap(a2, want, f->nq);
    printf("# %s: recall@%d %.3f at ef_search %d, %.3f at %d on another connection, then %.3f on the first\n", name, K,
           r1, lo, rb, hi, r2);
    ok(rc == VB_OK && rb - r1 >= 0.05, "%s: ef_search changes the answers (%.3f at %d, %.3f at %d) (%s)", name, r1, lo,
       rb, hi, rc ? err.message : "ok");
    ok(rc == VB_OK && fabs(r2 - r1) < (rb - r1) / 2,
       "%s: ef_search is a per-connection setting: the first connection stays at %.3f after the other set %d", name,
       r2, hi);
    vb_conn_close(&ca);
    vb_conn_close(&cb);
    free(a1), free(b), free(a2);
}

/* attach finds the finished table with its spec, and nothing with another dimension. */
static void attach_checks(const server_arg *s, const vb_table_spec *spec) {
    vb_error err = {0};
    vb_engine *e = open_with(s, NULL, &err);
    int found = -1, rc = e ? vb_engine_attach(e, spec, &found, &err) : VB_ERROR;
    ok(rc == VB_OK && found == 1, "%s: attach finds the built table (%s)", s->name, rc ? err.message : "ok");
    vb_table_spec other = *spec;
    other.dim++;
    rc = e ? vb_engine_attach(e, &other, &found, &err) : VB_ERROR;
    ok(rc == VB_OK && found == 0, "%s: attach with another dimension finds nothing", s->name);
    other = *spec;
    other.capacity--;
    rc = e ? vb_engine_attach(e, &other, &found, &err) : VB_ERROR;
    ok(rc == VB_OK && found == 0, "%s: attach with another row count finds nothing", s->name);
    /* A churn in progress: the table may be short of the rows it deleted (attach_missing), never more. */
    other = *spec;
    other.capacity += 2;
    other.attach_missing = 2;
    rc = e ? vb_engine_attach(e, &other, &found, &err) : VB_ERROR;
    ok(rc == VB_OK && found == 1, "%s: attach finds a table short of at most attach_missing rows", s->name);
    other.attach_missing = 1;
    rc = e ? vb_engine_attach(e, &other, &found, &err) : VB_ERROR;
    ok(rc == VB_OK && found == 0, "%s: ... and not one short of more", s->name);
    other = *spec;
    other.capacity--;
    other.attach_missing = 5;
    rc = e ? vb_engine_attach(e, &other, &found, &err) : VB_ERROR;
    ok(rc == VB_OK && found == 0, "%s: nor one with more rows than the corpus", s->name);
    vb_engine_close(&e);
}

/* EXPLAIN through the op: the plan of the kNN query scans the vector index, filtered or not. */
static void explain_checks(vb_engine *e, const char *name, const vb_table_spec *spec) {
    vb_error err = {0};
    char plan[2048];
    int uses = -1;
    vb_filter flt = {.kind = VB_FILTER_TAG_BELOW, .tag_below = 1000};
    for (int filtered = 0; filtered < 2; filtered++) {
        int rc = vb_engine_explain(e, spec, 40, K, filtered ? &flt : NULL, &uses, plan, sizeof plan, &err);
        ok(rc == VB_OK && uses == 1, "%s: EXPLAIN: the %skNN plan scans the vector index (%s)", name,
           filtered ? "filtered " : "", rc ? err.message : "ok");
        for (char *p = strtok(plan, "\n"); p; p = strtok(NULL, "\n")) printf("#   %s\n", p);
    }
}

static void sizes_version(vb_engine *e, const char *name, const char *want_version, int64_t rows) {
    vb_error err = {0};
    vb_sizes sz = {0};
    int rc = vb_engine_sizes(e, &sz, &err);
    ok(rc == VB_OK && sz.index_bytes > 0 && sz.table_bytes > 0 && sz.rows == rows,
       "%s: sizes: index %lld bytes, table %lld bytes, %lld rows (want %lld)", name, (long long)sz.index_bytes,
       (long long)sz.table_bytes, (long long)sz.rows, (long long)rows);
    char version[256] = "";
    rc = vb_engine_version(e, version, sizeof version, &err);
    ok(rc == VB_OK && strstr(version, want_version), "%s: version \"%s\" has \"%s\"", name,
       rc ? err.message : version, want_version);
}

/* Recall@K of every query at ef_search 400 (the engine's `knob`) against the exact answers: at that width an
 * HNSW index finds nearly all of them. */
static void recall_at_400(vb_engine *e, const char *name, const char *knob, const vb_table_spec *spec,
                          const fixture *f) {
    vb_error err = {0};
    answers *want = calloc(f->nq, sizeof *want), *got = calloc(f->nq, sizeof *got);
    int rc = exact_answers(spec, f, NULL, want);
    if (rc == VB_OK) rc = query_all(e, f, 400, NULL, got, &err);
    double r = overlap(got, want, f->nq);
    printf("# %s: recall@%d at %s 400: %.4f\n", name, K, knob, r);
    ok(rc == VB_OK && r >= 0.95, "%s: recall@10 >= 0.95 at ef_search 400 (%.4f)", name, r);
    free(want);
    free(got);
}

/* ef_search per connection on a set where it matters: a plain gaussian set at M=4 (a clustered one is answered
 * well at any ef), the connection at ef `lo` against one at `hi`. */
static void hard_set_ef(vb_engine *e, const char *name, int lo, int hi) {
    fixture hard;
    fixture_init(&hard, 3000, 96, 100, 0);
    vb_table_spec hspec = {.dim = hard.d, .metric = VB_METRIC_EUCLIDEAN, .capacity = hard.n, .m = 4,
                           .ef_construction = 32};
    answers *hw = calloc(hard.nq, sizeof *hw);
    vb_error err = {0};
    int rc = fill(e, &hspec, &hard, &err);
    if (rc == VB_OK) rc = exact_answers(&hspec, &hard, NULL, hw);
    if (ok(rc == VB_OK, "%s: a plain gaussian set of %zu x %zu, M=4 (%s)", name, hard.n, hard.d,
           rc ? err.message : "ok"))
        per_connection_ef(e, name, &hard, hw, lo, hi);
    free(hw);
    fixture_free(&hard);
}

/* ---- pgvector ---------------------------------------------------------------------------------------- */

/* At 1 %: iterative scan off leaves most answers short (pgvector's known behaviour), relaxed_order and
 * strict_order fill them. Recall at ef_search 40 over ten runs of the old driver: relaxed 0.94-0.98, strict
 * 0.82-0.95 (off: 0.05). */
static void pg_iterative(const server_arg *s, const fixture *f, const vb_table_spec *spec) {
    vb_filter flt = {.kind = VB_FILTER_TAG_BELOW, .tag_below = 100};
    size_t passing = 0;
    for (size_t i = 0; i < f->n; i++) passing += f->tags[i] < 100;
    answers *want = calloc(f->nq, sizeof *want), *got = calloc(f->nq, sizeof *got);
    if (exact_answers(spec, f, &flt, want) != VB_OK) ok(0, "pgvector: exact reference answers");
    const char *off[] = {"iterative_scan", "off", NULL}, *relaxed[] = {"iterative_scan", "relaxed_order", NULL},
               *strict[] = {"iterative_scan", "strict_order", "max_scan_tuples", "20000", NULL};
    const char *const *modes[] = {off, relaxed, strict};
    for (int m = 0; m < 3; m++) {
        vb_error err = {0};
        vb_engine *e = open_with(s, modes[m], &err);
        int found = 0, rc = e ? vb_engine_attach(e, spec, &found, &err) : VB_ERROR;
        if (rc == VB_OK) rc = query_all(e, f, 40, &flt, got, &err);
        ok(rc == VB_OK, "pgvector: filter tag < 100 (%zu of %zu rows), iterative_scan %s: runs (%s)", passing, f->n,
           modes[m][1], rc ? err.message : "ok");
        vb_engine_close(&e);
        if (rc != VB_OK) continue;
        int bad = 0, sh = short_answers(got, f->nq);
        for (size_t q = 0; q < f->nq; q++)
            for (int i = 0; i < got[q].n; i++) bad += vb_dataset_tag(got[q].ids[i]) >= 100;
        printf("# iterative_scan %s at 1 %%: short answers %d of %zu, recall %.3f\n", modes[m][1], sh, f->nq,
               overlap(got, want, f->nq));
        ok(bad == 0, "pgvector: iterative_scan %s: every returned row passes the filter", modes[m][1]);
        if (m == 0)
            ok(sh > (int)f->nq / 2, "pgvector: iterative_scan off: most answers are short (%d of %zu)", sh, f->nq);
        else
            ok(sh <= (int)f->nq / 20 && overlap(got, want, f->nq) >= 0.6,
               "pgvector: iterative_scan %s: full answers but for at most 5 %% (%d short), recall %.3f", modes[m][1],
               sh, overlap(got, want, f->nq));
    }
    free(want);
    free(got);
}

/* The server ends every vbench backend (pg_stat_activity): the next search is VB_RETRY with the server's words;
 * the caller's new connection answers, and the engine's own connection recovers within its next call. */
static void pg_terminated(const server_arg *s, vb_engine *e, const fixture *f) {
    vb_error err = {0};
    vb_conn *c = NULL;
    vb_search_params p = {40};
    int64_t ids[K];
    int n = 0;
    if (vb_engine_connect(e, &c, &err) || vb_conn_set_search(c, &p, &err)) {
        ok(0, "pgvector: a connection for the terminate check: %s", err.message);
        return;
    }
    char conninfo[1024];
    snprintf(conninfo, sizeof conninfo, "host='%s' user=postgres dbname=postgres password='%s'",
             param(s, "host", ""), param(s, "password", ""));
    PGconn *killer = PQconnectdb(conninfo);
    PGresult *r = PQexec(killer, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                 "WHERE application_name = 'vbench'");
    printf("# terminated %s vbench backends\n", PQresultStatus(r) == PGRES_TUPLES_OK ? PQgetvalue(r, 0, 0) : "?");
    PQclear(r);
    PQfinish(killer);
    int rc = vb_conn_search(c, f->queries, K, NULL, ids, &n, &err);
    ok(rc == VB_RETRY, "pgvector: a terminated backend: the search returns VB_RETRY: %s", err.message);
    vb_conn_close(&c);
    rc = vb_engine_connect(e, &c, &err);
    if (rc == VB_OK) rc = vb_conn_search(c, f->queries, K, NULL, ids, &n, &err);
    ok(rc == VB_OK && n == K, "pgvector: a new connection answers (%s)", rc ? err.message : "ok");
    vb_conn_close(&c);
    vb_sizes sz;
    rc = vb_engine_sizes(e, &sz, &err);
    ok(rc == VB_OK, "pgvector: the engine's own connection recovers within the call (%s)", rc ? err.message : "ok");
}

static void pg_errors(const server_arg *s) {
    vb_error err = {0};
    vb_table_spec spec = {.dim = 8, .metric = VB_METRIC_EUCLIDEAN, .capacity = 10, .m = 16, .ef_construction = 64};
    const char *badpw[] = {"password", "not-the-password", NULL};
    vb_engine *e = open_with(s, badpw, &err);
    int rc = e ? vb_engine_create(e, &spec, &err) : VB_OK;
    ok(rc == VB_ERROR && strstr(err.message, "password authentication failed"), "pgvector: wrong password: %s",
       err.message);
    vb_engine_close(&e);
    const char *noext[] = {"user", "vb_noext", "password", "noext", "dbname", "vb_noext", NULL};
    e = open_with(s, noext, &err);
    rc = e ? vb_engine_create(e, &spec, &err) : VB_OK;
    ok(rc == VB_ERROR && strstr(err.message, "extension") && strstr(err.message, "vector") &&
           strstr(err.message, "permission denied"),
       "pgvector: missing extension: %s", err.message);
    vb_engine_close(&e);
    e = open_with(s, NULL, &err);
    vb_table_spec bad = spec;
    bad.metric = (vb_metric)7;
    rc = e ? vb_engine_create(e, &bad, &err) : VB_OK;
    ok(rc == VB_ERROR && strstr(err.message, "not supported"), "pgvector: unsupported metric: %s", err.message);
    vb_engine_close(&e);
    const char *badit[] = {"iterative_scan", "sometimes", NULL};
    e = open_with(s, badit, &err);
    ok(e == NULL && strstr(err.message, "iterative_scan"), "pgvector: bad iterative_scan: %s", err.message);
    vb_engine_close(&e);
    const char *badhost[] = {"host", "/nonexistent-vbench-socket-dir", NULL};
    e = open_with(s, badhost, &err);
    rc = e ? vb_engine_create(e, &spec, &err) : VB_OK;
    ok(rc == VB_RETRY && strstr(err.message, "connecting"), "pgvector: no server there: VB_RETRY, %s", err.message);
    vb_engine_close(&e);
}

static void pgvector_section(const server_arg *s) {
    /* halfvec: the shared script on the other column type (recall at ef_search 200, upsert and all). */
    vb_kv kv[MAX_KV + 8];
    const char *half[] = {"variant", "halfvec", NULL};
    size_t n = with(s, half, kv);
    vb_conformance_report rep = {tap_check, tap_note, NULL};
    vb_conformance_opts o = {.engine = s->name, .params = kv, .n_params = n, .metric = VB_METRIC_ANGULAR};
    printf("# pgvector, variant halfvec:\n");
    vb_conformance_run(&o, &rep);

    fixture f;
    fixture_init(&f, 10000, 32, 100, 1);
    vb_table_spec spec = {.dim = f.d, .metric = VB_METRIC_EUCLIDEAN, .capacity = f.n, .m = 16, .ef_construction = 64};
    vb_error err = {0};
    const char *build[] = {"maintenance_work_mem", "256MB", "max_parallel_maintenance_workers", "2", NULL};
    vb_engine *e = open_with(s, build, &err);
    int rc = e ? fill(e, &spec, &f, &err) : VB_ERROR;
    ok(rc == VB_OK, "pgvector: %zu x %zu loaded and built with 2 parallel workers (%s)", f.n, f.d,
       rc ? err.message : "ok");
    if (rc == VB_OK) {
        answers *want = calloc(f.nq, sizeof *want);
        if (exact_answers(&spec, &f, NULL, want) == VB_OK) per_connection_ef(e, s->name, &f, want, 1, 200);
        free(want);
        pg_iterative(s, &f, &spec);
        attach_checks(s, &spec);
        explain_checks(e, s->name, &spec);
        rc = vb_engine_maintain(e, &err);
        ok(rc == VB_OK, "pgvector: maintain: VACUUM (ANALYZE) (%s)", rc ? err.message : "ok");
        sizes_version(e, s->name, "pgvector 0.8", (int64_t)f.n);
        pg_terminated(s, e, &f);
    }
    vb_engine_close(&e);
    fixture_free(&f);
    pg_errors(s);
}

/* ---- MariaDB ----------------------------------------------------------------------------------------- */

/* The server kills the adapter's connections: the next search says VB_RETRY, a new connection works. */
static void mariadb_killed(const server_arg *s, vb_engine *e, const fixture *f) {
    vb_error err = {0};
    vb_conn *c = NULL;
    if (vb_engine_connect(e, &c, &err)) {
        ok(0, "mariadb: a connection for the kill check: %s", err.message);
        return;
    }
    MYSQL *my = mysql_init(NULL);
    int killed = 0;
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = '%s' AND ID <> CONNECTION_ID()",
             param(s, "database", "vbench"));
    if (mysql_real_connect(my, NULL, "root", NULL, NULL, 0, param(s, "socket", NULL), 0) && !mysql_query(my, sql)) {
        MYSQL_RES *r = mysql_store_result(my);
        for (MYSQL_ROW row; r && (row = mysql_fetch_row(r));) {
            snprintf(sql, sizeof sql, "KILL %s", row[0]);
            killed += mysql_query(my, sql) == 0;
        }
        if (r) mysql_free_result(r);
    }
    mysql_close(my);
    ok(killed >= 1, "mariadb: the server killed %d adapter connections", killed);
    int64_t got[K];
    int n = 0;
    int rc = vb_conn_search(c, f->queries, K, NULL, got, &n, &err);
    ok(rc == VB_RETRY, "mariadb: a search on a killed connection returns VB_RETRY: %s", err.message);
    vb_conn_close(&c);
    rc = vb_engine_connect(e, &c, &err);
    if (rc == VB_OK) rc = vb_conn_search(c, f->queries, K, NULL, got, &n, &err);
    ok(rc == VB_OK && n == K, "mariadb: a new connection answers (%s)", rc ? err.message : "ok");
    vb_conn_close(&c);
    vb_sizes sz;
    rc = vb_engine_sizes(e, &sz, &err);
    ok(rc == VB_OK, "mariadb: the engine's own connection recovers within the call (%s)", rc ? err.message : "ok");
}

static void mariadb_errors(const server_arg *s) {
    vb_error err = {0};
    const char *badpw[] = {"password", "not-the-password", NULL};
    vb_engine *e = open_with(s, badpw, &err);
    ok(e == NULL && strstr(err.message, "Access denied for user 'root'@'localhost'"),
       "mariadb: a wrong password fails at open with the server's text: %s", err.message);
    vb_engine_close(&e);
    e = open_with(s, NULL, &err);
    vb_table_spec spec = {.dim = 8, .metric = VB_METRIC_DOT, .capacity = 10, .m = 16, .ef_construction = 64};
    int rc = e ? vb_engine_create(e, &spec, &err) : VB_OK;
    ok(rc == VB_ERROR && strstr(err.message, "metric dot is not supported"),
       "mariadb: an unsupported metric (dot) is refused at create: %s", err.message);
    vb_table_spec big = {.dim = 70000, .metric = VB_METRIC_EUCLIDEAN, .capacity = 10, .m = 16, .ef_construction = 64};
    rc = e ? vb_engine_create(e, &big, &err) : VB_OK;
    ok(rc == VB_ERROR && strstr(err.message, "mariadb: CREATE TABLE"),
       "mariadb: a server-side refusal (VECTOR(70000)) carries the statement and the server's text: %.200s",
       err.message);
    vb_engine_close(&e);
}

static void mariadb_section(const server_arg *s) {
    fixture f;
    fixture_init(&f, 4000, 48, 100, 1);
    vb_table_spec spec = {.dim = f.d, .metric = VB_METRIC_EUCLIDEAN, .capacity = f.n, .m = 8, .ef_construction = 128};
    vb_error err = {0};
    vb_engine *e = open_with(s, NULL, &err);
    int rc = e ? fill(e, &spec, &f, &err) : VB_ERROR;
    ok(rc == VB_OK, "mariadb: %zu x %zu loaded, M=8 (%s)", f.n, f.d, rc ? err.message : "ok");
    if (rc == VB_OK) {
        recall_at_400(e, "mariadb", "mhnsw_ef_search", &spec, &f);
        attach_checks(s, &spec);
        vb_table_spec other_m = spec;
        other_m.m = 16;
        vb_engine *e2 = open_with(s, NULL, &err);
        int found = -1;
        rc = e2 ? vb_engine_attach(e2, &other_m, &found, &err) : VB_ERROR;
        ok(rc == VB_OK && found == 0, "mariadb: attach with another M finds nothing");
        vb_engine_close(&e2);
        explain_checks(e, s->name, &spec);
        sizes_version(e, s->name, "11.8", (int64_t)f.n);
        mariadb_killed(s, e, &f);
        hard_set_ef(e, s->name, 1, 400);
    }
    vb_engine_close(&e);
    fixture_free(&f);
    mariadb_errors(s);
}

/* ---- valkey ------------------------------------------------------------------------------------------ */

/* One command on a connection of the test's own (the server's socket); the reply's text or integer in buf. */
static int vk_raw(const server_arg *s, const char *cmd, char *buf, size_t len) {
    redisContext *rc = redisConnectUnix(param(s, "socket", ""));
    if (!rc || rc->err) {
        snprintf(buf, len, "%s", rc ? rc->errstr : "no memory");
        if (rc) redisFree(rc);
        return -1;
    }
    redisReply *r = redisCommand(rc, cmd);
    int rcode = r && r->type != REDIS_REPLY_ERROR ? 0 : -1;
    if (r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_ERROR))
        snprintf(buf, len, "%s", r->str);
    else if (r && r->type == REDIS_REPLY_INTEGER)
        snprintf(buf, len, "%lld", r->integer);
    else
        snprintf(buf, len, "%s", r ? "" : rc->errstr);
    if (r) freeReplyObject(r);
    redisFree(rc);
    return rcode;
}

/* With maxmemory just above what the server holds and an evicting policy, a load loses rows: the build must
 * fail naming evicted_keys instead of recording an index of the rows that survived. The server's settings and
 * its counters are restored afterwards. */
static void valkey_evictions(const server_arg *s) {
    char buf[4096];
    vk_raw(s, "FLUSHALL", buf, sizeof buf);
    vk_raw(s, "INFO memory", buf, sizeof buf);
    char *p = strstr(buf, "used_memory:");
    long long used = p ? atoll(p + 12) : 0;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "CONFIG SET maxmemory %lld", used + 4 * 1024 * 1024);
    int set = vk_raw(s, "CONFIG SET maxmemory-policy allkeys-random", buf, sizeof buf) == 0 && vk_raw(s, cmd, buf, sizeof buf) == 0;
    ok(set, "valkey: an evicting policy and maxmemory %lld + 4 MB for the eviction check (%s)", used, buf);
    fixture f;
    fixture_init(&f, 20000, 64, 10, 1);
    vb_table_spec spec = {.dim = f.d, .metric = VB_METRIC_EUCLIDEAN, .capacity = f.n, .m = 8, .ef_construction = 64};
    vb_error err = {0};
    vb_engine *e = open_with(s, NULL, &err);
    int rc = e ? fill(e, &spec, &f, &err) : VB_OK;
    ok(rc == VB_ERROR && strstr(err.message, "evicted"), "valkey: rows evicted during the load fail the build: %s",
       err.message);
    vb_engine_close(&e);
    fixture_free(&f);
    vk_raw(s, "CONFIG SET maxmemory-policy noeviction", buf, sizeof buf);
    vk_raw(s, "CONFIG SET maxmemory 900mb", buf, sizeof buf);
    vk_raw(s, "CONFIG RESETSTAT", buf, sizeof buf);
    vk_raw(s, "FLUSHALL", buf, sizeof buf);
}

static void valkey_section(const server_arg *s) {
    fixture f;
    fixture_init(&f, 4000, 48, 100, 1);
    vb_table_spec spec = {.dim = f.d, .metric = VB_METRIC_EUCLIDEAN, .capacity = f.n, .m = 8, .ef_construction = 128};
    vb_error err = {0};
    vb_engine *e = open_with(s, NULL, &err);
    int rc = e ? fill(e, &spec, &f, &err) : VB_ERROR;
    ok(rc == VB_OK, "valkey: %zu x %zu loaded and backfilled, M=8 (%s)", f.n, f.d, rc ? err.message : "ok");
    if (rc == VB_OK) {
        recall_at_400(e, "valkey", "EF_RUNTIME", &spec, &f);
        attach_checks(s, &spec);
        /* 1.0.2 registers itself as 1.0.0 (MODULE_VERSION 10000 in its module_loader.cc); the layer says 1.0.2 */
        sizes_version(e, s->name, "valkey-search 1.0.0", (int64_t)f.n);
        hard_set_ef(e, s->name, 10, 400);
    }
    vb_engine_close(&e);
    fixture_free(&f);
    valkey_evictions(s);
}

/* An engine that compares by other metrics only (Redis vector sets: cosine): the script is skipped for this one,
 * visibly, and create must refuse such a table with a message naming the metric, before it writes anything. */
static void other_metric(const char *name, const server_arg *s, vb_metric m) {
    ok(1, "%s (%s): the conformance script # SKIP the engine does not compare by this metric", name,
       vb_metric_name(m));
    vb_error err = {0};
    vb_engine *e = NULL;
    vb_engine_config cfg = {s ? s->kv : NULL, s ? s->n_kv : 0, NULL, 0};
    int rc = vb_engine_open(name, &cfg, &e, &err);
    vb_table_spec spec = {.dim = 8, .metric = m, .capacity = 10, .m = 16, .ef_construction = 64};
    if (rc == VB_OK) rc = vb_engine_create(e, &spec, &err);
    ok(rc == VB_ERROR && strstr(err.message, vb_metric_name(m)), "%s (%s): create refuses the table, naming the metric (%s)",
       name, vb_metric_name(m), err.message);
    vb_engine_close(&e);
}

/* ---- main -------------------------------------------------------------------------------------------- */

static int usage(const char *msg) {
    fprintf(stderr, "vb_conformance: %s (see the comment at the top of tests/tools/vb_conformance.c)\n", msg);
    return 2;
}

int main(int argc, char **argv) {
    vb_metric metrics[4];
    int n_metrics = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        server_arg *cur = n_servers ? &servers[n_servers - 1] : NULL;
        if (strcmp(argv[i], "--metric") == 0 && i + 1 < argc && n_metrics < 4) {
            if (vb_metric_parse(argv[++i], &metrics[n_metrics]) != VB_OK) return usage("unknown metric");
            n_metrics++;
        } else if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc && n_servers < MAX_ENGINES) {
            servers[n_servers++] = (server_arg){.name = argv[++i]};
        } else if (strcmp(argv[i], "--restart") == 0 && i + 1 < argc && cur) {
            cur->restart = argv[++i];
        } else if (strcmp(argv[i], "--known-filtered-defects") == 0 && i + 1 < argc && cur) {
            cur->known_filtered_defects = argv[++i];
        } else if (strcmp(argv[i], "--known-unreachable") == 0 && i + 1 < argc && cur) {
            cur->known_unreachable = argv[++i];
        } else if (strchr(argv[i], '=') && cur && cur->n_kv < MAX_KV) {
            char *eq = strchr(argv[i], '=');
            *eq = '\0';
            cur->kv[cur->n_kv++] = (vb_kv){argv[i], eq + 1};
        } else {
            return usage(argv[i]);
        }
    }
    if (!n_metrics) metrics[n_metrics++] = VB_METRIC_EUCLIDEAN, metrics[n_metrics++] = VB_METRIC_ANGULAR;

    const char *names[64];
    size_t n = vb_engine_list(names, 64);
    vb_conformance_report rep = {tap_check, tap_note, NULL};
    for (size_t i = 0; i < n && i < 64; i++) {
        const vb_engine_ops *ops = vb_engine_find(names[i]);
        server_arg *s = NULL;
        for (int j = 0; j < n_servers; j++)
            if (strcmp(servers[j].name, names[i]) == 0) s = &servers[j];
        if (ops->flags & VB_ENGINE_STUB) {
            ok(1, "%s: the contract # SKIP a stub for measuring the client, not an index", names[i]);
            continue;
        }
        if (!(ops->flags & VB_ENGINE_EMBEDDED) && !s) {
            ok(1, "%s: the contract # SKIP no server for it here (%s)", names[i], ops->description);
            continue;
        }
        for (int m = 0; m < n_metrics; m++) {
            if (!vb_engine_supports_metric(ops, metrics[m])) {
                other_metric(names[i], s, metrics[m]);
                continue;
            }
            vb_conformance_opts o = {.engine = names[i], .metric = metrics[m]};
            if (s) {
                o.params = s->kv, o.n_params = s->n_kv;
                o.known_filtered_defects = s->known_filtered_defects, o.known_unreachable = s->known_unreachable;
                if (s->restart) o.restart = run_restart, o.restart_arg = s;
            }
            printf("# %s, %s:\n", names[i], vb_metric_name(metrics[m]));
            int failed = vb_conformance_run(&o, &rep);
            ok(failed == 0, "%s (%s): the conformance script passes (%d checks failed)", names[i],
               vb_metric_name(metrics[m]), failed);
        }
        if (s && strcmp(s->name, "pgvector") == 0) pgvector_section(s);
        if (s && strcmp(s->name, "mariadb") == 0) mariadb_section(s);
        if (s && strcmp(s->name, "valkey") == 0) valkey_section(s);
    }
    for (int j = 0; j < n_servers; j++)
        if (!vb_engine_find(servers[j].name)) ok(0, "--engine %s: no such engine in the registry", servers[j].name);
    return done_testing();
}
