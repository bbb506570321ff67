/* A bootstrap 95 % interval of the median of a few repeats (issue 14: "repeats everywhere"): the spread of a
 * point measured N times, said as an interval a reader can compare between configurations. Deterministic: the
 * resamples come from a fixed-seed splitmix64 over the values sorted first, so the same repeats give the same
 * bounds on every host and in every order they arrive. */
#ifndef VB_METRICS_BOOTSTRAP_H
#define VB_METRICS_BOOTSTRAP_H

#include <stddef.h>

/* Fewer repeats than this give no interval: with 3 or 4 values the percentile bootstrap of the median only
 * restates the range (its 2.5 % and 97.5 % points are the smallest and the largest value). */
#define VB_BOOTSTRAP_MIN_N 5
#define VB_BOOTSTRAP_RESAMPLES 2000

/* The median of x[0..n) (the mean of the two middle values when n is even); x is not changed. n > 0. */
double vb_bootstrap_median(const double *x, size_t n);

/* The percentile bootstrap 95 % interval of the median of x[0..n): VB_BOOTSTRAP_RESAMPLES resamples of n values
 * drawn with replacement, the 2.5 % and 97.5 % points of their medians. Returns 1 with *lo <= *hi, both within
 * [min(x), max(x)]; 0 (bounds untouched) when n < VB_BOOTSTRAP_MIN_N or memory ran out. */
int vb_bootstrap_median_ci(const double *x, size_t n, double *lo, double *hi);

#endif
