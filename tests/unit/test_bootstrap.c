/* Unit tests of metrics/bootstrap: the median, no interval below 5 repeats, an interval that lies within the
 * values and holds their median, the same bounds for the same values in any order, pinned bounds for a known
 * input (the interval is recorded data: changing the seed or the method changes them), and a lone outlier among
 * 7 repeats that does not move the upper bound; the SQL aggregates over it (store/views.c). */
#include <math.h>

#include <sqlite3.h>

#include "store/views.h"
#include "metrics/bootstrap.h"
#include "tests/tap.h"

/* One row of SQL over the aggregates (store/views.c): "lo hi", "NULL" for a NULL. */
static void sql_row(sqlite3 *db, const char *sql, char *out, size_t len) {
    sqlite3_stmt *st;
    snprintf(out, len, "error");
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return;
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *a = (const char *)sqlite3_column_text(st, 0), *b = (const char *)sqlite3_column_text(st, 1);
        snprintf(out, len, "%s %s", a ? a : "NULL", b ? b : "NULL");
    }
    sqlite3_finalize(st);
}

#define PIN_LO 200   /* measured once; the draws are fixed, so are they */
#define PIN_HI 700

int main(void) {
    double odd[] = {3, 1, 2}, even[] = {4, 1, 3, 2};
    ok(vb_bootstrap_median(odd, 3) == 2 && vb_bootstrap_median(even, 4) == 2.5, "median of 3 and of 4 values");

    double lo = -1, hi = -1;
    double four[] = {10, 20, 30, 40};
    ok(vb_bootstrap_median_ci(four, 4, &lo, &hi) == 0 && lo == -1 && hi == -1, "4 repeats: no interval");

    double five[] = {1200, 1000, 1100, 1300, 900};
    ok(vb_bootstrap_median_ci(five, 5, &lo, &hi) == 1, "5 repeats: an interval");
    ok(lo >= 900 && hi <= 1300 && lo <= hi, "within min-max: [%g, %g]", lo, hi);
    ok(lo <= 1100 && hi >= 1100, "holds the median 1100: [%g, %g]", lo, hi);
    /* with 5 values the median of a resample is the smallest one 5.8 % of the time: the interval is the range */
    ok(lo == 900 && hi == 1300, "5 repeats: the 95 %% interval is the range: [%g, %g]", lo, hi);

    double lo2, hi2, shuffled[] = {900, 1300, 1100, 1000, 1200};
    vb_bootstrap_median_ci(shuffled, 5, &lo2, &hi2);
    ok(lo2 == lo && hi2 == hi, "the same values in another order: the same bounds");
    vb_bootstrap_median_ci(five, 5, &lo2, &hi2);
    ok(lo2 == lo && hi2 == hi, "deterministic: the same bounds twice");

    double nine[] = {500, 100, 900, 300, 700, 200, 800, 400, 600};
    vb_bootstrap_median_ci(nine, 9, &lo2, &hi2);
    ok(lo2 == PIN_LO && hi2 == PIN_HI, "pinned bounds for 9 values 100..900: [%g, %g] (want [%g, %g])", lo2, hi2,
       (double)PIN_LO, (double)PIN_HI);

    double flat[] = {7, 7, 7, 7, 7, 7};
    ok(vb_bootstrap_median_ci(flat, 6, &lo, &hi) == 1 && lo == 7 && hi == 7, "equal values: a point interval");

    /* 4 of 7 draws must hit the outlier for a resample's median to move: p = 0.5 %, under the 2.5 % tail */
    double outlier[] = {10, 11, 12, 10, 11, 12, 1000};
    vb_bootstrap_median_ci(outlier, 7, &lo, &hi);
    ok(lo >= 10 && hi <= 12, "one outlier among 7 does not reach the interval: [%g, %g]", lo, hi);

    /* the SQL aggregates the interval views use: NULLs skipped, NULL below 5 values, the same bounds as above */
    sqlite3 *db;
    vb_error err;
    char row[128];
    ok(sqlite3_open(":memory:", &db) == SQLITE_OK && vb_views_functions(db, &err) == VB_OK, "the SQL functions register");
    sql_row(db, "SELECT vb_median_ci_lo(column1), vb_median_ci_hi(column1) FROM (VALUES (10.0), (20.0), (NULL), "
                "(30.0), (40.0))", row, sizeof row);
    is_str(row, "NULL NULL", "SQL: 4 values (and a NULL): no interval");
    sql_row(db, "SELECT vb_median_ci_lo(column1), vb_median_ci_hi(column1) FROM (VALUES (500), (100), (900), (300), "
                "(700), (200), (800), (400), (600))", row, sizeof row);
    is_str(row, "200.0 700.0", "SQL: the 9 values give the pinned bounds");
    sqlite3_close(db);
    done_testing();
}
