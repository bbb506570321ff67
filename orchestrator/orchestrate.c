/* The orchestrator role (see orchestrator/orchestrate.h). */
#include "orchestrator/orchestrate.h"

#include <dirent.h>
#include <pwd.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include <netdb.h>

#include "config/budget.h"
#include "engines/engine.h"
#include "orchestrator/image.h"
#include "orchestrator/isa.h"
#include "orchestrator/perf.h"
#include "orchestrator/recipe.h"
#include "orchestrator/sampler.h"
#include "orchestrator/template.h"
#include "orchestrator/units.h"
#include "proto/server_state.h"
#include "util/clock.h"
#include "util/cpulist.h"
#include "util/fs.h"

#define MAX_SERVERS 16
#define SAMPLE_BATCH 256
#define LOG_TAIL_LINES 40
#define KEY_HISTORY 32
#define PROBE_TIMEOUT_S 10   /* one readiness or liveness probe of a server: connect and a query */
#define MAX_NODES 16         /* servers of one engine's topology (ServerRequest.nodes), node 0 included */

/* A growing list of owned key/value strings: facts and connect parameters of a report. */
typedef struct kvlist {
    vb_kv *kv;
    size_t n, cap;
} kvlist;

static void kv_addf(kvlist *l, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void kv_addf(kvlist *l, const char *key, const char *fmt, ...) {
    if (l->n == l->cap) l->kv = realloc(l->kv, (l->cap = l->cap ? l->cap * 2 : 16) * sizeof *l->kv);
    char *v = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&v, fmt, ap) < 0) v = NULL;
    va_end(ap);
    l->kv[l->n++] = (vb_kv){strdup(key), v ? v : strdup("")};
}

static void kv_clear(kvlist *l) {
    vb_recipe_kv_free(l->kv, l->n);
    memset(l, 0, sizeof *l);
}

typedef struct server {
    struct vb_orch *o;
    char engine[64], recipe_name[64], campaign[64], unit[200], datadir[PATH_MAX];
    kvlist budget;
    kvlist connect;             /* the ready server's connect parameters: the liveness probe's (op_phase) */
    char phase_key[256];        /* the item the coordinator's "phase" request is for */
    pthread_mutex_t lock;       /* state, item keys */
    vb_server_state state;
    /* The items the coordinator announced, newest last, with the wall time each began: a sampled row belongs to
     * the latest item that began before it. A ring: a batch (one second) never spans KEY_HISTORY items. */
    char keys[KEY_HISTORY][256];
    double key_since[KEY_HISTORY];
    unsigned n_keys;
    vb_sampler *sampler;        /* created by the start operation, read by the main thread */
    size_t sent;                /* rows already streamed */
    vb_recipe *recipe;
    pthread_t op;
    int op_running;
    atomic_int op_done;
    char action[16], pending[16];
    atomic_int cold;            /* the next start is a cold one (SERVER_COLD_START); op_start takes it */
    char cgroup[512];           /* the unit's ControlGroup (op_start sets it, under lock) */
    char image_root[PATH_MAX];  /* the unit's root directory (its image), "" on the host: perf's symbol files */
    /* The perf recording of one item (ServerRequest.perf), the main thread's alone: perf_pid > 0 while it runs;
     * perf_note says why there is none (perf missing, refused). */
    pid_t perf_pid;
    char perf_item[256], perf_path[PATH_MAX + 128], perf_note[1100];
    int perf_said;              /* a refusal was reported (once per server) */
    /* Topology (ServerRequest.nodes, issue 39): node 0 is this server; nodes 1 .. n_nodes - 1 are servers of the
     * same recipe, each its own unit ("UNIT-nodeK") and data directory ("servers/ENGINE.nodeK"), started, probed,
     * sized and stopped by node 0's operations and reported under its engine name with their facts as node.K.*.
     * node_index and n_nodes pick the node's share of the budget (vb_budget_node_share). */
    int node_index, n_nodes;
    struct server *node[MAX_NODES];   /* [1 .. n_nodes - 1], allocated by the first start that needs them */
    int dead_node;                    /* check_died: the node found dead (0: node 0), for op_died */
    int n_replicas;                   /* nodes 1 .. n_replicas are read replicas of node 0 (ServerRequest.replicas) */
    struct server *primary;           /* a replica node: node 0, whose data its recipe's replica.run copies */
    /* Placement (ServerRequest.place, coordinator/placement.h): the nodes this orchestrator runs, ascending (every
     * node when the request names none). held[0] is this server's own node_index and leads the reports: a lead
     * K > 0 says its facts, connect parameters and sizes as node.K.* too, and streams no samples (the series is
     * node 0's). placed: the nodes listen on TCP at this host's address ({listen}, {host}), node K on port + K.
     * share_index / share_count: the node's share of this host's budget (its place among the held nodes). */
    int held[MAX_NODES], n_held, placed, share_index, share_count;
    char base_unit[200];              /* the server's unit name; node K's is BASE-nodeK */
    kvlist remote_primary;            /* a replica whose node 0 runs on another host: node 0's connect parameters */
} server;

struct vb_orch {
    vb_orch_opts o;
    char recipes_dir[PATH_MAX], images_dir[PATH_MAX], work_dir[PATH_MAX], bus[512], inbox_ep[128], agent_id[128];
    char address[64];           /* where other hosts reach this one: placed servers listen there (vb_orch_new) */
    server srv[MAX_SERVERS];
    size_t n_srv;
    vb_units *watch;            /* the main thread's own bus connection, to watch that ready units stay active */
    uint64_t last_tick_ns;
};

/* ---- reports ------------------------------------------------------------------------------------------------ */

/* kind picks the report's body (proto/vbench.proto ServerReport); each body takes the arguments it has fields
 * for: ready (message, connect, facts), failed / died / stopped (message, log_tail, facts), samples (item_key,
 * rows), sizes (item_key, facts). */
static void send_report(zsock_t *sock, const server *s, Vbench__ServerReport__BodyCase kind, const char *message,
                        const char *log_tail, const kvlist *connect, const kvlist *facts, const char *item_key,
                        const vb_sample *rows, size_t nrows, double wall0) {
    Vbench__ServerReport r = VBENCH__SERVER_REPORT__INIT;
    Vbench__ServerReady ready = VBENCH__SERVER_READY__INIT;
    Vbench__ServerEnd end = VBENCH__SERVER_END__INIT;
    Vbench__ServerSamples samp = VBENCH__SERVER_SAMPLES__INIT;
    Vbench__ServerSizes sizes = VBENCH__SERVER_SIZES__INIT;
    r.engine = (char *)s->engine;
    r.unit = (char *)s->unit;
    r.body_case = kind;
    Vbench__KV **ckv = connect ? vb_wire_kv_make(connect->kv, connect->n) : NULL;
    Vbench__KV **fkv = facts ? vb_wire_kv_make(facts->kv, facts->n) : NULL;
    size_t nc = connect ? connect->n : 0, nf = facts ? facts->n : 0;
    if (kind == VBENCH__SERVER_REPORT__BODY_READY) {
        ready.message = (char *)(message ? message : "");
        ready.n_connect = nc, ready.connect = ckv;
        ready.n_facts = nf, ready.facts = fkv;
        r.ready = &ready;
    } else if (kind == VBENCH__SERVER_REPORT__BODY_SAMPLES) {
        samp.item_key = (char *)(item_key ? item_key : "");
        r.samples = &samp;
    } else if (kind == VBENCH__SERVER_REPORT__BODY_SIZES) {
        sizes.item_key = (char *)(item_key ? item_key : "");
        sizes.n_facts = nf, sizes.facts = fkv;
        r.sizes = &sizes;
    } else {   /* failed, died, stopped: the oneof's members share one pointer */
        end.message = (char *)(message ? message : "");
        end.log_tail = (char *)(log_tail ? log_tail : "");
        end.n_facts = nf, end.facts = fkv;
        r.failed = &end;
    }
    Vbench__ServerSample *samples = nrows ? calloc(nrows, sizeof *samples) : NULL;
    Vbench__ServerSample **ptrs = nrows ? calloc(nrows, sizeof *ptrs) : NULL;
    for (size_t i = 0; i < nrows; i++) {
        vbench__server_sample__init(&samples[i]);
        samples[i].wall = wall0 + rows[i].t_s;
        samples[i].cgroup_bytes = rows[i].cgroup_bytes;
        samples[i].rss_bytes = rows[i].rss_bytes;
        samples[i].cpu_usec = rows[i].cpu_usec;
        samples[i].pss_bytes = rows[i].pss_bytes;
        ptrs[i] = &samples[i];
    }
    samp.n_samples = nrows;
    samp.samples = ptrs;
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_SERVER_REPORT;
    env.server_report = &r;
    vb_wire_send(sock, NULL, &env, NULL);
    vb_wire_kv_free(ckv, nc);
    vb_wire_kv_free(fkv, nf);
    free(samples);
    free(ptrs);
}

static void set_state(server *s, vb_server_state st) {
    pthread_mutex_lock(&s->lock);
    s->state = st;
    pthread_mutex_unlock(&s->lock);
}

static vb_server_state get_state(server *s) {
    pthread_mutex_lock(&s->lock);
    vb_server_state st = s->state;
    pthread_mutex_unlock(&s->lock);
    return st;
}

/* ---- helpers of the start operation --------------------------------------------------------------------------- */

/* The newest finished build of image NAME in the cache (NAME-<recipe hash>, see deploy/image-build). */
static int find_image(const vb_orch *o, const char *name, char *out, size_t len, vb_error *err) {
    return vb_image_find(o->images_dir, name, out, len, err);
}

/* The server's password: generated once per data directory and kept beside it (root only), so a restarted or
 * resumed campaign reconnects; also written where the recipe's init reads it, owned by the server's user. */
static int server_password(server *s, uid_t uid, gid_t gid, char *pw, size_t len, vb_error *err) {
    char keep[PATH_MAX + 32];
    /* a replica is a copy of its primary, roles and passwords included: on this host its file, from another host
     * the password node 0's connect parameters carry */
    snprintf(keep, sizeof keep, "%s.password", s->primary ? s->primary->datadir : s->datadir);
    const char *given = s->primary ? NULL : vb_kv_get(s->remote_primary.kv, s->remote_primary.n, "password", NULL);
    if (given && given[0]) {
        snprintf(pw, len, "%s", given);
        int fd = open(keep, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dprintf(fd, "%s\n", pw) < 0) {
            if (fd >= 0) close(fd);
            return vb_error_set(err, "orchestrator", errno, "cannot write %s: %s", keep, strerror(errno));
        }
        close(fd);
        goto write_copy;
    }
    FILE *f = fopen(keep, "r");
    if (f) {
        int ok = fgets(pw, (int)len, f) != NULL;
        fclose(f);
        pw[strcspn(pw, "\n")] = '\0';
        if (ok && pw[0]) goto write_copy;
    }
    static const char alphabet[] = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    unsigned char raw[24];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return vb_error_set(err, "orchestrator", errno, "getrandom: %s", strerror(errno));
    for (size_t i = 0; i < sizeof raw && i + 1 < len; i++) pw[i] = alphabet[raw[i] % (sizeof alphabet - 1)];
    pw[sizeof raw < len - 1 ? sizeof raw : len - 1] = '\0';
    int fd = open(keep, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dprintf(fd, "%s\n", pw) < 0)
        return vb_error_set(err, "orchestrator", errno, "cannot write %s: %s", keep, strerror(errno));
    close(fd);
write_copy:
    if (!s->recipe->password_file) return VB_OK;
    char copy[PATH_MAX + 64];
    snprintf(copy, sizeof copy, "%s/%s", s->datadir, s->recipe->password_file);
    fd = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dprintf(fd, "%s\n", pw) < 0 || fchown(fd, uid, gid) != 0) {
        if (fd >= 0) close(fd);
        return vb_error_set(err, "orchestrator", errno, "cannot write %s: %s", copy, strerror(errno));
    }
    close(fd);
    return VB_OK;
}

/* The loopback TCP port a primary with replicas listens on for them (recipe replica.primary_args and replica.run's
 * {replication_port}: MariaDB's replicas connect over TCP): a free port chosen once per primary data directory and
 * kept beside it, so a restarted primary keeps the port its replicas were told. */
static int replication_port(const server *primary, unsigned *port, vb_error *err) {
    char keep[PATH_MAX + 32];
    snprintf(keep, sizeof keep, "%s.port", primary->datadir);
    FILE *f = fopen(keep, "r");
    if (f) {
        int ok = fscanf(f, "%u", port) == 1 && *port > 0 && *port < 65536;
        fclose(f);
        if (ok) return VB_OK;
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        return vb_error_set(err, "orchestrator", e, "no free loopback TCP port for the replicas: %s", strerror(e));
    }
    close(fd);
    *port = ntohs(a.sin_port);
    if (!(f = fopen(keep, "w")) || fprintf(f, "%u\n", *port) < 0) {
        if (f) fclose(f);
        return vb_error_set(err, "orchestrator", errno, "cannot write %s: %s", keep, strerror(errno));
    }
    fclose(f);
    return VB_OK;
}

/* argv with extra's elements expanded and appended (extra NULL: argv as it is); NULL with err on failure (argv freed). */
static char **argv_append(const vb_recipe *r, char **argv, char **extra, const vb_kv *vars, size_t n_vars, vb_error *err) {
    if (!argv || !extra) return argv;
    char **more = vb_recipe_expand_argv(r, extra, vars, n_vars, err);
    size_t n = 0, m = 0;
    while (argv[n]) n++;
    while (more && more[m]) m++;
    char **all = more ? realloc(argv, (n + m + 1) * sizeof *all) : NULL;
    if (!all) {
        if (more) vb_error_set(err, "orchestrator", 1, "out of memory");
        vb_recipe_argv_free(argv);
        vb_recipe_argv_free(more);
        return NULL;
    }
    memcpy(all + n, more, (m + 1) * sizeof *all);
    free(more);
    return all;
}

static char *journal_tail(vb_units *u, const char *unit) {
    char *tail = NULL;
    vb_error err;
    if (!u || vb_unit_journal_tail(u, unit, LOG_TAIL_LINES, &tail, &err) != VB_OK) return strdup("");
    return tail;
}

/* Bytes on disk (allocated blocks) below a path. nftw's callback has no context pointer: the sum is per thread. */
static __thread uint64_t du_sum;
static int du_add(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)path, (void)flag, (void)ftw;
    du_sum += (uint64_t)st->st_blocks * 512u;
    return 0;
}

static void measure_sizes(server *s, kvlist *facts) {
    uint64_t total = 0;
    for (size_t i = 0; i < s->recipe->n_sizes; i++) {
        char path[PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", s->datadir, s->recipe->sizes[i]);
        du_sum = 0;
        if (nftw(path, du_add, 32, FTW_PHYS) != 0) continue;
        kv_addf(facts, s->recipe->sizes[i], "%llu", (unsigned long long)du_sum);
        total += du_sum;
    }
    kv_addf(facts, "total", "%llu", (unsigned long long)total);
}

/* An OOM kill named, from the cgroup's own counter (the sampler reads memory.events, or v1's eventfd on
 * memory.oom_control, while the cgroup still exists: before the unit is reset). systemd on a cgroup-v1 host says
 * only Result=signal, status 9; the counter tells the kernel's OOM killer from another SIGKILL. The count can trail
 * the unit's end by a sample, so it is waited for up to a second. Fills st->result with "oom-kill" and advice
 * with the sentence (empty when it was not one). */
static int name_oom(server *s, vb_units *u, vb_unit_state *st, int at_start, char *advice, size_t len) {
    advice[0] = '\0';
    uint64_t max = 0;
    vb_error e;
    if (!u || vb_unit_property_u64(u, s->unit, "MemoryMax", &max, &e) != VB_OK || max == UINT64_MAX) max = 0;
    /* The wait only where an OOM kill is possible: at start (no window to break: a server that allocates past its
     * limit while it starts grows from a sampled few MiB to the kill between two readings, and on a loaded host the
     * sampler's thread reads the OOM event late; 43 saw it reported as a plain SIGKILL at three lanes, with and
     * without a sample before the kill), or when the cgroup's peak came within a tenth of its limit. A SIGKILL of
     * a running server far below its limit (a kill by hand, a test) is reported at once, before the window it broke
     * can end and be taken for a measurement. */
    vb_sampler_summary sum = {0};
    if (s->sampler) vb_sampler_summary_get(s->sampler, &sum);
    int near_limit = at_start || !max || sum.peak_cgroup_bytes >= max / 10 * 9;
    for (int i = 0; i < 5 && near_limit && s->sampler && !vb_sampler_oom_kills(s->sampler) &&
                    strcmp(st->result, "signal") == 0 && st->exec_main_status == SIGKILL; i++)
        vb_sleep_ns(200000000ull);
    if (!vb_unit_state_apply_oom(st, s->sampler ? vb_sampler_oom_kills(s->sampler) : 0)) return 0;
    char n[64];
    if (max) snprintf(n, sizeof n, "%.1f MiB (%llu bytes)", (double)max / 1048576.0, (unsigned long long)max);
    else snprintf(n, sizeof n, "the unit's MemoryMax");
    snprintf(advice, len, "OOM: killed at its memory limit of %s: raise resources.server_memory or lower the engine's "
             "buffers", n);
    return 1;
}

/* Readiness: the engine's own adapter opens a connection and asks for its version, until it answers, the unit
 * ends, or the deadline passes. */
static int wait_ready(server *s, vb_units *u, const kvlist *connect, char *version, size_t vlen, vb_error *err) {
    uint64_t deadline = vb_now_ns() + (uint64_t)s->recipe->ready_timeout_s * 1000000000ull;
    vb_error last;
    vb_error_clear(&last);
    int attempts = 0;
    for (;;) {
        attempts++;
        /* each probe bounded: a server that accepts but never answers is not waited for past the deadline */
        vb_engine_config cfg = {.params = connect->kv, .n_params = connect->n, .io_timeout_s = PROBE_TIMEOUT_S};
        vb_engine *e = NULL;
        if (vb_engine_open(s->recipe->engine, &cfg, &e, &last) == VB_OK &&
            vb_engine_version(e, version, vlen, &last) == VB_OK) {
            vb_engine_close(&e);
            return VB_OK;
        }
        vb_engine_close(&e);
        vb_unit_state st;
        if (vb_unit_state_get(u, s->unit, &st, err) == VB_OK &&
            (strcmp(st.active_state, "failed") == 0 || strcmp(st.active_state, "inactive") == 0)) {
            char oom[300];
            if (name_oom(s, u, &st, 1, oom, sizeof oom))
                return vb_error_set(err, "server", 1, "%s ended before it answered: %s (systemd: result %s, status %d); "
                                    "last probe: %s", s->unit, oom, st.systemd_result, st.exec_main_status,
                                    last.message);
            return vb_error_set(err, "server", 1, "%s ended before it answered (result %s, status %d); last probe: %s",
                                s->unit, st.result, st.exec_main_status, last.message);
        }
        if (vb_now_ns() > deadline)
            return vb_error_set(err, "server", 1, "%s did not answer within ready_timeout_s = %ld s (%d probes); "
                                "last probe: %s", s->unit, s->recipe->ready_timeout_s, attempts, last.message);
        vb_sleep_ns(200000000ull);
    }
}

static void unit_facts(server *s, vb_units *u, kvlist *facts) {
    char buf[256];
    uint64_t v;
    vb_error e;
    if (vb_unit_property_cpus(u, s->unit, "CPUAffinity", buf, sizeof buf, &e) == VB_OK) {
        kv_addf(facts, "unit.cpu_affinity", "%s", buf);
        int cpus[4096];
        int n = vb_cpulist_parse(buf, cpus, 4096, &e);
        if (n > 0) kv_addf(facts, "unit.cpus", "%d", n);   /* the cores it was given: cores busy is read against it */
    }
    if (vb_unit_property_cpus(u, s->unit, "AllowedCPUs", buf, sizeof buf, &e) == VB_OK) kv_addf(facts, "unit.allowed_cpus", "%s", buf);
    if (vb_unit_property_u64(u, s->unit, "MemoryMax", &v, &e) == VB_OK) kv_addf(facts, "unit.memory_max", "%llu", (unsigned long long)v);
    if (vb_unit_property_u64(u, s->unit, "MemorySwapMax", &v, &e) == VB_OK) kv_addf(facts, "unit.memory_swap_max", "%llu", (unsigned long long)v);
    if (vb_unit_property_u64(u, s->unit, "LimitNOFILE", &v, &e) == VB_OK) kv_addf(facts, "unit.limit_nofile", "%llu", (unsigned long long)v);
    if (vb_unit_property_string(u, s->unit, "RootDirectory", buf, sizeof buf, &e) == VB_OK) kv_addf(facts, "unit.root_directory", "%s", buf);
    vb_unit_state st;
    if (vb_unit_state_get(u, s->unit, &st, &e) == VB_OK && st.main_pid > 0) {
        /* What the server itself sees: its /dev/shm and its CPU mask, read through its own /proc entry. */
        char path[64];
        struct statvfs vfs;
        snprintf(path, sizeof path, "/proc/%d/root/dev/shm", (int)st.main_pid);
        if (statvfs(path, &vfs) == 0)
            kv_addf(facts, "unit.dev_shm_bytes", "%llu", (unsigned long long)vfs.f_blocks * vfs.f_frsize);
        snprintf(path, sizeof path, "/proc/%d/status", (int)st.main_pid);
        FILE *f = fopen(path, "r");
        char line[256];
        while (f && fgets(line, sizeof line, f))
            if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
                line[strcspn(line, "\n")] = '\0';
                kv_addf(facts, "process.cpus_allowed", "%s", line + 18 + strspn(line + 18, " \t"));
            }
        if (f) fclose(f);
        kv_addf(facts, "unit.main_pid", "%d", (int)st.main_pid);
        kv_addf(facts, "unit.control_group", "%s", st.control_group);
    }
}

/* Where the server came from, for the manifest (server.ENGINE.provenance.*): an image layer built from a
 * tarball (its vbench-layer.txt) or the recipe's package, the compiler flags and target ISA, and what that ISA
 * means on this host: the CPU features it needs that the host lacks, and the widest SIMD of each (the
 * validity section turns a gap into a finding). The version the server itself reports is the readiness
 * probe's answer and, once the extension exists, the build phase's engine.ENGINE.version. */
static void provenance_facts(const server *s, const char *image, kvlist *facts) {
    const vb_recipe *r = s->recipe;
    char v[2048], isa[128] = "", kernel_isa[128] = "";
    vb_error e;
    for (size_t i = 0; i < r->n_params; i++) {
        char key[160];
        snprintf(key, sizeof key, "recipe.parameter.%s", r->params[i].key);
        kv_addf(facts, key, "%s", r->params[i].value);
    }
    static const char *const layer_keys[] = {"source_sha256", "version", "flags", "built_with", "replaces", "patch",
                                             "files", "build_seconds"};
    if (image[0] && vb_image_field(image, "vbench-layer.txt", "source", v, sizeof v, &e) == VB_OK) {
        kv_addf(facts, "provenance.source", "tarball %s", v);
        for (size_t i = 0; i < sizeof layer_keys / sizeof *layer_keys; i++) {
            char key[64];
            snprintf(key, sizeof key, "provenance.%s", layer_keys[i]);
            if (vb_image_field(image, "vbench-layer.txt", layer_keys[i], v, sizeof v, &e) == VB_OK) kv_addf(facts, key, "%s", v);
        }
        if (vb_image_field(image, "vbench-layer.txt", "target_isa", isa, sizeof isa, &e) != VB_OK) snprintf(isa, sizeof isa, "unknown");
        snprintf(kernel_isa, sizeof kernel_isa, "%s", isa); /* built here: the kernels are what the flags made */
    } else {
        char ver[128];
        if (r->build_package && image[0] && vb_image_package_version(image, r->build_package, ver, sizeof ver, &e) == VB_OK)
            kv_addf(facts, "provenance.source", "package %s %s", r->build_package, ver);
        else if (r->build_package) kv_addf(facts, "provenance.source", "package %s (version unknown)", r->build_package);
        else kv_addf(facts, "provenance.source", "unknown (the recipe has no build.package)");
        kv_addf(facts, "provenance.flags", "%s", r->build_flags ? r->build_flags : "unknown");
        if (r->build_dispatch) kv_addf(facts, "provenance.runtime_dispatch", "%s", r->build_dispatch);
        snprintf(isa, sizeof isa, "%s", r->build_target_isa ? r->build_target_isa : "unknown");
        snprintf(kernel_isa, sizeof kernel_isa, "%s", r->build_kernel_isa ? r->build_kernel_isa : isa);
    }
    kv_addf(facts, "provenance.target_isa", "%s", isa);
    if (strcmp(kernel_isa, isa) != 0) kv_addf(facts, "provenance.kernel_isa", "%s", kernel_isa);
    char host[4096], missing[512];
    int host_bits = 0, build_bits = 0;
    vb_isa_host_flags(host, sizeof host);
    kv_addf(facts, "provenance.host_simd", "%s", vb_isa_widest_simd(host, &host_bits));
    kv_addf(facts, "provenance.host_simd_bits", "%d", host_bits);
    const char *req = vb_isa_requires(isa), *kreq = vb_isa_requires(kernel_isa);
    if (!req || !kreq || !host[0]) {
        kv_addf(facts, "provenance.isa_check", "not checked: %s", !host[0] ? "no CPU flags in /proc/cpuinfo"
                                                                 : "the target ISA is not an x86-64 level");
        return;
    }
    vb_isa_missing(req, host, missing, sizeof missing);
    kv_addf(facts, "provenance.isa_requires", "%s", req);
    kv_addf(facts, "provenance.isa_missing", "%s", missing);
    kv_addf(facts, "provenance.build_simd", "%s", vb_isa_widest_simd(kreq, &build_bits));
    kv_addf(facts, "provenance.build_simd_bits", "%d", build_bits);
}

/* ---- operations (their own thread) ----------------------------------------------------------------------------- */

static void flush_samples(server *s, zsock_t *coord);

/* The cold half of a cold start (SERVER_COLD_START, for a cold_start item): the unit stopped if it runs (its last
 * samples sent first, as op_stop does), then every file of the data directory written back and evicted from the page
 * cache (util/fs.h: posix_fadvise DONTNEED per file, this directory only, never the host's whole cache), so that the
 * start that follows reads its data from the disk. The facts say what was evicted. */
static int cold_prepare(server *s, vb_units *u, zsock_t *out, kvlist *facts, vb_error *err) {
    uint64_t t0 = vb_now_ns();
    vb_unit_state st;
    if (vb_unit_state_get(u, s->unit, &st, err)) return VB_ERROR;
    int running = st.loaded && strcmp(st.active_state, "active") == 0;
    if (running && vb_unit_stop(u, s->unit, err)) return vb_error_prefix(err, "cold start: stopping %s", s->unit);
    if (s->sampler) {
        vb_sampler_stop(s->sampler);
        flush_samples(s, out);
    }
    long files = 0;
    long long bytes = 0;
    if (vb_fs_evict_tree(s->datadir, &files, &bytes, err))
        return vb_error_prefix(err, "cold start: evicting the data directory %s from the page cache", s->datadir);
    kv_addf(facts, "cold.was_running", "%d", running);
    kv_addf(facts, "cold.evicted_files", "%ld", files);
    kv_addf(facts, "cold.evicted_bytes", "%lld", bytes);
    kv_addf(facts, "cold.evict_s", "%.3f", (double)(vb_now_ns() - t0) / 1e9);
    return VB_OK;
}

/* Starts one node of the server (node 0, or a node of its topology): its data directory, init, unit and readiness.
 * Fills facts and connect; on failure err, and *tail_out with the unit's log tail (the caller frees it). */
static int start_node(server *s, zsock_t *out, int cold, kvlist *facts_out, kvlist *connect_out, int *adopted_out,
                      char **tail_out, vb_error *err_out) {
    vb_orch *o = s->o;
    vb_error err;
    vb_error_clear(&err);
    kvlist facts = {0}, connect = {0}, vars = {0};
    vb_units *u = NULL;
    char *tail = NULL;
    char image[PATH_MAX], version[256] = "";
    vb_kv *settings = NULL;
    size_t n_settings = 0;
    vb_budget b, whole;
    uid_t uid;
    gid_t gid;
    int started = 0, adopted = 0, rc = VB_OK;
    double t0 = vb_wall_time();
    uint64_t t0ns = vb_now_ns();

    vb_recipe_destroy(&s->recipe);
    if (vb_recipe_load(o->recipes_dir, s->recipe_name, &s->recipe, &err) ||
        vb_budget_from_kv(s->budget.kv, s->budget.n, &whole, &err) ||
        (s->recipe->image && (find_image(o, s->recipe->image, image, sizeof image, &err) ||
                              vb_image_check(image, &err) || vb_image_user(image, s->recipe->user, &uid, &gid, &err))))
        goto fail;
    vb_budget_node_share(&whole, s->share_index, s->share_count, &b);
    /* a replica's settings are its primary's (a hot standby refuses to start with fewer worker processes or
     * connections than its primary has); its CPUs and memory are its own share */
    int replica = s->node_index > 0 && s->node_index <= s->n_replicas;
    vb_budget settings_b;
    vb_budget_node_share(&whole, replica ? 0 : s->share_index, s->share_count, &settings_b);
    if (replica && !s->primary && !vb_kv_get(s->remote_primary.kv, s->remote_primary.n, "host", NULL)) {
        vb_error_set(&err, "orchestrator", 1, "node %d is a replica of node 0 on another host, but the request carries "
                     "no connect parameters of node 0 (a coordinator of another version?)", s->node_index);
        goto fail;
    }
    if (s->placed && !s->recipe->port) {   /* its nodes would listen on sockets only, out of the other hosts' reach */
        vb_error_set(&err, "orchestrator", 1, "%s has no port:, so the nodes of its topology cannot be placed over "
                     "several orchestrator hosts (they listen on sockets only): run this engine's topology with one "
                     "orchestrator agent, or give the recipe a port: and TCP settings ({listen}, {host}, {port}; "
                     "docs/adding-an-engine.md)", s->recipe->path);
        goto fail;
    }
    if (replica && !s->recipe->replica_mount) {
        vb_error_set(&err, "orchestrator", 1, "%s has no replica: section, so it cannot make read replicas (replicas: "
                     "%d): add one, or run with replicas: 0", s->recipe->path, s->n_replicas);
        goto fail;
    }
    snprintf(s->image_root, sizeof s->image_root, "%s", s->recipe->image ? image : "");
    if (!s->recipe->image) {
        /* Binaries on the host (built from a tag): the host's user, the data directory at its own path. */
        image[0] = '\0';
        struct passwd *pw = getpwnam(s->recipe->user);
        if (!pw) {
            vb_error_set(&err, "orchestrator", 1, "%s: user '%s' does not exist on this host (a recipe without an "
                         "image runs the server as a host user)", s->recipe->path, s->recipe->user);
            goto fail;
        }
        uid = pw->pw_uid;
        gid = pw->pw_gid;
    }
    char suffix[32] = "";
    if (s->node_index > 0) snprintf(suffix, sizeof suffix, ".node%d", s->node_index);
    if (snprintf(s->datadir, sizeof s->datadir, "%s/servers/%s%s", o->work_dir, s->engine, suffix) >=
        (int)sizeof s->datadir) {
        vb_error_set(&err, "orchestrator", 1, "work directory path too long: %s", o->work_dir);
        goto fail;
    }
    /* its parents 0755 (the server's user walks through them), itself the server's own, 0700 */
    vb_error mk;
    if (vb_mkdirs(s->datadir, 0755, &mk) != VB_OK) {
        vb_error_set(&err, "orchestrator", mk.code, "cannot prepare the data directory %s: %s", s->datadir, mk.message);
        goto fail;
    }
    if (chown(s->datadir, uid, gid) != 0 || chmod(s->datadir, 0700) != 0) {
        vb_error_set(&err, "orchestrator", errno, "cannot prepare the data directory %s: %s", s->datadir, strerror(errno));
        goto fail;
    }
    char password[64] = "";
    if (server_password(s, uid, gid, password, sizeof password, &err)) goto fail;
    if (vb_recipe_settings(s->recipe, &settings_b, &settings, &n_settings, &err)) goto fail;
    for (size_t i = 0; i < n_settings; i++) {
        kv_addf(&vars, settings[i].key, "%s", settings[i].value);
        char key[128];
        snprintf(key, sizeof key, "setting.%s", settings[i].key);
        kv_addf(&facts, key, "%s", settings[i].value);
    }
    kv_addf(&vars, "data", "%s", image[0] ? s->recipe->data_mount : s->datadir);
    kv_addf(&vars, "datadir", "%s", s->datadir);
    /* where node 0 (a router) reaches this node's data directory: node 0's unit binds servers/ at nodes_mount */
    if (image[0] && s->recipe->nodes_mount)
        kv_addf(&vars, "peer_data", "%s/%s", s->recipe->nodes_mount, strrchr(s->datadir, '/') + 1);
    else
        kv_addf(&vars, "peer_data", "%s", s->datadir);
    kv_addf(&vars, "password", "%s", password);
    kv_addf(&vars, "cpus", "%d", b.n_server_cpus);
    kv_addf(&vars, "memory_bytes", "%llu", (unsigned long long)b.server_memory);
    /* where clients reach the node: its socket in the data directory on one host; placed over several hosts, TCP on
     * this host's address, node K on port + K (coordinator/placement.h) */
    kv_addf(&vars, "listen", "%s", s->placed ? o->address : "");
    kv_addf(&vars, "host", "%s", s->placed ? o->address : s->datadir);
    if (s->recipe->port) kv_addf(&vars, "port", "%ld", s->recipe->port + (s->placed ? s->node_index : 0));
    if (replica && s->primary) {   /* node 0 on this host: its socket, its data directory bound */
        kv_addf(&vars, "primary", "%s", image[0] ? s->recipe->replica_mount : s->primary->datadir);
        kv_addf(&vars, "primary_host", "%s", image[0] ? s->recipe->replica_mount : s->primary->datadir);
        kv_addf(&vars, "primary_port", "%ld", s->recipe->port);
        kv_addf(&vars, "primary_password", "%s", password);
        kv_addf(&facts, "replica_of", "%s", s->primary->unit);
    } else if (replica) {          /* node 0 on another host: over the network, nothing bound */
        const vb_kv *rp = s->remote_primary.kv;
        size_t nrp = s->remote_primary.n;
        kv_addf(&vars, "primary", "%s", "");
        kv_addf(&vars, "primary_host", "%s", vb_kv_get(rp, nrp, "host", ""));
        kv_addf(&vars, "primary_port", "%s", vb_kv_get(rp, nrp, "port", ""));
        kv_addf(&vars, "primary_password", "%s", password);
        kv_addf(&facts, "replica_of", "%s:%s (node 0, on another host)", vb_kv_get(rp, nrp, "host", ""),
                vb_kv_get(rp, nrp, "port", ""));
        /* the port node 0 replicates on is the one it listens on there (MariaDB's replica.run) */
        kv_addf(&vars, "replication_port", "%s", vb_kv_get(rp, nrp, "port", ""));
    }
    kv_addf(&vars, "server_id", "%d", s->node_index + 1);
    /* node 0 with replicas, or a replica beside it (a recipe placed over hosts has a port:, checked above) */
    if ((replica && s->primary) || (s->node_index == 0 && s->n_replicas > 0)) {
        unsigned port = 0;
        if (replication_port(s->primary ? s->primary : s, &port, &err)) goto fail;
        kv_addf(&vars, "replication_port", "%u", port);
    }
    for (size_t i = 0; i < s->recipe->n_connect; i++) {
        char *v = NULL;
        if (vb_recipe_expand(s->recipe, s->recipe->connect[i].value, vars.kv, vars.n, &v, &err)) goto fail;
        kv_addf(&connect, s->recipe->connect[i].key, "%s", v);
        free(v);
    }
    vb_units_opts uo = {.bus_address = o->bus[0] ? o->bus : NULL};
    if (!(u = vb_units_open(&uo, &err))) {
        vb_error_prefix(&err, "the orchestrator needs systemd over D-Bus (run it where systemd is PID 1, or in the "
                              "namespace that deploy/systemd-ns boots: deploy/systemd-ns -- vbench run ...)");
        goto fail;
    }
    char bind[PATH_MAX * 2], bind_primary[PATH_MAX * 2];
    snprintf(bind, sizeof bind, "%s:%s", s->datadir, s->recipe->data_mount);
    int bind_it = replica && s->primary;   /* a primary on another host is reached over the network */
    if (bind_it) snprintf(bind_primary, sizeof bind_primary, "%s:%s", s->primary->datadir, s->recipe->replica_mount);
    const char *binds[] = {bind, bind_it ? bind_primary : NULL, NULL};
    const char *const *bind_paths = image[0] ? binds : NULL;
    /* node 0 of shards (several nodes, none a replica): every node's data directory, read-only, at nodes_mount, so
     * the router's postgres_fdw reaches the shards' sockets (the connect key peer_host, {peer_data}) */
    char bind_nodes[PATH_MAX * 2];
    snprintf(bind_nodes, sizeof bind_nodes, "%s/servers:%s", o->work_dir, s->recipe->nodes_mount ? s->recipe->nodes_mount : "");
    const char *ro_binds[] = {bind_nodes, NULL};
    const char *const *bind_ro_paths = image[0] && s->recipe->nodes_mount && s->node_index == 0 && s->n_nodes > 1 &&
                                               s->n_replicas == 0 ? ro_binds : NULL;
    const char *root = image[0] ? image : NULL;
    vb_unit_state st;
    if (cold && cold_prepare(s, u, out, &facts, &err)) goto fail;   /* never adopts: the unit is stopped now */
    if (vb_unit_state_get(u, s->unit, &st, &err)) goto fail;
    if (st.loaded && strcmp(st.active_state, "active") == 0) {
        adopted = 1; /* left running by a previous run of this campaign: reuse it if it answers */
    } else {
        if (st.loaded) vb_unit_reset_failed(u, s->unit, NULL);
        char creates[PATH_MAX + 256];
        snprintf(creates, sizeof creates, "%s/%s", s->datadir, s->recipe->init_creates ? s->recipe->init_creates : "");
        struct stat sst;
        /* a replica's init is its copy of the primary (replica.run) */
        size_t n_init = replica ? s->recipe->n_replica_init : s->recipe->n_init;
        char ***init = replica ? s->recipe->replica_init : s->recipe->init;
        if (n_init && stat(creates, &sst) != 0) {
            /* issue 40: a recipe with init.template copies its data directory from a template made once per image,
             * recipe and version (orchestrator/template.h); a replica copies its primary instead */
            vb_init_ctx ic = {.u = u, .r = s->recipe, .unit = s->unit, .root = root, .uid = uid, .gid = gid};
            char tdir[PATH_MAX], image_id[PATH_MAX + 512], ik[128] = "", ib[128] = "";
            vb_template_info ti;
            uint64_t i0 = vb_now_ns();
            if (!replica && s->recipe->init_template && vb_template_dir(tdir, sizeof tdir)) {
                if (image[0]) {
                    vb_image_field(image, "vbench-image.txt", "key", ik, sizeof ik, NULL);
                    vb_image_field(image, "vbench-image.txt", "built_at", ib, sizeof ib, NULL);
                }
                snprintf(image_id, sizeof image_id, "%s key=%s built_at=%s", image[0] ? image : "(host)", ik, ib);
                if (vb_template_init(&ic, tdir, image_id, s->datadir, vars.kv, vars.n, &ti, &tail, &err)) goto fail;
                kv_addf(&facts, "data_template", "%s", ti.path);
                kv_addf(&facts, "data_template_made", "%d", ti.made);
                if (ti.made) kv_addf(&facts, "data_template_init_s", "%.3f", ti.init_s);
                kv_addf(&facts, "data_template_copy_s", "%.3f", ti.copy_s);
                kv_addf(&facts, "data_template_apply_s", "%.3f", ti.apply_s);
            } else if (vb_init_steps(&ic, init, n_init, replica ? "replica.run" : "init", bind_paths, vars.kv,
                                     vars.n, &tail, &err)) {
                goto fail;
            }
            kv_addf(&facts, "data_init_s", "%.3f", (double)(vb_now_ns() - i0) / 1e9);
        }
        char **argv = vb_recipe_expand_argv(s->recipe, s->recipe->start, vars.kv, vars.n, &err);
        /* the recipe's replica.primary_args on a primary with replicas, replica.args on a replica (the manifest's
         * replica.start_args: what this node's start command has beyond the recipe's start) */
        size_t n_start = 0;
        while (argv && argv[n_start]) n_start++;
        argv = argv_append(s->recipe, argv, replica ? s->recipe->replica_args
                                            : s->node_index == 0 && s->n_replicas > 0 ? s->recipe->replica_primary_args
                                                                                      : NULL,
                           vars.kv, vars.n, &err);
        /* a placed node's own arguments last: they win over replica.primary_args where both set an option */
        if (argv && s->placed) argv = argv_append(s->recipe, argv, s->recipe->placed_args, vars.kv, vars.n, &err);
        if (!argv) goto fail;
        if (argv[n_start]) {
            char extra[2048] = "";
            for (size_t i = n_start, u = 0; argv[i] && u < sizeof extra; i++)
                u += (size_t)snprintf(extra + u, sizeof extra - u, "%s%s", i > n_start ? " " : "", argv[i]);
            kv_addf(&facts, "replica.start_args", "%s", extra);
        }
        vb_unit_spec spec = {.description = "vbench database server", .argv = (const char *const *)argv,
                             .root_directory = root, .bind_paths = bind_paths, .bind_ro_paths = bind_ro_paths,
                             .cpus = b.server_cpus,
                             .memory_max = b.server_memory, .shm_bytes = b.shm,
                             .limit_nofile = (uint64_t)s->recipe->limit_nofile, .drop_privileges = 1, .uid = uid,
                             .gid = gid, .kill_signal = s->recipe->stop_signal,
                             .timeout_stop_usec = (uint64_t)s->recipe->stop_timeout_s * 1000000ull};
        int rc = vb_unit_start(u, s->unit, &spec, &err);
        vb_recipe_argv_free(argv);
        started = 1;
        if (rc) goto fail;
    }
    if (vb_unit_state_get(u, s->unit, &st, &err)) goto fail;
    vb_sampler_opts so = {.interval_ms = 250};
    vb_sampler_destroy(&s->sampler);
    s->sent = 0;
    if (!(s->sampler = vb_sampler_new(st.control_group, &so, &err)) || vb_sampler_start(s->sampler, &err)) goto fail;
    pthread_mutex_lock(&s->lock);
    snprintf(s->cgroup, sizeof s->cgroup, "%s", st.control_group);
    pthread_mutex_unlock(&s->lock);
    if (wait_ready(s, u, &connect, version, sizeof version, &err)) goto fail;

    kv_addf(&facts, "recipe", "%s", s->recipe->path);
    kv_addf(&facts, "unit", "%s", s->unit);
    kv_addf(&facts, "image", "%s", image[0] ? image : "(none: host binaries)");
    /* which recipe, Debian suite and day the image came from (vbench-image.txt, deploy/image-build) */
    static const char *const image_keys[] = {"name", "key", "suite", "mirror", "built_at"};
    for (size_t i = 0; image[0] && i < sizeof image_keys / sizeof *image_keys; i++) {
        char v[512], key[64];
        snprintf(key, sizeof key, "image.%s", image_keys[i]);
        if (vb_image_field(image, "vbench-image.txt", image_keys[i], v, sizeof v, NULL) == VB_OK) kv_addf(&facts, key, "%s", v);
    }
    kv_addf(&facts, "data_dir", "%s", s->datadir);
    if (s->placed && s->recipe->port)   /* where the other hosts reach it (coordinator/placement.h) */
        kv_addf(&facts, "listen_address", "%s:%ld", o->address, s->recipe->port + s->node_index);
    kv_addf(&facts, "probe_answer", "%s", version); /* what the readiness probe's version query said */
    kv_addf(&facts, "adopted", "%d", adopted);
    kv_addf(&facts, "ready_s", "%.3f", (double)(vb_now_ns() - t0ns) / 1e9);
    kv_addf(&facts, "started_at", "%.3f", t0);
    for (size_t i = 0; image[0] && i < s->recipe->n_packages; i++) {
        char ver[128], key[160];
        vb_error e;
        snprintf(key, sizeof key, "package.%s", s->recipe->packages[i]);
        char replaces[512] = "", source[256] = "";
        if (vb_image_package_version(image, s->recipe->packages[i], ver, sizeof ver, &e) == VB_OK)
            kv_addf(&facts, key, "%s", ver);
        else if (vb_image_field(image, "vbench-layer.txt", "replaces", replaces, sizeof replaces, NULL) == VB_OK &&
                 strstr(replaces, s->recipe->packages[i]) &&
                 vb_image_field(image, "vbench-layer.txt", "source", source, sizeof source, NULL) == VB_OK)
            kv_addf(&facts, key, "replaced by a build of %s (see provenance.*)", source);
        else kv_addf(&facts, key, "unknown (%s)", e.message);
    }
    provenance_facts(s, image, &facts);
    unit_facts(s, u, &facts);
    kv_clear(&s->connect);
    for (size_t i = 0; i < connect.n; i++) kv_addf(&s->connect, connect.kv[i].key, "%s", connect.kv[i].value);
    set_state(s, VB_SERVER_READY);
    goto done;
fail:
    rc = VB_ERROR;
    if (u && started) {
        free(tail);
        tail = journal_tail(u, s->unit);
        vb_unit_stop(u, s->unit, NULL);
        vb_unit_reset_failed(u, s->unit, NULL);
    }
    if (s->sampler) vb_sampler_stop(s->sampler);
    set_state(s, VB_SERVER_FAILED);
    *err_out = err;
    *tail_out = tail;
    tail = NULL;
done:
    for (size_t i = 0; i < facts.n; i++) kv_addf(facts_out, facts.kv[i].key, "%s", facts.kv[i].value);
    for (size_t i = 0; i < connect.n; i++) kv_addf(connect_out, connect.kv[i].key, "%s", connect.kv[i].value);
    *adopted_out = adopted;
    free(tail);
    vb_recipe_kv_free(settings, n_settings);
    kv_clear(&facts);
    kv_clear(&connect);
    kv_clear(&vars);
    vb_units_close(&u);
    return rc;
}

/* Node k (1 .. n_nodes - 1) of s's topology, made on first use: the same engine name (its reports are s's), recipe,
 * campaign and budget, its own unit name and node index. */
static server *node_of(server *s, int k) {
    if (!s->node[k]) {
        s->node[k] = calloc(1, sizeof *s->node[k]);
        if (!s->node[k]) return NULL;
        s->node[k]->o = s->o;
        pthread_mutex_init(&s->node[k]->lock, NULL);
    }
    server *n = s->node[k];
    snprintf(n->engine, sizeof n->engine, "%s", s->engine);
    snprintf(n->recipe_name, sizeof n->recipe_name, "%s", s->recipe_name);
    snprintf(n->campaign, sizeof n->campaign, "%s", s->campaign);
    if (snprintf(n->unit, sizeof n->unit, "%.180s-node%d", s->base_unit, k) < 0) n->unit[0] = '\0';
    kv_clear(&n->budget);
    for (size_t i = 0; i < s->budget.n; i++) kv_addf(&n->budget, s->budget.kv[i].key, "%s", s->budget.kv[i].value);
    n->node_index = k;
    n->n_nodes = s->n_nodes;
    n->n_replicas = s->n_replicas;
    n->placed = s->placed;
    n->share_count = s->share_count;
    n->share_index = 0;
    for (int j = 0; j < s->n_held; j++)
        if (s->held[j] == k) n->share_index = j;
    /* a replica copies node 0: this server when it is node 0, else node 0 on another host */
    n->primary = k <= s->n_replicas && s->node_index == 0 ? s : NULL;
    kv_clear(&n->remote_primary);
    for (size_t i = 0; i < s->remote_primary.n; i++)
        kv_addf(&n->remote_primary, s->remote_primary.kv[i].key, "%s", s->remote_primary.kv[i].value);
    return n;
}

/* pfx + every entry of from, into to. */
static void kv_add_prefixed(kvlist *to, const char *pfx, const kvlist *from) {
    for (size_t i = 0; i < from->n; i++) {
        char key[256];
        snprintf(key, sizeof key, "%s%s", pfx, from->kv[i].key);
        kv_addf(to, key, "%s", from->kv[i].value);
    }
}

/* Stops node k's unit: its peaks and sizes into facts as node.K.*, and its log tail (node.K.log_tail), so each node's
 * memory, CPU, files and last words are on record. */
static int stop_node(server *n, vb_units *u, kvlist *facts, vb_error *err);

/* SERVER_START: node 0, then the nodes of its topology one after the other (each waits until it answers); ready when
 * all are, their connect parameters as node.K.KEY beside node 0's. A node that fails stops the ones started. */
static void op_start(server *s, zsock_t *out) {
    int cold = atomic_exchange(&s->cold, 0), adopted = 0;
    kvlist facts = {0}, connect = {0};   /* what the report says: node.K.* for every node but node 0 */
    char *tail = NULL;
    vb_error err;
    vb_error_clear(&err);
    kvlist own_facts = {0}, own_connect = {0};
    int rc = start_node(s, out, cold, &own_facts, &own_connect, &adopted, &tail, &err);
    char lead[32] = "";   /* a lead K > 0 says its own as node.K.* (the coordinator's node 0 is another host's) */
    if (s->node_index > 0) snprintf(lead, sizeof lead, "node.%d.", s->node_index);
    kv_add_prefixed(&facts, lead, &own_facts);
    kv_add_prefixed(&connect, lead, &own_connect);
    kv_clear(&own_facts);
    kv_clear(&own_connect);
    if (s->n_nodes > 1 && s->node_index == 0) kv_addf(&facts, "nodes", "%d", s->n_nodes);
    for (int j = 1; rc == VB_OK && j < s->n_held; j++) {
        int k = s->held[j];
        server *n = node_of(s, k);
        kvlist nf = {0}, nc = {0};
        int nadopted = 0;
        char pfx[32];
        snprintf(pfx, sizeof pfx, "node.%d.", k);
        if (!n) rc = vb_error_set(&err, "orchestrator", ENOMEM, "out of memory for node %d", k);
        else if ((rc = start_node(n, out, cold, &nf, &nc, &nadopted, &tail, &err)) != VB_OK)
            vb_error_prefix(&err, "node %d of %d (%s)", k, s->n_nodes, n->unit);
        kv_add_prefixed(&facts, pfx, &nf);
        kv_add_prefixed(&connect, pfx, &nc);
        kv_clear(&nf);
        kv_clear(&nc);
    }
    if (rc != VB_OK && s->n_nodes > 1) {   /* the nodes that did start stop again: the server is one thing */
        vb_units_opts uo = {.bus_address = s->o->bus[0] ? s->o->bus : NULL};
        vb_error ue;
        vb_units *u = vb_units_open(&uo, &ue);
        kvlist ignored = {0};
        if (u && get_state(s) == VB_SERVER_READY) vb_unit_stop(u, s->unit, NULL);
        for (int j = 1; u && j < s->n_held; j++)
            if (s->node[s->held[j]] && get_state(s->node[s->held[j]]) == VB_SERVER_READY)
                stop_node(s->node[s->held[j]], u, &ignored, NULL);
        kv_clear(&ignored);
        vb_units_close(&u);
    }
    if (rc == VB_OK) {
        set_state(s, VB_SERVER_READY);   /* s->connect stays its own node's, unprefixed: the liveness probe's */
        send_report(out, s, VBENCH__SERVER_REPORT__BODY_READY, adopted ? "adopted a running unit" : cold ? "started cold"
                    : "started", NULL, &connect, &facts, NULL, NULL, 0, 0);
    } else {
        set_state(s, VB_SERVER_FAILED);
        send_report(out, s, VBENCH__SERVER_REPORT__BODY_FAILED, err.message, tail, NULL, &facts, NULL, NULL, 0, 0);
    }
    free(tail);
    kv_clear(&facts);
    kv_clear(&connect);
}

static void op_stop(server *s, zsock_t *out) {
    vb_error err;
    vb_error_clear(&err);
    kvlist facts = {0}, own = {0};
    vb_units_opts uo = {.bus_address = s->o->bus[0] ? s->o->bus : NULL};
    vb_units *u = vb_units_open(&uo, &err);
    int rc = u ? vb_unit_stop(u, s->unit, &err) : VB_ERROR;
    char *tail = rc ? journal_tail(u, s->unit) : NULL;
    if (s->sampler) {
        vb_sampler_stop(s->sampler);
        /* The rows since the last tick's flush go out here, ahead of the STOPPED report on the same socket: sent
         * by the next tick, they reached a coordinator that may already have ended the campaign on STOPPED. The
         * tick does not flush while a stop runs, so s->sent has one writer. */
        flush_samples(s, out);
        vb_sampler_summary sum;
        vb_sampler_summary_get(s->sampler, &sum);
        kv_addf(&own, "peak_cgroup_bytes", "%llu", (unsigned long long)sum.peak_cgroup_bytes);
        kv_addf(&own, "peak_rss_bytes", "%llu", (unsigned long long)sum.peak_rss_bytes);
        kv_addf(&own, "peak_pss_bytes", "%llu", (unsigned long long)sum.peak_pss_bytes);
        kv_addf(&own, "cpu_s", "%.3f", (double)sum.cpu_usec / 1e6);
        kv_addf(&own, "cpu_source", "%s", sum.cpu_source);
        kv_addf(&own, "samples", "%zu", sum.samples);
        kv_addf(&own, "oom_kills", "%d", sum.oom_kills);
        kv_addf(&own, "cgroup_version", "%d", sum.cgroup_version);
    }
    if (s->recipe) measure_sizes(s, &own);
    char lead[32] = "";
    if (s->node_index > 0) {   /* a node K of a placed server: its last words, as stop_node records them */
        snprintf(lead, sizeof lead, "node.%d.", s->node_index);
        char *own_tail = u ? journal_tail(u, s->unit) : NULL;
        kv_addf(&own, "log_tail", "%s", own_tail ? own_tail : "");
        free(own_tail);
    }
    kv_add_prefixed(&facts, lead, &own);
    kv_clear(&own);
    for (int j = 1; u && j < s->n_held; j++) {
        server *n = s->node[s->held[j]];
        if (n && stop_node(n, u, &facts, rc ? NULL : &err) != VB_OK && !rc) {
            rc = VB_ERROR;
            tail = journal_tail(u, n->unit);
        }
    }
    set_state(s, rc ? VB_SERVER_FAILED : VB_SERVER_STOPPED);
    send_report(out, s, rc ? VBENCH__SERVER_REPORT__BODY_FAILED : VBENCH__SERVER_REPORT__BODY_STOPPED, rc ? err.message : "stopped", tail, NULL, &facts, NULL, NULL, 0, 0);
    free(tail);
    kv_clear(&facts);
    vb_units_close(&u);
}

static int stop_node(server *n, vb_units *u, kvlist *facts, vb_error *err) {
    vb_error e;
    char pfx[32];
    snprintf(pfx, sizeof pfx, "node.%d.", n->node_index);
    kvlist nf = {0};
    int rc = vb_unit_stop(u, n->unit, &e);
    if (rc && err) *err = e, vb_error_prefix(err, "node %d (%s)", n->node_index, n->unit);
    char *tail = journal_tail(u, n->unit);
    if (n->sampler) {
        vb_sampler_stop(n->sampler);
        vb_sampler_summary sum;
        vb_sampler_summary_get(n->sampler, &sum);
        kv_addf(&nf, "peak_cgroup_bytes", "%llu", (unsigned long long)sum.peak_cgroup_bytes);
        kv_addf(&nf, "peak_rss_bytes", "%llu", (unsigned long long)sum.peak_rss_bytes);
        kv_addf(&nf, "cpu_s", "%.3f", (double)sum.cpu_usec / 1e6);
        kv_addf(&nf, "samples", "%zu", sum.samples);
        kv_addf(&nf, "oom_kills", "%d", sum.oom_kills);
    }
    if (n->recipe) measure_sizes(n, &nf);
    kv_addf(&nf, "log_tail", "%s", tail ? tail : "");
    free(tail);
    kv_add_prefixed(facts, pfx, &nf);
    kv_clear(&nf);
    set_state(n, rc ? VB_SERVER_FAILED : VB_SERVER_STOPPED);
    return rc;
}

/* The unit ended while it should have been serving (or, hung: it did not answer the probe and was killed): why,
 * and its last words. */
static void op_died(server *s, zsock_t *out, const char *hung) {
    vb_error err;
    vb_error_clear(&err);
    vb_units_opts uo = {.bus_address = s->o->bus[0] ? s->o->bus : NULL};
    vb_units *u = vb_units_open(&uo, &err);
    vb_unit_state st = {0};
    char msg[1200];
    if (hung) {
        if (u) {
            vb_unit_kill(u, s->unit, "all", SIGKILL, NULL);   /* a stopped process dies of SIGKILL too */
            vb_unit_wait_inactive(u, s->unit, 30000000ull, NULL);
        }
        snprintf(msg, sizeof msg, "server unit %s did not answer a query within %d s (%s): hung, killed (SIGKILL)",
                 s->unit, PROBE_TIMEOUT_S, hung);
    } else if (u && vb_unit_state_get(u, s->unit, &st, &err) == VB_OK) {
        char oom[300];
        int was_oom = name_oom(s, u, &st, 0, oom, sizeof oom);
        snprintf(msg, sizeof msg, "server unit %s ended while the campaign needed it: result %s, %s %d%s%s%s", s->unit,
                 st.result[0] ? st.result : "unknown", st.exec_main_code == 1 ? "exit status" : "signal",
                 st.exec_main_status, was_oom ? " (" : "", was_oom ? oom : "", was_oom ? ")" : "");
    } else {
        snprintf(msg, sizeof msg, "server unit %s ended while the campaign needed it (%.400s)", s->unit, err.message);
    }
    char *tail = journal_tail(u, s->unit);
    /* when it died, read before reset-failed unloads the transient unit (after it, the property is gone and the
     * report said "now": a death found at the stop request was then dated after the stop, issue 36.9) */
    uint64_t exit_us = 0;
    vb_error e2;
    int have_exit = u && vb_unit_property_u64(u, s->unit, "ExecMainExitTimestamp", &exit_us, &e2) == VB_OK && exit_us;
    if (u) vb_unit_reset_failed(u, s->unit, NULL);
    kvlist facts = {0};
    kv_addf(&facts, "result", "%s", st.result);
    if (have_exit) kv_addf(&facts, "died_at", "%.3f", (double)exit_us / 1e6);
    else kv_addf(&facts, "died_at", "%.3f", vb_wall_time());
    send_report(out, s, VBENCH__SERVER_REPORT__BODY_DIED, msg, tail, NULL, &facts, NULL, NULL, 0, 0);
    kv_clear(&facts);
    free(tail);
    vb_units_close(&u);
}

/* The coordinator's "phase" before an item: the server answers a real query (the engine's own adapter, bounded by
 * PROBE_TIMEOUT_S), then its sizes go out as the answer. One that does not answer (SIGSTOPped, stuck) is killed and
 * reported dead, so limits.on_server_failure decides (restart, skip, stop) instead of the item waiting on it. */
static void op_phase(server *s, zsock_t *out) {
    vb_engine_config cfg = {.params = s->connect.kv, .n_params = s->connect.n, .io_timeout_s = PROBE_TIMEOUT_S};
    vb_engine *e = NULL;
    vb_error err;
    char version[256];
    vb_error_clear(&err);
    int rc = vb_engine_open(s->recipe->engine, &cfg, &e, &err);
    if (rc == VB_OK) rc = vb_engine_version(e, version, sizeof version, &err);
    vb_engine_close(&e);
    if (rc != VB_OK && get_state(s) == VB_SERVER_READY) {
        set_state(s, VB_SERVER_DIED);
        op_died(s, out, err.message);
        return;
    }
    for (int j = 1; j < s->n_held && s->node[s->held[j]]; j++) {   /* every node it runs answers, or it is dead */
        server *n = s->node[s->held[j]];
        cfg = (vb_engine_config){.params = n->connect.kv, .n_params = n->connect.n, .io_timeout_s = PROBE_TIMEOUT_S};
        rc = vb_engine_open(n->recipe->engine, &cfg, &e, &err);
        if (rc == VB_OK) rc = vb_engine_version(e, version, sizeof version, &err);
        vb_engine_close(&e);
        if (rc != VB_OK && get_state(s) == VB_SERVER_READY) {
            set_state(s, VB_SERVER_DIED);
            op_died(n, out, err.message);
            return;
        }
    }
    kvlist facts = {0}, own = {0};
    char lead[32] = "";
    if (s->node_index > 0) snprintf(lead, sizeof lead, "node.%d.", s->node_index);
    measure_sizes(s, &own);
    kv_add_prefixed(&facts, lead, &own);
    kv_clear(&own);
    for (int j = 1; j < s->n_held && s->node[s->held[j]]; j++) {
        int k = s->held[j];
        kvlist nf = {0};
        char pfx[32];
        snprintf(pfx, sizeof pfx, "node.%d.", k);
        measure_sizes(s->node[k], &nf);
        kv_add_prefixed(&facts, pfx, &nf);
        kv_clear(&nf);
    }
    send_report(out, s, VBENCH__SERVER_REPORT__BODY_SIZES, NULL, NULL, NULL, &facts, s->phase_key, NULL, 0, 0);
    kv_clear(&facts);
}

static void *op_main(void *arg) {
    server *s = arg;
    zsock_t *out = zsock_new_push(s->o->inbox_ep);
    if (strcmp(s->action, "start") == 0) op_start(s, out);
    else if (strcmp(s->action, "stop") == 0) op_stop(s, out);
    else if (strcmp(s->action, "died") == 0) {
        int k = s->dead_node;   /* a node of the topology died: its unit, its log, reported as this server's death */
        s->dead_node = 0;
        op_died(k > 0 && s->node[k] ? s->node[k] : s, out, NULL);
    }
    else if (strcmp(s->action, "phase") == 0) op_phase(s, out);
    zsock_destroy(&out);
    atomic_store(&s->op_done, 1);
    return NULL;
}

static void run_op(server *s, const char *action) {
    if (s->op_running) {
        snprintf(s->pending, sizeof s->pending, "%s", action); /* the latest request wins */
        return;
    }
    snprintf(s->action, sizeof s->action, "%s", action);
    if (strcmp(action, "start") == 0) set_state(s, VB_SERVER_STARTING);
    if (strcmp(action, "stop") == 0) set_state(s, VB_SERVER_STOPPING);
    atomic_store(&s->op_done, 0);
    s->op_running = 1;
    if (pthread_create(&s->op, NULL, op_main, s) != 0) {
        s->op_running = 0;
        fprintf(stderr, "vbench-agent: cannot start an orchestrator thread\n");
    }
}

/* ---- the main thread's side --------------------------------------------------------------------------------- */

/* The address of this host on the route to the coordinator's tcp://HOST:PORT (a UDP socket connected there says
 * which local address the kernel would send from; nothing is sent), into out; 127.0.0.1 for another endpoint or
 * when the route cannot be found. */
static void route_address(const char *endpoint, char *out, size_t len) {
    snprintf(out, len, "127.0.0.1");
    if (!endpoint || strncmp(endpoint, "tcp://", 6) != 0) return;
    char host[256], *port;
    snprintf(host, sizeof host, "%s", endpoint + 6);
    if (!(port = strrchr(host, ':'))) return;
    *port++ = '\0';
    if (host[0] == '[') {   /* tcp://[::1]:5555 */
        memmove(host, host + 1, strlen(host));
        host[strcspn(host, "]")] = '\0';
    }
    struct addrinfo hints = {.ai_socktype = SOCK_DGRAM}, *ai = NULL;
    if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai) return;
    int fd = socket(ai->ai_family, SOCK_DGRAM, 0);
    struct sockaddr_storage me;
    socklen_t ml = sizeof me;
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 && getsockname(fd, (struct sockaddr *)&me, &ml) == 0) {
        const void *a = me.ss_family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)&me)->sin6_addr
                                                 : (const void *)&((struct sockaddr_in *)&me)->sin_addr;
        char text[INET6_ADDRSTRLEN];
        if (inet_ntop(me.ss_family, a, text, sizeof text)) snprintf(out, len, "%s", text);
    }
    if (fd >= 0) close(fd);
    freeaddrinfo(ai);
}

vb_orch *vb_orch_new(const vb_orch_opts *opts) {
    vb_orch *o = calloc(1, sizeof *o);
    o->o = *opts;
    if (opts->recipes_dir) snprintf(o->recipes_dir, sizeof o->recipes_dir, "%s", opts->recipes_dir);
    else vb_recipe_default_dir(o->recipes_dir, sizeof o->recipes_dir);
    const char *img = opts->images_dir ? opts->images_dir : getenv("VBENCH_IMAGES");
    snprintf(o->images_dir, sizeof o->images_dir, "%s", img && *img ? img : "/var/cache/vbench/images");
    snprintf(o->work_dir, sizeof o->work_dir, "%s", opts->work_dir ? opts->work_dir : ".");
    if (o->work_dir[0] != '/') {
        char cwd[PATH_MAX], rel[PATH_MAX];
        snprintf(rel, sizeof rel, "%s", o->work_dir);
        if (getcwd(cwd, sizeof cwd) && snprintf(o->work_dir, sizeof o->work_dir, "%s/%s", cwd, rel) >= (int)sizeof o->work_dir)
            snprintf(o->work_dir, sizeof o->work_dir, "%s", rel);
    }
    snprintf(o->bus, sizeof o->bus, "%s", opts->bus_address ? opts->bus_address : "");
    snprintf(o->inbox_ep, sizeof o->inbox_ep, "%s", opts->inbox_ep);
    snprintf(o->agent_id, sizeof o->agent_id, "%s", opts->agent_id ? opts->agent_id : "");
    if (opts->address && opts->address[0]) snprintf(o->address, sizeof o->address, "%s", opts->address);
    else route_address(opts->coordinator, o->address, sizeof o->address);
    o->o.recipes_dir = o->recipes_dir;
    return o;
}

static server *find_server(vb_orch *o, const char *engine, int create) {
    for (size_t i = 0; i < o->n_srv; i++)
        if (strcmp(o->srv[i].engine, engine) == 0) return &o->srv[i];
    if (!create || o->n_srv == MAX_SERVERS) return NULL;
    server *s = &o->srv[o->n_srv++];
    memset(s, 0, sizeof *s);
    s->o = o;
    pthread_mutex_init(&s->lock, NULL);
    snprintf(s->engine, sizeof s->engine, "%s", engine);
    return s;
}

/* systemd unit names: letters, digits and ":-_.\" only. */
static void unit_name(char *out, size_t len, const char *campaign, const char *engine) {
    snprintf(out, len, "vbench-%s-%s", campaign, engine);
    for (char *p = out; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '_' || *p == '.'))
            *p = '_';
}

/* Whether a ready server's unit is still serving: its cgroup exists (the sampler still reads it) and systemd
 * says it is active. Asked on the main thread's own bus connection, reconnecting after an error. */
static int unit_alive(vb_orch *o, server *s) {
    vb_sampler_summary sum;
    if (s->sampler) {
        vb_sampler_summary_get(s->sampler, &sum);
        if (sum.ended) return 0;
    }
    vb_error err;
    vb_units_opts uo = {.bus_address = o->bus[0] ? o->bus : NULL};
    if (!o->watch) o->watch = vb_units_open(&uo, &err);
    vb_unit_state st;
    if (!o->watch || vb_unit_state_get(o->watch, s->unit, &st, &err) != VB_OK) {
        vb_units_close(&o->watch);
        return 1; /* cannot tell: the next check decides */
    }
    return strcmp(st.active_state, "active") == 0 || strcmp(st.active_state, "reloading") == 0;
}

/* A ready server whose unit ended: report it (on an operation thread: the journal is read there). */
static int check_died(vb_orch *o, server *s) {
    if (get_state(s) != VB_SERVER_READY) return 0;
    int dead = !unit_alive(o, s);
    for (int j = 1; !dead && j < s->n_held; j++)
        if (s->node[s->held[j]] && !unit_alive(o, s->node[s->held[j]])) {
            dead = 1;
            s->dead_node = s->held[j];
        }
    if (!dead) return 0;
    set_state(s, VB_SERVER_DIED);
    run_op(s, "died");
    return 1;
}

/* The item that samples from now on belong to (the coordinator's "phase", or a cold start's item). */
static void announce_item(server *s, const char *item_key) {
    pthread_mutex_lock(&s->lock);
    unsigned at = s->n_keys++ % KEY_HISTORY;
    snprintf(s->keys[at], sizeof s->keys[at], "%s", item_key);
    s->key_since[at] = vb_wall_time();
    pthread_mutex_unlock(&s->lock);
}

/* ---- CPU profiles (orchestrator/perf.h) --------------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)ftw;
    if (flag == FTW_DP) rmdir(path);
    else unlink(path);
    return 0;
}

/* Ends the item's recording, if one runs, and removes its files. */
static void perf_drop(server *s) {
    if (s->perf_pid > 0) vb_perf_record_stop(s->perf_pid);
    if (s->perf_item[0]) {
        char cg[sizeof s->cgroup];
        pthread_mutex_lock(&s->lock);
        snprintf(cg, sizeof cg, "%s", s->cgroup);
        pthread_mutex_unlock(&s->lock);
        vb_perf_cgroup_release(cg);
    }
    s->perf_pid = 0;
    if (s->perf_path[0]) {
        char log[sizeof s->perf_path + 8];
        snprintf(log, sizeof log, "%s.log", s->perf_path);
        unlink(s->perf_path);
        unlink(log);
        snprintf(log, sizeof log, "%s.buildid", s->perf_path);
        nftw(log, rm_entry, 16, FTW_DEPTH | FTW_PHYS);   /* perf's build-id cache of the recording */
    }
    s->perf_path[0] = s->perf_item[0] = s->perf_note[0] = '\0';
}

/* A profile report: the folded profile p (folded: its text) or, without one, the note saying why. */
static void send_profile(zsock_t *coord, server *s, const char *item_key, double t0, double t1, const vb_perf_profile *p,
                         const char *folded, const char *note) {
    Vbench__ServerProfile pr = VBENCH__SERVER_PROFILE__INIT;
    pr.item_key = (char *)item_key;
    pr.window_start = t0;
    pr.window_end = t1;
    Vbench__ProfileFunction fn[VB_PERF_TOP], *fp[VB_PERF_TOP];
    size_t n_top = folded && p ? p->n_top : 0;
    for (size_t i = 0; i < n_top; i++) {
        vbench__profile_function__init(&fn[i]);
        fn[i].name = (char *)p->top[i].name;
        fn[i].samples = p->top[i].samples;
        fp[i] = &fn[i];
    }
    pr.samples = folded && p ? p->samples : 0;
    pr.n_top = n_top;
    pr.top = fp;
    pr.folded = (char *)(folded ? folded : "");
    pr.note = (char *)(note ? note : "");
    pr.malformed = p ? p->malformed : 0;
    pr.dropped = p ? p->dropped : 0;
    Vbench__ServerReport r = VBENCH__SERVER_REPORT__INIT;
    r.engine = s->engine;
    r.unit = s->unit;
    r.body_case = VBENCH__SERVER_REPORT__BODY_PROFILE;
    r.profile = &pr;
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_SERVER_REPORT;
    env.server_report = &r;
    vb_wire_send(coord, NULL, &env, NULL);
}

/* SERVER_PHASE with perf: records the unit's cgroup for this item, until the next request for the server. A
 * recording perf refuses leaves its reason in perf_note, for the SERVER_PROFILE answer: the item runs anyway. */
static void perf_begin(server *s, const char *item_key, zsock_t *coord) {
    perf_drop(s);
    snprintf(s->perf_item, sizeof s->perf_item, "%s", item_key);
    snprintf(s->perf_path, sizeof s->perf_path, "%s/perf-%s.data", s->o->work_dir, s->engine);
    char cg[sizeof s->cgroup];
    pthread_mutex_lock(&s->lock);
    snprintf(cg, sizeof cg, "%s", s->cgroup);
    pthread_mutex_unlock(&s->lock);
    vb_error err;
    vb_error_clear(&err);
    if (!cg[0]) snprintf(s->perf_note, sizeof s->perf_note, "perf: the unit's cgroup is not known (the server is not ready)");
    else if (vb_perf_record_start(cg, s->perf_path, &s->perf_pid, &err) != VB_OK)
        snprintf(s->perf_note, sizeof s->perf_note, "perf: %s", err.message);
    if (s->perf_note[0] && !s->perf_said) {   /* said at once: the coordinator's manifest names it */
        send_profile(coord, s, item_key, 0, 0, NULL, NULL, s->perf_note);
        s->perf_said = 1;
    }
}

/* SERVER_PROFILE: the recording stops and the window's slice is folded; the answer carries the profile or a note.
 * On the main thread: perf script of one window of one cgroup at 99 Hz reads a few thousand samples (see
 * docs/metrics.md for its time), and the next request for the server must find the recording over. */
static void perf_profile(server *s, const Vbench__ServerRequest *rq, zsock_t *coord) {
    char note[1200] = "";
    vb_perf_profile p = {0};
    char *folded = NULL;
    if (strcmp(s->perf_item, rq->item_key) != 0)
        snprintf(note, sizeof note, "perf: no recording of item %s (perf was not asked for on its phase request)", rq->item_key);
    else if (s->perf_note[0])
        snprintf(note, sizeof note, "%s", s->perf_note);
    else if (rq->profile_start <= 0)
        snprintf(note, sizeof note, "no window stopped scaling: the recording is dropped");
    else {
        vb_perf_record_stop(s->perf_pid);
        s->perf_pid = 0;
        vb_error err;
        vb_error_clear(&err);
        /* perf reads the unit's files, the image, not the host's (other builds: wrong names); vb_perf_slice keeps
         * perf script out of the unit's mount namespace, so the image's directory names them for every process. */
        if (vb_perf_slice(s->perf_path, s->image_root, rq->profile_start, rq->profile_end, &p, &err) != VB_OK)
            snprintf(note, sizeof note, "perf: %s", err.message);
        else if (!p.samples)
            snprintf(note, sizeof note, "perf: no sample of the unit's cgroup in the window");
        else
            folded = vb_perf_folded_text(&p);
    }
    perf_drop(s);
    send_profile(coord, s, rq->item_key, rq->profile_start, rq->profile_end, &p, folded, note);
    free(folded);
    vb_perf_profile_free(&p);
}

void vb_orch_request(vb_orch *o, const Vbench__ServerRequest *rq, zsock_t *coord) {
    server *s = find_server(o, rq->engine, 1);
    if (!s) {
        server tmp = {.o = o};
        snprintf(tmp.engine, sizeof tmp.engine, "%s", rq->engine);
        send_report(coord, &tmp, VBENCH__SERVER_REPORT__BODY_FAILED, "this orchestrator runs at most 16 servers", NULL, NULL, NULL, NULL, NULL, 0, 0);
        return;
    }
    int cold = rq->action == VBENCH__SERVER_ACTION__SERVER_COLD_START;
    if (rq->action == VBENCH__SERVER_ACTION__SERVER_START || cold) {
        vb_server_state st = get_state(s);
        if (!cold && (st == VB_SERVER_READY || st == VB_SERVER_STARTING)) {
            /* Already serving (a coordinator that restarted asks again): answer from what is known. */
            if (st == VB_SERVER_READY) snprintf(s->pending, sizeof s->pending, "start");
            else return;
        }
        snprintf(s->recipe_name, sizeof s->recipe_name, "%s", rq->recipe);
        snprintf(s->campaign, sizeof s->campaign, "%s", rq->campaign);
        unit_name(s->base_unit, sizeof s->base_unit, rq->campaign, rq->engine);
        s->n_nodes = rq->nodes > 1 ? (rq->nodes < MAX_NODES ? (int)rq->nodes : MAX_NODES) : 1;
        s->n_replicas = rq->replicas < (uint32_t)s->n_nodes ? (int)rq->replicas : s->n_nodes - 1;
        /* the nodes it runs: those the coordinator placed here (ascending, each once), else all */
        s->n_held = 0;
        s->placed = rq->n_place > 0;
        for (int k = 0; k < s->n_nodes; k++)
            for (size_t i = 0; i < rq->n_place || (!s->placed && i == 0); i++)
                if (!s->placed || rq->place[i] == (uint32_t)k) {
                    s->held[s->n_held++] = k;
                    break;
                }
        if (s->n_held == 0) s->held[s->n_held++] = 0;   /* a request naming no node of its topology: node 0 */
        s->node_index = s->held[0];
        s->share_index = 0;
        s->share_count = s->n_held;
        if (s->node_index > 0) snprintf(s->unit, sizeof s->unit, "%.180s-node%d", s->base_unit, s->node_index);
        else snprintf(s->unit, sizeof s->unit, "%s", s->base_unit);
        s->primary = NULL;
        kv_clear(&s->remote_primary);
        for (size_t i = 0; i < rq->n_primary; i++)
            kv_addf(&s->remote_primary, rq->primary[i]->key, "%s", rq->primary[i]->value);
        kv_clear(&s->budget);
        for (size_t i = 0; i < rq->n_budget; i++) kv_addf(&s->budget, rq->budget[i]->key, "%s", rq->budget[i]->value);
        s->pending[0] = '\0';
        /* a cold start stops a running unit itself (one that arrives while a start runs follows it); its samples
         * belong to its item from now on */
        if (cold && rq->item_key[0]) announce_item(s, rq->item_key);
        atomic_store(&s->cold, cold);
        run_op(s, "start");
    } else if (rq->action == VBENCH__SERVER_ACTION__SERVER_STOP) {
        perf_drop(s);
        check_died(o, s); /* a death during the last item is reported before the stop */
        run_op(s, "stop");
    } else if (rq->action == VBENCH__SERVER_ACTION__SERVER_PROFILE) {
        perf_profile(s, rq, coord);
    } else if (rq->action == VBENCH__SERVER_ACTION__SERVER_PHASE) {
        announce_item(s, rq->item_key);
        if (rq->perf && get_state(s) == VB_SERVER_READY) perf_begin(s, rq->item_key, coord);
        else perf_drop(s);
        /* The answer is also the coordinator's go for the item: no item starts on a server that died, or that
         * does not answer (op_phase probes it on an operation thread). */
        if (!check_died(o, s) && get_state(s) == VB_SERVER_READY && s->recipe) {
            snprintf(s->phase_key, sizeof s->phase_key, "%s", rq->item_key);
            run_op(s, "phase");
        }
    } else {
        char msg[128];
        snprintf(msg, sizeof msg, "unknown server action %d (a coordinator of another version?)", (int)rq->action);
        send_report(coord, s, VBENCH__SERVER_REPORT__BODY_FAILED, msg, NULL, NULL, NULL, NULL, NULL, 0, 0);
    }
}

/* The item a row sampled at wall time t belongs to ("" before the first), into out. Caller holds s->lock. */
static void key_at(const server *s, double t, char *out, size_t len) {
    out[0] = '\0';
    unsigned n = s->n_keys < KEY_HISTORY ? s->n_keys : KEY_HISTORY;
    for (unsigned k = 0; k < n; k++) {
        unsigned at = (s->n_keys - 1 - k) % KEY_HISTORY;
        if (s->key_since[at] <= t) {
            snprintf(out, len, "%s", s->keys[at]);
            return;
        }
    }
}

/* Streams the rows sampled since the last call, one report per run of rows that belong to the same item. */
static void flush_samples(server *s, zsock_t *coord) {
    if (!s->sampler || s->node_index > 0) return;   /* the server's series is node 0's; a lead K > 0 keeps its peaks */
    vb_sampler_summary sum;
    vb_sampler_summary_get(s->sampler, &sum);
    vb_sample rows[SAMPLE_BATCH];
    size_t n;
    while ((n = vb_sampler_copy_rows(s->sampler, s->sent, rows, SAMPLE_BATCH)) > 0) {
        size_t from = 0;
        char key[256], next[256];
        pthread_mutex_lock(&s->lock);
        key_at(s, sum.wall_start + rows[0].t_s, key, sizeof key);
        for (size_t i = 1; i <= n; i++) {
            if (i < n) key_at(s, sum.wall_start + rows[i].t_s, next, sizeof next);
            if (i < n && strcmp(next, key) == 0) continue;
            send_report(coord, s, VBENCH__SERVER_REPORT__BODY_SAMPLES, NULL, NULL, NULL, NULL, key, rows + from, i - from, sum.wall_start);
            from = i;
            if (i < n) snprintf(key, sizeof key, "%s", next);
        }
        pthread_mutex_unlock(&s->lock);
        s->sent += n;
    }
}

void vb_orch_tick(vb_orch *o, zsock_t *coord) {
    uint64_t now = vb_now_ns();
    for (size_t i = 0; i < o->n_srv; i++) {
        server *s = &o->srv[i];
        if (s->op_running && atomic_load(&s->op_done)) {
            pthread_join(s->op, NULL);
            s->op_running = 0;
            if (s->pending[0]) {
                char next[16];
                snprintf(next, sizeof next, "%s", s->pending);
                s->pending[0] = '\0';
                run_op(s, next);
            }
        }
    }
    if (now - o->last_tick_ns < 1000000000ull) return;
    o->last_tick_ns = now;
    for (size_t i = 0; i < o->n_srv; i++) {
        server *s = &o->srv[i];
        /* start: the sampler is being replaced; stop: op_stop sends the last rows itself */
        if (s->op_running && (strcmp(s->action, "start") == 0 || strcmp(s->action, "stop") == 0)) continue;
        flush_samples(s, coord);
        if (s->sampler && !s->op_running) check_died(o, s);
    }
}

void vb_orch_destroy(vb_orch **op) {
    vb_orch *o = op ? *op : NULL;
    if (!o) return;
    int abandoned = 0;
    for (size_t i = 0; i < o->n_srv; i++) {
        server *s = &o->srv[i];
        if (s->op_running) {
            /* A start or stop still waiting on systemd (a unit's start can take limits.server_start_timeout_s):
             * the agent is leaving, so it waits 30 s at most; the unit is systemd's, and the next start of the
             * engine adopts or replaces it. What the thread uses is then left allocated until the exit. */
            struct timespec deadline;
            clock_gettime(CLOCK_REALTIME, &deadline);
            deadline.tv_sec += 30;
            if (pthread_timedjoin_np(s->op, NULL, &deadline) != 0) {
                pthread_detach(s->op);
                abandoned = 1;
                continue;
            }
        }
        perf_drop(s);
        for (int k = 1; k < MAX_NODES; k++) {
            server *n = s->node[k];
            if (!n) continue;
            vb_sampler_destroy(&n->sampler);
            vb_recipe_destroy(&n->recipe);
            kv_clear(&n->budget);
            kv_clear(&n->connect);
            kv_clear(&n->remote_primary);
            pthread_mutex_destroy(&n->lock);
            free(n);
        }
        vb_sampler_destroy(&s->sampler);
        vb_recipe_destroy(&s->recipe);
        kv_clear(&s->budget);
        kv_clear(&s->connect);
        kv_clear(&s->remote_primary);
        pthread_mutex_destroy(&s->lock);
    }
    if (abandoned) {
        *op = NULL;
        return;
    }
    vb_units_close(&o->watch);
    free(o);
    *op = NULL;
}
