/* Distance metrics and the one distance function every number in vbench is computed with.
 *
 * Conventions follow ann-benchmarks so results sit beside published ones:
 *   angular:   1 - cos(a, b)            (0 for identical directions, 2 for opposite)
 *   euclidean: sqrt(sum (a_i - b_i)^2)  (not squared)
 *   dot:       -<a, b>                  (smaller is closer, as for the others)
 * Accumulation is in double so recomputed distances do not depend on the summation order of an engine.
 * Angular with a zero vector (either side) is defined as 1.0, as for an orthogonal vector: never NaN. */
#ifndef VB_DATASETS_DISTANCE_H
#define VB_DATASETS_DISTANCE_H

#include <stddef.h>

typedef enum { VB_METRIC_ANGULAR = 0, VB_METRIC_EUCLIDEAN = 1, VB_METRIC_DOT = 2 } vb_metric;

double vb_distance(vb_metric m, const float *a, const float *b, size_t dim);
const char *vb_metric_name(vb_metric m);                   /* "angular", "euclidean", "dot" */
/* Accepts also "cosine", "l2", "ip", "inner_product", in any case; 0, or -1 (and *out untouched). */
int vb_metric_parse(const char *name, vb_metric *out);

#endif
