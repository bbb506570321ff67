/* Status codes and the error struct every vbench function that can fail fills in.
 *
 * Modelled on libmongoc's bson_error_t: the callee writes a domain ("engine", "dataset", "profile", ...),
 * a code and a human message; the caller decides what to do with it. Functions return VB_OK, VB_ERROR,
 * or VB_RETRY (a transient condition the caller may retry, e.g. a lost connection). */
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
