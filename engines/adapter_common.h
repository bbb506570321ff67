/* What every server adapter shares, whatever its protocol: the SQL ones (engines/sql_common.h: pgvector, the MySQL
 * family) and the RESP ones (engines/resp_common.h: Redis, Valkey).
 *
 *   errors        one-line messages "ENGINE: WHAT: the server's words (DETAIL)" and the class the engine
 *                 contract wants (VB_RETRY transient, VB_ERROR otherwise), decided by the adapter's classifier
 *   admin         the engine's administrative connection: dialled on first use, serialised by a mutex, and
 *                 after a loss (idle timeout, server restart) dialled again with the call run once more, so an
 *                 engine op returns VB_RETRY only when the server cannot be reached (engine.h: the engine
 *                 reconnects for its own ops)
 *
 * The client libraries differ, so the layer takes their handles as void * and calls back for what is
 * library-specific (dial, hang up); the policies live here once. */
#ifndef VB_ENGINES_ADAPTER_COMMON_H
#define VB_ENGINES_ADAPTER_COMMON_H

#include <pthread.h>

#include "util/error.h"

/* ---- errors ------------------------------------------------------------------------------------------ */

/* Fills err (domain = engine, code = the server's number) with "ENGINE: WHAT: MESSAGE (DETAIL)" on one line:
 * the server's newlines and tabs become spaces, trailing blanks go. message NULL or empty reads "(no message
 * from the server)"; detail (e.g. "SQLSTATE 23505", "error 1062") may be NULL. Returns VB_RETRY when transient,
 * VB_ERROR otherwise. */
int vb_adapter_fail(vb_error *err, const char *engine, const char *what, const char *message, const char *detail,
                    int code, int transient);

/* ---- the administrative connection -------------------------------------------------------------------- */

typedef struct vb_admin_ops {
    /* A new connection in *conn; VB_RETRY when the server cannot be reached, VB_ERROR when it refuses us. */
    int (*dial)(void *owner, void **conn, vb_error *err);
    void (*hangup)(void *conn);
} vb_admin_ops;

typedef struct vb_admin {
    pthread_mutex_t lock;
    void *conn;                    /* NULL until the first call, and after a loss */
    const vb_admin_ops *ops;
    void *owner;                   /* the adapter's engine state, passed to dial */
} vb_admin;

void vb_admin_init(vb_admin *a, const vb_admin_ops *ops, void *owner);
/* Hangs up and destroys the mutex; no call may be running. */
void vb_admin_destroy(vb_admin *a);

/* Runs fn(conn, arg, err) on the administrative connection under its lock, dialling first when there is none.
 * When fn returns VB_RETRY the connection is hung up, dialled again and fn runs once more (so fn must be safe to
 * repeat: DROP ... IF EXISTS before CREATE, reads); the second VB_RETRY, or a dial that fails, is returned. */
int vb_admin_run(vb_admin *a, int (*fn)(void *conn, void *arg, vb_error *err), void *arg, vb_error *err);

#endif
