/* Log-linear latency histogram: 1 us .. 100 s with <= 1 % relative error, mergeable, serialisable.
 *
 * Same shape as HdrHistogram_c (which Debian 12 does not package): each power-of-two range of nanoseconds is
 * split into 128 linear sub-buckets, so a recorded value is off by at most 1/128 < 0.8 % of itself. Worker
 * threads each own one histogram per window and the owner merges them after the window; nothing is locked
 * per record. Values outside the range are counted apart (one out-of-range count; min and max show which side),
 * never clipped silently.
 * Mean and percentiles come from bucket midpoints (within 0.4 % of each value), so a histogram rebuilt from its
 * sparse form gives exactly the same numbers as the original; min and max are exact.
 * Not thread-safe by design: one owner thread records, another merges only after the owner is done. */
#ifndef VB_METRICS_HISTOGRAM_H
#define VB_METRICS_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#define VB_HIST_MIN_NS 1000ull           /* 1 us */
#define VB_HIST_MAX_NS 100000000000ull   /* 100 s */

typedef struct vb_histogram vb_histogram;

vb_histogram *vb_histogram_new(void);             /* NULL on allocation failure */
void vb_histogram_destroy(vb_histogram **h);      /* frees and sets *h = NULL; NULL-safe */
void vb_histogram_reset(vb_histogram *h);

/* Records one value in nanoseconds. Returns 0, or -1 when the value is out of range (then counted in
 * vb_histogram_out_of_range and in min/max, but not in count, mean or the percentiles). O(1), no lock. */
int vb_histogram_record(vb_histogram *h, uint64_t value_ns);
void vb_histogram_merge(vb_histogram *dst, const vb_histogram *src);

uint64_t vb_histogram_count(const vb_histogram *h);       /* in-range values */
uint64_t vb_histogram_out_of_range(const vb_histogram *h);/* below 1 us + above 100 s */
uint64_t vb_histogram_min(const vb_histogram *h);          /* 0 when empty */
uint64_t vb_histogram_max(const vb_histogram *h);          /* 0 when empty */
double vb_histogram_mean(const vb_histogram *h);           /* ns, of in-range values */
/* Value at percentile p in [0, 100]: the representative (midpoint) of the bucket holding the
 * ceil(p/100 * count)-th value. 0 when empty. */
uint64_t vb_histogram_value_at_percentile(const vb_histogram *h, double p);

/* Sparse form for the wire and the database: parallel arrays of bucket index and count, non-zero only.
 * vb_histogram_encode returns the number of non-zero buckets and, when idx/counts are non-NULL, writes up to
 * cap of them. vb_histogram_decode_add adds such arrays into h; returns -1 for an index out of range (checked
 * before anything is added, so h is then unchanged).
 * The sparse form carries in-range buckets only: send vb_histogram_out_of_range, _min and _max beside it and
 * give them to vb_histogram_decode_summary after vb_histogram_decode_add; both together equal
 * vb_histogram_merge of the original. (Without the summary, min/max fall back to the outer bucket bounds.) */
size_t vb_histogram_encode(const vb_histogram *h, uint32_t *idx, uint64_t *counts, size_t cap);
int vb_histogram_decode_add(vb_histogram *h, const uint32_t *idx, const uint64_t *counts, size_t n);
/* Adds out_of_range and widens min/max; min_ns/max_ns are ignored for an empty source (max 0, none out of range). */
void vb_histogram_decode_summary(vb_histogram *h, uint64_t out_of_range, uint64_t min_ns, uint64_t max_ns);
/* Checks a sparse form and its summary received from elsewhere before they are decoded: every index in range,
 * the counts not overflowing 64 bits, and min/max possible for those buckets (min no higher than the lowest
 * non-empty bucket's top, max no lower than the highest one's bottom, min <= max, outside the range when values
 * were out of range, max 0 for an empty histogram). Returns 0, or -1 with the reason in why. Anything that
 * vb_histogram_encode and _min/_max produce passes. */
int vb_histogram_decode_check(const uint32_t *idx, const uint64_t *counts, size_t n, uint64_t out_of_range,
                              uint64_t min_ns, uint64_t max_ns, char *why, size_t len);
size_t vb_histogram_bucket_count(void);   /* bucket indices are [0, this); an encoding never has more entries */

#endif
