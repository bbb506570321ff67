/* The layer every server adapter shares (see engines/adapter_common.h for what and why). */
#include "engines/adapter_common.h"

#include <stdio.h>
#include <string.h>

/* ---- errors ------------------------------------------------------------------------------------------ */

int vb_adapter_fail(vb_error *err, const char *engine, const char *what, const char *message, const char *detail,
                    int code, int transient) {
    char msg[800];
    snprintf(msg, sizeof msg, "%s", message && message[0] ? message : "(no message from the server)");
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\t' || *p == '\r') *p = ' ';   /* ERROR + DETAIL + HINT: one line in the results */
    size_t n = strlen(msg);
    while (n && msg[n - 1] == ' ') msg[--n] = '\0';
    vb_error_set(err, engine, code, "%s: %s: %s%s%s%s", engine, what, msg, detail ? " (" : "", detail ? detail : "",
                 detail ? ")" : "");
    return transient ? VB_RETRY : VB_ERROR;
}

/* ---- the administrative connection -------------------------------------------------------------------- */

void vb_admin_init(vb_admin *a, const vb_admin_ops *ops, void *owner) {
    pthread_mutex_init(&a->lock, NULL);
    a->conn = NULL;
    a->ops = ops;
    a->owner = owner;
}

void vb_admin_destroy(vb_admin *a) {
    if (a->conn) a->ops->hangup(a->conn);
    a->conn = NULL;
    pthread_mutex_destroy(&a->lock);
}

int vb_admin_run(vb_admin *a, int (*fn)(void *conn, void *arg, vb_error *err), void *arg, vb_error *err) {
    pthread_mutex_lock(&a->lock);
    int rc = VB_RETRY;
    for (int attempt = 0; attempt < 2 && rc == VB_RETRY; attempt++) {
        if (a->conn && attempt) {   /* lost during the first run: a fresh connection for the second */
            a->ops->hangup(a->conn);
            a->conn = NULL;
        }
        if (!a->conn && (rc = a->ops->dial(a->owner, &a->conn, err)) != VB_OK) {
            a->conn = NULL;
            break;   /* the server cannot be reached (RETRY) or refuses us (ERROR): dialling again says the same */
        }
        rc = fn(a->conn, arg, err);
    }
    if (rc == VB_RETRY && a->conn) {   /* leave no lost connection behind for the next call */
        a->ops->hangup(a->conn);
        a->conn = NULL;
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
}
