/* The one distance function: every distance vbench stores or compares (ground truth, recall) comes from here.
 *
 * Each metric is a single pass over the two vectors with double accumulators, in index order, so the result
 * is the same on every machine and independent of how an engine or BLAS ordered its float sums. */
#include "datasets/distance.h"

#include <math.h>
#include <strings.h>

/* 1 - cos(a, b). A zero vector has no direction, so cos is undefined: we return 1.0 (cos taken as 0, as for
 * an orthogonal vector) whenever either norm is zero, so such a row is neither near nor far from anything and
 * the result is never NaN. cos is clamped to [-1, 1] so rounding cannot give a distance below 0 or above 2;
 * a NaN in the input still yields NaN (the comparisons below leave it alone), which recall counts as a miss. */
static double angular(const float *a, const float *b, size_t dim) {
    double dot = 0.0, na = 0.0, nb = 0.0;
    for (size_t i = 0; i < dim; i++) {
        double x = a[i], y = b[i];
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if (na == 0.0 || nb == 0.0) return 1.0;
    /* sqrt of each norm separately: na * nb can overflow for large float vectors where each alone does not. */
    double c = dot / (sqrt(na) * sqrt(nb));
    if (c > 1.0) c = 1.0;
    if (c < -1.0) c = -1.0;
    return 1.0 - c;
}

static double euclidean(const float *a, const float *b, size_t dim) {
    double s = 0.0;
    for (size_t i = 0; i < dim; i++) {
        double d = (double)a[i] - (double)b[i];   /* difference in double: no cancellation in float */
        s += d * d;
    }
    return sqrt(s);
}

static double neg_dot(const float *a, const float *b, size_t dim) {
    double s = 0.0;
    for (size_t i = 0; i < dim; i++) s += (double)a[i] * (double)b[i];
    return -s;
}

double vb_distance(vb_metric m, const float *a, const float *b, size_t dim) {
    switch (m) {
    case VB_METRIC_ANGULAR: return angular(a, b, dim);
    case VB_METRIC_EUCLIDEAN: return euclidean(a, b, dim);
    case VB_METRIC_DOT: return neg_dot(a, b, dim);
    }
    return NAN;   /* not a metric: NaN compares false everywhere, so nothing downstream counts it as close */
}

const char *vb_metric_name(vb_metric m) {
    switch (m) {
    case VB_METRIC_ANGULAR: return "angular";
    case VB_METRIC_EUCLIDEAN: return "euclidean";
    case VB_METRIC_DOT: return "dot";
    }
    return "unknown";
}

/* Names as they appear in ann-benchmarks files ("angular", "euclidean", "dot"), in profiles and in engine
 * documentation ("cosine", "l2", "ip", "inner_product"); case-insensitive. *out is untouched on failure. */
int vb_metric_parse(const char *name, vb_metric *out) {
    static const struct { const char *name; vb_metric m; } names[] = {
        {"angular", VB_METRIC_ANGULAR}, {"cosine", VB_METRIC_ANGULAR},
        {"euclidean", VB_METRIC_EUCLIDEAN}, {"l2", VB_METRIC_EUCLIDEAN},
        {"dot", VB_METRIC_DOT}, {"ip", VB_METRIC_DOT}, {"inner_product", VB_METRIC_DOT},
    };
    if (!name) return -1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcasecmp(name, names[i].name) == 0) {
            if (out) *out = names[i].m;
            return 0;
        }
    }
    return -1;
}
