/* Queueing theory for the capacity phase's check (issue 37): the sojourn time (wait + service) of the M/D/c queue,
 * Poisson arrivals at rate lambda, c servers, a fixed service time D, first come first served; what the sleep engine
 * with `servers: c` is under the open loop's Poisson arrivals (engines/testing.c, docs/metrics.md "Capacity").
 *
 * Method (Crommelin 1932, in the form of Franx 2001, "A simple solution for the M/D/c waiting time distribution"):
 *   1. N(t), the number in the system, at times D apart is a Markov chain: every customer in service at t leaves by
 *      t + D and none that starts after t does, so N(t + D) = max(N(t) - c, 0) + A with A ~ Poisson(lambda D). Its
 *      stationary distribution (by iteration, truncated at MDC_STATES) is the time-stationary one, and by PASTA what
 *      an arrival sees.
 *   2. An arrival at tau waits at most w = kD + u (0 <= u < D) iff the customers ahead of it still present at tau + w
 *      are fewer than c. Counting from tau - (D - u), they are max(N - c, 0) + A' after one step, A' ~ Poisson(lambda
 *      (D - u)) the arrivals in (tau - (D - u), tau), and c fewer each further step, so
 *          P(W <= kD + u) = sum_{j=0}^{(k+1)c-1} P(A' = j) P(N <= (k+2)c - 1 - j).
 *   3. The sojourn quantile is the wait quantile + D (found by bisection on w), and the rate for a sojourn target by
 *      bisection on lambda in (0, c / D).
 * tests/unit/test_capacity.c checks it against a simulation of the FCFS c-server recursion (Kiefer-Wolfowitz). */
#ifndef VB_TESTS_MDC_H
#define VB_TESTS_MDC_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MDC_STATES 400

/* P(Poisson(m) = j) for j = 0 .. n-1 into p. */
static void mdc_poisson(double m, double *p, int n) {
    p[0] = exp(-m);
    for (int j = 1; j < n; j++) p[j] = p[j - 1] * m / j;
}

/* The stationary distribution of N into pi (MDC_STATES entries; the truncation's mass is put on the last state).
 * Returns 0, or -1 when the mass reaches the truncation (the queue is unstable or too close to it to matter here). */
static int mdc_stationary(double lambda, double d, int c, double *pi) {
    static double next[MDC_STATES], pa[MDC_STATES];
    double a = lambda * d;
    int na = (int)(a + 40 * sqrt(a) + 60);
    if (na > MDC_STATES) na = MDC_STATES;
    mdc_poisson(a, pa, na);
    /* the iteration starts from the last distribution computed (a bisection's next rate is close to its last), or
     * from an empty system */
    static double last[MDC_STATES];
    static int have_last;
    if (have_last) memcpy(pi, last, sizeof last);
    else memset(pi, 0, MDC_STATES * sizeof *pi), pi[0] = 1;
    for (int it = 0; it < 200000; it++) {
        memset(next, 0, sizeof next);
        for (int i = 0; i < MDC_STATES; i++) {
            if (pi[i] < 1e-300) continue;
            int base = i > c ? i - c : 0;
            for (int j = 0; j < na; j++) {
                int s = base + j < MDC_STATES ? base + j : MDC_STATES - 1;
                next[s] += pi[i] * pa[j];
            }
        }
        double diff = 0;
        for (int i = 0; i < MDC_STATES; i++) diff += fabs(next[i] - pi[i]);
        memcpy(pi, next, sizeof next);
        if (pi[MDC_STATES - 1] > 1e-9) {
            have_last = 0;
            return -1;
        }
        if (diff < 1e-11) break;
    }
    memcpy(last, pi, sizeof last);
    have_last = 1;
    return 0;
}

/* P(W <= w) from the stationary distribution pi (step 2). */
static double mdc_wait_cdf(const double *pi, double lambda, double d, int c, double w) {
    static double cum[MDC_STATES], pa[MDC_STATES];
    double x = 0;
    for (int i = 0; i < MDC_STATES; i++) cum[i] = (x += pi[i]);
    int k = (int)floor(w / d);
    double u = w - k * d;
    int top = (k + 1) * c;   /* j < top */
    if (top > MDC_STATES) top = MDC_STATES;
    mdc_poisson(lambda * (d - u), pa, top);
    double p = 0;
    for (int j = 0; j < top; j++) {
        int n = (k + 2) * c - 1 - j;
        p += pa[j] * (n >= MDC_STATES ? 1.0 : cum[n]);
    }
    return p;
}

/* The q-quantile of the sojourn time (wait + d) at rate lambda (< c / d). */
static double mdc_sojourn_quantile(double lambda, double d, int c, double q) {
    static double pi[MDC_STATES];
    if (lambda * d >= c || mdc_stationary(lambda, d, c, pi) != 0) return INFINITY;
    if (mdc_wait_cdf(pi, lambda, d, c, 0) >= q) return d;
    double lo = 0, hi = d;
    while (mdc_wait_cdf(pi, lambda, d, c, hi) < q) lo = hi, hi *= 2;
    for (int i = 0; i < 60; i++) {
        double mid = (lo + hi) / 2;
        if (mdc_wait_cdf(pi, lambda, d, c, mid) >= q) hi = mid;
        else lo = mid;
    }
    return hi + d;
}

/* The highest rate whose sojourn q-quantile is at most target (target > d). */
static double mdc_rate_for(double d, int c, double target, double q) {
    double lo = 0, hi = c / d;
    for (int i = 0; i < 26; i++) {   /* (c / d) / 2^26: far below the 10 % the tests allow */
        double mid = (lo + hi) / 2;
        if (mdc_sojourn_quantile(mid, d, c, q) <= target) lo = mid;
        else hi = mid;
    }
    return lo;
}

#endif
