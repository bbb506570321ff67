/* Registry datasets of a profile resolved to files in the cache, fetched when missing (fetch_datasets.h). */
#include "coordinator/fetch_datasets.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datasets/dataset.h"
#include "datasets/fetch.h"
#include "datasets/package.h"
#include "datasets/registry.h"
#include "util/fs.h"

/* A registry dataset that a Debian package ships (datasets/package.h): its files when the package is installed,
 * or once it is (as root, when apt has it, unless --no-fetch or a mirror was named: those mean "do not go to the
 * network" and "take the files from there"). 1: the entry now names the package's files; 0: not from the package
 * (the download's files are looked for as for any registry dataset); VB_ERROR: out of memory. */
static int from_package(vb_profile_dataset *ds, const vb_registry_entry *e, const vb_fetch_datasets_opts *o,
                        const char *mirror, vb_error *err) {
    const vb_registry_package *pk = e->package;
    if (!vb_package_here(pk)) {
        if (o->no_fetch || mirror || geteuid() != 0 || !vb_package_installable(pk)) return 0;
        if (!o->quiet) fprintf(stderr, "dataset '%s': registry dataset %s is in Debian's package %s\n", ds->name,
                               e->name, pk->name);
        FILE *say = o->quiet ? fopen("/dev/null", "w") : stderr;   /* apt's own output */
        int rc = vb_package_install(pk, say ? say : stderr, err);
        if (say && say != stderr) fclose(say);
        if (rc != VB_OK) {
            if (!o->quiet) fprintf(stderr, "dataset '%s': %s; taking the download instead\n", ds->name, err->message);
            return 0;
        }
    }
    int oom = vb_profile_dataset_set(ds, "source", pk->source) || vb_profile_dataset_set(ds, "metric", e->metric);
    for (size_t i = 0; i < vb_registry_package_n_files(pk) && !oom; i++) {
        char f[1024];
        vb_package_file_path(pk, i, f, sizeof f);
        oom = vb_profile_dataset_set(ds, pk->files[i].key, f);
    }
    if (oom) return vb_error_set(err, "dataset", 1, "out of memory");
    return 1;
}

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
        int pk = e->package ? from_package(ds, e, o, mirror, err) : 0;
        if (pk < 0) return VB_ERROR;
        if (pk) continue;
        vb_dataset_cache_dir_name(o->cache_dir, cache, sizeof cache);
        snprintf(dir, sizeof dir, "%s/datasets", cache);
        size_t nf = vb_registry_n_files(e), missing = 0;
        for (size_t i = 0; i < nf; i++) {
            char f[PATH_MAX + 300];
            struct stat st;
            snprintf(f, sizeof f, "%s/%s", dir, e->files[i].file);
            missing += stat(f, &st) != 0;
        }
        if (missing && o->no_fetch) {
            char pkg[256] = "";
            if (e->package) snprintf(pkg, sizeof pkg, ", or install Debian's package that ships it (apt-get install -y %s)",
                                     e->package->name);
            return vb_error_set(err, "dataset", 1, "dataset '%s': registry dataset %s is not in %s (--no-fetch): "
                                "fetch it with `vbench dataset fetch %s --cache-dir %s%s%s`%s, or run without --no-fetch",
                                ds->name, reg, dir, reg, cache, mirror ? " --mirror " : "", mirror ? mirror : "", pkg);
        }
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
