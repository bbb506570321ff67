/* Log-linear latency histogram (HdrHistogram's layout, reduced to what vbench needs).
 *
 * Layout: a value v in [2^e, 2^(e+1)) falls in one of 128 equal sub-buckets of width 2^(e-7), so the bucket of
 * v is at most v/128 wide and its midpoint is within v/256 (0.4 %) of v. Only the powers of two that touch
 * [VB_HIST_MIN_NS, VB_HIST_MAX_NS] exist, and the index is shifted so that bucket 0 starts exactly at
 * VB_HIST_MIN_NS and the last bucket holds VB_HIST_MAX_NS: 3393 buckets, 27 KB per histogram.
 *
 * A histogram has one owner thread; record is a handful of integer operations and no lock. Summaries (mean,
 * percentiles) are computed from bucket midpoints, so they are the same on a histogram rebuilt from its sparse
 * form as on the original; min and max are exact. */
#include "metrics/histogram.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUB_BITS 7
#define SUB_COUNT (1u << SUB_BITS)          /* linear sub-buckets per power of two */
#define E_MIN 9                              /* floor(log2(VB_HIST_MIN_NS)) */
#define E_MAX 36                             /* floor(log2(VB_HIST_MAX_NS)) */

_Static_assert((1ull << E_MIN) <= VB_HIST_MIN_NS && VB_HIST_MIN_NS < (2ull << E_MIN), "E_MIN matches VB_HIST_MIN_NS");
_Static_assert((1ull << E_MAX) <= VB_HIST_MAX_NS && VB_HIST_MAX_NS < (2ull << E_MAX), "E_MAX matches VB_HIST_MAX_NS");
_Static_assert(E_MIN >= SUB_BITS, "sub-buckets at the low end are at least 1 ns wide");

/* Index before the shift, given v's exponent e: (e - E_MIN) groups of 128, then the sub-bucket within [2^e, 2^(e+1)). */
#define RAW_INDEX(v, e) ((uint64_t)((e) - E_MIN) * SUB_COUNT + ((uint64_t)(v) >> ((e) - SUB_BITS)) - SUB_COUNT)
#define INDEX_BASE RAW_INDEX(VB_HIST_MIN_NS, E_MIN)
#define N_BUCKETS ((size_t)(RAW_INDEX(VB_HIST_MAX_NS, E_MAX) - INDEX_BASE + 1))

#define NO_MIN UINT64_MAX   /* min before anything was recorded; max is then 0 */

struct vb_histogram {
    uint64_t count;          /* in-range values, = sum of counts[] */
    uint64_t out_of_range;   /* values below VB_HIST_MIN_NS or above VB_HIST_MAX_NS */
    uint64_t min, max;       /* exact, over every recorded value, in range or not */
    uint64_t counts[N_BUCKETS];
};

static inline size_t bucket_of(uint64_t v) {
    int e = 63 - __builtin_clzll(v);   /* v >= VB_HIST_MIN_NS > 0 here */
    return (size_t)(RAW_INDEX(v, e) - INDEX_BASE);
}

/* Lowest value of bucket i and its width; every value in [lowest, lowest + width) lands in bucket i. */
static void bucket_bounds(size_t i, uint64_t *lowest, uint64_t *width) {
    uint64_t raw = (uint64_t)i + INDEX_BASE;
    unsigned shift = (unsigned)(raw / SUB_COUNT) + E_MIN - SUB_BITS;
    *lowest = (SUB_COUNT + raw % SUB_COUNT) << shift;
    *width = 1ull << shift;
}

static uint64_t bucket_mid(size_t i) {
    uint64_t lo, w;
    bucket_bounds(i, &lo, &w);
    return lo + w / 2;
}

vb_histogram *vb_histogram_new(void) {
    vb_histogram *h = malloc(sizeof *h);
    if (h) vb_histogram_reset(h);
    return h;
}

void vb_histogram_destroy(vb_histogram **h) {
    if (!h || !*h) return;
    free(*h);
    *h = NULL;
}

void vb_histogram_reset(vb_histogram *h) {
    memset(h, 0, sizeof *h);
    h->min = NO_MIN;
}

static inline void note_extremes(vb_histogram *h, uint64_t lo, uint64_t hi) {
    if (lo < h->min) h->min = lo;
    if (hi > h->max) h->max = hi;
}

int vb_histogram_record(vb_histogram *h, uint64_t value_ns) {
    note_extremes(h, value_ns, value_ns);
    if (value_ns < VB_HIST_MIN_NS || value_ns > VB_HIST_MAX_NS) {
        h->out_of_range++;
        return -1;
    }
    h->counts[bucket_of(value_ns)]++;
    h->count++;
    return 0;
}

void vb_histogram_merge(vb_histogram *dst, const vb_histogram *src) {
    for (size_t i = 0; i < N_BUCKETS; i++) dst->counts[i] += src->counts[i];
    dst->count += src->count;
    dst->out_of_range += src->out_of_range;
    if (src->min != NO_MIN || src->count) note_extremes(dst, vb_histogram_min(src), vb_histogram_max(src));
}

uint64_t vb_histogram_count(const vb_histogram *h) { return h->count; }
uint64_t vb_histogram_out_of_range(const vb_histogram *h) { return h->out_of_range; }

/* Exact min/max when known. A histogram filled by vb_histogram_decode_add alone (no summary) has counts but no
 * exact extremes; it then reports the bounds of its outermost buckets, which still enclose every value. */
uint64_t vb_histogram_min(const vb_histogram *h) {
    if (h->min != NO_MIN) return h->min;
    for (size_t i = 0; i < N_BUCKETS; i++) {
        if (h->counts[i]) {
            uint64_t lo, w;
            bucket_bounds(i, &lo, &w);
            return lo;
        }
    }
    return 0;
}

uint64_t vb_histogram_max(const vb_histogram *h) {
    if (h->min != NO_MIN) return h->max;
    for (size_t i = N_BUCKETS; i-- > 0;) {
        if (h->counts[i]) {
            uint64_t lo, w;
            bucket_bounds(i, &lo, &w);
            return lo + w - 1;
        }
    }
    return 0;
}

double vb_histogram_mean(const vb_histogram *h) {
    if (h->count == 0) return 0.0;
    double sum = 0.0;
    for (size_t i = 0; i < N_BUCKETS; i++)
        if (h->counts[i]) sum += (double)h->counts[i] * (double)bucket_mid(i);
    return sum / (double)h->count;
}

uint64_t vb_histogram_value_at_percentile(const vb_histogram *h, double p) {
    if (h->count == 0) return 0;
    if (!(p > 0.0)) p = 0.0;   /* also NaN */
    if (p > 100.0) p = 100.0;
    /* p * count / 100 rather than p / 100 * count: exact for integral p (99 / 100 * 100 is 99.000000000000014,
     * whose ceil would pick the 100th value). The small slack absorbs the rounding of decimal p such as 99.9. */
    double x = p * (double)h->count / 100.0;
    uint64_t rank = (uint64_t)ceil(x - 1e-9);
    if (rank < 1) rank = 1;
    if (rank > h->count) rank = h->count;
    uint64_t seen = 0;
    for (size_t i = 0; i < N_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) return bucket_mid(i);
    }
    return bucket_mid(N_BUCKETS - 1);   /* unreachable while count == sum of counts[] */
}

size_t vb_histogram_encode(const vb_histogram *h, uint32_t *idx, uint64_t *counts, size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < N_BUCKETS; i++) {
        if (!h->counts[i]) continue;
        if (idx && counts && n < cap) {
            idx[n] = (uint32_t)i;
            counts[n] = h->counts[i];
        }
        n++;
    }
    return n;
}

/* All indices are checked before anything is added, so a bad array leaves h as it was. */
int vb_histogram_decode_add(vb_histogram *h, const uint32_t *idx, const uint64_t *counts, size_t n) {
    for (size_t j = 0; j < n; j++)
        if (idx[j] >= N_BUCKETS) return -1;
    for (size_t j = 0; j < n; j++) {
        h->counts[idx[j]] += counts[j];
        h->count += counts[j];
    }
    return 0;
}

void vb_histogram_decode_summary(vb_histogram *h, uint64_t out_of_range, uint64_t min_ns, uint64_t max_ns) {
    h->out_of_range += out_of_range;
    /* An empty source reports min = max = 0 and nothing out of range; any non-empty source has max > 0 (an
     * in-range value is >= 1 us) or something out of range (a recorded 0). */
    if (max_ns > 0 || out_of_range > 0) note_extremes(h, min_ns, max_ns);
}

/* The percentiles of a histogram come from its buckets and its max from the summary, so a summary that does not
 * fit the buckets would be stored as a max below p99.9 (found by tests/fuzz/fuzz_wire.c); counts that wrap around
 * 2^64 would make a mean larger than the max, or a full histogram look empty. */
int vb_histogram_decode_check(const uint32_t *idx, const uint64_t *counts, size_t n, uint64_t out_of_range,
                              uint64_t min_ns, uint64_t max_ns, char *why, size_t len) {
    uint64_t total = out_of_range, lo, w;
    size_t first = N_BUCKETS, last = 0;
    for (size_t j = 0; j < n; j++) {
        if (idx[j] >= N_BUCKETS) {
            snprintf(why, len, "bucket %u is out of range (0..%zu)", idx[j], N_BUCKETS - 1);
            return -1;
        }
        if (__builtin_add_overflow(total, counts[j], &total)) {
            snprintf(why, len, "the counts add up to more than 2^64");
            return -1;
        }
        if (counts[j] && idx[j] < first) first = idx[j];
        if (counts[j] && idx[j] > last) last = idx[j];
    }
    if (total == 0) {
        if (max_ns == 0) return 0;
        snprintf(why, len, "max %llu ns for an empty histogram", (unsigned long long)max_ns);
        return -1;
    }
    if (min_ns > max_ns) {
        snprintf(why, len, "min %llu ns is above max %llu ns", (unsigned long long)min_ns, (unsigned long long)max_ns);
        return -1;
    }
    if (first < N_BUCKETS) {
        bucket_bounds(first, &lo, &w);
        if (min_ns > lo + w - 1) {
            snprintf(why, len, "min %llu ns is above every value of the lowest bucket (%llu..%llu ns)",
                     (unsigned long long)min_ns, (unsigned long long)lo, (unsigned long long)(lo + w - 1));
            return -1;
        }
        bucket_bounds(last, &lo, &w);
        if (max_ns < lo) {
            snprintf(why, len, "max %llu ns is below every value of the highest bucket (%llu..%llu ns)",
                     (unsigned long long)max_ns, (unsigned long long)lo, (unsigned long long)(lo + w - 1));
            return -1;
        }
    }
    if (out_of_range > 0 && min_ns >= VB_HIST_MIN_NS && max_ns <= VB_HIST_MAX_NS) {
        snprintf(why, len, "%llu values out of range, but min %llu ns and max %llu ns are inside it",
                 (unsigned long long)out_of_range, (unsigned long long)min_ns, (unsigned long long)max_ns);
        return -1;
    }
    return 0;
}

size_t vb_histogram_bucket_count(void) { return N_BUCKETS; }
