/* Ground-truth benchmark: times vb_groundtruth_compute (k nearest, exact) on a clustered synthetic corpus and
 * writes the corpus, the queries and the results as .npy files, so bench_gt.sh can run the same computation in
 * numpy on the same bytes and compare neighbours and speed.
 *
 * usage: bench_gt [--dir DIR] [--rows N] [--queries Q] [--dim D] [--k K] [--repeat R] [--threads T]
 *                 [--query-block B] [--row-block B]   (tuning; 0 = the library's defaults)
 * Prints one "RESULT <method> <metric> <seconds> <queries/s> <cpu seconds>" line per measurement (medians of R
 * runs; cpu seconds are the whole process's, all threads, so spinning and foreign load show up). */
#include <cblas.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "datasets/dataset.h"
#include "datasets/groundtruth.h"
#include "util/clock.h"

/* Writes a C-order .npy (format 1.0) of a 2-D array; descr is "<f4" or "<i8". */
static int write_npy(const char *path, const char *descr, const void *data, size_t rows, size_t cols, size_t elem) {
    char hdr[128];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (%zu, %zu), }", descr, rows,
                     cols);
    size_t total = 10 + (size_t)n + 1, pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    unsigned short hlen = (unsigned short)((size_t)n + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fwrite(&hlen, 2, 1, f);
    fwrite(hdr, 1, (size_t)n, f);
    for (size_t i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    size_t w = fwrite(data, elem, rows * cols, f);
    return fclose(f) == 0 && w == rows * cols ? 0 : -1;
}

static double process_cpu_s(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
           (double)u.ru_stime.tv_usec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    const char *dir = "/tmp/vbench-bench-gt";
    size_t rows = 100000, queries = 1000, dim = 768, k = 10;
    size_t qb = 0, rb = 0;
    int repeat = 3, threads = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--dir")) dir = v;
        else if (!strcmp(a, "--rows")) rows = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--queries")) queries = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--dim")) dim = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--k")) k = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--repeat")) repeat = atoi(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--query-block")) qb = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--row-block")) rb = strtoul(v, NULL, 10);
        else {
            fprintf(stderr, "bench_gt: unknown option %s\n", a);
            return 2;
        }
    }
    if (repeat < 1 || repeat > 100) repeat = 3;
    if (mkdir(dir, 0775) != 0 && errno != EEXIST) {
        fprintf(stderr, "bench_gt: %s: %s\n", dir, strerror(errno));
        return 1;
    }

    vb_synth_params p = {.rows = rows, .queries = queries, .dim = dim, .clusters = 0, .metric = VB_METRIC_EUCLIDEAN,
                         .seed = 20240601};
    vb_dataset *ds = NULL;
    vb_error err = {0};
    uint64_t t0 = vb_now_ns();
    if (vb_dataset_open_synthetic("bench-gt", &p, dir, &ds, &err) != VB_OK) {
        fprintf(stderr, "bench_gt: %s\n", err.message);
        return 1;
    }
    printf("# corpus %zu x %zu, %zu queries, k=%zu (synthetic, clustered; %.2f s to generate or map)\n", ds->n_train,
           ds->dim, ds->n_test, k, (double)(vb_now_ns() - t0) / 1e9);
    printf("# vbench links %s; %d OpenBLAS threads by default\n", openblas_get_config(), openblas_get_num_threads());
    char path[4096];
    snprintf(path, sizeof path, "%s/corpus.npy", dir);
    if (write_npy(path, "<f4", ds->train, ds->n_train, ds->dim, 4) != 0) return 1;
    snprintf(path, sizeof path, "%s/queries.npy", dir);
    if (write_npy(path, "<f4", ds->test, ds->n_test, ds->dim, 4) != 0) return 1;

    static const struct {
        const char *name;
        vb_gt_mode mode;
    } modes[] = {{"vbench", VB_GT_AUTO}, {"vbench-blas-threads", VB_GT_BLAS_THREADS}};
    const vb_metric metrics[] = {VB_METRIC_EUCLIDEAN, VB_METRIC_ANGULAR};
    double *times = calloc((size_t)repeat, sizeof *times), *cpu = calloc((size_t)repeat, sizeof *cpu);
    for (size_t mi = 0; mi < 2; mi++)
        for (size_t mo = 0; mo < sizeof modes / sizeof modes[0]; mo++) {
            vb_gt_opts o = {.threads = threads, .mode = modes[mo].mode, .query_block = qb, .row_block = rb};
            vb_groundtruth gt;
            for (int r = 0; r < repeat; r++) {
                uint64_t s = vb_now_ns();
                double c0 = process_cpu_s();
                if (vb_groundtruth_compute_opts(ds->train, ds->n_train, ds->test, ds->n_test, ds->dim, metrics[mi], k,
                                                NULL, &o, &gt, &err) != VB_OK) {
                    fprintf(stderr, "bench_gt: %s\n", err.message);
                    return 1;
                }
                times[r] = (double)(vb_now_ns() - s) / 1e9;
                cpu[r] = process_cpu_s() - c0;
                if (r + 1 < repeat) vb_groundtruth_free(&gt);
            }
            qsort(times, (size_t)repeat, sizeof *times, cmp_double);
            qsort(cpu, (size_t)repeat, sizeof *cpu, cmp_double);
            double med = times[repeat / 2];
            printf("RESULT %s %s %.4f %.1f %.4f\n", modes[mo].name, vb_metric_name(metrics[mi]), med,
                   (double)ds->n_test / med, cpu[repeat / 2]);
            if (mo == 0) {
                snprintf(path, sizeof path, "%s/vbench_%s_ids.npy", dir, vb_metric_name(metrics[mi]));
                write_npy(path, "<i8", gt.ids, gt.n_queries, gt.k, 8);
                snprintf(path, sizeof path, "%s/vbench_%s_dists.npy", dir, vb_metric_name(metrics[mi]));
                write_npy(path, "<f4", gt.dists, gt.n_queries, gt.k, 4);
            }
            vb_groundtruth_free(&gt);
            fflush(stdout);
        }
    free(times);
    free(cpu);
    vb_dataset_close(&ds);
    return 0;
}
