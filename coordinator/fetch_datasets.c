/* Registry datasets of a profile resolved to files in the cache, fetched when missing (fetch_datasets.h). */
#include "coordinator/fetch_datasets.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "datasets/dataset.h"
#include "datasets/fetch.h"
#include "datasets/registry.h"
#include "util/fs.h"

int vb_fetch_profile_datasets(vb_profile *p, const vb_fetch_datasets_opts *o, vb_error *err) {
    const char *mirror = o->mirror && *o->mirror ? o->mirror : getenv("VBENCH_MIRROR");
    char cache[PATH_MAX], dir[PATH_MAX + 16];
    for (size_t d = 0; d < p->n_datasets; d++) {
        vb_profile_dataset *ds = &p->datasets[d];
        const char *reg = vb_kv_get(ds->params, ds->n_params, "registry", NULL);
        const char *path = vb_kv_get(ds->params, ds->n_params, "path", NULL);
        if (!reg || (path && *path)) continue;
        const vb_registry_entry *e = vb_registry_find(reg);
        if (!e) return vb_error_set(err, "dataset", 1, "dataset '%s': registry: no dataset \"%s\" in the registry "
                                    "(vbench dataset list)", ds->name, reg);
        vb_dataset_cache_dir_name(o->cache_dir, cache, sizeof cache);
        snprintf(dir, sizeof dir, "%s/datasets", cache);
        size_t nf = vb_registry_n_files(e), missing = 0;
        for (size_t i = 0; i < nf; i++) {
            char f[PATH_MAX + 300];
            struct stat st;
            snprintf(f, sizeof f, "%s/%s", dir, e->files[i].file);
            missing += stat(f, &st) != 0;
        }
        if (missing && o->no_fetch)
            return vb_error_set(err, "dataset", 1, "dataset '%s': registry dataset %s is not in %s (--no-fetch): "
                                "fetch it with `vbench dataset fetch %s --cache-dir %s%s%s`, or run without --no-fetch",
                                ds->name, reg, dir, reg, cache, mirror ? " --mirror " : "", mirror ? mirror : "");
        if (missing) {
            if (vb_mkdirs(dir, 0775, err)) return vb_error_prefix(err, "dataset '%s'", ds->name);
            vb_fetch_opts fo = {.mirror = mirror, .retries = 5, .quiet = o->quiet};
            if (!o->quiet) fprintf(stderr, "dataset '%s': fetching registry dataset %s into %s\n", ds->name, reg, dir);
            int rc = vb_fetch_registry(e, dir, &fo, err);
            if (rc != VB_OK)
                return vb_error_prefix(err, "dataset '%s' (registry %s)%s", ds->name, reg,
                                       rc == VB_RETRY ? ": nothing was created; the same command resumes the download" : "");
        }
        if (vb_profile_dataset_set(ds, "source", e->source)) return vb_error_set(err, "dataset", 1, "out of memory");
        for (size_t i = 0; i < nf; i++) {
            char f[PATH_MAX + 300];
            snprintf(f, sizeof f, "%s/%s", dir, e->files[i].file);
            if (vb_profile_dataset_set(ds, e->files[i].key, f)) return vb_error_set(err, "dataset", 1, "out of memory");
        }
        if (!vb_kv_get(ds->params, ds->n_params, "metric", NULL) && strcmp(e->source, "hdf5") != 0 &&
            vb_profile_dataset_set(ds, "metric", e->metric))
            return vb_error_set(err, "dataset", 1, "out of memory");
    }
    return VB_OK;
}
