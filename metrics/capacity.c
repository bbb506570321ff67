/* The capacity search as data (metrics/capacity.h has the rules). Every decision is recomputed from the windows
 * recorded so far, so the search is a pure function of its observations: a test gives it a model's windows and
 * checks the rates it asks for. */
#include "metrics/capacity.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vb_capacity_search_init(vb_capacity_search *s, const double *targets_ms, int n_targets, double start,
                             double precision, int repeats) {
    memset(s, 0, sizeof *s);
    if (n_targets > VB_CAPACITY_MAX_TARGETS) n_targets = VB_CAPACITY_MAX_TARGETS;
    s->n_targets = n_targets < 0 ? 0 : n_targets;
    for (int i = 0; i < s->n_targets; i++) {
        s->targets_ms[i] = targets_ms[i];
        s->a[i].status = VB_CAP_OPEN;
    }
    s->start = start;
    s->min_rate = start / VB_CAPACITY_DESCENT;
    s->precision = precision;
    s->repeats = repeats < 0 ? 0 : repeats;
}

int vb_capacity_meets(const vb_capacity_search *s, const vb_capacity_obs *o, int t) {
    return !o->client_limited && !o->none_answered && o->errors == 0 && o->started > 0 &&
           (double)o->started >= VB_CAPACITY_ACHIEVED * (double)o->scheduled && o->p99_ms <= s->targets_ms[t];
}

int vb_capacity_client_check(const vb_capacity_client *c, char *why, size_t len) {
    double cores = c->window_s > 0 ? c->client_cpu_s / c->window_s : 0;
    /* the engine was not the cause: it answered as fast as unloaded (median around the call at most twice the 1-client
     * time, + 0.1 ms for the clock and the scheduler), so it had no queue of its own; an overloaded engine's answers
     * slow down as its queue grows, whether or not they stay within a loose target */
    int engine_fast = c->unloaded_ms > 0 && c->service_p50_ms <= 2 * c->unloaded_ms + 0.1;
    /* an embedded engine's search runs on the workers' CPUs too: saturated, they are the client's limit only while the
     * engine's calls stay as fast as unloaded (its own work would slow them as the threads contend: the null engine
     * at millions of queries a second saturates them with the client's own loop) */
    if (c->cpus > 0 && cores >= 0.9 * c->cpus && (!c->embedded || engine_fast)) {
        snprintf(why, len, "the client's limit, not the engine's: the client agent's CPUs were saturated (%.2f of %d "
                 "busy%s); give the client more CPUs or agents", cores, c->cpus,
                 c->embedded ? ", the embedded engine's calls as fast as unloaded: the client's own work" : "");
        return 1;
    }
    int behind = (double)c->started < VB_CAPACITY_ACHIEVED * (double)c->scheduled;
    if (behind && engine_fast && c->service_p99_ms <= c->target_ms && c->in_flight < 0.9 * c->clients) {
        snprintf(why, len, "the client's limit, not the engine's: the open loop fell behind its schedule (%llu of %llu "
                 "arrivals started) while the engine answered as fast as unloaded (median around the call %.3g ms, "
                 "unloaded %.3g ms; p99 %.3g ms <= %g ms) and clients were free (%.2f of %d in flight); the client cannot "
                 "generate this rate", (unsigned long long)c->started, (unsigned long long)c->scheduled,
                 c->service_p50_ms, c->unloaded_ms, c->service_p99_ms, c->target_ms, c->in_flight, c->clients);
        return 1;
    }
    /* every client busy while the engine answered as fast as unloaded: the arrivals waited for a client, not for the
     * engine (an overloaded engine keeps the clients busy too, but its answers slow down as its queue grows) */
    if (c->in_flight >= 0.9 * c->clients && engine_fast) {
        snprintf(why, len, "the client's limit, not the engine's: all %d clients were busy (%.2f in flight) while the "
                 "engine answered as fast as unloaded (median around the call %.3g ms, unloaded %.3g ms); raise clients",
                 c->clients, c->in_flight, c->service_p50_ms, c->unloaded_ms);
        return 1;
    }
    return 0;
}

int vb_capacity_paused(const vb_capacity_search *s, const vb_capacity_obs *o, int t) {
    return !o->client_limited && !vb_capacity_meets(s, o, t) && o->host_pause_ms > VB_CAPACITY_PAUSE_SHARE * s->targets_ms[t];
}

static int is_search(const vb_capacity_obs *o) {
    return o->stage == VB_CAP_GROW || o->stage == VB_CAP_BISECT || o->stage == VB_CAP_DESCEND;
}

/* The verdict of the search's windows at one rate for target t: each rate is measured until two of its windows agree
 * (met, failed or client-limited; a third window settles a disagreement, a fourth at most, then it failed), so one
 * window disturbed by the host (a stall) does not steer the search. */
typedef enum { V_UNDECIDED, V_MET, V_FAILED, V_CLIENT } verdict;

static verdict rate_verdict(const vb_capacity_search *s, double rate, int t) {
    int met = 0, failed = 0, client = 0, n = 0;
    for (int i = 0; i < s->n; i++) {
        const vb_capacity_obs *o = &s->w[i];
        if (!is_search(o) || o->rate != rate || (o->discounted >> t & 1u)) continue;
        n++;
        if (o->client_limited) client++;
        else if (vb_capacity_meets(s, o, t)) met++;
        else failed++;
    }
    if (client >= VB_CAPACITY_VOTES) return V_CLIENT;
    if (met >= VB_CAPACITY_VOTES) return V_MET;
    if (failed >= VB_CAPACITY_VOTES) return V_FAILED;
    if (n >= VB_CAPACITY_VOTES + 2) return client > failed ? V_CLIENT : V_FAILED;
    return V_UNDECIDED;
}

/* Target t's bracket over the decided rates of the search: hi the lowest rate that failed it or was client-limited
 * (INFINITY none; *hi_client: client-limited), lo the highest rate below hi that met it (0 none). */
static void bracket(const vb_capacity_search *s, int t, double *lo, double *hi, int *hi_client) {
    *hi = INFINITY;
    *hi_client = 0;
    for (int i = 0; i < s->n; i++) {
        const vb_capacity_obs *o = &s->w[i];
        if (!is_search(o)) continue;
        verdict v = rate_verdict(s, o->rate, t);
        if ((v == V_FAILED || v == V_CLIENT) && (o->rate < *hi || (o->rate == *hi && *hi_client && v == V_FAILED))) {
            *hi = o->rate;
            *hi_client = v == V_CLIENT;
        }
    }
    *lo = 0;
    for (int i = 0; i < s->n; i++) {
        const vb_capacity_obs *o = &s->w[i];
        if (is_search(o) && o->rate < *hi && o->rate > *lo && rate_verdict(s, o->rate, t) == V_MET) *lo = o->rate;
    }
}

static double max_search_rate(const vb_capacity_search *s) {
    double m = 0;
    for (int i = 0; i < s->n; i++)
        if (is_search(&s->w[i]) && s->w[i].rate > m) m = s->w[i].rate;
    return m;
}

/* The windows the search may still use for itself: the confirmations of every target are kept in reserve. */
static int search_budget_left(const vb_capacity_search *s) {
    return VB_CAPACITY_MAX_WINDOWS - s->n_targets * (s->repeats + 1) - s->n;
}

int vb_capacity_next(vb_capacity_search *s, double *rate, vb_capacity_stage *stage, int *target) {
    *target = -1;
    if (s->n >= VB_CAPACITY_MAX_WINDOWS) {
        for (int t = 0; t < s->n_targets; t++)
            if (s->a[t].status == VB_CAP_OPEN) s->a[t].status = VB_CAP_NOT_CONVERGED;
        return 0;
    }
    /* the last search rate again, until every open target has its verdict there */
    const vb_capacity_obs *last = NULL;
    for (int i = s->n - 1; i >= 0 && !last; i--)
        if (is_search(&s->w[i])) last = &s->w[i];
    for (int t = 0; last && t < s->n_targets; t++)
        if (s->a[t].status == VB_CAP_OPEN && rate_verdict(s, last->rate, t) == V_UNDECIDED) {
            if (search_budget_left(s) <= 0) break;
            *rate = last->rate;
            *stage = last->stage;
            return 1;
        }
    int top = s->n_targets - 1;
    for (int t = top; t >= 0; t--) {
        vb_capacity_answer *a = &s->a[t];
        if (a->status != VB_CAP_OPEN) continue;
        double lo, hi;
        int hi_client;
        bracket(s, t, &lo, &hi, &hi_client);
        a->rate = lo;
        a->fail_rate = isinf(hi) ? 0 : hi;
        double want;
        vb_capacity_stage st;
        if (isinf(hi)) {        /* nothing failed yet (only possible for the largest: grow) */
            want = s->n ? max_search_rate(s) * VB_CAPACITY_GROWTH : s->start;
            st = VB_CAP_GROW;
        } else if (lo == 0) {   /* no rate met it yet: go below the lowest that failed */
            want = hi / VB_CAPACITY_GROWTH;
            st = VB_CAP_DESCEND;
            if (want < s->min_rate) {
                a->status = hi_client ? VB_CAP_CLIENT_LIMIT : VB_CAP_TARGET_UNREACHABLE;
                continue;
            }
        } else if (hi / lo > 1 + s->precision) {
            want = sqrt(lo * hi);
            st = VB_CAP_BISECT;
        } else {
            a->status = hi_client ? VB_CAP_CLIENT_LIMIT : VB_CAP_FOUND;
            continue;
        }
        if (search_budget_left(s) <= 0) {
            a->status = VB_CAP_NOT_CONVERGED;
            continue;
        }
        *rate = want;
        *stage = st;
        return 1;
    }
    for (int t = 0; t < s->n_targets; t++) {
        vb_capacity_answer *a = &s->a[t];
        if (a->status != VB_CAP_FOUND) continue;
        if (a->repeats < s->repeats) {
            *rate = a->rate;
            *stage = VB_CAP_CONFIRM;
            *target = t;
            return 1;
        }
        if (!a->knee_measured) {
            *rate = a->rate * VB_CAPACITY_KNEE;
            *stage = VB_CAP_KNEE;
            *target = t;
            return 1;
        }
    }
    return 0;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double median(double *v, int n) {
    if (n == 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Target t's latencies at its rate: the medians over its confirmation windows, or the search's window at the rate
 * when there are none (repeats 0). */
static void at_rate(vb_capacity_search *s, int t) {
    vb_capacity_answer *a = &s->a[t];
    double p50[VB_CAPACITY_MAX_WINDOWS], p99[VB_CAPACITY_MAX_WINDOWS], p999[VB_CAPACITY_MAX_WINDOWS];
    int n = 0;
    for (int i = 0; i < s->n; i++) {
        const vb_capacity_obs *o = &s->w[i];
        if (o->stage == VB_CAP_CONFIRM && o->target == t && !(o->discounted >> t & 1u)) p50[n] = o->p50_ms, p99[n] = o->p99_ms, p999[n++] = o->p999_ms;
    }
    for (int i = 0; n == 0 && i < s->n; i++) {
        const vb_capacity_obs *o = &s->w[i];
        if (is_search(o) && o->rate == a->rate && !(o->discounted >> t & 1u)) p50[n] = o->p50_ms, p99[n] = o->p99_ms, p999[n++] = o->p999_ms;
    }
    a->p50_ms = median(p50, n);
    a->p99_ms = median(p99, n);
    a->p999_ms = median(p999, n);
}

/* How many search windows at rate are already discounted for target t. */
static int discounted_at(const vb_capacity_search *s, double rate, int t) {
    int n = 0;
    for (int i = 0; i < s->n; i++)
        if (is_search(&s->w[i]) && s->w[i].rate == rate && (s->w[i].discounted >> t & 1u)) n++;
    return n;
}

void vb_capacity_record(vb_capacity_search *s, const vb_capacity_obs *o) {
    if (s->n >= VB_CAPACITY_MAX_WINDOWS) return;
    vb_capacity_obs *w = &s->w[s->n];
    *w = *o;
    w->discounted = 0;
    if (is_search(o))
        for (int t = 0; t < s->n_targets; t++)
            if (vb_capacity_paused(s, o, t) && discounted_at(s, o->rate, t) < VB_CAPACITY_PAUSE_RETRIES)
                w->discounted |= 1u << t;
    s->n++;
    int t = o->target;
    if (t < 0 || t >= s->n_targets) return;
    vb_capacity_answer *a = &s->a[t];
    if (o->stage == VB_CAP_CONFIRM) {
        if (vb_capacity_paused(s, o, t) && a->confirm_discounted < VB_CAPACITY_PAUSE_RETRIES) {
            a->confirm_discounted++;
            w->discounted |= 1u << t;
        } else {
            a->repeats++;
            a->repeats_met += vb_capacity_meets(s, o, t);
        }
    } else if (o->stage == VB_CAP_KNEE) {
        /* a knee that failed only because the host paused does not show the knee: measured again */
        if (vb_capacity_paused(s, o, t) && a->knee_discounted < VB_CAPACITY_PAUSE_RETRIES) {
            a->knee_discounted++;
            w->discounted |= 1u << t;
        } else {
            a->knee_measured = 1;
            a->knee_rate = o->rate;
            a->knee_p99_ms = o->p99_ms;
            a->knee_failed = !o->client_limited && !vb_capacity_meets(s, o, t);
        }
    }
    at_rate(s, t);
}

int vb_capacity_windows_bound(double start, double max_rate, double precision, int n_targets, int repeats) {
    int grow = 1;   /* rates, each measured VB_CAPACITY_VOTES + 1 times at most (a disagreement settled) */
    for (double r = start; r < max_rate && grow < VB_CAPACITY_MAX_WINDOWS; r *= VB_CAPACITY_GROWTH) grow++;
    /* bisection halves log(hi / lo) from log(growth) to below log(1 + precision) */
    int bisect = 1;
    for (double span = log(VB_CAPACITY_GROWTH); span > log(1 + precision) && bisect < 64; span /= 2) bisect++;
    long total = (VB_CAPACITY_VOTES + 1) * (grow + (long)n_targets * bisect) + (long)n_targets * (repeats + 1);
    return total > VB_CAPACITY_MAX_WINDOWS ? VB_CAPACITY_MAX_WINDOWS : (int)total;
}

double vb_capacity_share_rate(double rate, int n) { return n > 0 ? rate / n : rate; }

uint64_t vb_capacity_share_seed(uint64_t window_seed, int i) {
    return i == 0 ? window_seed : window_seed ^ ((uint64_t)i * 0xd1b54a32d192ed03ull);
}

int vb_capacity_merge(const vb_capacity_share *sh, int n, vb_capacity_obs *o, vb_histogram *merged, char *why,
                      size_t len) {
    if (n < 1) return -1;
    vb_histogram *h = merged ? merged : vb_histogram_new();
    if (!h) return -1;
    if (merged) vb_histogram_reset(h);
    double longest = 0;
    o->rate = 0, o->scheduled = 0, o->started = 0, o->errors = 0, o->client_limited = 0;
    if (why && len) why[0] = 0;
    for (int i = 0; i < n; i++) {
        o->rate += sh[i].rate;
        o->scheduled += sh[i].scheduled;
        o->started += sh[i].started;
        o->errors += sh[i].errors;
        if (sh[i].elapsed_s > longest) longest = sh[i].elapsed_s;
        if (sh[i].corrected) vb_histogram_merge(h, sh[i].corrected);
        if (sh[i].client_limited && !o->client_limited) {
            o->client_limited = 1;
            if (why && len) {
                if (n == 1) snprintf(why, len, "%s", sh[i].why ? sh[i].why : "");
                else snprintf(why, len, "agent %s (%d of %d, offered %.1f/s): %s", sh[i].agent ? sh[i].agent : "?",
                              i + 1, n, sh[i].rate, sh[i].why ? sh[i].why : "");
            }
        }
    }
    o->achieved = longest > 0 ? (double)o->started / longest : 0;
    o->none_answered = o->scheduled > 0 && vb_histogram_count(h) + vb_histogram_out_of_range(h) == 0;
    o->p50_ms = (double)vb_histogram_value_at_percentile(h, 50) / 1e6;
    o->p99_ms = (double)vb_histogram_value_at_percentile(h, 99) / 1e6;
    o->p999_ms = (double)vb_histogram_value_at_percentile(h, 99.9) / 1e6;
    if (!merged) vb_histogram_destroy(&h);
    return 0;
}
