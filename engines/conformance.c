/* The conformance script of the engine contract (engines/conformance.h says what it checks, engine.h what the
 * contract is). The script keeps its own model of the table (vectors, tags, which ids are live) and judges every
 * answer against a brute-force scan of that model with vb_distance, so the only thing it trusts is the engine's
 * status codes and ids. Data: seeded clustered points, built with a small M so that ef_search visibly matters. */
#include "engines/conformance.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/dataset.h"
#include "datasets/distance.h"
#include "engines/filter.h"

#define K 10
#define EF_LOW 10
#define EF_HIGH 200
#define EF_RETRY 1000     /* a miss at EF_HIGH is searched again here (pgvector's hnsw.ef_search maximum) */
#define TAG_BELOW 1000    /* about 10 % of vb_dataset_tag's 0..9999 */

typedef struct script {
    const vb_conformance_opts *o;
    const vb_conformance_report *r;
    const char *name;
    int failed;
    vb_engine *e;
    size_t n, dim, nq;
    float *vecs, *queries, *centres;
    int32_t *tags, *classes, *qclass;   /* classes: the centre each row was drawn from (qclass: each query's) */
    uint8_t *tagged, *alive;            /* tagged: loaded with a tag and a class (the last tenth has neither) */
    int64_t *ids;
    vb_table_spec spec;
    int bad_status;       /* ops that returned something else than OK / ERROR / RETRY, or failed without a message */
} script;

static void note(script *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(script *s, const char *fmt, ...) {
    char buf[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    s->r->note(s->r->arg, buf);
}

/* A check named "<engine>: <name>"; returns pass. */
static int check(script *s, int pass, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int check(script *s, int pass, const char *fmt, ...) {
    char buf[1200];
    int u = snprintf(buf, sizeof buf, "%s: ", s->name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + u, sizeof buf - (size_t)u, fmt, ap);
    va_end(ap);
    s->r->check(s->r->arg, pass, buf);
    if (!pass && !strstr(buf, "# TODO")) s->failed++;
    return pass;
}

static void skip(script *s, const char *what, const char *why) {
    char buf[1200];
    snprintf(buf, sizeof buf, "%s: %s # SKIP %s", s->name, what, why);
    s->r->check(s->r->arg, 1, buf);
}

/* Every status is one of the three, every failure carries a message: counted here, checked once at the end. */
static int st(script *s, int rc, const vb_error *err) {
    if ((rc != VB_OK && rc != VB_ERROR && rc != VB_RETRY) || (rc != VB_OK && (!err->message[0] || !err->domain[0])))
        s->bad_status++;
    return rc;
}

/* ---- data and the model ------------------------------------------------------------------------------- */

static uint64_t rng_state;   /* the data generator: one script runs at a time */
static uint64_t rng_next(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rng_unit(void) { return ((double)(rng_next() >> 11) + 0.5) / 9007199254740992.0; }
static float rng_normal(void) { return (float)(sqrt(-2.0 * log(rng_unit())) * cos(6.283185307179586 * rng_unit())); }

#define CLASSES 16   /* the centres, and each point's class is its centre (the real class column of a dataset) */

/* n points of dim around CLASSES centres; the queries come from the same centres. cls (may be NULL): each point's. */
static void make_points(float *v, size_t n, size_t dim, const float *centres, int32_t *cls) {
    for (size_t i = 0; i < n; i++) {
        size_t k = rng_next() % CLASSES;
        const float *c = centres + k * dim;
        if (cls) cls[i] = (int32_t)k;
        for (size_t j = 0; j < dim; j++) v[i * dim + j] = c[j] + 1.5f * rng_normal();
    }
}

typedef struct hit {
    double d;
    int64_t id;
} hit;

static int by_distance(const void *a, const void *b) {
    const hit *x = a, *y = b;
    return x->d < y->d ? -1 : x->d > y->d ? 1 : (x->id > y->id) - (x->id < y->id);
}

/* Whether model row i passes f (NULL: no filter; the script filters by tag < N and by class). */
static int passes(const script *s, size_t i, const vb_filter *f) {
    if (!f || f->kind == VB_FILTER_NONE) return 1;
    if (!s->tagged[i]) return 0;
    return f->kind == VB_FILTER_CLASS_EQ ? s->classes[i] == f->cls : s->tags[i] < f->tag_below;
}

/* The exact top k over live rows passing f; returns the count. */
static int exact(script *s, const float *q, const vb_filter *f, int64_t *out, hit *scratch) {
    size_t m = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (!s->alive[i] || !passes(s, i, f)) continue;
        scratch[m].d = vb_distance(s->spec.metric, q, s->vecs + i * s->dim, s->dim);
        scratch[m++].id = s->ids[i];
    }
    qsort(scratch, m, sizeof *scratch, by_distance);
    int n = m < K ? (int)m : K;
    for (int i = 0; i < n; i++) out[i] = scratch[i].id;
    return n;
}

/* Rows are ids 0 .. n-1 (hnswlib indexes its tags by id), so an id is its own row number. */
static int row_of(const script *s, int64_t id) { return id >= 0 && (size_t)id < s->n ? (int)id : -1; }

/* What is wrong with one answer, judged against the model. */
typedef struct verdict {
    int dead, unfit, repeats, misorders, short_answers;
    double hits, total, worst;   /* worst: largest relative step back in distance */
} verdict;

static void judge(script *s, const float *q, const int64_t *got, int n, const vb_filter *f, verdict *v, hit *scratch) {
    int64_t want[K];
    int nw = exact(s, q, f, want, scratch);
    double prev = -INFINITY;
    int distinct = 0;
    for (int i = 0; i < n; i++) {
        int r = row_of(s, got[i]);
        if (r < 0 || !s->alive[r]) {
            v->dead++;
            continue;
        }
        if (!passes(s, (size_t)r, f)) v->unfit++;
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = got[j] == got[i];
        if (seen) {
            v->repeats++;
            continue;
        }
        distinct++;
        for (int j = 0; j < nw; j++) v->hits += got[i] == want[j];
        /* Closest first, up to the engine's arithmetic (halfvec, quantised graphs): 1 % of the distance. */
        double d = vb_distance(s->spec.metric, q, s->vecs + (size_t)r * s->dim, s->dim);
        if (d < prev - 1e-6) {
            double step = (prev - d) / (fabs(prev) > 1e-9 ? fabs(prev) : 1.0);
            if (step > v->worst) v->worst = step;
            if (step > 0.01) v->misorders++;
        }
        if (d > prev) prev = d;
    }
    v->total += nw;
    if (distinct < nw) v->short_answers++;
}

/* ---- engine calls ------------------------------------------------------------------------------------- */

/* The queries through conn; recall and every fault of the answers in *v. VB_OK or the first failure. by_class:
 * query i filters on a class of its own, its own centre's (1) or another one (2), instead of f. */
static int run_queries_by(script *s, vb_conn *c, const float *qs, size_t nq, const vb_filter *f, int by_class,
                          verdict *v, vb_error *err) {
    memset(v, 0, sizeof *v);
    hit *scratch = malloc(s->n * sizeof *scratch);
    int rc = scratch ? VB_OK : vb_error_set(err, "conformance", 1, "out of memory");
    for (size_t i = 0; rc == VB_OK && i < nq; i++) {
        int64_t got[K];
        int n = -1;
        vb_filter own = vb_filter_class(by_class == 1 ? s->qclass[i]
                                                      : (int32_t)((s->qclass[i] + 1 + (int32_t)(i % (CLASSES - 1))) %
                                                                  CLASSES));
        const vb_filter *fi = by_class ? &own : f;
        rc = st(s, vb_conn_search(c, qs + i * s->dim, K, fi, got, &n, err), err);
        if (rc == VB_OK && (n < 0 || n > K)) rc = vb_error_set(err, "conformance", 1, "search wrote %d ids", n);
        if (rc == VB_OK) judge(s, qs + i * s->dim, got, n, fi, v, scratch);
    }
    free(scratch);
    return rc;
}

static int run_queries(script *s, vb_conn *c, const float *qs, size_t nq, const vb_filter *f, verdict *v,
                       vb_error *err) {
    return run_queries_by(s, c, qs, nq, f, 0, v, err);
}

static double recall(const verdict *v) { return v->total > 0 ? v->hits / v->total : 1.0; }

/* The contract's answer checks for one run of queries (filtered: with the tag filter). A server known to break two
 * of them in filtered answers only (opts.known_filtered_defects: MariaDB 11.8 repeats a row in some and returns
 * some out of order) has those two reported as TODO there, with what was seen; in unfiltered answers they fail. */
static void answers_ok(script *s, const verdict *v, const char *what, int filtered) {
    const char *known = filtered ? s->o->known_filtered_defects : NULL;
    check(s, v->dead == 0, "%s: no removed or unknown id is returned (%d)", what, v->dead);
    check(s, v->unfit == 0, "%s: every id passes the filter (%d do not)", what, v->unfit);
    if (v->misorders && known)
        check(s, 0, "%s: ids come closest first for the %s metric (%d out of order, worst step %.4f) # TODO %s", what,
              vb_metric_name(s->spec.metric), v->misorders, v->worst, known);
    else
        check(s, v->misorders == 0, "%s: ids come closest first for the %s metric (%d out of order, worst step %.4f)",
              what, vb_metric_name(s->spec.metric), v->misorders, v->worst);
    if (v->repeats && known)
        check(s, 0, "%s: no answer repeats an id (%d repeats) # TODO %s", what, v->repeats, known);
    else
        check(s, v->repeats == 0, "%s: no answer repeats an id (%d repeats)", what, v->repeats);
}

/* The first id the engine returns for q (unfiltered or with tag < below), -1 for none, -2 on failure. */
static int64_t first_id(script *s, vb_conn *c, const float *q, const vb_filter *f) {
    int64_t got[K];
    int n = 0;
    vb_error err = {0};
    if (st(s, vb_conn_search(c, q, K, f, got, &n, &err), &err) != VB_OK) {
        note(s, "search failed: %s", err.message);
        return -2;
    }
    return n > 0 ? got[0] : -1;
}

static int set_ef(script *s, vb_conn *c, int ef, vb_error *err);

/* Does any of the answers for q contain id? */
static int returns(script *s, vb_conn *c, const float *q, const vb_filter *f, int64_t id) {
    int64_t got[K];
    int n = 0;
    vb_error err = {0};
    if (st(s, vb_conn_search(c, q, K, f, got, &n, &err), &err) != VB_OK) {
        note(s, "search failed: %s", err.message);   /* counted as not found by the callers: say why */
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (got[i] == id) return 1;
    return 0;
}

/* Misses of rows that must be found at their own vectors (untagged rows, upserted and reinserted rows): an embedded
 * engine finds every one at EF_HIGH (measured: hnswlib 20 of 20 runs of this script without a single miss in these
 * checks, exact by construction). A server's approximate index may fail to reach a row at EF_HIGH (HNSW's last
 * inserts are its least connected: seen on MHNSW and valkey-search), so each miss is searched again at EF_RETRY:
 * found there, it was a node the search did not reach at EF_HIGH, reported and allowed. Not found even there:
 * - still found at its old vector (an upsert; for a new tag: at its vector without the filter): a lost update;
 * - else, when sizes counts fewer rows than the model, the row is missing: an insert the engine did not apply;
 * - else the row is in the table and the index's graph does not reach it: unreachable. A failure, except on a
 *   server known to do it (opts.known_unreachable), where one row per check is allowed and reported as a TODO.
 *   Measured on MariaDB 11.8 (this script, 3,000 x 24, 43 runs of both metrics, loaded and quiet host): 2 rows
 *   unreachable at ef_search 1000 with every row counted (one untagged row after the parallel load, one reinserted
 *   row), never two in one check. */
typedef struct misses {
    int tried, found;      /* found at EF_HIGH */
    int unreached;         /* missed at EF_HIGH, found at EF_RETRY */
    int lost;              /* not found even at EF_RETRY, and not in the table's count */
    int lost_update;       /* not found at EF_RETRY, still found where the old state would be (seek's old) */
    int unreachable;       /* not found at EF_RETRY, yet every row is counted: a node the graph does not reach */
} misses;

static int64_t rows_now(script *s);
static size_t live_rows(const script *s);

/* Looks for id at q (with filter f) on c at EF_HIGH and counts the outcome in *m. old (may be NULL): where, without a
 * filter, a row whose update was lost would still be found: its old vector, or for a new tag the new vector. */
static void seek(script *s, vb_conn *c, const float *q, const vb_filter *f, int64_t id, const float *old, misses *m) {
    m->tried++;
    if (returns(s, c, q, f, id) == 1) {
        m->found++;
        return;
    }
    vb_error err = {0};
    int again = set_ef(s, c, EF_RETRY, &err) == VB_OK && returns(s, c, q, f, id) == 1;
    if (set_ef(s, c, EF_HIGH, &err) != VB_OK) note(s, "set_search back to %d failed: %s", EF_HIGH, err.message);
    if (again) {
        m->unreached++;
        note(s, "row %lld: missed at ef_search %d, found at %d (a node the search did not reach)", (long long)id,
             EF_HIGH, EF_RETRY);
        return;
    }
    const char *why;
    if (old && returns(s, c, old, NULL, id) == 1) {
        m->lost_update++;
        why = "still found at its old vector: a lost update";
    } else if (rows_now(s) == (int64_t)live_rows(s)) {
        m->unreachable++;
        why = "yet sizes counts every row: in the table, a node the index's graph does not reach";
    } else {
        m->lost++;
        why = "and sizes does not count every row: an insert the engine did not apply";
    }
    note(s, "row %lld: not found even at ef_search %d, %s", (long long)id, EF_RETRY, why);
}

/* The verdict on *m: every row at EF_HIGH for an embedded engine; for a server, none lost, no lost update and no
 * row unreachable (one allowed where opts.known_unreachable names the server's defect; see misses). Misses at
 * EF_HIGH that EF_RETRY finds are reported in the name. */
static int misses_ok(script *s, const misses *m) {
    if (vb_engine_ops_of(s->e)->flags & VB_ENGINE_EMBEDDED) return m->tried > 0 && m->found == m->tried;
    int allowed = s->o->known_unreachable ? 1 : 0;
    return m->tried > 0 && m->lost == 0 && m->lost_update == 0 && m->unreachable <= allowed;
}

/* The check of one seek series, and the TODO that names an allowed unreachable row. */
static void misses_check(script *s, const misses *m, const char *what) {
    char buf[300];
    snprintf(buf, sizeof buf, "%d of %d at ef_search %d; %d more only at %d; %d lost, %d lost updates, %d unreachable",
             m->found, m->tried, EF_HIGH, m->unreached, EF_RETRY, m->lost, m->lost_update, m->unreachable);
    check(s, misses_ok(s, m), "%s: %s", what, buf);
    if (m->unreachable && s->o->known_unreachable && misses_ok(s, m))
        check(s, 0, "%s: no row the index's graph does not reach (%d) # TODO %s", what, m->unreachable,
              s->o->known_unreachable);
}

typedef struct loader {
    script *s;
    size_t from, to, untagged_from;
    int rc;
    vb_error err;
} loader;

/* One connection of its own (the thread rule); rows from untagged_from on go without tags (tags == NULL). */
static void *load_slice(void *arg) {
    loader *l = arg;
    script *s = l->s;
    vb_conn *c = NULL;
    l->rc = st(s, vb_engine_connect(s->e, &c, &l->err), &l->err);
    for (size_t i = l->from; l->rc == VB_OK && i < l->to;) {
        size_t end = i + 250 < l->to ? i + 250 : l->to;
        if (i < l->untagged_from && end > l->untagged_from) end = l->untagged_from;
        const int32_t *t = i >= l->untagged_from ? NULL : s->tags + i;
        const int32_t *cl = i >= l->untagged_from ? NULL : s->classes + i;
        l->rc = st(s, vb_conn_load(c, s->ids + i, s->vecs + i * s->dim, t, cl, end - i, &l->err), &l->err);
        i = end;
    }
    vb_conn_close(&c);
    return NULL;
}

typedef struct searcher {
    script *s;
    int ef;
    int rc;
    verdict v;
    vb_error err;
} searcher;

static void *search_thread(void *arg) {
    searcher *t = arg;
    vb_conn *c = NULL;
    vb_search_params p = {t->ef};
    t->rc = st(t->s, vb_engine_connect(t->s->e, &c, &t->err), &t->err);
    if (t->rc == VB_OK) t->rc = st(t->s, vb_conn_set_search(c, &p, &t->err), &t->err);
    if (t->rc == VB_OK) t->rc = run_queries(t->s, c, t->s->queries, t->s->nq, NULL, &t->v, &t->err);
    vb_conn_close(&c);
    return NULL;
}

static int64_t rows_now(script *s) {
    vb_sizes z;
    vb_error err = {0};
    if (st(s, vb_engine_sizes(s->e, &z, &err), &err) != VB_OK) {
        note(s, "sizes failed: %s", err.message);
        return -2;
    }
    return z.rows;
}

static size_t live_rows(const script *s) {
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) n += s->alive[i];
    return n;
}

/* sizes.rows agrees with the model (or the engine says it cannot count: -1). */
static void rows_ok(script *s, const char *when) {
    int64_t rows = rows_now(s);
    if (rows == -1)
        skip(s, when, "the engine does not report a row count");
    else
        check(s, rows == (int64_t)live_rows(s), "%s: sizes says %lld rows (want %zu)", when, (long long)rows,
              live_rows(s));
}

typedef struct listing {
    script *s;
    uint8_t *seen;
    size_t rows, vectors, twice, unknown, dead, moved;
} listing;

static int listed_row(void *arg, int64_t id, const float *vec) {
    listing *l = arg;
    script *s = l->s;
    int r = row_of(s, id);
    l->rows++;
    if (r < 0) l->unknown++;
    else if (l->seen[r]++) l->twice++;
    else if (!s->alive[r]) l->dead++;
    else if (vec) {
        l->vectors++;
        const float *want = s->vecs + (size_t)r * s->dim;
        /* angular engines may keep the unit-length copy: the same direction is the same row */
        if (s->spec.metric == VB_METRIC_ANGULAR ? vb_distance(VB_METRIC_ANGULAR, vec, want, s->dim) > 1e-5
                                                : vb_distance(VB_METRIC_EUCLIDEAN, vec, want, s->dim) > 1e-5)
            l->moved++;
    }
    return 0;
}

/* The engine's listing of its rows (the rows op, which the mixed phase holds against its write log) is the model's
 * live rows, each once, with the model's vectors where the engine gives them. */
static void listing_ok(script *s, const char *when) {
    listing l = {s, calloc(s->n ? s->n : 1, 1), 0, 0, 0, 0, 0, 0};
    int listed = 0;
    vb_error err = {0};
    int rc = st(s, vb_engine_rows(s->e, listed_row, &l, &listed, &err), &err);
    if (rc == VB_OK && !listed) skip(s, when, "the engine cannot list its rows");
    else if (check(s, rc == VB_OK && l.seen, "%s: the rows listed (%s)", when, rc ? err.message : "ok")) {
        size_t missing = 0;
        for (size_t i = 0; i < s->n; i++) missing += s->alive[i] && !l.seen[i];
        check(s, !missing && !l.twice && !l.unknown && !l.dead,
              "%s: the listing is the %zu live rows, each once (%zu listed: %zu missing, %zu twice, %zu unknown, "
              "%zu removed)", when, live_rows(s), l.rows, missing, l.twice, l.unknown, l.dead);
        check(s, !l.moved, "%s: %zu vectors listed, each the row's last written (%zu differ)", when, l.vectors,
              l.moved);
    }
    free(l.seen);
}

/* The searches of the script are answered by the vector index, not by a scan that would make every check exact:
 * for an engine with an explain op, the plan of the kNN query (as its connections run it, at EF_HIGH) must use the
 * index, at each stage whose answers are judged. Engines without one (the embedded ones are their index) say so. */
static void plan_ok(script *s, const char *when, const vb_filter *f) {
    if (!vb_engine_ops_of(s->e)->explain) return;
    char plan[2048] = "", first[200] = "";
    int uses = -1;
    vb_error err = {0};
    int rc = st(s, vb_engine_explain(s->e, &s->spec, EF_HIGH, K, f, &uses, plan, sizeof plan, &err), &err);
    for (const char *p = plan; *p; p++) {   /* the plan's lines, joined, for the check's name */
        if (strlen(first) + 4 >= sizeof first) break;
        size_t l = strlen(first);
        first[l] = *p == '\n' ? ';' : *p;
        first[l + 1] = '\0';
    }
    check(s, rc == VB_OK && uses == 1, "%s: EXPLAIN: the %skNN plan uses the vector index (%s)", when,
          f ? "filtered " : "", rc ? err.message : first);
}

/* ---- the script --------------------------------------------------------------------------------------- */

static int set_ef(script *s, vb_conn *c, int ef, vb_error *err) {
    vb_search_params p = {ef};
    return st(s, vb_conn_set_search(c, &p, err), err);
}

/* After the server restarts: the old connection says VB_RETRY (or heals itself), a new one works, and the
 * engine's own operations reconnect by themselves. */
static void restart_case(script *s, vb_conn **c) {
    const vb_engine_ops *ops = vb_engine_ops_of(s->e);
    if (ops->flags & VB_ENGINE_EMBEDDED) {
        skip(s, "VB_RETRY after a server restart", "embedded: no server to restart");
        return;
    }
    if (!s->o->restart) {
        skip(s, "VB_RETRY after a server restart", "the caller gave no way to restart this server");
        return;
    }
    vb_error err = {0};
    int rc = s->o->restart(s->o->restart_arg, &err);
    if (!check(s, rc == VB_OK, "the server restarts")) {
        note(s, "%s", err.message);
        return;
    }
    int64_t got[K];
    int n = 0;
    rc = st(s, vb_conn_search(*c, s->queries, K, NULL, got, &n, &err), &err);
    check(s, rc == VB_RETRY || (rc == VB_OK && n == K),
          "a search on a connection from before the restart returns VB_RETRY (or heals: %s)",
          rc == VB_RETRY ? "retry" : rc == VB_OK ? "healed" : "error");
    if (rc != VB_OK) note(s, "  %s", err.message);
    /* The caller's side of the contract: close, connect, set the search parameters again. */
    vb_conn_close(c);
    rc = st(s, vb_engine_connect(s->e, c, &err), &err);
    if (rc == VB_OK) rc = set_ef(s, *c, EF_HIGH, &err);
    if (rc == VB_OK) rc = st(s, vb_conn_search(*c, s->queries, K, NULL, got, &n, &err), &err);
    check(s, rc == VB_OK && n == K, "a new connection answers after the restart (%s)", rc ? err.message : "ok");
    /* The engine's side: its administrative connection reconnects within the call. */
    char version[256];
    rc = st(s, vb_engine_version(s->e, version, sizeof version, &err), &err);
    check(s, rc == VB_OK, "the engine's own operations work on the first call after the restart (%s)",
          rc ? err.message : version);
    rows_ok(s, "after the restart (the data survived)");
}

static void errors_case(script *s) {
    /* The wrapper checks parameters for every engine; the engine decides the rest. */
    vb_kv bogus[] = {{"no_such_parameter", "1"}};
    vb_engine_config cfg = {bogus, 1, NULL, 0};
    vb_engine *e = NULL;
    vb_error err = {0};
    int rc = vb_engine_open(s->o->engine, &cfg, &e, &err);
    check(s, rc == VB_ERROR && e == NULL && strstr(err.message, "no_such_parameter"),
          "an unknown parameter is VB_ERROR naming it (%s)", err.message);
    vb_engine_close(&e);
    vb_table_spec bad = s->spec;
    bad.dim = 0;
    rc = st(s, vb_engine_create(s->e, &bad, &err), &err);
    check(s, rc == VB_ERROR && err.message[0], "a table of dimension 0 is VB_ERROR with a message (%s)", err.message);
    check(s, s->bad_status == 0,
          "every status was VB_OK, VB_ERROR or VB_RETRY, and every failure carried a message and a domain (%d not)",
          s->bad_status);
}

static void main_case(script *s) {
    const vb_engine_ops *ops = vb_engine_ops_of(s->e);
    vb_error err = {0};
    char version[256] = "";
    int rc = st(s, vb_engine_version(s->e, version, sizeof version, &err), &err);
    check(s, rc == VB_OK && version[0], "version (%s)", rc ? err.message : version);
    rc = st(s, vb_engine_create(s->e, &s->spec, &err), &err);
    if (!check(s, rc == VB_OK, "create a %s table of %zu dimensions", vb_metric_name(s->spec.metric), s->dim)) {
        note(s, "%s", err.message);
        return;
    }

    /* Load: two threads, a connection each; the last tenth of the rows has no tag. */
    size_t untagged = s->n - s->n / 10;
    for (size_t i = untagged; i < s->n; i++) s->tagged[i] = 0;
    loader l[2] = {{s, 0, s->n / 2, s->n, 0, {{0}, 0, {0}}}, {s, s->n / 2, s->n, untagged, 0, {{0}, 0, {0}}}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, load_slice, &l[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++)
        if (l[i].rc != VB_OK) note(s, "loader %d: %s", i, l[i].err.message);
    if (!check(s, l[0].rc == VB_OK && l[1].rc == VB_OK,
               "load %zu rows on two connections at once (%zu without a tag and a class)", s->n, s->n - untagged))
        return;
    for (size_t i = 0; i < s->n; i++) s->alive[i] = 1;
    rc = st(s, vb_engine_build(s->e, &err), &err);
    if (!check(s, rc == VB_OK, "build (%s)", rc ? err.message : "ok")) return;
    rows_ok(s, "after the load");
    plan_ok(s, "after the load", NULL);
    if (ops->flags & VB_ENGINE_FILTER) plan_ok(s, "after the load", &(vb_filter){.kind = VB_FILTER_TAG_BELOW, .tag_below = TAG_BELOW});

    vb_conn *a = NULL, *b = NULL;
    rc = st(s, vb_engine_connect(s->e, &a, &err), &err);
    if (rc == VB_OK) rc = st(s, vb_engine_connect(s->e, &b, &err), &err);
    if (!check(s, rc == VB_OK, "two client connections (%s)", rc ? err.message : "ok")) goto out;

    /* Search at a high ef: the answers' shape and their recall. */
    verdict hi, lo1, lo2, lo3, v;
    rc = set_ef(s, a, EF_HIGH, &err);
    if (rc == VB_OK) rc = run_queries(s, a, s->queries, s->nq, NULL, &hi, &err);
    if (!check(s, rc == VB_OK, "%zu searches at ef_search %d (%s)", s->nq, EF_HIGH, rc ? err.message : "ok"))
        goto out;
    answers_ok(s, &hi, "unfiltered", 0);
    check(s, hi.short_answers == 0, "every unfiltered answer has k = %d ids (%d short)", K, hi.short_answers);
    double min_recall = s->o->min_recall > 0 ? s->o->min_recall : 0.9;
    check(s, recall(&hi) >= min_recall, "recall@%d at ef_search %d is %.3f (>= %.2f)", K, EF_HIGH, recall(&hi),
          min_recall);

    /* ef_search belongs to the connection: b searching wide must not widen a. a searches at EF_LOW (lo1), b sets
     * EF_HIGH and searches (v), a searches again without a word (lo2), then sets EF_LOW once more and searches (lo3).
     * Had b's setting reached a, lo2 would be v's and lo3 (a's own setting, explicitly) would fall back; so lo2 is
     * judged against lo3, taken in the same state of the server. Against lo1 it would also carry the drift of a
     * server whose answers at one setting change as its caches do (measured on MariaDB 11.8: 0.973 before b's
     * searches, 0.990 after, in 1 of 43 runs). */
    rc = set_ef(s, a, EF_LOW, &err);
    if (rc == VB_OK) rc = run_queries(s, a, s->queries, s->nq, NULL, &lo1, &err);
    if (rc == VB_OK) rc = set_ef(s, b, EF_HIGH, &err);
    if (rc == VB_OK) rc = run_queries(s, b, s->queries, s->nq, NULL, &v, &err);
    if (rc == VB_OK) rc = run_queries(s, a, s->queries, s->nq, NULL, &lo2, &err);
    if (rc == VB_OK) rc = set_ef(s, a, EF_LOW, &err);
    if (rc == VB_OK) rc = run_queries(s, a, s->queries, s->nq, NULL, &lo3, &err);
    if (check(s, rc == VB_OK, "searches at ef_search %d and %d on two connections (%s)", EF_LOW, EF_HIGH,
              rc ? err.message : "ok")) {
        note(s, "recall@%d: %.3f at ef_search %d, %.3f at %d; the low connection after the other set %d: %.3f, after "
             "setting %d again: %.3f", K, recall(&lo1), EF_LOW, recall(&v), EF_HIGH, EF_HIGH, recall(&lo2), EF_LOW,
             recall(&lo3));
        double gap = recall(&v) - recall(&lo3);
        if (gap < 0.02) {
            skip(s, "ef_search is a per-connection setting", "ef_search does not change this engine's answers here");
        } else {
            note(s, "ef_search changes the answers (recall %.3f -> %.3f)", recall(&lo3), recall(&v));
            check(s, fabs(recall(&lo2) - recall(&lo3)) < gap / 2,
                  "ef_search is a per-connection setting: another connection's set_search leaves this one at %.3f "
                  "(%.3f at its own setting; %.3f would be the other's)", recall(&lo2), recall(&lo3), recall(&v));
        }
    }
    rc = set_ef(s, a, EF_HIGH, &err);

    /* The filter, and rows without a tag. */
    int u = (int)(s->n - 1);   /* an untagged row */
    if (!(ops->flags & VB_ENGINE_FILTER)) {
        skip(s, "the tag filter", "the engine has no filtered search (no VB_ENGINE_FILTER)");
    } else {
        vb_filter f = {.kind = VB_FILTER_TAG_BELOW, .tag_below = TAG_BELOW};
        rc = run_queries(s, a, s->queries, s->nq, &f, &v, &err);
        if (check(s, rc == VB_OK, "filtered searches, tag < %d (%s)", TAG_BELOW, rc ? err.message : "ok")) {
            answers_ok(s, &v, "filtered", 1);
            note(s, "filtered tag < %d: recall@%d %.3f, %d short answers of %zu", TAG_BELOW, K, recall(&v),
                 v.short_answers, s->nq);
            check(s, recall(&v) >= 0.5, "the filter keeps the right rows: recall@%d %.3f (>= 0.5)", K, recall(&v));
        }
        /* Twenty untagged rows, each searched at its own vector (misses: seek). "Passes the filter" allows none. */
        vb_filter all = {.kind = VB_FILTER_TAG_BELOW, .tag_below = INT32_MAX};
        int passed = 0, tries = 0;
        misses um = {0};
        for (int r = 0; r < 20 && u - r >= 0 && !s->tagged[u - r]; r++, tries++) {
            const float *q = s->vecs + (size_t)(u - r) * s->dim;
            seek(s, a, q, NULL, u - r, NULL, &um);
            passed += returns(s, a, q, &all, u - r) != 0;
        }
        misses_check(s, &um, "rows without a tag are found without a filter (at their own vectors)");
        check(s, tries > 0 && passed == 0,
              "a row without a tag never passes a tag filter, not even tag < INT32_MAX: %d of %d did", passed, tries);
    }
    /* The class filter (the dataset's real class column, a query's own class or another): every answer passes,
     * exact answers are judged against the model's rows of that class, rows without a class never pass. */
    if (!(ops->flags & VB_ENGINE_FILTER_CLASS)) {
        skip(s, "the class filter", "the engine has no class filter (no VB_ENGINE_FILTER_CLASS)");
    } else {
        plan_ok(s, "after the load", &(vb_filter){.kind = VB_FILTER_CLASS_EQ, .cls = 0});
        verdict own, other;
        rc = run_queries_by(s, a, s->queries, s->nq, NULL, 1, &own, &err);
        if (rc == VB_OK) rc = run_queries_by(s, a, s->queries, s->nq, NULL, 2, &other, &err);
        if (check(s, rc == VB_OK, "class-filtered searches, each query on its own class and on another (%s)",
                  rc ? err.message : "ok")) {
            answers_ok(s, &own, "own class", 1);
            answers_ok(s, &other, "another class", 1);
            note(s, "class filters: recall@%d %.3f on the query's own class (%d short), %.3f on another (%d short)", K,
                 recall(&own), own.short_answers, recall(&other), other.short_answers);
            check(s, recall(&own) >= 0.5, "the class filter keeps the query's class: recall@%d %.3f (>= 0.5)", K,
                  recall(&own));
            if (vb_engine_ops_of(s->e)->flags & VB_ENGINE_EMBEDDED)
                check(s, recall(&other) >= 0.5, "another class's rows, far from the query, are found: recall@%d %.3f "
                      "(>= 0.5; an embedded engine's graph walk goes on past rows that fail)", K, recall(&other));
        }
        int passed = 0, tries = 0;
        for (int r = 0; r < 20 && u - r >= 0 && !s->tagged[u - r]; r++, tries++) {
            vb_filter fc = vb_filter_class(s->classes[u - r]);
            passed += returns(s, a, s->vecs + (size_t)(u - r) * s->dim, &fc, u - r) != 0;
        }
        check(s, tries > 0 && passed == 0,
              "a row loaded without a class never passes a class filter, even its centre's: %d of %d did", passed,
              tries);
    }
    /* The metric: a stored vector scaled by 3 is at angular distance 0 from itself, far in euclidean terms. */
    if (s->spec.metric == VB_METRIC_ANGULAR) {
        float *q = malloc(s->dim * sizeof *q);
        for (size_t j = 0; q && j < s->dim; j++) q[j] = 3.0f * s->vecs[(size_t)7 * s->dim + j];
        check(s, q && returns(s, a, q, NULL, 7) == 1, "angular: a row's vector scaled by 3 still finds that row");
        free(q);
    }

    if (!ops->remove || !ops->insert) {
        skip(s, "remove and insert", "the engine has no remove or insert op");
        goto concurrent;
    }
    /* Remove every 10th row (untagged ones among them), then the same ids again. */
    size_t nr = 0;
    int64_t *gone = malloc((s->n / 10 + 1) * sizeof *gone);
    for (size_t i = 0; i < s->n; i += 10) gone[nr++] = (int64_t)i;
    rc = st(s, vb_conn_remove(b, gone, nr, &err), &err);
    check(s, rc == VB_OK, "remove %zu rows (%s)", nr, rc ? err.message : "ok");
    for (size_t i = 0; i < nr; i++) s->alive[gone[i]] = 0;
    rc = st(s, vb_conn_remove(b, gone, nr, &err), &err);
    check(s, rc == VB_OK, "removing the same ids again is not an error (absent ids are skipped) (%s)",
          rc ? err.message : "ok");
    rows_ok(s, "after the remove");
    plan_ok(s, "after the remove", NULL);
    int found_gone = 0;
    for (size_t i = 0; i < nr && i < 30; i++) found_gone += returns(s, a, s->vecs + (size_t)gone[i] * s->dim, NULL, gone[i]) != 0;
    check(s, found_gone == 0, "a removed row is not returned even for its own vector (%d are)", found_gone);
    rc = run_queries(s, a, s->queries, s->nq, NULL, &v, &err);
    if (check(s, rc == VB_OK, "searches after the remove (%s)", rc ? err.message : "ok")) answers_ok(s, &v, "after remove", 0);

    /* Insert of live ids: an upsert. Five tagged rows get a far-away vector and tag 0. */
    enum { NU = 10 };
    int64_t up[NU];
    float *nv = malloc(NU * s->dim * sizeof *nv);
    int32_t zero[NU] = {0};   /* every element 0 */
    int32_t fresh[NU];        /* a class no row had: the upsert replaces the class with the vector */
    for (int i = 0; i < NU; i++) fresh[i] = CLASSES;
    float *old = malloc(NU * s->dim * sizeof *old);
    for (int i = 0; i < NU; i++) {
        up[i] = 11 + 10 * i;   /* live (not a multiple of 10) and tagged (below the untagged tenth) */
        memcpy(old + i * s->dim, s->vecs + (size_t)up[i] * s->dim, s->dim * sizeof *old);
    }
    make_points(nv, NU, s->dim, s->centres, NULL);   /* new places inside the data, where the graph leads */
    rc = st(s, vb_conn_insert(b, up, nv, zero, fresh, NU, &err), &err);
    if (check(s, rc == VB_OK, "insert of %d live ids is an upsert, not an error (%s)", NU, rc ? err.message : "ok")) {
        for (int i = 0; i < NU; i++) {
            memcpy(s->vecs + (size_t)up[i] * s->dim, nv + i * s->dim, s->dim * sizeof *nv);
            s->tags[up[i]] = 0;
            s->classes[up[i]] = CLASSES;
        }
        rows_ok(s, "after the upsert (no row added)");
        listing_ok(s, "after the upsert");
        if (ops->flags & VB_ENGINE_FILTER) plan_ok(s, "after the upsert", &(vb_filter){.kind = VB_FILTER_TAG_BELOW, .tag_below = 1});
        int left = 0;
        misses moved = {0}, retagged = {0}, reclassed = {0};
        vb_filter t1 = {.kind = VB_FILTER_TAG_BELOW, .tag_below = 1}, c1 = vb_filter_class(CLASSES);
        for (int i = 0; i < NU; i++) {
            seek(s, a, nv + i * s->dim, NULL, up[i], old + i * s->dim, &moved);
            left += first_id(s, a, old + i * s->dim, NULL) != up[i];
            if (ops->flags & VB_ENGINE_FILTER) seek(s, a, nv + i * s->dim, &t1, up[i], nv + i * s->dim, &retagged);
            if (ops->flags & VB_ENGINE_FILTER_CLASS)
                seek(s, a, nv + i * s->dim, &c1, up[i], nv + i * s->dim, &reclassed);
        }
        /* Found at the new place (the upserted rows are the graph's last inserts, its least connected: seek); an
         * upsert that left the vector in place is a lost update. A stale copy at the old place is never allowed. */
        misses_check(s, &moved, "the upserted rows are found at their new vectors");
        check(s, left == NU, "and no longer at their old ones: another row comes first there (%d of %d)", left, NU);
        if (ops->flags & VB_ENGINE_FILTER)
            misses_check(s, &retagged, "their new tag 0 passes tag < 1 (the tag was replaced too)");
        if (ops->flags & VB_ENGINE_FILTER_CLASS)
            misses_check(s, &reclassed, "their new class passes class = 16, a class no row had (the class was "
                         "replaced too)");
    }
    free(nv);
    free(old);

    /* Insert of removed ids: they come back (tagged and untagged ones in two calls). */
    size_t nt = 0;
    while (nt < nr && s->tagged[gone[nt]]) nt++;
    int32_t *gt = malloc((nr + 1) * sizeof *gt), *gc = malloc((nr + 1) * sizeof *gc);
    float *gv = malloc((nr + 1) * s->dim * sizeof *gv);
    for (size_t i = 0; i < nr; i++) {
        gt[i] = s->tags[gone[i]];
        gc[i] = s->classes[gone[i]];
        memcpy(gv + i * s->dim, s->vecs + (size_t)gone[i] * s->dim, s->dim * sizeof *gv);
    }
    rc = st(s, vb_conn_insert(b, gone, gv, gt, gc, nt, &err), &err);
    if (rc == VB_OK && nt < nr)
        rc = st(s, vb_conn_insert(b, gone + nt, gv + nt * s->dim, NULL, NULL, nr - nt, &err), &err);
    if (check(s, rc == VB_OK, "insert of the %zu removed ids brings them back (%s)", nr, rc ? err.message : "ok")) {
        for (size_t i = 0; i < nr; i++) s->alive[gone[i]] = 1;
        rows_ok(s, "after the reinsert");
        listing_ok(s, "after the reinsert");
        plan_ok(s, "after the reinsert", NULL);
        misses back = {0};
        for (size_t i = 0; i < nr && i < 30; i++) seek(s, a, gv + i * s->dim, NULL, gone[i], NULL, &back);
        misses_check(s, &back, "reinserted rows are found at their vectors");
        rc = run_queries(s, a, s->queries, s->nq, NULL, &v, &err);
        if (rc == VB_OK) answers_ok(s, &v, "after the reinsert", 0);
        check(s, rc == VB_OK && recall(&v) >= min_recall, "recall@%d after remove + upsert + reinsert %.3f", K,
              recall(&v));
    }
    free(gt);
    free(gc);
    free(gv);
    free(gone);

concurrent:;
    /* One connection per thread, searching at once, each at its own ef. */
    searcher t[2] = {{s, EF_LOW, 0, {0}, {{0}, 0, {0}}}, {s, EF_HIGH, 0, {0}, {{0}, 0, {0}}}};
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, search_thread, &t[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    check(s, t[0].rc == VB_OK && t[1].rc == VB_OK && t[0].v.dead + t[1].v.dead == 0,
          "two threads search at once, a connection each (%s)",
          t[0].rc ? t[0].err.message : t[1].rc ? t[1].err.message : "ok");

    restart_case(s, &a);
out:
    vb_conn_close(&a);
    vb_conn_close(&b);
}

int vb_conformance_run(const vb_conformance_opts *o, const vb_conformance_report *r) {
    script s = {.o = o, .r = r, .name = o->engine};
    const vb_engine_ops *ops = vb_engine_find(o->engine);
    if (!ops) {
        check(&s, 0, "is registered");
        return s.failed;
    }
    if (ops->flags & VB_ENGINE_STUB) {
        skip(&s, "the contract", "a stub for measuring the client: its answers are not nearest neighbours");
        return 0;
    }
    s.n = o->rows ? o->rows : 3000;
    s.dim = o->dim ? o->dim : 48;
    s.nq = o->queries ? o->queries : 60;
    s.spec = (vb_table_spec){.dim = s.dim, .metric = o->metric, .capacity = s.n, .m = 8, .ef_construction = 40};
    rng_state = 20240611;
    float *centres = s.centres = malloc(16 * s.dim * sizeof *centres);
    s.vecs = malloc(s.n * s.dim * sizeof *s.vecs);
    s.queries = malloc(s.nq * s.dim * sizeof *s.queries);
    s.ids = malloc(s.n * sizeof *s.ids);
    s.tags = malloc(s.n * sizeof *s.tags);
    s.classes = malloc(s.n * sizeof *s.classes);
    s.qclass = malloc(s.nq * sizeof *s.qclass);
    s.tagged = malloc(s.n);
    s.alive = calloc(s.n, 1);
    if (!centres || !s.vecs || !s.queries || !s.ids || !s.tags || !s.classes || !s.qclass || !s.tagged || !s.alive) {
        check(&s, 0, "out of memory for %zu x %zu", s.n, s.dim);
        goto done;
    }
    for (size_t i = 0; i < 16 * s.dim; i++) centres[i] = 2.0f * rng_normal();
    make_points(s.vecs, s.n, s.dim, centres, s.classes);
    make_points(s.queries, s.nq, s.dim, centres, s.qclass);
    for (size_t i = 0; i < s.n; i++) {
        s.ids[i] = (int64_t)i;
        s.tags[i] = vb_dataset_tag(s.ids[i]);
        s.tagged[i] = 1;
    }
    note(&s, "%s: %zu rows x %zu, %s, %zu queries, k %d, M %d", o->engine, s.n, s.dim, vb_metric_name(o->metric),
         s.nq, K, s.spec.m);
    vb_engine_config cfg = {o->params, o->n_params, o->data_dir, 0};
    vb_error err = {0};
    int rc = st(&s, vb_engine_open(o->engine, &cfg, &s.e, &err), &err);
    if (check(&s, rc == VB_OK, "open (%s)", rc ? err.message : "ok")) {
        main_case(&s);
        errors_case(&s);
    }
    vb_engine_close(&s.e);
done:
    free(centres);
    free(s.vecs);
    free(s.queries);
    free(s.ids);
    free(s.tags);
    free(s.classes);
    free(s.qclass);
    free(s.tagged);
    free(s.alive);
    return s.failed;
}
