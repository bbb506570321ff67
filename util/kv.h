/* Key/value parameter lists: how engine and dataset parameters travel from the profile, over the wire, to the
 * code that uses them. Values are strings; typed getters validate and name the key in their error. */
#ifndef VB_UTIL_KV_H
#define VB_UTIL_KV_H

#include <stddef.h>

#include "util/error.h"

typedef struct vb_kv {
    const char *key;
    const char *value;
} vb_kv;

/* Returns the value for key, or def when absent. */
const char *vb_kv_get(const vb_kv *kv, size_t n, const char *key, const char *def);
/* Integer / double getters: def when absent; VB_ERROR naming the key when present but malformed or outside
 * [min, max]. */
int vb_kv_get_long(const vb_kv *kv, size_t n, const char *key, long def, long min, long max, long *out,
                   vb_error *err);
int vb_kv_get_double(const vb_kv *kv, size_t n, const char *key, double def, double min, double max,
                     double *out, vb_error *err);
/* Checks that every key is one of `allowed` (a NULL-terminated list); VB_ERROR naming the first stranger. */
int vb_kv_check_keys(const vb_kv *kv, size_t n, const char *const *allowed, const char *what, vb_error *err);

#endif
