/* Profile engine entries checked against the engine registry.
 *
 * Separate from config/profile.c so that reading and planning a profile never links the engines (the unit
 * tests of the config module, tools that only print a plan); the coordinator calls this right after loading,
 * before any work is assigned, so a misspelt engine parameter fails in the first second with its line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/profile.h"
#include "engines/filter.h"
#include "datasets/dataset.h"
#include "engines/engine.h"

/* "a, b, c" from the first n names (or up to a NULL entry). */
static const char *join(const char *const *names, size_t n, char *buf, size_t len) {
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && names && names[i] && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", names[i]);
    return buf;
}

/* vb_profile_search_time_fn from the registry: key is one of the adapter's search_params. */
static int registry_search_time(const char *adapter, const char *key) {
    const vb_engine_ops *ops = vb_engine_find(adapter);
    for (const char *const *a = ops ? ops->search_params : NULL; a && *a; a++)
        if (strcmp(*a, key) == 0) return 1;
    return 0;
}

/* The mixed phase (issue 38) writes through insert (update, insert: upserts) and remove (delete): an engine without the
 * operation a share needs is refused before anything starts, naming the engine and the share. */
static int check_mixed_ops(const vb_profile *p, vb_error *err) {
    const vb_profile_phase *ph = NULL;
    for (size_t i = 0; i < p->n_phases; i++)
        if (strcmp(p->phases[i].kind, "mixed") == 0) ph = &p->phases[i];
    if (!ph) return VB_OK;
    static const char *const shares[] = {"update", "insert", "delete"};
    for (size_t i = 0; i < p->n_engines; i++) {
        const vb_engine_ops *ops = vb_engine_find(p->engines[i].adapter);
        for (int j = 0; j < 3; j++) {
            char key[32];
            snprintf(key, sizeof key, "ops.%s", shares[j]);
            double share = strtod(vb_kv_get(ph->params, ph->n_params, key, "0"), NULL);
            int can = j < 2 ? ops->insert != NULL : ops->remove != NULL;
            if (share > 0 && !can)
                return vb_error_set(err, "profile", 1, "%s:%d: key 'phases.mixed.ops.%s': engine '%s' (%s) has no %s "
                                    "operation, so it cannot run the mixed phase at %s: %g (set the share to 0, or "
                                    "run the phase without this engine)", p->source, ph->line, shares[j],
                                    p->engines[i].name, p->engines[i].adapter, j == 2 ? "remove" : "insert (upsert)",
                                    shares[j], share);
        }
    }
    return VB_OK;
}

/* shards / replicas (config/profile.h) on an engine that does not declare them (VB_ENGINE_SHARDS,
 * VB_ENGINE_REPLICAS): refused naming the line and the engines that take the key. */
static int check_topology_key(const vb_profile *p, const vb_profile_engine *e, size_t index, const vb_engine_ops *ops,
                              const char *key, vb_error *err) {
    if (!vb_profile_engine_param_is_topology(key)) return VB_OK;
    unsigned flag = strcmp(key, "shards") == 0 ? VB_ENGINE_SHARDS : VB_ENGINE_REPLICAS;
    if (ops->flags & flag) return VB_OK;
    const char *names[64];
    char takes[512] = "";
    size_t n = vb_engine_list(names, 64);
    for (size_t k = 0; k < n && k < 64; k++) {
        const vb_engine_ops *o = vb_engine_find(names[k]);
        if (o && (o->flags & flag))
            snprintf(takes + strlen(takes), sizeof takes - strlen(takes), "%s%s", takes[0] ? ", " : "", names[k]);
    }
    int line = vb_profile_engine_line(p, e->name, key, NULL);
    return vb_error_set(err, "profile", 1, "%s:%d: key 'engines[%zu].%s': engine '%s' runs on one server and cannot "
                        "take %s (engines that can: %s); remove the key from this entry", p->source,
                        line ? line : e->line, index, key, e->adapter,
                        flag == VB_ENGINE_SHARDS ? "shards (its rows split over several servers)"
                                                 : "replicas (read replicas of its server)",
                        takes[0] ? takes : "none");
}

int vb_profile_check_engines(vb_profile *p, vb_error *err) {
    char known[512];
    for (size_t i = 0; i < p->n_engines; i++) {
        const vb_profile_engine *e = &p->engines[i];
        size_t index = i;
        int line = vb_profile_engine_line(p, e->name, "name", &index);
        int eline = vb_profile_engine_line(p, e->name, "engine", NULL);   /* the entry names its adapter */
        const vb_engine_ops *ops = vb_engine_find(e->adapter);
        if (!ops) {
            const char *names[64];
            size_t n = vb_engine_list(names, 64);
            return vb_error_set(err, "profile", 1, "%s:%d: key 'engines[%zu].%s': unknown engine '%s' (known: %s)",
                                p->source, eline ? eline : line ? line : e->line, index, eline ? "engine" : "name",
                                e->adapter, join(names, n < 64 ? n : 64, known, sizeof known));
        }
        for (size_t j = 0; j < e->n_params; j++) {
            const char *key = e->params[j].key;
            if (check_topology_key(p, e, index, ops, key, err) != VB_OK) return VB_ERROR;
            int accepted = vb_profile_engine_param_is_general(key);
            for (const char *const *a = ops->param_names; a && *a && !accepted; a++) accepted = strcmp(*a, key) == 0;
            if (accepted) continue;
            int pline = vb_profile_engine_line(p, e->name, key, NULL);
            if (!ops->param_names || !ops->param_names[0])
                return vb_error_set(err, "profile", 1,
                                    "%s:%d: unknown key 'engines[%zu].%s': engine '%s' takes no parameters",
                                    p->source, pline ? pline : e->line, index, key, e->adapter);
            return vb_error_set(err, "profile", 1, "%s:%d: unknown key 'engines[%zu].%s': engine '%s' takes only: %s",
                                p->source, pline ? pline : e->line, index, key, e->adapter,
                                join(ops->param_names, 64, known, sizeof known));
        }
    }
    if (check_mixed_ops(p, err)) return VB_ERROR;
    vb_profile_share_builds(p, registry_search_time);
    return VB_OK;
}

/* One of the filtered phase's predicates against every engine's filter kinds (engines/engine.h VB_ENGINE_FILTER*):
 * an engine that cannot run it is refused before anything starts, naming the engine and the predicate. */
static int check_predicate_kind(const vb_profile *p, const vb_profile_phase *ph, const char *pred, vb_error *err) {
    vb_filter_kind kind = vb_filter_predicate_kind(vb_filter_predicate_parse(pred));   /* the class ones: class */
    for (size_t i = 0; i < p->n_engines && kind != VB_FILTER_NONE; i++) {
        const vb_engine_ops *ops = vb_engine_find(p->engines[i].adapter);
        if (!ops || (ops->flags & vb_filter_kind_flag(kind))) continue;
        char has[64] = "";
        for (int f = VB_FILTER_TAG_BELOW; f < VB_FILTER_KINDS; f++)
            if (ops->flags & vb_filter_kind_flag((vb_filter_kind)f))
                snprintf(has + strlen(has), sizeof has - strlen(has), "%s%s", has[0] ? ", " : "",
                         vb_filter_kind_name((vb_filter_kind)f));
        return vb_error_set(err, "profile", 1, "%s:%d: engine '%s' cannot run the filtered phase's predicate "
                            "'%s': %s filters by %s only; nothing was started: drop the engine (--engines) or "
                            "choose another predicate", p->source, ph->line, p->engines[i].name, pred, ops->name,
                            has[0] ? has : "nothing (no filtered search)");
    }
    return VB_OK;
}

/* predicate is one kind or a list of them (an axis of the phase, config/plan.c): each is checked. */
static int check_predicates(const vb_profile *p, vb_error *err) {
    for (size_t k = 0; k < p->n_phases; k++) {
        const vb_profile_phase *ph = &p->phases[k];
        if (strcmp(ph->kind, "filtered") != 0) continue;
        char preds[256], *save = NULL;
        snprintf(preds, sizeof preds, "%s", vb_kv_get(ph->params, ph->n_params, "predicate", "range"));
        for (const char *pred = strtok_r(preds, ",", &save); pred; pred = strtok_r(NULL, ",", &save))
            if (check_predicate_kind(p, ph, pred, err) != VB_OK) return VB_ERROR;
    }
    return VB_OK;
}

int vb_profile_check_metrics(const vb_profile *p, vb_error *err) {
    if (check_predicates(p, err)) return VB_ERROR;
    for (size_t d = 0; d < p->n_datasets; d++) {
        const vb_profile_dataset *ds = &p->datasets[d];
        vb_metric m;
        vb_error derr = {0};
        if (vb_dataset_metric_of(ds->params, ds->n_params, &m, &derr) != VB_OK) continue;   /* the item will say */
        for (size_t i = 0; i < p->n_engines; i++) {
            const vb_engine_ops *ops = vb_engine_find(p->engines[i].adapter);
            if (!ops || vb_engine_supports_metric(ops, m)) continue;
            char known[64] = "";
            for (int k = VB_METRIC_ANGULAR; k <= VB_METRIC_DOT; k++)
                if (vb_engine_supports_metric(ops, (vb_metric)k))
                    snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", known[0] ? ", " : "",
                             vb_metric_name((vb_metric)k));
            return vb_error_set(err, "profile", 1, "%s:%d: engine '%s' cannot run dataset '%s': its metric is %s, and "
                                "%s compares by %s only (%s); nothing was started: drop the engine or the dataset "
                                "(--engines)", p->source, ds->line, p->engines[i].name, ds->name, vb_metric_name(m),
                                ops->name, known, ops->description);
        }
    }
    return VB_OK;
}

/* FNV-1a of a label: the tail of a table name that had to be cut short, so two long labels stay two tables. */
static unsigned long label_hash(const char *s) {
    unsigned long h = 2166136261u;
    for (; *s; s++) h = ((h ^ (unsigned char)*s) * 16777619u) & 0xffffffffu;
    return h;
}

const char *vb_profile_config_table(const vb_profile *p, size_t e, char *buf, size_t len) {
    return vb_profile_engine_table(&p->engines[p->engines[e].build_of], buf, len);
}

const char *vb_profile_engine_table(const vb_profile_engine *e, char *buf, size_t len) {
    if (strcmp(e->name, e->adapter) == 0 || vb_kv_get(e->params, e->n_params, "table", NULL)) return NULL;
    const vb_engine_ops *ops = vb_engine_find(e->adapter);
    int takes_table = 0;
    for (const char *const *a = ops ? ops->param_names : NULL; a && *a && !takes_table; a++)
        takes_table = strcmp(*a, "table") == 0;
    if (!takes_table || len < 48) return NULL;
    /* "vb_" and the label in lower case, every run of other characters one '_': a plain SQL identifier */
    size_t o = (size_t)snprintf(buf, len, "vb_");
    for (const char *s = e->name; *s && o + 1 < len; s++) {
        char ch = *s >= 'A' && *s <= 'Z' ? (char)(*s - 'A' + 'a') : *s;
        int plain = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
        if (plain) buf[o++] = ch;
        else if (buf[o - 1] != '_') buf[o++] = '_';
    }
    while (o > 3 && buf[o - 1] == '_') o--;
    buf[o] = '\0';
    /* 63 bytes is PostgreSQL's limit (MySQL's is 64): a longer name ends in the label's hash */
    if (o > 48) snprintf(buf + 39, len - 39, "_%08lx", label_hash(e->name));
    return buf;
}
