/* The filtered phase's predicates (filter.h). */
#include "engines/filter.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "datasets/dataset.h"

static const char *const kind_names[VB_FILTER_KINDS] = {"none", "range", "equality", "and", "class"};
static const char *const pred_names[VB_PRED_MAX + 1] = {NULL, "range", "equality", "and", "label_own", "label_other",
                                                         "class"};

int vb_filter_predicate_parse(const char *name) {
    for (int i = 1; i <= VB_PRED_MAX; i++)
        if (name && strcmp(name, pred_names[i]) == 0) return i;
    return -1;
}

const char *vb_filter_predicate_name(int pred) { return pred >= 1 && pred <= VB_PRED_MAX ? pred_names[pred] : NULL; }

int vb_filter_predicate_is_class(int pred) {
    return pred == VB_PRED_LABEL_OWN || pred == VB_PRED_LABEL_OTHER || pred == VB_PRED_CLASS;
}

vb_filter_kind vb_filter_predicate_kind(int pred) {
    if (pred >= VB_PRED_RANGE && pred <= VB_PRED_AND) return (vb_filter_kind)pred;
    return vb_filter_predicate_is_class(pred) ? VB_FILTER_CLASS_EQ : VB_FILTER_NONE;
}

const char *vb_filter_kind_name(vb_filter_kind kind) {
    return (int)kind >= 0 && (int)kind < VB_FILTER_KINDS ? kind_names[kind] : NULL;
}

/* splitmix64's finaliser: label_other's choice of class from the query number and the seed */
static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

int32_t vb_filter_class_for(int pred, int32_t own, int32_t fixed, int n_classes, uint64_t q, uint64_t seed) {
    switch (pred) {
    case VB_PRED_LABEL_OWN: return own >= 0 ? own : -1;
    case VB_PRED_LABEL_OTHER:
        if (own < 0 || n_classes < 2) return -1;
        return (int32_t)(((uint64_t)own + 1 + mix64(q ^ mix64(seed)) % (uint64_t)(n_classes - 1)) %
                         (uint64_t)n_classes);
    case VB_PRED_CLASS: return fixed;
    default: return -1;
    }
}

vb_filter vb_filter_class(int32_t cls) {
    vb_filter f = {.kind = VB_FILTER_CLASS_EQ, .cls = cls};
    return f;
}

unsigned vb_filter_kind_flag(vb_filter_kind kind) {
    switch (kind) {
    case VB_FILTER_TAG_BELOW: return VB_ENGINE_FILTER;
    case VB_FILTER_LABEL_EQ: return VB_ENGINE_FILTER_EQ;
    case VB_FILTER_AND: return VB_ENGINE_FILTER_AND;
    case VB_FILTER_CLASS_EQ: return VB_ENGINE_FILTER_CLASS;
    default: return 0;
    }
}

static int32_t bound(double share) {
    long b = lround(share * VB_FILTER_TAG_RANGE);
    return (int32_t)(b < 1 ? 1 : b > VB_FILTER_TAG_RANGE ? VB_FILTER_TAG_RANGE : b);
}

int vb_filter_make(vb_filter_kind kind, double s, vb_filter *out, double *share, vb_error *err) {
    memset(out, 0, sizeof *out);
    out->kind = kind;
    if (!(s > 0 && s <= 1)) return vb_error_set(err, "filter", 1, "selectivity %g is not in (0, 1]", s);
    switch (kind) {
    case VB_FILTER_TAG_BELOW:
        out->tag_below = bound(s);
        *share = out->tag_below / (double)VB_FILTER_TAG_RANGE;
        return VB_OK;
    case VB_FILTER_LABEL_EQ:
        out->label = vb_dataset_label_for(s);
        if (out->label < 0)
            return vb_error_set(err, "filter", 1, "equality: no label has a share of %g (the label column's shares "
                                "are 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5 and 0.112)", s);
        *share = vb_dataset_label_share(out->label);
        return VB_OK;
    case VB_FILTER_AND:
        out->tag_below = out->tag2_below = bound(sqrt(s));
        *share = (double)out->tag_below * out->tag2_below / ((double)VB_FILTER_TAG_RANGE * VB_FILTER_TAG_RANGE);
        return VB_OK;
    case VB_FILTER_CLASS_EQ:
        return vb_error_set(err, "filter", 1, "the class kind is made per query (vb_filter_class), not from a "
                            "selectivity");
    default: return vb_error_set(err, "filter", 1, "unknown predicate kind %d", (int)kind);
    }
}

int vb_filter_passes_attrs(const vb_filter *f, int32_t tag, int32_t tag2, int32_t label, int32_t cls) {
    switch (f ? f->kind : VB_FILTER_NONE) {
    case VB_FILTER_NONE: return 1;
    case VB_FILTER_TAG_BELOW: return tag < f->tag_below;
    case VB_FILTER_LABEL_EQ: return label == f->label;
    case VB_FILTER_AND: return tag < f->tag_below && tag2 < f->tag2_below;
    case VB_FILTER_CLASS_EQ: return cls >= 0 && cls == f->cls;
    }
    return 0;
}

int vb_filter_passes(const vb_filter *f, int64_t id, int32_t cls) {
    return vb_filter_passes_attrs(f, vb_dataset_tag(id), vb_dataset_tag2(id), vb_dataset_label(id), cls);
}

/* One writer for every language: the three forms with their column syntax. */
typedef struct lang {
    const char *tag_lt, *label_eq, *and_join; /* printf formats: tag bound; label; the two halves */
    const char *tag2_lt;
    const char *class_eq;                     /* the class */
} lang;

static int write(const vb_filter *f, const lang *l, char *buf, size_t len) {
    char a[64], b[64];
    int n;
    switch (f ? f->kind : VB_FILTER_NONE) {
    case VB_FILTER_TAG_BELOW: n = snprintf(buf, len, l->tag_lt, (int)f->tag_below); break;
    case VB_FILTER_LABEL_EQ: n = snprintf(buf, len, l->label_eq, (int)f->label); break;
    case VB_FILTER_CLASS_EQ: n = snprintf(buf, len, l->class_eq, (int)f->cls); break;
    case VB_FILTER_AND:
        snprintf(a, sizeof a, l->tag_lt, (int)f->tag_below);
        snprintf(b, sizeof b, l->tag2_lt, (int)f->tag2_below);
        n = snprintf(buf, len, l->and_join, a, b);
        break;
    default: n = snprintf(buf, len, "%s", ""); break;
    }
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

static const lang text_lang = {"tag < %d", "label = %d", "%s AND %s", "tag2 < %d", "class = %d"};
static const lang sql_lang = {"tag < %d", "label = %d", "%s AND %s", "tag2 < %d", "class = %d"};
static const lang redis_lang = {".tag < %d", ".label == %d", "%s and %s", ".tag2 < %d", ".class == %d"};
/* valkey-search: NUMERIC ranges, "(" excludes the bound; a space between two terms intersects them */
static const lang valkey_lang = {"@tag:[-inf (%d]", "@label:[%d %d]", "%s %s", "@tag2:[-inf (%d]", "@class:[%d %d]"};
static const lang key_lang = {"tag<%d", "label=%d", "%s&%s", "tag2<%d", "class=%d"};

int vb_filter_text(const vb_filter *f, char *buf, size_t len) { return write(f, &text_lang, buf, len); }
int vb_filter_sql(const vb_filter *f, char *buf, size_t len) { return write(f, &sql_lang, buf, len); }
int vb_filter_redis_expr(const vb_filter *f, char *buf, size_t len) { return write(f, &redis_lang, buf, len); }
int vb_filter_key(const vb_filter *f, char *buf, size_t len) { return write(f, &key_lang, buf, len); }
int vb_filter_valkey_query(const vb_filter *f, char *buf, size_t len) {
    if (f && (f->kind == VB_FILTER_LABEL_EQ || f->kind == VB_FILTER_CLASS_EQ)) {
        int v = f->kind == VB_FILTER_LABEL_EQ ? (int)f->label : (int)f->cls;
        int n = snprintf(buf, len, f->kind == VB_FILTER_LABEL_EQ ? "@label:[%d %d]" : "@class:[%d %d]", v, v);
        return n < 0 || (size_t)n >= len ? -1 : 0;
    }
    return write(f, &valkey_lang, buf, len);
}
