/* Transient units over sd-bus: StartTransientUnit with the budget's properties, jobs awaited through the
 * manager's JobRemoved signal, state and properties read back, the journal tail through sd-journal. */
#include "orchestrator/units.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/cpulist.h"

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
#define SD_UNIT "org.freedesktop.systemd1.Unit"
#define SD_SERVICE "org.freedesktop.systemd1.Service"
#define UNIT_PREFIX "/org/freedesktop/systemd1/unit"

enum { JOB_RING = 64, MAX_ARGV = 256, MAX_CPUS = 4096 };

struct vb_units {
    sd_bus *bus;
    sd_bus_slot *job_slot;
    uint64_t timeout_usec;
    char *journal_dir;
    /* The JobRemoved signals seen and not yet claimed, as (job object path, result); the newest overwrites the
     * oldest. A job's signal may arrive before its caller asks for it (sd_bus_call queues it), so it is kept. */
    struct {
        char path[128];
        char result[24];
    } jobs[JOB_RING];
    unsigned njobs;
    int changed; /* set by the PropertiesChanged callback of vb_unit_wait_inactive */
};

/* "x" -> "x.service"; names with a suffix are kept. */
static int unit_name(const char *name, char *out, size_t len, vb_error *err) {
    if (!name || !*name) return vb_error_set(err, "systemd", EINVAL, "empty unit name");
    int n = snprintf(out, len, "%s%s", name, strchr(name, '.') ? "" : ".service");
    if (n < 0 || (size_t)n >= len) return vb_error_set(err, "systemd", EINVAL, "unit name too long: %s", name);
    return VB_OK;
}

/* The D-Bus error (name: message) when there is one, else the errno text. */
static int bus_fail(vb_error *err, const char *what, const char *unit, const sd_bus_error *e, int r) {
    if (e && sd_bus_error_is_set(e))
        return vb_error_set(err, "systemd", r < 0 ? -r : r, "%s %s: %s: %s", what, unit, e->name,
                            e->message ? e->message : "");
    return vb_error_set(err, "systemd", r < 0 ? -r : r, "%s %s: %s", what, unit, strerror(r < 0 ? -r : r));
}

static int is_gone_error(const sd_bus_error *e) {
    return sd_bus_error_has_name(e, "org.freedesktop.systemd1.NoSuchUnit") ||
           sd_bus_error_has_name(e, "org.freedesktop.DBus.Error.UnknownObject");
}

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
    (void)ret_error;
    vb_units *u = userdata;
    uint32_t id;
    const char *path, *unit, *result;
    if (sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0) return 0;
    unsigned i = u->njobs++ % JOB_RING;
    snprintf(u->jobs[i].path, sizeof u->jobs[i].path, "%s", path);
    snprintf(u->jobs[i].result, sizeof u->jobs[i].result, "%s", result);
    return 0;
}

static int on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
    (void)m;
    (void)ret_error;
    ((vb_units *)userdata)->changed = 1;
    return 0;
}

vb_units *vb_units_open(const vb_units_opts *opts, vb_error *err) {
    vb_units *u = calloc(1, sizeof *u);
    if (!u) return vb_error_set(err, "systemd", ENOMEM, "out of memory"), NULL;
    u->timeout_usec = opts && opts->timeout_usec ? opts->timeout_usec : 90ull * 1000000;
    if (opts && opts->journal_dir && !(u->journal_dir = strdup(opts->journal_dir))) {
        free(u);
        return vb_error_set(err, "systemd", ENOMEM, "out of memory"), NULL;
    }
    const char *addr = opts ? opts->bus_address : NULL;
    if (!addr && geteuid() == 0 && access("/run/systemd/private", F_OK) == 0) addr = "unix:path=/run/systemd/private";
    int r;
    if (addr) {
        r = sd_bus_new(&u->bus);
        if (r >= 0) r = sd_bus_set_address(u->bus, addr);
        if (r >= 0) r = sd_bus_start(u->bus);
    } else {
        r = sd_bus_open_system(&u->bus);
    }
    if (r < 0) {
        vb_error_set(err, "systemd", -r, "connecting to the service manager at %s: %s",
                     addr ? addr : "the system bus", strerror(-r));
        vb_units_close(&u);
        return NULL;
    }
    sd_bus_set_method_call_timeout(u->bus, u->timeout_usec);
    /* On a direct connection (the private socket) messages carry no sender, so match without one. */
    r = sd_bus_match_signal(u->bus, &u->job_slot, sd_bus_is_bus_client(u->bus) > 0 ? SD_DEST : NULL, SD_PATH,
                            SD_MANAGER, "JobRemoved", on_job_removed, u);
    if (r < 0) {
        vb_error_set(err, "systemd", -r, "subscribing to JobRemoved: %s", strerror(-r));
        vb_units_close(&u);
        return NULL;
    }
    /* Over the bus the manager sends unit and job signals only to subscribed clients. */
    sd_bus_error e = SD_BUS_ERROR_NULL;
    r = sd_bus_call_method(u->bus, SD_DEST, SD_PATH, SD_MANAGER, "Subscribe", &e, NULL, "");
    if (r < 0 && !sd_bus_error_has_name(&e, "org.freedesktop.systemd1.AlreadySubscribed")) {
        bus_fail(err, "Subscribe", "to the manager", &e, r);
        sd_bus_error_free(&e);
        vb_units_close(&u);
        return NULL;
    }
    sd_bus_error_free(&e);
    return u;
}

void vb_units_close(vb_units **up) {
    if (!up || !*up) return;
    vb_units *u = *up;
    sd_bus_slot_unref(u->job_slot);
    sd_bus_flush_close_unref(u->bus);
    free(u->journal_dir);
    free(u);
    *up = NULL;
}

/* Runs the bus until the JobRemoved signal of `job` arrived (its result copied out) or the deadline passed. */
static int wait_job(vb_units *u, const char *job, const char *what, const char *unit, char *result, size_t len,
                    vb_error *err) {
    uint64_t deadline = vb_now_ns() + u->timeout_usec * 1000;
    for (;;) {
        unsigned n = u->njobs < JOB_RING ? u->njobs : JOB_RING;
        for (unsigned i = 0; i < n; i++) {
            if (strcmp(u->jobs[i].path, job) == 0) {
                snprintf(result, len, "%s", u->jobs[i].result);
                u->jobs[i].path[0] = '\0';
                return VB_OK;
            }
        }
        int r = sd_bus_process(u->bus, NULL);
        if (r < 0) return bus_fail(err, what, unit, NULL, r);
        if (r > 0) continue;
        uint64_t now = vb_now_ns();
        if (now >= deadline)
            return vb_error_set(err, "systemd", ETIMEDOUT, "%s %s: job %s did not finish within %.0f s", what, unit,
                                job, (double)u->timeout_usec / 1e6);
        r = sd_bus_wait(u->bus, (deadline - now) / 1000);
        if (r < 0 && r != -EINTR) return bus_fail(err, what, unit, NULL, r);
    }
}

/* systemd expands $VAR and ${VAR} in ExecStart= arguments when it runs them; "$$" is its literal "$".
 * Doubling every "$" makes argv reach the process exactly as given. Returns a malloc'ed copy. */
static char *escape_dollars(const char *arg) {
    size_t n = strlen(arg), extra = 0;
    for (size_t i = 0; i < n; i++) extra += arg[i] == '$';
    char *out = malloc(n + extra + 1), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (arg[i] == '$') *o++ = '$';
        *o++ = arg[i];
    }
    *o = '\0';
    return out;
}

/* ("ExecStart", [(path, argv, ignore_failure=false)]), with the setpriv prefix when privileges are dropped.
 * argv is passed literally (see escape_dollars). */
static int append_exec(sd_bus_message *m, const char *prop, const char *const *argv, const vb_unit_spec *spec) {
    const char *full[MAX_ARGV + 8];
    char *escaped[MAX_ARGV + 8] = {0};
    char reuid[32], regid[32];
    size_t n = 0;
    if (spec->drop_privileges) {
        snprintf(reuid, sizeof reuid, "--reuid=%u", (unsigned)spec->uid);
        snprintf(regid, sizeof regid, "--regid=%u", (unsigned)spec->gid);
        full[n++] = spec->setpriv ? spec->setpriv : "/usr/bin/setpriv";
        full[n++] = reuid;
        full[n++] = regid;
        full[n++] = "--clear-groups";
        full[n++] = "--";
    }
    int r = 0;
    for (size_t i = 0; argv[i] && r >= 0; i++) {
        if (n >= MAX_ARGV) r = -E2BIG;
        else if (!strchr(argv[i], '$')) full[n++] = argv[i];
        else if (!(escaped[n] = escape_dollars(argv[i]))) r = -ENOMEM;
        else full[n] = escaped[n], n++;
    }
    full[n] = NULL;
    if (r >= 0) r = sd_bus_message_open_container(m, 'r', "sv");
    if (r >= 0) r = sd_bus_message_append(m, "s", prop);
    if (r >= 0) r = sd_bus_message_open_container(m, 'v', "a(sasb)");
    if (r >= 0) r = sd_bus_message_open_container(m, 'a', "(sasb)");
    if (r >= 0) r = sd_bus_message_open_container(m, 'r', "sasb");
    if (r >= 0) r = sd_bus_message_append(m, "s", spec->drop_privileges ? full[0] : argv[0]);
    if (r >= 0) r = sd_bus_message_append_strv(m, (char **)full);
    if (r >= 0) r = sd_bus_message_append(m, "b", 0);
    for (int i = 0; i < 4 && r >= 0; i++) r = sd_bus_message_close_container(m);
    for (size_t i = 0; i < n; i++) free(escaped[i]);
    return r;
}

/* BindPaths= / BindReadOnlyPaths=: "SRC" or "SRC:DST", recursive binds, missing sources are errors. */
static int append_binds(sd_bus_message *m, const char *prop, const char *const *paths) {
    int r = sd_bus_message_open_container(m, 'r', "sv");
    if (r >= 0) r = sd_bus_message_append(m, "s", prop);
    if (r >= 0) r = sd_bus_message_open_container(m, 'v', "a(ssbt)");
    if (r >= 0) r = sd_bus_message_open_container(m, 'a', "(ssbt)");
    for (size_t i = 0; paths[i] && r >= 0; i++) {
        char src[4096];
        snprintf(src, sizeof src, "%s", paths[i]);
        char *colon = strchr(src, ':');
        const char *dst = src;
        if (colon) {
            *colon = '\0';
            dst = colon + 1;
        }
        r = sd_bus_message_append(m, "(ssbt)", src, dst, 0, (uint64_t)MS_REC);
    }
    for (int i = 0; i < 3 && r >= 0; i++) r = sd_bus_message_close_container(m);
    return r;
}

static int append_mask(sd_bus_message *m, const char *prop, const uint8_t *mask, size_t n) {
    int r = sd_bus_message_open_container(m, 'r', "sv");
    if (r >= 0) r = sd_bus_message_append(m, "s", prop);
    if (r >= 0) r = sd_bus_message_open_container(m, 'v', "ay");
    if (r >= 0) r = sd_bus_message_append_array(m, 'y', mask, n);
    for (int i = 0; i < 2 && r >= 0; i++) r = sd_bus_message_close_container(m);
    return r;
}

static int append_strv(sd_bus_message *m, const char *prop, const char *const *v) {
    int r = sd_bus_message_open_container(m, 'r', "sv");
    if (r >= 0) r = sd_bus_message_append(m, "s", prop);
    if (r >= 0) r = sd_bus_message_open_container(m, 'v', "as");
    if (r >= 0) r = sd_bus_message_append_strv(m, (char **)v);
    for (int i = 0; i < 2 && r >= 0; i++) r = sd_bus_message_close_container(m);
    return r;
}

int vb_units_cpu_mask(const char *cpus, uint8_t *mask, size_t cap, vb_error *err) {
    int list[MAX_CPUS];
    int n = vb_cpulist_parse(cpus, list, MAX_CPUS, err);
    if (n < 0) return -1;
    if (n == 0) return vb_error_set(err, "systemd", EINVAL, "empty CPU list \"%s\"", cpus), -1;
    memset(mask, 0, cap);
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        size_t byte = (size_t)list[i] / 8;
        if (byte >= cap) return vb_error_set(err, "systemd", EINVAL, "CPU %d is beyond the mask", list[i]), -1;
        mask[byte] |= (uint8_t)(1u << (list[i] % 8));
        if (byte + 1 > len) len = byte + 1;
    }
    return (int)len;
}

/* Every property of the spec, as StartTransientUnit's a(sv). Spec errors are filled into err and give -EINVAL. */
static int append_properties(sd_bus_message *m, const vb_unit_spec *s, vb_error *err) {
    int r = sd_bus_message_open_container(m, 'a', "(sv)");
    if (r >= 0 && s->description) r = sd_bus_message_append(m, "(sv)", "Description", "s", s->description);
    if (r >= 0) r = sd_bus_message_append(m, "(sv)", "DefaultDependencies", "b", 0);
    if (r >= 0) r = sd_bus_message_append(m, "(sv)", "Type", "s", s->type ? s->type : "exec");
    if (r >= 0) r = append_exec(m, "ExecStart", s->argv, s);
    if (r >= 0 && s->pre_argv && s->pre_argv[0]) r = append_exec(m, "ExecStartPre", s->pre_argv, s);
    if (r >= 0 && s->root_directory) {
        r = sd_bus_message_append(m, "(sv)", "RootDirectory", "s", s->root_directory);
        if (r >= 0) r = sd_bus_message_append(m, "(sv)", "MountAPIVFS", "b", 1);
    }
    if (r >= 0 && s->bind_paths && s->bind_paths[0]) r = append_binds(m, "BindPaths", s->bind_paths);
    if (r >= 0 && s->bind_ro_paths && s->bind_ro_paths[0]) r = append_binds(m, "BindReadOnlyPaths", s->bind_ro_paths);
    if (r >= 0 && s->cpus) {
        uint8_t mask[MAX_CPUS / 8];
        int n = vb_units_cpu_mask(s->cpus, mask, sizeof mask, err);
        if (n < 0) return -EINVAL;
        r = append_mask(m, "CPUAffinity", mask, (size_t)n);
        if (r >= 0) r = append_mask(m, "AllowedCPUs", mask, (size_t)n);
    }
    /* Accounting on, so the unit gets its own memory and CPU cgroups for the sampler. */
    if (r >= 0) r = sd_bus_message_append(m, "(sv)", "MemoryAccounting", "b", 1);
    if (r >= 0) r = sd_bus_message_append(m, "(sv)", "CPUAccounting", "b", 1);
    if (r >= 0) r = sd_bus_message_append(m, "(sv)", "TasksAccounting", "b", 1);
    if (r >= 0 && s->memory_max) {
        r = sd_bus_message_append(m, "(sv)", "MemoryMax", "t", s->memory_max);
        if (r >= 0) r = sd_bus_message_append(m, "(sv)", "MemorySwapMax", "t", (uint64_t)0);
    }
    if (r >= 0 && s->shm_bytes) {
        char opts[96];
        snprintf(opts, sizeof opts, "size=%llu,mode=1777,nosuid,nodev", (unsigned long long)s->shm_bytes);
        r = sd_bus_message_append(m, "(sv)", "TemporaryFileSystem", "a(ss)", 1, "/dev/shm", opts);
    }
    if (r >= 0 && s->limit_nofile) {
        r = sd_bus_message_append(m, "(sv)", "LimitNOFILE", "t", s->limit_nofile);
        if (r >= 0) r = sd_bus_message_append(m, "(sv)", "LimitNOFILESoft", "t", s->limit_nofile);
    }
    if (r >= 0 && s->user) r = sd_bus_message_append(m, "(sv)", "User", "s", s->user);
    if (r >= 0 && s->group) r = sd_bus_message_append(m, "(sv)", "Group", "s", s->group);
    if (r >= 0 && s->environment && s->environment[0]) r = append_strv(m, "Environment", s->environment);
    if (r >= 0 && s->working_directory)
        r = sd_bus_message_append(m, "(sv)", "WorkingDirectory", "s", s->working_directory);
    if (r >= 0 && s->kill_mode) r = sd_bus_message_append(m, "(sv)", "KillMode", "s", s->kill_mode);
    if (r >= 0 && s->oom_policy) r = sd_bus_message_append(m, "(sv)", "OOMPolicy", "s", s->oom_policy);
    if (r >= 0 && s->kill_signal > 0) r = sd_bus_message_append(m, "(sv)", "KillSignal", "i", s->kill_signal);
    if (r >= 0 && s->timeout_stop_usec)
        r = sd_bus_message_append(m, "(sv)", "TimeoutStopUSec", "t", s->timeout_stop_usec);
    if (r >= 0 && s->remain_after_exit) r = sd_bus_message_append(m, "(sv)", "RemainAfterExit", "b", 1);
    if (r >= 0 && s->standard_output) {
        const char *o = s->standard_output;
        if (strncmp(o, "file:", 5) == 0) r = sd_bus_message_append(m, "(sv)", "StandardOutputFile", "s", o + 5);
        else if (strncmp(o, "append:", 7) == 0)
            r = sd_bus_message_append(m, "(sv)", "StandardOutputFileToAppend", "s", o + 7);
        else if (strncmp(o, "truncate:", 9) == 0)
            r = sd_bus_message_append(m, "(sv)", "StandardOutputFileToTruncate", "s", o + 9);
        else r = sd_bus_message_append(m, "(sv)", "StandardOutput", "s", o);
    }
    if (r >= 0) r = sd_bus_message_close_container(m);
    return r;
}

int vb_unit_start(vb_units *u, const char *name, const vb_unit_spec *spec, vb_error *err) {
    char unit[256];
    if (unit_name(name, unit, sizeof unit, err) != VB_OK) return VB_ERROR;
    if (!spec || !spec->argv || !spec->argv[0])
        return vb_error_set(err, "systemd", EINVAL, "starting %s: no command (argv) given", unit);
    sd_bus_message *m = NULL, *reply = NULL;
    sd_bus_error e = SD_BUS_ERROR_NULL;
    vb_error spec_err = {0};
    int r = sd_bus_message_new_method_call(u->bus, &m, SD_DEST, SD_PATH, SD_MANAGER, "StartTransientUnit");
    if (r >= 0) r = sd_bus_message_append(m, "ss", unit, "fail");
    if (r >= 0) r = append_properties(m, spec, &spec_err);
    if (r >= 0) r = sd_bus_message_append(m, "a(sa(sv))", 0);
    if (r < 0) {
        sd_bus_message_unref(m);
        if (spec_err.message[0]) return vb_error_set(err, "systemd", EINVAL, "starting %s: %s", unit, spec_err.message);
        return bus_fail(err, "building the start request for", unit, NULL, r);
    }
    r = sd_bus_call(u->bus, m, u->timeout_usec, &e, &reply);
    sd_bus_message_unref(m);
    if (r < 0) {
        bus_fail(err, "starting", unit, &e, r);
        sd_bus_error_free(&e);
        return VB_ERROR;
    }
    const char *job_ref;
    char job[128];
    r = sd_bus_message_read(reply, "o", &job_ref);
    if (r >= 0) snprintf(job, sizeof job, "%s", job_ref);
    sd_bus_message_unref(reply);
    if (r < 0) return bus_fail(err, "reading the start job of", unit, NULL, r);
    char result[24];
    if (wait_job(u, job, "starting", unit, result, sizeof result, err) != VB_OK) return VB_ERROR;
    if (strcmp(result, "done") == 0) return VB_OK;
    vb_unit_state st;
    vb_error ignored;
    if (vb_unit_state_get(u, unit, &st, &ignored) == VB_OK && st.loaded)
        return vb_error_set(err, "systemd", EIO, "starting %s: job %s (unit %s/%s, Result=%s, exit %s %d)", unit,
                            result, st.active_state, st.sub_state, st.result,
                            st.exec_main_code == 1 ? "status" : "signal", st.exec_main_status);
    return vb_error_set(err, "systemd", EIO, "starting %s: job %s", unit, result);
}

int vb_unit_stop(vb_units *u, const char *name, vb_error *err) {
    char unit[256];
    if (unit_name(name, unit, sizeof unit, err) != VB_OK) return VB_ERROR;
    sd_bus_message *reply = NULL;
    sd_bus_error e = SD_BUS_ERROR_NULL;
    int r = sd_bus_call_method(u->bus, SD_DEST, SD_PATH, SD_MANAGER, "StopUnit", &e, &reply, "ss", unit, "replace");
    if (r < 0) {
        int gone = is_gone_error(&e);
        if (!gone) bus_fail(err, "stopping", unit, &e, r);
        sd_bus_error_free(&e);
        return gone ? VB_OK : VB_ERROR;
    }
    const char *job_ref;
    char job[128];
    r = sd_bus_message_read(reply, "o", &job_ref);
    if (r >= 0) snprintf(job, sizeof job, "%s", job_ref);
    sd_bus_message_unref(reply);
    if (r < 0) return bus_fail(err, "reading the stop job of", unit, NULL, r);
    char result[24];
    if (wait_job(u, job, "stopping", unit, result, sizeof result, err) != VB_OK) return VB_ERROR;
    if (strcmp(result, "done") != 0)
        return vb_error_set(err, "systemd", EIO, "stopping %s: job %s", unit, result);
    return VB_OK;
}

int vb_unit_kill(vb_units *u, const char *name, const char *who, int signo, vb_error *err) {
    char unit[256];
    if (unit_name(name, unit, sizeof unit, err) != VB_OK) return VB_ERROR;
    sd_bus_error e = SD_BUS_ERROR_NULL;
    int r = sd_bus_call_method(u->bus, SD_DEST, SD_PATH, SD_MANAGER, "KillUnit", &e, NULL, "ssi", unit,
                               who ? who : "all", (int32_t)signo);
    if (r < 0) {
        bus_fail(err, "killing", unit, &e, r);
        sd_bus_error_free(&e);
        return VB_ERROR;
    }
    return VB_OK;
}

int vb_unit_reset_failed(vb_units *u, const char *name, vb_error *err) {
    char unit[256];
    if (unit_name(name, unit, sizeof unit, err) != VB_OK) return VB_ERROR;
    sd_bus_error e = SD_BUS_ERROR_NULL;
    int r = sd_bus_call_method(u->bus, SD_DEST, SD_PATH, SD_MANAGER, "ResetFailedUnit", &e, NULL, "s", unit);
    if (r < 0) {
        bus_fail(err, "resetting", unit, &e, r);
        sd_bus_error_free(&e);
        return VB_ERROR;
    }
    return VB_OK;
}

/* The unit's object path if systemd has it loaded: 1, 0 when it does not know the unit, -1 on error. */
static int unit_path(vb_units *u, const char *unit, char **path, vb_error *err) {
    sd_bus_message *reply = NULL;
    sd_bus_error e = SD_BUS_ERROR_NULL;
    int r = sd_bus_call_method(u->bus, SD_DEST, SD_PATH, SD_MANAGER, "GetUnit", &e, &reply, "s", unit);
    if (r < 0) {
        int gone = is_gone_error(&e);
        if (!gone) bus_fail(err, "looking up", unit, &e, r);
        sd_bus_error_free(&e);
        return gone ? 0 : -1;
    }
    const char *p;
    r = sd_bus_message_read(reply, "o", &p);
    if (r >= 0 && !(*path = strdup(p))) r = -ENOMEM;
    sd_bus_message_unref(reply);
    if (r < 0) return bus_fail(err, "looking up", unit, NULL, r), -1;
    return 1;
}

static int get_string(vb_units *u, const char *path, const char *iface, const char *prop, char *out, size_t len,
                      sd_bus_error *e) {
    char *v = NULL;
    int r = sd_bus_get_property_string(u->bus, SD_DEST, path, iface, prop, e, &v);
    if (r >= 0) snprintf(out, len, "%s", v);
    free(v);
    return r;
}

int vb_unit_state_get(vb_units *u, const char *name, vb_unit_state *st, vb_error *err) {
    char unit[256];
    memset(st, 0, sizeof *st);
    snprintf(st->active_state, sizeof st->active_state, "inactive");
    if (unit_name(name, unit, sizeof unit, err) != VB_OK) return VB_ERROR;
    char *path = NULL;
    int found = unit_path(u, unit, &path, err);
    if (found <= 0) return found < 0 ? VB_ERROR : VB_OK;
    sd_bus_error e = SD_BUS_ERROR_NULL;
    uint32_t pid = 0;
    int32_t code = 0, status = 0;
    int r = get_string(u, path, SD_UNIT, "ActiveState", st->active_state, sizeof st->active_state, &e);
    if (r >= 0) r = get_string(u, path, SD_UNIT, "SubState", st->sub_state, sizeof st->sub_state, &e);
    if (r >= 0) r = get_string(u, path, SD_SERVICE, "Result", st->result, sizeof st->result, &e);
    if (r >= 0) r = sd_bus_get_property_trivial(u->bus, SD_DEST, path, SD_SERVICE, "MainPID", &e, 'u', &pid);
    if (r >= 0) r = sd_bus_get_property_trivial(u->bus, SD_DEST, path, SD_SERVICE, "ExecMainCode", &e, 'i', &code);
    if (r >= 0) r = sd_bus_get_property_trivial(u->bus, SD_DEST, path, SD_SERVICE, "ExecMainStatus", &e, 'i', &status);
    if (r >= 0) r = get_string(u, path, SD_SERVICE, "ControlGroup", st->control_group, sizeof st->control_group, &e);
    free(path);
    if (r < 0) {
        int gone = is_gone_error(&e); /* collected between GetUnit and the reads */
        if (!gone) bus_fail(err, "reading the state of", unit, &e, r);
        sd_bus_error_free(&e);
        if (gone) {
            memset(st, 0, sizeof *st);
            snprintf(st->active_state, sizeof st->active_state, "inactive");
            return VB_OK;
        }
        return VB_ERROR;
    }
    st->loaded = 1;
    st->main_pid = (pid_t)pid;
    st->exec_main_code = code;
    st->exec_main_status = status;
    snprintf(st->systemd_result, sizeof st->systemd_result, "%s", st->result);
    return VB_OK;
}

int vb_unit_state_apply_oom(vb_unit_state *st, int oom_kills) {
    if (strcmp(st->result, "oom-kill") == 0) return 1;
    if (oom_kills > 0 && strcmp(st->result, "signal") == 0 && st->exec_main_status == SIGKILL) {
        snprintf(st->systemd_result, sizeof st->systemd_result, "%s", st->result);
        snprintf(st->result, sizeof st->result, "oom-kill");
        return 1;
    }
    return 0;
}

static int state_is_final(const vb_unit_state *st) {
    return !st->loaded || strcmp(st->active_state, "inactive") == 0 || strcmp(st->active_state, "failed") == 0;
}

int vb_unit_wait_inactive(vb_units *u, const char *name, uint64_t timeout_usec, vb_error *err) {
    char unit[256];
    if (unit_name(name, unit, sizeof unit, err) != VB_OK) return VB_ERROR;
    char *path = NULL;
    int r = sd_bus_path_encode(UNIT_PREFIX, unit, &path);
    if (r < 0) return bus_fail(err, "waiting for", unit, NULL, r);
    sd_bus_slot *slot = NULL;
    /* The match goes in before the first look at the state, so no change can slip between the two. */
    r = sd_bus_match_signal(u->bus, &slot, sd_bus_is_bus_client(u->bus) > 0 ? SD_DEST : NULL, path,
                            "org.freedesktop.DBus.Properties", "PropertiesChanged", on_properties_changed, u);
    free(path);
    if (r < 0) return bus_fail(err, "waiting for", unit, NULL, r);
    uint64_t deadline = vb_now_ns() + timeout_usec * 1000;
    int rc = VB_OK;
    for (;;) {
        vb_unit_state st;
        u->changed = 0;
        if (vb_unit_state_get(u, unit, &st, err) != VB_OK) {
            rc = VB_ERROR;
            break;
        }
        if (state_is_final(&st)) break;
        while (!u->changed) {
            r = sd_bus_process(u->bus, NULL);
            if (r < 0) {
                rc = bus_fail(err, "waiting for", unit, NULL, r);
                break;
            }
            if (r > 0) continue;
            uint64_t now = vb_now_ns();
            if (now >= deadline) break;
            r = sd_bus_wait(u->bus, (deadline - now) / 1000);
            if (r < 0 && r != -EINTR) {
                rc = bus_fail(err, "waiting for", unit, NULL, r);
                break;
            }
        }
        if (rc != VB_OK) break;
        if (!u->changed) {
            vb_error_set(err, "systemd", ETIMEDOUT, "%s is still %s after %.1f s", unit, st.active_state,
                         (double)timeout_usec / 1e6);
            rc = VB_RETRY;
            break;
        }
    }
    sd_bus_slot_unref(slot);
    return rc;
}

/* The object path of a loaded unit (caller frees *path), its full name in unit; "not loaded" is an error. */
static int loaded_unit_path(vb_units *u, const char *name, char *unit, size_t len, char **path, vb_error *err) {
    if (unit_name(name, unit, len, err) != VB_OK) return VB_ERROR;
    int found = unit_path(u, unit, path, err);
    if (found <= 0) return found < 0 ? VB_ERROR : vb_error_set(err, "systemd", ENOENT, "%s is not loaded", unit);
    return VB_OK;
}

/* Fills err for a failed property read and releases the bus error. */
static void property_fail(vb_error *err, const char *property, const char *unit, sd_bus_error *e, int r) {
    char what[160];
    snprintf(what, sizeof what, "reading %s of", property);
    bus_fail(err, what, unit, e, r);
    sd_bus_error_free(e);
}

int vb_unit_property_u64(vb_units *u, const char *name, const char *property, uint64_t *out, vb_error *err) {
    char unit[256], *path = NULL;
    if (loaded_unit_path(u, name, unit, sizeof unit, &path, err) != VB_OK) return VB_ERROR;
    sd_bus_error e = SD_BUS_ERROR_NULL;
    int r = sd_bus_get_property_trivial(u->bus, SD_DEST, path, SD_SERVICE, property, &e, 't', out);
    free(path);
    if (r < 0) {
        property_fail(err, property, unit, &e, r);
        return VB_ERROR;
    }
    return VB_OK;
}

int vb_unit_property_string(vb_units *u, const char *name, const char *property, char *out, size_t len,
                            vb_error *err) {
    char unit[256], *path = NULL;
    if (loaded_unit_path(u, name, unit, sizeof unit, &path, err) != VB_OK) return VB_ERROR;
    sd_bus_error e = SD_BUS_ERROR_NULL;
    int r = get_string(u, path, SD_SERVICE, property, out, len, &e);
    if (r < 0 && sd_bus_error_has_name(&e, "org.freedesktop.DBus.Error.UnknownProperty")) {
        sd_bus_error_free(&e);
        r = get_string(u, path, SD_UNIT, property, out, len, &e);
    }
    free(path);
    if (r < 0) {
        property_fail(err, property, unit, &e, r);
        return VB_ERROR;
    }
    return VB_OK;
}

int vb_unit_property_cpus(vb_units *u, const char *name, const char *property, char *out, size_t len,
                          vb_error *err) {
    char unit[256], *path = NULL;
    if (loaded_unit_path(u, name, unit, sizeof unit, &path, err) != VB_OK) return VB_ERROR;
    sd_bus_error e = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = NULL;
    int r = sd_bus_get_property(u->bus, SD_DEST, path, SD_SERVICE, property, &e, &reply, "ay");
    free(path);
    const uint8_t *mask = NULL;
    size_t n = 0;
    if (r >= 0) r = sd_bus_message_read_array(reply, 'y', (const void **)&mask, &n);
    if (r < 0) {
        property_fail(err, property, unit, &e, r);
        sd_bus_message_unref(reply);
        return VB_ERROR;
    }
    int cpus[MAX_CPUS], k = 0;
    for (size_t i = 0; i < n && k < MAX_CPUS; i++)
        for (int b = 0; b < 8; b++)
            if (mask[i] & (1u << b)) cpus[k++] = (int)(i * 8) + b;
    vb_cpulist_format(cpus, k, out, len);
    sd_bus_message_unref(reply);
    return VB_OK;
}

int vb_unit_journal_tail(vb_units *u, const char *name, int lines, char **out, vb_error *err) {
    char unit[256];
    *out = NULL;
    if (unit_name(name, unit, sizeof unit, err) != VB_OK) return VB_ERROR;
    if (lines <= 0) lines = 1;
    sd_journal *j = NULL;
    int r = u->journal_dir ? sd_journal_open_directory(&j, u->journal_dir, 0)
                           : sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY | SD_JOURNAL_SYSTEM);
    if (r < 0)
        return vb_error_set(err, "systemd", -r, "opening the journal%s%s: %s", u->journal_dir ? " at " : "",
                            u->journal_dir ? u->journal_dir : "", strerror(-r));
    char m1[300], m2[300];
    snprintf(m1, sizeof m1, "_SYSTEMD_UNIT=%s", unit);
    snprintf(m2, sizeof m2, "UNIT=%s", unit);
    r = sd_journal_add_match(j, m1, 0);
    if (r >= 0) r = sd_journal_add_disjunction(j);
    if (r >= 0) r = sd_journal_add_match(j, m2, 0);
    if (r >= 0) r = sd_journal_seek_tail(j);
    char **msgs = calloc((size_t)lines, sizeof *msgs);
    if (!msgs) r = -ENOMEM;
    int n = 0;
    size_t total = 1;
    while (r >= 0 && n < lines && (r = sd_journal_previous(j)) > 0) {
        const void *data;
        size_t len;
        if (sd_journal_get_data(j, "MESSAGE", &data, &len) < 0) continue;
        const char *text = (const char *)data + 8; /* after "MESSAGE=" */
        len -= 8;
        if (!(msgs[n] = strndup(text, len))) {
            r = -ENOMEM;
            break;
        }
        total += strlen(msgs[n]) + 1;
        n++;
    }
    sd_journal_close(j);
    if (r < 0) {
        for (int i = 0; i < n; i++) free(msgs[i]);
        free(msgs);
        return vb_error_set(err, "systemd", -r, "reading the journal of %s: %s", unit, strerror(-r));
    }
    char *buf = malloc(total), *p = buf;
    if (buf) {
        *p = '\0';
        for (int i = n - 1; i >= 0; i--) p += sprintf(p, "%s\n", msgs[i]);
    }
    for (int i = 0; i < n; i++) free(msgs[i]);
    free(msgs);
    if (!buf) return vb_error_set(err, "systemd", ENOMEM, "out of memory");
    *out = buf;
    return VB_OK;
}
