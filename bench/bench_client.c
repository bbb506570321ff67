/* Client benchmark: what the client role itself costs, measured with the built-in test engines, "null"
 * (answers at once: every microsecond is the client's) and "sleep" (a fixed, fully concurrent service time:
 * a correct client keeps `clients` queries in flight). One closed-loop window per (engine, clients) through
 * vb_workload_run, the same code the concurrency phase runs.
 *
 * usage: bench_client [--clients 1,2,4,8,16,32] [--window S] [--warmup S] [--service-us US] [--engines null,sleep]
 *                     [--pin CPULIST]
 * Columns: achieved QPS; client overhead = time outside the driver call per query, (clients x window - in-call
 * time) / queries, in us (it includes time a client waited for a CPU); client CPU per query in us (the workers'
 * CPU time / queries; for "null" that is the whole cost of a query); in flight = in-call time / window; fraction
 * in call per client (min and mean); client CPU seconds of the workers during the window.
 * Also prints one machine-readable line per row: "RESULT c <engine> <clients> <qps> <overhead_us> <cpu_us>
 * <in_flight> <fraction_min> <fraction_mean> <cpu_s>" for bench_client.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/workload.h"
#include "util/cpulist.h"

#define MAX_COUNTS 32
#define NQ 1000
#define DIM 16
#define K 10

static void usage(void) {
    fprintf(stderr, "usage: bench_client [--clients 1,2,4,8,16,32] [--window S] [--warmup S] [--service-us US] "
                    "[--engines null,sleep] [--pin CPULIST]\n");
    exit(2);
}

static int parse_counts(const char *s, int *out) {
    int n = 0;
    char *copy = strdup(s), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t && n < MAX_COUNTS; t = strtok_r(NULL, ",", &save)) {
        int v = atoi(t);
        if (v < 1 || v > 4096) usage();
        out[n++] = v;
    }
    free(copy);
    return n;
}

int main(int argc, char **argv) {
    int counts[MAX_COUNTS] = {1, 2, 4, 8, 16, 32}, n_counts = 6;
    double window_s = 2, warmup_s = 0.2;
    const char *service_us = "1000", *engines = "null,sleep", *pin = NULL;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) usage();
        if (!strcmp(argv[i], "--clients")) n_counts = parse_counts(argv[++i], counts);
        else if (!strcmp(argv[i], "--window")) window_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--warmup")) warmup_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--service-us")) service_us = argv[++i];
        else if (!strcmp(argv[i], "--engines")) engines = argv[++i];
        else if (!strcmp(argv[i], "--pin")) pin = argv[++i];
        else usage();
    }
    if (window_s <= 0 || warmup_s < 0 || n_counts == 0) usage();
    int cpus[1024], n_cpus = 0;
    if (pin) {
        vb_error err = {0};
        if ((n_cpus = vb_cpulist_parse(pin, cpus, 1024, &err)) < 0) {
            fprintf(stderr, "bench_client: --pin %s: %s\n", pin, err.message);
            return 2;
        }
    }

    static float queries[NQ * DIM];
    for (int i = 0; i < NQ * DIM; i++) queries[i] = (float)(i % 97);

    printf("closed loop, %.1f s windows after %.1f s warm-up; sleep engine service time %s us; %s\n", window_s,
           warmup_s, service_us, pin ? pin : "threads not pinned");
    printf("%-6s %7s %10s %12s %11s %10s %14s %12s\n", "engine", "clients", "qps", "overhead_us", "cpu_us/q",
           "in_flight", "fraction_min", "client_cpu_s");
    char *list = strdup(engines), *save = NULL;
    int rc = 0;
    for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        vb_kv params[1] = {{"service_us", service_us}};
        vb_engine_config ecfg = {params, strcmp(name, "sleep") == 0 ? 1 : 0, NULL, 0};
        vb_engine *e = NULL;
        vb_error err = {0};
        if (vb_engine_open(name, &ecfg, &e, &err) != VB_OK) {
            fprintf(stderr, "bench_client: %s\n", err.message);
            rc = 1;
            continue;
        }
        for (int c = 0; c < n_counts; c++) {
            vb_workload_config cfg = {
                .engine = e, .clients = counts[c], .cpus = n_cpus ? cpus : NULL, .n_cpus = n_cpus,
                .queries = queries, .n_queries = NQ, .dim = DIM, .k = K, .search = {.ef_search = 100},
                .window_ns = (uint64_t)(window_s * 1e9), .warmup_ns = (uint64_t)(warmup_s * 1e9),
            };
            vb_workload_result r;
            if (vb_workload_run(&cfg, &r, &err) != VB_OK) {
                fprintf(stderr, "bench_client: %s, %d clients: %s\n", name, counts[c], err.message);
                rc = 1;
                continue;
            }
            double q = r.queries ? (double)r.queries : 1;
            double overhead_us = ((double)counts[c] * r.elapsed_s - r.in_call_s) / q * 1e6;
            double cpu_us = r.client_cpu_s / q * 1e6;
            double flight = r.elapsed_s > 0 ? r.in_call_s / r.elapsed_s : 0;
            double fmin = 1e9, fsum = 0;
            for (int i = 0; i < counts[c]; i++) {
                fsum += r.fraction_in_call[i];
                if (r.fraction_in_call[i] < fmin) fmin = r.fraction_in_call[i];
            }
            printf("%-6s %7d %10.0f %12.3f %11.3f %10.2f %14.3f %12.3f\n", name, counts[c], r.qps, overhead_us,
                   cpu_us, flight, fmin, r.client_cpu_s);
            printf("RESULT c %s %d %.1f %.4f %.4f %.4f %.4f %.4f %.4f\n", name, counts[c], r.qps, overhead_us,
                   cpu_us, flight, fmin, fsum / counts[c], r.client_cpu_s);
            fflush(stdout);
            vb_workload_result_free(&r);
        }
        vb_engine_close(&e);
    }
    free(list);
    return rc;
}
