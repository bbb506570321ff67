/* The calibration probe (coordinator/calibrate.h). */
#include "coordinator/calibrate.h"

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/yaml_tree.h"
#include "coordinator/estimate.h"
#include "coordinator/history.h"
#include "datasets/dataset.h"
#include "datasets/shape.h"
#include "util/clock.h"

extern char **environ;

/* A growing text buffer. */
typedef struct text {
    char *s;
    size_t n, cap;
    int oom;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...) {
    if (t->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (w < 0) { t->oom = 1; return; }
        if (t->s && t->n + (size_t)w < t->cap) { t->n += (size_t)w; return; }
        size_t cap = (t->cap ? t->cap * 2 : 4096) + (size_t)w;
        char *s = realloc(t->s, cap);
        if (!s) { t->oom = 1; return; }
        t->s = s, t->cap = cap;
    }
}

/* A scalar as YAML flow text: plain when it was written plain and holds nothing flow syntax reads, else a
 * double-quoted string (JSON's escapes are YAML's). */
static void put_scalar(text *t, const vb_yaml_node *n) {
    const char *s = n->text ? n->text : "";
    if (!n->quoted && *s && !strpbrk(s, ",[]{}:#\"'&*!|>%@`\\\n") && s[0] != '-' && s[0] != '?' && s[0] != ' ') {
        put(t, "%s", s);
        return;
    }
    put(t, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') put(t, "\\%c", *s);
        else if (*s == '\n') put(t, "\\n");
        else if ((unsigned char)*s < 0x20) put(t, "\\u%04x", (unsigned char)*s);
        else put(t, "%c", *s);
    }
    put(t, "\"");
}

/* Any node in flow style: {k: v, ...}, [a, b], scalar; an empty value as null. */
static void put_node(text *t, const vb_yaml_node *n) {
    if (!n || (n->type == VB_YAML_SCALAR && vb_yaml_is_null(n))) {
        put(t, "null");
        return;
    }
    if (n->type == VB_YAML_SCALAR) {
        put_scalar(t, n);
        return;
    }
    put(t, n->type == VB_YAML_MAP ? "{" : "[");
    for (size_t i = 0; i < n->n; i++) {
        if (i) put(t, ", ");
        if (n->type == VB_YAML_MAP) {
            vb_yaml_node k = {.type = VB_YAML_SCALAR, .text = n->keys[i]};
            put_scalar(t, &k);
            put(t, ": ");
        }
        put_node(t, n->items[i]);
    }
    put(t, n->type == VB_YAML_MAP ? "}" : "]");
}

/* Whether `name` is one of the comma-separated names in csv. */
static int in_csv(const char *csv, const char *name) {
    size_t len = strlen(name);
    for (const char *c = csv; c && *c;) {
        const char *e = strchr(c, ',');
        size_t l = e ? (size_t)(e - c) : strlen(c);
        if (l == len && strncmp(c, name, len) == 0) return 1;
        c = e ? e + 1 : NULL;
    }
    return 0;
}

/* The campaign's datasets' distinct (dimension, metric) pairs; n of them in dims/metrics (cap 8). */
static size_t probe_shapes(const vb_profile *p, const char *cache_dir, long *dims, vb_metric *metrics, size_t cap) {
    size_t n = 0;
    for (size_t d = 0; d < p->n_datasets; d++) {
        vb_dataset_shape sh;
        vb_metric m;
        vb_error err;
        if (vb_dataset_shape_of(p->datasets[d].params, p->datasets[d].n_params, cache_dir, &sh, &err) || sh.dim == 0 ||
            vb_dataset_metric_of(p->datasets[d].params, p->datasets[d].n_params, &m, &err) != VB_OK)
            continue;
        size_t j = 0;
        while (j < n && !(dims[j] == (long)sh.dim && metrics[j] == m)) j++;
        if (j == n && n < cap) dims[n] = (long)sh.dim, metrics[n] = m, n++;
    }
    return n;
}

size_t vb_calibrate_needed(const vb_profile *p, const vb_plan *plan, const char *cache_dir, char *buf, size_t len) {
    long dims[8];
    vb_metric metrics[8];
    size_t nd = probe_shapes(p, cache_dir, dims, metrics, 8), count = 0, used = 0;
    if (len) buf[0] = '\0';
    for (size_t e = 0; e < p->n_engines; e++) {
        int planned = 0;
        for (size_t i = 0; i < plan->n_items && !planned; i++) planned = plan->items[i].engine == e;
        if (!planned) continue;
        int missing = 0;
        for (size_t d = 0; d < nd && !missing; d++) {
            vb_history_rates h;
            vb_error err;
            /* a measurement at a dimension within a factor 2 scales well enough; farther, or none: probe */
            missing = vb_history_lookup(cache_dir, p->engines[e].name, dims[d], 0, &h, &err) != VB_OK || !h.found ||
                      h.dim * 2 < dims[d] || h.dim > dims[d] * 2;
        }
        if (!missing) continue;
        count++;
        if (!in_csv(buf, p->engines[e].entry) && used < len)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "," : "", p->engines[e].entry);
    }
    return count;
}

char *vb_calibrate_profile_text(const vb_profile *p, const char *entries, const char *cache_dir, vb_error *err) {
    vb_yaml_node *root = NULL;
    if (vb_yaml_parse(p->yaml, strlen(p->yaml), p->source, &root, err)) return NULL;
    if (!root || root->type != VB_YAML_MAP) {
        vb_yaml_free(root);
        vb_error_set(err, "calibrate", 1, "%s: the profile is not a map", p->source);
        return NULL;
    }
    long dims[8];
    vb_metric metrics[8];
    size_t nd = probe_shapes(p, cache_dir, dims, metrics, 8);
    text t = {0};
    put(&t, "# The calibration probe of %s (coordinator/calibrate.h): written by vbench run, not by hand.\n", p->source);
    put(&t, "name: probe-%s\n", p->name);
    /* top-level settings as the campaign has them (k, resources, limits, transport, ...) */
    for (size_t i = 0; i < root->n; i++) {
        const char *k = root->keys[i];
        if (!strcmp(k, "name") || !strcmp(k, "description") || !strcmp(k, "datasets") || !strcmp(k, "engines") ||
            !strcmp(k, "phases") || !strcmp(k, "notify"))
            continue;
        put(&t, "%s: ", k);
        put_node(&t, root->items[i]);
        put(&t, "\n");
    }
    put(&t, "datasets:\n");
    for (size_t d = 0; d < nd; d++)
        put(&t, "  - {name: probe-%ld-%s, source: synthetic, rows: %d, queries: 200, dim: %ld, clusters: 32, "
                "metric: %s, seed: 1}\n",
            dims[d], vb_metric_name(metrics[d]), VB_CALIBRATE_ROWS, dims[d], vb_metric_name(metrics[d]));
    put(&t, "engines:\n");
    const vb_yaml_node *engines = vb_yaml_map_get(root, "engines", NULL);
    for (size_t i = 0; engines && engines->type == VB_YAML_SEQ && i < engines->n; i++) {
        const vb_yaml_node *name = vb_yaml_map_get(engines->items[i], "name", NULL);
        if (!name || name->type != VB_YAML_SCALAR || !in_csv(entries, name->text)) continue;
        /* the entry as the campaign has it, but built once and with the probe's own phase points: it measures
         * rates, and build_repeats or the entry's own ef_search list would only multiply its work */
        const vb_yaml_node *en = engines->items[i];
        put(&t, "  - {");
        for (size_t j = 0, n = 0; en->type == VB_YAML_MAP && j < en->n; j++) {
            if (strcmp(en->keys[j], "build_repeats") == 0 || strcmp(en->keys[j], "phases") == 0) continue;
            vb_yaml_node k = {.type = VB_YAML_SCALAR, .text = en->keys[j]};
            put(&t, n++ ? ", " : "");
            put_scalar(&t, &k);
            put(&t, ": ");
            put_node(&t, en->items[j]);
        }
        put(&t, "}\n");
    }
    /* the phases whose rates the estimate reads, each at one small point */
    put(&t, "phases:\n  build: ");
    const vb_yaml_node *phases = vb_yaml_map_get(root, "phases", NULL);
    put_node(&t, phases ? vb_yaml_map_get(phases, "build", NULL) : NULL);
    put(&t, "\n");
    if (vb_profile_phase_find(p, "recall_sweep")) put(&t, "  recall_sweep: {ef_search: [100], queries: 200}\n");
    /* filtered at the campaign's own selectivities and predicate: its rate falls steeply with the selectivity on
     * some engines (coordinator/history.h vb_history_filtered) */
    const vb_yaml_node *fl = phases ? vb_yaml_map_get(phases, "filtered", NULL) : NULL;
    if (vb_profile_phase_find(p, "filtered")) {
        const vb_yaml_node *sel = fl ? vb_yaml_map_get(fl, "selectivity", NULL) : NULL;
        const vb_yaml_node *pred = fl ? vb_yaml_map_get(fl, "predicate", NULL) : NULL;
        put(&t, "  filtered: {selectivity: ");
        if (sel) put_node(&t, sel);
        else put(&t, "[0.1]");
        if (pred) put(&t, ", predicate: "), put_node(&t, pred);
        put(&t, ", queries: 100, ef_search: 100}\n");
    }
    if (vb_profile_phase_find(p, "churn")) put(&t, "  churn: {fraction: 0.1, queries: 100, ef_search: 100}\n");
    vb_yaml_free(root);
    if (t.oom) {
        free(t.s);
        vb_error_set(err, "calibrate", ENOMEM, "out of memory writing the probe's profile");
        return NULL;
    }
    return t.s;
}

/* Runs ARGV (this program) and waits; returns its exit code, or -1 with err set when it could not start. */
static int run_self(char *const *argv, vb_error *err) {
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], NULL, NULL, argv, environ);
    if (rc != 0) return vb_error_set(err, "calibrate", rc, "cannot start %s: %s", argv[0], strerror(rc)), -1;
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return vb_error_set(err, "calibrate", errno, "waiting for the probe: %s", strerror(errno)), -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int vb_calibrate_before_run(const vb_campaign_opts *o, const vb_profile *p, const vb_plan *plan, vb_probe_mode mode,
                            FILE *say, char *summary, size_t summary_len) {
    summary[0] = '\0';
    /* a FILE that exists is refused right after this (or resumed): no probe for it, and nothing of it touched */
    if (mode == VB_PROBE_NEVER || access(o->out, F_OK) == 0) return VB_OK;
    char entries[1024];
    size_t n = vb_calibrate_needed(p, plan, o->cache_dir, entries, sizeof entries);
    if (n == 0) return VB_OK;
    vb_estimate est;
    vb_error err;
    char a[32];
    if (mode == VB_PROBE_AUTO) {
        if (vb_estimate_plan(p, plan, NULL, o->cache_dir, &est, &err) != VB_OK) return VB_OK;
        double total = est.total_s;
        vb_estimate_free(&est);
        if (total <= VB_CALIBRATE_AUTO_S) return VB_OK;
        if (say) fprintf(say, "calibrating: the estimate from default rates is %s, and nothing is measured on this host "
                              "for %s: a probe of %d rows each first (--no-probe skips it)\n",
                         vb_duration_approx(total, a, sizeof a), entries, VB_CALIBRATE_ROWS);
    } else if (say) {
        fprintf(say, "calibrating: nothing measured on this host for %s: a probe of %d rows each first\n", entries,
                VB_CALIBRATE_ROWS);
    }
    char *yml = vb_calibrate_profile_text(p, entries, o->cache_dir, &err);
    char ypath[1200], out[1200], self[1024];
    snprintf(ypath, sizeof ypath, "%s.probe.yml", o->out);
    snprintf(out, sizeof out, "%s.probe.sqlite", o->out);
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    FILE *f = yml && sl > 0 ? fopen(ypath, "w") : NULL;
    if (!f || fputs(yml, f) < 0 || fclose(f) != 0) {
        snprintf(summary, summary_len, "not probed: %s", !yml ? err.message : sl <= 0 ? "cannot find this program" :
                 "cannot write the probe's profile");
        if (f) fclose(f);
        free(yml);
        if (say) fprintf(say, "calibrating: %s; the estimate uses default rates\n", summary);
        return VB_OK;
    }
    free(yml);
    self[sl] = '\0';
    /* the probe of an earlier attempt whose campaign never started (FILE does not exist): it stands for nothing */
    static const char *const suffix[] = {"", "-wal", "-shm", ".bak", ".lock"};
    for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
        char old[1300];
        snprintf(old, sizeof old, "%s%s", out, suffix[i]);
        unlink(old);
    }
    char *argv[32];
    int k = 0;
    argv[k++] = self, argv[k++] = "run", argv[k++] = "--profile", argv[k++] = ypath, argv[k++] = "--out", argv[k++] = out;
    argv[k++] = "--quiet", argv[k++] = "--no-probe", argv[k++] = "--engines", argv[k++] = entries;
    if (o->cache_dir) argv[k++] = "--cache-dir", argv[k++] = (char *)o->cache_dir;
    if (o->agent_cpus) argv[k++] = "--cpus", argv[k++] = (char *)o->agent_cpus;
    if (o->recipes_dir) argv[k++] = "--recipes", argv[k++] = (char *)o->recipes_dir;
    if (o->images_dir) argv[k++] = "--images", argv[k++] = (char *)o->images_dir;
    if (o->bus_address) argv[k++] = "--bus", argv[k++] = (char *)o->bus_address;
    argv[k] = NULL;
    uint64_t t0 = vb_now_ns();
    int rc = run_self(argv, &err);
    double took = (double)(vb_now_ns() - t0) / 1e9;
    if (rc == 0)
        snprintf(summary, summary_len, "probed %s in %.1f s (%d rows each: %s, results %s)", entries, took,
                 VB_CALIBRATE_ROWS, ypath, out);
    else
        snprintf(summary, summary_len, "the probe of %s did not finish (exit %d after %.1f s: %s; results %s): the "
                 "estimate takes what it measured, default rates for the rest", entries, rc, took,
                 rc < 0 ? err.message : "see that file's events", out);
    if (say) fprintf(say, "calibrating: %s\n", summary);
    return VB_OK;
}
