/* The cold-start summary (coldstart.h). */
#include "metrics/coldstart.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double vb_coldstart_median(double *v, size_t n) {
    if (n == 0) return NAN;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The successful queries of a pass, in order, in ms; returns their count (out has room for n). */
static size_t successful_ms(const uint64_t *ns, const uint8_t *failed, size_t n, double *out) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!failed || !failed[i]) out[k++] = (double)ns[i] / 1e6;
    return k;
}

/* Mean and median of v[0..n) (v is reordered). */
static void mean_median(double *v, size_t n, double *mean, double *median, double *max) {
    double sum = 0, hi = 0;
    for (size_t i = 0; i < n; i++) sum += v[i], hi = v[i] > hi ? v[i] : hi;
    *mean = n ? sum / (double)n : NAN;
    if (max) *max = hi;
    *median = vb_coldstart_median(v, n);
}

int vb_coldstart_summarize(const uint64_t *cold, const uint8_t *cold_failed, size_t n, const uint64_t *warm,
                           const uint8_t *warm_failed, size_t m, double *rolling, vb_coldstart *out) {
    memset(out, 0, sizeof *out);
    out->warm_after = -1;
    for (size_t i = 0; rolling && i < n; i++) rolling[i] = NAN;
    double *c = malloc((n ? n : 1) * sizeof *c), *w = malloc((m ? m : 1) * sizeof *w);
    if (!c || !w) {
        free(c), free(w);
        return -1;
    }
    size_t nc = successful_ms(cold, cold_failed, n, c), nw = successful_ms(warm, warm_failed, m, w);
    if (nc == 0 || nw == 0) {
        free(c), free(w);
        return -1;
    }
    out->cold_n = nc, out->warm_n = nw;
    out->first_ms = c[0];
    out->warm_first_ms = w[0];
    /* the rolling median and the time to warm, over the cold queries in order, before c is sorted below */
    mean_median(w, nw, &out->warm_mean_ms, &out->warm_p50_ms, NULL);
    double bound = (1 + VB_COLDSTART_TOLERANCE) * out->warm_p50_ms, spent = 0, win[VB_COLDSTART_WINDOW];
    for (size_t i = 0, k = 0; i < n; i++) {   /* k: successful queries so far, c[k - 1] is query i's */
        spent += (double)cold[i] / 1e6;          /* a failed query's time passed too */
        if (cold_failed && cold_failed[i]) continue;
        k++;
        if (k < VB_COLDSTART_WINDOW) continue;
        memcpy(win, c + k - VB_COLDSTART_WINDOW, sizeof win);
        double med = vb_coldstart_median(win, VB_COLDSTART_WINDOW);
        if (rolling) rolling[i] = med;
        if (out->warm_after < 0 && med <= bound) {
            out->warm_after = (long)(i + 1);
            out->warm_after_s = spent / 1e3;
        }
    }
    mean_median(c, nc, &out->cold_mean_ms, &out->cold_p50_ms, &out->cold_max_ms);
    out->ratio_first = out->warm_p50_ms > 0 ? out->first_ms / out->warm_p50_ms : NAN;
    out->ratio_mean = out->warm_mean_ms > 0 ? out->cold_mean_ms / out->warm_mean_ms : NAN;
    out->ratio_p50 = out->warm_p50_ms > 0 ? out->cold_p50_ms / out->warm_p50_ms : NAN;
    free(c), free(w);
    return 0;
}
