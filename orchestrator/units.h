/* Transient systemd units over sd-bus: how the orchestrator starts a database confined to its budget (pinned
 * CPUs, a memory limit with no swap, a private /dev/shm of a given size, the engine's image as root), stops and
 * kills it, reads its state and the tail of its journal.
 *
 * Every call that creates a job (start, stop) waits for that job's JobRemoved signal on the bus, up to a
 * deadline; nothing here sleeps. Errors are filled into a vb_error with domain "systemd": the D-Bus error name
 * and message when the manager refused (e.g. "org.freedesktop.systemd1.UnitExists: Unit x.service already
 * exists."), or the job's result and the unit's own Result when a job did not succeed.
 *
 * Units are always created with DefaultDependencies=no: a benchmark server needs nothing from sysinit.target,
 * and in the test namespace (deploy/systemd-ns) pulling it in would run the boot-time units. */
#ifndef VB_ORCHESTRATOR_UNITS_H
#define VB_ORCHESTRATOR_UNITS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

typedef struct vb_units vb_units;

typedef struct vb_units_opts {
    /* A direct (peer-to-peer) sd-bus address of the manager, e.g. "unix:path=/run/systemd/private". NULL: that
     * private socket when we are root and it exists, otherwise the system bus through dbus. The manager
     * accepts private-socket peers only from its own PID namespace (it checks SO_PEERCRED), so a client of a
     * systemd in a namespace must run inside it (see deploy/systemd-ns). */
    const char *bus_address;
    /* Journal directory for vb_unit_journal_tail (e.g. the test namespace's /run/log/journal seen through
     * /proc/PID/root). NULL: the local system journal. */
    const char *journal_dir;
    /* How long a method call or a job may take before it is an error; 0: 90 s. */
    uint64_t timeout_usec;
} vb_units_opts;

/* What a unit runs and under which limits. Strings and arrays are borrowed for the call only; NULL or 0
 * means "systemd's default" unless said otherwise. */
typedef struct vb_unit_spec {
    const char *description;
    const char *const *argv;           /* ExecStart; argv[0] is the absolute path (inside root_directory);
                                          passed literally: systemd's $VAR expansion is escaped away */
    const char *const *pre_argv;       /* optional ExecStartPre, e.g. initdb */
    const char *type;                  /* "exec" (default), "simple", "oneshot", "notify", "forking" */
    const char *root_directory;        /* RootDirectory= (the engine's image); MountAPIVFS=yes goes with it */
    const char *const *bind_paths;     /* BindPaths=, "SRC" or "SRC:DST", recursive binds */
    const char *const *bind_ro_paths;  /* BindReadOnlyPaths=, same form */
    const char *cpus;                  /* CPU list "0-63": CPUAffinity= and AllowedCPUs= */
    uint64_t memory_max;               /* bytes; sets MemoryMax= and MemorySwapMax=0. 0: no limit */
    uint64_t shm_bytes;                /* a private /dev/shm (TemporaryFileSystem=) of this size. 0: none */
    uint64_t limit_nofile;             /* LimitNOFILE= (soft and hard) */
    const char *user, *group;          /* User=, Group=: resolved by systemd with the HOST's user database */
    /* drop_privileges != 0: run the commands as uid:gid of the image, for users that exist only inside
     * root_directory. systemd resolves User= with the host's user database before it enters RootDirectory=
     * (a user unknown to the host fails with status 217/USER), so instead each command is prefixed with the
     * image's setpriv (--reuid --regid --clear-groups), which execs in place: MainPID stays the server. */
    int drop_privileges;
    uid_t uid;
    gid_t gid;
    const char *setpriv;               /* path of setpriv inside the root; default /usr/bin/setpriv */
    const char *const *environment;    /* "KEY=VALUE" */
    const char *working_directory;
    const char *kill_mode;             /* "control-group" (systemd's default), "mixed", "process" */
    const char *oom_policy;            /* "stop" (systemd's default for services), "kill", "continue" */
    int kill_signal;                   /* KillSignal= (e.g. SIGINT: PostgreSQL's fast shutdown); 0: SIGTERM */
    /* "journal" (default), "null", "file:PATH" (written from offset 0, not truncated), "append:PATH",
     * "truncate:PATH"; stderr goes to the same place. */
    const char *standard_output;
    uint64_t timeout_stop_usec;        /* TimeoutStopUSec= */
    int remain_after_exit;             /* RemainAfterExit=yes (for oneshot helpers) */
} vb_unit_spec;

/* The state of a service unit as systemd reports it; result is systemd's own Result ("success",
 * "exit-code", "signal", "oom-kill", "timeout", ...), unless vb_unit_state_apply_oom rewrote it. */
typedef struct vb_unit_state {
    int loaded;                        /* 0: systemd does not know the unit (never started, or collected) */
    char active_state[24];             /* "active", "activating", "deactivating", "inactive", "failed" */
    char sub_state[24];                /* "running", "exited", "dead", "failed", ... */
    char result[24];
    char systemd_result[24];           /* what systemd said, kept when result was rewritten */
    pid_t main_pid;                    /* 0 when not running */
    int exec_main_code;                /* CLD_EXITED (1), CLD_KILLED (2), CLD_DUMPED (3) */
    int exec_main_status;              /* exit status, or the signal number */
    char control_group[512];           /* cgroup path relative to the hierarchies' root; empty when gone */
} vb_unit_state;

/* Connects to the manager and subscribes to its signals. Returns NULL with err filled on failure;
 * release with vb_units_close. */
vb_units *vb_units_open(const vb_units_opts *opts, vb_error *err);
void vb_units_close(vb_units **u);

/* Starts NAME (".service" is appended when there is no suffix) as a transient unit and waits for the start
 * job. VB_OK when the job finished with "done" (for Type=exec: the binary was executed; oneshot: it exited
 * 0); otherwise VB_ERROR naming the job result and the unit's Result/ExecMainStatus. */
int vb_unit_start(vb_units *u, const char *name, const vb_unit_spec *spec, vb_error *err);

/* Stops the unit and waits for the stop job. A unit systemd does not know is already stopped: VB_OK. */
int vb_unit_stop(vb_units *u, const char *name, vb_error *err);

/* Sends a signal to the unit's processes; who is "all" (every process of the cgroup) or "main". */
int vb_unit_kill(vb_units *u, const char *name, const char *who, int signo, vb_error *err);

/* Forgets a failed unit's state, so a unit of the same name can be started again. */
int vb_unit_reset_failed(vb_units *u, const char *name, vb_error *err);

/* Reads the state. A unit systemd does not know is reported with loaded = 0 and active_state "inactive". */
int vb_unit_state_get(vb_units *u, const char *name, vb_unit_state *st, vb_error *err);

/* Waits, on PropertiesChanged signals, until the unit is inactive or failed (or unknown), up to timeout_usec.
 * VB_OK then, VB_RETRY when the deadline passed first. */
int vb_unit_wait_inactive(vb_units *u, const char *name, uint64_t timeout_usec, vb_error *err);

/* systemd 252 learns about OOM kills only from cgroup v2's memory.events; on a cgroup v1 memory controller a
 * service killed by its MemoryMax= ends with Result "signal" and SIGKILL. Given the number of OOM kills the
 * sampler saw in the unit's memory cgroup (vb_sampler_oom_kills), this rewrites that case to "oom-kill"
 * (systemd_result keeps "signal"). Returns 1 when the result is "oom-kill" afterwards. */
int vb_unit_state_apply_oom(vb_unit_state *st, int oom_kills);

/* Service properties read back from the manager, as systemd applied them (e.g. "MemoryMax", "LimitNOFILE",
 * "RootDirectory"). vb_unit_property_cpus formats an "ay" CPU mask ("CPUAffinity", "AllowedCPUs") as a
 * CPU list such as "0-3". */
int vb_unit_property_u64(vb_units *u, const char *name, const char *property, uint64_t *out, vb_error *err);
int vb_unit_property_string(vb_units *u, const char *name, const char *property, char *out, size_t len,
                            vb_error *err);
int vb_unit_property_cpus(vb_units *u, const char *name, const char *property, char *out, size_t len,
                          vb_error *err);

/* The last `lines` journal messages of the unit (its own output and the manager's messages about it), oldest
 * first, one per line, in a malloc'ed string the caller frees. An empty journal gives "". */
int vb_unit_journal_tail(vb_units *u, const char *name, int lines, char **out, vb_error *err);

/* The CPU list as the little-endian byte mask systemd's CPUAffinity=/AllowedCPUs= take; returns the length
 * in bytes (<= cap) or -1 with err filled. Exposed for the unit tests. */
int vb_units_cpu_mask(const char *cpus, uint8_t *mask, size_t cap, vb_error *err);

#endif
