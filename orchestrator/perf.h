/* A CPU profile of a server unit with Linux perf (Debian's linux-perf): a recording of the unit's cgroup for the
 * duration of a concurrency item, then the slice of one window folded into collapsed stacks ("a;b;c N") and its
 * hottest functions (self samples: the frame on top of the stack).
 *
 * Recording: `perf record -e cpu-clock -F 99 -a -g -k CLOCK_REALTIME -G CGROUP -o FILE`, every CPU but only the
 * unit's cgroup (a cgroup event: the processes the unit forks later, a PostgreSQL backend per connection,
 * are in it), timestamps on the wall clock so that the agent's window_start selects the slice. cpu-clock, not
 * cycles: it exists on every host, virtual machines without a PMU included. The slice:
 * `perf script -i FILE --time T0,T1 -F comm,tid,time,ip,sym,dso`, read through a pipe and folded here
 * (vb_perf_fold), bounded: the parser reads bytes of another tool, so every length and count has a cap and a
 * line it does not understand is counted, never trusted. */
#ifndef VB_ORCHESTRATOR_PERF_H
#define VB_ORCHESTRATOR_PERF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

#define VB_PERF_MAX_FRAMES 128        /* frames kept per stack (the outermost ones beyond it are dropped) */
#define VB_PERF_MAX_SYMBOL 200        /* bytes kept of a symbol name */
#define VB_PERF_MAX_STACKS 20000      /* distinct folded stacks kept; samples of further ones count as dropped */
#define VB_PERF_MAX_LINE 4096         /* longer lines are malformed */
#define VB_PERF_TOP 20                /* hottest functions kept */

typedef struct vb_perf_func {
    char name[VB_PERF_MAX_SYMBOL + 1];
    uint64_t samples;                 /* samples with this function on top of the stack (self) */
} vb_perf_func;

/* A folded profile. Owns stacks (each "comm;outer;...;leaf"), counts and the folded text. */
typedef struct vb_perf_profile {
    uint64_t samples;                 /* samples folded */
    uint64_t malformed;               /* lines that are neither a sample header, a frame nor blank */
    uint64_t dropped;                 /* samples left out: over VB_PERF_MAX_STACKS */
    size_t n_stacks, cap_stacks;
    char **stacks;
    uint64_t *counts;
    size_t n_top;
    vb_perf_func top[VB_PERF_TOP];    /* by self samples, most first */
} vb_perf_profile;

/* Folds `perf script` text (the -F comm,tid,time,ip,sym,dso layout: a header line "comm tid time:" per sample,
 * then one indented frame per line, innermost first, "addr sym (dso)", a blank line after the sample) into p
 * (zeroed first). A frame without a symbol ("[unknown]") is named by its object, "[mariadbd]". Never fails on
 * content; VB_ERROR only when memory runs out. */
int vb_perf_fold(const char *text, size_t len, vb_perf_profile *p, vb_error *err);

/* The folded stacks as text, one "stack count" per line, most samples first; caller frees. */
char *vb_perf_folded_text(const vb_perf_profile *p);

void vb_perf_profile_free(vb_perf_profile *p);

/* The perf binary to run ($VBENCH_PERF, else /usr/bin/perf); NULL with err filled when it is not executable. */
const char *vb_perf_binary(vb_error *err);

/* Starts recording the cgroup (its path relative to the hierarchies' root, as systemd's ControlGroup) into
 * out_path; *pid gets perf's pid. Refused (VB_ERROR, err says why) when perf is missing, when the cgroup is in no
 * hierarchy perf can name (cgroup2 or perf_event), or when perf exits at once (perf_event_paranoid, no root):
 * its own message is the error. */
int vb_perf_record_start(const char *cgroup, const char *out_path, pid_t *pid, vb_error *err);

/* Undoes what vb_perf_record_start did to the cgroup layout: on a perf_event v1 hierarchy, the unit's processes go
 * back to its root and the flat cgroup made for them is removed. Nothing elsewhere. */
void vb_perf_cgroup_release(const char *cgroup);

/* Ends a recording (SIGINT, perf writes its file and exits; SIGKILL after 10 s). */
void vb_perf_record_stop(pid_t pid);

/* Folds the samples of the recording at path between the wall-clock times t0 and t1 (epoch seconds) into p. symfs
 * (may be NULL or ""): the root the unit's files are under (its image), where perf reads their symbols. */
int vb_perf_slice(const char *path, const char *symfs, double t0, double t1, vb_perf_profile *p, vb_error *err);

#endif
