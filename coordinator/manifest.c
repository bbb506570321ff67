/* Manifest collection from /proc, uname(2) and the libraries themselves. */
#include "coordinator/manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

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

int vb_manifest_record_profile(vb_store *s, const vb_profile *p, const char *command_line, vb_error *err) {
    char *json = vb_profile_to_json(p);
    int rc = vb_store_manifest_set(s, "profile.resolved", json ? json : "{}", err);
    free(json);
    if (rc == VB_OK) rc = vb_store_manifest_set(s, "profile.source", p->source, err);
    if (rc == VB_OK) rc = vb_store_manifest_set(s, "command_line", command_line, err);
    if (rc == VB_OK) rc = record_engine_kinds(s, p, err);
    /* cost: {per_hour, currency}: the price the cost views (store/views.sql v_cost_*) read */
    static const char *const cost_keys[] = {"cost.per_hour", "cost.currency"};
    for (int i = 0; i < 2 && rc == VB_OK; i++) {
        const char *v = vb_profile_setting(p, cost_keys[i], NULL);
        if (v) rc = vb_store_manifest_set(s, cost_keys[i], v, err);
    }
    return rc;
}
