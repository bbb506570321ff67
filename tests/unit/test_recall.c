/* Unit tests of metrics/recall (and the distances it is built on), on tiny corpora whose distances are worked
 * out by hand in the comments: ties at d_k, the 1e-3 threshold, repeated ids (scored as misses), short answers,
 * filtered ground truth with -1 padding, each metric, and where distance recall and id overlap part ways. */
#include <stdint.h>
#include <stdlib.h>

#include "datasets/distance.h"
#include "metrics/recall.h"
#include "tests/tap.h"

#define TOL 1e-12

/* Scores one answer; returns the status and fills *one (zeroed first) and err. */
static int score(const float *corpus, size_t n_rows, vb_metric m, const float *q, const int64_t *ret, int n_ret,
                 const int64_t *true_ids, const float *true_dists, int k, vb_recall_one *one, vb_error *err) {
    memset(one, 0, sizeof *one);
    vb_error_clear(err);
    return vb_recall_query(corpus, n_rows, 2, m, q, ret, n_ret, true_ids, true_dists, k, one, err);
}

static void test_distance(void) {
    const float o[2] = {0, 0}, x[2] = {1, 0}, y[2] = {0, 1}, p34[2] = {3, 4}, d[2] = {0.8f, 0.6f},
                neg[2] = {-1, 0}, x2[2] = {2, 0};
    is_double(vb_distance(VB_METRIC_EUCLIDEAN, o, p34, 2), 5.0, TOL, "euclidean (0,0)-(3,4) = 5, not squared");
    is_double(vb_distance(VB_METRIC_ANGULAR, x, x, 2), 0.0, TOL, "angular: same direction 0");
    is_double(vb_distance(VB_METRIC_ANGULAR, x, x2, 2), 0.0, TOL, "angular ignores the norm");
    is_double(vb_distance(VB_METRIC_ANGULAR, x, y, 2), 1.0, TOL, "angular: orthogonal 1");
    is_double(vb_distance(VB_METRIC_ANGULAR, x, neg, 2), 2.0, TOL, "angular: opposite 2");
    is_double(vb_distance(VB_METRIC_ANGULAR, x, d, 2), 0.2, 1e-6, "angular (1,0)-(0.8,0.6) = 1 - 0.8");
    is_double(vb_distance(VB_METRIC_ANGULAR, x, o, 2), 1.0, 0, "angular with a zero vector is 1 (documented)");
    is_double(vb_distance(VB_METRIC_ANGULAR, o, o, 2), 1.0, 0, "angular of two zero vectors is 1");
    const float a3[3] = {1, 2, 3}, b3[3] = {4, 5, 6};
    is_double(vb_distance(VB_METRIC_DOT, a3, b3, 3), -32.0, TOL, "dot: -(4 + 10 + 18)");
    is_double(vb_distance(VB_METRIC_EUCLIDEAN, a3, b3, 3), sqrt(27.0), TOL, "euclidean in 3-d: sqrt(27)");
    /* double accumulation: 1e8 + 1 - 1e8 is lost in float, kept in double */
    const float big[3] = {1e4f, 1, 1e4f}, big2[3] = {1e4f, 1, -1e4f};
    is_double(vb_distance(VB_METRIC_DOT, big, big2, 3), -1.0, 0, "dot accumulates in double (1e8 + 1 - 1e8)");
    ok(isnan(vb_distance((vb_metric)7, x, y, 2)), "an unknown metric gives NaN");

    vb_metric m = VB_METRIC_DOT;
    ok(vb_metric_parse("angular", &m) == 0 && m == VB_METRIC_ANGULAR, "parse angular");
    m = VB_METRIC_DOT;
    ok(vb_metric_parse("cosine", &m) == 0 && m == VB_METRIC_ANGULAR, "parse cosine");
    ok(vb_metric_parse("euclidean", &m) == 0 && m == VB_METRIC_EUCLIDEAN, "parse euclidean");
    m = VB_METRIC_DOT;
    ok(vb_metric_parse("L2", &m) == 0 && m == VB_METRIC_EUCLIDEAN, "parse L2 (any case)");
    ok(vb_metric_parse("dot", &m) == 0 && m == VB_METRIC_DOT, "parse dot");
    m = VB_METRIC_ANGULAR;
    ok(vb_metric_parse("ip", &m) == 0 && m == VB_METRIC_DOT, "parse ip");
    m = VB_METRIC_ANGULAR;
    ok(vb_metric_parse("inner_product", &m) == 0 && m == VB_METRIC_DOT, "parse inner_product");
    m = VB_METRIC_EUCLIDEAN;
    ok(vb_metric_parse("hamming", &m) == -1 && m == VB_METRIC_EUCLIDEAN, "hamming refused, output untouched");
    ok(vb_metric_parse("", &m) == -1 && vb_metric_parse(NULL, &m) == -1, "empty and NULL refused");
    is_str(vb_metric_name(VB_METRIC_ANGULAR), "angular", "name angular");
    is_str(vb_metric_name(VB_METRIC_EUCLIDEAN), "euclidean", "name euclidean");
    is_str(vb_metric_name(VB_METRIC_DOT), "dot", "name dot");
}

/* Euclidean, query (0,0), k = 3. Distances are the x coordinates (or y for row 3):
 *   row 0 (1,0) d 1 | row 1 (2,0) d 2 | row 2 (3,0) d 3 = d_k | row 3 (0,3) d 3 (tie, other id)
 *   row 4 (3.0009,0) d_k + 0.0009: counts | row 5 (3.0011,0) d_k + 0.0011: does not | row 6 (10,0) far
 * True top-3: {0, 1, 2}, distances {1, 2, 3}; threshold 3.001. */
static const float E_CORPUS[] = {1, 0, 2, 0, 3, 0, 0, 3, 3.0009f, 0, 3.0011f, 0, 10, 0};
#define E_ROWS 7
static const float E_Q[2] = {0, 0};
static const int64_t E_TRUE[3] = {0, 1, 2};
static const float E_DIST[3] = {1, 2, 3};

static void expect(const int64_t *ret, int n, double recall, double overlap, int short_answer, const char *what) {
    vb_recall_one one;
    vb_error err;
    int rc = score(E_CORPUS, E_ROWS, VB_METRIC_EUCLIDEAN, E_Q, ret, n, E_TRUE, E_DIST, 3, &one, &err);
    ok(rc == VB_OK && fabs(one.recall - recall) <= TOL && fabs(one.id_overlap - overlap) <= TOL &&
           one.short_answer == short_answer && one.returned == n && one.expected == 3,
       "euclidean %s: recall %.4f (want %.4f), overlap %.4f (want %.4f), short %d, rc %d %s", what, one.recall,
       recall, one.id_overlap, overlap, one.short_answer, rc, rc ? err.message : "");
}

static void test_euclidean(void) {
    expect((int64_t[]){0, 1, 2}, 3, 1, 1, 0, "exact answer");
    expect((int64_t[]){2, 0, 1}, 3, 1, 1, 0, "exact answer in another order");
    expect((int64_t[]){0, 1, 3}, 3, 1, 2.0 / 3, 0, "tie at d_k with a different id (distance 1, overlap 2/3)");
    expect((int64_t[]){0, 1, 4}, 3, 1, 2.0 / 3, 0, "row at d_k + 0.0009 counts");
    expect((int64_t[]){0, 1, 5}, 3, 2.0 / 3, 2.0 / 3, 0, "row at d_k + 0.0011 does not count");
    expect((int64_t[]){3, 4, 5}, 3, 2.0 / 3, 0, 0, "d_k, d_k + 0.0009, d_k + 0.0011: 2 of 3 count, no id in common");
    expect((int64_t[]){0, 3, 4}, 3, 1, 1.0 / 3, 0, "all within threshold, one true id");
    expect((int64_t[]){6, 5, 0}, 3, 1.0 / 3, 1.0 / 3, 0, "one hit of three");
    expect((int64_t[]){0, 1}, 2, 2.0 / 3, 2.0 / 3, 1, "short answer of 2: missing row is a miss");
    expect((int64_t[]){4}, 1, 1.0 / 3, 0, 1, "short answer of 1 substitute");
    expect(NULL, 0, 0, 0, 1, "empty answer");

    /* A stored d_k rounded below the true one (float32 files) must not cost the true k-th neighbour. */
    vb_recall_one one;
    vb_error err;
    const float low[3] = {1, 2, 2.9985f};
    int rc = score(E_CORPUS, E_ROWS, VB_METRIC_EUCLIDEAN, E_Q, (int64_t[]){0, 1, 2}, 3, E_TRUE, low, 3, &one, &err);
    ok(rc == VB_OK && one.recall == 1.0, "stored d_k below the recomputed one: the true k-th row still counts");
    rc = score(E_CORPUS, E_ROWS, VB_METRIC_EUCLIDEAN, E_Q, (int64_t[]){0, 1, 4}, 3, E_TRUE, low, 3, &one, &err);
    ok(rc == VB_OK && one.recall == 1.0, "and the threshold is from the recomputed d_k (3.0009 counts)");
    rc = score(E_CORPUS, E_ROWS, VB_METRIC_EUCLIDEAN, E_Q, (int64_t[]){0, 1, 5}, 3, E_TRUE, NULL, 3, &one, &err);
    ok(rc == VB_OK && fabs(one.recall - 2.0 / 3) <= TOL, "true_dists NULL: recomputed d_k alone");
    /* A larger stored d_k (another implementation's rounding) is the ann-benchmarks value and is kept. */
    const float high[3] = {1, 2, 3.001f};
    rc = score(E_CORPUS, E_ROWS, VB_METRIC_EUCLIDEAN, E_Q, (int64_t[]){0, 1, 5}, 3, E_TRUE, high, 3, &one, &err);
    ok(rc == VB_OK && one.recall == 1.0, "stored d_k above the recomputed one is used (3.0011 <= 3.001f + 1e-3)");
}

/* Repeated ids: scored on the distinct ids, each repeat a miss; counted, named, never an error. */
static void expect_dup(const int64_t *ret, int n, double recall, double overlap, int short_answer, int duplicates,
                       int64_t id, int row0, int row1, const char *what) {
    vb_recall_one one;
    vb_error err;
    int rc = score(E_CORPUS, E_ROWS, VB_METRIC_EUCLIDEAN, E_Q, ret, n, E_TRUE, E_DIST, 3, &one, &err);
    ok(rc == VB_OK && fabs(one.recall - recall) <= TOL && fabs(one.id_overlap - overlap) <= TOL &&
           one.short_answer == short_answer && one.returned == n && one.expected == 3 &&
           one.duplicates == duplicates && one.duplicate_id == id && one.duplicate_rows[0] == row0 &&
           one.duplicate_rows[1] == row1,
       "euclidean %s: recall %.4f (want %.4f), overlap %.4f (want %.4f), short %d, %d duplicates, id %lld at rows "
       "%d and %d, rc %d %s", what, one.recall, recall, one.id_overlap, overlap, one.short_answer, one.duplicates,
       (long long)one.duplicate_id, one.duplicate_rows[0], one.duplicate_rows[1], rc, rc ? err.message : "");
}

static void test_duplicates(void) {
    expect_dup((int64_t[]){0, 2, 0}, 3, 2.0 / 3, 2.0 / 3, 1, 1, 0, 0, 2,
               "id 0 twice: 2 distinct true neighbours of 3, short");
    expect_dup((int64_t[]){0, 0, 1}, 3, 2.0 / 3, 2.0 / 3, 1, 1, 0, 0, 1,
               "a repeated true neighbour is not a second hit (not 3/3)");
    expect_dup((int64_t[]){4, 3, 4}, 3, 2.0 / 3, 0, 1, 1, 4, 0, 2,
               "a repeated row within d_k + 1e-3 counts once (not 3/3)");
    expect_dup((int64_t[]){1, 1, 1}, 3, 1.0 / 3, 1.0 / 3, 1, 2, 1, 0, 1,
               "one id three times: two repeats, the first at row 1");
    expect_dup((int64_t[]){5, 5}, 2, 0, 0, 1, 1, 5, 0, 1, "a repeat in a short answer");
    expect_dup((int64_t[]){2, 1, 0}, 3, 1, 1, 0, 0, 0, 0, 0, "no repeat: nothing named");

    /* Filtered: 2 true ids (expected 2). Two distinct right ids and a repeat fill the answer: not short. */
    const float c[] = {1, 0, 2, 0, 1.5f, 0, 5, 0};
    const float q[2] = {0, 0};
    const int64_t t[3] = {0, 1, -1};
    vb_recall_one one;
    vb_error err;
    int rc = score(c, 4, VB_METRIC_EUCLIDEAN, q, (int64_t[]){0, 1, 0}, 3, t, NULL, 3, &one, &err);
    ok(rc == VB_OK && one.recall == 1 && one.id_overlap == 1 && !one.short_answer && one.duplicates == 1,
       "filtered, 2 pass: {0, 1, 0} finds both, is not short, has 1 duplicate");
    rc = score(c, 4, VB_METRIC_EUCLIDEAN, q, (int64_t[]){1, 1}, 2, t, NULL, 3, &one, &err);
    ok(rc == VB_OK && one.recall == 0.5 && one.id_overlap == 0.5 && one.short_answer && one.duplicates == 1,
       "filtered, 2 pass: {1, 1} is 1 of 2 and short");
    const int64_t none[3] = {-1, -1, -1};
    rc = score(c, 4, VB_METRIC_EUCLIDEAN, q, (int64_t[]){3, 3}, 2, none, NULL, 3, &one, &err);
    ok(rc == VB_OK && one.recall == 1 && !one.short_answer && one.duplicates == 1 && one.duplicate_id == 3,
       "no row passes: a repeat is still counted");
}

static void test_errors(void) {
    vb_recall_one one;
    vb_error err;
    int rc = score(E_CORPUS, E_ROWS, VB_METRIC_EUCLIDEAN, E_Q, (int64_t[]){0, 7, 1}, 3, E_TRUE, E_DIST, 3, &one, &err);
    is_int(rc, VB_ERROR, "id == n_rows is an error");
    contains(err.message, "returned id 7", "the message names the id");
    rc = score(E_CORPUS, E_ROWS, VB_METRIC_EUCLIDEAN, E_Q, (int64_t[]){0, -1, 1}, 3, E_TRUE, E_DIST, 3, &one, &err);
    ok(rc == VB_ERROR && strstr(err.message, "returned id -1"), "negative id is an error: %s", err.message);
    rc = score(E_CORPUS, E_ROWS, VB_METRIC_EUCLIDEAN, E_Q, (int64_t[]){0, 1, 2, 3}, 4, E_TRUE, E_DIST, 3, &one, &err);
    ok(rc == VB_ERROR && strstr(err.message, "more than k"), "more than k rows is an error: %s", err.message);
    rc = score(E_CORPUS, E_ROWS, VB_METRIC_EUCLIDEAN, E_Q, (int64_t[]){0}, 1, (int64_t[]){0, 9, 1}, E_DIST, 3, &one,
               &err);
    ok(rc == VB_ERROR && strstr(err.message, "ground truth id 9"), "true id out of range: %s", err.message);
    rc = score(E_CORPUS, E_ROWS, VB_METRIC_EUCLIDEAN, E_Q, (int64_t[]){0}, 1, (int64_t[]){0, -1, 1}, E_DIST, 3, &one,
               &err);
    ok(rc == VB_ERROR && strstr(err.message, "padding"), "true id after -1 padding: %s", err.message);
    rc = score(E_CORPUS, E_ROWS, VB_METRIC_EUCLIDEAN, E_Q, (int64_t[]){0}, 1, (int64_t[]){1, 0, 1}, E_DIST, 3, &one,
               &err);
    ok(rc == VB_ERROR && strstr(err.message, "ground truth lists id 1 twice"), "duplicate true id: %s", err.message);
    rc = score(E_CORPUS, E_ROWS, VB_METRIC_EUCLIDEAN, E_Q, NULL, 0, E_TRUE, E_DIST, 0, &one, &err);
    ok(rc == VB_ERROR && strstr(err.message, "k must be"), "k = 0 is an error: %s", err.message);
    rc = score(E_CORPUS, E_ROWS, VB_METRIC_EUCLIDEAN, E_Q, (int64_t[]){0, 0, 1, 2}, 4, E_TRUE, E_DIST, 3, &one,
               &err);
    ok(rc == VB_ERROR && strstr(err.message, "more than k"), "more than k rows with a repeat is still an error: %s",
       err.message);
    one.recall = 0.5;
    rc = vb_recall_query(E_CORPUS, E_ROWS, 2, VB_METRIC_EUCLIDEAN, E_Q, (int64_t[]){1, 9}, 2, E_TRUE, E_DIST, 3,
                         &one, NULL);
    ok(rc == VB_ERROR && one.recall == 0.5, "err may be NULL, and on error out is left untouched");
}

/* Angular, query (1,0), k = 3:
 *   row 0 (1,0) d 0 | row 1 (2,0) d 0 (same direction, longer) | row 2 (0.8,0.6) d 0.2 = d_k
 *   row 3 (0,1) d 1 | row 4 (-1,0) d 2 | row 5 (0,0) zero vector: d 1 by definition
 *   row 6 (0.8,0.6006): cos = 0.8 / 1.0003599 = 0.79971..., d = 0.20029 = d_k + 0.0003: counts
 *   row 7 (0.8,0.603):  cos = 0.8 / 1.0018 = 0.79856..., d = 0.20144 = d_k + 0.0014: does not
 * True top-3 {0, 1, 2}, distances {0, 0, 0.2}. */
static void test_angular(void) {
    const float c[] = {1, 0, 2, 0, 0.8f, 0.6f, 0, 1, -1, 0, 0, 0, 0.8f, 0.6006f, 0.8f, 0.603f};
    const float q[2] = {1, 0};
    const int64_t t[3] = {0, 1, 2};
    const float td[3] = {0, 0, 0.2f};
    is_double(vb_distance(VB_METRIC_ANGULAR, q, c + 12, 2), 0.20029, 1e-5, "angular row 6 is at d_k + 0.0003");
    is_double(vb_distance(VB_METRIC_ANGULAR, q, c + 14, 2), 0.20144, 1e-5, "angular row 7 is at d_k + 0.0014");
    struct { int64_t ret[3]; int n; double recall, overlap; const char *what; } cases[] = {
        {{0, 1, 2}, 3, 1, 1, "exact"},
        {{1, 0, 6}, 3, 1, 2.0 / 3, "row at d_k + 0.0003 counts"},
        {{0, 1, 7}, 3, 2.0 / 3, 2.0 / 3, "row at d_k + 0.0014 does not"},
        {{0, 1, 5}, 3, 2.0 / 3, 2.0 / 3, "the zero vector is at distance 1"},
        {{3, 4, 5}, 3, 0, 0, "all wrong"},
        {{2}, 1, 1.0 / 3, 1.0 / 3, "short"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vb_recall_one one;
        vb_error err;
        int rc = score(c, 8, VB_METRIC_ANGULAR, q, cases[i].ret, cases[i].n, t, td, 3, &one, &err);
        ok(rc == VB_OK && fabs(one.recall - cases[i].recall) <= TOL && fabs(one.id_overlap - cases[i].overlap) <= TOL,
           "angular %s: recall %.4f overlap %.4f", cases[i].what, one.recall, one.id_overlap);
    }
}

/* Dot, query (1,1), k = 2; distance = -(x + y):
 *   row 0 (3,3) d -6 | row 1 (2,2) d -4 = d_k | row 2 (1,3) d -4 (tie, other id)
 *   row 3 (0,0) d 0 | row 4 (1,2.9995) d -3.9995 = d_k + 0.0005: counts | row 5 (1,2.9985) d_k + 0.0015: does not
 * True top-2 {0, 1}, distances {-6, -4}; threshold -3.999. */
static void test_dot(void) {
    const float c[] = {3, 3, 2, 2, 1, 3, 0, 0, 1, 2.9995f, 1, 2.9985f};
    const float q[2] = {1, 1};
    const int64_t t[2] = {0, 1};
    const float td[2] = {-6, -4};
    struct { int64_t ret[2]; int n; double recall, overlap; const char *what; } cases[] = {
        {{0, 1}, 2, 1, 1, "exact"},
        {{0, 2}, 2, 1, 0.5, "tie substitutes another id: recall 1, overlap 1/2"},
        {{4, 0}, 2, 1, 0.5, "row at d_k + 0.0005 counts"},
        {{0, 5}, 2, 0.5, 0.5, "row at d_k + 0.0015 does not"},
        {{3, 5}, 2, 0, 0, "all wrong"},
        {{1}, 1, 0.5, 0.5, "short"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vb_recall_one one;
        vb_error err;
        int rc = score(c, 6, VB_METRIC_DOT, q, cases[i].ret, cases[i].n, t, td, 2, &one, &err);
        ok(rc == VB_OK && fabs(one.recall - cases[i].recall) <= TOL && fabs(one.id_overlap - cases[i].overlap) <= TOL,
           "dot %s: recall %.4f overlap %.4f", cases[i].what, one.recall, one.id_overlap);
    }
}

/* Filtered ground truth, euclidean, query (0,0), k = 3. Only rows 0 (1,0) and 1 (2,0) pass the filter, so
 * true_ids = {0, 1, -1}, expected = 2, d_k = 2. Row 2 (1.5,0) is close but fails the filter; row 3 (5,0) too. */
static void test_filtered(void) {
    const float c[] = {1, 0, 2, 0, 1.5f, 0, 5, 0};
    const float q[2] = {0, 0};
    const int64_t t[3] = {0, 1, -1};
    const float td[3] = {1, 2, INFINITY};
    struct { int64_t ret[3]; int n; double recall, overlap; int short_answer; const char *what; } cases[] = {
        {{0, 1}, 2, 1, 1, 0, "both filtered rows: perfect, not short"},
        {{1, 0, 3}, 3, 1, 1, 0, "an extra far row beyond the filter is not penalised"},
        {{0, 2, 1}, 3, 1, 1, 0, "three rows within d_k: count capped at expected"},
        {{0, 2}, 2, 1, 0.5, 0, "a close row that fails the filter: recall 1, overlap 1/2 shows it"},
        {{0}, 1, 0.5, 0.5, 1, "one row of two: short"},
        {{3}, 1, 0, 0, 1, "one wrong row"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vb_recall_one one;
        vb_error err;
        int rc = score(c, 4, VB_METRIC_EUCLIDEAN, q, cases[i].ret, cases[i].n, t, td, 3, &one, &err);
        ok(rc == VB_OK && one.expected == 2 && fabs(one.recall - cases[i].recall) <= TOL &&
               fabs(one.id_overlap - cases[i].overlap) <= TOL && one.short_answer == cases[i].short_answer,
           "filtered %s: recall %.4f overlap %.4f short %d", cases[i].what, one.recall, one.id_overlap,
           one.short_answer);
    }
    /* No row passes the filter: nothing to find. */
    const int64_t none[3] = {-1, -1, -1};
    vb_recall_one one;
    vb_error err;
    int rc = score(c, 4, VB_METRIC_EUCLIDEAN, q, NULL, 0, none, NULL, 3, &one, &err);
    ok(rc == VB_OK && one.recall == 1 && one.id_overlap == 1 && one.expected == 0 && !one.short_answer,
       "no row passes: empty answer scores 1, not short");
    rc = score(c, 4, VB_METRIC_EUCLIDEAN, q, (int64_t[]){3}, 1, none, NULL, 3, &one, &err);
    ok(rc == VB_OK && one.recall == 1 && one.returned == 1, "no row passes: rows returned anyway are not scored");
}

/* k above the on-stack buffer: 300 rows on a line, the answer in reverse order. */
static void test_large_k(void) {
    enum { K = 300 };
    float *c = calloc(2 * K, sizeof *c);
    int64_t *t = malloc(K * sizeof *t), *ret = malloc(K * sizeof *ret);
    for (int i = 0; i < K; i++) {
        c[2 * i] = (float)i;
        t[i] = i;
        ret[i] = K - 1 - i;
    }
    const float q[2] = {-1, 0};
    vb_recall_one one;
    vb_error err;
    int rc = score(c, K, VB_METRIC_EUCLIDEAN, q, ret, K, t, NULL, K, &one, &err);
    ok(rc == VB_OK && one.recall == 1 && one.id_overlap == 1, "k = 300, reversed answer: 1.0");
    /* Two repeats: id 149 at rows 150 and 200, id 299 at rows 0 and 20. The first in answer order is row 20,
     * though 149 is the smaller id (the sorted copy would meet it first). 298 distinct ids of 300. */
    ret[200] = ret[150];
    ret[20] = ret[0];
    rc = score(c, K, VB_METRIC_EUCLIDEAN, q, ret, K, t, NULL, K, &one, &err);
    ok(rc == VB_OK && one.duplicates == 2 && one.duplicate_id == 299 && one.duplicate_rows[0] == 0 &&
           one.duplicate_rows[1] == 20 && one.short_answer && fabs(one.recall - 298.0 / K) <= TOL &&
           fabs(one.id_overlap - 298.0 / K) <= TOL,
       "k = 300, two repeats: recall %.4f, overlap %.4f, %d duplicates, first id %lld at rows %d and %d",
       one.recall, one.id_overlap, one.duplicates, (long long)one.duplicate_id, one.duplicate_rows[0],
       one.duplicate_rows[1]);
    free(c), free(t), free(ret);
}

static void test_sums(void) {
    vb_recall_sum s = {0};
    is_double(vb_recall_sum_mean(&s), 0, 0, "empty sum: mean 0");
    is_double(vb_recall_sum_mean_overlap(&s), 0, 0, "empty sum: mean overlap 0");
    vb_recall_one a = {.recall = 1.0, .id_overlap = 1.0, .returned = 3, .expected = 3},
                  b = {.recall = 2.0 / 3, .id_overlap = 1.0 / 3, .returned = 3, .expected = 3},
                  c = {.recall = 1.0 / 3, .id_overlap = 1.0 / 3, .returned = 1, .short_answer = 1, .expected = 3};
    vb_recall_sum_add(&s, &a);
    vb_recall_sum_add(&s, &b);
    vb_recall_sum_add(&s, &c);
    is_double(vb_recall_sum_mean(&s), 2.0 / 3, TOL, "mean recall (1 + 2/3 + 1/3) / 3");
    is_double(vb_recall_sum_mean_overlap(&s), 5.0 / 9, TOL, "mean overlap (1 + 1/3 + 1/3) / 3");
    is_int(s.queries, 3, "queries");
    is_int(s.short_answers, 1, "short answers");
    is_int(s.rows_returned, 7, "rows returned");
    is_int(s.duplicate_answers, 0, "no duplicate answers yet");

    /* Answers with repeats, scored for real and summed: {1, 1, 1} (1/3, two repeats) and {0, 2, 0} (2/3, one). */
    vb_recall_one d, e;
    vb_error err;
    int rc = score(E_CORPUS, E_ROWS, VB_METRIC_EUCLIDEAN, E_Q, (int64_t[]){1, 1, 1}, 3, E_TRUE, E_DIST, 3, &d, &err);
    rc |= score(E_CORPUS, E_ROWS, VB_METRIC_EUCLIDEAN, E_Q, (int64_t[]){0, 2, 0}, 3, E_TRUE, E_DIST, 3, &e, &err);
    is_int(rc, VB_OK, "two answers with repeats scored");
    vb_recall_sum_add(&s, &d);
    vb_recall_sum_add(&s, &e);
    is_double(vb_recall_sum_mean(&s), (1 + 2.0 / 3 + 1.0 / 3 + 1.0 / 3 + 2.0 / 3) / 5, TOL,
              "mean recall over 5, the repeats as misses");
    is_double(vb_recall_sum_mean_overlap(&s), (1 + 1.0 / 3 + 1.0 / 3 + 1.0 / 3 + 2.0 / 3) / 5, TOL,
              "mean overlap over 5");
    is_int(s.queries, 5, "queries with the repeats");
    is_int(s.short_answers, 3, "answers with repeats are short (fewer than k distinct ids)");
    is_int(s.duplicate_answers, 2, "duplicate answers: 2 (an answer with two repeats counts once)");
    is_int(s.rows_returned, 13, "rows returned count the repeats");
}

/* The distribution of per-query recall (recall.h): nearest-rank percentiles over the exact values, the shares, NaN
 * left out, and the values of two workers (or repeats) merged summarising as one set. */
static void test_distribution(void) {
    vb_error err;
    vb_recall_dist d;
    /* 20 queries at k = 10, out of order: 0 once, 0.3 once, 0.6 twice, 0.9 six times, 1 ten times. Sorted, rank
     * ceil(0.01 x 20) = 1 is 0, rank ceil(0.1 x 20) = 2 is 0.3, rank ceil(0.5 x 20) = 10 is 0.9 (ranks 5-10). */
    double v[20];
    for (int i = 0; i < 20; i++) v[i] = 1.0;
    v[7] = 0.9, v[3] = 0.9, v[11] = 0.9, v[12] = 0.9, v[19] = 0.9, v[0] = 0.9;
    v[5] = 0.6, v[14] = 0.6, v[9] = 0.3, v[16] = 0.0;
    is_int(vb_recall_dist_of(v, 20, &d, &err), VB_OK, "20 values summarised");
    is_int(d.queries, 20, "20 queries");
    is_double(d.min, 0.0, 0, "min 0");
    is_double(d.p1, 0.0, 0, "p1: rank 1 of 20 is 0");
    is_double(d.p10, 0.3, 0, "p10: rank 2 of 20 is 0.3");
    is_double(d.p50, 0.9, 0, "p50: rank 10 of 20 is 0.9 (nearest rank, not the mean of ranks 10 and 11)");
    is_double(d.zero_share, 0.05, 1e-15, "zero share 1 / 20");
    is_double(d.below_half_share, 0.1, 1e-15, "below 0.5: 0 and 0.3, 2 / 20");

    /* 200 queries: rank ceil(0.01 x 200) = 2, so p1 is the second lowest, above the minimum */
    double w[200];
    for (int i = 0; i < 200; i++) w[i] = 1.0;
    w[150] = 0.0, w[40] = 0.1, w[41] = 0.5, w[42] = 0.5;
    is_int(vb_recall_dist_of(w, 200, &d, &err), VB_OK, "200 values summarised");
    is_double(d.min, 0.0, 0, "200: min 0");
    is_double(d.p1, 0.1, 0, "200: p1 is rank 2, 0.1");
    is_double(d.p10, 1.0, 0, "200: p10 is rank 20, 1.0");
    is_double(d.below_half_share, 2.0 / 200, 1e-15, "200: 0.5 itself is not below 0.5");

    /* exact values that are not multiples of 1/k (a filtered ground truth of 3 rows, a window's mean of answers),
     * and NaN (not answered) left out */
    double f[6] = {2.0 / 3, NAN, 1.0 / 3, 1.0, 0.55, NAN};
    is_int(vb_recall_dist_of(f, 6, &d, &err), VB_OK, "values with NaN summarised");
    is_int(d.queries, 4, "NaN left out: 4 queries");
    is_double(d.p50, 0.55, 0, "p50 of {1/3, 0.55, 2/3, 1}: rank 2, 0.55 exactly");
    is_double(d.min, 1.0 / 3, 0, "min 1/3 exactly");
    is_double(d.below_half_share, 0.25, 0, "below 0.5: 1 of 4");

    /* a perfect engine: every percentile 1, no zero */
    double one[7] = {1, 1, 1, 1, 1, 1, 1};
    is_int(vb_recall_dist_of(one, 7, &d, &err), VB_OK, "all-1 summarised");
    ok(d.min == 1 && d.p1 == 1 && d.p10 == 1 && d.p50 == 1 && d.zero_share == 0 && d.below_half_share == 0,
       "all recall 1: every percentile 1.0, shares 0");
    is_int(vb_recall_dist_of(NULL, 0, &d, &err), VB_OK, "nothing to summarise");
    ok(d.queries == 0 && d.min == 0 && d.p50 == 0, "empty: queries 0, fields 0");
    double nan2[2] = {NAN, NAN};
    is_int(vb_recall_dist_of(nan2, 2, &d, &err) == VB_OK && d.queries == 0, 1, "only NaN: queries 0");
    ok(isnan(vb_recall_percentile(NULL, 0, 50)), "a percentile of nothing is NaN");
    double s10[10] = {0, .1, .2, .3, .4, .5, .6, .7, .8, .9};
    is_double(vb_recall_percentile(s10, 10, 10), 0.0, 0, "n 10: p10 is rank 1");
    is_double(vb_recall_percentile(s10, 10, 50), 0.4, 0, "n 10: p50 is rank 5");
    is_double(vb_recall_percentile(s10, 10, 51), 0.5, 0, "n 10: p51 is rank 6");
    is_double(vb_recall_percentile(s10, 10, 100), 0.9, 0, "n 10: p100 is the maximum");

    /* Two workers' values (each query scored for real by one of them, interleaved as workers take queries) merged
     * equal one summary over all of them. */
    double all[101], *merged = NULL;
    size_t n_merged = 0;
    double a[51], b[50];
    size_t na = 0, nb = 0;
    for (int i = 0; i < 101; i++) {
        all[i] = (double)((i * 37) % 11 == 10 ? 0 : (i * 37) % 11) / 10.0;   /* 0 .. 1 in tenths, some zeros */
        if (i % 2) b[nb++] = all[i];
        else a[na++] = all[i];
    }
    is_int(vb_recall_dist_merge(&merged, &n_merged, a, na, &err), VB_OK, "worker 1's values merged");
    is_int(vb_recall_dist_merge(&merged, &n_merged, b, nb, &err), VB_OK, "worker 2's values merged");
    is_int(vb_recall_dist_merge(&merged, &n_merged, NULL, 0, &err), VB_OK, "nothing merged: no change");
    is_int(n_merged, 101, "101 values after the merge");
    vb_recall_dist whole, parts;
    vb_recall_dist_of(all, 101, &whole, &err);
    vb_recall_dist_of(merged, n_merged, &parts, &err);
    ok(memcmp(&whole, &parts, sizeof whole) == 0, "merged workers summarise exactly as one set: p1 %g p10 %g p50 %g "
       "min %g zero %g below %g", parts.p1, parts.p10, parts.p50, parts.min, parts.zero_share, parts.below_half_share);
    ok(whole.zero_share > 0 && whole.p50 > whole.p10, "the merged set has zeros and a spread (zero %g, p10 %g, p50 %g)",
       whole.zero_share, whole.p10, whole.p50);
    free(merged);
}

int main(void) {
    test_distribution();
    test_distance();
    test_euclidean();
    test_duplicates();
    test_errors();
    test_angular();
    test_dot();
    test_filtered();
    test_large_k();
    test_sums();
    return done_testing();
}
