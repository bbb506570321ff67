/* What the SQL adapters share: engines/pgvector.c (libpq) and engines/mysql_family.c (MariaDB Connector/C).
 * What every server adapter shares, SQL or not (the one-line failure, the administrative connection), is
 * engines/adapter_common.h.
 *
 *   identifiers   the check for names written into statements (table, database)
 *   knn cache     the kNN statements one connection keeps prepared, per filter mode, for the k they were made for
 *   plan          the collector of EXPLAIN rows into the caller's buffer (truncated, NUL-terminated)
 *   buffers       growable per-connection buffers (COPY streams, statement text)
 *
 * The client libraries differ, so the layer takes their handles as void * and calls back for what is
 * library-specific (dial, hang up, release a statement); the policies live here once. */
#ifndef VB_ENGINES_SQL_COMMON_H
#define VB_ENGINES_SQL_COMMON_H

#include <stddef.h>

#include "engines/adapter_common.h"
#include "engines/engine.h"
#include "util/error.h"

/* ---- identifiers ------------------------------------------------------------------------------------- */

typedef enum {
    VB_SQL_IDENT_PLAIN = 0,   /* written unquoted: lower-case letters, digits, _, not starting with a digit */
    VB_SQL_IDENT_QUOTED = 1,  /* written inside quotes: letters of either case, digits, _ */
} vb_sql_ident_kind;

/* VB_ERROR (domain "config") naming the parameter and the rule when value is empty, longer than max_len or has
 * another character. */
int vb_sql_ident_check(const char *engine, const char *param, const char *value, size_t max_len,
                       vb_sql_ident_kind kind, vb_error *err);

/* ---- the kNN statement cache of one connection ------------------------------------------------------- */

typedef struct vb_sql_knn_cache {
    int k[VB_FILTER_KINDS];      /* per filter mode (0 unfiltered, else the vb_filter_kind): the k it was prepared
                                  * for, 0 = none */
    void *stmt[VB_FILTER_KINDS];     /* the library's handle (a MYSQL_STMT *, a statement name) */
} vb_sql_knn_cache;

/* Releases one prepared statement (closes it, DEALLOCATEs it). */
typedef void (*vb_sql_stmt_release)(void *ctx, void *stmt);

/* The statement prepared for (filtered, k), filtered 0 (none) or a vb_filter_kind (1..4), or NULL when one must be prepared (first use, or k changed: the
 * old one is released then). */
void *vb_sql_knn_get(vb_sql_knn_cache *c, int filtered, int k, vb_sql_stmt_release release, void *ctx);
void vb_sql_knn_put(vb_sql_knn_cache *c, int filtered, int k, void *stmt);
/* Forgets every statement: released one by one, or only forgotten when release is NULL (their connection is
 * gone, and the statements with it). */
void vb_sql_knn_clear(vb_sql_knn_cache *c, vb_sql_stmt_release release, void *ctx);

/* ---- EXPLAIN ----------------------------------------------------------------------------------------- */

typedef struct vb_sql_plan {
    char *buf;         /* may be NULL: nothing is kept */
    size_t len, used;
} vb_sql_plan;

void vb_sql_plan_init(vb_sql_plan *p, char *buf, size_t len);
/* Appends printf output, truncated at the buffer's end; buf stays NUL-terminated. */
void vb_sql_plan_add(vb_sql_plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A query vector of dim ones, the constant the EXPLAINs plan with; the caller frees it. NULL when out of memory. */
float *vb_sql_ones(size_t dim);

/* ---- buffers ----------------------------------------------------------------------------------------- */

/* Grows *buf (capacity *cap) to hold want bytes, doubling from 64 KiB; VB_ERROR naming the engine when out of
 * memory (the old buffer is kept). */
int vb_sql_reserve(char **buf, size_t *cap, size_t want, const char *engine, vb_error *err);

#endif
