/* The sampling thread: reads cgroup v1 or v2 files and /proc/PID/status on a fixed period, waits in ppoll on a
 * wake-up eventfd (stop) and, on cgroup v1, on the memory controller's OOM eventfd. */
#include "orchestrator/sampler.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"

struct vb_sampler {
    char mem_dir[4096];      /* memory controller directory of the cgroup (v2: the cgroup itself) */
    char cpu_dir[4096];      /* v1 cpuacct directory (empty when there is none); v2: same as mem_dir */
    char proc_root[256];
    int version;
    uint64_t interval_ns;
    uint64_t max_ns;
    size_t max_samples;

    pthread_t thread;
    int started, joined;
    atomic_int stop;
    int wake_fd;             /* eventfd: written by vb_sampler_stop */
    int oom_fd;              /* v1: eventfd registered on memory.oom_control; -1 otherwise */
    uint64_t start_ns;

    pthread_mutex_t lock;    /* guards rows and sum */
    vb_sample *rows;
    size_t nrows, cap;
    vb_sampler_summary sum;
    uint64_t first_cpu;
    int have_first_cpu;
    int oom_from_events;     /* OOM kills counted from the eventfd (v1) */
    int oom_from_counter;    /* the largest oom_kill counter read from the files */
    long ticks_per_s;
    uint64_t last_proc_cpu;
};

static int read_file(const char *path, char *buf, size_t len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    ssize_t n = read(fd, buf, len - 1);
    int e = errno;
    close(fd);
    if (n < 0) return -e;
    buf[n] = '\0';
    return (int)n;
}

static int read_u64(const char *dir, const char *file, uint64_t *out) {
    char path[4400], buf[64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int r = read_file(path, buf, sizeof buf);
    if (r < 0) return r;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (end == buf || errno) return -EINVAL;
    *out = v;
    return 0;
}

/* "key value" lines (memory.events, cpu.stat, memory.oom_control): the value of key, or -ENOENT. */
static int read_keyed(const char *dir, const char *file, const char *key, uint64_t *out) {
    char path[4400], buf[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int r = read_file(path, buf, sizeof buf);
    if (r < 0) return r;
    size_t klen = strlen(key);
    for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
            *out = strtoull(line + klen + 1, NULL, 10);
            return 0;
        }
    }
    return -ENOENT;
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

vb_sampler *vb_sampler_new(const char *cgroup_path, const vb_sampler_opts *opts, vb_error *err) {
    if (!cgroup_path || cgroup_path[0] != '/')
        return vb_error_set(err, "sampler", EINVAL, "bad cgroup path \"%s\" (expected /...)",
                            cgroup_path ? cgroup_path : "(null)"), NULL;
    vb_sampler *s = calloc(1, sizeof *s);
    if (!s) return vb_error_set(err, "sampler", ENOMEM, "out of memory"), NULL;
    const char *root = opts && opts->cgroup_root ? opts->cgroup_root : "/sys/fs/cgroup";
    snprintf(s->proc_root, sizeof s->proc_root, "%s", opts && opts->proc_root ? opts->proc_root : "/proc");
    s->interval_ns = (opts && opts->interval_ms ? opts->interval_ms : 250) * 1000000ull;
    s->max_ns = opts && opts->max_seconds > 0 ? (uint64_t)(opts->max_seconds * 1e9) : 0;
    s->max_samples = opts && opts->max_samples ? opts->max_samples : (size_t)1 << 20;
    s->wake_fd = s->oom_fd = -1;
    const char *rel = strcmp(cgroup_path, "/") == 0 ? "" : cgroup_path;
    if (strlen(root) > 255 || strlen(rel) > 3000) {
        free(s);
        return vb_error_set(err, "sampler", ENAMETOOLONG, "cgroup path too long: %s%s", root, rel), NULL;
    }
    char probe[512];
    snprintf(probe, sizeof probe, "%.255s/cgroup.controllers", root);
    if (access(probe, F_OK) == 0) { /* the unified hierarchy is mounted at the root: v2 */
        s->version = 2;
        snprintf(s->mem_dir, sizeof s->mem_dir, "%.255s%.3000s", root, rel);
        snprintf(s->cpu_dir, sizeof s->cpu_dir, "%.255s%.3000s", root, rel);
    } else {
        snprintf(probe, sizeof probe, "%.255s/memory", root);
        if (!is_dir(probe)) {
            free(s);
            return vb_error_set(err, "sampler", ENOENT,
                                "no memory controller under %s (neither cgroup v2 nor a v1 memory hierarchy)", root),
                   NULL;
        }
        s->version = 1;
        snprintf(s->mem_dir, sizeof s->mem_dir, "%.255s/memory%.3000s", root, rel);
        const char *cpu_h[] = {"cpuacct", "cpu,cpuacct", "cpuacct,cpu"};
        for (size_t i = 0; i < sizeof cpu_h / sizeof *cpu_h; i++) {
            snprintf(probe, sizeof probe, "%.255s/%s", root, cpu_h[i]);
            if (is_dir(probe)) {
                snprintf(s->cpu_dir, sizeof s->cpu_dir, "%.255s/%s%.3000s", root, cpu_h[i], rel);
                break;
            }
        }
    }
    if (!is_dir(s->mem_dir)) {
        vb_error_set(err, "sampler", ENOENT, "cgroup %s has no memory controller directory %s (unit stopped, or "
                     "MemoryAccounting off?)", cgroup_path, s->mem_dir);
        free(s);
        return NULL;
    }
    s->sum.cgroup_version = s->version;
    s->ticks_per_s = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

/* CPU ticks of a process and of its reaped children: utime + stime + cutime + cstime from /proc/PID/stat. */
static uint64_t proc_ticks(const char *stat) {
    const char *p = strrchr(stat, ')'); /* the command name may hold spaces and parentheses */
    if (!p) return 0;
    p++;
    uint64_t sum = 0;
    for (int field = 3; field <= 17 && *p; field++) {
        while (*p == ' ') p++;
        char *end;
        unsigned long long v = strtoull(p, &end, 10);
        if (field >= 14) sum += v;
        p = end == p ? p + 1 : end;
        while (*p && *p != ' ') p++;
    }
    return sum;
}

/* Adds the VmRSS, Pss and CPU ticks of every process listed in dir/cgroup.procs and in its sub-cgroups. */
static void scan_procs(vb_sampler *s, const char *dir, vb_sample *row, uint64_t *ticks, int depth) {
    char path[4400], buf[65536];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    if (read_file(path, buf, sizeof buf) > 0) {
        for (char *p = buf; *p;) {
            char *end;
            long pid = strtol(p, &end, 10);
            if (end == p) break;
            p = *end ? end + 1 : end;
            char spath[320], status[4096];
            snprintf(spath, sizeof spath, "%s/%ld/status", s->proc_root, pid);
            if (read_file(spath, status, sizeof status) <= 0) continue;
            row->nprocs++;
            char *v = strstr(status, "\nVmRSS:");
            if (v) row->rss_bytes += strtoull(v + 7, NULL, 10) * 1024;
            /* Pss: each shared page divided among the processes that map it, so the sum over a server's
             * processes counts shared memory (PostgreSQL's shared_buffers) once, where summed RSS counts it in
             * every backend that touched it. */
            snprintf(spath, sizeof spath, "%s/%ld/smaps_rollup", s->proc_root, pid);
            if (read_file(spath, status, sizeof status) > 0 && (v = strstr(status, "\nPss:")))
                row->pss_bytes += strtoull(v + 5, NULL, 10) * 1024;
            snprintf(spath, sizeof spath, "%s/%ld/stat", s->proc_root, pid);
            if (read_file(spath, status, sizeof status) > 0) *ticks += proc_ticks(status);
        }
    }
    if (depth >= 8) return;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || e->d_type != DT_DIR) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        scan_procs(s, path, row, ticks, depth + 1);
    }
    closedir(d);
}

/* Folds the cgroup's own counters of one reading into the summary (peaks, OOM kills). Under s->lock. */
static void fold_cgroup_counters(vb_sampler *s, uint64_t cgroup_bytes, int have_peak, uint64_t peak, int have_oom,
                                 uint64_t oom) {
    vb_sampler_summary *m = &s->sum;
    if (cgroup_bytes > m->peak_cgroup_sampled) m->peak_cgroup_sampled = cgroup_bytes;
    if (have_peak && peak > m->peak_cgroup_bytes) m->peak_cgroup_bytes = peak;
    if (m->peak_cgroup_sampled > m->peak_cgroup_bytes) m->peak_cgroup_bytes = m->peak_cgroup_sampled;
    if (have_oom) {
        if ((int)oom > s->oom_from_counter) s->oom_from_counter = (int)oom;
        if (s->version == 2) m->oom_watch = 1;
    }
    m->oom_kills = s->oom_from_counter > s->oom_from_events ? s->oom_from_counter : s->oom_from_events;
}

/* One sample; returns 0, or -ENOENT when the cgroup is gone. */
static int take_sample(vb_sampler *s) {
    vb_sample row = {0};
    row.t_s = (double)(vb_now_ns() - s->start_ns) / 1e9;
    uint64_t peak = 0, oom = 0;
    int r = read_u64(s->mem_dir, s->version == 2 ? "memory.current" : "memory.usage_in_bytes", &row.cgroup_bytes);
    if (r == -ENOENT || r == -ENODEV) return -ENOENT;
    int have_peak = read_u64(s->mem_dir, s->version == 2 ? "memory.peak" : "memory.max_usage_in_bytes", &peak) == 0;
    int have_oom = s->version == 2 ? read_keyed(s->mem_dir, "memory.events", "oom_kill", &oom) == 0
                                   : read_keyed(s->mem_dir, "memory.oom_control", "oom_kill", &oom) == 0;
    int have_cpu = 0;
    if (s->version == 2) {
        have_cpu = read_keyed(s->cpu_dir, "cpu.stat", "usage_usec", &row.cpu_usec) == 0;
    } else if (s->cpu_dir[0]) {
        uint64_t ns;
        if (read_u64(s->cpu_dir, "cpuacct.usage", &ns) == 0) {
            row.cpu_usec = ns / 1000;
            have_cpu = 1;
        }
    }
    uint64_t ticks = 0;
    scan_procs(s, s->mem_dir, &row, &ticks, 0);
    if (!is_dir(s->mem_dir)) {
        /* Vanished while we read the processes (smaps_rollup can wait long for a process in reclaim, e.g. the
         * one being OOM-killed): their values are not the unit's any more, but the cgroup's own counters were
         * read before and are; the peak and the OOM count are exactly what such a last sample is for. */
        pthread_mutex_lock(&s->lock);
        fold_cgroup_counters(s, row.cgroup_bytes, have_peak, peak, have_oom, oom);
        pthread_mutex_unlock(&s->lock);
        return -ENOENT;
    }
    if (!have_cpu) {
        /* No CPU accounting of the cgroup's own (see cpu_source): the processes' times, never going back when a
         * process exits without a parent inside the cgroup to collect its time. */
        row.cpu_usec = ticks * 1000000ull / (uint64_t)s->ticks_per_s;
        if (row.cpu_usec < s->last_proc_cpu) row.cpu_usec = s->last_proc_cpu;
        s->last_proc_cpu = row.cpu_usec;
    }

    pthread_mutex_lock(&s->lock);
    vb_sampler_summary *m = &s->sum;
    if (s->nrows < s->max_samples) {
        if (s->nrows == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 256;
            vb_sample *rows = realloc(s->rows, cap * sizeof *rows);
            if (rows) {
                s->rows = rows;
                s->cap = cap;
            }
        }
        if (s->nrows < s->cap) s->rows[s->nrows++] = row;
    }
    m->samples++;
    fold_cgroup_counters(s, row.cgroup_bytes, have_peak, peak, have_oom, oom);
    if (row.rss_bytes > m->peak_rss_bytes) m->peak_rss_bytes = row.rss_bytes;
    if (row.pss_bytes > m->peak_pss_bytes) m->peak_pss_bytes = row.pss_bytes;
    snprintf(m->cpu_source, sizeof m->cpu_source, "%s", have_cpu ? "cgroup" : "procfs");
    {
        if (!s->have_first_cpu) {
            s->first_cpu = row.cpu_usec;
            s->have_first_cpu = 1;
        }
        m->cpu_usec = row.cpu_usec - s->first_cpu;
    }
    pthread_mutex_unlock(&s->lock);
    return 0;
}

/* The v1 OOM eventfd fired: each notification is an OOM in the cgroup, except the one the kernel sends when
 * the cgroup is removed. The thread wakes at once on an OOM (before the victim is even reaped, long before
 * systemd removes the cgroup), so "the cgroup still exists" tells the two apart. */
static void handle_oom_event(vb_sampler *s) {
    uint64_t v = 0;
    if (read(s->oom_fd, &v, sizeof v) != (ssize_t)sizeof v || v == 0) return;
    char path[4400];
    snprintf(path, sizeof path, "%s/memory.oom_control", s->mem_dir);
    int alive = access(path, R_OK) == 0;
    int kills = (int)(alive ? v : v - 1);
    /* Sample now: the kernel's peak (max_usage_in_bytes) is at the limit, and the cgroup is about to go. */
    if (alive) take_sample(s);
    pthread_mutex_lock(&s->lock);
    s->oom_from_events += kills;
    if (s->oom_from_events > s->sum.oom_kills) s->sum.oom_kills = s->oom_from_events;
    pthread_mutex_unlock(&s->lock);
}

static void *run(void *arg) {
    vb_sampler *s = arg;
    uint64_t next = s->start_ns + s->interval_ns;
    uint64_t deadline = s->max_ns ? s->start_ns + s->max_ns : 0;
    for (;;) {
        uint64_t now = vb_now_ns();
        if (deadline && now >= deadline) break;
        if (now >= next) {
            if (take_sample(s) != 0) {
                pthread_mutex_lock(&s->lock);
                s->sum.ended = 1;
                pthread_mutex_unlock(&s->lock);
                break;
            }
            next += s->interval_ns;
            if (next <= now) next = now + s->interval_ns; /* fell behind: no burst of catch-up samples */
            continue;
        }
        uint64_t until = deadline && deadline < next ? deadline : next;
        struct timespec ts = {(time_t)((until - now) / 1000000000ull), (long)((until - now) % 1000000000ull)};
        struct pollfd fds[2] = {{.fd = s->wake_fd, .events = POLLIN}, {.fd = s->oom_fd, .events = POLLIN}};
        int n = ppoll(fds, s->oom_fd >= 0 ? 2 : 1, &ts, NULL);
        if (atomic_load(&s->stop)) break;
        if (n > 0 && s->oom_fd >= 0 && (fds[1].revents & POLLIN)) handle_oom_event(s);
    }
    return NULL;
}

/* cgroup v1: "<eventfd> <fd of memory.oom_control>" written to cgroup.event_control. */
static void register_oom_v1(vb_sampler *s) {
    char path[4400];
    int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd < 0) return;
    snprintf(path, sizeof path, "%s/memory.oom_control", s->mem_dir);
    int ofd = open(path, O_RDONLY | O_CLOEXEC);
    snprintf(path, sizeof path, "%s/cgroup.event_control", s->mem_dir);
    int cfd = open(path, O_WRONLY | O_CLOEXEC);
    int ok = 0;
    if (ofd >= 0 && cfd >= 0) {
        char line[64];
        int len = snprintf(line, sizeof line, "%d %d", efd, ofd);
        ok = write(cfd, line, (size_t)len) == len;
    }
    if (ofd >= 0) close(ofd);
    if (cfd >= 0) close(cfd);
    if (ok) {
        s->oom_fd = efd;
        s->sum.oom_watch = 1;
    } else {
        close(efd);
    }
}

int vb_sampler_start(vb_sampler *s, vb_error *err) {
    if (s->started) return vb_error_set(err, "sampler", EALREADY, "sampler already started");
    s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->wake_fd < 0) return vb_error_set(err, "sampler", errno, "eventfd: %s", strerror(errno));
    if (s->version == 1) register_oom_v1(s);
    s->start_ns = vb_now_ns();
    s->sum.wall_start = vb_wall_time();
    if (take_sample(s) != 0)
        return vb_error_set(err, "sampler", ENOENT, "cgroup %s disappeared before the first sample", s->mem_dir);
    int r = pthread_create(&s->thread, NULL, run, s);
    if (r != 0) return vb_error_set(err, "sampler", r, "starting the sampling thread: %s", strerror(r));
    s->started = 1;
    return VB_OK;
}

void vb_sampler_join(vb_sampler *s) {
    if (!s || !s->started || s->joined) return;
    pthread_join(s->thread, NULL);
    s->joined = 1;
}

void vb_sampler_stop(vb_sampler *s) {
    if (!s || !s->started || s->joined) return;
    atomic_store(&s->stop, 1);
    uint64_t one = 1;
    if (write(s->wake_fd, &one, sizeof one) < 0) { /* the eventfd cannot be full here; the flag is set anyway */
    }
    vb_sampler_join(s);
}

void vb_sampler_summary_get(vb_sampler *s, vb_sampler_summary *out) {
    pthread_mutex_lock(&s->lock);
    *out = s->sum;
    pthread_mutex_unlock(&s->lock);
}

const vb_sample *vb_sampler_rows(vb_sampler *s, size_t *n) {
    pthread_mutex_lock(&s->lock);
    *n = s->nrows;
    const vb_sample *rows = s->rows;
    pthread_mutex_unlock(&s->lock);
    return rows;
}

size_t vb_sampler_copy_rows(vb_sampler *s, size_t from, vb_sample *out, size_t cap) {
    pthread_mutex_lock(&s->lock);
    size_t n = 0;
    for (size_t i = from; i < s->nrows && n < cap; i++) out[n++] = s->rows[i];
    pthread_mutex_unlock(&s->lock);
    return n;
}

int vb_sampler_oom_kills(vb_sampler *s) {
    pthread_mutex_lock(&s->lock);
    int n = s->sum.oom_kills;
    pthread_mutex_unlock(&s->lock);
    return n;
}

void vb_sampler_destroy(vb_sampler **sp) {
    if (!sp || !*sp) return;
    vb_sampler *s = *sp;
    vb_sampler_stop(s);
    if (s->wake_fd >= 0) close(s->wake_fd);
    if (s->oom_fd >= 0) close(s->oom_fd);
    pthread_mutex_destroy(&s->lock);
    free(s->rows);
    free(s);
    *sp = NULL;
}
