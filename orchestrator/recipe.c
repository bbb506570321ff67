/* Engine recipes: loading, budget-derived settings, templates (see orchestrator/recipe.h). */
#include "orchestrator/recipe.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "config/yaml_tree.h"

#define MAX_RECIPE_BYTES (1u << 20)

static const char *const top_keys[] = {"name", "engine", "description", "image", "user", "data_mount", "packages",
                                       "password_file", "init", "start", "settings", "connect", "sizes",
                                       "ready_timeout_s", "stop_timeout_s", "limit_nofile", "stop_signal", "build",
                                       "parameters", "replica", "port", "placed_args", "shard", NULL};

typedef struct rctx {
    const char *path;
    vb_error *err;
    const vb_kv *asked;     /* the parameters the reference names ("pgvector_version" -> "0.8.7") */
    size_t n_asked;
} rctx;

static int rfail(const rctx *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int rfail(const rctx *c, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vb_error_vat(c->err, "recipe", c->path, line, fmt, ap);
    va_end(ap);
    return VB_ERROR;
}

static int in_list(const char *const *l, const char *s) {
    for (; *l; l++)
        if (strcmp(*l, s) == 0) return 1;
    return 0;
}

static int scalar(const vb_yaml_node *n) { return n && n->type == VB_YAML_SCALAR && !vb_yaml_is_null(n); }

static int get_string(const rctx *c, const vb_yaml_node *root, const char *key, int required, char **out) {
    size_t i;
    const vb_yaml_node *n = vb_yaml_map_get(root, key, &i);
    char got[64];
    if (!n) return required ? rfail(c, root->line, "key '%s': required key missing", key) : VB_OK;
    if (!scalar(n)) return rfail(c, n->line, "key '%s': expected a string, got %s", key, vb_yaml_describe(n, got, sizeof got));
    *out = strdup(n->text);
    return VB_OK;
}

static int get_long(const rctx *c, const vb_yaml_node *root, const char *key, long def, long *out) {
    const vb_yaml_node *n = vb_yaml_map_get(root, key, NULL);
    *out = def;
    if (!n) return VB_OK;
    char *end = NULL;
    long v = scalar(n) ? strtol(n->text, &end, 10) : -1;
    if (!scalar(n) || *end || v <= 0) return rfail(c, n->line, "key '%s': expected a positive integer", key);
    *out = v;
    return VB_OK;
}

/* A list of scalars -> NULL-terminated malloc'ed array. */
static int get_argv(const rctx *c, const vb_yaml_node *n, const char *what, char ***out, size_t *count) {
    char got[64];
    if (!n || n->type != VB_YAML_SEQ || n->n == 0)
        return rfail(c, n ? n->line : 0, "key '%s': expected a non-empty list of strings, got %s", what,
                     n ? vb_yaml_describe(n, got, sizeof got) : "nothing");
    char **v = calloc(n->n + 1, sizeof *v);
    for (size_t i = 0; i < n->n; i++) {
        if (n->items[i]->type != VB_YAML_SCALAR) {
            for (size_t j = 0; j < i; j++) free(v[j]);
            free(v);
            return rfail(c, n->items[i]->line, "key '%s[%zu]': expected a string, got %s", what, i,
                         vb_yaml_describe(n->items[i], got, sizeof got));
        }
        v[i] = strdup(n->items[i]->text);
    }
    *out = v;
    if (count) *count = n->n;
    return VB_OK;
}

void vb_recipe_argv_free(char **v) {
    for (size_t i = 0; v && v[i]; i++) free(v[i]);
    free(v);
}

static int parse_setting(const rctx *c, const char *name, const vb_yaml_node *n, vb_recipe_setting *s) {
    s->name = strdup(name);
    if (n->type == VB_YAML_SCALAR) {
        s->literal = strdup(n->text);
        return VB_OK;
    }
    if (n->type != VB_YAML_MAP) return rfail(c, n->line, "key 'settings.%s': expected a value or a map", name);
    static const char *const keys[] = {"of", "fraction", "min", "max", "unit", "suffix", NULL};
    for (size_t i = 0; i < n->n; i++) {
        if (!in_list(keys, n->keys[i]))
            return rfail(c, n->key_lines[i], "unknown key 'settings.%s.%s' (known: of, fraction, min, max, unit, suffix)",
                         name, n->keys[i]);
        if (!scalar(n->items[i])) return rfail(c, n->key_lines[i], "key 'settings.%s.%s': expected a value", name, n->keys[i]);
    }
    const vb_yaml_node *of = vb_yaml_map_get(n, "of", NULL);
    if (!of || (strcmp(of->text, "memory") && strcmp(of->text, "shm") && strcmp(of->text, "cpus")))
        return rfail(c, of ? of->line : n->line, "key 'settings.%s.of': expected memory, shm or cpus", name);
    snprintf(s->of, sizeof s->of, "%s", of->text);
    static const char *const nums[] = {"fraction", "min", "max"};
    double *dst[] = {&s->fraction, &s->min, &s->max};
    s->fraction = 1;
    for (int k = 0; k < 3; k++) {
        size_t at;
        const vb_yaml_node *v = vb_yaml_map_get(n, nums[k], &at);
        if (!v) continue;
        char *end = NULL;
        double d = strtod(v->text, &end);
        if (*end || !(d >= 0) || !isfinite(d) || (k == 0 && (d <= 0 || d > 1)))
            return rfail(c, v->line, "key 'settings.%s.%s': '%s' is not %s", name, nums[k], v->text,
                         k == 0 ? "a fraction in (0, 1]" : "a non-negative number");
        *dst[k] = d;
    }
    const vb_yaml_node *u = vb_yaml_map_get(n, "unit", NULL);
    snprintf(s->unit, sizeof s->unit, "%s", u ? u->text : strcmp(s->of, "cpus") == 0 ? "" : "B");
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", NULL};
    if (strcmp(s->of, "cpus") != 0 && !in_list(units, s->unit))
        return rfail(c, u->line, "key 'settings.%s.unit': expected B, KiB, MiB or GiB", name);
    if (strcmp(s->of, "cpus") == 0 && u) return rfail(c, u->line, "key 'settings.%s.unit': CPU counts have no unit", name);
    const vb_yaml_node *sf = vb_yaml_map_get(n, "suffix", NULL);
    if (sf) snprintf(s->suffix, sizeof s->suffix, "%s", sf->text);
    return VB_OK;
}

/* build: {package, target_isa, kernel_isa, flags, runtime_dispatch}, all strings. A second build: (a parameter
 * value's) replaces the first whole, so no field of the recipe's own survives beside the value's. */
static int parse_build(const rctx *c, const vb_yaml_node *n, vb_recipe *r) {
    static const char *const keys[] = {"package", "target_isa", "kernel_isa", "flags", "runtime_dispatch", NULL};
    free(r->build_package), free(r->build_target_isa), free(r->build_kernel_isa), free(r->build_flags), free(r->build_dispatch);
    r->build_package = r->build_target_isa = r->build_kernel_isa = r->build_flags = r->build_dispatch = NULL;
    if (n->type != VB_YAML_MAP)
        return rfail(c, n->line, "key 'build': expected a map (package, target_isa, kernel_isa, flags, runtime_dispatch)");
    for (size_t i = 0; i < n->n; i++)
        if (!in_list(keys, n->keys[i]))
            return rfail(c, n->key_lines[i], "unknown key 'build.%s' (known: package, target_isa, kernel_isa, flags, "
                         "runtime_dispatch)", n->keys[i]);
    return get_string(c, n, "package", 0, &r->build_package) || get_string(c, n, "target_isa", 0, &r->build_target_isa) ||
           get_string(c, n, "kernel_isa", 0, &r->build_kernel_isa) || get_string(c, n, "flags", 0, &r->build_flags) ||
           get_string(c, n, "runtime_dispatch", 0, &r->build_dispatch);
}

/* parameters: NAME: {default: V, V1: {image: ...}, V2: {...}}. The value in force is the one the reference asked
 * for, else the default; its map may set the image, settings (literal values), the packages whose versions the
 * manifest records and the build: block (another image holds another server: PostgreSQL 18 in db-sid). Every
 * asked parameter must be declared. */
static int parse_parameters(const rctx *c, const vb_yaml_node *n, vb_recipe *r) {
    for (size_t a = 0; a < c->n_asked; a++)
        if (!n || !vb_yaml_map_get(n, c->asked[a].key, NULL))
            return rfail(c, n ? n->line : 1, "no parameter '%s' in this recipe (it is named in the recipe reference "
                         "\"%s=%s\"; declare it under parameters:)", c->asked[a].key, c->asked[a].key, c->asked[a].value);
    if (!n) return VB_OK;
    if (n->type != VB_YAML_MAP) return rfail(c, n->line, "key 'parameters': expected a map of parameter -> values");
    r->params = calloc(n->n ? n->n : 1, sizeof *r->params);
    for (size_t i = 0; i < n->n; i++) {
        const char *pname = n->keys[i];
        const vb_yaml_node *p = n->items[i];
        if (p->type != VB_YAML_MAP) return rfail(c, n->key_lines[i], "key 'parameters.%s': expected a map with default and values", pname);
        const vb_yaml_node *def = vb_yaml_map_get(p, "default", NULL);
        if (!scalar(def)) return rfail(c, p->line, "key 'parameters.%s.default': required, a value", pname);
        const char *want = vb_kv_get(c->asked, c->n_asked, pname, def->text);
        const vb_yaml_node *v = strcmp(want, "default") ? vb_yaml_map_get(p, want, NULL) : NULL;
        if (!v) {
            char known[512];
            size_t off = 0;
            known[0] = '\0';
            for (size_t k = 0; k < p->n && off < sizeof known; k++)
                if (strcmp(p->keys[k], "default") != 0)
                    off += (size_t)snprintf(known + off, sizeof known - off, "%s%s", off ? ", " : "", p->keys[k]);
            return rfail(c, n->key_lines[i], "parameter '%s': no value '%s' (known: %s)", pname, want, known);
        }
        static const char *const value_keys[] = {"image", "settings", "packages", "build", NULL};
        if (v->type != VB_YAML_MAP)
            return rfail(c, v->line, "key 'parameters.%s.%s': expected a map (image, settings, packages, build)", pname, want);
        for (size_t k = 0; k < v->n; k++)
            if (!in_list(value_keys, v->keys[k]))
                return rfail(c, v->key_lines[k], "unknown key 'parameters.%s.%s.%s' (known: image, settings, packages, "
                             "build)", pname, want, v->keys[k]);
        const vb_yaml_node *pv = vb_yaml_map_get(v, "packages", NULL);
        if (pv) {
            vb_recipe_argv_free(r->packages);
            r->packages = NULL, r->n_packages = 0;
            if (get_argv(c, pv, "packages", &r->packages, &r->n_packages)) return VB_ERROR;
        }
        const vb_yaml_node *bv = vb_yaml_map_get(v, "build", NULL);
        if (bv && parse_build(c, bv, r)) return VB_ERROR;
        /* settings: literal values that replace the recipe's settings of the same name (a server_pass, e.g.
         * relaxed: fsync off); each must be a setting the recipe has, so that its command line uses it */
        const vb_yaml_node *sv = vb_yaml_map_get(v, "settings", NULL);
        if (sv && sv->type != VB_YAML_MAP)
            return rfail(c, sv->line, "key 'parameters.%s.%s.settings': expected a map of setting -> value", pname, want);
        for (size_t k = 0; sv && k < sv->n; k++) {
            vb_recipe_setting *set = NULL;
            for (size_t j = 0; j < r->n_settings && !set; j++)
                if (strcmp(r->settings[j].name, sv->keys[k]) == 0) set = &r->settings[j];
            if (!set)
                return rfail(c, sv->key_lines[k], "key 'parameters.%s.%s.settings.%s': not a setting of this recipe "
                             "(declare it under settings:)", pname, want, sv->keys[k]);
            if (!scalar(sv->items[k]))
                return rfail(c, sv->key_lines[k], "key 'parameters.%s.%s.settings.%s': expected a value", pname, want,
                             sv->keys[k]);
            free(set->literal);
            set->literal = strdup(sv->items[k]->text);
        }
        char *image = NULL;
        if (get_string(c, v, "image", 0, &image)) return VB_ERROR;
        if (image) free(r->image), r->image = image;
        r->params[r->n_params++] = (vb_kv){strdup(pname), strdup(want)};
    }
    return VB_OK;
}

static int parse(const rctx *c, const vb_yaml_node *root, vb_recipe *r) {
    char got[64];
    if (!root || root->type != VB_YAML_MAP) return rfail(c, root ? root->line : 1, "expected a map (name, engine, image, start, ...)");
    for (size_t i = 0; i < root->n; i++)
        if (!in_list(top_keys, root->keys[i]))
            return rfail(c, root->key_lines[i], "unknown key '%s' (known: name, engine, description, image, user, "
                                                "data_mount, packages, password_file, init, start, settings, connect, "
                                                "sizes, ready_timeout_s, stop_timeout_s, limit_nofile, stop_signal, "
                                                "build, parameters, replica, port, placed_args, shard)",
                         root->keys[i]);
    if (get_string(c, root, "name", 1, &r->name) || get_string(c, root, "engine", 1, &r->engine) ||
        get_string(c, root, "description", 0, &r->description) || get_string(c, root, "image", 0, &r->image) ||
        get_string(c, root, "user", 1, &r->user) || get_string(c, root, "data_mount", 0, &r->data_mount) ||
        get_string(c, root, "password_file", 0, &r->password_file) ||
        get_long(c, root, "ready_timeout_s", 120, &r->ready_timeout_s) ||
        get_long(c, root, "stop_timeout_s", 300, &r->stop_timeout_s) ||
        get_long(c, root, "limit_nofile", 65536, &r->limit_nofile) || get_long(c, root, "port", 0, &r->port))
        return VB_ERROR;
    if (!r->data_mount) r->data_mount = strdup("/var/lib/vbench");
    if (r->port < 0 || r->port > 65535 - 16)
        return rfail(c, 1, "key 'port': %ld is not a TCP port from 1 to 65519 (node K of a server placed over several "
                     "hosts listens on port + K)", r->port);
    r->stop_signal = SIGTERM;
    const vb_yaml_node *sig = vb_yaml_map_get(root, "stop_signal", NULL);
    if (sig) {
        static const struct { const char *name; int signo; } sigs[] = {{"TERM", SIGTERM}, {"INT", SIGINT}, {"QUIT", SIGQUIT}};
        r->stop_signal = 0;
        for (size_t i = 0; i < 3 && scalar(sig); i++)
            if (strcmp(sig->text, sigs[i].name) == 0 || (strncmp(sig->text, "SIG", 3) == 0 && strcmp(sig->text + 3, sigs[i].name) == 0))
                r->stop_signal = sigs[i].signo;
        if (!r->stop_signal) return rfail(c, sig->line, "key 'stop_signal': expected TERM, INT or QUIT");
    }
    if (r->data_mount[0] != '/') return rfail(c, root->line, "key 'data_mount': '%s' is not an absolute path", r->data_mount);
    const vb_yaml_node *n;
    if ((n = vb_yaml_map_get(root, "packages", NULL)) && get_argv(c, n, "packages", &r->packages, &r->n_packages))
        return VB_ERROR;
    if ((n = vb_yaml_map_get(root, "sizes", NULL)) && get_argv(c, n, "sizes", &r->sizes, &r->n_sizes)) return VB_ERROR;
    if (get_argv(c, vb_yaml_map_get(root, "start", NULL), "start", &r->start, NULL)) return VB_ERROR;
    if (r->start[0][0] != '/') return rfail(c, vb_yaml_map_get(root, "start", NULL)->line,
                                            "key 'start[0]': '%s' is not an absolute path inside the image", r->start[0]);
    if ((n = vb_yaml_map_get(root, "init", NULL))) {
        if (n->type != VB_YAML_MAP) return rfail(c, n->line, "key 'init': expected a map with creates and run");
        if (get_string(c, n, "creates", 1, &r->init_creates)) return VB_ERROR;
        const vb_yaml_node *run = vb_yaml_map_get(n, "run", NULL);
        if (!run || run->type != VB_YAML_SEQ || run->n == 0) return rfail(c, n->line, "key 'init.run': expected a list of commands");
        r->init = calloc(run->n, sizeof *r->init);
        for (size_t i = 0; i < run->n; i++) {
            char what[32];
            snprintf(what, sizeof what, "init.run[%zu]", i);
            if (get_argv(c, run->items[i], what, &r->init[i], NULL)) return VB_ERROR;
            r->n_init++;
        }
        const vb_yaml_node *t = vb_yaml_map_get(n, "template", NULL);
        static const char *const init_keys[] = {"creates", "run", "template", NULL};
        for (size_t i = 0; i < n->n; i++)
            if (!in_list(init_keys, n->keys[i]))
                return rfail(c, n->key_lines[i], "unknown key 'init.%s' (known: creates, run, template)", n->keys[i]);
        if (t) {
            if (t->type != VB_YAML_MAP)
                return rfail(c, t->line, "key 'init.template': expected a map (apply: the commands run in each copy; "
                             "{} when there are none)");
            for (size_t i = 0; i < t->n; i++)
                if (strcmp(t->keys[i], "apply") != 0)
                    return rfail(c, t->key_lines[i], "unknown key 'init.template.%s' (known: apply)", t->keys[i]);
            r->init_template = 1;
            const vb_yaml_node *apply = vb_yaml_map_get(t, "apply", NULL);
            if (apply && (apply->type != VB_YAML_SEQ || apply->n == 0))
                return rfail(c, apply->line, "key 'init.template.apply': expected a list of commands");
            if (apply) r->template_apply = calloc(apply->n, sizeof *r->template_apply);
            for (size_t i = 0; apply && i < apply->n; i++) {
                char what[48];
                snprintf(what, sizeof what, "init.template.apply[%zu]", i);
                if (get_argv(c, apply->items[i], what, &r->template_apply[i], NULL)) return VB_ERROR;
                r->n_template_apply++;
            }
        }
    }
    if ((n = vb_yaml_map_get(root, "replica", NULL))) {
        if (n->type != VB_YAML_MAP) return rfail(c, n->line, "key 'replica': expected a map with primary_mount and run");
        if (get_string(c, n, "primary_mount", 1, &r->replica_mount)) return VB_ERROR;
        if (r->replica_mount[0] != '/')
            return rfail(c, n->line, "key 'replica.primary_mount': '%s' is not an absolute path", r->replica_mount);
        const vb_yaml_node *run = vb_yaml_map_get(n, "run", NULL);
        if (!run || run->type != VB_YAML_SEQ || run->n == 0)
            return rfail(c, n->line, "key 'replica.run': expected a list of commands");
        r->replica_init = calloc(run->n, sizeof *r->replica_init);
        for (size_t i = 0; i < run->n; i++) {
            char what[48];
            snprintf(what, sizeof what, "replica.run[%zu]", i);
            if (get_argv(c, run->items[i], what, &r->replica_init[i], NULL)) return VB_ERROR;
            r->n_replica_init++;
        }
        /* arguments added to start: on the primary of a server with replicas, on each replica (MariaDB: the binary
         * log and a TCP port on the primary, a server id on each) */
        const vb_yaml_node *pa = vb_yaml_map_get(n, "primary_args", NULL), *ra = vb_yaml_map_get(n, "args", NULL);
        if ((pa && get_argv(c, pa, "replica.primary_args", &r->replica_primary_args, NULL)) ||
            (ra && get_argv(c, ra, "replica.args", &r->replica_args, NULL)))
            return VB_ERROR;
    }
    /* arguments added to start on a node placed over several orchestrator hosts (MariaDB: networking on, at
     * {listen}:{port}; pgvector needs none, its start says listen_addresses={listen}) */
    if ((n = vb_yaml_map_get(root, "placed_args", NULL)) && get_argv(c, n, "placed_args", &r->placed_args, NULL))
        return VB_ERROR;
    if ((n = vb_yaml_map_get(root, "shard", NULL))) {
        if (n->type != VB_YAML_MAP) return rfail(c, n->line, "key 'shard': expected a map with nodes_mount");
        if (get_string(c, n, "nodes_mount", 1, &r->nodes_mount)) return VB_ERROR;
        if (r->nodes_mount[0] != '/')
            return rfail(c, n->line, "key 'shard.nodes_mount': '%s' is not an absolute path", r->nodes_mount);
    }
    if ((n = vb_yaml_map_get(root, "settings", NULL))) {
        if (n->type != VB_YAML_MAP) return rfail(c, n->line, "key 'settings': expected a map");
        r->settings = calloc(n->n ? n->n : 1, sizeof *r->settings);
        for (size_t i = 0; i < n->n; i++) {
            r->n_settings++; /* counted first: vb_recipe_destroy frees what a failed parse_setting allocated */
            if (parse_setting(c, n->keys[i], n->items[i], &r->settings[i])) return VB_ERROR;
        }
    }
    if ((n = vb_yaml_map_get(root, "build", NULL)) && parse_build(c, n, r)) return VB_ERROR;
    if (parse_parameters(c, vb_yaml_map_get(root, "parameters", NULL), r)) return VB_ERROR;
    if ((n = vb_yaml_map_get(root, "connect", NULL))) {
        if (n->type != VB_YAML_MAP) return rfail(c, n->line, "key 'connect': expected a map of engine parameters");
        r->connect = calloc(n->n ? n->n : 1, sizeof *r->connect);
        for (size_t i = 0; i < n->n; i++) {
            if (n->items[i]->type != VB_YAML_SCALAR)
                return rfail(c, n->key_lines[i], "key 'connect.%s': expected a value, got %s", n->keys[i],
                             vb_yaml_describe(n->items[i], got, sizeof got));
            r->connect[r->n_connect++] = (vb_kv){strdup(n->keys[i]), strdup(n->items[i]->text)};
        }
    }
    return VB_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* "a, b, c": the recipe names in DIR, sorted. */
static void list_recipes(const char *dir, char *buf, size_t len) {
    DIR *d = opendir(dir);
    char *names[256];
    size_t n = 0, off = 0;
    buf[0] = '\0';
    if (!d) return;
    for (struct dirent *e; (e = readdir(d)) && n < 256;) {
        size_t l = strlen(e->d_name);
        if (l > 4 && strcmp(e->d_name + l - 4, ".yml") == 0) names[n++] = strndup(e->d_name, l - 4);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        if (off < len) off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", names[i]);
        free(names[i]);
    }
}

/* "NAME k=v k2=v2" -> name, and the pairs in asked (pointing into buf). VB_ERROR for a word without '='. */
static int split_reference(const char *ref, char *buf, size_t len, const char **name, vb_kv *asked, size_t cap,
                           size_t *n, vb_error *err) {
    snprintf(buf, len, "%s", ref);
    *n = 0;
    *name = NULL;
    for (char *save = NULL, *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (!*name) {
            *name = w;
            continue;
        }
        char *eq = strchr(w, '=');
        if (!eq || eq == w || !eq[1] || *n == cap)
            return vb_error_set(err, "recipe", 1, "recipe reference \"%s\": '%s' is not key=value (write "
                                "\"NAME key=value ...\", e.g. \"pgvector pgvector_version=0.8.7\")", ref, w);
        *eq = '\0';
        asked[(*n)++] = (vb_kv){w, eq + 1};
    }
    if (!*name) return vb_error_set(err, "recipe", 1, "empty recipe reference");
    return VB_OK;
}

int vb_recipe_load(const char *dir, const char *ref, vb_recipe **out, vb_error *err) {
    *out = NULL;
    char path[PATH_MAX], refbuf[512];
    const char *name;
    vb_kv asked[16];
    size_t n_asked;
    if (split_reference(ref, refbuf, sizeof refbuf, &name, asked, 16, &n_asked, err)) return VB_ERROR;
    snprintf(path, sizeof path, "%s/%s.yml", dir, name);
    FILE *f = strchr(name, '/') ? NULL : fopen(path, "rb");
    if (!f) {
        char avail[512];
        list_recipes(dir, avail, sizeof avail);
        return vb_error_set(err, "recipe", 1, "unknown recipe '%s': %s does not exist (recipes in %s: %s)", name, path,
                            dir, avail[0] ? avail : "none");
    }
    char *text = malloc(MAX_RECIPE_BYTES + 1);
    size_t len = fread(text, 1, MAX_RECIPE_BYTES + 1, f);
    fclose(f);
    if (len > MAX_RECIPE_BYTES) {
        free(text);
        return vb_error_set(err, "recipe", 1, "%s: larger than 1 MiB", path);
    }
    vb_yaml_node *root = NULL;
    int rc = vb_yaml_parse(text, len, path, &root, err);
    free(text);
    if (rc) {
        snprintf(err->domain, sizeof err->domain, "recipe");
        return VB_ERROR;
    }
    vb_recipe *r = calloc(1, sizeof *r);
    r->path = strdup(path);
    rctx c = {path, err, asked, n_asked};
    rc = parse(&c, root, r);
    if (rc == VB_OK && strcmp(r->name, name) != 0)
        rc = rfail(&c, root->line, "key 'name': '%s' does not match the file name '%s'", r->name, name);
    vb_yaml_free(root);
    if (rc) {
        vb_recipe_destroy(&r);
        return VB_ERROR;
    }
    *out = r;
    return VB_OK;
}

void vb_recipe_destroy(vb_recipe **rp) {
    vb_recipe *r = rp ? *rp : NULL;
    if (!r) return;
    free(r->name), free(r->path), free(r->engine), free(r->description), free(r->image), free(r->user);
    free(r->data_mount), free(r->password_file), free(r->init_creates);
    free(r->build_package), free(r->build_target_isa), free(r->build_kernel_isa), free(r->build_flags), free(r->build_dispatch);
    vb_recipe_kv_free(r->params, r->n_params);
    vb_recipe_argv_free(r->packages);
    vb_recipe_argv_free(r->sizes);
    vb_recipe_argv_free(r->start);
    for (size_t i = 0; i < r->n_init; i++) vb_recipe_argv_free(r->init[i]);
    free(r->init);
    for (size_t i = 0; i < r->n_template_apply; i++) vb_recipe_argv_free(r->template_apply[i]);
    free(r->template_apply);
    for (size_t i = 0; i < r->n_replica_init; i++) vb_recipe_argv_free(r->replica_init[i]);
    free(r->replica_init);
    free(r->replica_mount);
    vb_recipe_argv_free(r->replica_primary_args);
    vb_recipe_argv_free(r->placed_args);
    vb_recipe_argv_free(r->replica_args);
    free(r->nodes_mount);
    for (size_t i = 0; i < r->n_settings; i++) free(r->settings[i].name), free(r->settings[i].literal);
    free(r->settings);
    vb_recipe_kv_free(r->connect, r->n_connect);
    free(r);
    *rp = NULL;
}

void vb_recipe_kv_free(vb_kv *kv, size_t n) {
    for (size_t i = 0; kv && i < n; i++) free((char *)kv[i].key), free((char *)kv[i].value);
    free(kv);
}

int vb_recipe_settings(const vb_recipe *r, const vb_budget *b, vb_kv **out, size_t *n, vb_error *err) {
    (void)err;
    vb_kv *kv = calloc(r->n_settings ? r->n_settings : 1, sizeof *kv);
    for (size_t i = 0; i < r->n_settings; i++) {
        const vb_recipe_setting *s = &r->settings[i];
        char val[96];
        if (s->literal) {
            snprintf(val, sizeof val, "%s", s->literal);
        } else if (strcmp(s->of, "cpus") == 0) {
            double v = floor((double)b->n_server_cpus * s->fraction);
            if (v < s->min) v = s->min;
            if (s->max > 0 && v > s->max) v = s->max;
            snprintf(val, sizeof val, "%.0f%s", v, s->suffix);
        } else {
            double base = (double)(strcmp(s->of, "shm") == 0 ? b->shm : b->server_memory);
            double div = strcmp(s->unit, "KiB") == 0 ? 1024.0 : strcmp(s->unit, "MiB") == 0 ? 1048576.0
                       : strcmp(s->unit, "GiB") == 0 ? 1073741824.0 : 1.0;
            double v = floor(base * s->fraction / div);
            if (v < s->min) v = s->min;
            if (s->max > 0 && v > s->max) v = s->max;
            snprintf(val, sizeof val, "%.0f%s", v, s->suffix);
        }
        kv[i] = (vb_kv){strdup(s->name), strdup(val)};
    }
    *out = kv;
    *n = r->n_settings;
    return VB_OK;
}

int vb_recipe_expand(const vb_recipe *r, const char *tmpl, const vb_kv *vars, size_t n, char **out, vb_error *err) {
    size_t cap = strlen(tmpl) + 64, len = 0;
    char *s = malloc(cap);
    for (const char *p = tmpl; *p;) {
        const char *val = NULL;
        size_t skip = 1;
        if (*p == '{') {
            const char *end = strchr(p, '}');
            if (!end) {
                free(s);
                return vb_error_set(err, "recipe", 1, "%s: '%s': '{' without '}'", r->path, tmpl);
            }
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(end - p - 1), p + 1);
            val = vb_kv_get(vars, n, name, NULL);
            if (!val) {
                free(s);
                return vb_error_set(err, "recipe", 1,
                                    "%s: '%s': unknown name {%s} (known: data, datadir, password, cpus, memory_bytes, "
                                    "host, listen, port, and the settings; a replica's primary, primary_password, "
                                    "primary_host, primary_port)", r->path, tmpl, name);
            }
            skip = (size_t)(end - p) + 1;
        }
        size_t add = val ? strlen(val) : 1;
        if (len + add + 1 > cap) s = realloc(s, cap = (len + add + 1) * 2);
        memcpy(s + len, val ? val : p, add);
        len += add;
        p += skip;
    }
    s[len] = '\0';
    *out = s;
    return VB_OK;
}

char **vb_recipe_expand_argv(const vb_recipe *r, char *const *tmpl, const vb_kv *vars, size_t n, vb_error *err) {
    size_t count = 0;
    while (tmpl[count]) count++;
    char **out = calloc(count + 1, sizeof *out);
    for (size_t i = 0; out && i < count; i++) {
        if (vb_recipe_expand(r, tmpl[i], vars, n, &out[i], err)) {
            vb_recipe_argv_free(out);
            return NULL;
        }
    }
    if (!out) vb_error_set(err, "recipe", 1, "out of memory");
    return out;
}

int vb_recipe_template_key(const vb_recipe *r, const char *image_id, const vb_kv *vars, size_t n, char key[17],
                           vb_error *err) {
    static const char *const own[] = {"data", "datadir", "password", "primary", "primary_password", NULL};
    vb_kv *v = calloc(n ? n : 1, sizeof *v);
    char (*names)[40] = calloc(n ? n : 1, sizeof *names);
    for (size_t i = 0; i < n; i++) {
        v[i] = vars[i];
        if (in_list(own, vars[i].key)) {
            snprintf(names[i], sizeof names[i], "{%s}", vars[i].key);
            v[i].value = names[i];
        }
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int rc = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 ? VB_OK
             : vb_error_set(err, "recipe", 1, "%s: no sha256 in libcrypto for the template key", r->path);
    /* each field NUL-terminated, so that no two lists of fields hash alike */
#define ADD(s) (rc == VB_OK && EVP_DigestUpdate(ctx, (s) ? (s) : "", strlen((s) ? (s) : "") + 1) != 1 ? \
                (rc = vb_error_set(err, "recipe", 1, "%s: sha256 failed", r->path)) : rc)
    ADD("vbench data template 1");
    ADD(r->name);
    for (size_t i = 0; i < r->n_params; i++) ADD(r->params[i].key), ADD(r->params[i].value);
    ADD(image_id), ADD(r->user), ADD(r->data_mount), ADD(r->password_file), ADD(r->init_creates);
    for (size_t i = 0; rc == VB_OK && i < r->n_init; i++) {
        char **argv = vb_recipe_expand_argv(r, r->init[i], v, n, err);
        if (!argv) rc = VB_ERROR;
        for (size_t j = 0; argv && argv[j]; j++) ADD(argv[j]);
        ADD("\n");
        vb_recipe_argv_free(argv);
    }
#undef ADD
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (rc == VB_OK && (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen < 8))
        rc = vb_error_set(err, "recipe", 1, "%s: sha256 failed", r->path);
    for (unsigned i = 0; rc == VB_OK && i < 8; i++) snprintf(key + 2 * i, 3, "%02x", md[i]);
    EVP_MD_CTX_free(ctx);
    free(v);
    free(names);
    return rc;
}

const char *vb_recipe_default_dir(char *buf, size_t len) {
    const char *env = getenv("VBENCH_RECIPES");
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return buf;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(buf, len, "%s/../deploy/engines", exe);
            struct stat st;
            if (stat(buf, &st) == 0 && S_ISDIR(st.st_mode)) return buf;
        }
    }
    snprintf(buf, len, "/etc/vbench/engines");
    return buf;
}
