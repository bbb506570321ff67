/* Unit tests of orchestrator/sampler on fake cgroup and /proc trees (a temporary directory laid out like
 * /sys/fs/cgroup in v1 and in v2, and like /proc): layout detection, peaks kept apart for the cgroup and RSS,
 * the kernel's own peak, CPU time from cpuacct / cpu.stat and the /proc fallback, OOM counters, the sampler
 * ending by itself when the cgroup goes, the deadline, an immediate stop, the series cap, and errors.
 *
 * No check here depends on how fast the machine is (timing belongs to bench/): the test changes a file, then
 * waits until the sampler has seen the change (wait_for, polling the summary) and stops it, so a loaded host
 * only makes it slower. Files are replaced whole (rename), so the sampler never reads one half written. A
 * stop that waited for the next period, or a sampler that never ended, would hang the test: the alarm below
 * turns that into a failure ("Bail out!") instead. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orchestrator/sampler.h"
#include "tests/tap.h"
#include "util/clock.h"

static char base[64];

/* Writes base/rel whole: a temporary file renamed over it, as the sampler may be reading it right now. */
static void put(const char *rel, const char *text) {
    char path[512], tmp[530], cmd[600];
    snprintf(path, sizeof path, "%s/%s", base, rel);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
    if (system(cmd) != 0) return;
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    fputs(text, f);
    fclose(f);
    rename(tmp, path);
}

/* Waits until the sampler's summary satisfies cond (the sampler has seen a change); 0 if it never does within
 * a minute, which only a broken sampler explains (one sample every 5-20 ms here). */
typedef int (*summary_cond)(const vb_sampler_summary *m, const void *arg);
static int wait_for(vb_sampler *s, summary_cond cond, const void *arg) {
    for (int i = 0; i < 60000; i++) {
        vb_sampler_summary m;
        vb_sampler_summary_get(s, &m);
        if (cond(&m, arg)) return 1;
        vb_sleep_ns(1000000ull);
    }
    return 0;
}
static int seen_v1_change(const vb_sampler_summary *m, const void *arg) {
    (void)arg;
    return m->peak_cgroup_sampled == 3000 && m->cpu_usec == 500000 && m->oom_kills == 1;
}
static int cpu_at_least(const vb_sampler_summary *m, const void *arg) { return m->cpu_usec >= *(const uint64_t *)arg; }
static int samples_at_least(const vb_sampler_summary *m, const void *arg) {
    return m->samples >= *(const size_t *)arg;
}

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "Bail out! test_sampler hung for 5 minutes: a stop or a deadline did not end the "
                              "sampling thread\n";
    if (write(1, msg, sizeof msg - 1) < 0) {
    }
    _exit(1);
}

static void rm_rf(const char *rel) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/%s'", base, rel);
    if (system(cmd) != 0) {
    }
}

static void fake_procs(void) {
    put("proc/10/status", "Name:\tpostgres\nVmPeak:\t 9999 kB\nVmRSS:\t     100 kB\nThreads:\t1\n");
    put("proc/10/stat", "10 (postgres) S 1 10 10 0 -1 4194560 100 0 0 0 100 50 10 5 20 0 1 0 100 1000 25\n");
    put("proc/11/status", "Name:\tpostgres\nVmRSS:\t     200 kB\n");
    put("proc/11/stat", "11 (my (odd) name) S 10 10 10 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 100 1000 25\n");
    put("proc/12/status", "Name:\tkworker\n"); /* no VmRSS: a kernel thread */
    put("proc/12/stat", "12 (kworker) S 2 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n");
    put("proc/13/status", "Name:\tchild\nVmRSS:\t      50 kB\n");
    put("proc/13/stat", "13 (child) S 10 10 10 0 -1 0 0 0 0 0 20 0 0 0 20 0 1 0 100 0 0\n");
}

static vb_sampler *make(const char *cg, uint64_t interval_ms, double max_s, vb_error *err) {
    char root[128], proc[128];
    snprintf(root, sizeof root, "%s/cg", base);
    snprintf(proc, sizeof proc, "%s/proc", base);
    vb_sampler_opts o = {.interval_ms = interval_ms, .max_seconds = max_s, .cgroup_root = root, .proc_root = proc};
    return vb_sampler_new(cg, &o, err);
}

static void test_v1(void) {
    rm_rf("cg");
    fake_procs();
    const char *cg = "/ns/system.slice/pg.service";
    put("cg/memory/ns/system.slice/pg.service/memory.usage_in_bytes", "1000\n");
    put("cg/memory/ns/system.slice/pg.service/memory.max_usage_in_bytes", "5000\n");
    put("cg/memory/ns/system.slice/pg.service/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
    put("cg/memory/ns/system.slice/pg.service/cgroup.procs", "10\n11\n12\n99\n"); /* 99: already gone */
    put("cg/memory/ns/system.slice/pg.service/sub/cgroup.procs", "13\n");
    put("cg/cpuacct/ns/system.slice/pg.service/cpuacct.usage", "1000000000\n");
    vb_error err = {0};
    vb_sampler *s = make(cg, 20, 0, &err);
    ok(s != NULL, "v1: a sampler for a v1 memory + cpuacct layout (%s)", err.message);
    if (!s) return;
    is_int(vb_sampler_start(s, &err), VB_OK, "v1: starts");
    put("cg/memory/ns/system.slice/pg.service/memory.usage_in_bytes", "3000\n");
    put("cg/cpuacct/ns/system.slice/pg.service/cpuacct.usage", "1500000000\n");
    put("cg/memory/ns/system.slice/pg.service/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
    ok(wait_for(s, seen_v1_change, NULL), "v1: a later sample sees the new usage, CPU time and OOM count");
    vb_sampler_stop(s);
    vb_sampler_summary sum;
    vb_sampler_summary_get(s, &sum);
    is_int(sum.cgroup_version, 1, "v1: detected as cgroup v1");
    ok(sum.samples >= 2, "v1: the first sample (at start) and later ones (%zu)", sum.samples);
    is_int(sum.peak_cgroup_sampled, 3000, "v1: the largest sampled usage");
    is_int(sum.peak_cgroup_bytes, 5000, "v1: the kernel's own peak (max_usage_in_bytes) wins when larger");
    is_int(sum.peak_rss_bytes, 350 * 1024, "v1: RSS summed over the cgroup and its sub-cgroups, kernel threads 0");
    is_int(sum.cpu_usec, 500000, "v1: CPU time between the first and last sample from cpuacct.usage");
    is_str(sum.cpu_source, "cgroup", "v1: CPU from the cgroup");
    is_int(sum.oom_kills, 1, "v1: oom_kill counter of memory.oom_control");
    is_int(sum.ended, 0, "v1: the cgroup did not go");
    size_t n;
    const vb_sample *rows = vb_sampler_rows(s, &n);
    is_int(n, sum.samples, "v1: every sample is in the series");
    ok(n > 0 && rows[0].nprocs == 4 && rows[0].rss_bytes == 350 * 1024, "v1: a row has procs and RSS (%d)",
       n ? rows[0].nprocs : -1);
    int ordered = 1;
    for (size_t i = 1; i < n; i++) ordered &= rows[i].t_s > rows[i - 1].t_s;
    ok(ordered, "v1: rows are in time order");
    is_int(vb_sampler_oom_kills(s), 1, "v1: vb_sampler_oom_kills");
    vb_sampler_destroy(&s);
    ok(s == NULL, "destroy nulls the handle");
}

static void test_v1_procfs_cpu(void) {
    rm_rf("cg");
    fake_procs();
    put("cg/memory/u.service/memory.usage_in_bytes", "4096\n");
    put("cg/memory/u.service/cgroup.procs", "10\n11\n");
    put("cg/cpuacct/cgroup.procs", ""); /* a cpuacct hierarchy without the unit's cgroup, as systemd leaves it */
    vb_error err = {0};
    vb_sampler *s = make("/u.service", 20, 0.2, &err);
    if (!s || vb_sampler_start(s, &err) != VB_OK) {
        ok(0, "procfs: starts (%s)", err.message);
        vb_sampler_destroy(&s);
        return;
    }
    /* postgres (pid 10) spent 100 more ticks of user time */
    put("proc/10/stat", "10 (postgres) S 1 10 10 0 -1 4194560 100 0 0 0 200 50 10 5 20 0 1 0 100 1000 25\n");
    long hz = sysconf(_SC_CLK_TCK);
    uint64_t want = (uint64_t)(100 * 1000000 / hz);
    ok(wait_for(s, cpu_at_least, &want), "procfs: a later sample sees the process's new CPU time");
    vb_sampler_stop(s);
    vb_sampler_summary sum;
    vb_sampler_summary_get(s, &sum);
    is_str(sum.cpu_source, "procfs", "procfs: no cpuacct cgroup for the unit: CPU from /proc/PID/stat");
    is_int(sum.cpu_usec, 100 * 1000000 / hz, "procfs: the 100 ticks spent while sampled");
    size_t n;
    const vb_sample *rows = vb_sampler_rows(s, &n);
    ok(n > 0 && rows[0].cpu_usec == (uint64_t)(175 * 1000000 / hz),
       "procfs: utime + stime + cutime + cstime over the processes, odd command names included");
    /* A process leaving without a parent inside to collect it: the CPU time must not go back. */
    vb_sampler_destroy(&s);
    put("proc/10/stat", "10 (postgres) S 1 10 10 0 -1 4194560 100 0 0 0 200 50 10 5 20 0 1 0 100 1000 25\n");
    s = make("/u.service", 20, 0, &err);
    if (s && vb_sampler_start(s, &err) == VB_OK) {
        put("cg/memory/u.service/cgroup.procs", "11\n");
        vb_sampler_summary now;
        vb_sampler_summary_get(s, &now);
        size_t more = now.samples + 2;   /* two samples after the change: at least one without pid 10 */
        ok(wait_for(s, samples_at_least, &more), "procfs: samples go on after the process left");
        vb_sampler_stop(s);
        rows = vb_sampler_rows(s, &n);
        int monotonic = 1;
        for (size_t i = 1; i < n; i++) monotonic &= rows[i].cpu_usec >= rows[i - 1].cpu_usec;
        ok(monotonic, "procfs: CPU time never goes back when a process leaves");
    }
    vb_sampler_destroy(&s);
}

static void test_v2(void) {
    rm_rf("cg");
    fake_procs();
    put("cg/cgroup.controllers", "cpu memory pids\n");
    put("cg/system.slice/m.service/memory.current", "8192\n");
    put("cg/system.slice/m.service/memory.peak", "16384\n");
    put("cg/system.slice/m.service/memory.events", "low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\noom_group_kill 0\n");
    put("cg/system.slice/m.service/cpu.stat", "usage_usec 700\nuser_usec 500\nsystem_usec 200\n");
    put("cg/system.slice/m.service/cgroup.procs", "11\n");
    vb_error err = {0};
    vb_sampler *s = make("/system.slice/m.service", 20, 0.05, &err);
    if (!s || vb_sampler_start(s, &err) != VB_OK) {
        ok(0, "v2: starts (%s)", err.message);
        vb_sampler_destroy(&s);
        return;
    }
    vb_sampler_join(s); /* the deadline ends it: a sampler that ignored it would hang here (the alarm fails it) */
    ok(1, "v2: ends by itself at its deadline (max_seconds)");
    vb_sampler_summary sum;
    vb_sampler_summary_get(s, &sum);
    is_int(sum.cgroup_version, 2, "v2: detected by cgroup.controllers at the root");
    is_int(sum.peak_cgroup_bytes, 16384, "v2: memory.peak");
    is_int(sum.peak_cgroup_sampled, 8192, "v2: memory.current");
    is_int(sum.peak_rss_bytes, 200 * 1024, "v2: RSS");
    is_str(sum.cpu_source, "cgroup", "v2: CPU from cpu.stat");
    is_int(sum.oom_kills, 2, "v2: oom_kill from memory.events");
    is_int(sum.oom_watch, 1, "v2: OOM kills are watched");
    vb_sampler_destroy(&s);
}

static void test_end_stop_cap_errors(void) {
    rm_rf("cg");
    fake_procs();
    put("cg/memory/gone.service/memory.usage_in_bytes", "1\n");
    put("cg/memory/gone.service/cgroup.procs", "10\n");
    vb_error err = {0};
    vb_sampler *s = make("/gone.service", 20, 0, &err);
    if (s && vb_sampler_start(s, &err) == VB_OK) {
        rm_rf("cg/memory/gone.service");
        vb_sampler_join(s); /* no deadline: only the cgroup's disappearance ends it */
        vb_sampler_summary sum;
        vb_sampler_summary_get(s, &sum);
        is_int(sum.ended, 1, "the sampler ends by itself when the cgroup disappears");
    } else {
        ok(0, "gone: starts (%s)", err.message);
    }
    vb_sampler_destroy(&s);

    put("cg/memory/slow.service/memory.usage_in_bytes", "1\n");
    s = make("/slow.service", 3600000, 0, &err); /* one sample per hour: a stop that waited would hang */
    if (s && vb_sampler_start(s, &err) == VB_OK) {
        vb_sampler_stop(s);
        ok(1, "stop wakes the thread at once, not at the next period (an hour away)");
        vb_sampler_summary sum;
        vb_sampler_summary_get(s, &sum);
        is_int(sum.samples, 1, "only the first sample was taken");
        vb_sampler_stop(s);
        ok(1, "a second stop is harmless");
    } else {
        ok(0, "slow: starts (%s)", err.message);
    }
    vb_sampler_destroy(&s);

    char root[128];
    snprintf(root, sizeof root, "%s/cg", base);
    vb_sampler_opts capped = {.interval_ms = 5, .cgroup_root = root, .max_samples = 3};
    s = vb_sampler_new("/slow.service", &capped, &err);
    if (s && vb_sampler_start(s, &err) == VB_OK) {
        size_t five = 5;
        ok(wait_for(s, samples_at_least, &five), "capped: sampling goes on past the cap");
        vb_sampler_stop(s);
        size_t n;
        vb_sampler_rows(s, &n);
        vb_sampler_summary sum;
        vb_sampler_summary_get(s, &sum);
        ok(n == 3 && sum.samples > 3, "the series stops at its cap, the peaks go on (%zu rows, %zu samples)", n,
           sum.samples);
    }
    vb_sampler_destroy(&s);

    s = make("/no/such.service", 20, 0, &err);
    ok(s == NULL, "a cgroup that does not exist: NULL");
    contains(err.message, "/no/such.service", "the error names the cgroup");
    s = make("relative/path", 20, 0, &err);
    ok(s == NULL, "a relative cgroup path is refused");
    rm_rf("cg");
    put("cg/cpu/cgroup.procs", "");
    s = make("/x.service", 20, 0, &err);
    ok(s == NULL, "no memory controller at all: NULL");
    contains(err.message, "no memory controller", "the error says so");
}

int main(void) {
    snprintf(base, sizeof base, "/tmp/vb-sampler-test.%d", (int)getpid());
    mkdir(base, 0700);
    signal(SIGALRM, on_alarm);
    alarm(300);
    test_v1();
    test_v1_procfs_cpu();
    test_v2();
    test_end_stop_cap_errors();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) {
    }
    return done_testing();
}
