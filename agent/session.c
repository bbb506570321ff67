/* Session lifetime: open, reuse, attach after restart, close. */
#include "agent/session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "datasets/dataset_spec.h"

/* mkdir -p */
static int make_dirs(const char *path, vb_error *err) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return vb_error_set(err, "agent", errno, "cannot create %s: %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return vb_error_set(err, "agent", errno, "cannot create %s: %s", tmp, strerror(errno));
    return VB_OK;
}

void vb_session_close(vb_session **s) {
    if (!s || !*s) return;
    vb_engine_close(&(*s)->engine);
    vb_dataset_close(&(*s)->ds);
    if ((*s)->have_gt) vb_groundtruth_free(&(*s)->gt);
    free(*s);
    *s = NULL;
}

int vb_session_get(vb_session **cur, const char *engine, const vb_kv *engine_params, size_t n_engine_params,
                   const char *dataset, const vb_kv *dataset_params, size_t n_dataset_params, int k,
                   const char *work_dir, const char *cache_dir, int *opened, vb_error *err) {
    *opened = 0;
    if (*cur && strcmp((*cur)->engine_name, engine) == 0 && strcmp((*cur)->dataset_name, dataset) == 0 &&
        (*cur)->k == k)
        return VB_OK;
    vb_session_close(cur);

    vb_session *s = calloc(1, sizeof *s);
    snprintf(s->engine_name, sizeof s->engine_name, "%s", engine);
    snprintf(s->dataset_name, sizeof s->dataset_name, "%s", dataset);
    s->k = k;
    if (make_dirs(cache_dir, err) ||
        vb_dataset_open_spec(dataset_params, n_dataset_params, cache_dir, &s->ds, err) != VB_OK) {
        vb_error_prefix(err, "dataset %s", dataset);
        goto fail;
    }
    char data_dir[1024];
    snprintf(data_dir, sizeof data_dir, "%s/engines/%s--%s", work_dir, engine, dataset);
    if (make_dirs(data_dir, err)) goto fail;
    vb_engine_config cfg = {engine_params, n_engine_params, data_dir};
    if (vb_engine_open(engine, &cfg, &s->engine, err) != VB_OK) goto fail;

    long m = 16, efc = 128;
    if (vb_kv_get_long(engine_params, n_engine_params, "m", 16, 2, 1024, &m, err) ||
        vb_kv_get_long(engine_params, n_engine_params, "ef_construction", 128, 1, 100000, &efc, err)) {
        vb_error_prefix(err, "engine %s", engine);
        goto fail;
    }
    s->spec = (vb_table_spec){.dim = s->ds->dim, .metric = s->ds->metric, .capacity = s->ds->n_train,
                              .m = (int)m, .ef_construction = (int)efc};
    int found = 0;
    if (vb_engine_attach(s->engine, &s->spec, &found, err) != VB_OK) goto fail;
    s->ready = found;
    *cur = s;
    *opened = 1;
    return VB_OK;
fail:
    vb_session_close(&s);
    return VB_ERROR;
}

int vb_session_groundtruth(vb_session *s, const char *cache_dir, vb_error *err) {
    if (s->have_gt) return VB_OK;
    if (vb_groundtruth_get(s->ds, (size_t)s->k, NULL, "", cache_dir, &s->gt, err) != VB_OK)
        return vb_error_prefix(err, "ground truth for %s", s->dataset_name);
    s->have_gt = 1;
    return VB_OK;
}
