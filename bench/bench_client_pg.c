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
 *       worker threads' CPU time over the whole run, warm-up included, / every query they ran). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/workload.h"

#define K 10

static void usage(void) {
    fprintf(stderr, "usage: bench_client_pg load --host DIR --password PW [--rows N] [--dim D] [--queries Q] "
                    "[--seed S] --queries-out FILE\n"
                    "       bench_client_pg run --host DIR --password PW --queries-in FILE --clients N "
                    "[--rows N] [--window S] [--warmup S] [--ef-search EF]\n");
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

static int open_engine(const char *host, const char *password, vb_engine **e) {
    vb_kv params[] = {{"host", host}, {"password", password}, {"user", "postgres"}, {"dbname", "postgres"},
                      {"table", "vbench_items"}, {"m", "16"}, {"ef_construction", "64"},
                      {"maintenance_work_mem", "256MB"}};
    vb_engine_config cfg = {params, sizeof params / sizeof *params, NULL, 0};
    vb_error err = {0};
    if (vb_engine_open("pgvector", &cfg, e, &err) != VB_OK) {
        fprintf(stderr, "bench_client_pg: %s\n", err.message);
        return -1;
    }
    return 0;
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
        rc = vb_conn_load(c, ids, vecs, tags, NULL, n, &err);
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

int main(int argc, char **argv) {
    if (argc < 2) usage();
    const char *mode = argv[1], *host = NULL, *password = "", *qout = NULL, *qin = NULL;
    long rows = 20000, dim = 96, nq = 100, seed = 1, clients = 1, ef = 40;
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
    usage();
    return 2;
}
