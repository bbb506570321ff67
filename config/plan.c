/* Plan expansion: profile -> ordered work items with stable keys.
 *
 * One item per unit of work the coordinator assigns and checkpoints: a build, one recall-sweep point per
 * ef_search value, one concurrency window per (clients, repeat), one filtered point per selectivity, one churn
 * pass (its repeats are measurements inside the pass), one cold start, one capacity search. Keys are made only of names and canonical values from the profile, so loading the same profile again
 * (on resume) yields the same keys; each item's point carries every value the agent needs to run it, typed
 * (vb_point, parsed here and nowhere else) and as text (the plan table's point column). */
#include "config/plan.h"
#include "engines/filter.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const phase_names[VB_PHASE__COUNT] = {"build", "recall_sweep", "concurrency", "filtered",
                                                         "churn", "streaming", "cold_start", "capacity", "mixed"};

vb_phase_kind vb_phase_order(int i) {
    static const vb_phase_kind order[VB_PHASE__COUNT] = {VB_PHASE_BUILD, VB_PHASE_RECALL_SWEEP, VB_PHASE_CONCURRENCY,
                                                         VB_PHASE_CAPACITY, VB_PHASE_FILTERED, VB_PHASE_COLD_START,
                                                         VB_PHASE_CHURN, VB_PHASE_STREAMING, VB_PHASE_MIXED};
    return i >= 0 && i < VB_PHASE__COUNT ? order[i] : VB_PHASE__COUNT;
}

const char *vb_phase_name(vb_phase_kind k) {
    return (unsigned)k < VB_PHASE__COUNT ? phase_names[k] : "unknown";
}

int vb_phase_parse(const char *name, vb_phase_kind *out) {
    for (int k = 0; k < VB_PHASE__COUNT; k++)
        if (strcmp(phase_names[k], name) == 0) {
            *out = (vb_phase_kind)k;
            return 0;
        }
    return -1;
}

/* The plan being built; items grow as they are added. */
typedef struct builder {
    vb_plan *plan;
    size_t cap;
    vb_error *err;
    long build, builds;   /* the build the items being added run on, of the configuration's build_repeats */
} builder;

static void item_free(vb_plan_item *it) {
    for (size_t i = 0; i < it->n_point; i++) {
        free((char *)it->point[i].key);
        free((char *)it->point[i].value);
    }
}

static int point_add(builder *b, vb_plan_item *it, const char *key, const char *value) {
    if (it->n_point == VB_PLAN_MAX_POINT)
        return vb_error_set(b->err, "plan", 1, "%s: more than %d point parameters", it->key, VB_PLAN_MAX_POINT);
    char *k = strdup(key), *v = strdup(value);
    if (!k || !v) {
        free(k);
        free(v);
        return vb_error_set(b->err, "plan", 1, "out of memory");
    }
    it->point[it->n_point].key = k;
    it->point[it->n_point].value = v;
    it->n_point++;
    return VB_OK;
}

/* Copies a phase value into the point (values are canonical text from the profile). */
static int point_copy(builder *b, vb_plan_item *it, const vb_profile_phase *ph, const char *key) {
    const char *v = vb_kv_get(ph->params, ph->n_params, key, NULL);
    if (!v) return vb_error_set(b->err, "plan", 1, "phase '%s' has no value for '%s'", ph->kind, key);
    return point_add(b, it, key, v);
}

/* The typed value of a canonical text (the profile checked its type and range, and filled in its default). */
static int parse_long(builder *b, const vb_plan_item *it, const char *key, const char *v, long *out) {
    char *end;
    *out = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end) return vb_error_set(b->err, "plan", 1, "%s: '%s' is not an integer (%s)", it->key, key,
                                               v ? v : "missing");
    return VB_OK;
}

static int parse_double(builder *b, const vb_plan_item *it, const char *key, const char *v, double *out) {
    char *end;
    *out = v ? strtod(v, &end) : 0;
    if (!v || !*v || *end) return vb_error_set(b->err, "plan", 1, "%s: '%s' is not a number (%s)", it->key, key,
                                               v ? v : "missing");
    return VB_OK;
}

/* The phase's value of key, typed, and kept as text in the point (copy != 0). */
static int take_long(builder *b, vb_plan_item *it, const vb_profile_phase *ph, const char *key, int copy, long *out) {
    if (copy && point_copy(b, it, ph, key)) return VB_ERROR;
    return parse_long(b, it, key, vb_kv_get(ph->params, ph->n_params, key, NULL), out);
}

static int take_double(builder *b, vb_plan_item *it, const vb_profile_phase *ph, const char *key, double *out) {
    if (point_copy(b, it, ph, key)) return VB_ERROR;
    return parse_double(b, it, key, vb_kv_get(ph->params, ph->n_params, key, NULL), out);
}

/* Appends an item "<campaign>/<engine>/<dataset>/<phase>[/<point>]"; returns it, or NULL (err set). */
static vb_plan_item *item_add(builder *b, vb_phase_kind kind, size_t engine, size_t dataset, const char *point) {
    vb_plan *plan = b->plan;
    const vb_profile *p = plan->profile;
    if (plan->n_items == VB_PLAN_MAX_ITEMS) {   /* plan_size() said otherwise: never grow past the limit */
        vb_error_set(b->err, "plan", 1, "more than %d work items", VB_PLAN_MAX_ITEMS);
        return NULL;
    }
    if (plan->n_items == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 32;
        vb_plan_item *items = realloc(plan->items, cap * sizeof *items);
        if (!items) {
            vb_error_set(b->err, "plan", 1, "out of memory");
            return NULL;
        }
        plan->items = items;
        b->cap = cap;
    }
    vb_plan_item *it = &plan->items[plan->n_items];
    memset(it, 0, sizeof *it);
    /* a repeated build and the sweep on it name the build: ".../build/build=2", ".../ef_search=40,build=2" */
    char with_build[160];
    int named = b->builds > 1 && (kind == VB_PHASE_BUILD || kind == VB_PHASE_RECALL_SWEEP);
    if (named) {
        snprintf(with_build, sizeof with_build, "%s%sbuild=%ld", point ? point : "", point ? "," : "", b->build);
        point = with_build;
    }
    int n = snprintf(it->key, sizeof it->key, "%s/%s/%s/%s%s%s", p->name, p->engines[engine].name,
                     p->datasets[dataset].name, vb_phase_name(kind), point ? "/" : "", point ? point : "");
    if (n < 0 || (size_t)n >= sizeof it->key) {
        vb_error_set(b->err, "plan", 1, "plan key too long (%d bytes, at most %zu): %s...", n, sizeof it->key - 1,
                     it->key);
        return NULL;
    }
    it->seq = (int)plan->n_items;
    it->kind = kind;
    it->engine = engine;
    it->dataset = dataset;
    it->role = "client";
    it->p.build = b->build;
    plan->n_items++;
    if (named) {
        char v[24];
        snprintf(v, sizeof v, "%ld", b->build);
        if (point_add(b, it, "build", v)) return NULL;
    }
    return it;
}

/* Splits a canonical comma-separated list value into items[] (pointers into buf). Returns the count or -1. */
static int split_list(builder *b, const vb_profile_phase *ph, const char *key, char *buf, size_t len,
                      char **items, int cap) {
    const char *v = vb_kv_get(ph->params, ph->n_params, key, NULL);
    if (!v || strlen(v) >= len) {
        vb_error_set(b->err, "plan", 1, "phase '%s': no usable list '%s'", ph->kind, key);
        return -1;
    }
    snprintf(buf, len, "%s", v);
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == cap) {
            vb_error_set(b->err, "plan", 1, "phase '%s': list '%s' longer than %d", ph->kind, key, cap);
            return -1;
        }
        items[n++] = tok;
    }
    return n;
}

static int expand_items(builder *b, const vb_profile_phase *ph, vb_phase_kind kind, size_t e, size_t d, char *buf,
                        size_t buf_len, char *point, size_t point_len, char **list);

/* The phase as engine e runs it: its values, with the engine's own settings in place of the profile's
 * (engines[].phases; the loader checked them against the phase's schema), and those the profile leaves out
 * (an optional key: repeats). params: room for cap. */
static vb_profile_phase engine_phase(const vb_profile *p, size_t e, const vb_profile_phase *ph, vb_kv *params,
                                     size_t cap) {
    vb_profile_phase out = *ph;
    size_t n = 0;
    for (size_t i = 0; i < ph->n_params && n < cap; i++) {
        params[n] = ph->params[i];
        params[n++].value = vb_profile_engine_phase_value(p, e, ph->kind, ph->params[i].key);
    }
    const vb_profile_engine *en = &p->engines[e];
    size_t kl = strlen(ph->kind);
    for (size_t i = 0; i < en->n_overrides && n < cap; i++) {
        const char *k = en->overrides[i].key;
        if (strncmp(k, ph->kind, kl) != 0 || k[kl] != '.' || vb_kv_get(ph->params, ph->n_params, k + kl + 1, NULL))
            continue;
        params[n].key = k + kl + 1;
        params[n++].value = en->overrides[i].value;
    }
    out.params = params;
    out.n_params = n;
    return out;
}

/* The items of one phase for one (engine, dataset) pair, in list order. */
static int expand_phase(builder *b, const vb_profile_phase *profile_ph, size_t e, size_t d) {
    vb_phase_kind kind;
    const vb_profile *p = b->plan->profile;
    vb_kv params[64];   /* a phase has at most 8 keys, each at most once in the profile and once in the engine */
    vb_profile_phase merged = engine_phase(p, e, profile_ph, params, sizeof params / sizeof params[0]);
    const vb_profile_phase *ph = &merged;
    if (vb_phase_parse(ph->kind, &kind) != 0) return vb_error_set(b->err, "plan", 1, "unknown phase '%s'", ph->kind);
    char buf[2048], point[128];
    char *list[VB_MAX_LIST];
    size_t first = b->plan->n_items;
    int rc = expand_items(b, ph, kind, e, d, buf, sizeof buf, point, sizeof point, list);
    /* Every item may have to rebuild its pair's index (an agent that restarted has none): it carries the build
     * phase's load settings (the build item's own included), the engine's own when it has them. */
    for (size_t i = first; rc == VB_OK && i < b->plan->n_items; i++) {
        vb_plan_item *x = &b->plan->items[i];
        if (parse_long(b, x, "load_connections", vb_profile_engine_phase_value(p, e, "build", "load_connections"),
                       &x->p.load_connections) ||
            parse_long(b, x, "load_batch", vb_profile_engine_phase_value(p, e, "build", "load_batch"), &x->p.load_batch))
            rc = VB_ERROR;
    }
    return rc;
}

/* Adds the item of point "KEY=VALUE", with ",repeat=R" when the phase repeats its points (the typed repeat too). */
static int repeat_key(builder *b, char *point, size_t point_len, const char *key, const char *value, long repeats,
                      long r, vb_plan_item **it, vb_phase_kind kind, size_t e, size_t d) {
    char rep[24];
    snprintf(rep, sizeof rep, "%ld", r);
    if (repeats > 1) snprintf(point, point_len, "%s=%s,repeat=%s", key, value, rep);
    else snprintf(point, point_len, "%s=%s", key, value);
    if (!(*it = item_add(b, kind, e, d, point))) return VB_ERROR;
    (*it)->p.repeat = r;
    return repeats > 1 ? point_add(b, *it, "repeat", rep) : VB_OK;
}

/* The recall sweep at several client counts: one item per (clients, ef_search, repeat), the client counts varying
 * slowest (one curve after the other), keyed "ef_search=E,clients=C[,repeat=R]"; each a closed-loop window of
 * window_s (default 10 s) after warmup_s (default 2 s). */
static int expand_sweep_clients(builder *b, const vb_profile_phase *ph, size_t e, size_t d, char *buf, size_t buf_len,
                                char *point, size_t point_len, char **list, long repeats) {
    char cbuf[512], *clients[VB_MAX_LIST];
    int n = split_list(b, ph, "ef_search", buf, buf_len, list, VB_MAX_LIST);
    int nc = n < 0 ? -1 : split_list(b, ph, "clients", cbuf, sizeof cbuf, clients, VB_MAX_LIST);
    if (nc < 0) return VB_ERROR;
    const char *window = vb_kv_get(ph->params, ph->n_params, "window_s", "10");
    const char *warmup = vb_kv_get(ph->params, ph->n_params, "warmup_s", "2");
    for (int c = 0; c < nc; c++)
        for (int i = 0; i < n; i++)
            for (long r = 1; r <= repeats; r++) {
                char value[96];
                snprintf(value, sizeof value, "%s,clients=%s", list[i], clients[c]);
                vb_plan_item *it;
                if (repeat_key(b, point, point_len, "ef_search", value, repeats, r, &it, VB_PHASE_RECALL_SWEEP, e, d) ||
                    point_add(b, it, "ef_search", list[i]) || parse_long(b, it, "ef_search", list[i], &it->p.ef_search) ||
                    point_add(b, it, "clients", clients[c]) || parse_long(b, it, "clients", clients[c], &it->p.clients) ||
                    point_add(b, it, "window_s", window) || parse_double(b, it, "window_s", window, &it->p.window_s) ||
                    point_add(b, it, "warmup_s", warmup) || parse_double(b, it, "warmup_s", warmup, &it->p.warmup_s))
                    return VB_ERROR;
            }
    return VB_OK;
}

/* The items of one phase (kind) for one pair; buffers are the caller's. */
static int expand_items(builder *b, const vb_profile_phase *ph, vb_phase_kind kind, size_t e, size_t d, char *buf,
                        size_t buf_len, char *point, size_t point_len, char **list) {
    vb_plan_item *it;
    int n;
    /* repeats of a sweep or filtered point (concurrency has its own): absent, the keys are what they were */
    long repeats = atol(vb_kv_get(ph->params, ph->n_params, "repeats", "1"));
    if (repeats < 1) repeats = 1;
    switch (kind) {
    case VB_PHASE_BUILD:
        /* a configuration that searches another's index (it differs only in search-time parameters) has no
         * build of its own: it attaches to that one's */
        if (b->plan->profile->engines[e].build_of != e) return VB_OK;
        if (!(it = item_add(b, kind, e, d, NULL))) return VB_ERROR;
        if (point_copy(b, it, ph, "load_batch") || point_copy(b, it, ph, "load_connections")) return VB_ERROR;
        return VB_OK;
    case VB_PHASE_RECALL_SWEEP:
        if (vb_kv_get(ph->params, ph->n_params, "clients", NULL))
            return expand_sweep_clients(b, ph, e, d, buf, buf_len, point, point_len, list, repeats);
        if ((n = split_list(b, ph, "ef_search", buf, buf_len, list, VB_MAX_LIST)) < 0) return VB_ERROR;
        for (int i = 0; i < n; i++)
            for (long r = 1; r <= repeats; r++) {
                if (repeat_key(b, point, point_len, "ef_search", list[i], repeats, r, &it, kind, e, d)) return VB_ERROR;
                if (point_add(b, it, "ef_search", list[i]) ||
                    parse_long(b, it, "ef_search", list[i], &it->p.ef_search) ||
                    take_long(b, it, ph, "queries", 1, &it->p.queries))
                    return VB_ERROR;
                it->p.answers = strcmp(vb_kv_get(ph->params, ph->n_params, "answers", "true"), "false") != 0;
            }
        return VB_OK;
    case VB_PHASE_CONCURRENCY: {
        /* Closed-loop keys are "clients=N,repeat=R"; an open loop appends ",mode=open,target_rate=X". */
        long repeats = atol(vb_kv_get(ph->params, ph->n_params, "repeats", "1"));
        const char *mode = vb_kv_get(ph->params, ph->n_params, "mode", "closed");
        const char *rate = vb_kv_get(ph->params, ph->n_params, "target_rate", NULL);
        int open = strcmp(mode, "open") == 0;
        if (open && !rate) return vb_error_set(b->err, "plan", 1, "phase 'concurrency': mode open without a target_rate");
        if ((n = split_list(b, ph, "clients", buf, buf_len, list, VB_MAX_LIST)) < 0) return VB_ERROR;
        for (int i = 0; i < n; i++)
            for (long r = 1; r <= repeats; r++) {
                char rep[24];
                snprintf(rep, sizeof rep, "%ld", r);
                snprintf(point, point_len, "clients=%s,repeat=%s%s%s", list[i], rep,
                         open ? ",mode=open,target_rate=" : "", open ? rate : "");
                if (!(it = item_add(b, kind, e, d, point))) return VB_ERROR;
                it->p.repeat = r;
                it->p.mode = open ? VB_POINT_OPEN : VB_POINT_CLOSED;
                if (point_add(b, it, "clients", list[i]) || parse_long(b, it, "clients", list[i], &it->p.clients) ||
                    point_add(b, it, "repeat", rep) || take_long(b, it, ph, "ef_search", 1, &it->p.ef_search) ||
                    take_double(b, it, ph, "window_s", &it->p.window_s) ||
                    take_double(b, it, ph, "warmup_s", &it->p.warmup_s) || point_add(b, it, "mode", mode) ||
                    (open && (point_add(b, it, "target_rate", rate) ||
                              parse_double(b, it, "target_rate", rate, &it->p.target_rate))))
                    return VB_ERROR;
            }
        return VB_OK;
    }
    case VB_PHASE_FILTERED: {
        /* one item per (predicate, selectivity, repeat); range keeps its keys ("selectivity=0.1"), the other
         * predicates name theirs ("predicate=and,selectivity=.."); the class predicates have no selectivity (their
         * share is the data's): "predicate=label_own", "predicate=class,class=3" */
        char preds[256], *pred_list[8], *save = NULL;
        snprintf(preds, sizeof preds, "%s", vb_kv_get(ph->params, ph->n_params, "predicate", "range"));
        int np = 0;
        for (char *tok = strtok_r(preds, ",", &save); tok && np < 8; tok = strtok_r(NULL, ",", &save))
            pred_list[np++] = tok;
        if ((n = split_list(b, ph, "selectivity", buf, buf_len, list, VB_MAX_LIST)) < 0) return VB_ERROR;
        for (int pi = 0; pi < np; pi++) {
            const char *pred = pred_list[pi];
            int code = vb_filter_predicate_parse(pred), range = code == VB_PRED_RANGE;
            int by_class = vb_filter_predicate_is_class(code);
            if (code < 0) return vb_error_set(b->err, "plan", 1, "phase 'filtered': unknown predicate '%s'", pred);
            const char *cls = vb_kv_get(ph->params, ph->n_params, "class", "0");
            for (int i = 0; i < (by_class ? 1 : n); i++)
                for (long r = 1; r <= repeats; r++) {
                    if (by_class)
                        snprintf(point, point_len, "predicate=%s%s%s", pred, code == VB_PRED_CLASS ? ",class=" : "",
                                 code == VB_PRED_CLASS ? cls : "");
                    else if (range)
                        snprintf(point, point_len, "selectivity=%s", list[i]);
                    else
                        snprintf(point, point_len, "predicate=%s,selectivity=%s", pred, list[i]);
                    char rep[24];
                    snprintf(rep, sizeof rep, "%ld", r);
                    if (repeats > 1) snprintf(point + strlen(point), point_len - strlen(point), ",repeat=%s", rep);
                    if (!(it = item_add(b, kind, e, d, point))) return VB_ERROR;
                    it->p.repeat = r;
                    if (repeats > 1 && point_add(b, it, "repeat", rep)) return VB_ERROR;
                    it->p.predicate = range ? 0 : code;
                    if ((!range && point_add(b, it, "predicate", pred)) ||
                        (!by_class && (point_add(b, it, "selectivity", list[i]) ||
                                       parse_double(b, it, "selectivity", list[i], &it->p.selectivity))) ||
                        (code == VB_PRED_CLASS && point_add(b, it, "class", cls)) ||
                        take_long(b, it, ph, "queries", 1, &it->p.queries) ||
                        take_long(b, it, ph, "ef_search", 1, &it->p.ef_search))
                        return VB_ERROR;
                    it->p.filter_class = atoi(cls);
                    it->p.class_seed = atol(vb_kv_get(ph->params, ph->n_params, "class_seed", "1"));
                }
        }
        return VB_OK;
    }
    case VB_PHASE_CHURN:
        if (!(it = item_add(b, kind, e, d, NULL))) return VB_ERROR;
        /* queries and insert_batch are typed but not in the text: the point column of a database made before
         * they travelled stays what a new one holds. */
        if (take_double(b, it, ph, "fraction", &it->p.fraction) || take_long(b, it, ph, "limit_s", 1, &it->p.limit_s) ||
            take_long(b, it, ph, "ef_search", 1, &it->p.ef_search) || point_copy(b, it, ph, "on_resume") ||
            take_long(b, it, ph, "queries", 0, &it->p.queries) ||
            take_long(b, it, ph, "insert_batch", 0, &it->p.insert_batch))
            return VB_ERROR;
        /* repeats measure before and after several times around the one delete and reinsert (the index cannot be
         * brought back to its first state without a rebuild); the key stays ".../churn", the point text names
         * the repeats only when there are several */
        it->p.repeats = repeats;
        if (repeats > 1) {
            char rep[24];
            snprintf(rep, sizeof rep, "%ld", repeats);
            if (point_add(b, it, "repeats", rep)) return VB_ERROR;
        }
        it->p.on_resume = strcmp(vb_kv_get(ph->params, ph->n_params, "on_resume", ""), "restart") == 0
                              ? VB_RESUME_RESTART : VB_RESUME_CONTINUE;
        return VB_OK;
    case VB_PHASE_STREAMING: {
        /* one item per insert rate: ".../streaming/insert_rate=200" (or =max); each builds its own index of the
         * initial fraction and grows it through the stages */
        char sbuf[512], *stages[VB_MAX_LIST];
        int ns = split_list(b, ph, "stages", sbuf, sizeof sbuf, stages, VB_MAX_LIST);
        if ((n = split_list(b, ph, "insert_rate", buf, buf_len, list, VB_MAX_LIST)) < 0 || ns < 0) return VB_ERROR;
        if (ns > VB_PLAN_MAX_STAGES)
            return vb_error_set(b->err, "plan", 1, "phase 'streaming': at most %d stages, got %d", VB_PLAN_MAX_STAGES, ns);
        const char *mode = vb_kv_get(ph->params, ph->n_params, "mode", "closed");
        int open = strcmp(mode, "open") == 0;
        for (int i = 0; i < n; i++) {
            snprintf(point, point_len, "insert_rate=%s", list[i]);
            if (!(it = item_add(b, kind, e, d, point))) return VB_ERROR;
            if (point_add(b, it, "insert_rate", list[i])) return VB_ERROR;
            if (strcmp(list[i], "max") == 0) it->p.insert_rate = 0;
            else if (parse_double(b, it, "insert_rate", list[i], &it->p.insert_rate)) return VB_ERROR;
            it->p.mode = open ? VB_POINT_OPEN : VB_POINT_CLOSED;
            if (take_double(b, it, ph, "initial_fraction", &it->p.fraction) || point_copy(b, it, ph, "stages") ||
                take_long(b, it, ph, "clients", 1, &it->p.clients) ||
                take_long(b, it, ph, "ef_search", 1, &it->p.ef_search) ||
                take_double(b, it, ph, "window_s", &it->p.window_s) || point_add(b, it, "mode", mode) ||
                (open && take_double(b, it, ph, "target_rate", &it->p.target_rate)) ||
                take_long(b, it, ph, "insert_batch", 1, &it->p.insert_batch) ||
                take_long(b, it, ph, "limit_s", 1, &it->p.limit_s))
                return VB_ERROR;
            it->p.n_stages = ns;
            for (int j = 0; j < ns; j++)
                if (parse_double(b, it, "stages", stages[j], &it->p.stages[j])) return VB_ERROR;
        }
        return VB_OK;
    }
    case VB_PHASE_COLD_START:
        /* one item, ".../cold_start": the coordinator restarts the server cold before it runs (Point.cold) */
        if (!(it = item_add(b, kind, e, d, NULL))) return VB_ERROR;
        if (take_long(b, it, ph, "queries", 1, &it->p.queries) || take_long(b, it, ph, "ef_search", 1, &it->p.ef_search))
            return VB_ERROR;
        return VB_OK;
    case VB_PHASE_CAPACITY: {
        /* one item per engine configuration and dataset, ".../capacity": the search, its confirmations and every
         * target run inside it (agent/phase_capacity.c), a result per window and one per target */
        char tbuf[512], *targets[VB_MAX_LIST];
        int nt = split_list(b, ph, "p99_ms", tbuf, sizeof tbuf, targets, VB_MAX_LIST);
        if (nt < 0) return VB_ERROR;
        if (nt > VB_PLAN_MAX_TARGETS)
            return vb_error_set(b->err, "plan", 1, "phase 'capacity': at most %d p99 targets, got %d",
                                VB_PLAN_MAX_TARGETS, nt);
        if (!(it = item_add(b, kind, e, d, NULL))) return VB_ERROR;
        const char *ef = vb_kv_get(ph->params, ph->n_params, "ef_search", "auto");
        if (point_copy(b, it, ph, "ef_search")) return VB_ERROR;
        if (strcmp(ef, "auto") == 0) it->p.ef_search = 0, it->p.op_source = VB_OP_PROBE;
        else if (parse_long(b, it, "ef_search", ef, &it->p.ef_search)) return VB_ERROR;
        else it->p.op_source = VB_OP_GIVEN;
        if (take_double(b, it, ph, "recall", &it->p.recall_target) || point_copy(b, it, ph, "p99_ms") ||
            take_double(b, it, ph, "window_s", &it->p.window_s) || take_double(b, it, ph, "warmup_s", &it->p.warmup_s) ||
            take_long(b, it, ph, "repeats", 1, &it->p.repeats) ||
            take_double(b, it, ph, "precision", &it->p.precision) || take_long(b, it, ph, "clients", 1, &it->p.clients) ||
            take_long(b, it, ph, "client_agents", 0, &it->p.client_agents))
            return VB_ERROR;
        for (int j = 0; j < nt; j++)
            if (parse_double(b, it, "p99_ms", targets[j], &it->p.p99_ms[j])) return VB_ERROR;
        it->p.n_p99 = nt;
        /* ascending: the search grows until the largest fails and bisects down (metrics/capacity.h) */
        for (int j = 1; j < nt; j++)
            for (int m = j; m > 0 && it->p.p99_ms[m - 1] > it->p.p99_ms[m]; m--) {
                double t = it->p.p99_ms[m];
                it->p.p99_ms[m] = it->p.p99_ms[m - 1];
                it->p.p99_ms[m - 1] = t;
            }
        return VB_OK;
    }
    case VB_PHASE_MIXED: {
        /* one item per choice of rows: ".../mixed/ids=uniform", ".../mixed/ids=zipf-1.1"; each builds its own
         * index (writes change it) */
        if ((n = split_list(b, ph, "ids", buf, buf_len, list, VB_MAX_LIST)) < 0) return VB_ERROR;
        const char *rate = vb_kv_get(ph->params, ph->n_params, "rate", "closed");
        int open = strcmp(rate, "closed") != 0;
        static const char *const shares[4] = {"ops.search", "ops.update", "ops.delete", "ops.insert"};
        for (int i = 0; i < n; i++) {
            char keyed[64];
            snprintf(keyed, sizeof keyed, "%s", list[i]);
            for (char *q = keyed; *q; q++) *q = *q == '(' ? '-' : *q == ')' ? '\0' : *q;
            snprintf(point, point_len, "ids=%s", keyed);
            if (!(it = item_add(b, kind, e, d, point))) return VB_ERROR;
            if (point_add(b, it, "ids", list[i])) return VB_ERROR;
            it->p.zipf_s = strncmp(list[i], "zipf(", 5) == 0 ? strtod(list[i] + 5, NULL) : 0;
            it->p.mode = open ? VB_POINT_OPEN : VB_POINT_CLOSED;
            if (open && parse_double(b, it, "rate", rate, &it->p.target_rate)) return VB_ERROR;
            if (point_add(b, it, "rate", rate)) return VB_ERROR;
            for (int j = 0; j < 4; j++)
                if (take_double(b, it, ph, shares[j], &it->p.mix[j])) return VB_ERROR;
            if (take_long(b, it, ph, "clients", 1, &it->p.clients) ||
                take_long(b, it, ph, "ef_search", 1, &it->p.ef_search) ||
                take_double(b, it, ph, "window_s", &it->p.window_s) ||
                take_long(b, it, ph, "windows", 1, &it->p.mix_windows) ||
                take_double(b, it, ph, "pool_fraction", &it->p.pool_fraction) ||
                take_long(b, it, ph, "limit_s", 1, &it->p.limit_s))
                return VB_ERROR;
        }
        return VB_OK;
    }
    default:
        return vb_error_set(b->err, "plan", 1, "unknown phase '%s'", ph->kind);
    }
}

static int cmp_key(const void *a, const void *b) {
    return strcmp((*(const vb_plan_item *const *)a)->key, (*(const vb_plan_item *const *)b)->key);
}

/* Two items with one key would share a checkpoint row: refuse the plan rather than lose a result. */
static int check_unique(vb_plan *plan, vb_error *err) {
    if (plan->n_items < 2) return VB_OK;
    const vb_plan_item **sorted = malloc(plan->n_items * sizeof *sorted);
    if (!sorted) return vb_error_set(err, "plan", 1, "out of memory");
    for (size_t i = 0; i < plan->n_items; i++) sorted[i] = &plan->items[i];
    qsort(sorted, plan->n_items, sizeof *sorted, cmp_key);
    int rc = VB_OK;
    for (size_t i = 1; i < plan->n_items && rc == VB_OK; i++)
        if (strcmp(sorted[i - 1]->key, sorted[i]->key) == 0)
            rc = vb_error_set(err, "plan", 1, "duplicate plan key '%s'", sorted[i]->key);
    free(sorted);
    return rc;
}

/* The items of one (engine, dataset) pair: its phases in order; with build_repeats: N, build 1 and the recall sweep
 * on it, build 2 and its sweep, ..., then the other phases on the last build. The one table or index is created
 * again by each build, so the server and the agent hold one index at a time: the disk and memory the budget and the
 * preflight count for a configuration stay true (N tables would hold N indexes at once, for nothing: each build's
 * sweep is done before the next build starts). */
static int expand_pair(builder *b, size_t e, size_t d) {
    const vb_profile *p = b->plan->profile;
    /* without a build phase there is nothing to repeat */
    b->builds = vb_profile_phase_find(p, "build") ? vb_profile_engine_build_repeats(&p->engines[e]) : 1;
    const vb_profile_phase *sweep = vb_profile_phase_find(p, "recall_sweep");
    int rc = VB_OK;
    for (size_t i = 0; i < p->n_phases && rc == VB_OK; i++) {
        const vb_profile_phase *ph = &p->phases[i];
        int is_build = strcmp(ph->kind, "build") == 0;
        if (b->builds > 1 && ph == sweep) continue;   /* planned after each build */
        if (b->builds > 1 && is_build) {
            for (b->build = 1; b->build <= b->builds && rc == VB_OK; b->build++) {
                rc = expand_phase(b, ph, e, d);
                if (rc == VB_OK && sweep) rc = expand_phase(b, sweep, e, d);
            }
        }
        b->build = b->builds;   /* the phases after the sweep measure the last build */
        if (!(b->builds > 1 && is_build) && rc == VB_OK) rc = expand_phase(b, ph, e, d);
    }
    return rc;
}

/* The number of items a profile expands into, counted before any is built, or SIZE_MAX when it is beyond
 * VB_PLAN_MAX_ITEMS: 3.6 KB of profile asked for 23 million items, 9 GB of memory, before this check (seen under
 * tests/fuzz/fuzz_profile.c's memory limit; the input is tests/fuzz/corpus/profile/bug-plan-too-large.yml). */
static size_t plan_size(const vb_profile *p) {
    size_t total = 0;
    for (size_t e = 0; e < p->n_engines; e++) {   /* each engine may have its own lists (engines[].phases) */
        size_t per_pair = 0;
        for (size_t i = 0; i < p->n_phases; i++) {
            const vb_profile_phase *ph = &p->phases[i];
            vb_phase_kind kind;
            if (vb_phase_parse(ph->kind, &kind) != 0) continue;   /* expand_phase refuses it */
            if (kind == VB_PHASE_BUILD && p->engines[e].build_of != e) continue;   /* another's build */
            const char *list = kind == VB_PHASE_RECALL_SWEEP ? "ef_search"
                             : kind == VB_PHASE_CONCURRENCY  ? "clients"
                             : kind == VB_PHASE_FILTERED     ? "selectivity"
                             : kind == VB_PHASE_STREAMING    ? "insert_rate"
                             : kind == VB_PHASE_MIXED        ? "ids"
                                                             : NULL;
            size_t points = 1;
            const char *v = list ? vb_profile_engine_phase_value(p, e, ph->kind, list) : NULL;
            for (; v && *v; v++) points += *v == ',';
            const char *cl = kind == VB_PHASE_RECALL_SWEEP ? vb_profile_engine_phase_value(p, e, ph->kind, "clients")
                                                           : NULL;
            if (cl) {   /* the sweep at several client counts: points x client counts */
                size_t nc = 1;
                for (; *cl; cl++) nc += *cl == ',';
                points *= nc;
            }
            if (kind == VB_PHASE_CONCURRENCY || kind == VB_PHASE_RECALL_SWEEP || kind == VB_PHASE_FILTERED) {
                const char *r = vb_profile_engine_phase_value(p, e, ph->kind, "repeats");
                long repeats = atol(r ? r : "1");
                points *= repeats > 0 && repeats <= VB_PLAN_MAX_ITEMS ? (size_t)repeats : 1;
            }
            if (kind == VB_PHASE_BUILD || kind == VB_PHASE_RECALL_SWEEP)   /* each build, and the sweep on it */
                points *= (size_t)vb_profile_engine_build_repeats(&p->engines[e]);
            per_pair += points;   /* at most 6 phases x 64 list items x 100 repeats x 20 builds */
        }
        /* datasets: below the 4 MiB a profile may have */
        if (p->n_datasets && per_pair > VB_PLAN_MAX_ITEMS / p->n_datasets) return SIZE_MAX;
        total += per_pair * p->n_datasets;
        if (total > VB_PLAN_MAX_ITEMS) return SIZE_MAX;
    }
    return total;
}

int vb_plan_build(const vb_profile *p, vb_plan **out, vb_error *err) {
    *out = NULL;
    if (plan_size(p) > VB_PLAN_MAX_ITEMS)
        return vb_error_set(err, "plan", 1, "the profile expands into more than %d work items (%zu datasets x %zu "
                            "engines x the points of each phase); split it into several campaigns",
                            VB_PLAN_MAX_ITEMS, p->n_datasets, p->n_engines);
    vb_plan *plan = calloc(1, sizeof *plan);
    if (!plan) return vb_error_set(err, "plan", 1, "out of memory");
    plan->profile = p;
    builder b = {.plan = plan, .err = err};
    int rc = VB_OK;
    for (size_t d = 0; d < p->n_datasets && rc == VB_OK; d++)
        for (size_t e = 0; e < p->n_engines && rc == VB_OK; e++) rc = expand_pair(&b, e, d);
    if (rc == VB_OK) rc = check_unique(plan, err);
    if (rc != VB_OK) {
        vb_plan_destroy(&plan);
        return VB_ERROR;
    }
    *out = plan;
    return VB_OK;
}

void vb_plan_destroy(vb_plan **plan) {
    if (!plan || !*plan) return;
    for (size_t i = 0; i < (*plan)->n_items; i++) item_free(&(*plan)->items[i]);
    free((*plan)->items);
    free(*plan);
    *plan = NULL;
}

const vb_plan_item *vb_plan_find(const vb_plan *plan, const char *key) {
    for (size_t i = 0; i < plan->n_items; i++)
        if (strcmp(plan->items[i].key, key) == 0) return &plan->items[i];
    return NULL;
}
