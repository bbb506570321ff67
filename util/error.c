/* Error struct helpers: formatting into the fixed buffer, never allocating, so they are safe on any path. */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int vb_error_set(vb_error *err, const char *domain, int code, const char *fmt, ...) {
    if (!err) return VB_ERROR;
    snprintf(err->domain, sizeof err->domain, "%s", domain ? domain : "");
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return VB_ERROR;
}

int vb_error_vat(vb_error *err, const char *domain, const char *source, int line, const char *fmt, va_list ap) {
    char msg[900];
    vsnprintf(msg, sizeof msg, fmt, ap);
    return vb_error_set(err, domain, 1, "%.100s:%d: %s", source ? source : "?", line, msg);
}

int vb_error_at(vb_error *err, const char *domain, const char *source, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vb_error_vat(err, domain, source, line, fmt, ap);
    va_end(ap);
    return VB_ERROR;
}

int vb_error_prefix(vb_error *err, const char *fmt, ...) {
    if (!err) return VB_ERROR;
    char prefix[512], old[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->message, sizeof old);
    /* Precision bounds keep the result within the buffer (and tell the compiler so). */
    snprintf(err->message, sizeof err->message, "%.500s: %.520s", prefix, old);
    return VB_ERROR;
}

void vb_error_clear(vb_error *err) {
    if (err) memset(err, 0, sizeof *err);
}
