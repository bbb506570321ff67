/* Unit tests of metrics/histogram: accuracy over the whole range, percentiles against a sorted array, merge,
 * the sparse round trip, out-of-range accounting and reset. */
#include <stdint.h>
#include <stdlib.h>

#include "metrics/histogram.h"
#include "tests/tap.h"

/* The layout promises each value is reported within half a bucket, 1/256 of itself; docs/design.md §4 asks for 1 %. */
#define DESIGN_BOUND (1.0 / 256.0)
#define SPEC_BOUND 0.01

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t splitmix64(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double uniform01(void) { return (double)(splitmix64() >> 11) / 9007199254740992.0; }

/* Log-uniform in [lo, hi]: exercises every power of two of the range equally. */
static uint64_t log_uniform(uint64_t lo, uint64_t hi) {
    double v = exp(log((double)lo) + uniform01() * (log((double)hi) - log((double)lo)));
    uint64_t x = (uint64_t)v;
    return x < lo ? lo : x > hi ? hi : x;
}

static double rel_err(uint64_t got, uint64_t want) {
    return fabs((double)got - (double)want) / (double)want;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The exact percentile by the header's rule: the ceil(p/100 * n)-th smallest value (at least the first). */
static uint64_t exact_percentile(const uint64_t *sorted, size_t n, double p) {
    size_t rank = (size_t)ceil(p * (double)n / 100.0 - 1e-9);
    if (rank < 1) rank = 1;
    if (rank > n) rank = n;
    return sorted[rank - 1];
}

/* Two histograms are equal when every observable is: counts, extremes, mean, percentiles, the sparse form. */
static int same_histogram(const vb_histogram *a, const vb_histogram *b) {
    if (vb_histogram_count(a) != vb_histogram_count(b)) return 0;
    if (vb_histogram_out_of_range(a) != vb_histogram_out_of_range(b)) return 0;
    if (vb_histogram_min(a) != vb_histogram_min(b) || vb_histogram_max(a) != vb_histogram_max(b)) return 0;
    if (vb_histogram_mean(a) != vb_histogram_mean(b)) return 0;
    static const double ps[] = {0, 1, 25, 50, 75, 90, 99, 99.9, 100};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
        if (vb_histogram_value_at_percentile(a, ps[i]) != vb_histogram_value_at_percentile(b, ps[i])) return 0;
    size_t na = vb_histogram_encode(a, NULL, NULL, 0), nb = vb_histogram_encode(b, NULL, NULL, 0);
    if (na != nb) return 0;
    uint32_t *ia = calloc(na + 1, sizeof *ia), *ib = calloc(nb + 1, sizeof *ib);
    uint64_t *ca = calloc(na + 1, sizeof *ca), *cb = calloc(nb + 1, sizeof *cb);
    int same = ia && ib && ca && cb;
    if (same) {
        vb_histogram_encode(a, ia, ca, na);
        vb_histogram_encode(b, ib, cb, nb);
        same = memcmp(ia, ib, na * sizeof *ia) == 0 && memcmp(ca, cb, na * sizeof *ca) == 0;
    }
    free(ia), free(ib), free(ca), free(cb);
    return same;
}

static void test_empty(void) {
    vb_histogram *h = vb_histogram_new();
    ok(h != NULL, "new");
    is_int(vb_histogram_count(h), 0, "empty: count 0");
    is_int(vb_histogram_out_of_range(h), 0, "empty: out of range 0");
    is_int(vb_histogram_min(h), 0, "empty: min 0");
    is_int(vb_histogram_max(h), 0, "empty: max 0");
    is_double(vb_histogram_mean(h), 0, 0, "empty: mean 0");
    is_int(vb_histogram_value_at_percentile(h, 50), 0, "empty: p50 0");
    is_int(vb_histogram_encode(h, NULL, NULL, 0), 0, "empty: no sparse entries");
    ok(vb_histogram_bucket_count() > 3000 && vb_histogram_bucket_count() < 4000,
       "bucket count %zu: 128 per power of two over 1 us .. 100 s", vb_histogram_bucket_count());
    vb_histogram_destroy(&h);
    ok(h == NULL, "destroy sets the pointer to NULL");
    vb_histogram_destroy(&h);
    vb_histogram_destroy(NULL);
    ok(1, "destroy is NULL-safe");
}

/* Every value, recorded alone, must come back (as p0, p50 and p100) within the error bound; the values are the
 * edges of the range, every power of two in it and its neighbours, and many log-uniform random ones. */
static void test_relative_error(void) {
    vb_histogram *h = vb_histogram_new();
    double worst = 0;
    uint64_t worst_v = 0;
    int n = 0, rejected = 0;
    uint64_t edge[300];
    int n_edge = 0;
    edge[n_edge++] = VB_HIST_MIN_NS;
    edge[n_edge++] = VB_HIST_MIN_NS + 1;
    edge[n_edge++] = VB_HIST_MAX_NS - 1;
    edge[n_edge++] = VB_HIST_MAX_NS;
    for (int e = 10; e <= 36; e++) {
        edge[n_edge++] = (1ull << e) - 1;
        edge[n_edge++] = 1ull << e;
        edge[n_edge++] = (1ull << e) + 1;
    }
    for (int i = 0; i < n_edge + 20000; i++) {
        uint64_t v = i < n_edge ? edge[i] : log_uniform(VB_HIST_MIN_NS, VB_HIST_MAX_NS);
        if (v < VB_HIST_MIN_NS || v > VB_HIST_MAX_NS) continue;
        vb_histogram_reset(h);
        if (vb_histogram_record(h, v) != 0) rejected++;
        uint64_t r = vb_histogram_value_at_percentile(h, 50);
        double e = rel_err(r, v);
        if (vb_histogram_value_at_percentile(h, 0) != r || vb_histogram_value_at_percentile(h, 100) != r) e = 1;
        if (e > worst) worst = e, worst_v = v;
        n++;
    }
    ok(rejected == 0, "every value in [1 us, 100 s] is accepted (%d values, %d refused)", n, rejected);
    ok(worst <= SPEC_BOUND, "relative error <= 1 %% over %d values (worst %.5f %% at %llu ns)", n, worst * 100,
       (unsigned long long)worst_v);
    ok(worst <= DESIGN_BOUND + 1e-12, "relative error <= 1/256 (half a bucket): worst %.5f %%", worst * 100);
    vb_histogram_destroy(&h);
}

static void test_percentiles(void) {
    enum { N = 100000 };
    uint64_t *v = malloc(N * sizeof *v);
    vb_histogram *h = vb_histogram_new();
    double sum = 0;
    /* A latency-like mixture: a body around 0.3-3 ms and a long tail up to 10 s. */
    for (size_t i = 0; i < N; i++) {
        v[i] = (i % 50 == 0) ? log_uniform(3000000, 10000000000ull) : log_uniform(300000, 3000000);
        sum += (double)v[i];
        vb_histogram_record(h, v[i]);
    }
    qsort(v, N, sizeof *v, cmp_u64);
    static const double ps[] = {0, 0.1, 1, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.99, 100};
    double worst = 0;
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        uint64_t want = exact_percentile(v, N, ps[i]), got = vb_histogram_value_at_percentile(h, ps[i]);
        double e = rel_err(got, want);
        if (e > worst) worst = e;
        ok(e <= DESIGN_BOUND, "p%g: %llu ns vs exact %llu ns (%.4f %%)", ps[i], (unsigned long long)got,
           (unsigned long long)want, e * 100);
    }
    is_int(vb_histogram_count(h), N, "count");
    is_int(vb_histogram_min(h), v[0], "min is exact");
    is_int(vb_histogram_max(h), v[N - 1], "max is exact");
    is_double(vb_histogram_mean(h), sum / N, sum / N * DESIGN_BOUND, "mean within 1/256 of the exact mean");
    ok(vb_histogram_value_at_percentile(h, -5) == vb_histogram_value_at_percentile(h, 0) &&
       vb_histogram_value_at_percentile(h, 250) == vb_histogram_value_at_percentile(h, 100),
       "p outside [0, 100] is clamped");
    free(v);

    /* 1..100 us, one each: the k-th percentile is exactly the k-th value. p99 must not round up to the 100th
     * (99 / 100 * 100 is 99.00000000000001 in double) */
    vb_histogram_reset(h);
    for (uint64_t us = 100; us >= 1; us--) vb_histogram_record(h, us * 1000);
    int exact_ranks = 1;
    for (int p = 1; p <= 100; p++)
        if (rel_err(vb_histogram_value_at_percentile(h, p), (uint64_t)p * 1000) > DESIGN_BOUND) exact_ranks = 0;
    ok(exact_ranks, "100 values: p1..p100 each pick their own value");
    ok(rel_err(vb_histogram_value_at_percentile(h, 99.5), 100000) <= DESIGN_BOUND, "p99.5 of 100 values is the 100th");
    ok(rel_err(vb_histogram_value_at_percentile(h, 0), 1000) <= DESIGN_BOUND, "p0 is the smallest value");
    vb_histogram_destroy(&h);
}

static void test_merge(void) {
    vb_histogram *parts[4], *all = vb_histogram_new(), *merged = vb_histogram_new();
    for (int c = 0; c < 4; c++) parts[c] = vb_histogram_new();
    for (int i = 0; i < 40000; i++) {
        int c = i % 4;
        /* each "client" has its own distribution; a few values out of range on both sides */
        uint64_t x = (i % 997 == 0) ? 10 + (uint64_t)i : (i % 1999 == 0) ? VB_HIST_MAX_NS + (uint64_t)i
                   : log_uniform(VB_HIST_MIN_NS << c, VB_HIST_MIN_NS << (c * 6 + 6));
        vb_histogram_record(parts[c], x);
        vb_histogram_record(all, x);
    }
    for (int c = 0; c < 4; c++) vb_histogram_merge(merged, parts[c]);
    ok(vb_histogram_out_of_range(all) > 0, "the data has out-of-range values (%llu)",
       (unsigned long long)vb_histogram_out_of_range(all));
    ok(same_histogram(merged, all), "merge of 4 parts == recording everything in one");
    is_int(vb_histogram_count(merged), vb_histogram_count(all), "merged count");
    is_int(vb_histogram_min(merged), vb_histogram_min(all), "merged min");
    is_int(vb_histogram_max(merged), vb_histogram_max(all), "merged max");

    vb_histogram *empty = vb_histogram_new(), *copy = vb_histogram_new();
    vb_histogram_merge(copy, all);
    vb_histogram_merge(copy, empty);
    ok(same_histogram(copy, all), "merging an empty histogram changes nothing");
    vb_histogram_merge(empty, all);
    ok(same_histogram(empty, all), "merging into an empty histogram copies");
    vb_histogram_destroy(&empty);
    vb_histogram_destroy(&copy);
    for (int c = 0; c < 4; c++) vb_histogram_destroy(&parts[c]);
    vb_histogram_destroy(&all);
    vb_histogram_destroy(&merged);
}

static void test_sparse(void) {
    vb_histogram *h = vb_histogram_new(), *back = vb_histogram_new();
    uint64_t lo = UINT64_MAX, hi = 0;   /* extremes of the in-range values */
    for (int i = 0; i < 5000; i++) {
        uint64_t x = log_uniform(2000, 50000000);
        vb_histogram_record(h, x);
        if (x < lo) lo = x;
        if (x > hi) hi = x;
    }
    vb_histogram_record(h, 5);                         /* under */
    vb_histogram_record(h, VB_HIST_MAX_NS * 3);        /* over */
    size_t n = vb_histogram_encode(h, NULL, NULL, 0);
    ok(n > 0 && n <= vb_histogram_bucket_count(), "encode counts %zu non-zero buckets", n);
    uint32_t *idx = malloc(n * sizeof *idx);
    uint64_t *cnt = malloc(n * sizeof *cnt);
    is_int(vb_histogram_encode(h, idx, cnt, n), n, "encode writes them all");
    uint64_t total = 0;
    int ascending = 1;
    for (size_t i = 0; i < n; i++) {
        total += cnt[i];
        if (cnt[i] == 0 || (i && idx[i] <= idx[i - 1])) ascending = 0;
    }
    ok(ascending, "entries are non-zero, in ascending index order");
    is_int(total, vb_histogram_count(h), "sparse counts sum to the in-range count");

    is_int(vb_histogram_decode_add(back, idx, cnt, n), 0, "decode_add");
    vb_histogram_decode_summary(back, vb_histogram_out_of_range(h), vb_histogram_min(h), vb_histogram_max(h));
    ok(same_histogram(back, h), "encode -> decode_add + decode_summary round trip is exact");
    is_int(vb_histogram_min(back), 5, "round trip keeps the exact min (out of range)");

    /* Without the summary, min/max still enclose every in-range value, within one bucket (1/128). */
    vb_histogram *bare = vb_histogram_new();
    vb_histogram_decode_add(bare, idx, cnt, n);
    ok(vb_histogram_count(bare) == vb_histogram_count(h) && vb_histogram_out_of_range(bare) == 0,
       "decode without summary: counts only");
    uint64_t bmin = vb_histogram_min(bare), bmax = vb_histogram_max(bare);
    ok(bmin <= lo && bmin >= lo - lo / 128 && bmax >= hi && bmax <= hi + hi / 128,
       "decode without summary: min/max %llu/%llu enclose %llu/%llu within a bucket", (unsigned long long)bmin,
       (unsigned long long)bmax, (unsigned long long)lo, (unsigned long long)hi);
    vb_histogram_decode_summary(bare, 0, 0, 0);
    ok(vb_histogram_out_of_range(bare) == 0 && vb_histogram_min(bare) == bmin && vb_histogram_max(bare) == bmax,
       "an empty summary changes nothing");
    vb_histogram_destroy(&bare);

    /* Decoding twice == merging twice. */
    vb_histogram *twice = vb_histogram_new(), *twice_m = vb_histogram_new();
    for (int r = 0; r < 2; r++) {
        vb_histogram_decode_add(twice, idx, cnt, n);
        vb_histogram_decode_summary(twice, vb_histogram_out_of_range(h), vb_histogram_min(h), vb_histogram_max(h));
        vb_histogram_merge(twice_m, h);
    }
    ok(same_histogram(twice, twice_m), "decoding twice == merging twice");
    vb_histogram_destroy(&twice);
    vb_histogram_destroy(&twice_m);

    /* A short buffer: encode reports the full size and writes only cap entries. */
    uint32_t small_idx[3] = {0};
    uint64_t small_cnt[3] = {0};
    is_int(vb_histogram_encode(h, small_idx, small_cnt, 2), n, "encode with a small cap still returns the total");
    ok(small_idx[0] == idx[0] && small_idx[1] == idx[1] && small_idx[2] == 0 && small_cnt[2] == 0,
       "and writes only cap entries");

    /* A bad index is refused before anything is added. */
    vb_histogram *bad = vb_histogram_new();
    uint32_t bidx[2] = {0, (uint32_t)vb_histogram_bucket_count()};
    uint64_t bcnt[2] = {7, 1};
    is_int(vb_histogram_decode_add(bad, bidx, bcnt, 2), -1, "decode_add refuses an index out of range");
    is_int(vb_histogram_count(bad), 0, "and adds nothing");
    bidx[1] = (uint32_t)vb_histogram_bucket_count() - 1;
    is_int(vb_histogram_decode_add(bad, bidx, bcnt, 2), 0, "the last index is valid");
    ok(rel_err(vb_histogram_value_at_percentile(bad, 100), VB_HIST_MAX_NS) <= DESIGN_BOUND,
       "the last bucket holds 100 s");
    ok(rel_err(vb_histogram_value_at_percentile(bad, 0), VB_HIST_MIN_NS) <= DESIGN_BOUND,
       "the first bucket holds 1 us");
    vb_histogram_destroy(&bad);

    /* What a sender may claim: the real encoding passes, summaries that contradict the buckets do not. */
    char why[256];
    uint64_t mn = vb_histogram_min(h), mx = vb_histogram_max(h), oor = vb_histogram_out_of_range(h);
    is_int(vb_histogram_decode_check(idx, cnt, n, oor, mn, mx, why, sizeof why), 0, "decode_check passes an encoding");
    is_int(vb_histogram_decode_check(NULL, NULL, 0, 0, 0, 0, why, sizeof why), 0, "and an empty one");
    is_int(vb_histogram_decode_check(idx, cnt, n, 0, lo, hi, why, sizeof why), 0,
           "and the in-range part with its exact extremes");
    is_int(vb_histogram_decode_check(idx, cnt, n, 0, lo, lo, why, sizeof why), -1, "a max below the top bucket fails");
    contains(why, "max", "and says max");
    is_int(vb_histogram_decode_check(idx, cnt, n, 0, hi, hi, why, sizeof why), -1, "a min above the low bucket fails");
    is_int(vb_histogram_decode_check(idx, cnt, n, 0, hi, lo, why, sizeof why), -1, "min above max fails");
    is_int(vb_histogram_decode_check(idx, cnt, n, 3, lo, hi, why, sizeof why), -1,
           "values out of range with in-range extremes fail");
    is_int(vb_histogram_decode_check(NULL, NULL, 0, 0, 0, 5000, why, sizeof why), -1, "a max for nothing fails");
    uint32_t widx[2] = {10, 20};
    uint64_t wcnt[2] = {UINT64_MAX, 2};
    is_int(vb_histogram_decode_check(widx, wcnt, 2, 0, VB_HIST_MIN_NS, VB_HIST_MAX_NS, why, sizeof why), -1,
           "counts that wrap around 2^64 fail");
    contains(why, "2^64", "and say so");
    is_int(vb_histogram_decode_check(bidx, bcnt, 2, 0, VB_HIST_MIN_NS, VB_HIST_MAX_NS, why, sizeof why), 0,
           "the first and last bucket with the range's ends pass");
    bidx[1] = (uint32_t)vb_histogram_bucket_count();
    is_int(vb_histogram_decode_check(bidx, bcnt, 2, 0, VB_HIST_MIN_NS, VB_HIST_MAX_NS, why, sizeof why), -1,
           "an index out of range fails");

    free(idx);
    free(cnt);
    vb_histogram_destroy(&h);
    vb_histogram_destroy(&back);
}

static void test_out_of_range(void) {
    vb_histogram *h = vb_histogram_new();
    is_int(vb_histogram_record(h, 0), -1, "0 ns is out of range");
    is_int(vb_histogram_record(h, VB_HIST_MIN_NS - 1), -1, "999 ns is out of range");
    is_int(vb_histogram_record(h, VB_HIST_MIN_NS), 0, "1 us is in range");
    is_int(vb_histogram_record(h, VB_HIST_MAX_NS), 0, "100 s is in range");
    is_int(vb_histogram_record(h, VB_HIST_MAX_NS + 1), -1, "100 s + 1 ns is out of range");
    is_int(vb_histogram_record(h, UINT64_MAX), -1, "UINT64_MAX is out of range");
    is_int(vb_histogram_count(h), 2, "count has only the in-range values");
    is_int(vb_histogram_out_of_range(h), 4, "out of range counted apart");
    is_int(vb_histogram_min(h), 0, "min includes out-of-range values");
    ok(vb_histogram_max(h) == UINT64_MAX, "max includes out-of-range values");
    ok(rel_err(vb_histogram_value_at_percentile(h, 0), VB_HIST_MIN_NS) <= DESIGN_BOUND &&
       rel_err(vb_histogram_value_at_percentile(h, 100), VB_HIST_MAX_NS) <= DESIGN_BOUND,
       "percentiles see only in-range values");
    is_double(vb_histogram_mean(h), (VB_HIST_MIN_NS + VB_HIST_MAX_NS) / 2.0, VB_HIST_MAX_NS * DESIGN_BOUND,
              "mean of in-range values only");
    vb_histogram_destroy(&h);
}

static void test_reset(void) {
    vb_histogram *h = vb_histogram_new(), *fresh = vb_histogram_new();
    for (int i = 0; i < 1000; i++) vb_histogram_record(h, log_uniform(1, VB_HIST_MAX_NS * 10));
    vb_histogram_reset(h);
    ok(same_histogram(h, fresh), "reset == new");
    is_int(vb_histogram_count(h) + vb_histogram_out_of_range(h) + vb_histogram_min(h) + vb_histogram_max(h), 0,
           "reset clears counts and extremes");
    vb_histogram_record(h, 123456);
    vb_histogram_record(fresh, 123456);
    ok(same_histogram(h, fresh), "records after reset behave as on a new histogram");
    is_int(vb_histogram_min(h), 123456, "min after reset");
    vb_histogram_destroy(&h);
    vb_histogram_destroy(&fresh);
}

int main(void) {
    test_empty();
    test_relative_error();
    test_percentiles();
    test_merge();
    test_sparse();
    test_out_of_range();
    test_reset();
    return done_testing();
}
