/* The filtered phase's predicates (engines/engine.h vb_filter): made once from a kind and a selectivity, tested
 * against a row id (for the ground truth's mask and the check of every returned row), and written in each
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

/* "range", "equality", "and" <-> the kind; -1 / NULL for anything else. */
int vb_filter_kind_parse(const char *name);
const char *vb_filter_kind_name(vb_filter_kind kind);
/* The engine flag that says an engine can run the kind (VB_ENGINE_FILTER for range, ..._EQ, ..._AND). */
unsigned vb_filter_kind_flag(vb_filter_kind kind);

/* The filter of kind that passes `selectivity` of the rows: range tag < round(s x 10000); equality the label
 * whose share is s (vb_dataset_label_for: one of the fixed shares, else an error naming them); and
 * tag < a AND tag2 < b with a = b = round(sqrt(s) x 10000), the shares multiplying to s. *share: the share the
 * filter passes by construction (a x b / 1e8 for and). */
int vb_filter_make(vb_filter_kind kind, double selectivity, vb_filter *out, double *share, vb_error *err);

/* Whether a row with these attributes (a tagged row: tag, tag2, label) passes; and the same for row id's columns. */
int vb_filter_passes_attrs(const vb_filter *f, int32_t tag, int32_t tag2, int32_t label);
int vb_filter_passes(const vb_filter *f, int64_t id);

/* The predicate as text, in each language, into buf (truncation is an error: returns -1). */
int vb_filter_text(const vb_filter *f, char *buf, size_t len);           /* "tag < 100 AND tag2 < 316", for people */
int vb_filter_sql(const vb_filter *f, char *buf, size_t len);            /* "tag < 100", "label = 3", "tag < 316 AND tag2 < 316" */
int vb_filter_redis_expr(const vb_filter *f, char *buf, size_t len);     /* ".tag < 100", ".label == 3", ".tag < 316 and .tag2 < 316" */
int vb_filter_valkey_query(const vb_filter *f, char *buf, size_t len);   /* "@tag:[-inf (100]", "@label:[3 3]", both */
/* A short key for caches and plan items: "tag<100", "label=3", "tag<316&tag2<316". */
int vb_filter_key(const vb_filter *f, char *buf, size_t len);

#endif
