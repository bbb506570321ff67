/* Manifest collection from /proc, uname(2) and the libraries themselves. */
#include "coordinator/manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "datasets/fetch.h"
#include "datasets/package.h"
#include "datasets/registry.h"
#include "datasets/shape.h"
#include "engines/engine.h"
#include "util/versions.h"

/* First value of a "key\t: value" line of /proc/cpuinfo, or "unknown". */
static void cpuinfo_field(const char *field, char *out, size_t len) {
    snprintf(out, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char *line = NULL;
    size_t cap = 0;
    size_t flen = strlen(field);
    while (getline(&line, &cap, f) > 0) {
        if (strncmp(line, field, flen) != 0) continue;
        char *colon = strchr(line, ':');
        if (!colon) continue;
        colon++;
        while (*colon == ' ') colon++;
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(out, len, "%s", colon);
        break;
    }
    free(line);
    fclose(f);
}

int vb_manifest_record_host(vb_store *s, vb_error *err) {
    char buf[8192], host[256] = "";
    struct utsname u;
    uname(&u);
    gethostname(host, sizeof host - 1);
    cpuinfo_field("model name", buf, sizeof buf);
    if (vb_store_manifest_set(s, "host.cpu_model", buf, err)) return VB_ERROR;
    cpuinfo_field("flags", buf, sizeof buf);
    if (vb_store_manifest_set(s, "host.cpu_flags", buf, err)) return VB_ERROR;
    snprintf(buf, sizeof buf, "%s %s %s %s", u.sysname, u.release, u.version, u.machine);
    if (vb_store_manifest_set(s, "host.kernel", buf, err) || vb_store_manifest_set(s, "host.name", host, err))
        return VB_ERROR;
    snprintf(buf, sizeof buf, "%ld", sysconf(_SC_NPROCESSORS_ONLN));
    if (vb_store_manifest_set(s, "host.cores", buf, err)) return VB_ERROR;
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)sysconf(_SC_PHYS_PAGES) * (unsigned long long)sysconf(_SC_PAGESIZE));
    if (vb_store_manifest_set(s, "host.memory_bytes", buf, err)) return VB_ERROR;
    vb_kv v[16];
    size_t n = vb_versions_collect(v, 16);
    for (size_t i = 0; i < n; i++)
        if (vb_store_manifest_set(s, v[i].key, v[i].value, err)) return VB_ERROR;
    const char *blas_env[] = {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(buf, sizeof buf, "env.%s", blas_env[i]);
        const char *val = getenv(blas_env[i]);
        if (vb_store_manifest_set(s, buf, val ? val : "(unset)", err)) return VB_ERROR;
    }
    return VB_OK;
}

/* engine.NAME.kind for each engine of the profile this build knows: "embedded" (the search runs in the agent's
 * client threads, so a saturated client CPU is the engine working, not a client bottleneck: v_validity reads
 * this) or "server". */
static int record_engine_kinds(vb_store *s, const vb_profile *p, vb_error *err) {
    for (size_t i = 0; i < p->n_engines; i++) {
        const vb_engine_ops *ops = vb_engine_find(p->engines[i].adapter);
        if (!ops) continue;
        char key[256];
        snprintf(key, sizeof key, "engine.%s.kind", p->engines[i].name);
        if (vb_store_manifest_set(s, key, (ops->flags & VB_ENGINE_EMBEDDED) ? "embedded" : "server", err))
            return VB_ERROR;
    }
    return VB_OK;
}

/* Files above this size get the checksum recorded at their fetch (FILE.sha256) or none: hashing gigabytes at every
 * campaign start would cost more than it tells. */
#define SHA_MAX_BYTES (4ull << 30)

/* dataset.NAME.*: where each file dataset came from. source: "Debian package NAME VERSION" or "registry NAME (PUBLISHER)"
 * or "files"; file.KEY and file.KEY.sha256 for every file it reads (the checksum recorded beside a fetched file, else
 * computed here up to SHA_MAX_BYTES); subset: "rows R of N, queries Q of M, seed S" when the profile takes one. */
static int record_datasets(vb_store *s, const vb_profile *p, vb_error *err) {
    static const char *const file_keys[] = {"path", "queries_path", "groundtruth_path", "labels_path",
                                             "queries_labels_path"};
    for (size_t d = 0; d < p->n_datasets; d++) {
        const vb_profile_dataset *ds = &p->datasets[d];
        const char *src = vb_kv_get(ds->params, ds->n_params, "source", NULL);
        const char *path = vb_kv_get(ds->params, ds->n_params, "path", NULL);
        if (!path || (src && strcmp(src, "synthetic") == 0)) continue;
        const vb_registry_entry *e = vb_registry_find(vb_kv_get(ds->params, ds->n_params, "registry", NULL));
        char key[512], val[2048], ver[128];
        size_t dl = e && e->package ? strlen(e->package->dir) : 0;
        if (dl && strncmp(path, e->package->dir, dl) == 0 && path[dl] == '/') {
            vb_package_version(e->package, ver, sizeof ver);
            snprintf(val, sizeof val, "Debian package %s %s", e->package->name, ver[0] ? ver : "(version unknown)");
            snprintf(key, sizeof key, "dataset.%s.package", ds->name);
            if (vb_store_manifest_set(s, key, e->package->name, err)) return VB_ERROR;
            snprintf(key, sizeof key, "dataset.%s.package_version", ds->name);
            if (vb_store_manifest_set(s, key, ver, err)) return VB_ERROR;
        } else if (e) {
            snprintf(val, sizeof val, "registry %s (%s)", e->name, e->origin);
        } else {
            snprintf(val, sizeof val, "files");
        }
        snprintf(key, sizeof key, "dataset.%s.source", ds->name);
        if (vb_store_manifest_set(s, key, val, err)) return VB_ERROR;
        for (size_t i = 0; i < sizeof file_keys / sizeof file_keys[0]; i++) {
            const char *f = vb_kv_get(ds->params, ds->n_params, file_keys[i], NULL);
            if (!f || !*f) continue;
            snprintf(key, sizeof key, "dataset.%s.file.%s", ds->name, file_keys[i]);
            if (vb_store_manifest_set(s, key, f, err)) return VB_ERROR;
            char hex[65] = "";
            struct stat st;
            vb_error herr;
            if (vb_fetch_recorded_sha256(f, hex) != 0 &&
                /* a regular file only: a FIFO would block the coordinator on its open (85-stuck-inputs) */
                (stat(f, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > SHA_MAX_BYTES ||
                 vb_fetch_sha256_file(f, hex, &herr)))
                snprintf(hex, sizeof hex, "not computed");
            snprintf(key, sizeof key, "dataset.%s.file.%s.sha256", ds->name, file_keys[i]);
            if (vb_store_manifest_set(s, key, hex, err)) return VB_ERROR;
        }
        const char *rows = vb_kv_get(ds->params, ds->n_params, "rows", NULL);
        const char *q = vb_kv_get(ds->params, ds->n_params, "queries", NULL);
        if (rows || q) {
            vb_dataset_shape sh;
            vb_error serr;
            if (vb_dataset_shape_of(ds->params, ds->n_params, NULL, &sh, &serr) != VB_OK) sh.file_rows = sh.file_queries = 0;
            snprintf(val, sizeof val, "rows %llu of %llu, queries %llu of %llu, seed %s (a seeded subset)",
                     (unsigned long long)sh.rows, (unsigned long long)sh.file_rows, (unsigned long long)sh.queries,
                     (unsigned long long)sh.file_queries, vb_kv_get(ds->params, ds->n_params, "seed", "42"));
            snprintf(key, sizeof key, "dataset.%s.subset", ds->name);
            if (vb_store_manifest_set(s, key, val, err)) return VB_ERROR;
        }
    }
    return VB_OK;
}

int vb_manifest_record_profile(vb_store *s, const vb_profile *p, const char *command_line, vb_error *err) {
    char *json = vb_profile_to_json(p);
    int rc = vb_store_manifest_set(s, "profile.resolved", json ? json : "{}", err);
    free(json);
    if (rc == VB_OK) rc = vb_store_manifest_set(s, "profile.source", p->source, err);
    if (rc == VB_OK) rc = vb_store_manifest_set(s, "command_line", command_line, err);
    if (rc == VB_OK) rc = record_engine_kinds(s, p, err);
    if (rc == VB_OK) rc = record_datasets(s, p, err);
    /* cost: {per_hour, currency}: the price the cost views (store/views.sql v_cost_*) read */
    static const char *const cost_keys[] = {"cost.per_hour", "cost.currency"};
    for (int i = 0; i < 2 && rc == VB_OK; i++) {
        const char *v = vb_profile_setting(p, cost_keys[i], NULL);
        if (v) rc = vb_store_manifest_set(s, cost_keys[i], v, err);
    }
    return rc;
}
