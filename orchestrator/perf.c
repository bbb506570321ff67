/* CPU profiles with Linux perf (see orchestrator/perf.h): the recording process, the slice, the folding parser. */
#include "orchestrator/perf.h"

#include <errno.h>
#include <linux/capability.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HASH_SLOTS 65536u              /* > 2 x VB_PERF_MAX_STACKS: the open-addressing table never fills */
#define SCRIPT_MAX_BYTES (256u << 20)  /* perf script text read at most */

/* ---- folding ------------------------------------------------------------------------------------------------ */

typedef struct folder {
    vb_perf_profile *p;
    uint32_t *slots;                   /* index + 1 into p->stacks, 0 empty */
    char comm[VB_PERF_MAX_SYMBOL + 1];
    char frames[VB_PERF_MAX_FRAMES][VB_PERF_MAX_SYMBOL + 1];   /* innermost first */
    int n_frames, in_sample;
} folder;

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Copies at most VB_PERF_MAX_SYMBOL bytes of [s, s+n) into out; ';' (the folded format's separator) and control
 * bytes become '_'. */
static void copy_name(char *out, const char *s, size_t n) {
    if (n > VB_PERF_MAX_SYMBOL) n = VB_PERF_MAX_SYMBOL;
    for (size_t i = 0; i < n; i++) out[i] = s[i] == ';' || (unsigned char)s[i] < 0x20 ? '_' : s[i];
    out[n] = '\0';
}

static int add_stack(folder *f, const char *stack, vb_error *err) {
    vb_perf_profile *p = f->p;
    uint32_t h = hash_str(stack) & (HASH_SLOTS - 1);
    while (f->slots[h]) {
        if (strcmp(p->stacks[f->slots[h] - 1], stack) == 0) {
            p->counts[f->slots[h] - 1]++;
            p->samples++;
            return VB_OK;
        }
        h = (h + 1) & (HASH_SLOTS - 1);
    }
    if (p->n_stacks == VB_PERF_MAX_STACKS) {
        p->dropped++;
        return VB_OK;
    }
    if (p->n_stacks == p->cap_stacks) {
        size_t cap = p->cap_stacks ? p->cap_stacks * 2 : 256;
        char **s = realloc(p->stacks, cap * sizeof *s);
        if (s) p->stacks = s;
        uint64_t *c = s ? realloc(p->counts, cap * sizeof *c) : NULL;
        if (!s || !c) return vb_error_set(err, "perf", ENOMEM, "out of memory folding the profile");
        p->counts = c;
        p->cap_stacks = cap;
    }
    if (!(p->stacks[p->n_stacks] = strdup(stack))) return vb_error_set(err, "perf", ENOMEM, "out of memory folding the profile");
    p->counts[p->n_stacks] = 1;
    f->slots[h] = (uint32_t)++p->n_stacks;
    p->samples++;
    return VB_OK;
}

/* The sample read so far as "comm;outermost;...;innermost" (a sample without frames: "comm;[no stack]"). */
static int finish_sample(folder *f, vb_error *err) {
    if (!f->in_sample) return VB_OK;
    f->in_sample = 0;
    char stack[(VB_PERF_MAX_FRAMES + 2) * (VB_PERF_MAX_SYMBOL + 1)];
    size_t o = (size_t)snprintf(stack, sizeof stack, "%s", f->comm);
    if (f->n_frames == 0) o += (size_t)snprintf(stack + o, sizeof stack - o, ";[no stack]");
    for (int i = f->n_frames - 1; i >= 0; i--) o += (size_t)snprintf(stack + o, sizeof stack - o, ";%s", f->frames[i]);
    f->n_frames = 0;
    return add_stack(f, stack, err);
}

static int is_blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return 0;
    return 1;
}

/* "comm tid time:" (comm may hold spaces; tid may be "pid/tid") into comm. 0 when the line is not one. */
static int parse_header(char *comm, const char *s, size_t n) {
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
    if (!n || s[n - 1] != ':') return 0;
    size_t e = n - 1, b = e;   /* the time: digits and one '.' */
    int dots = 0;
    while (b > 0 && ((s[b - 1] >= '0' && s[b - 1] <= '9') || s[b - 1] == '.')) dots += s[--b] == '.';
    if (b == e || dots != 1 || b == 0 || (s[b - 1] != ' ' && s[b - 1] != '\t')) return 0;
    while (b > 0 && (s[b - 1] == ' ' || s[b - 1] == '\t')) b--;
    e = b;                     /* the tid */
    while (b > 0 && ((s[b - 1] >= '0' && s[b - 1] <= '9') || s[b - 1] == '/')) b--;
    if (b == e || b == 0 || (s[b - 1] != ' ' && s[b - 1] != '\t')) return 0;
    while (b > 0 && (s[b - 1] == ' ' || s[b - 1] == '\t')) b--;
    size_t c = 0;              /* the comm: what precedes, leading blanks trimmed */
    while (c < b && (s[c] == ' ' || s[c] == '\t')) c++;
    if (c == b) return 0;
    copy_name(comm, s + c, b - c);
    return 1;
}

/* "\taddr sym (dso)": the symbol is what lies between the address and the last " (" of a line ending in ')'. */
static int parse_frame(folder *f, const char *s, size_t n) {
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
    size_t a = i;
    while (i < n && ((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) i++;
    if (i == a || i == n || s[i] != ' ' || s[n - 1] != ')') return 0;
    while (i < n && s[i] == ' ') i++;
    size_t open = n;
    for (size_t k = n - 1; k > i; k--)
        if (s[k] == '(' && s[k - 1] == ' ') {
            open = k;
            break;
        }
    if (open == n) { /* "addr (dso)": no symbol */
        if (s[i] != '(') return 0;
        open = i;
    }
    size_t sym_end = open - 1;
    while (sym_end > i && s[sym_end - 1] == ' ') sym_end--;
    if (f->n_frames == VB_PERF_MAX_FRAMES) return 1;   /* the outermost frames beyond the cap are dropped */
    char *out = f->frames[f->n_frames++];
    if (sym_end > i && !(sym_end - i == 9 && memcmp(s + i, "[unknown]", 9) == 0)) {
        copy_name(out, s + i, sym_end - i);
        return 1;
    }
    const char *dso = s + open + 1, *dend = s + n - 1;   /* "[basename of the object]" */
    for (const char *q = dso; q < dend; q++)
        if (*q == '/') dso = q + 1;
    size_t dn = dend > dso ? (size_t)(dend - dso) : 0;   /* "addr ()": an empty object name */
    if (dn > VB_PERF_MAX_SYMBOL - 2) dn = VB_PERF_MAX_SYMBOL - 2;
    out[0] = '[';
    copy_name(out + 1, dso, dn);
    snprintf(out + 1 + strlen(out + 1), 2, "]");
    return 1;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const vb_perf_func *)a)->name, ((const vb_perf_func *)b)->name);
}

static int cmp_samples(const void *a, const void *b) {
    const vb_perf_func *x = a, *y = b;
    if (x->samples != y->samples) return x->samples < y->samples ? 1 : -1;
    return strcmp(x->name, y->name);
}

/* The hottest functions: each stack's last frame, summed by name. */
static int compute_top(vb_perf_profile *p, vb_error *err) {
    if (!p->n_stacks) return VB_OK;
    vb_perf_func *all = malloc(p->n_stacks * sizeof *all);
    if (!all) return vb_error_set(err, "perf", ENOMEM, "out of memory folding the profile");
    for (size_t i = 0; i < p->n_stacks; i++) {
        const char *leaf = strrchr(p->stacks[i], ';');
        snprintf(all[i].name, sizeof all[i].name, "%s", leaf ? leaf + 1 : p->stacks[i]);
        all[i].samples = p->counts[i];
    }
    qsort(all, p->n_stacks, sizeof *all, cmp_name);
    size_t m = 0;
    for (size_t i = 0; i < p->n_stacks; i++) {
        if (m && strcmp(all[m - 1].name, all[i].name) == 0) all[m - 1].samples += all[i].samples;
        else all[m++] = all[i];
    }
    qsort(all, m, sizeof *all, cmp_samples);
    p->n_top = m < VB_PERF_TOP ? m : VB_PERF_TOP;
    memcpy(p->top, all, p->n_top * sizeof *all);
    free(all);
    return VB_OK;
}

int vb_perf_fold(const char *text, size_t len, vb_perf_profile *p, vb_error *err) {
    memset(p, 0, sizeof *p);
    folder *f = calloc(1, sizeof *f);
    uint32_t *slots = calloc(HASH_SLOTS, sizeof *slots);
    if (!f || !slots) {
        free(f), free(slots);
        return vb_error_set(err, "perf", ENOMEM, "out of memory folding the profile");
    }
    f->p = p;
    f->slots = slots;
    int rc = VB_OK;
    for (size_t at = 0; at < len && rc == VB_OK;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        const char *s = text + at;
        at += n + (nl != NULL);
        if (n > VB_PERF_MAX_LINE || memchr(s, '\0', n)) {
            p->malformed++;
            continue;
        }
        char comm[sizeof f->comm];
        if (is_blank(s, n)) {
            rc = finish_sample(f, err);
        } else if ((s[0] == ' ' || s[0] == '\t') && f->in_sample && parse_frame(f, s, n)) {
            continue;   /* a frame (a header whose comm perf right-aligned with blanks does not end in ')') */
        } else if (parse_header(comm, s, n)) {
            if ((rc = finish_sample(f, err)) != VB_OK) break;
            memcpy(f->comm, comm, sizeof comm);
            f->in_sample = 1;
            f->n_frames = 0;
        } else {
            p->malformed++;   /* neither: a sample being read goes on without it */
        }
    }
    if (rc == VB_OK) rc = finish_sample(f, err);
    if (rc == VB_OK) rc = compute_top(p, err);
    free(slots);
    free(f);
    if (rc != VB_OK) vb_perf_profile_free(p);
    return rc;
}

static const vb_perf_profile *sort_ctx;
static int cmp_stack_idx(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    if (sort_ctx->counts[x] != sort_ctx->counts[y]) return sort_ctx->counts[x] < sort_ctx->counts[y] ? 1 : -1;
    return strcmp(sort_ctx->stacks[x], sort_ctx->stacks[y]);
}

char *vb_perf_folded_text(const vb_perf_profile *p) {
    size_t total = 1;
    for (size_t i = 0; i < p->n_stacks; i++) total += strlen(p->stacks[i]) + 24;
    char *out = malloc(total);
    size_t *idx = malloc((p->n_stacks ? p->n_stacks : 1) * sizeof *idx);
    if (!out || !idx) return free(out), free(idx), NULL;
    for (size_t i = 0; i < p->n_stacks; i++) idx[i] = i;
    sort_ctx = p;   /* the orchestrator folds on one thread */
    qsort(idx, p->n_stacks, sizeof *idx, cmp_stack_idx);
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < p->n_stacks; i++)
        o += (size_t)snprintf(out + o, total - o, "%s %llu\n", p->stacks[idx[i]], (unsigned long long)p->counts[idx[i]]);
    free(idx);
    return out;
}

void vb_perf_profile_free(vb_perf_profile *p) {
    if (!p) return;
    for (size_t i = 0; i < p->n_stacks; i++) free(p->stacks[i]);
    free(p->stacks);
    free(p->counts);
    memset(p, 0, sizeof *p);
}

/* ---- the perf processes ------------------------------------------------------------------------------------- */

const char *vb_perf_binary(vb_error *err) {
    const char *env = getenv("VBENCH_PERF");
    const char *bin = env && *env ? env : "/usr/bin/perf";
    if (access(bin, X_OK) != 0)
        return vb_error_set(err, "perf", ENOENT, "perf is not installed (%s: %s; Debian package linux-perf)", bin,
                            strerror(errno)), NULL;
    return bin;
}

#define PERF_V1_ROOT "/sys/fs/cgroup/perf_event"

/* The flat perf_event v1 cgroup that stands for a unit's cgroup: PERF_V1_ROOT/vbench-perf-<its last component>. */
static void v1_name(const char *cgroup, char *out, size_t len) {
    const char *base = strrchr(cgroup, '/');
    snprintf(out, len, "vbench-perf-%.200s", base ? base + 1 : cgroup);
}

/* Writes every pid listed in from (a cgroup.procs file) into to (another); returns the count moved. */
static int move_pids(const char *from, const char *to, int *failed) {
    FILE *in = fopen(from, "r");
    if (!in) return -1;
    int moved = 0;
    long pid;
    while (fscanf(in, "%ld", &pid) == 1) {
        FILE *out = fopen(to, "w");
        if (out && fprintf(out, "%ld\n", pid) > 0 && fclose(out) == 0) moved++;
        else *failed += out ? (fclose(out), 1) : 1;
    }
    fclose(in);
    return moved;
}

/* The -G name of cgroup for perf: its path below the hierarchy perf opens. perf takes a perf_event v1 hierarchy
 * when one is mounted, else the cgroup2 one (/sys/fs/cgroup/unified on a hybrid host, /sys/fs/cgroup on a pure v2
 * one). systemd creates no unit cgroup in a perf_event v1 hierarchy, so there a flat one is made for the unit and
 * its processes are moved in (the processes they fork later, a backend per connection, follow their parent);
 * vb_perf_cgroup_release moves them back and removes it. */
static int perf_cgroup_name(const char *cgroup, char *out, size_t len, vb_error *err) {
    const char *rel = cgroup[0] == '/' ? cgroup + 1 : cgroup;
    char probe[4200], dir[4200];
    struct stat st;
    snprintf(out, len, "%s", rel);
    if (stat(PERF_V1_ROOT "/cgroup.procs", &st) == 0) {
        char name[256];
        v1_name(cgroup, name, sizeof name);
        snprintf(dir, sizeof dir, PERF_V1_ROOT "/%s", name);
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return vb_error_set(err, "perf", errno, "cannot create the perf_event cgroup %s: %s", dir, strerror(errno));
        static const char *const from[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd", "/sys/fs/cgroup/memory",
                                           "/sys/fs/cgroup"};
        char to[4300];
        snprintf(to, sizeof to, "%s/cgroup.procs", dir);
        for (size_t i = 0; i < sizeof from / sizeof from[0]; i++) {
            snprintf(probe, sizeof probe, "%.200s/%.3900s/cgroup.procs", from[i], rel);
            int failed = 0, moved = move_pids(probe, to, &failed);
            if (moved < 0) continue;
            if (moved > 0) {
                snprintf(out, len, "%s", name);
                return VB_OK;
            }
            rmdir(dir);
            return vb_error_set(err, "perf", EPERM, "cannot move the unit's processes (%s) into %s (%d refused)", probe,
                                dir, failed);
        }
        rmdir(dir);
        return vb_error_set(err, "perf", ENOENT, "the unit's cgroup %s has no cgroup.procs in any hierarchy", cgroup);
    }
    static const char *const v2[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(probe, sizeof probe, "%s/cgroup.controllers", v2[i]);
        snprintf(dir, sizeof dir, "%s/%s/cgroup.procs", v2[i], rel);
        if (stat(probe, &st) == 0 && stat(dir, &st) == 0) return VB_OK;
    }
    return vb_error_set(err, "perf", ENOENT, "the unit's cgroup %s is in no hierarchy perf can name (perf_event or cgroup2)",
                        cgroup);
}

void vb_perf_cgroup_release(const char *cgroup) {
    if (!cgroup || !cgroup[0]) return;
    char name[256], dir[512], from[600];
    v1_name(cgroup, name, sizeof name);
    snprintf(dir, sizeof dir, PERF_V1_ROOT "/%s", name);
    snprintf(from, sizeof from, "%s/cgroup.procs", dir);
    int failed = 0;
    if (move_pids(from, PERF_V1_ROOT "/cgroup.procs", &failed) < 0) return;   /* none was made */
    rmdir(dir);
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* The last bytes of a file, on one line, into out. */
static void file_tail(const char *path, char *out, size_t len) {
    out[0] = '\0';
    FILE *fp = fopen(path, "r");
    if (!fp) return;
    fseek(fp, 0, SEEK_END);
    long sz = ftell(fp);
    fseek(fp, sz > (long)len - 1 ? sz - (long)len + 1 : 0, SEEK_SET);
    size_t n = fread(out, 1, len - 1, fp);
    out[n] = '\0';
    fclose(fp);
    for (char *q = out; *q; q++)
        if (*q == '\n') *q = ' ';
}

int vb_perf_record_start(const char *cgroup, const char *out_path, pid_t *pid, vb_error *err) {
    *pid = -1;
    const char *bin = vb_perf_binary(err);
    if (!bin) return VB_ERROR;
    char cg[4096], log[4200];
    if (perf_cgroup_name(cgroup, cg, sizeof cg, err) != VB_OK) return VB_ERROR;
    snprintf(log, sizeof log, "%s.log", out_path);
    pid_t p = fork();
    if (p < 0) return vb_error_set(err, "perf", errno, "fork: %s", strerror(errno));
    if (p == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) dup2(nul, 0);
        if (fd >= 0) dup2(fd, 1), dup2(fd, 2);
        /* perf's build-id cache beside the recording, not in $HOME (unset under systemd: it would be /.debug) */
        char cache[4200];
        snprintf(cache, sizeof cache, "%s.buildid", out_path);
        setenv("PERF_BUILDID_DIR", cache, 1);
        setenv("HOME", cache, 1);   /* perf makes $HOME/.debug whatever the variable says */
        setpgid(0, 0);   /* a signal to the agent's group (a test's ^C) does not cut the file short */
        prctl(PR_SET_PDEATHSIG, SIGINT);   /* but an agent that dies (SIGKILL) ends the recording */
        if (getppid() == 1) _exit(127);
        /* -B -N: no build-ids and no build-id cache. perf reads a build-id through the sampled process's mount
         * namespace while it lives; for a backend that has exited it reads the host's file at the same path, another
         * build, and perf script then names that process's frames from the host's copy (CI, 2da3027: __gconv in a
         * kNN scan despite --symfs). Without build-ids perf script reads only --symfs's file: the unit's image. */
        execl(bin, bin, "record", "-q", "-B", "-N", "-e", "cpu-clock", "-F", "99", "-a", "-g", "-k", "CLOCK_REALTIME",
              "-G", cg, "-o", out_path, (char *)NULL);
        _exit(127);
    }
    /* perf refuses at once (perf_event_paranoid without root, an unknown cgroup): wait for it to settle */
    for (int i = 0; i < 10; i++) {
        sleep_ms(50);
        int status;
        if (waitpid(p, &status, WNOHANG) == p) {
            char tail[600];
            file_tail(log, tail, sizeof tail);
            return vb_error_set(err, "perf", EPERM, "perf record exited at once (status %d): %s", status, tail);
        }
    }
    *pid = p;
    return VB_OK;
}

void vb_perf_record_stop(pid_t pid) {
    if (pid <= 0) return;
    kill(pid, SIGINT);
    for (int i = 0; i < 200; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid) return;
        sleep_ms(50);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

int vb_perf_slice(const char *path, const char *symfs, double t0, double t1, vb_perf_profile *p, vb_error *err) {
    memset(p, 0, sizeof *p);
    const char *bin = vb_perf_binary(err);
    if (!bin) return VB_ERROR;
    char range[96];
    snprintf(range, sizeof range, "%.6f,%.6f", t0, t1);
    int fds[2];
    if (pipe(fds) != 0) return vb_error_set(err, "perf", errno, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]), close(fds[1]);
        return vb_error_set(err, "perf", errno, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        int nul = open("/dev/null", O_RDWR);
        dup2(fds[1], 1);
        if (nul >= 0) dup2(nul, 0), dup2(nul, 2);
        close(fds[0]);
        char cache[4200];
        snprintf(cache, sizeof cache, "%s.buildid", path);
        setenv("PERF_BUILDID_DIR", cache, 1);
        setenv("HOME", cache, 1);   /* perf makes $HOME/.debug whatever the variable says */
        /* perf script enters a live process's mount namespace (setns) to read its files, and what --symfs then
         * names depends on that namespace and on which processes still live (CI at fb615a4: a kNN scan's frames
         * named from the host's libc, once). Without CAP_SYS_ADMIN and CAP_SYS_CHROOT it cannot enter: every file
         * is read at --symfs from here, the unit's image, whatever the process and whether it lives. */
        prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0);
        prctl(PR_CAPBSET_DROP, CAP_SYS_CHROOT, 0, 0, 0);
        char sf[4200];
        snprintf(sf, sizeof sf, "--symfs=%s", symfs ? symfs : "");
        if (symfs && *symfs)
            execl(bin, bin, "script", "-i", path, sf, "--kallsyms=/proc/kallsyms", "--time", range, "-F",
                  "comm,tid,time,ip,sym,dso", (char *)NULL);
        else
            execl(bin, bin, "script", "-i", path, "--time", range, "-F", "comm,tid,time,ip,sym,dso", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    ssize_t r = 0;
    while (buf && n < SCRIPT_MAX_BYTES) {
        if (n == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) break;
            buf = b;
        }
        r = read(fds[0], buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
    }
    close(fds[0]);
    if (n >= SCRIPT_MAX_BYTES) kill(pid, SIGKILL);   /* the rest is not read: the profile holds the first part */
    int status = 0;
    waitpid(pid, &status, 0);
    if (!buf) return vb_error_set(err, "perf", ENOMEM, "out of memory reading perf script");
    int rc = VB_OK;
    if (n < SCRIPT_MAX_BYTES && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        rc = vb_error_set(err, "perf", EIO, "perf script -i %s --time %s exited with status %d", path, range, status);
    if (rc == VB_OK) rc = vb_perf_fold(buf, n, p, err);
    free(buf);
    return rc;
}
