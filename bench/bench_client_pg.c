/* Client benchmark against a real PostgreSQL + pgvector (bench/bench_client_pg.sh drives it): the vbench side.
 *
 *   bench_client_pg load --host DIR --password PW [--rows 20000] [--dim 96] [--queries 100] [--seed 1]
 *                        --queries-out FILE
 *       creates the table vbench_items through the pgvector engine (angular, vector(dim)), loads `rows` seeded
 *       uniform random rows by binary COPY, builds the HNSW index (m = 16, ef_construction = 64) and writes the
 *       `queries` query vectors (another seeded stream) to FILE, one pgvector text literal "[x,y,...]" per line
 *       (%.9g: every float32 reads back bit-identical), for the other clients to use.
 *   bench_client_pg run --host DIR --password PW --queries-in FILE --clients N [--window S] [--warmup S]
 *                       [--ef-search 40]
 *       one closed-loop window of vb_workload_run (the loop the concurrency phase runs) over the pgvector engine:
 *       N threads, one connection each, hnsw.ef_search set on each, k = 10, each client walking the query set
 *       from its own offset. The engine's statement is SELECT id FROM vbench_items ORDER BY embedding <=> $1
 *       LIMIT 10, prepared, binary parameter and result.
 *       Prints "RESULT vbench <clients> <qps> <mean_ms> <in_flight> <errors> <queries> <cpu_us_per_query>" (the
 *       worker threads' CPU time over the whole run, warm-up included, / every query they ran).
 *   bench_client_pg pair --host DIR --password PW --queries-in FILE [--rows N] [--pairs 3000] [--ef-search 40]
 *                        [--io-timeout S]
 *       the driver call alone, load-proof: on one thread, query by query, vbench's call (vb_conn_search: the engine's
 *       prepared statement, the path a campaign runs; with --io-timeout S the bounded wait a campaign's
 *       limits.phase_timeout_s turns on) and pgbench's (PQexecPrepared of the same statement with the vector as a
 *       literal, no parameter, text result: what pgbench -M prepared sends), each on its own connection, the same
 *       query vector, the order of the two swapped every pair so neither always goes first. Whatever load the host
 *       has falls on both alike within microseconds, which separate windows cannot give on a shared host. The first
 *       200 pairs warm up. Prints "RESULT pair <pairs> <vbench_us> <pgbench_us> <ratio of the means>". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>
#include <time.h>

#include "agent/workload.h"
#include "util/clock.h"

#define K 10

static void usage(void) {
    fprintf(stderr, "usage: bench_client_pg load --host DIR --password PW [--rows N] [--dim D] [--queries Q] "
                    "[--seed S] --queries-out FILE\n"
                    "       bench_client_pg run --host DIR --password PW --queries-in FILE --clients N "
                    "[--rows N] [--window S] [--warmup S] [--ef-search EF]\n"
                    "       bench_client_pg pair --host DIR --password PW --queries-in FILE [--rows N] [--pairs P] "
                    "[--ef-search EF] [--io-timeout S]\n");
    exit(2);
}

/* splitmix64: a seeded stream of uniform floats in [-1, 1). */
static float next_float(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) / (double)(1ull << 23) - 1.0);
}

static int open_engine_bounded(const char *host, const char *password, long io_timeout_s, vb_engine **e) {
    vb_kv params[] = {{"host", host}, {"password", password}, {"user", "postgres"}, {"dbname", "postgres"},
                      {"table", "vbench_items"}, {"m", "16"}, {"ef_construction", "64"},
                      {"maintenance_work_mem", "256MB"}};
    vb_engine_config cfg = {params, sizeof params / sizeof *params, NULL, io_timeout_s};
    vb_error err = {0};
    if (vb_engine_open("pgvector", &cfg, e, &err) != VB_OK) {
        fprintf(stderr, "bench_client_pg: %s\n", err.message);
        return -1;
    }
    return 0;
}

static int open_engine(const char *host, const char *password, vb_engine **e) {
    return open_engine_bounded(host, password, 0, e);
}

static int do_load(const char *host, const char *password, size_t rows, size_t dim, size_t nq, uint64_t seed,
                   const char *out) {
    vb_engine *e = NULL;
    if (open_engine(host, password, &e)) return 1;
    vb_table_spec spec = {.dim = dim, .metric = VB_METRIC_ANGULAR, .capacity = rows, .m = 16, .ef_construction = 64};
    vb_error err = {0};
    vb_conn *c = NULL;
    int rc = vb_engine_create(e, &spec, &err);
    if (rc == VB_OK) rc = vb_engine_connect(e, &c, &err);
    size_t batch = 5000;
    float *vecs = malloc(batch * dim * sizeof *vecs);
    int64_t *ids = malloc(batch * sizeof *ids);
    int32_t *tags = malloc(batch * sizeof *tags);
    if (!vecs || !ids || !tags) {
        fprintf(stderr, "bench_client_pg: out of memory\n");
        return 1;
    }
    uint64_t s = seed;
    for (size_t done = 0; rc == VB_OK && done < rows; done += batch) {
        size_t n = rows - done < batch ? rows - done : batch;
        for (size_t i = 0; i < n; i++) {
            ids[i] = (int64_t)(done + i);
            tags[i] = (int32_t)((done + i) % 100);
            for (size_t j = 0; j < dim; j++) vecs[i * dim + j] = next_float(&s);
        }
        rc = vb_conn_load(c, ids, vecs, tags, n, &err);
    }
    vb_conn_close(&c);
    if (rc == VB_OK) rc = vb_engine_build(e, &err);
    char version[256] = "";
    if (rc == VB_OK) rc = vb_engine_version(e, version, sizeof version, &err);
    free(vecs);
    free(ids);
    free(tags);
    vb_engine_close(&e);
    if (rc != VB_OK) {
        fprintf(stderr, "bench_client_pg: load: %s\n", err.message);
        return 1;
    }
    FILE *f = fopen(out, "w");
    if (!f) {
        perror(out);
        return 1;
    }
    uint64_t qs = seed ^ 0x5eedf00dull;
    for (size_t q = 0; q < nq; q++) {
        fputc('[', f);
        for (size_t j = 0; j < dim; j++) fprintf(f, "%s%.9g", j ? "," : "", next_float(&qs));
        fputs("]\n", f);
    }
    if (fclose(f) != 0) {
        perror(out);
        return 1;
    }
    printf("loaded %zu x %zu (angular, seed %llu), HNSW m=16 ef_construction=64; %s; %zu queries in %s\n", rows,
           dim, (unsigned long long)seed, version, nq, out);
    return 0;
}

/* Reads the query file written by load: one "[x,y,...]" per line, all of the same dimension. */
static float *read_queries(const char *path, size_t *nq, size_t *dim) {
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return NULL;
    }
    size_t cap = 0, n = 0, d = 0;
    float *q = NULL;
    char *line = NULL;
    size_t len = 0;
    while (getline(&line, &len, f) > 0) {
        if (line[0] != '[') continue;
        size_t row_d = 0;
        for (char *p = line + 1; *p && *p != ']';) {
            char *end;
            float v = strtof(p, &end);
            if (end == p) break;
            if (n * (d ? d : 1) + row_d + 1 > cap) {
                cap = cap ? cap * 2 : 4096;
                float *nq_ = realloc(q, cap * sizeof *q);
                if (!nq_) {
                    free(q);
                    free(line);
                    fclose(f);
                    return NULL;
                }
                q = nq_;
            }
            q[(d ? n * d : 0) + row_d++] = v;
            p = *end == ',' ? end + 1 : end;
        }
        if (!d) d = row_d;
        if (row_d != d || !d) {
            fprintf(stderr, "bench_client_pg: %s: line %zu has %zu values, expected %zu\n", path, n + 1, row_d, d);
            free(q);
            free(line);
            fclose(f);
            return NULL;
        }
        n++;
    }
    free(line);
    fclose(f);
    if (!n) fprintf(stderr, "bench_client_pg: %s: no queries\n", path);
    *nq = n;
    *dim = d;
    return n ? q : (free(q), NULL);
}

static int do_run(const char *host, const char *password, const char *qfile, size_t rows, int clients,
                  double window_s, double warmup_s, int ef) {
    size_t nq = 0, dim = 0;
    float *queries = read_queries(qfile, &nq, &dim);
    if (!queries) return 1;
    vb_engine *e = NULL;
    if (open_engine(host, password, &e)) return 1;
    vb_table_spec spec = {.dim = dim, .metric = VB_METRIC_ANGULAR, .capacity = rows, .m = 16, .ef_construction = 64};
    vb_error err = {0};
    int found = 0;
    int rc = vb_engine_attach(e, &spec, &found, &err);   /* the table and index made by load, `rows` rows */
    if (rc == VB_OK && !found)
        rc = vb_error_set(&err, "bench", 1, "no table vbench_items with %zu rows of vector(%zu) and its index", rows,
                          dim);
    if (rc != VB_OK) {
        fprintf(stderr, "bench_client_pg: attach: %s\n", err.message);
        vb_engine_close(&e);
        free(queries);
        return 1;
    }
    vb_workload_config cfg = {
        .engine = e, .clients = clients, .queries = queries, .n_queries = nq, .dim = dim, .k = K,
        .search = {.ef_search = ef}, .window_ns = (uint64_t)(window_s * 1e9), .warmup_ns = (uint64_t)(warmup_s * 1e9),
    };
    vb_workload_result r;
    rc = vb_workload_run(&cfg, &r, &err);
    if (rc != VB_OK) {
        fprintf(stderr, "bench_client_pg: %d clients: %s\n", clients, err.message);
    } else {
        double flight = r.elapsed_s > 0 ? r.in_call_s / r.elapsed_s : 0;
        uint64_t all = r.queries + r.warmup_queries;   /* client_cpu_s covers the warm-up too */
        printf("RESULT vbench %d %.1f %.4f %.3f %llu %llu %.2f\n", clients, r.qps,
               vb_histogram_mean(r.latency) / 1e6, flight, (unsigned long long)r.errors,
               (unsigned long long)r.queries, all ? r.client_cpu_s / (double)all * 1e6 : 0.0);
        if (r.errors) fprintf(stderr, "bench_client_pg: %llu failed queries, first: %s\n",
                              (unsigned long long)r.errors, r.first_error);
    }
    vb_workload_result_free(&r);
    vb_engine_close(&e);
    free(queries);
    return rc == VB_OK ? 0 : 1;
}

/* One statement on a raw libpq connection; exits on failure (a benchmark's setup). */
static void pq_must(PGconn *pg, const char *sql) {
    PGresult *r = PQexec(pg, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
        fprintf(stderr, "bench_client_pg: %.60s: %s", sql, PQerrorMessage(pg));
        exit(1);
    }
    PQclear(r);
}

static int do_pair(const char *host, const char *password, const char *qfile, size_t rows, long pairs, int ef,
                   long io_timeout_s) {
    size_t nq = 0, dim = 0;
    float *queries = read_queries(qfile, &nq, &dim);
    if (!queries) return 1;
    /* pgbench's side: the same statement with each vector as a literal, prepared once, no parameter */
    const char *keys[] = {"host", "user", "password", "dbname", "application_name", NULL};
    const char *vals[] = {host, "postgres", password, "postgres", "vbench-bench-pair", NULL};
    PGconn *pg = PQconnectdbParams(keys, vals, 0);
    if (PQstatus(pg) != CONNECTION_OK) {
        fprintf(stderr, "bench_client_pg: %s", PQerrorMessage(pg));
        return 1;
    }
    char set[64];
    snprintf(set, sizeof set, "SET hnsw.ef_search = %d", ef);
    pq_must(pg, "SELECT '[1]'::vector");
    pq_must(pg, set);
    FILE *f = fopen(qfile, "r");
    char *line = NULL, *sql = NULL;
    size_t len = 0, j = 0;
    while (f && j < nq && getline(&line, &len, f) > 0) {
        if (line[0] != '[') continue;
        line[strcspn(line, "\n")] = '\0';
        char name[24];
        snprintf(name, sizeof name, "p%zu", j++);
        if (asprintf(&sql, "SELECT id FROM vbench_items ORDER BY embedding <=> '%s' LIMIT %d", line, K) < 0) return 1;
        PGresult *r = PQprepare(pg, name, sql, 0, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            fprintf(stderr, "bench_client_pg: PREPARE: %s", PQerrorMessage(pg));
            return 1;
        }
        PQclear(r);
        free(sql);
    }
    free(line);
    if (f) fclose(f);
    /* vbench's side: the engine, a connection of its own, the search parameters set as a worker sets them */
    vb_engine *e = NULL;
    if (open_engine_bounded(host, password, io_timeout_s, &e)) return 1;
    vb_table_spec spec = {.dim = dim, .metric = VB_METRIC_ANGULAR, .capacity = rows, .m = 16, .ef_construction = 64};
    vb_error err = {0};
    vb_conn *c = NULL;
    vb_search_params sp = {.ef_search = ef};
    int found = 0, rc = vb_engine_attach(e, &spec, &found, &err);
    if (rc == VB_OK) rc = vb_engine_connect(e, &c, &err);
    if (rc == VB_OK) rc = vb_conn_set_search(c, &sp, &err);
    if (rc != VB_OK) {
        fprintf(stderr, "bench_client_pg: pair: %s\n", err.message);
        return 1;
    }
    const long warm = 200;
    uint64_t t_vb = 0, t_pg = 0;
    long errors = 0;
    for (long i = 0; i < warm + pairs; i++) {
        size_t q = (size_t)i % nq;
        char name[24];
        snprintf(name, sizeof name, "p%zu", q);
        uint64_t took[2] = {0, 0};
        for (int step = 0; step < 2; step++) {
            int vb_turn = (step + i) % 2 == 0;   /* vbench first on even pairs, pgbench first on odd ones */
            uint64_t s0 = vb_now_ns();
            if (vb_turn) {
                int64_t ids[K];
                int n = 0;
                errors += vb_conn_search(c, queries + q * dim, K, NULL, ids, &n, &err) != VB_OK || n != K;
            } else {
                PGresult *r = PQexecPrepared(pg, name, 0, NULL, NULL, NULL, 0);
                errors += PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != K;
                PQclear(r);
            }
            took[vb_turn] = vb_now_ns() - s0;
        }
        if (i >= warm) {
            t_vb += took[1];
            t_pg += took[0];
        }
    }
    printf("RESULT pair %ld %.1f %.1f %.4f %ld\n", pairs, (double)t_vb / (double)pairs / 1e3,
           (double)t_pg / (double)pairs / 1e3, t_pg ? (double)t_pg / (double)t_vb : 0.0, errors);
    vb_conn_close(&c);
    vb_engine_close(&e);
    PQfinish(pg);
    free(queries);
    return errors ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 2) usage();
    const char *mode = argv[1], *host = NULL, *password = "", *qout = NULL, *qin = NULL;
    long rows = 20000, dim = 96, nq = 100, seed = 1, clients = 1, ef = 40, pairs = 3000, io_timeout_s = 0;
    double window_s = 10, warmup_s = 1;
    for (int i = 2; i < argc; i++) {
        if (i + 1 >= argc) usage();
        const char *a = argv[i], *v = argv[++i];
        if (!strcmp(a, "--host")) host = v;
        else if (!strcmp(a, "--password")) password = v;
        else if (!strcmp(a, "--rows")) rows = atol(v);
        else if (!strcmp(a, "--dim")) dim = atol(v);
        else if (!strcmp(a, "--queries")) nq = atol(v);
        else if (!strcmp(a, "--seed")) seed = atol(v);
        else if (!strcmp(a, "--queries-out")) qout = v;
        else if (!strcmp(a, "--queries-in")) qin = v;
        else if (!strcmp(a, "--clients")) clients = atol(v);
        else if (!strcmp(a, "--window")) window_s = atof(v);
        else if (!strcmp(a, "--warmup")) warmup_s = atof(v);
        else if (!strcmp(a, "--ef-search")) ef = atol(v);
        else if (!strcmp(a, "--pairs")) pairs = atol(v);
        else if (!strcmp(a, "--io-timeout")) io_timeout_s = atol(v);
        else usage();
    }
    if (!host) usage();
    if (!strcmp(mode, "load")) {
        if (!qout || rows < 1 || dim < 1 || dim > 16000 || nq < 1) usage();
        return do_load(host, password, (size_t)rows, (size_t)dim, (size_t)nq, (uint64_t)seed, qout);
    }
    if (!strcmp(mode, "run")) {
        if (!qin || clients < 1 || clients > 1024 || window_s <= 0 || warmup_s < 0 || ef < 1) usage();
        return do_run(host, password, qin, (size_t)rows, (int)clients, window_s, warmup_s, (int)ef);
    }
    if (!strcmp(mode, "pair")) {
        if (!qin || pairs < 1 || ef < 1 || io_timeout_s < 0) usage();
        return do_pair(host, password, qin, (size_t)rows, pairs, (int)ef, io_timeout_s);
    }
    usage();
    return 2;
}
