/* Status codes and the error struct every vbench function that can fail fills in.
 *
 * Modelled on libmongoc's bson_error_t: the callee writes a domain ("engine", "dataset", "profile", "results",
 * ...), a code and a human message; the caller decides what to do on the status the function returns, one space
 * for the whole tree:
 *   VB_OK     done.
 *   VB_ERROR  cannot succeed as given: the same call fails the same way again (a refused request, a bad file, a
 *             record the results store can never hold: store.h's VB_STORE_POISON).
 *   VB_RETRY  transient: the same call may succeed later (a lost connection, a server restarting, a results store
 *             that cannot write now: store.h's VB_STORE_RETRY).
 * vb_error.code is the domain's own number for the cause, for the message and the rare caller that must tell
 * causes apart: errno for a system call (the lock's EAGAIN), SQLite's extended result code ("results"), the
 * server's error number or SQLSTATE class ("engine"), 0 when there is none. It is never a status: decide on the
 * return value. */
#ifndef VB_UTIL_ERROR_H
#define VB_UTIL_ERROR_H

#include <stdarg.h>
#include <stddef.h>

enum { VB_OK = 0, VB_ERROR = -1, VB_RETRY = -2 };

typedef struct vb_error {
    char domain[32];
    int code;
    char message[1024];
} vb_error;

/* Fills err (which may be NULL) and returns VB_ERROR, so callers can `return vb_error_set(...)`. */
int vb_error_set(vb_error *err, const char *domain, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* An error in a file the user wrote (profile, recipe, inventory): "SOURCE:LINE: message", code 1. Returns
 * VB_ERROR. The va_list form is for the modules' own fail() wrappers. */
int vb_error_at(vb_error *err, const char *domain, const char *source, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int vb_error_vat(vb_error *err, const char *domain, const char *source, int line, const char *fmt, va_list ap);

/* Prepends context to an existing message: "loading dataset x: <old message>". Returns VB_ERROR. */
int vb_error_prefix(vb_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void vb_error_clear(vb_error *err);

#endif
