/* Key/value getters with validation. */
#include "util/kv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *vb_kv_get(const vb_kv *kv, size_t n, const char *key, const char *def) {
    for (size_t i = 0; i < n; i++)
        if (kv[i].key && strcmp(kv[i].key, key) == 0) return kv[i].value;
    return def;
}

int vb_kv_get_long(const vb_kv *kv, size_t n, const char *key, long def, long min, long max, long *out,
                   vb_error *err) {
    const char *v = vb_kv_get(kv, n, key, NULL);
    if (!v) {
        *out = def;
        return VB_OK;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end != '\0')
        return vb_error_set(err, "config", 1, "%s: expected an integer, got \"%s\"", key, v);
    if (x < min || x > max)
        return vb_error_set(err, "config", 1, "%s: %ld is outside [%ld, %ld]", key, x, min, max);
    *out = x;
    return VB_OK;
}

int vb_kv_get_double(const vb_kv *kv, size_t n, const char *key, double def, double min, double max,
                     double *out, vb_error *err) {
    const char *v = vb_kv_get(kv, n, key, NULL);
    if (!v) {
        *out = def;
        return VB_OK;
    }
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end != '\0')
        return vb_error_set(err, "config", 1, "%s: expected a number, got \"%s\"", key, v);
    if (x < min || x > max)
        return vb_error_set(err, "config", 1, "%s: %g is outside [%g, %g]", key, x, min, max);
    *out = x;
    return VB_OK;
}

int vb_kv_check_keys(const vb_kv *kv, size_t n, const char *const *allowed, const char *what, vb_error *err) {
    for (size_t i = 0; i < n; i++) {
        int known = 0;
        for (const char *const *a = allowed; *a && !known; a++) known = strcmp(*a, kv[i].key) == 0;
        if (!known) return vb_error_set(err, "config", 1, "%s: unknown parameter \"%s\"", what, kv[i].key);
    }
    return VB_OK;
}
