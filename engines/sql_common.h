/* What the SQL adapters share: engines/pgvector.c (libpq) and engines/mysql_family.c (MariaDB Connector/C).
 *
 *   errors        one-line messages "ENGINE: WHAT: the server's words (DETAIL)" and the class the engine
 *                 contract wants (VB_RETRY transient, VB_ERROR otherwise), decided by the adapter's classifier
 *   identifiers   the check for names written into statements (table, database)
 *   admin         the engine's administrative connection: dialled on first use, serialised by a mutex, and
 *                 after a loss (idle timeout, server restart) dialled again with the call run once more, so an
 *                 engine op returns VB_RETRY only when the server cannot be reached (engine.h: the engine
 *                 reconnects for its own ops)
 *   knn cache     the kNN statements one connection keeps prepared, per filter mode, for the k they were made for
 *   plan          the collector of EXPLAIN rows into the caller's buffer (truncated, NUL-terminated)
 *   buffers       growable per-connection buffers (COPY streams, statement text)
 *
 * The client libraries differ, so the layer takes their handles as void * and calls back for what is
 * library-specific (dial, hang up, release a statement); the policies live here once. */
#ifndef VB_ENGINES_SQL_COMMON_H
#define VB_ENGINES_SQL_COMMON_H

#include <pthread.h>
#include <stddef.h>

#include "util/error.h"
#include "engines/engine.h"

/* ---- errors ------------------------------------------------------------------------------------------ */

/* Fills err (domain = engine, code = the server's number) with "ENGINE: WHAT: MESSAGE (DETAIL)" on one line:
 * the server's newlines and tabs become spaces, trailing blanks go. message NULL or empty reads "(no message
 * from the server)"; detail (e.g. "SQLSTATE 23505", "error 1062") may be NULL. Returns VB_RETRY when transient,
 * VB_ERROR otherwise. */
int vb_sql_fail(vb_error *err, const char *engine, const char *what, const char *message, const char *detail,
                int code, int transient);

/* ---- identifiers ------------------------------------------------------------------------------------- */

typedef enum {
    VB_SQL_IDENT_PLAIN = 0,   /* written unquoted: lower-case letters, digits, _, not starting with a digit */
    VB_SQL_IDENT_QUOTED = 1,  /* written inside quotes: letters of either case, digits, _ */
} vb_sql_ident_kind;

/* VB_ERROR (domain "config") naming the parameter and the rule when value is empty, longer than max_len or has
 * another character. */
int vb_sql_ident_check(const char *engine, const char *param, const char *value, size_t max_len,
                       vb_sql_ident_kind kind, vb_error *err);

/* ---- the administrative connection -------------------------------------------------------------------- */

typedef struct vb_sql_admin_ops {
    /* A new connection in *conn; VB_RETRY when the server cannot be reached, VB_ERROR when it refuses us. */
    int (*dial)(void *owner, void **conn, vb_error *err);
    void (*hangup)(void *conn);
} vb_sql_admin_ops;

typedef struct vb_sql_admin {
    pthread_mutex_t lock;
    void *conn;                    /* NULL until the first call, and after a loss */
    const vb_sql_admin_ops *ops;
    void *owner;                   /* the adapter's engine state, passed to dial */
} vb_sql_admin;

void vb_sql_admin_init(vb_sql_admin *a, const vb_sql_admin_ops *ops, void *owner);
/* Hangs up and destroys the mutex; no call may be running. */
void vb_sql_admin_destroy(vb_sql_admin *a);

/* Runs fn(conn, arg, err) on the administrative connection under its lock, dialling first when there is none.
 * When fn returns VB_RETRY the connection is hung up, dialled again and fn runs once more (so fn must be safe to
 * repeat: DROP ... IF EXISTS before CREATE, reads); the second VB_RETRY, or a dial that fails, is returned. */
int vb_sql_admin_run(vb_sql_admin *a, int (*fn)(void *conn, void *arg, vb_error *err), void *arg, vb_error *err);

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
