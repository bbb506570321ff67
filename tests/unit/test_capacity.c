/* Self-test of the capacity search (metrics/capacity.h) against a model engine, and of the queueing theory the
 * end-to-end test checks the sleep engine against (tests/unit/mdc.h).
 *
 * The model engine is the M/D/c queue itself: a window at rate r has the M/D/c sojourn p99 at r (mdc.h, exact), every
 * scheduled arrival starts while r < c / D and only 90 % of them at or above it. So the rate the search must find for
 * a target is known (mdc_rate_for), and what is checked is the search: the rate sequence (the start, doubling until the
 * largest target fails, geometric bisection), the bracket it ends with (hi / lo <= 1 + precision around the theory),
 * several targets from one search (the windows shared), the confirmations and the knee, a target below the service
 * time (unreachable), a client that cannot offer the rate (refused, never a capacity), the client guard's three rules,
 * and the bound the estimate uses. Nothing here reads a clock. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "agent/workload.h"
#include "config/plan.h"
#include "coordinator/estimate.h"
#include "config/profile.h"
#include "proto/wire.h"
#include "engines/engine.h"
#include "metrics/capacity.h"
#include "tests/tap.h"
#include "tests/unit/mdc.h"

#define D 0.002   /* the service time, s */

typedef struct model {
    int c;
    double client_max;   /* > 0: a window at or above this rate is client-limited */
    int calls;
} model;

/* The theory's numbers, each computed once (a quantile costs a stationary distribution). */
static double p99_at(double rate, int c) {
    static struct { double rate; int c; double p99; } memo[512];
    static int n;
    for (int i = 0; i < n; i++)
        if (memo[i].rate == rate && memo[i].c == c) return memo[i].p99;
    double p = mdc_sojourn_quantile(rate, D, c, 0.99);
    if (n < 512) memo[n].rate = rate, memo[n].c = c, memo[n++].p99 = p;
    return p;
}

static double rate_for(double target_ms) {
    static double memo[3];
    int i = target_ms == 5 ? 0 : target_ms == 10 ? 1 : 2;
    if (!memo[i]) memo[i] = mdc_rate_for(D, 2, target_ms / 1e3, 0.99);
    return memo[i];
}

static vb_capacity_obs measure(model *m, double rate, vb_capacity_stage st, int target) {
    m->calls++;
    vb_capacity_obs o = {.rate = rate, .stage = st, .target = target, .scheduled = 1000};
    double p99 = p99_at(rate, m->c);
    o.started = isinf(p99) ? 900 : 1000;
    o.p99_ms = isinf(p99) ? 1e9 : p99 * 1e3;
    o.p50_ms = o.p99_ms / 2;
    o.p999_ms = o.p99_ms * 1.5;
    o.achieved = rate * (double)o.started / 1000.0;
    o.client_limited = m->client_max > 0 && rate >= m->client_max;
    return o;
}

/* Runs a whole search against m; rates[] gets the rates asked for (up to cap), stages[] their stages. */
static int run(vb_capacity_search *s, model *m, double *rates, vb_capacity_stage *stages, int cap) {
    double r;
    vb_capacity_stage st;
    int t, n = 0;
    while (vb_capacity_next(s, &r, &st, &t)) {
        if (n < cap) rates[n] = r, stages[n] = st;
        n++;
        vb_capacity_obs o = measure(m, r, st, t);
        vb_capacity_record(s, &o);
    }
    return n;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void test_theory(void) {
    /* the formula against a simulation of the FCFS c-server recursion: each arrival takes the server that frees first */
    unsigned long long x = 88172645463325252ull;
    const double lambda = 800;
    const int c = 2, n = 2000000;
    double free_at[2] = {0, 0}, t = 0;
    double *soj = malloc(n * sizeof *soj);
    for (int i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        t += -log1p(-(double)(x >> 11) * 0x1.0p-53) / lambda;
        int b = free_at[1] < free_at[0];
        double start = free_at[b] > t ? free_at[b] : t;
        free_at[b] = start + D;
        soj[i] = start + D - t;
    }
    qsort(soj, n, sizeof *soj, cmp_double);
    double sim = soj[(int)(0.99 * n)], th = mdc_sojourn_quantile(lambda, D, c, 0.99);
    free(soj);
    ok(fabs(sim - th) / th < 0.02, "M/D/2 at 800/s, D 2 ms: p99 sojourn by Crommelin's formula %.3f ms, by simulation of "
       "2,000,000 arrivals %.3f ms (within 2 %%)", th * 1e3, sim * 1e3);
    ok(mdc_sojourn_quantile(100, D, 1, 0.5) == D, "M/D/1 at 100/s: the median arrival finds the server free (sojourn = D)");
    ok(isinf(mdc_sojourn_quantile(1000, D, 2, 0.99)), "M/D/2 at c / D: unstable (infinite)");
}

static void test_one_target(void) {
    model m = {.c = 2};
    vb_capacity_search s;
    double targets[] = {10};
    vb_capacity_search_init(&s, targets, 1, 500, 0.05, 3);
    double rates[64];
    vb_capacity_stage st[64];
    int n = run(&s, &m, rates, st, 64);
    double th = rate_for(10);
    is_double(rates[0], 500, 1e-9, "the search starts at the start rate (the 1-client QPS)");
    is_double(rates[1], 500, 1e-9, "measured twice: two windows must agree on a rate's verdict");
    is_double(rates[2], 1000, 1e-9, "then doubles");
    ok(st[0] == VB_CAP_GROW && st[2] == VB_CAP_GROW && st[3] == VB_CAP_GROW, "growth windows");
    is_double(rates[4], sqrt(500.0 * 1000.0), 1e-9, "1000/s fails (c / D): the next is the geometric middle of 500 and 1000");
    ok(st[4] == VB_CAP_BISECT, "a bisection window");
    const vb_capacity_answer *a = &s.a[0];
    is_int(a->status, VB_CAP_FOUND, "found");
    ok(a->rate <= th && a->fail_rate > th, "the bracket holds the theory: met %.1f/s <= %.1f/s < failed %.1f/s", a->rate,
       th, a->fail_rate);
    ok(a->fail_rate / a->rate <= 1.05, "to the precision: %.1f / %.1f <= 1.05", a->fail_rate, a->rate);
    is_int(a->repeats, 3, "the found rate measured again 3 times");
    is_int(a->repeats_met, 3, "all 3 met it (the model is exact)");
    ok(a->knee_measured && fabs(a->knee_rate - 1.2 * a->rate) < 1e-9, "one knee window at 1.2 x the found rate");
    ok(a->knee_failed, "the knee window failed the target");
    int confirms = 0, knees = 0;
    for (int i = 0; i < n; i++) confirms += st[i] == VB_CAP_CONFIRM, knees += st[i] == VB_CAP_KNEE;
    ok(confirms == 3 && knees == 1 && st[n - 1] == VB_CAP_KNEE, "confirmations then the knee, last (%d windows)", n);
    ok(n <= vb_capacity_windows_bound(500, 1000, 0.05, 1, 3), "within the estimate's bound (%d <= %d)", n,
       vb_capacity_windows_bound(500, 1000, 0.05, 1, 3));
    is_int(vb_capacity_next(&s, &rates[0], &st[0], &(int){0}), 0, "the search is over");
}

static void test_targets(void) {
    model m = {.c = 2};
    vb_capacity_search s;
    double targets[] = {5, 10, 50};
    vb_capacity_search_init(&s, targets, 3, 100, 0.05, 2);
    double rates[96];
    vb_capacity_stage st[96];
    int n = run(&s, &m, rates, st, 96);
    int search = 0;
    for (int i = 0; i < n; i++) search += st[i] <= VB_CAP_DESCEND;
    int separate = 0;
    for (int t = 0; t < 3; t++) {
        double th = rate_for(targets[t]);
        const vb_capacity_answer *a = &s.a[t];
        ok(a->status == VB_CAP_FOUND && a->rate <= th && a->fail_rate > th && a->fail_rate / a->rate <= 1.05,
           "p99 <= %g ms: found %.1f/s, theory %.1f/s, failed %.1f/s", targets[t], a->rate, th, a->fail_rate);
        vb_capacity_search one;
        vb_capacity_search_init(&one, &targets[t], 1, 100, 0.05, 0);
        model m1 = {.c = 2};
        double r1[64];
        vb_capacity_stage s1[64];
        int n1 = run(&one, &m1, r1, s1, 64);
        separate += n1 - 1;   /* less its knee */
        ok(one.a[0].rate == a->rate, "p99 <= %g ms: the same rate as a search for it alone (%.1f/s)", targets[t],
           one.a[0].rate);
    }
    ok(search < separate, "one search for three targets shares its windows: %d search windows, %d for three searches",
       search, separate);
    ok(s.a[0].rate < s.a[1].rate && s.a[1].rate < s.a[2].rate, "a larger target, a higher rate");
    int confirms = 0;
    for (int i = 0; i < n; i++) confirms += st[i] == VB_CAP_CONFIRM;
    is_int(confirms, 6, "2 confirmations per target");
}

/* A host stall: the model's windows number stall_at (1-based) gets a p99 of 1 s. */
static void test_stall(void) {
    vb_capacity_search s, clean;
    double targets[] = {10};
    model m = {.c = 2};
    vb_capacity_search_init(&clean, targets, 1, 500, 0.05, 0);
    double rates[96];
    vb_capacity_stage st[96];
    run(&clean, &m, rates, st, 96);
    vb_capacity_search_init(&s, targets, 1, 500, 0.05, 0);
    double r;
    vb_capacity_stage stage;
    int t, n = 0;
    while (vb_capacity_next(&s, &r, &stage, &t)) {
        vb_capacity_obs o = measure(&m, r, stage, t);
        if (++n == 1) o.p99_ms = 1000;   /* the first window at 500/s stalled */
        vb_capacity_record(&s, &o);
        if (n <= 3) rates[n - 1] = r;
    }
    ok(rates[0] == 500 && rates[1] == 500 && rates[2] == 500, "a stalled window and a clean one disagree: a third window "
       "at the same rate settles it");
    is_double(s.a[0].rate, clean.a[0].rate, 1e-9, "the stall does not steer the search: the rate found without it");
}

/* Host pauses (metrics/capacity.h): the first `stalls` windows of the search fail with a p99 of 1 s while the host
 * paused pause_ms; returns how many windows were measured at the first rate, the search in *s. */
static int paused_search(vb_capacity_search *s, int stalls, double pause_ms, int repeats, int knee_pauses,
                         int *confirm_windows, int *knee_windows) {
    double targets[] = {10};
    model m = {.c = 2};
    vb_capacity_search_init(s, targets, 1, 500, 0.05, repeats);
    double r;
    vb_capacity_stage stage;
    int t, n = 0, at_first = 0, knees = 0;
    *confirm_windows = 0;
    while (vb_capacity_next(s, &r, &stage, &t)) {
        vb_capacity_obs o = measure(&m, r, stage, t);
        if (n++ < stalls) o.p99_ms = 1000, o.host_pause_ms = pause_ms;
        if (stage == VB_CAP_KNEE && knees++ < knee_pauses) o.host_pause_ms = pause_ms;
        *confirm_windows += stage == VB_CAP_CONFIRM;
        at_first += r == 500 && stage == VB_CAP_GROW;
        vb_capacity_record(s, &o);
    }
    *knee_windows = knees;
    return at_first;
}

static void test_host_pause(void) {
    vb_capacity_search clean, s;
    double targets[] = {10};
    model m = {.c = 2};
    vb_capacity_search_init(&clean, targets, 1, 500, 0.05, 0);
    double rates[96];
    vb_capacity_stage st[96];
    run(&clean, &m, rates, st, 96);
    int confirms, knees;
    /* two stalled windows agree at 500/s: without the pause they fail the rate and the search goes down */
    paused_search(&s, 2, 2.0, 0, 0, &confirms, &knees);
    ok(s.a[0].rate < 500 && clean.a[0].rate > 500, "two windows failed at 500/s while the host paused 2 ms (below 0.25 x 10 ms): "
       "they count, the search ends below 500/s (%.1f/s, %.1f/s without them)", s.a[0].rate, clean.a[0].rate);
    int first = paused_search(&s, 2, 5.0, 0, 0, &confirms, &knees);
    is_int(first, 4, "the same two windows with a 5 ms pause (above 0.25 x 10 ms) are discounted: 500/s measured 4 times");
    ok(s.w[0].discounted == 1 && s.w[1].discounted == 1 && s.w[2].discounted == 0, "their discounted bit is set, the "
       "next window's is not");
    is_double(s.a[0].rate, clean.a[0].rate, 1e-9, "the pauses do not steer the search: the rate found without them");
    /* a host that pauses in every window: two discounted per rate, then the failures count and the search ends */
    vb_capacity_search all;
    first = paused_search(&all, 1000, 5.0, 0, 0, &confirms, &knees);
    ok(first == 4 && all.a[0].status == VB_CAP_TARGET_UNREACHABLE && all.n < VB_CAPACITY_MAX_WINDOWS,
       "a host that pauses in every window: 2 discounted and 2 counted at each rate (%d at 500/s), the target "
       "unreachable after %d windows, not an endless search", first, all.n);
    /* met while paused: counts */
    vb_capacity_search met;
    vb_capacity_search_init(&met, targets, 1, 500, 0.05, 0);
    vb_capacity_obs o = measure(&m, 500, VB_CAP_GROW, -1);
    o.host_pause_ms = 9;
    vb_capacity_record(&met, &o);
    ok(met.w[0].discounted == 0 && vb_capacity_meets(&met, &met.w[0], 0), "a window that met its target while the host "
       "paused counts");
    /* a paused, failed confirmation is measured again; a knee that failed while paused too */
    paused_search(&s, 0, 5.0, 2, 2, &confirms, &knees);
    is_int(knees, 3, "a knee window that failed while the host paused is measured again, twice at most (3 knee windows)");
    ok(s.a[0].knee_measured && s.a[0].knee_failed && s.a[0].knee_discounted == 2, "the third knee window is the knee");
    vb_capacity_search_init(&s, targets, 1, 500, 0.05, 2);
    double r;
    vb_capacity_stage stage;
    int t, c = 0;
    while (vb_capacity_next(&s, &r, &stage, &t)) {
        vb_capacity_obs w = measure(&m, r, stage, t);
        if (stage == VB_CAP_CONFIRM && c++ == 0) w.p99_ms = 50, w.host_pause_ms = 5;
        vb_capacity_record(&s, &w);
    }
    ok(c == 3 && s.a[0].repeats == 2 && s.a[0].repeats_met == 2 && s.a[0].confirm_discounted == 1,
       "a confirmation failed while the host paused is measured again: 3 confirmation windows, 2 of 2 counted met");
    ok(s.a[0].p99_ms < 10, "the found rate's p99 leaves the discounted confirmation out (%.2f ms)", s.a[0].p99_ms);
}

/* Confirmations at the found rate count what they saw (repeats_met) without changing the answer: at the knee a window
 * meets the target about half the time, so the rate stays found and the report says how many met it. */
static void test_confirmations(void) {
    double targets[] = {10};
    for (int met_of_3 = 0; met_of_3 <= 3; met_of_3 += 3) {
        model m = {.c = 2};
        vb_capacity_search s;
        vb_capacity_search_init(&s, targets, 1, 500, 0.05, 3);
        double r;
        vb_capacity_stage stage;
        int t, confirms = 0, knee = 0;
        while (vb_capacity_next(&s, &r, &stage, &t)) {
            vb_capacity_obs o = measure(&m, r, stage, t);
            if (stage == VB_CAP_CONFIRM && confirms++ >= met_of_3) o.p99_ms = 50;   /* a stall at the found rate */
            knee += stage == VB_CAP_KNEE;
            vb_capacity_record(&s, &o);
        }
        ok(s.a[0].repeats == 3 && s.a[0].repeats_met == met_of_3, "%d of 3 confirmations met p99 <= 10 ms",
           s.a[0].repeats_met);
        ok(s.a[0].status == VB_CAP_FOUND && s.a[0].rate > 0 && knee == 1, "%d of 3: the rate stays found (%.1f/s), "
           "the knee measured", met_of_3, s.a[0].rate);
    }
}

static void test_unreachable(void) {
    model m = {.c = 2};
    vb_capacity_search s;
    double targets[] = {1.5};   /* below the service time */
    vb_capacity_search_init(&s, targets, 1, 500, 0.05, 3);
    double rates[64];
    vb_capacity_stage st[64];
    int n = run(&s, &m, rates, st, 64);
    is_int(s.a[0].status, VB_CAP_TARGET_UNREACHABLE, "p99 <= 1.5 ms with a 2 ms service: unreachable");
    ok(st[2] == VB_CAP_DESCEND && rates[2] == 250, "the search descended below the start (250/s)");
    ok(rates[n - 1] >= 500 / VB_CAPACITY_DESCENT, "down to start / %g at the lowest (%.2f/s), %d windows",
       VB_CAPACITY_DESCENT, rates[n - 1], n);
}

static void test_client_limit(void) {
    model m = {.c = 2, .client_max = 600};
    vb_capacity_search s;
    double targets[] = {5, 50};
    vb_capacity_search_init(&s, targets, 2, 200, 0.05, 3);
    double rates[64];
    vb_capacity_stage st[64];
    run(&s, &m, rates, st, 64);
    double th5 = rate_for(5);
    ok(th5 < 600, "p99 <= 5 ms: theory %.1f/s is below the client's 600/s", th5);
    is_int(s.a[0].status, VB_CAP_FOUND, "p99 <= 5 ms is found below the client's limit");
    is_int(s.a[1].status, VB_CAP_CLIENT_LIMIT, "p99 <= 50 ms (theory above 600/s): refused as the client's limit");
    ok(s.a[1].rate < 600 && s.a[1].fail_rate >= 600, "its bracket ends at the client's limit: met %.1f/s, the client "
       "could not offer %.1f/s", s.a[1].rate, s.a[1].fail_rate);
    is_int(s.a[1].repeats, 0, "a refused target is not confirmed");

    model null = {.c = 2, .client_max = 1};   /* nothing can be offered */
    double t10[] = {10};
    vb_capacity_search_init(&s, t10, 1, 1e6, 0.05, 3);
    run(&s, &null, rates, st, 64);
    is_int(s.a[0].status, VB_CAP_CLIENT_LIMIT, "a client that can offer nothing: refused, no capacity");
    is_double(s.a[0].rate, 0, 0, "no rate reported");
}

static void test_client_check(void) {
    char why[512];
    vb_capacity_client c = {.window_s = 1, .scheduled = 1000, .started = 1000, .clients = 32, .in_flight = 3,
                            .client_cpu_s = 0.1, .cpus = 2, .service_p99_ms = 3, .target_ms = 10,
                            .service_p50_ms = 2.1, .unloaded_ms = 2.05};
    is_int(vb_capacity_client_check(&c, why, sizeof why), 0, "on schedule, clients idle, CPU low: not the client");
    c.client_cpu_s = 1.9;
    is_int(vb_capacity_client_check(&c, why, sizeof why), 1, "CPU 1.9 of 2 cores: the client");
    contains(why, "the client's limit, not the engine's", "the reason says it is the client");
    contains(why, "CPUs were saturated", "and which limit");
    c.client_cpu_s = 0.1, c.started = 700;
    is_int(vb_capacity_client_check(&c, why, sizeof why), 1, "behind schedule with idle clients: the client");
    contains(why, "fell behind its schedule (700 of 1000 arrivals started)", "the counts in the reason");
    c.in_flight = 20;
    is_int(vb_capacity_client_check(&c, why, sizeof why), 1, "behind with 20 of 32 clients busy and the engine fast: the client");
    c.service_p50_ms = 16, c.service_p99_ms = 30, c.target_ms = 200;
    is_int(vb_capacity_client_check(&c, why, sizeof why), 0, "behind with 20 of 32 clients busy, the engine within a loose "
           "target but 8 x slower than unloaded (an overload): the engine");
    c.service_p50_ms = 2.1, c.service_p99_ms = 3, c.target_ms = 10;
    c.in_flight = 24, c.service_p99_ms = 59;
    is_int(vb_capacity_client_check(&c, why, sizeof why), 0,
           "behind schedule while the engine was slower than the target (an overload): the engine, not the client");
    c.in_flight = 31, c.service_p99_ms = 50, c.service_p50_ms = 40;
    is_int(vb_capacity_client_check(&c, why, sizeof why), 0,
           "behind schedule with every client waiting on a slow engine: the engine (it fails the objective)");
    c.service_p99_ms = 4, c.service_p50_ms = 2.1;
    is_int(vb_capacity_client_check(&c, why, sizeof why), 1,
           "every client busy while the engine answered as fast as unloaded: the client");
    contains(why, "raise clients", "what to do");
    /* an embedded engine: the workers' CPU is its search too; saturated, it is the client's limit only while the calls
     * stay as fast as unloaded (the null engine), not while they slow down under the threads' contention (a search) */
    vb_capacity_client e = {.window_s = 1, .scheduled = 1000, .started = 1000, .clients = 32, .in_flight = 3,
                            .client_cpu_s = 1.95, .cpus = 2, .embedded = 1, .service_p50_ms = 0.001,
                            .service_p99_ms = 30, .unloaded_ms = 0.0005, .target_ms = 10};
    is_int(vb_capacity_client_check(&e, why, sizeof why), 1, "embedded, saturated CPUs, the calls as fast as unloaded: "
           "the client");
    contains(why, "the client's own work", "the reason says the client's own work filled the CPUs");
    e.service_p50_ms = 0.8, e.unloaded_ms = 0.2;
    is_int(vb_capacity_client_check(&e, why, sizeof why), 0, "embedded, saturated CPUs, the calls 4 x slower than "
           "unloaded: the engine's search");
    e.client_cpu_s = 0.5, e.service_p50_ms = 0.001, e.unloaded_ms = 0.0005;
    is_int(vb_capacity_client_check(&e, why, sizeof why), 0, "embedded, CPUs to spare, on schedule: not the client");
    c.service_p50_ms = 16, c.service_p99_ms = 30, c.target_ms = 200;
    is_int(vb_capacity_client_check(&c, why, sizeof why), 0,
           "every client busy, the engine's answers 8 x slower than unloaded (but within the target): an overload, the engine's");
}

/* The sleep engine's servers, by what holds on any machine: with c servers of service D, 8 closed-loop clients answer at
 * most c / D queries a second (a server serves one query at a time and never early), and every answer takes at least
 * D. The median answer, about 8 / c x D when the clients keep their 8 queries in the queue, is printed, not asserted. */
static void test_sleep_servers(void) {
    static float q[16 * 4];
    for (int c = 2; c <= 4; c += 2) {
        char servers[8];
        snprintf(servers, sizeof servers, "%d", c);
        vb_kv params[2] = {{"service_us", "2000"}, {"servers", servers}};
        vb_engine_config ec = {params, 2, NULL, 0};
        vb_engine *e = NULL;
        vb_error err = {0};
        is_int(vb_engine_open("sleep", &ec, &e, &err), VB_OK, nm("sleep with servers: %d opens (%s)", c, err.message));
        if (!e) continue;
        vb_workload_config cfg = {.engine = e, .clients = 8, .queries = q, .n_queries = 16, .dim = 4, .k = 10,
                                  .window_ns = 300000000ull, .warmup_ns = 50000000ull};
        vb_workload_result r;
        is_int(vb_workload_run(&cfg, &r, &err), VB_OK, nm("servers %d: 8 clients run (%s)", c, err.message));
        double bound = c / 0.002;
        ok(r.queries > 0 && r.qps <= bound * 1.01, "servers %d: %.0f QPS <= c / D = %.0f (a ticket per server)", c, r.qps,
           bound);
        ok(vb_histogram_value_at_percentile(r.latency, 0) >= 1900000, "servers %d: no answer before the service time", c);
        printf("# servers %d: the median answer %.2f ms (8 clients queued on %d servers of 2 ms: about %.0f ms)\n", c,
               (double)vb_histogram_value_at_percentile(r.latency, 50) / 1e6, c, 8.0 / c * 2);
        vb_workload_result_free(&r);
        vb_engine_close(&e);
    }
    vb_kv bad[3] = {{"service_us", "2000"}, {"servers", "2"}, {"alternate_us", "500"}};
    vb_engine_config ec = {bad, 3, NULL, 0};
    vb_engine *e = NULL;
    vb_error err = {0};
    ok(vb_engine_open("sleep", &ec, &e, &err) != VB_OK && strstr(err.message, "servers and alternate_us"),
       "servers with alternate_us is refused: %s", err.message);
    vb_kv neg[1] = {{"servers", "-1"}};
    ec = (vb_engine_config){neg, 1, NULL, 0};
    ok(vb_engine_open("sleep", &ec, &e, &err) != VB_OK, "servers -1 is refused: %s", err.message);
}

static vb_profile *parse(const char *capacity, vb_error *err) {
    char text[1024];
    snprintf(text, sizeof text, "name: cp\ndatasets:\n  - {name: s, source: synthetic, rows: 100, queries: 10, dim: 4}\n"
             "engines:\n  - {name: sleep, servers: [2, 4]}\nphases:\n  build:\n  capacity: %s\n", capacity);
    vb_profile *p = NULL;
    memset(err, 0, sizeof *err);
    vb_profile_parse(text, strlen(text), "cap.yml", &p, err);
    return p;
}

/* The profile's section, the plan's items and their points through the wire. */
static void test_profile_plan(void) {
    vb_error err;
    vb_profile *p = parse("{recall: 0.9, p99_ms: [50, 5, 10], window_s: 2, repeats: 2, clients: 16}", &err);
    ok(p != NULL, "a capacity section parses (%s)", err.message);
    vb_plan *plan = NULL;
    if (p && vb_plan_build(p, &plan, &err) == VB_OK) {
        const vb_plan_item *it = vb_plan_find(plan, "cp/sleep[servers=2]/s/capacity");
        ok(it && it->kind == VB_PHASE_CAPACITY, "one item per configuration, key .../capacity");
        ok(vb_plan_find(plan, "cp/sleep[servers=4]/s/capacity") != NULL, "the other configuration's");
        if (it) {
            is_int(it->p.n_p99, 3, "three targets");
            ok(it->p.p99_ms[0] == 5 && it->p.p99_ms[1] == 10 && it->p.p99_ms[2] == 50, "ascending");
            ok(it->p.ef_search == 0 && it->p.op_source == VB_OP_PROBE, "ef_search auto: probe until the sweep says");
            ok(it->p.recall_target == 0.9 && it->p.window_s == 2 && it->p.warmup_s == 1 && it->p.repeats == 2 &&
               it->p.clients == 16 && it->p.precision == 0.05, "the values, the defaults (warmup_s 1, precision 0.05)");
            Vbench__Point w;
            vb_wire_point_make(&it->p, &w);
            vb_point back;
            vb_wire_point_read(&w, &back);
            ok(back.n_p99 == 3 && back.p99_ms[2] == 50 && back.recall_target == 0.9 && back.precision == 0.05 &&
               back.op_source == VB_OP_PROBE && back.clients == 16, "the point travels to the agent whole");
        }
        vb_plan_destroy(&plan);
    } else {
        ok(0, "plan: %s", err.message);
    }
    vb_profile_destroy(&p);
    p = parse("{ef_search: 40}", &err);
    if (p && vb_plan_build(p, &plan, &err) == VB_OK) {
        ok(plan->items[1].p.ef_search == 40 && plan->items[1].p.op_source == VB_OP_GIVEN, "ef_search 40: given");
        vb_plan_destroy(&plan);
    } else {
        ok(0, "ef_search 40: %s", err.message);
    }
    vb_profile_destroy(&p);
    p = parse("{ef_search: many}", &err);
    ok(!p, "ef_search: many is refused");
    contains(err.message, "phases.capacity.ef_search", "naming the key");
    contains(err.message, "an integer or auto", "and what it takes");
    vb_profile_destroy(&p);
    p = parse("{recall: 1.5}", &err);
    ok(!p, "recall 1.5 is refused");
    contains(err.message, "cap.yml:", "naming the file and line");
    vb_profile_destroy(&p);
}

/* run --check: a capacity item is estimated at the search's bound (metrics/capacity.h vb_capacity_windows_bound) of
 * windows, each warm-up + window, growing from the 1-client QPS to clients x it. */
static void test_estimate(void) {
    char dir[] = "/tmp/vb-test-capacity.XXXXXX";
    if (!mkdtemp(dir)) {
        ok(0, "a scratch directory");
        return;
    }
    vb_error err;
    vb_profile *p = parse("{p99_ms: [5, 10, 50], window_s: 10, warmup_s: 1, repeats: 3, clients: 32}", &err);
    vb_plan *plan = NULL;
    vb_estimate est;
    if (!p || vb_plan_build(p, &plan, &err) || vb_estimate_plan(p, plan, NULL, dir, &est, &err)) {
        ok(0, "the estimate: %s", err.message);
    } else {
        int bound = vb_capacity_windows_bound(1, 32, 0.05, 3, 3);
        double s = est.item_s[1];
        ok(plan->items[1].kind == VB_PHASE_CAPACITY && s >= bound * 11.0 && s <= bound * 11.0 + 120,
           "a capacity item of 3 targets, repeats 3, 10 s windows after 1 s: %.0f s, the bound of %d windows x 11 s and "
           "the probe", s, bound);
        ok(bound == 3 * (6 + 3 * 5) + 3 * 4, "the bound: 3 windows at each of 6 growth and 3 x 5 bisection rates, "
           "4 confirmation windows a target (%d)", bound);
        vb_estimate_free(&est);
    }
    vb_plan_destroy(&plan);
    vb_profile_destroy(&p);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("# could not remove %s\n", dir);
}

/* Several client agents: a window's shares merged into the one observation the search records. The merged p99 comes
 * from the merged histograms, which is neither the shares' mean p99 nor their largest; the counts are summed; one agent
 * at its client limit makes the window client-limited, naming that agent; one agent is its own window unchanged. */
static vb_histogram *hist_of(int fast, int slow) {
    vb_histogram *h = vb_histogram_new();
    for (int i = 0; i < fast; i++) vb_histogram_record(h, 1000000);     /* 1 ms */
    for (int i = 0; i < slow; i++) vb_histogram_record(h, 30000000);    /* 30 ms */
    return h;
}

static void test_merge(void) {
    is_double(vb_capacity_share_rate(500, 2), 250, 0, "500/s on two agents: 250/s each");
    is_double(vb_capacity_share_rate(500, 1), 500, 0, "one agent offers the whole rate");
    ok(vb_capacity_share_seed(77, 0) == 77, "agent 0 keeps the window's seed (one agent draws what it always drew)");
    ok(vb_capacity_share_seed(77, 1) != 77 && vb_capacity_share_seed(77, 2) != vb_capacity_share_seed(77, 1),
       "the other agents each draw their own schedule");

    vb_histogram *a = hist_of(1000, 0), *b = hist_of(980, 20), *m = vb_histogram_new();
    vb_capacity_share sh[2] = {
        {.agent = "bench-1", .rate = 250, .elapsed_s = 2.0, .scheduled = 1000, .started = 1000, .corrected = a},
        {.agent = "bench-2", .rate = 250, .elapsed_s = 2.001, .scheduled = 1001, .started = 1000, .errors = 2,
         .corrected = b},
    };
    is_double((double)vb_histogram_value_at_percentile(b, 99) / 1e6, 30, 0.5, "bench-2 alone: p99 30 ms (20 of 1000 slow)");
    vb_capacity_obs o = {.stage = VB_CAP_GROW, .target = -1};
    char why[256];
    is_int(vb_capacity_merge(sh, 2, &o, m, why, sizeof why), 0, "two shares merged");
    is_double(o.rate, 500, 0, "offered: the shares summed");
    is_int(o.scheduled, 2001, "scheduled summed");
    is_int(o.started, 2000, "started summed");
    is_int(o.errors, 2, "errors summed");
    is_double(o.achieved, 2000 / 2.001, 1e-9, "achieved: started over the longest share's window");
    is_double(o.p99_ms, 1, 0.02, "merged p99 1 ms: 20 slow of 2000 is 1 percent (the shares' mean p99 would be 15.5, their "
              "largest 30)");
    is_int(vb_histogram_count(m), 2000, "the merged histogram holds both shares' queries");
    is_int(o.client_limited, 0, "no agent at its limit: not client-limited");
    is_int(o.stage, VB_CAP_GROW, "the stage is left as the caller set it");
    vb_capacity_search s;
    double t10 = 10;
    vb_capacity_search_init(&s, &t10, 1, 100, 0.05, 0);
    is_int(vb_capacity_meets(&s, &o, 0), 0, "2 queries failed on bench-2: the merged window fails the objective");
    sh[1].errors = 0;
    vb_capacity_merge(sh, 2, &o, m, why, sizeof why);
    is_int(vb_capacity_meets(&s, &o, 0), 1, "without them the merged window meets p99 <= 10 ms, though bench-2 alone "
           "did not");

    vb_histogram_destroy(&b);
    b = hist_of(975, 25);
    sh[1].corrected = b;
    vb_capacity_merge(sh, 2, &o, m, why, sizeof why);
    is_double(o.p99_ms, 30, 0.5, "25 slow of 2000: the merged p99 is the slow one");
    is_int(vb_capacity_meets(&s, &o, 0), 0, "and the merged window fails the objective");

    sh[1].client_limited = 1, sh[1].why = "the client's limit, not the engine's: the client agent's CPUs were saturated";
    vb_capacity_merge(sh, 2, &o, NULL, why, sizeof why);
    is_int(o.client_limited, 1, "one agent at its limit: the window is client-limited");
    contains(why, "agent bench-2 (2 of 2, offered 250.0/s): the client's limit", "the reason names that agent and its share");
    is_int(vb_capacity_meets(&s, &o, 0), 0, "a client-limited window meets nothing");

    vb_capacity_obs one = {0};
    is_int(vb_capacity_merge(&sh[1], 1, &one, NULL, why, sizeof why), 0, "one share merged");
    is_double(one.p99_ms, (double)vb_histogram_value_at_percentile(b, 99) / 1e6, 0, "one agent: its own p99");
    is_double(one.achieved, 1000 / 2.001, 1e-9, "its own achieved rate");
    is_str(why, "the client's limit, not the engine's: the client agent's CPUs were saturated",
           "one agent: its own reason, unchanged");
    is_int(vb_capacity_merge(sh, 0, &one, NULL, why, sizeof why), -1, "no shares: refused");
    is_int(one.none_answered, 0, "answered queries: a p99 that says something");

    /* A stalled server: every arrival of a slow rate started (a client was free) and none was answered in the window.
     * An empty histogram's percentiles are 0, which would meet any target: seen in 53-filtered-servers, a window at
     * 7,897/s recorded with p99 0.0 after windows of 324 - 610 ms. */
    vb_histogram *none = vb_histogram_new();
    vb_capacity_share stalled = {.agent = "bench-1", .rate = 2, .elapsed_s = 2.0, .scheduled = 4, .started = 4,
                                 .corrected = none};
    vb_capacity_obs so = {.stage = VB_CAP_GROW, .target = -1};
    vb_capacity_merge(&stalled, 1, &so, NULL, why, sizeof why);
    is_int(so.none_answered, 1, "no latency in the window: nothing was answered");
    is_int(vb_capacity_meets(&s, &so, 0), 0, "a window that answered nothing meets no target (its p99 of 0 is no latency)");
    vb_histogram_destroy(&none);
    vb_histogram_destroy(&a);
    vb_histogram_destroy(&b);
    vb_histogram_destroy(&m);
}

int main(void) {
    test_profile_plan();
    test_estimate();
    test_sleep_servers();
    test_theory();
    test_one_target();
    test_targets();
    test_stall();
    test_host_pause();
    test_confirmations();
    test_unreachable();
    test_client_limit();
    test_client_check();
    test_merge();
    return done_testing();
}
