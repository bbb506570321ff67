/* The preflight (coordinator/preflight.h). Needs are gathered per path, summed per file system (st_dev), and
 * compared with statvfs's space available to this user; the other checks are one line each. */
#include "coordinator/preflight.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "config/budget.h"
#include "coordinator/campaign.h"
#include "coordinator/calibrate.h"
#include "coordinator/estimate.h"
#include "coordinator/server_pass.h"
#include "datasets/dataset.h"
#include "datasets/shape.h"
#include "engines/engine.h"
#include "orchestrator/image.h"
#include "orchestrator/recipe.h"
#include "util/cpulist.h"

#define MAX_NEEDS 64
#define MAX_CPUS 4096

typedef struct need {
    char path[PATH_MAX];   /* the existing directory it lands in (the nearest existing ancestor) */
    dev_t dev;
    double bytes;
    char what[400];
} need;

typedef struct pf {
    const vb_preflight_opts *o;
    need needs[MAX_NEEDS];
    int n_needs;
    char failures[4096];
    size_t n_fail;
} pf;

static void line(pf *p, const char *status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void line(pf *p, const char *status, const char *fmt, ...) {
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (p->o->print && (!p->o->problems_only || strcmp(status, "warn") == 0))   /* FAIL: in the error */
        fprintf(p->o->print, "preflight: %-4s %s\n", status, msg);
    if (strcmp(status, "FAIL") == 0)
        p->n_fail += (size_t)snprintf(p->failures + p->n_fail, p->n_fail < sizeof p->failures ? sizeof p->failures - p->n_fail : 0,
                                      "%s%s", p->n_fail ? "\n" : "", msg);
    if (p->n_fail >= sizeof p->failures) p->n_fail = sizeof p->failures - 1;
}

static const char *sz(double bytes, char *buf, size_t len) {
    return vb_size_format(bytes > 0 ? (uint64_t)bytes : 0, buf, len);
}

/* The nearest existing ancestor of path (path itself when it exists). */
static void existing_dir(const char *path, char *out, size_t len) {
    snprintf(out, len, "%s", path && *path ? path : ".");
    struct stat st;
    while (stat(out, &st) != 0) {
        char *slash = strrchr(out, '/');
        if (!slash) {
            snprintf(out, len, ".");
            return;
        }
        if (slash == out) {
            out[1] = '\0';
            return;
        }
        *slash = '\0';
    }
}

static void add_need(pf *p, const char *path, double bytes, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void add_need(pf *p, const char *path, double bytes, const char *fmt, ...) {
    if (bytes <= 0 || p->n_needs >= MAX_NEEDS) return;
    need *n = &p->needs[p->n_needs++];
    existing_dir(path, n->path, sizeof n->path);
    struct stat st;
    n->dev = stat(n->path, &st) == 0 ? st.st_dev : 0;
    n->bytes = bytes;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->what, sizeof n->what, fmt, ap);
    va_end(ap);
}

static void check_disks(pf *p) {
    int seen[MAX_NEEDS] = {0};
    for (int i = 0; i < p->n_needs; i++) {
        if (seen[i]) continue;
        double total = 0;
        char parts[2048] = "", b[32];
        size_t np = 0;
        for (int j = i; j < p->n_needs; j++) {
            if (seen[j] || p->needs[j].dev != p->needs[i].dev) continue;
            seen[j] = 1;
            total += p->needs[j].bytes;
            if (np < sizeof parts)
                np += (size_t)snprintf(parts + np, sizeof parts - np, "%s%s %s", np ? ", " : "", p->needs[j].what,
                                       sz(p->needs[j].bytes, b, sizeof b));
        }
        struct statvfs vfs;
        if (statvfs(p->needs[i].path, &vfs) != 0) {
            line(p, "warn", "disk %s: cannot read its free space (%s); needed %s: %s", p->needs[i].path,
                 strerror(errno), sz(total, b, sizeof b), parts);
            continue;
        }
        double avail = (double)vfs.f_bavail * (double)vfs.f_frsize;
        char a[32], c[32];
        if (total > avail)
            line(p, "FAIL", "disk %s: %s free, the campaign needs %s there (%s): free %s more on that file system, or "
                 "put what does not fit elsewhere (--out DIR/FILE.sqlite moves the results and the servers' data "
                 "directories FILE.sqlite.d; --cache-dir DIR or $VBENCH_CACHE moves the dataset cache)",
                 p->needs[i].path, sz(avail, a, sizeof a), sz(total, b, sizeof b), parts, sz(total - avail, c, sizeof c));
        else
            line(p, "ok", "disk %s: %s free, needs %s (%s)", p->needs[i].path, sz(avail, a, sizeof a),
                 sz(total, b, sizeof b), parts);
    }
}

/* The servers' data directory (and the local agents' other files): this process must be able to write it, or
 * to make it in its nearest existing parent. Said on a resume even when quiet, with its free space: a resume
 * without --data-dir goes by what the campaign recorded, and the operator sees which directory that is. */
static void check_data_dir(pf *p, const char *dir, const char *whose) {
    char at[PATH_MAX], b[32];
    existing_dir(dir, at, sizeof at);
    struct stat st;
    struct statvfs vfs;
    const char *made = strcmp(at, dir) == 0 ? "" : " (not made yet: checked at its parent ";
    int e = stat(at, &st) != 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : access(at, W_OK | X_OK) != 0 ? errno : 0;
    if (e) {
        line(p, "FAIL", "the servers' data directory %s (%s)%s%s%s: this process cannot write it (%s): make it "
             "writable, or %s", dir, whose, made, *made ? at : "", *made ? ")" : "", strerror(e),
             p->o->resume ? "move the servers' data to a directory it can write and give that to the resume as "
                            "--data-dir DIR"
                          : "give another with --data-dir DIR");
        return;
    }
    double avail = statvfs(at, &vfs) == 0 ? (double)vfs.f_bavail * (double)vfs.f_frsize : -1;
    char msg[2 * PATH_MAX + 600];
    snprintf(msg, sizeof msg, "the servers' data directory %s (%s)%s%s%s: writable, %s free", dir, whose, made,
             *made ? at : "", *made ? ")" : "", avail >= 0 ? sz(avail, b, sizeof b) : "unknown space");
    if (p->o->resume && p->o->problems_only && p->o->print) fprintf(p->o->print, "preflight: ok   %s\n", msg);
    else line(p, "ok", "%s", msg);
}

/* The CPUs that are online (/sys/devices/system/cpu/online), else the ones this process may use. */
static int online_cpus(int *cpus, int cap) {
    FILE *f = fopen("/sys/devices/system/cpu/online", "r");
    char buf[4096] = "";
    if (f) {
        if (!fgets(buf, sizeof buf, f)) buf[0] = '\0';
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = '\0';
    vb_error err;
    int n = buf[0] ? vb_cpulist_parse(buf, cpus, cap, &err) : -1;
    return n > 0 ? n : vb_cpulist_allowed(cpus, cap);
}

static void check_cpulist(pf *p, const char *what, const char *list, const int *online, int n_online) {
    static int cpus[MAX_CPUS];
    vb_error err;
    char on[512];
    vb_cpulist_format(online, n_online, on, sizeof on);
    int n = vb_cpulist_parse(list, cpus, MAX_CPUS, &err);
    if (n < 0) {
        line(p, "FAIL", "%s \"%s\": %s", what, list, err.message);
        return;
    }
    char missing[512] = "";
    size_t m = 0;
    for (int i = 0; i < n; i++) {
        int found = 0;
        for (int j = 0; j < n_online && !found; j++) found = online[j] == cpus[i];
        if (!found && m < sizeof missing) m += (size_t)snprintf(missing + m, sizeof missing - m, "%s%d", m ? "," : "", cpus[i]);
    }
    if (m)
        line(p, "FAIL", "%s \"%s\" names CPUs this host does not have online (%s); online: %s: give a list within "
             "them", what, list, missing, on);
    else
        line(p, "ok", "%s %s (online: %s)", what, list, on);
}

static uint64_t meminfo(const char *key) {
    FILE *f = fopen("/proc/meminfo", "r");
    char l[256];
    uint64_t v = 0;
    size_t kl = strlen(key);
    while (f && fgets(l, sizeof l, f))
        if (strncmp(l, key, kl) == 0 && l[kl] == ':') v = strtoull(l + kl + 1, NULL, 10) * 1024;
    if (f) fclose(f);
    return v;
}

int vb_preflight_run(const vb_preflight_opts *o, vb_error *err) {
    pf *p = calloc(1, sizeof *p);
    if (!p) return vb_error_set(err, "preflight", 1, "out of memory");
    p->o = o;
    const vb_profile *prof = o->profile;
    char cache[PATH_MAX], b1[32], b2[32], b3[32];
    vb_dataset_cache_dir_name(o->cache_dir, cache, sizeof cache);
    vb_dataset_shape *shapes = calloc(prof->n_datasets + 1, sizeof *shapes);
    double max_churn = 0;
    const vb_profile_phase *churn = vb_profile_phase_find(prof, "churn");
    if (churn) max_churn = atof(vb_kv_get(churn->params, churn->n_params, "fraction", "0.1"));

    /* datasets: what the cache must hold */
    for (size_t d = 0; shapes && d < prof->n_datasets; d++) {
        vb_error derr;
        vb_dataset_shape *sh = &shapes[d];
        if (vb_dataset_shape_of(prof->datasets[d].params, prof->datasets[d].n_params, cache, sh, &derr)) {
            /* not refused here: the campaign's other datasets still run, and this one's items fail with the
             * dataset's own error (which array, which shape) */
            line(p, "warn", "dataset %s: %s (its items will fail; the disk needs of it are not counted)",
                 prof->datasets[d].name, derr.message);
            continue;
        }
        line(p, "ok", "dataset %s: %llu x %llu, %llu queries (from the %s)", prof->datasets[d].name,
             (unsigned long long)sh->rows, (unsigned long long)sh->dim, (unsigned long long)sh->queries, sh->from);
        add_need(p, cache, (double)sh->fetch_bytes, "dataset %s to fetch", prof->datasets[d].name);
        add_need(p, cache, (double)sh->cache_bytes, "dataset %s float32 copy", prof->datasets[d].name);
        /* the exact ground truth: ids and distances of k neighbours per query (and per filtered point) */
        add_need(p, cache, (double)sh->queries * prof->k * 8 * 3, "ground truth of %s", prof->datasets[d].name);
    }

    /* the servers' data directories, beside the results (campaign.c: OUT.d, orchestrator/orchestrate.c: servers/ENGINE)
     * or where --data-dir put them; a resume without --data-dir finds them where the run put them */
    char work[PATH_MAX + 8];
    const char *whose = "--data-dir";
    if (o->data_dir) snprintf(work, sizeof work, "%s", o->data_dir);
    else if (o->stored_data_dir && *o->stored_data_dir) {
        snprintf(work, sizeof work, "%s", o->stored_data_dir);
        whose = "the campaign's, from the --data-dir of its run (manifest campaign.data_dir)";
    } else {
        snprintf(work, sizeof work, "%s.d", o->out);
        whose = "the default, FILE.d beside the results";
    }
    if (!o->remote_agents) check_data_dir(p, work, whose);
    int any_server = 0;
    for (size_t e = 0; e < prof->n_engines; e++) {
        const char *recipe = vb_profile_engine_recipe(&prof->engines[e]);
        if (!recipe) continue;
        any_server = 1;
        if (o->remote_agents) continue;
        char dir[PATH_MAX + 300];
        snprintf(dir, sizeof dir, "%s/servers/%s", work, prof->engines[e].name);
        struct stat st;
        if (o->resume && stat(dir, &st) == 0) {
            line(p, "ok", "server data %s exists already (resume): not counted again", dir);
            continue;
        }
        for (size_t d = 0; shapes && d < prof->n_datasets; d++) {
            char basis[200];
            double per_row = vb_estimate_bytes_per_row(prof->engines[e].name, prof->engines[e].adapter, (double)shapes[d].dim, o->cache_dir,
                                                       basis, sizeof basis);
            double bytes = (double)shapes[d].rows * per_row * (1 + max_churn) + VB_ESTIMATE_SERVER_FIXED_BYTES;
            add_need(p, dir, bytes, "server data of %s for %s (%llu rows x %.0f B/row x %.2f for churn + %s of the "
                     "server's own files; %s)", prof->engines[e].name, prof->datasets[d].name,
                     (unsigned long long)shapes[d].rows, per_row, 1 + max_churn,
                     sz(VB_ESTIMATE_SERVER_FIXED_BYTES, b1, sizeof b1), basis);
        }
    }

    /* the results: a few KiB per item, the server samples (4 a second while a server runs), the .bak copy */
    double results = 1e6 + (double)o->plan->n_items * 64e3 + (any_server ? o->estimate_s * 4 * 120 : 0);
    add_need(p, o->out, results * 2, "results database %s and its .bak", o->out);
    check_disks(p);

    /* memory */
    uint64_t total = meminfo("MemTotal"), avail = meminfo("MemAvailable");
    int online[MAX_CPUS];
    int n_online = online_cpus(online, MAX_CPUS);
    vb_budget bud;
    vb_error berr;
    if (any_server && !o->remote_agents) {
        if (vb_budget_resolve(prof, n_online, total, &bud, &berr) != VB_OK) {
            line(p, "FAIL", "budget: %s", berr.message);
        } else {
            double want = (double)bud.server_memory + (double)bud.client_memory;
            if (want > (double)total)
                line(p, "FAIL", "memory: the budget gives the server %s and the client %s, %s in all, but this host "
                     "has %s: lower resources.server_memory / client_memory in the profile",
                     sz((double)bud.server_memory, b1, sizeof b1), sz((double)bud.client_memory, b2, sizeof b2),
                     sz(want, b3, sizeof b3), sz((double)total, cache, sizeof cache));
            else
                line(p, "ok", "memory: budget server %s + client %s of %s", sz((double)bud.server_memory, b1, sizeof b1),
                     sz((double)bud.client_memory, b2, sizeof b2), sz((double)total, b3, sizeof b3));
            check_cpulist(p, "budget server_cpus", bud.server_cpus, online, n_online);
            check_cpulist(p, "budget client_cpus", bud.client_cpus, online, n_online);
        }
    }
    /* What an embedded engine keeps in the client's own memory (its client_bytes op: hnswlib's graph with a copy of
     * each vector, exact's private copy of the rows) must fit the host; the memory-mapped corpus need not (page
     * cache: read through once, reclaimed under pressure; a 10M x 96 campaign ran in a 1 GiB cgroup), so it counts
     * only toward the warning that the host cannot keep it all cached. */
    for (size_t e = 0; shapes && e < prof->n_engines; e++) {
        if (vb_profile_engine_recipe(&prof->engines[e])) continue;
        const char *adapter = prof->engines[e].adapter ? prof->engines[e].adapter : prof->engines[e].name;
        const vb_engine_ops *ops = vb_engine_find(adapter);
        if (!ops || !ops->client_bytes) continue;
        for (size_t d = 0; d < prof->n_datasets; d++) {
            double corpus = (double)shapes[d].rows * (double)shapes[d].dim * 4;
            double own = ops->client_bytes(prof->engines[e].params, prof->engines[e].n_params, (double)shapes[d].rows,
                                           (double)shapes[d].dim);
            const char *what = ops->client_keeps ? ops->client_keeps : "what it keeps of the rows";
            if (own > (double)total && total)
                line(p, "FAIL", "memory: %s on %s keeps about %s (%s) in the client's own memory, more than this "
                     "host's %s: run it on a smaller dataset or a larger host", prof->engines[e].name,
                     prof->datasets[d].name, sz(own, b1, sizeof b1), what, sz((double)total, b3, sizeof b3));
            else if (own + corpus > (double)avail && avail)
                line(p, "warn", "memory: %s on %s keeps about %s in the client (%s) beside the %s corpus; %s is "
                     "available now, so not all of the corpus can stay in the page cache", prof->engines[e].name,
                     prof->datasets[d].name, sz(own, b1, sizeof b1), what, sz(corpus, b2, sizeof b2),
                     sz((double)avail, b3, sizeof b3));
        }
    }
    if (o->agent_cpus) check_cpulist(p, "--cpus", o->agent_cpus, online, n_online);

    /* servers: recipes and images */
    if (any_server && !o->remote_agents) {
        char rdir[PATH_MAX];
        const char *recipes = o->recipes_dir ? o->recipes_dir : vb_recipe_default_dir(rdir, sizeof rdir);
        const char *env = getenv("VBENCH_IMAGES");
        const char *images = o->images_dir ? o->images_dir : env && *env ? env : "/var/cache/vbench/images";
        for (size_t e = 0; e < prof->n_engines; e++) {
            const char *recipe = vb_profile_engine_recipe(&prof->engines[e]);
            if (!recipe) continue;
            vb_recipe *r = NULL;
            vb_error rerr;
            const char *bad = o->engines_strict ? "FAIL" : "warn";
            if (vb_recipe_load(recipes, recipe, &r, &rerr) != VB_OK) {
                line(p, bad, "engine %s: recipe \"%s\": %s (its items will fail)", prof->engines[e].name, recipe,
                     rerr.message);
                continue;
            }
            char img[PATH_MAX];
            if (r->image && vb_image_find(images, r->image, img, sizeof img, &rerr) != VB_OK)
                line(p, bad, "engine %s: %s (its items will fail)", prof->engines[e].name, rerr.message);
            else
                line(p, "ok", "engine %s: recipe %s, image %s", prof->engines[e].name, r->path,
                     r->image ? img : "(none: host binaries)");
            vb_recipe_destroy(&r);
        }
    }
    free(shapes);
    int rc = VB_OK;
    if (p->n_fail) rc = vb_error_set(err, "preflight", 1, "preflight refused the campaign:\n%s", p->failures);
    free(p);
    return rc;
}

int vb_preflight_campaign(const vb_campaign_opts *o, const vb_profile *p, const vb_plan *plan,
                          const char *stored_data_dir, vb_error *err) {
    vb_estimate est;
    vb_error eerr;
    double est_s = vb_estimate_plan(p, plan, NULL, o->cache_dir, &est, &eerr) == VB_OK ? est.total_s : 0;
    if (est_s > 0) vb_estimate_free(&est);
    vb_preflight_opts po = {.profile = p, .plan = plan, .out = o->out, .data_dir = o->data_dir,
                            .stored_data_dir = stored_data_dir, .cache_dir = o->cache_dir,
                            .agent_cpus = o->agent_cpus, .recipes_dir = o->recipes_dir, .images_dir = o->images_dir,
                            .remote_agents = o->no_local_agents, .resume = o->resume, .estimate_s = est_s,
                            .print = o->quiet ? NULL : stderr, .problems_only = 1};
    return vb_preflight_run(&po, err);
}

int vb_preflight_check_command(const vb_campaign_opts *o) {
    vb_profile *p = NULL;
    vb_plan *plan = NULL;
    vb_error err;
    vb_error_clear(&err);
    if (vb_profile_load(o->profile, &p, &err) || vb_profile_select_engines(p, o->engines, &err) ||
        vb_profile_check_engines(p, &err) || (vb_server_pass_apply(p), vb_plan_build(p, &plan, &err))) {
        fprintf(stderr, "vbench: %s\n", err.message);
        vb_profile_destroy(&p);
        return 2;
    }
    printf("campaign %s: %zu items, results would go to %s\n", p->name, plan->n_items, o->out);
    vb_estimate est;
    double est_s = 0;
    if (vb_estimate_plan(p, plan, NULL, o->cache_dir, &est, &err) == VB_OK) {
        for (size_t e = 0; e < p->n_engines; e++) printf("  %s: %s\n", p->engines[e].name, est.basis[e] ? est.basis[e] : "");
        for (size_t d = 0; d < est.n_prep; d++) printf("  prepare %s\n", est.prep[d]);
        printf("estimate: %s\n", est.line);
        est_s = est.total_s;
        char entries[1024];
        size_t n = vb_calibrate_needed(p, plan, o->cache_dir, entries, sizeof entries);
        int probe = n > 0 && o->probe_mode != VB_PROBE_NEVER &&
                    (o->probe_mode == VB_PROBE_ALWAYS || est_s > VB_CALIBRATE_AUTO_S);
        if (probe)
            printf("calibration: nothing measured on this host for %s; `run` probes %s first (%d rows each, "
                   "seconds to a few minutes) and estimates again from what it measures (--no-probe skips it)\n",
                   entries, n > 1 ? "them" : "it", VB_CALIBRATE_ROWS);
        else if (n > 0)
            printf("calibration: nothing measured on this host for %s (default rates above); a run this short is not "
                   "probed first (`run --probe` probes it)\n", entries);
        vb_estimate_free(&est);
    } else {
        printf("estimate: none (%s)\n", err.message);
    }
    vb_preflight_opts po = {.profile = p, .plan = plan, .out = o->out, .data_dir = o->data_dir, .cache_dir = o->cache_dir,
                            .agent_cpus = o->agent_cpus, .recipes_dir = o->recipes_dir, .images_dir = o->images_dir,
                            .remote_agents = o->no_local_agents, .estimate_s = est_s, .print = stdout,
                            .engines_strict = 1};
    int rc = vb_preflight_run(&po, &err);
    if (rc) fprintf(stderr, "vbench: %s\n", err.message);
    else printf("preflight: every check passed\n");
    vb_plan_destroy(&plan);
    vb_profile_destroy(&p);
    return rc ? 1 : 0;
}
