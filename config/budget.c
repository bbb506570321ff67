/* Budget resolution (see config/budget.h for the layouts and the profile section). */
#include "config/budget.h"

#include <inttypes.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/cpulist.h"

#define GB 1000000000ull
#define REF_SERVER_MEMORY 120800000000ull   /* 120.8 GB */
#define REF_SHM 13000000000ull              /* 13 GB */
#define REF_CLIENT_MEMORY 8000000000ull     /* 8 GB */
#define MAX_CPUS 4096

int vb_size_parse(const char *text, const char *what, uint64_t *out, vb_error *err) {
    static const struct { const char *suffix; double mult; } units[] = {
        {"", 1}, {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"K", 1024.0}, {"M", 1048576.0},
        {"G", 1073741824.0}, {"T", 1099511627776.0}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
        {"TiB", 1099511627776.0}};
    char *end = NULL;
    double v = text ? strtod(text, &end) : NAN;
    if (!text || end == text || !(v > 0) || !isfinite(v)) goto bad;
    while (*end == ' ') end++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(end, units[i].suffix) != 0 || (strcmp(units[i].suffix, "") == 0 && *end)) continue;
        /* "K", "M", "G" alone are binary, as systemd and PostgreSQL read them; "KB" etc. are decimal. */
        double bytes = v * units[i].mult;
        if (bytes < 1 || bytes > 1.8e19) goto bad;
        *out = (uint64_t)llround(bytes);
        return VB_OK;
    }
bad:
    return vb_error_set(err, "profile", 1, "%s: '%s' is not a size (e.g. 512MiB, 8GB, 120.8GB)", what,
                        text ? text : "(none)");
}

const char *vb_size_format(uint64_t bytes, char *buf, size_t len) {
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0) snprintf(buf, len, "%" PRIu64 " B", bytes);
    else if (v == floor(v)) snprintf(buf, len, "%.0f %s", v, names[u]);
    else snprintf(buf, len, "%.1f %s", v, names[u]);
    return buf;
}

/* A CPU list from the profile, checked against the host. */
static int resolve_cpus(const char *text, const char *key, int cores, char *out, size_t len, int *n, vb_error *err) {
    int cpus[MAX_CPUS];
    int c = vb_cpulist_parse(text, cpus, MAX_CPUS, err);
    if (c < 0) return vb_error_prefix(err, "resources.%s", key);
    if (c == 0) return vb_error_set(err, "profile", 1, "resources.%s: empty CPU list", key);
    if (cpus[c - 1] >= cores)
        return vb_error_set(err, "profile", 1,
                            "resources.%s: '%s' names CPU %d, but this host has %d (0-%d); choose `layout: small` or "
                            "a list that fits",
                            key, text, cpus[c - 1], cores, cores - 1);
    vb_cpulist_format(cpus, c, out, len);
    *n = c;
    return VB_OK;
}

static void range(int lo, int hi, char *out, size_t len) {
    if (lo == hi) snprintf(out, len, "%d", lo);
    else snprintf(out, len, "%d-%d", lo, hi);
}

int vb_budget_resolve(const vb_profile *p, int cores, uint64_t memory, vb_budget *b, vb_error *err) {
    memset(b, 0, sizeof *b);
    if (cores < 1) cores = 1;
    b->host_cores = cores;
    b->host_memory = memory;
    const char *layout = vb_profile_setting(p, "resources.layout", "auto");
    if (!layout) layout = "auto";   /* never with a default; says so to gcc -O1, which warned at the snprintf below */
    if (strcmp(layout, "auto") == 0)
        layout = cores >= 80 && memory >= REF_SERVER_MEMORY + REF_CLIENT_MEMORY + 7 * GB ? "reference" : "small";
    snprintf(b->layout, sizeof b->layout, "%s", layout);
    char server_cpus[64], client_cpus[64];
    if (strcmp(layout, "reference") == 0) {
        snprintf(server_cpus, sizeof server_cpus, "0-63");
        snprintf(client_cpus, sizeof client_cpus, "64-79");
        b->server_memory = REF_SERVER_MEMORY;
        b->shm = REF_SHM;
        b->client_memory = REF_CLIENT_MEMORY;
    } else if (strcmp(layout, "small") == 0) {
        int client = cores / 5 > 1 ? cores / 5 : 1;
        if (cores == 1) {
            range(0, 0, server_cpus, sizeof server_cpus);
            range(0, 0, client_cpus, sizeof client_cpus);
        } else {
            range(0, cores - client - 1, server_cpus, sizeof server_cpus);
            range(cores - client, cores - 1, client_cpus, sizeof client_cpus);
        }
        b->server_memory = memory / 2;
        b->client_memory = memory / 4 < REF_CLIENT_MEMORY ? memory / 4 : REF_CLIENT_MEMORY;
        b->shm = (uint64_t)((double)b->server_memory * ((double)REF_SHM / (double)REF_SERVER_MEMORY));
    } else {
        return vb_error_set(err, "profile", 1, "resources.layout: unknown layout '%s' (auto, reference, small)", layout);
    }
    const char *v;
    if ((v = vb_profile_setting(p, "resources.server_cpus", NULL))) snprintf(server_cpus, sizeof server_cpus, "%s", v);
    if ((v = vb_profile_setting(p, "resources.client_cpus", NULL))) snprintf(client_cpus, sizeof client_cpus, "%s", v);
    if (resolve_cpus(server_cpus, "server_cpus", cores, b->server_cpus, sizeof b->server_cpus, &b->n_server_cpus, err) ||
        resolve_cpus(client_cpus, "client_cpus", cores, b->client_cpus, sizeof b->client_cpus, &b->n_client_cpus, err))
        return VB_ERROR;
    static const struct { const char *key; size_t off; } sizes[] = {
        {"resources.server_memory", offsetof(vb_budget, server_memory)},
        {"resources.shm", offsetof(vb_budget, shm)},
        {"resources.client_memory", offsetof(vb_budget, client_memory)},
    };
    for (size_t i = 0; i < 3; i++)
        if ((v = vb_profile_setting(p, sizes[i].key, NULL)) &&
            vb_size_parse(v, sizes[i].key, (uint64_t *)((char *)b + sizes[i].off), err))
            return VB_ERROR;
    if (memory && b->server_memory + b->client_memory > memory) {
        char s1[32], s2[32], s3[32];
        return vb_error_set(err, "profile", 1,
                            "resources: server_memory %s + client_memory %s exceed this host's %s; lower them or "
                            "choose `layout: small`",
                            vb_size_format(b->server_memory, s1, sizeof s1),
                            vb_size_format(b->client_memory, s2, sizeof s2), vb_size_format(memory, s3, sizeof s3));
    }
    if (b->shm >= b->server_memory)
        return vb_error_set(err, "profile", 1, "resources.shm must be smaller than resources.server_memory");
    return VB_OK;
}

void vb_budget_each(const vb_budget *b, void (*fn)(void *ctx, const char *key, const char *value), void *ctx) {
    char v[64];
    fn(ctx, "layout", b->layout);
    fn(ctx, "server_cpus", b->server_cpus);
    snprintf(v, sizeof v, "%" PRIu64, b->server_memory);
    fn(ctx, "server_memory_bytes", v);
    snprintf(v, sizeof v, "%" PRIu64, b->shm);
    fn(ctx, "shm_bytes", v);
    fn(ctx, "client_cpus", b->client_cpus);
    snprintf(v, sizeof v, "%" PRIu64, b->client_memory);
    fn(ctx, "client_memory_bytes", v);
    snprintf(v, sizeof v, "%d", b->host_cores);
    fn(ctx, "host_cores", v);
    snprintf(v, sizeof v, "%" PRIu64, b->host_memory);
    fn(ctx, "host_memory_bytes", v);
}

int vb_budget_from_kv(const vb_kv *kv, size_t n, vb_budget *b, vb_error *err) {
    memset(b, 0, sizeof *b);
    const char *need[] = {"server_cpus", "server_memory_bytes", "shm_bytes"};
    for (size_t i = 0; i < 3; i++)
        if (!vb_kv_get(kv, n, need[i], NULL))
            return vb_error_set(err, "orchestrator", 1, "the server budget has no %s", need[i]);
    snprintf(b->layout, sizeof b->layout, "%s", vb_kv_get(kv, n, "layout", "custom"));
    snprintf(b->server_cpus, sizeof b->server_cpus, "%s", vb_kv_get(kv, n, "server_cpus", ""));
    snprintf(b->client_cpus, sizeof b->client_cpus, "%s", vb_kv_get(kv, n, "client_cpus", ""));
    int cpus[MAX_CPUS];
    b->n_server_cpus = vb_cpulist_parse(b->server_cpus, cpus, MAX_CPUS, err);
    if (b->n_server_cpus <= 0) return vb_error_set(err, "orchestrator", 1, "bad server_cpus '%s'", b->server_cpus);
    b->server_memory = strtoull(vb_kv_get(kv, n, "server_memory_bytes", "0"), NULL, 10);
    b->shm = strtoull(vb_kv_get(kv, n, "shm_bytes", "0"), NULL, 10);
    b->client_memory = strtoull(vb_kv_get(kv, n, "client_memory_bytes", "0"), NULL, 10);
    b->host_cores = atoi(vb_kv_get(kv, n, "host_cores", "0"));
    b->host_memory = strtoull(vb_kv_get(kv, n, "host_memory_bytes", "0"), NULL, 10);
    if (!b->server_memory) return vb_error_set(err, "orchestrator", 1, "the server budget has no memory");
    return VB_OK;
}

void vb_budget_node_share(const vb_budget *b, int node, int nodes, vb_budget *out) {
    *out = *b;
    if (nodes <= 1) return;
    vb_error err;
    int cpus[MAX_CPUS], n = vb_cpulist_parse(b->server_cpus, cpus, MAX_CPUS, &err);
    if (n > 0) {
        int from, count;
        if (n >= nodes) {
            int base = n / nodes, extra = n % nodes;
            from = node * base + (node < extra ? node : extra);
            count = base + (node < extra);
        } else {
            from = node % n;
            count = 1;
        }
        vb_cpulist_format(cpus + from, count, out->server_cpus, sizeof out->server_cpus);
        out->n_server_cpus = count;
    }
    out->server_memory = b->server_memory / (uint64_t)nodes;
    out->shm = b->shm / (uint64_t)nodes;
}
