/* The filtered phase's predicates (engines/engine.h vb_filter): made once from a kind and a selectivity (the
 * synthetic columns) or per query from a class (the class predicates: vb_filter_class_for, vb_filter_class), tested
 * against a row id and its class (for the ground truth's mask and the check of every returned row), and written in each
 * engine's own language: SQL (pgvector, the MySQL family), a Redis vector-set FILTER expression, a valkey-search
 * query. MongoDB's BSON is built by engines/mongodb_docs.c from the same struct, hnswlib's and exact's callbacks
 * call vb_filter_passes_attrs. One place decides what each kind means. */
#ifndef VB_ENGINES_FILTER_H
#define VB_ENGINES_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "engines/engine.h"
#include "util/error.h"

#define VB_FILTER_TAG_RANGE 10000   /* vb_dataset_tag's and vb_dataset_tag2's values: [0, 10000) */

/* The predicates of the filtered phase (the profile's `predicate:`, Point.predicate on the wire; 0 means range).
 * The first three are the kinds of the same number over the synthetic columns; the three class predicates all
 * search with VB_FILTER_CLASS_EQ over the dataset's real classes and differ in the class each query gets:
 *   label_own    the query's own class (ds->test_class): keeps most of the query's true neighbourhood
 *   label_other  a class other than the query's, chosen per query by a seeded mix of the query number
 *                (vb_filter_class_for): the query's true neighbours are all far away
 *   class        a fixed class L for every query (the profile's `class: L`) */
typedef enum {
    VB_PRED_RANGE = 1, VB_PRED_EQUALITY = 2, VB_PRED_AND = 3,
    VB_PRED_LABEL_OWN = 4, VB_PRED_LABEL_OTHER = 5, VB_PRED_CLASS = 6,
} vb_filter_predicate;
#define VB_PRED_MAX VB_PRED_CLASS

/* "range", "equality", "and", "label_own", "label_other", "class" <-> the predicate; -1 / NULL for anything else. */
int vb_filter_predicate_parse(const char *name);
const char *vb_filter_predicate_name(int pred);
/* The kind a predicate searches with (VB_FILTER_CLASS_EQ for the three class predicates); NONE for no predicate. */
vb_filter_kind vb_filter_predicate_kind(int pred);
/* 1 for label_own, label_other and class: one filter per query, over the dataset's classes. */
int vb_filter_predicate_is_class(int pred);
/* The kind's name: "range", "equality", "and", "class"; NULL for anything else. */
const char *vb_filter_kind_name(vb_filter_kind kind);
/* The engine flag that says an engine can run the kind (VB_ENGINE_FILTER for range, ..._EQ, ..._AND, ..._CLASS). */
unsigned vb_filter_kind_flag(vb_filter_kind kind);

/* The class query number q filters on under a class predicate: label_own its own class; label_other another class,
 * own + 1 + (a mix of q and seed) mod (n_classes - 1), so every other class is as likely and the choice is the same
 * on every run with the seed; class the fixed class. -1 when there is none (own < 0, or label_other with fewer
 * than two classes). */
int32_t vb_filter_class_for(int pred, int32_t own, int32_t fixed, int n_classes, uint64_t q, uint64_t seed);
/* The class filter "class = cls". */
vb_filter vb_filter_class(int32_t cls);

/* The filter of kind that passes `selectivity` of the rows: range tag < round(s x 10000); equality the label
 * whose share is s (vb_dataset_label_for: one of the fixed shares, else an error naming them); and
 * tag < a AND tag2 < b with a = b = round(sqrt(s) x 10000), the shares multiplying to s. *share: the share the
 * filter passes by construction (a x b / 1e8 for and). */
int vb_filter_make(vb_filter_kind kind, double selectivity, vb_filter *out, double *share, vb_error *err);

/* Whether a row with these attributes (a tagged row: tag, tag2, label; cls its class, -1 for none) passes; and
 * the same for row id's synthetic columns with its class cls (ds->train_class[id], -1 when the dataset has none). */
int vb_filter_passes_attrs(const vb_filter *f, int32_t tag, int32_t tag2, int32_t label, int32_t cls);
int vb_filter_passes(const vb_filter *f, int64_t id, int32_t cls);

/* The predicate as text, in each language, into buf (truncation is an error: returns -1). */
int vb_filter_text(const vb_filter *f, char *buf, size_t len);           /* "tag < 100 AND tag2 < 316", for people */
int vb_filter_sql(const vb_filter *f, char *buf, size_t len);            /* "tag < 100", "label = 3", "tag < 316 AND tag2 < 316", "class = 3" */
int vb_filter_redis_expr(const vb_filter *f, char *buf, size_t len);     /* ".tag < 100", ".label == 3", ".tag < 316 and .tag2 < 316", ".class == 3" */
int vb_filter_valkey_query(const vb_filter *f, char *buf, size_t len);   /* "@tag:[-inf (100]", "@label:[3 3]", both, "@class:[3 3]" */
/* A short key for caches and plan items: "tag<100", "label=3", "tag<316&tag2<316", "class=3". */
int vb_filter_key(const vb_filter *f, char *buf, size_t len);

#endif
