/* Resource sampling of a server unit: every 250 ms (by default) a thread reads the unit's cgroup memory, its
 * CPU time and the summed RSS of its processes, keeps the time series in memory and the peaks apart (the
 * cgroup's memory includes page cache; RSS does not), and counts OOM kills in the cgroup.
 *
 * Both cgroup layouts are read: v2 (memory.current, memory.peak, memory.events, cpu.stat usage_usec) and v1
 * (memory.usage_in_bytes, memory.max_usage_in_bytes, cpuacct.usage; OOM kills through the memory controller's
 * eventfd notification on memory.oom_control, plus its oom_kill counter), as on hosts with a v1/v2 hybrid.
 * CPU time falls back to /proc/PID/stat when the cgroup has no CPU accounting file (see cpu_source).
 *
 * The sampling thread waits on a poll with a deadline, not in sleeps: vb_sampler_stop wakes it at once. It ends
 * by itself when the deadline passes or the cgroup disappears (the unit stopped). */
#ifndef VB_ORCHESTRATOR_SAMPLER_H
#define VB_ORCHESTRATOR_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct vb_sample {
    double t_s;              /* seconds since vb_sampler_start, monotonic clock */
    uint64_t cgroup_bytes;   /* memory charged to the cgroup now (page cache included) */
    uint64_t rss_bytes;      /* sum of VmRSS over the cgroup's processes (its sub-cgroups included); shared
                                memory counts once per process that touched it */
    uint64_t pss_bytes;      /* sum of Pss (smaps_rollup): shared pages split among their users, counted once */
    uint64_t cpu_usec;       /* the cgroup's CPU time so far (user + system) */
    int nprocs;
} vb_sample;

typedef struct vb_sampler_summary {
    size_t samples;
    uint64_t peak_cgroup_bytes;   /* the kernel's own peak (memory.peak / max_usage_in_bytes) or the sampled max */
    uint64_t peak_cgroup_sampled; /* the largest sampled value alone */
    uint64_t peak_rss_bytes;      /* the largest sampled sum of RSS */
    uint64_t peak_pss_bytes;      /* the largest sampled sum of Pss */
    uint64_t cpu_usec;            /* CPU time used between the first and the last sample */
    /* Where CPU time came from: "cgroup" (v2 cpu.stat usage_usec, v1 cpuacct.usage of the unit's own cgroup),
     * or "procfs" (utime + stime + cutime + cstime of the cgroup's processes) when the unit has no cpuacct
     * cgroup: systemd on v1 assumes cpu and cpuacct are mounted together and creates the unit's cgroup only in
     * "cpu", so on hosts that mount them apart there is no per-unit cpuacct.usage. */
    char cpu_source[8];
    int oom_kills;                /* OOM kills seen in the cgroup while it was sampled */
    int oom_watch;                /* 1 when OOM kills are watched (v1 eventfd registered, or v2 memory.events) */
    int cgroup_version;           /* 1 or 2 */
    int ended;                    /* the cgroup disappeared while sampled */
    double wall_start;            /* epoch seconds at vb_sampler_start */
} vb_sampler_summary;

typedef struct vb_sampler_opts {
    uint64_t interval_ms;         /* default 250 */
    double max_seconds;           /* stop by itself after this long; 0: only on stop or when the cgroup goes */
    const char *cgroup_root;      /* default /sys/fs/cgroup (tests point it at a fake tree) */
    const char *proc_root;        /* default /proc */
    size_t max_samples;           /* length cap of the series (default 1 << 20); peaks keep updating past it */
} vb_sampler_opts;

typedef struct vb_sampler vb_sampler;

/* For the cgroup at cgroup_path (systemd's ControlGroup, relative to the hierarchies' root). Finds the layout;
 * NULL with err filled when the cgroup's memory controller directory does not exist. Release with
 * vb_sampler_destroy. */
vb_sampler *vb_sampler_new(const char *cgroup_path, const vb_sampler_opts *opts, vb_error *err);

/* Takes the first sample and registers the OOM watch in the caller's thread, then starts the thread. */
int vb_sampler_start(vb_sampler *s, vb_error *err);

/* Wakes and joins the thread; idempotent. */
void vb_sampler_stop(vb_sampler *s);

/* Waits until the thread ended by itself (deadline, or the cgroup disappeared). */
void vb_sampler_join(vb_sampler *s);

/* The peaks and counts so far; callable while sampling. */
void vb_sampler_summary_get(vb_sampler *s, vb_sampler_summary *out);

/* The series, oldest first; valid until vb_sampler_destroy, and only stable once the thread ended. */
const vb_sample *vb_sampler_rows(vb_sampler *s, size_t *n);

/* Copies up to cap rows starting at index `from` into out while sampling goes on; returns how many. This is
 * how the orchestrator streams the series to the coordinator in batches. */
size_t vb_sampler_copy_rows(vb_sampler *s, size_t from, vb_sample *out, size_t cap);

/* OOM kills seen so far (for vb_unit_state_apply_oom). */
int vb_sampler_oom_kills(vb_sampler *s);

void vb_sampler_destroy(vb_sampler **s);

#endif
