/* The test engines of engines/testing.c as a plain C API for a shared library, so a Python-threads client
 * (bench/bench_client.sh, through ctypes) calls exactly the search the C client calls. Built as
 * build/bench/libvbpyengine.so from this file, engines/testing.c, util/kv.c and util/error.c.
 *
 *   void *vbpy_open(const char *engine, unsigned service_us)   "null" or "sleep"; NULL on failure
 *   int   vbpy_search(void *h, int k, int64_t *ids)            ids written, returns their count (< 0: error)
 *   void  vbpy_close(void *h) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engines/engine.h"

typedef struct vbpy {
    const vb_engine_ops *ops;
    void *state, *conn;
} vbpy;

void *vbpy_open(const char *engine, unsigned service_us);
int vbpy_search(void *h, int k, int64_t *ids);
void vbpy_close(void *h);

void *vbpy_open(const char *engine, unsigned service_us) {
    const vb_engine_ops *ops = strcmp(engine, "sleep") == 0 ? &vb_engine_sleep
                               : strcmp(engine, "null") == 0 ? &vb_engine_null : NULL;
    if (!ops) return NULL;
    char us[16];
    snprintf(us, sizeof us, "%u", service_us);
    vb_kv params[1] = {{"service_us", us}};
    vb_engine_config cfg = {params, ops == &vb_engine_sleep ? 1 : 0, NULL, 0};
    vb_error err;
    vbpy *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->ops = ops;
    if (ops->open(&cfg, &h->state, &err) != VB_OK || ops->connect(h->state, &h->conn, &err) != VB_OK) {
        fprintf(stderr, "vbpy_open %s: %s\n", engine, err.message);
        if (h->state) ops->close(h->state);
        free(h);
        return NULL;
    }
    return h;
}

int vbpy_search(void *handle, int k, int64_t *ids) {
    vbpy *h = handle;
    static const float query[1] = {0};
    vb_error err;
    int n = 0;
    return h->ops->search(h->conn, query, k, NULL, ids, &n, &err) == VB_OK ? n : -1;
}

void vbpy_close(void *handle) {
    vbpy *h = handle;
    if (!h) return;
    h->ops->disconnect(h->conn);
    h->ops->close(h->state);
    free(h);
}
