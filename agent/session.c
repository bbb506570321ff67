/* Session lifetime: open, reuse, attach after restart, close. */
#include "agent/session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "datasets/dataset_spec.h"
#include "util/clock.h"
#include "util/fs.h"

void vb_session_close(vb_session **s) {
    if (!s || !*s) return;
    vb_engine_close(&(*s)->engine);
    vb_dataset_close(&(*s)->ds);
    if ((*s)->have_gt) vb_groundtruth_free(&(*s)->gt);
    free(*s);
    *s = NULL;
}

int vb_session_is(const vb_session *s, const char *engine, const char *config, const char *dataset, int k) {
    if (!config || !*config) config = engine;
    return s && strcmp(s->engine_name, engine) == 0 && strcmp(s->config, config) == 0 &&
           strcmp(s->dataset_name, dataset) == 0 && s->k == k;
}

int vb_session_get(vb_session **cur, const char *engine, const char *config, const vb_kv *engine_params,
                   size_t n_engine_params, const char *dataset, const vb_kv *dataset_params, size_t n_dataset_params, int k,
                   long io_timeout_s, const char *work_dir, const char *cache_dir, int *opened, vb_error *err) {
    *opened = 0;
    if (vb_session_is(*cur, engine, config, dataset, k)) return VB_OK;
    if (!config || !*config) config = engine;
    vb_session_close(cur);

    vb_session *s = calloc(1, sizeof *s);
    int rc = VB_ERROR;
    snprintf(s->engine_name, sizeof s->engine_name, "%s", engine);
    snprintf(s->config, sizeof s->config, "%s", config);
    snprintf(s->dataset_name, sizeof s->dataset_name, "%s", dataset);
    s->k = k;
    long long r0, w0, r1, w1;
    vb_fs_io_self(&r0, &w0);
    uint64_t t0 = vb_now_ns();
    if (vb_mkdirs(cache_dir, 0755, err) ||
        vb_dataset_open_spec(dataset_params, n_dataset_params, cache_dir, &s->ds, err) != VB_OK) {
        vb_error_prefix(err, "dataset %s", dataset);
        goto fail;
    }
    s->ds_open_s = (double)(vb_now_ns() - t0) / 1e9;
    vb_fs_io_self(&r1, &w1);
    s->ds_read_bytes = r0 >= 0 && r1 >= r0 ? r1 - r0 : -1;
    s->ds_written_bytes = w0 >= 0 && w1 >= w0 ? w1 - w0 : -1;
    char data_dir[1024];
    /* one directory per configuration: its files are its own index (the only configuration keeps the old name) */
    snprintf(data_dir, sizeof data_dir, "%s/engines/%s--%s", work_dir, config, dataset);
    if (vb_mkdirs(data_dir, 0755, err)) goto fail;
    vb_engine_config cfg = {engine_params, n_engine_params, data_dir, io_timeout_s};
    if ((rc = vb_engine_open(engine, &cfg, &s->engine, err)) != VB_OK) goto fail;
    rc = VB_ERROR;

    long m = 16, efc = 128;
    if (vb_kv_get_long(engine_params, n_engine_params, "m", 16, 2, 1024, &m, err) ||
        vb_kv_get_long(engine_params, n_engine_params, "ef_construction", 128, 1, 100000, &efc, err)) {
        vb_error_prefix(err, "engine %s", engine);
        goto fail;
    }
    s->spec = (vb_table_spec){.dim = s->ds->dim, .metric = s->ds->metric, .capacity = s->ds->n_train,
                              .m = (int)m, .ef_construction = (int)efc};
    int found = 0;
    if ((rc = vb_engine_attach(s->engine, &s->spec, &found, err)) != VB_OK) goto fail;
    s->ready = found;
    *cur = s;
    *opened = 1;
    return VB_OK;
fail:
    vb_session_close(&s);
    return rc;   /* VB_RETRY: the server cannot be reached now (agent/phase_build.c waits for it) */
}

int vb_session_groundtruth(vb_session *s, const char *cache_dir, const vb_gt_opts *opts, vb_error *err) {
    if (s->have_gt) return VB_OK;
    if (vb_groundtruth_get_opts(s->ds, (size_t)s->k, NULL, "", cache_dir, opts, &s->gt, err) != VB_OK)
        return vb_error_prefix(err, "ground truth for %s", s->dataset_name);
    s->have_gt = 1;
    return VB_OK;
}
