/* Inventory checking: YAML tree -> vb_inventory, with a file:line:key message for everything it refuses.
 *
 * Every value ends up in a systemd unit, an environment file or an ssh command line, so the checks are strict
 * on characters (names, addresses, users, paths): what passes here can be written into those files without
 * quoting and never breaks a line. */
#include "config/inventory.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/yaml_tree.h"
#include "util/cpulist.h"

#define MAX_HOST_NAME 48
#define DEFAULT_PROFILE "smoke"
#define DEFAULT_OUT_DIR "/var/lib/vbench/coordinator/results.db"

typedef struct ctx {
    const char *source;
    vb_error *err;
} ctx;

static int fail(const ctx *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(const ctx *c, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vb_error_vat(c->err, "inventory", c->source, line, fmt, ap);
    va_end(ap);
    return VB_ERROR;
}

static int oom(const ctx *c) { return vb_error_set(c->err, "inventory", 1, "%s: out of memory", c->source); }

static int in_set(char ch, const char *extra) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch && strchr(extra, ch));
}

/* Host and recipe names: letters, digits, '.', '_', '-', not starting with '.' or '-' (no "..", no options). */
static int valid_name(const char *s, size_t max) {
    size_t n = strlen(s);
    if (n == 0 || n > max || s[0] == '.' || s[0] == '-') return 0;
    for (const char *p = s; *p; p++)
        if (!in_set(*p, "._-")) return 0;
    return 1;
}

/* A host name or an IP address (v6 without brackets). */
static int valid_address(const char *s) {
    if (!*s || s[0] == '-' || strlen(s) > 253) return 0;
    for (const char *p = s; *p; p++)
        if (!in_set(*p, ".-_:%")) return 0;
    return 1;
}

static int valid_user(const char *s) {
    if (!*s || strlen(s) > 32 || !((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_')) return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-')) return 0;
    return 1;
}

/* An absolute (or, where allowed, relative) path without spaces, quotes, '$', '%' or control characters, so
 * it can stand in a unit file and an environment file as it is. */
static int valid_path(const char *s, int absolute) {
    if (!*s || (absolute && s[0] != '/') || strlen(s) > 1024) return 0;
    for (const char *p = s; *p; p++)
        if (!in_set(*p, "/._-+:@,=")) return 0;
    return 1;
}

/* A MemoryMax= value: bytes with an optional K/M/G/T suffix (powers of 1024, as systemd reads them), a
 * percentage of the host's memory, or "infinity". */
static int valid_memory(const char *s) {
    if (strcmp(s, "infinity") == 0) return 1;
    const char *p = s;
    while (*p >= '0' && *p <= '9') p++;
    if (p == s) return 0;
    if (*p == '%') {
        long pct = strtol(s, NULL, 10);
        return p[1] == '\0' && pct > 0 && pct <= 100;
    }
    if (*p && strchr("KMGT", *p)) p++;
    return *p == '\0' && strtoull(s, NULL, 10) > 0;
}

/* tcp://HOST:PORT with HOST an address, "*" or "[v6]"; *port gets PORT. Only tcp: a multi-host campaign. */
static int parse_tcp_endpoint(const char *s, int allow_star, int *port) {
    if (strncmp(s, "tcp://", 6) != 0) return 0;
    const char *host = s + 6, *colon = strrchr(host, ':');
    if (!colon || colon == host) return 0;
    char h[300];
    size_t hl = (size_t)(colon - host);
    if (hl >= sizeof h) return 0;
    memcpy(h, host, hl);
    h[hl] = '\0';
    if (h[0] == '[' && h[hl - 1] == ']') {
        h[hl - 1] = '\0';
        memmove(h, h + 1, hl - 1);
    }
    if (!(allow_star && strcmp(h, "*") == 0) && !valid_address(h)) return 0;
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || p < 1 || p > 65535) return 0;
    *port = (int)p;
    return 1;
}

static int is_value(const vb_yaml_node *v) { return v && v->type == VB_YAML_SCALAR && !vb_yaml_is_null(v); }

/* A required or optional string field of map; *out is a copy or NULL when absent (optional). */
static int get_string(const ctx *c, const vb_yaml_node *map, const char *key, const char *path, int required,
                      char **out) {
    char got[64];
    size_t i;
    const vb_yaml_node *v = vb_yaml_map_get(map, key, &i);
    *out = NULL;
    if (!v || vb_yaml_is_null(v)) {
        if (required) return fail(c, v ? map->key_lines[i] : map->line, "key '%s': required key missing", path);
        return VB_OK;
    }
    if (!is_value(v))
        return fail(c, map->key_lines[i], "key '%s': expected a string, got %s", path,
                    vb_yaml_describe(v, got, sizeof got));
    for (const char *p = v->text; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return fail(c, v->line, "key '%s': control characters are not allowed", path);
    *out = strdup(v->text);
    return *out ? VB_OK : oom(c);
}

/* Refuses keys of map that are not in known (NULL-terminated), naming the known ones. */
static int check_keys(const ctx *c, const vb_yaml_node *map, const char *path, const char *const *known) {
    for (size_t i = 0; i < map->n; i++) {
        int found = 0;
        for (const char *const *k = known; *k; k++) found |= strcmp(*k, map->keys[i]) == 0;
        if (found) continue;
        char list[256];
        size_t off = 0;
        list[0] = '\0';
        for (const char *const *k = known; *k && off < sizeof list; k++)
            off += (size_t)snprintf(list + off, sizeof list - off, "%s%s", k == known ? "" : ", ", *k);
        return fail(c, map->key_lines[i], "unknown key '%s%s%s' (known%s%s: %s)", path, *path ? "." : "",
                    map->keys[i], *path ? " in " : "", path, list);
    }
    return VB_OK;
}

static unsigned role_bit(const char *s) {
    if (strcmp(s, "coordinator") == 0) return VB_ROLE_COORDINATOR;
    if (strcmp(s, "client") == 0) return VB_ROLE_CLIENT;
    if (strcmp(s, "orchestrator") == 0) return VB_ROLE_ORCHESTRATOR;
    return 0;
}

/* roles: a list ([client, orchestrator]) or one word / a comma-separated scalar ("client,orchestrator"). */
static int check_roles(const ctx *c, const vb_yaml_node *h, const char *path, unsigned *roles) {
    char got[64];
    size_t i;
    const vb_yaml_node *v = vb_yaml_map_get(h, "roles", &i);
    if (!v || vb_yaml_is_null(v)) return fail(c, v ? h->key_lines[i] : h->line, "key '%s.roles': required key missing", path);
    size_t n = 0;
    char words[256];
    const char *word[8];
    int word_line[8];
    if (v->type == VB_YAML_SEQ) {
        for (size_t k = 0; k < v->n; k++) {
            if (!is_value(v->items[k]))
                return fail(c, v->items[k]->line, "key '%s.roles[%zu]': expected a role, got %s", path, k,
                            vb_yaml_describe(v->items[k], got, sizeof got));
            if (n == 8) return fail(c, v->items[k]->line, "key '%s.roles': too many roles", path);
            word[n] = v->items[k]->text;
            word_line[n] = v->items[k]->line;
            n++;
        }
    } else if (v->type == VB_YAML_SCALAR) {
        snprintf(words, sizeof words, "%s", v->text);
        for (char *save, *t = strtok_r(words, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
            if (n == 8) return fail(c, v->line, "key '%s.roles': too many roles", path);
            word[n] = t;
            word_line[n++] = v->line;
        }
    } else {
        return fail(c, v->line, "key '%s.roles': expected a list of roles, got %s", path,
                    vb_yaml_describe(v, got, sizeof got));
    }
    if (n == 0) return fail(c, v->line, "key '%s.roles': expected at least one of coordinator, client, orchestrator", path);
    *roles = 0;
    for (size_t k = 0; k < n; k++) {
        unsigned b = role_bit(word[k]);
        if (!b)
            return fail(c, word_line[k], "key '%s.roles': unknown role '%s' (known: coordinator, client, orchestrator)",
                        path, word[k]);
        if (*roles & b) return fail(c, word_line[k], "key '%s.roles': role '%s' given twice", path, word[k]);
        *roles |= b;
    }
    return VB_OK;
}

/* recipes: a list of recipe names, or "all" (the default). */
static int check_recipes(const ctx *c, const vb_yaml_node *h, const char *path, vb_inventory_host *host) {
    char got[64];
    size_t i;
    const vb_yaml_node *v = vb_yaml_map_get(h, "recipes", &i);
    if (!v) return VB_OK;
    host->recipes_line = h->key_lines[i];
    if (is_value(v) && strcmp(v->text, "all") == 0) return VB_OK;
    if (v->type != VB_YAML_SEQ)
        return fail(c, h->key_lines[i], "key '%s.recipes': expected a list of recipe names or 'all', got %s", path,
                    vb_yaml_describe(v, got, sizeof got));
    host->recipes = calloc(v->n + 1, sizeof *host->recipes);
    if (!host->recipes) return oom(c);
    for (size_t k = 0; k < v->n; k++) {
        const vb_yaml_node *r = v->items[k];
        if (!is_value(r) || !valid_name(r->text, 128))
            return fail(c, r->line, "key '%s.recipes[%zu]': expected a recipe name (letters, digits, . _ -), got %s",
                        path, k, vb_yaml_describe(r, got, sizeof got));
        for (size_t j = 0; j < k; j++)
            if (strcmp(host->recipes[j], r->text) == 0)
                return fail(c, r->line, "key '%s.recipes[%zu]': recipe '%s' given twice", path, k, r->text);
        if (!(host->recipes[k] = strdup(r->text))) return oom(c);
    }
    return VB_OK;
}

static const char *const top_keys[] = {"coordinator", "keys", "hosts", NULL};
static const char *const coordinator_keys[] = {"listen", "connect", "profile", "out", NULL};
static const char *const host_keys[] = {"name", "address", "user", "port", "roles", "cores", "memory", "recipes", NULL};

static int check_host(const ctx *c, const vb_yaml_node *h, size_t idx, vb_inventory_host *host) {
    char path[64], fpath[96], got[64];
    snprintf(path, sizeof path, "hosts[%zu]", idx);
    host->line = h->line;
    if (check_keys(c, h, path, host_keys) != VB_OK) return VB_ERROR;
    snprintf(fpath, sizeof fpath, "%s.name", path);
    if (get_string(c, h, "name", fpath, 1, &host->name) != VB_OK) return VB_ERROR;
    const vb_yaml_node *v = vb_yaml_map_get(h, "name", NULL);
    if (!valid_name(host->name, MAX_HOST_NAME))
        return fail(c, v->line, "key '%s': '%s' is not a valid host name (letters, digits, . _ -, at most %d)",
                    fpath, host->name, MAX_HOST_NAME);

    snprintf(fpath, sizeof fpath, "%s.address", path);
    if (get_string(c, h, "address", fpath, 1, &host->address) != VB_OK) return VB_ERROR;
    if (!valid_address(host->address))
        return fail(c, vb_yaml_map_get(h, "address", NULL)->line,
                    "key '%s': '%s' is not a host name or an IP address", fpath, host->address);

    snprintf(fpath, sizeof fpath, "%s.user", path);
    if (get_string(c, h, "user", fpath, 0, &host->user) != VB_OK) return VB_ERROR;
    if (!host->user && !(host->user = strdup("root"))) return oom(c);
    if (!valid_user(host->user))
        return fail(c, vb_yaml_map_get(h, "user", NULL)->line, "key '%s': '%s' is not a user name", fpath, host->user);

    host->port = 22;
    size_t i;
    if ((v = vb_yaml_map_get(h, "port", &i))) {
        char *end = NULL;
        long p = is_value(v) ? strtol(v->text, &end, 10) : 0;
        if (!end || *end || p < 1 || p > 65535)
            return fail(c, h->key_lines[i], "key '%s.port': expected a port number 1..65535, got %s", path,
                        vb_yaml_describe(v, got, sizeof got));
        host->port = (int)p;
    }

    if (check_roles(c, h, path, &host->roles) != VB_OK) return VB_ERROR;

    /* cores and memory belong to the client role, recipes to the orchestrator: refused elsewhere, so a typo in
     * the roles does not silently drop a limit. */
    if ((v = vb_yaml_map_get(h, "cores", &i))) {
        if (!(host->roles & VB_ROLE_CLIENT))
            return fail(c, h->key_lines[i], "key '%s.cores': cores are for the client role, which host '%s' does not have",
                        path, host->name);
        snprintf(fpath, sizeof fpath, "%s.cores", path);
        char *text;
        if (get_string(c, h, "cores", fpath, 1, &text) != VB_OK) return VB_ERROR;
        int cpus[CPU_SETSIZE];
        vb_error e;
        int n = vb_cpulist_parse(text, cpus, CPU_SETSIZE, &e);
        free(text);
        if (n <= 0)
            return fail(c, v->line, "key '%s': %s", fpath, n < 0 ? e.message : "the CPU list is empty");
        char buf[4096];
        vb_cpulist_format(cpus, n, buf, sizeof buf);
        if (!(host->cores = strdup(buf))) return oom(c);
    }
    if ((v = vb_yaml_map_get(h, "memory", &i))) {
        if (!(host->roles & VB_ROLE_CLIENT))
            return fail(c, h->key_lines[i], "key '%s.memory': a memory limit is for the client role, which host '%s' "
                        "does not have", path, host->name);
        snprintf(fpath, sizeof fpath, "%s.memory", path);
        if (get_string(c, h, "memory", fpath, 1, &host->memory) != VB_OK) return VB_ERROR;
        if (!valid_memory(host->memory))
            return fail(c, v->line, "key '%s': '%s' is not a memory size (e.g. 16G, 512M, 50%%, infinity)", fpath,
                        host->memory);
    }
    if ((v = vb_yaml_map_get(h, "recipes", &i)) && !(host->roles & VB_ROLE_ORCHESTRATOR))
        return fail(c, h->key_lines[i], "key '%s.recipes': recipes are for the orchestrator role, which host '%s' "
                    "does not have", path, host->name);
    return check_recipes(c, h, path, host);
}

static int check_coordinator(const ctx *c, const vb_yaml_node *root, vb_inventory *inv) {
    char got[64];
    size_t i;
    const vb_yaml_node *m = vb_yaml_map_get(root, "coordinator", &i);
    if (!m) return fail(c, root->line, "key 'coordinator': required key missing");
    if (m->type != VB_YAML_MAP)
        return fail(c, root->key_lines[i], "key 'coordinator': expected a map (listen, connect, profile, out), got %s",
                    vb_yaml_describe(m, got, sizeof got));
    if (check_keys(c, m, "coordinator", coordinator_keys) != VB_OK) return VB_ERROR;
    int port;
    if (get_string(c, m, "listen", "coordinator.listen", 1, &inv->listen) != VB_OK) return VB_ERROR;
    if (!parse_tcp_endpoint(inv->listen, 1, &port))
        return fail(c, vb_yaml_map_get(m, "listen", NULL)->line,
                    "key 'coordinator.listen': '%s' is not tcp://ADDRESS:PORT (ADDRESS may be * or 0.0.0.0)",
                    inv->listen);
    if (get_string(c, m, "connect", "coordinator.connect", 0, &inv->connect) != VB_OK) return VB_ERROR;
    int cport;
    if (inv->connect && !parse_tcp_endpoint(inv->connect, 0, &cport))
        return fail(c, vb_yaml_map_get(m, "connect", NULL)->line,
                    "key 'coordinator.connect': '%s' is not tcp://ADDRESS:PORT", inv->connect);
    if (get_string(c, m, "profile", "coordinator.profile", 0, &inv->profile) != VB_OK) return VB_ERROR;
    if (!inv->profile && !(inv->profile = strdup(DEFAULT_PROFILE))) return oom(c);
    if (!valid_path(inv->profile, 0))
        return fail(c, vb_yaml_map_get(m, "profile", NULL)->line,
                    "key 'coordinator.profile': '%s' is not a profile name or a path", inv->profile);
    if (get_string(c, m, "out", "coordinator.out", 0, &inv->out) != VB_OK) return VB_ERROR;
    if (inv->out && !valid_path(inv->out, 1))
        return fail(c, vb_yaml_map_get(m, "out", NULL)->line,
                    "key 'coordinator.out': '%s' is not an absolute path (no spaces, quotes, $ or %%)", inv->out);
    if (!inv->out) {
        /* <out dir>/<profile's base name>.sqlite: a profile given as a path keeps only its base name. */
        const char *b = strrchr(inv->profile, '/');
        b = b ? b + 1 : inv->profile;
        size_t bl = strlen(b);
        if (bl > 4 && strcmp(b + bl - 4, ".yml") == 0) bl -= 4;
        else if (bl > 5 && strcmp(b + bl - 5, ".yaml") == 0) bl -= 5;
        size_t len = strlen(DEFAULT_OUT_DIR) + bl + 16;
        if (!(inv->out = malloc(len))) return oom(c);
        snprintf(inv->out, len, "%s/%.*s.sqlite", DEFAULT_OUT_DIR, (int)bl, b);
    }
    /* The connect default needs the coordinator's host: check_inventory fills it in after the hosts. */
    return VB_OK;
}

static int check_inventory(const ctx *c, const vb_yaml_node *root, vb_inventory *inv) {
    char got[64];
    if (!root) return fail(c, 1, "the inventory is empty (see deploy/inventory.example.yml)");
    if (root->type != VB_YAML_MAP)
        return fail(c, root->line, "expected a map with coordinator, keys and hosts, got %s",
                    vb_yaml_describe(root, got, sizeof got));
    if (check_keys(c, root, "", top_keys) != VB_OK) return VB_ERROR;
    if (check_coordinator(c, root, inv) != VB_OK) return VB_ERROR;

    if (get_string(c, root, "keys", "keys", 0, &inv->keys_dir) != VB_OK) return VB_ERROR;
    if (!inv->keys_dir && !(inv->keys_dir = strdup("keys"))) return oom(c);
    if (!valid_path(inv->keys_dir, 0))
        return fail(c, vb_yaml_map_get(root, "keys", NULL)->line,
                    "key 'keys': '%s' is not a directory path (no spaces, quotes, $ or %%)", inv->keys_dir);

    size_t i;
    const vb_yaml_node *hosts = vb_yaml_map_get(root, "hosts", &i);
    if (!hosts) return fail(c, root->line, "key 'hosts': required key missing");
    if (hosts->type != VB_YAML_SEQ || hosts->n == 0)
        return fail(c, hosts->type == VB_YAML_SEQ ? hosts->line : root->key_lines[i],
                    "key 'hosts': expected a non-empty list of hosts, got %s",
                    hosts->type == VB_YAML_SEQ ? "an empty list" : vb_yaml_describe(hosts, got, sizeof got));
    inv->hosts = calloc(hosts->n, sizeof *inv->hosts);
    if (!inv->hosts) return oom(c);
    int coordinator_line = 0, any_client = 0;
    for (size_t k = 0; k < hosts->n; k++) {
        const vb_yaml_node *h = hosts->items[k];
        if (h->type != VB_YAML_MAP)
            return fail(c, h->line, "key 'hosts[%zu]': expected a map (name, address, roles, ...), got %s", k,
                        vb_yaml_describe(h, got, sizeof got));
        vb_inventory_host *host = &inv->hosts[k];
        inv->n_hosts = k + 1;
        if (check_host(c, h, k, host) != VB_OK) return VB_ERROR;
        for (size_t j = 0; j < k; j++) {
            if (strcmp(inv->hosts[j].name, host->name) == 0)
                return fail(c, vb_yaml_map_get(h, "name", NULL)->line,
                            "key 'hosts[%zu].name': duplicate host name '%s' (first at line %d)", k, host->name,
                            inv->hosts[j].line);
            if (strcmp(inv->hosts[j].address, host->address) == 0 && inv->hosts[j].port == host->port)
                return fail(c, vb_yaml_map_get(h, "address", NULL)->line,
                            "key 'hosts[%zu].address': host '%s' has the same address as '%s' (line %d); give one "
                            "host both roles instead", k, host->name, inv->hosts[j].name, inv->hosts[j].line);
        }
        if (host->roles & VB_ROLE_COORDINATOR) {
            if (coordinator_line)
                return fail(c, host->line, "key 'hosts[%zu].roles': a second coordinator ('%s'; the first is at "
                            "line %d): a campaign has one", k, host->name, coordinator_line);
            coordinator_line = host->line;
            inv->coordinator = k;
        }
        any_client |= (host->roles & VB_ROLE_CLIENT) != 0;
    }
    int hosts_line = root->key_lines[i];
    if (!coordinator_line)
        return fail(c, hosts_line, "key 'hosts': no host has the coordinator role (give it to exactly one)");
    if (!any_client)
        return fail(c, hosts_line, "key 'hosts': no host has the client role (a campaign needs one to run the "
                    "workload)");
    if (!inv->connect) {
        int port = 0;
        parse_tcp_endpoint(inv->listen, 1, &port);
        const char *a = inv->hosts[inv->coordinator].address;
        size_t len = strlen(a) + 32;
        if (!(inv->connect = malloc(len))) return oom(c);
        snprintf(inv->connect, len, strchr(a, ':') ? "tcp://[%s]:%d" : "tcp://%s:%d", a, port);
    }
    return VB_OK;
}

int vb_inventory_parse(const char *text, size_t len, const char *source, vb_inventory **out, vb_error *err) {
    *out = NULL;
    ctx c = {.source = source, .err = err};
    vb_yaml_node *root = NULL;
    if (vb_yaml_parse(text, len, source, &root, err) != VB_OK) {
        snprintf(err->domain, sizeof err->domain, "inventory");
        return VB_ERROR;
    }
    vb_inventory *inv = calloc(1, sizeof *inv);
    if (!inv || !(inv->source = strdup(source))) {
        free(inv);
        vb_yaml_free(root);
        return oom(&c);
    }
    int rc = check_inventory(&c, root, inv);
    vb_yaml_free(root);
    if (rc != VB_OK) {
        vb_inventory_destroy(&inv);
        return VB_ERROR;
    }
    *out = inv;
    return VB_OK;
}

int vb_inventory_load(const char *path, vb_inventory **out, vb_error *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return vb_error_set(err, "inventory", 1, "%s: %s", path, strerror(errno));
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 > cap) {
            cap = cap ? cap * 2 : 16384;
            char *t = realloc(text, cap);
            if (!t) {
                free(text);
                fclose(f);
                return vb_error_set(err, "inventory", 1, "%s: out of memory", path);
            }
            text = t;
        }
        size_t n = fread(text + len, 1, cap - len, f);
        len += n;
        if (n == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(text);
        return vb_error_set(err, "inventory", 1, "%s: read error", path);
    }
    int rc = vb_inventory_parse(text, len, path, out, err);
    free(text);
    if (rc != VB_OK) return rc;
    /* The key directory is relative to the inventory's own directory, wherever install runs from. */
    vb_inventory *inv = *out;
    if (inv->keys_dir[0] != '/') {
        char dir[PATH_MAX], *slash = strrchr(path, '/');
        char base[PATH_MAX];
        snprintf(base, sizeof base, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
        if (!realpath(base[0] ? base : "/", dir)) {
            vb_inventory_destroy(out);
            return vb_error_set(err, "inventory", 1, "%s: %s", path, strerror(errno));
        }
        size_t l = strlen(dir) + strlen(inv->keys_dir) + 2;
        char *abs = malloc(l);
        if (!abs) {
            vb_inventory_destroy(out);
            return vb_error_set(err, "inventory", 1, "%s: out of memory", path);
        }
        snprintf(abs, l, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, inv->keys_dir);
        free(inv->keys_dir);
        inv->keys_dir = abs;
    }
    return VB_OK;
}

void vb_inventory_destroy(vb_inventory **inv) {
    if (!inv || !*inv) return;
    vb_inventory *v = *inv;
    for (size_t i = 0; i < v->n_hosts; i++) {
        vb_inventory_host *h = &v->hosts[i];
        free(h->name);
        free(h->address);
        free(h->user);
        free(h->cores);
        free(h->memory);
        for (char **r = h->recipes; r && *r; r++) free(*r);
        free(h->recipes);
    }
    free(v->hosts);
    free(v->source);
    free(v->keys_dir);
    free(v->listen);
    free(v->connect);
    free(v->profile);
    free(v->out);
    free(v);
    *inv = NULL;
}

int vb_inventory_check_recipes(const vb_inventory *inv, const char *dir, vb_error *err) {
    for (size_t i = 0; i < inv->n_hosts; i++) {
        const vb_inventory_host *h = &inv->hosts[i];
        for (size_t k = 0; h->recipes && h->recipes[k]; k++) {
            char path[PATH_MAX];
            struct stat st;
            snprintf(path, sizeof path, "%s/%s.yml", dir, h->recipes[k]);
            if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
                return vb_error_set(err, "inventory", 1, "%s:%d: key 'hosts[%zu].recipes[%zu]': no engine recipe '%s' "
                                    "(%s does not exist)", inv->source, h->recipes_line, i, k, h->recipes[k], path);
        }
    }
    return VB_OK;
}

const char *vb_inventory_agent_id(const vb_inventory_host *h, unsigned role, char *buf, size_t len) {
    snprintf(buf, len, "%s-%s", h->name, role == VB_ROLE_ORCHESTRATOR ? "orchestrator" : "client");
    return buf;
}

/* One KEY=VALUE per line, the hosts in inventory order; see cli/cmd_inventory.c for the format. */
void vb_inventory_print(const vb_inventory *inv, FILE *f) {
    fprintf(f, "inventory=%s\nkeys=%s\nlisten=%s\nconnect=%s\nprofile=%s\nout=%s\ncoordinator=%s\n", inv->source,
            inv->keys_dir, inv->listen, inv->connect, inv->profile, inv->out, inv->hosts[inv->coordinator].name);
    for (size_t i = 0; i < inv->n_hosts; i++) {
        const vb_inventory_host *h = &inv->hosts[i];
        char id[128];
        fprintf(f, "host=%s\n%s.line=%d\n%s.address=%s\n%s.user=%s\n%s.port=%d\n", h->name, h->name, h->line,
                h->name, h->address, h->name, h->user, h->name, h->port);
        fprintf(f, "%s.roles=", h->name);
        const char *sep = "";
        if (h->roles & VB_ROLE_COORDINATOR) fprintf(f, "%scoordinator", sep), sep = ",";
        if (h->roles & VB_ROLE_CLIENT) fprintf(f, "%sclient", sep), sep = ",";
        if (h->roles & VB_ROLE_ORCHESTRATOR) fprintf(f, "%sorchestrator", sep);
        fprintf(f, "\n%s.agents=", h->name);
        sep = "";
        if (h->roles & VB_ROLE_CLIENT)
            fprintf(f, "%s%s", sep, vb_inventory_agent_id(h, VB_ROLE_CLIENT, id, sizeof id)), sep = ",";
        if (h->roles & VB_ROLE_ORCHESTRATOR)
            fprintf(f, "%s%s", sep, vb_inventory_agent_id(h, VB_ROLE_ORCHESTRATOR, id, sizeof id));
        fprintf(f, "\n%s.cores=%s\n%s.memory=%s\n%s.recipes=", h->name, h->cores ? h->cores : "", h->name,
                h->memory ? h->memory : "", h->name);
        if (h->roles & VB_ROLE_ORCHESTRATOR) {
            if (!h->recipes) fputs("*", f);
            for (size_t k = 0; h->recipes && h->recipes[k]; k++) fprintf(f, "%s%s", k ? "," : "", h->recipes[k]);
        }
        fputc('\n', f);
    }
}
