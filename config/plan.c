/* Plan expansion: profile -> ordered work items with stable keys.
 *
 * One item per unit of work the coordinator assigns and checkpoints: a build, one recall-sweep point per
 * ef_search value, one concurrency window per (clients, repeat), one filtered point per selectivity, one churn
 * pass. Keys are made only of names and canonical values from the profile, so loading the same profile again
 * (on resume) yields the same keys; each item's point carries every value the agent needs to run it. */
#include "config/plan.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const phase_names[VB_PHASE__COUNT] = {"build", "recall_sweep", "concurrency", "filtered",
                                                         "churn"};

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
    plan->n_items++;
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

/* The items of one phase for one (engine, dataset) pair, in list order. */
static int expand_phase(builder *b, const vb_profile_phase *ph, size_t e, size_t d) {
    vb_phase_kind kind;
    if (vb_phase_parse(ph->kind, &kind) != 0) return vb_error_set(b->err, "plan", 1, "unknown phase '%s'", ph->kind);
    char buf[2048], point[128];
    char *list[VB_MAX_LIST];
    vb_plan_item *it;
    int n;
    switch (kind) {
    case VB_PHASE_BUILD:
        if (!(it = item_add(b, kind, e, d, NULL))) return VB_ERROR;
        if (point_copy(b, it, ph, "load_batch") || point_copy(b, it, ph, "load_connections")) return VB_ERROR;
        return VB_OK;
    case VB_PHASE_RECALL_SWEEP:
        if ((n = split_list(b, ph, "ef_search", buf, sizeof buf, list, VB_MAX_LIST)) < 0) return VB_ERROR;
        for (int i = 0; i < n; i++) {
            snprintf(point, sizeof point, "ef_search=%s", list[i]);
            if (!(it = item_add(b, kind, e, d, point))) return VB_ERROR;
            if (point_add(b, it, "ef_search", list[i]) || point_copy(b, it, ph, "queries")) return VB_ERROR;
        }
        return VB_OK;
    case VB_PHASE_CONCURRENCY: {
        /* Closed-loop keys are "clients=N,repeat=R"; an open loop appends ",mode=open,target_rate=X". */
        long repeats = atol(vb_kv_get(ph->params, ph->n_params, "repeats", "1"));
        const char *mode = vb_kv_get(ph->params, ph->n_params, "mode", "closed");
        const char *rate = vb_kv_get(ph->params, ph->n_params, "target_rate", NULL);
        int open = strcmp(mode, "open") == 0;
        if (open && !rate) return vb_error_set(b->err, "plan", 1, "phase 'concurrency': mode open without a target_rate");
        if ((n = split_list(b, ph, "clients", buf, sizeof buf, list, VB_MAX_LIST)) < 0) return VB_ERROR;
        for (int i = 0; i < n; i++)
            for (long r = 1; r <= repeats; r++) {
                char rep[24];
                snprintf(rep, sizeof rep, "%ld", r);
                snprintf(point, sizeof point, "clients=%s,repeat=%s%s%s", list[i], rep,
                         open ? ",mode=open,target_rate=" : "", open ? rate : "");
                if (!(it = item_add(b, kind, e, d, point))) return VB_ERROR;
                if (point_add(b, it, "clients", list[i]) || point_add(b, it, "repeat", rep) ||
                    point_copy(b, it, ph, "ef_search") || point_copy(b, it, ph, "window_s") ||
                    point_copy(b, it, ph, "warmup_s") || point_add(b, it, "mode", mode) ||
                    (open && point_add(b, it, "target_rate", rate)))
                    return VB_ERROR;
            }
        return VB_OK;
    }
    case VB_PHASE_FILTERED:
        if ((n = split_list(b, ph, "selectivity", buf, sizeof buf, list, VB_MAX_LIST)) < 0) return VB_ERROR;
        for (int i = 0; i < n; i++) {
            snprintf(point, sizeof point, "selectivity=%s", list[i]);
            if (!(it = item_add(b, kind, e, d, point))) return VB_ERROR;
            if (point_add(b, it, "selectivity", list[i]) || point_copy(b, it, ph, "queries") ||
                point_copy(b, it, ph, "ef_search"))
                return VB_ERROR;
        }
        return VB_OK;
    case VB_PHASE_CHURN:
        if (!(it = item_add(b, kind, e, d, NULL))) return VB_ERROR;
        if (point_copy(b, it, ph, "fraction") || point_copy(b, it, ph, "limit_s") ||
            point_copy(b, it, ph, "ef_search") || point_copy(b, it, ph, "on_resume"))
            return VB_ERROR;
        return VB_OK;
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

/* The number of items a profile expands into, counted before any is built, or SIZE_MAX when it is beyond
 * VB_PLAN_MAX_ITEMS: 3.6 KB of profile asked for 23 million items, 9 GB of memory, before this check (seen under
 * tests/fuzz/fuzz_profile.c's memory limit; the input is tests/fuzz/corpus/profile/bug-plan-too-large.yml). */
static size_t plan_size(const vb_profile *p) {
    size_t per_pair = 0;
    for (size_t i = 0; i < p->n_phases; i++) {
        const vb_profile_phase *ph = &p->phases[i];
        vb_phase_kind kind;
        if (vb_phase_parse(ph->kind, &kind) != 0) continue;   /* expand_phase refuses it */
        const char *list = kind == VB_PHASE_RECALL_SWEEP ? "ef_search"
                         : kind == VB_PHASE_CONCURRENCY  ? "clients"
                         : kind == VB_PHASE_FILTERED     ? "selectivity"
                                                         : NULL;
        size_t points = 1;
        const char *v = list ? vb_kv_get(ph->params, ph->n_params, list, "") : "";
        for (; *v; v++) points += *v == ',';
        if (kind == VB_PHASE_CONCURRENCY) {
            long repeats = atol(vb_kv_get(ph->params, ph->n_params, "repeats", "1"));
            points *= repeats > 0 && repeats <= VB_PLAN_MAX_ITEMS ? (size_t)repeats : 1;
        }
        per_pair += points;   /* at most 5 phases x 64 list items x 100 repeats */
    }
    size_t pairs = p->n_datasets * p->n_engines;   /* each below the 4 MiB a profile may have */
    if (pairs && per_pair > VB_PLAN_MAX_ITEMS / pairs) return SIZE_MAX;
    return pairs * per_pair;
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
        for (size_t e = 0; e < p->n_engines && rc == VB_OK; e++)
            for (size_t ph = 0; ph < p->n_phases && rc == VB_OK; ph++) rc = expand_phase(&b, &p->phases[ph], e, d);
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
