/* The cold-start numbers (docs/metrics.md "Cold start"): from the latency of each of the first N queries after a
 * cold restart of the server, in the order they ran, and of the same N queries again warm, the one place that says
 * what the first query, the cold and warm means and medians, their ratios and the time to warm are.
 *
 * Medians here are of the raw values (sorted; an even count takes the mean of the two middle ones), not of a
 * histogram: N is small and every value is kept. The rolling median at query i (1-based, i >= VB_COLDSTART_WINDOW)
 * is the median of the cold queries i - W + 1 .. i. The server is warm again at the first i whose rolling median is
 * at most (1 + VB_COLDSTART_TOLERANCE) x the warm median; warm_after is that i (so never fewer than W queries) and
 * warm_after_s the sum of the cold latencies 1 .. i. Failed queries are left out of every other number (their time is
 * not a search's: the rolling window runs over the successful ones in order), but their time is in warm_after_s. */
#ifndef VB_METRICS_COLDSTART_H
#define VB_METRICS_COLDSTART_H

#include <stddef.h>
#include <stdint.h>

#define VB_COLDSTART_WINDOW 10        /* queries in the rolling median */
#define VB_COLDSTART_TOLERANCE 0.10   /* within 10 % of the warm median */

typedef struct vb_coldstart {
    size_t cold_n, warm_n;            /* successful queries of each pass */
    double first_ms;                  /* the first successful cold query */
    double cold_mean_ms, cold_p50_ms, cold_max_ms;
    double warm_first_ms, warm_mean_ms, warm_p50_ms;
    double ratio_first;               /* first_ms / warm_p50_ms */
    double ratio_mean;                /* cold_mean_ms / warm_mean_ms: the first N queries against the same N warm */
    double ratio_p50;                 /* cold_p50_ms / warm_p50_ms */
    long warm_after;                  /* queries until warm again (see above); -1: not within the cold queries */
    double warm_after_s;              /* their time in the driver calls; 0 when warm_after is -1 */
} vb_coldstart;

/* Fills out from cold[0..n) and warm[0..m) (ns, in the order the queries ran); failed[i] != 0 (either array may be
 * NULL: none failed) leaves query i out. Returns 0, or -1 when a pass has no successful query (out is then zeroed
 * with warm_after -1). rolling (may be NULL; n entries) gets each cold query's rolling median in ms, NAN before the
 * window is full and for a failed query. */
int vb_coldstart_summarize(const uint64_t *cold, const uint8_t *cold_failed, size_t n, const uint64_t *warm,
                           const uint8_t *warm_failed, size_t m, double *rolling, vb_coldstart *out);

/* The median of v[0..n) in place (v is sorted); NAN for n == 0. */
double vb_coldstart_median(double *v, size_t n);

#endif
