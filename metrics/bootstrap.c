/* The bootstrap interval of a median (bootstrap.h). */
#include "metrics/bootstrap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/mix.h"

#define SEED 0x5eedb007ull   /* fixed: the interval is a function of the values alone */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of a sorted array. */
static double sorted_median(const double *s, size_t n) {
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

double vb_bootstrap_median(const double *x, size_t n) {
    double *s = malloc(n * sizeof *s);
    if (!s) return x[0];
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    double m = sorted_median(s, n);
    free(s);
    return m;
}

int vb_bootstrap_median_ci(const double *x, size_t n, double *lo, double *hi) {
    if (n < VB_BOOTSTRAP_MIN_N) return 0;
    double *s = malloc(n * sizeof *s), *draw = malloc(n * sizeof *draw);
    double *med = malloc(VB_BOOTSTRAP_RESAMPLES * sizeof *med);
    int ok = s && draw && med;
    if (ok) {
        /* sorted first: the same values in another order (rows come back from SQL in any order) draw alike */
        memcpy(s, x, n * sizeof *s);
        qsort(s, n, sizeof *s, cmp_double);
        uint64_t state = SEED;
        for (int b = 0; b < VB_BOOTSTRAP_RESAMPLES; b++) {
            for (size_t i = 0; i < n; i++) draw[i] = s[vb_splitmix64(&state) % n];
            qsort(draw, n, sizeof *draw, cmp_double);
            med[b] = sorted_median(draw, n);
        }
        qsort(med, VB_BOOTSTRAP_RESAMPLES, sizeof *med, cmp_double);
        /* the 2.5 % and 97.5 % points: 50 resamples below lo, 50 above hi */
        size_t cut = (size_t)(VB_BOOTSTRAP_RESAMPLES * 0.025);
        *lo = med[cut];
        *hi = med[VB_BOOTSTRAP_RESAMPLES - 1 - cut];
    }
    free(s);
    free(draw);
    free(med);
    return ok;
}
