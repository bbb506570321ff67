/* Unit tests of orchestrator/units against a fake service manager: an sd-bus server thread on a unix socket
 * that implements the few Manager methods vbench calls and records what it receives. Checks the properties of
 * StartTransientUnit as systemd would decode them, the wait on JobRemoved (also when the signal overtakes the
 * reply), failed jobs, D-Bus errors, state and property reads; then the CPU mask, the OOM correction and the
 * image helpers. The real manager is exercised by tests/e2e/50-systemd-units.t. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "orchestrator/image.h"
#include "orchestrator/units.h"
#include "tests/tap.h"
#include "util/clock.h"

#define UNIT_PATH "/org/freedesktop/systemd1/unit/vbt_2eservice"

typedef struct fake {
    int listen_fd;
    char sock[108];
    pthread_t thread;
    atomic_int stop;
    /* behaviour */
    char job_result[24];
    int refuse_start;
    int signal_first;
    /* what the last StartTransientUnit carried */
    char unit[64], mode[16];
    char props[64][40];
    int nprops;
    uint64_t memory_max, swap_max, nofile;
    uint8_t cpu_mask[16], allowed_mask[16];
    size_t cpu_mask_len, allowed_mask_len;
    char exec_path[256], exec_argv[12][256];
    int exec_argc;
    char tmpfs_path[64], tmpfs_opts[128];
    int default_deps;
    char bind_src[256], bind_dst[256];
    uint64_t bind_flags;
    char kill_who[16];
    int kill_signal;
    /* the fake unit */
    int loaded;
    char active[24], sub[24], result[24], cgroup[128];
    uint32_t main_pid;
    int32_t code, status;
    uint32_t next_job;
} fake;

static int has_prop(const fake *f, const char *name) {
    for (int i = 0; i < f->nprops; i++)
        if (strcmp(f->props[i], name) == 0) return 1;
    return 0;
}

static void set_state(fake *f, const char *active, const char *sub, const char *result, int code, int status) {
    snprintf(f->active, sizeof f->active, "%s", active);
    snprintf(f->sub, sizeof f->sub, "%s", sub);
    snprintf(f->result, sizeof f->result, "%s", result);
    f->code = code;
    f->status = status;
}

static int emit_job_removed(sd_bus *bus, uint32_t id, const char *job, const char *unit, const char *result) {
    return sd_bus_emit_signal(bus, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager", "JobRemoved",
                              "uoss", id, job, unit, result);
}

static int read_exec(sd_bus_message *m, fake *f) {
    int r = sd_bus_message_enter_container(m, 'a', "(sasb)");
    if (r >= 0) r = sd_bus_message_enter_container(m, 'r', "sasb");
    const char *path;
    char **argv = NULL;
    int ignore;
    if (r >= 0) r = sd_bus_message_read(m, "s", &path);
    if (r >= 0) r = sd_bus_message_read_strv(m, &argv);
    if (r >= 0) r = sd_bus_message_read(m, "b", &ignore);
    if (r >= 0) {
        snprintf(f->exec_path, sizeof f->exec_path, "%s", path);
        f->exec_argc = 0;
        for (char **a = argv; a && *a && f->exec_argc < 12; a++)
            snprintf(f->exec_argv[f->exec_argc++], sizeof f->exec_argv[0], "%s", *a);
    }
    for (char **a = argv; a && *a; a++) free(*a);
    free(argv);
    if (r >= 0) r = sd_bus_message_exit_container(m);
    if (r >= 0) r = sd_bus_message_exit_container(m);
    return r;
}

static int m_start(sd_bus_message *m, void *userdata, sd_bus_error *e) {
    (void)e;
    fake *f = userdata;
    const char *name, *mode;
    int r = sd_bus_message_read(m, "ss", &name, &mode);
    if (r < 0) return r;
    if (f->refuse_start)
        return sd_bus_reply_method_errorf(m, "org.freedesktop.systemd1.UnitExists", "Unit %s already exists.", name);
    snprintf(f->unit, sizeof f->unit, "%s", name);
    snprintf(f->mode, sizeof f->mode, "%s", mode);
    f->nprops = 0;
    r = sd_bus_message_enter_container(m, 'a', "(sv)");
    while (r >= 0 && (r = sd_bus_message_enter_container(m, 'r', "sv")) > 0) {
        const char *p, *contents;
        r = sd_bus_message_read(m, "s", &p);
        if (r < 0) break;
        if (f->nprops < 64) snprintf(f->props[f->nprops++], sizeof f->props[0], "%s", p);
        r = sd_bus_message_peek_type(m, NULL, &contents);
        if (r >= 0) r = sd_bus_message_enter_container(m, 'v', contents);
        if (r < 0) break;
        const void *ptr;
        size_t len;
        if (strcmp(p, "MemoryMax") == 0) r = sd_bus_message_read(m, "t", &f->memory_max);
        else if (strcmp(p, "MemorySwapMax") == 0) r = sd_bus_message_read(m, "t", &f->swap_max);
        else if (strcmp(p, "LimitNOFILE") == 0) r = sd_bus_message_read(m, "t", &f->nofile);
        else if (strcmp(p, "DefaultDependencies") == 0) r = sd_bus_message_read(m, "b", &f->default_deps);
        else if (strcmp(p, "ExecStart") == 0) r = read_exec(m, f);
        else if (strcmp(p, "CPUAffinity") == 0 || strcmp(p, "AllowedCPUs") == 0) {
            r = sd_bus_message_read_array(m, 'y', &ptr, &len);
            int aff = strcmp(p, "CPUAffinity") == 0;
            if (r >= 0 && len <= 16) {
                memcpy(aff ? f->cpu_mask : f->allowed_mask, ptr, len);
                *(aff ? &f->cpu_mask_len : &f->allowed_mask_len) = len;
            }
        } else if (strcmp(p, "TemporaryFileSystem") == 0) {
            const char *tp, *to;
            r = sd_bus_message_enter_container(m, 'a', "(ss)");
            if (r >= 0) r = sd_bus_message_read(m, "(ss)", &tp, &to);
            if (r >= 0) {
                snprintf(f->tmpfs_path, sizeof f->tmpfs_path, "%s", tp);
                snprintf(f->tmpfs_opts, sizeof f->tmpfs_opts, "%s", to);
                r = sd_bus_message_exit_container(m);
            }
        } else if (strcmp(p, "BindPaths") == 0) {
            const char *src, *dst;
            int ign;
            r = sd_bus_message_enter_container(m, 'a', "(ssbt)");
            if (r >= 0) r = sd_bus_message_read(m, "(ssbt)", &src, &dst, &ign, &f->bind_flags);
            if (r >= 0) {
                snprintf(f->bind_src, sizeof f->bind_src, "%s", src);
                snprintf(f->bind_dst, sizeof f->bind_dst, "%s", dst);
                r = sd_bus_message_exit_container(m);
            }
        } else r = sd_bus_message_skip(m, contents);
        if (r >= 0) r = sd_bus_message_exit_container(m);
        if (r >= 0) r = sd_bus_message_exit_container(m);
    }
    if (r < 0) return r;
    r = sd_bus_message_exit_container(m);
    if (r >= 0) r = sd_bus_message_skip(m, "a(sa(sv))");
    if (r < 0) return r;

    uint32_t id = ++f->next_job;
    char job[64];
    snprintf(job, sizeof job, "/org/freedesktop/systemd1/job/%u", id);
    f->loaded = 1;
    if (strcmp(f->job_result, "done") == 0) set_state(f, "active", "running", "success", 0, 0);
    else set_state(f, "failed", "failed", "exit-code", 1, 203);
    sd_bus *bus = sd_bus_message_get_bus(m);
    if (f->signal_first) emit_job_removed(bus, id, job, name, f->job_result);
    r = sd_bus_reply_method_return(m, "o", job);
    if (!f->signal_first) emit_job_removed(bus, id, job, name, f->job_result);
    return r;
}

static int m_stop(sd_bus_message *m, void *userdata, sd_bus_error *e) {
    (void)e;
    fake *f = userdata;
    const char *name, *mode;
    int r = sd_bus_message_read(m, "ss", &name, &mode);
    if (r < 0) return r;
    if (!f->loaded || strcmp(name, "vbt.service") != 0)
        return sd_bus_reply_method_errorf(m, "org.freedesktop.systemd1.NoSuchUnit", "Unit %s not loaded.", name);
    uint32_t id = ++f->next_job;
    char job[64];
    snprintf(job, sizeof job, "/org/freedesktop/systemd1/job/%u", id);
    f->loaded = 0;
    r = sd_bus_reply_method_return(m, "o", job);
    emit_job_removed(sd_bus_message_get_bus(m), id, job, name, "done");
    return r;
}

static int m_get_unit(sd_bus_message *m, void *userdata, sd_bus_error *e) {
    (void)e;
    fake *f = userdata;
    const char *name;
    int r = sd_bus_message_read(m, "s", &name);
    if (r < 0) return r;
    if (!f->loaded || strcmp(name, "vbt.service") != 0)
        return sd_bus_reply_method_errorf(m, "org.freedesktop.systemd1.NoSuchUnit", "Unit %s not loaded.", name);
    return sd_bus_reply_method_return(m, "o", UNIT_PATH);
}

static int m_kill(sd_bus_message *m, void *userdata, sd_bus_error *e) {
    (void)e;
    fake *f = userdata;
    const char *name, *who;
    int32_t sig;
    int r = sd_bus_message_read(m, "ssi", &name, &who, &sig);
    if (r < 0) return r;
    snprintf(f->kill_who, sizeof f->kill_who, "%s", who);
    f->kill_signal = sig;
    return sd_bus_reply_method_return(m, "");
}

static int m_reset_failed(sd_bus_message *m, void *userdata, sd_bus_error *e) {
    (void)e;
    ((fake *)userdata)->loaded = 0;
    return sd_bus_reply_method_return(m, "");
}

static int m_subscribe(sd_bus_message *m, void *userdata, sd_bus_error *e) {
    (void)userdata;
    (void)e;
    return sd_bus_reply_method_return(m, "");
}

static int get_prop(sd_bus *bus, const char *path, const char *iface, const char *prop, sd_bus_message *reply,
                    void *userdata, sd_bus_error *e) {
    (void)bus;
    (void)path;
    (void)iface;
    (void)e;
    fake *f = userdata;
    if (strcmp(prop, "ActiveState") == 0) return sd_bus_message_append(reply, "s", f->active);
    if (strcmp(prop, "SubState") == 0) return sd_bus_message_append(reply, "s", f->sub);
    if (strcmp(prop, "Result") == 0) return sd_bus_message_append(reply, "s", f->result);
    if (strcmp(prop, "ControlGroup") == 0) return sd_bus_message_append(reply, "s", f->cgroup);
    if (strcmp(prop, "MainPID") == 0) return sd_bus_message_append(reply, "u", f->main_pid);
    if (strcmp(prop, "ExecMainCode") == 0) return sd_bus_message_append(reply, "i", f->code);
    if (strcmp(prop, "ExecMainStatus") == 0) return sd_bus_message_append(reply, "i", f->status);
    if (strcmp(prop, "MemoryMax") == 0) return sd_bus_message_append(reply, "t", f->memory_max);
    if (strcmp(prop, "CPUAffinity") == 0) return sd_bus_message_append_array(reply, 'y', f->cpu_mask, f->cpu_mask_len);
    return -EINVAL;
}

static const sd_bus_vtable manager_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("Subscribe", "", "", m_subscribe, 0),
    SD_BUS_METHOD("StartTransientUnit", "ssa(sv)a(sa(sv))", "o", m_start, 0),
    SD_BUS_METHOD("StopUnit", "ss", "o", m_stop, 0),
    SD_BUS_METHOD("GetUnit", "s", "o", m_get_unit, 0),
    SD_BUS_METHOD("KillUnit", "ssi", "", m_kill, 0),
    SD_BUS_METHOD("ResetFailedUnit", "s", "", m_reset_failed, 0),
    SD_BUS_VTABLE_END};
static const sd_bus_vtable unit_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("ActiveState", "s", get_prop, 0, 0),
    SD_BUS_PROPERTY("SubState", "s", get_prop, 0, 0),
    SD_BUS_VTABLE_END};
static const sd_bus_vtable service_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("Result", "s", get_prop, 0, 0),
    SD_BUS_PROPERTY("ControlGroup", "s", get_prop, 0, 0),
    SD_BUS_PROPERTY("MainPID", "u", get_prop, 0, 0),
    SD_BUS_PROPERTY("ExecMainCode", "i", get_prop, 0, 0),
    SD_BUS_PROPERTY("ExecMainStatus", "i", get_prop, 0, 0),
    SD_BUS_PROPERTY("MemoryMax", "t", get_prop, 0, 0),
    SD_BUS_PROPERTY("CPUAffinity", "ay", get_prop, 0, 0),
    SD_BUS_VTABLE_END};

/* One client connection, served until it goes away or the test stops the fake. */
static void *serve(void *arg) {
    fake *f = arg;
    int fd = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) return NULL;
    sd_bus *bus = NULL;
    sd_id128_t id;
    sd_id128_randomize(&id);
    int r = sd_bus_new(&bus);
    if (r >= 0) r = sd_bus_set_fd(bus, fd, fd);
    if (r >= 0) r = sd_bus_set_server(bus, 1, id);
    if (r >= 0) r = sd_bus_start(bus);
    if (r >= 0) r = sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                             manager_vtable, f);
    if (r >= 0) r = sd_bus_add_object_vtable(bus, NULL, UNIT_PATH, "org.freedesktop.systemd1.Unit", unit_vtable, f);
    if (r >= 0)
        r = sd_bus_add_object_vtable(bus, NULL, UNIT_PATH, "org.freedesktop.systemd1.Service", service_vtable, f);
    while (r >= 0 && !atomic_load(&f->stop)) {
        r = sd_bus_process(bus, NULL);
        if (r > 0) continue;
        if (r >= 0) r = sd_bus_wait(bus, 50000);
    }
    sd_bus_flush_close_unref(bus);
    return NULL;
}

static void fake_start(fake *f) {
    memset(f, 0, sizeof *f);
    snprintf(f->job_result, sizeof f->job_result, "done");
    snprintf(f->cgroup, sizeof f->cgroup, "/system.slice/vbt.service");
    f->main_pid = 4242;
    snprintf(f->sock, sizeof f->sock, "/tmp/vb-fake-manager.%d", (int)getpid());
    unlink(f->sock);
    f->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", f->sock);
    if (bind(f->listen_fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(f->listen_fd, 4) != 0) {
        perror("fake manager socket");
        exit(1);
    }
    pthread_create(&f->thread, NULL, serve, f);
}

static void fake_stop(fake *f) {
    atomic_store(&f->stop, 1);
    pthread_join(f->thread, NULL);
    close(f->listen_fd);
    unlink(f->sock);
}

static vb_units *connect_fake(fake *f, vb_error *err) {
    char addr[160];
    snprintf(addr, sizeof addr, "unix:path=%s", f->sock);
    vb_units_opts o = {.bus_address = addr, .timeout_usec = 5000000};
    return vb_units_open(&o, err);
}

static void test_start_and_properties(void) {
    fake f;
    fake_start(&f);
    vb_error err = {0};
    vb_units *u = connect_fake(&f, &err);
    ok(u != NULL, "connects to a manager at a unix socket address (%s)", err.message);
    if (!u) {
        fake_stop(&f);
        return;
    }
    const char *argv[] = {"/usr/bin/postgres", "-c", "password=pa$$word", "-D", "/var/lib/vbench/data", NULL};
    const char *binds[] = {"/data/pg:/var/lib/vbench", NULL};
    vb_unit_spec spec = {.argv = argv, .root_directory = "/images/db", .bind_paths = binds, .cpus = "0-3,9",
                         .memory_max = 64ull << 20, .shm_bytes = 16ull << 20, .limit_nofile = 4096,
                         .drop_privileges = 1, .uid = 101, .gid = 103};
    is_int(vb_unit_start(u, "vbt", &spec, &err), VB_OK, "start: the job's JobRemoved says done");
    is_str(f.unit, "vbt.service", "a name without a suffix becomes a .service");
    is_str(f.mode, "fail", "job mode fail (never replaces a running job)");
    is_int(f.default_deps, 0, "DefaultDependencies=no");
    ok(has_prop(&f, "RootDirectory") && has_prop(&f, "MountAPIVFS"), "RootDirectory comes with MountAPIVFS");
    is_int(f.memory_max, 64 << 20, "MemoryMax");
    ok(has_prop(&f, "MemorySwapMax") && f.swap_max == 0, "MemorySwapMax=0");
    is_int(f.nofile, 4096, "LimitNOFILE");
    ok(has_prop(&f, "LimitNOFILESoft"), "the soft NOFILE limit too");
    is_int(f.cpu_mask_len, 2, "CPU mask of 0-3,9 is two bytes");
    ok(f.cpu_mask[0] == 0x0f && f.cpu_mask[1] == 0x02, "CPU mask bits (%02x %02x)", f.cpu_mask[0], f.cpu_mask[1]);
    ok(f.allowed_mask_len == 2 && memcmp(f.allowed_mask, f.cpu_mask, 2) == 0, "AllowedCPUs = CPUAffinity");
    is_str(f.tmpfs_path, "/dev/shm", "TemporaryFileSystem on /dev/shm");
    contains(f.tmpfs_opts, "size=16777216", "with the budget's size");
    is_str(f.bind_src, "/data/pg", "BindPaths source");
    is_str(f.bind_dst, "/var/lib/vbench", "BindPaths destination");
    ok(f.bind_flags != 0, "a recursive bind");
    is_str(f.exec_path, "/usr/bin/setpriv", "privileges dropped by the image's setpriv");
    is_str(f.exec_argv[1], "--reuid=101", "to the image user's uid");
    is_str(f.exec_argv[2], "--regid=103", "and gid");
    is_str(f.exec_argv[5], "/usr/bin/postgres", "then the server's argv");
    is_str(f.exec_argv[7], "password=pa$$$$word", "'$' doubled so systemd's variable expansion leaves it alone");
    ok(has_prop(&f, "MemoryAccounting") && has_prop(&f, "CPUAccounting"), "accounting on for the sampler");
    ok(!has_prop(&f, "User"), "no User= when privileges are dropped inside the image");

    vb_unit_state st;
    is_int(vb_unit_state_get(u, "vbt", &st, &err), VB_OK, "state: reads");
    ok(st.loaded && strcmp(st.active_state, "active") == 0 && strcmp(st.sub_state, "running") == 0,
       "state: active/running (%s/%s)", st.active_state, st.sub_state);
    is_int(st.main_pid, 4242, "state: MainPID");
    is_str(st.control_group, "/system.slice/vbt.service", "state: ControlGroup");
    uint64_t mm = 0;
    is_int(vb_unit_property_u64(u, "vbt", "MemoryMax", &mm, &err), VB_OK, "property: MemoryMax reads");
    is_int(mm, 64 << 20, "property: MemoryMax value");
    char cpus[64] = "";
    is_int(vb_unit_property_cpus(u, "vbt", "CPUAffinity", cpus, sizeof cpus, &err), VB_OK, "property: CPUAffinity");
    is_str(cpus, "0-3,9", "property: the mask back as a CPU list");
    ok(vb_unit_property_u64(u, "vbt", "NoSuchProperty", &mm, &err) == VB_ERROR &&
           strstr(err.message, "NoSuchProperty") != NULL,
       "property: an unknown property is an error naming it (%s)", err.message);

    uint64_t t0 = vb_now_ns();
    is_int(vb_unit_wait_inactive(u, "vbt", 100000, &err), VB_RETRY, "wait: an active unit times out with RETRY");
    ok(vb_now_ns() - t0 >= 90000000ull, "wait: after the timeout, not before");

    is_int(vb_unit_kill(u, "vbt", "main", SIGTERM, &err), VB_OK, "kill: KillUnit");
    ok(strcmp(f.kill_who, "main") == 0 && f.kill_signal == SIGTERM, "kill: who and signal arrive");
    is_int(vb_unit_stop(u, "vbt", &err), VB_OK, "stop: job done");
    is_int(vb_unit_state_get(u, "vbt", &st, &err), VB_OK, "state after stop reads");
    ok(!st.loaded && strcmp(st.active_state, "inactive") == 0, "an unknown unit is inactive, not an error");
    is_int(vb_unit_stop(u, "vbt", &err), VB_OK, "stopping a unit systemd does not know is not an error");
    is_int(vb_unit_wait_inactive(u, "vbt", 100000, &err), VB_OK, "wait: an unknown unit is inactive at once");

    /* The JobRemoved signal before the method reply: kept until the caller asks for its job. */
    f.signal_first = 1;
    is_int(vb_unit_start(u, "vbt", &spec, &err), VB_OK, "start: a JobRemoved that overtakes the reply is not lost");
    f.signal_first = 0;
    vb_unit_stop(u, "vbt", &err);

    snprintf(f.job_result, sizeof f.job_result, "failed");
    is_int(vb_unit_start(u, "vbt", &spec, &err), VB_ERROR, "start: a failed job is an error");
    contains(err.message, "job failed", "the error names the job result");
    contains(err.message, "Result=exit-code, exit status 203", "and the unit's Result and status");
    is_int(vb_unit_reset_failed(u, "vbt", &err), VB_OK, "reset-failed");

    f.refuse_start = 1;
    is_int(vb_unit_start(u, "vbt", &spec, &err), VB_ERROR, "start: a refused call is an error");
    contains(err.message, "org.freedesktop.systemd1.UnitExists: Unit vbt.service already exists.",
             "the error carries the D-Bus error name and message");
    is_str(err.domain, "systemd", "in the systemd domain");

    const char *bad_argv[] = {"/bin/true", NULL};
    vb_unit_spec bad = {.argv = bad_argv, .cpus = "3-1"};
    f.refuse_start = 0;
    is_int(vb_unit_start(u, "vbt", &bad, &err), VB_ERROR, "start: a bad CPU list is refused before the call");
    contains(err.message, "3-1", "naming the list");
    vb_unit_spec none = {0};
    is_int(vb_unit_start(u, "vbt", &none, &err), VB_ERROR, "start: no argv is an error");
    is_int(vb_unit_start(u, "", &spec, &err), VB_ERROR, "start: an empty name is an error");

    char dir[] = "/tmp/vb-journal.XXXXXX";
    char *tail = NULL;
    vb_units_close(&u);
    ok(u == NULL, "close nulls the handle");
    fake_stop(&f);

    /* The journal tail over an empty journal directory: no lines, no error. */
    if (mkdtemp(dir)) {
        fake_start(&f);
        char addr[160];
        snprintf(addr, sizeof addr, "unix:path=%s", f.sock);
        vb_units_opts o = {.bus_address = addr, .journal_dir = dir};
        u = vb_units_open(&o, &err);
        ok(u && vb_unit_journal_tail(u, "vbt", 10, &tail, &err) == VB_OK && tail && tail[0] == '\0',
           "journal tail of an empty journal is empty (%s)", err.message);
        free(tail);
        vb_units_close(&u);
        fake_stop(&f);
        rmdir(dir);
    }
}

static void test_open_errors(void) {
    vb_error err = {0};
    vb_units_opts o = {.bus_address = "unix:path=/nonexistent/vb-no-manager"};
    vb_units *u = vb_units_open(&o, &err);
    ok(u == NULL, "no manager at the address: NULL");
    contains(err.message, "/nonexistent/vb-no-manager", "the error names the address");
}

static void test_cpu_mask(void) {
    uint8_t mask[16];
    vb_error err = {0};
    is_int(vb_units_cpu_mask("0", mask, sizeof mask, &err), 1, "mask of 0: one byte");
    is_int(mask[0], 0x01, "mask of 0: bit 0");
    is_int(vb_units_cpu_mask("0-7,8", mask, sizeof mask, &err), 2, "mask of 0-8: two bytes");
    ok(mask[0] == 0xff && mask[1] == 0x01, "mask of 0-8: bits");
    is_int(vb_units_cpu_mask("64", mask, sizeof mask, &err), 9, "mask of 64: nine bytes");
    is_int(mask[8], 0x01, "mask of 64: bit 0 of byte 8");
    is_int(vb_units_cpu_mask("200", mask, sizeof mask, &err), -1, "a CPU beyond the mask's capacity is an error");
    is_int(vb_units_cpu_mask("x", mask, sizeof mask, &err), -1, "a bad list is an error");
    is_int(vb_units_cpu_mask("", mask, sizeof mask, &err), -1, "an empty list is an error");
}

static void test_apply_oom(void) {
    vb_unit_state st = {0};
    snprintf(st.result, sizeof st.result, "signal");
    snprintf(st.systemd_result, sizeof st.systemd_result, "signal");
    st.exec_main_status = SIGKILL;
    is_int(vb_unit_state_apply_oom(&st, 0), 0, "SIGKILL without an OOM kill stays a signal");
    is_str(st.result, "signal", "result unchanged");
    is_int(vb_unit_state_apply_oom(&st, 1), 1, "SIGKILL with an OOM kill in the cgroup is an OOM kill");
    is_str(st.result, "oom-kill", "result rewritten");
    is_str(st.systemd_result, "signal", "systemd's own result kept");
    vb_unit_state term = {0};
    snprintf(term.result, sizeof term.result, "signal");
    term.exec_main_status = SIGTERM;
    is_int(vb_unit_state_apply_oom(&term, 1), 0, "a SIGTERM is not an OOM kill even if the cgroup saw one");
    vb_unit_state v2 = {0};
    snprintf(v2.result, sizeof v2.result, "oom-kill");
    is_int(vb_unit_state_apply_oom(&v2, 0), 1, "systemd's own oom-kill (cgroup v2) is kept");
}

static void test_image(void) {
    char root[] = "/tmp/vb-image.XXXXXX", path[256];
    if (!mkdtemp(root)) return;
    vb_error err = {0};
    is_int(vb_image_check(root, &err), VB_ERROR, "an image without vbench-packages.txt is not finished");
    contains(err.message, "deploy/image-build", "the error says how to build it");
    snprintf(path, sizeof path, "%s/etc", root);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/etc/passwd", root);
    FILE *f = fopen(path, "w");
    fputs("root:x:0:0:root:/root:/bin/bash\nmysql:x:100:101:MariaDB Server:/nonexistent:/bin/false\n"
          "postgres:x:101:103:PostgreSQL administrator:/var/lib/postgresql:/bin/bash\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/vbench-packages.txt", root);
    f = fopen(path, "w");
    fputs("postgresql-17\t17.12-0+deb13u1\npostgresql-17-pgvector\t0.8.0-1\n", f);
    fclose(f);
    uid_t uid = 0;
    gid_t gid = 0;
    is_int(vb_image_user(root, "postgres", &uid, &gid, &err), VB_OK, "the image's postgres user");
    ok(uid == 101 && gid == 103, "uid 101, gid 103 (%u, %u)", (unsigned)uid, (unsigned)gid);
    is_int(vb_image_user(root, "mysq", &uid, &gid, &err), VB_ERROR, "a prefix of a user name is no user");
    contains(err.message, "no user \"mysq\"", "the error names the user");
    char v[64];
    is_int(vb_image_package_version(root, "postgresql-17-pgvector", v, sizeof v, &err), VB_OK, "a package version");
    is_str(v, "0.8.0-1", "pgvector's version");
    is_int(vb_image_package_version(root, "postgresql-17-pgvect", v, sizeof v, &err), VB_ERROR,
           "a prefix of a package name is no package");
    is_int(vb_image_check("/nonexistent/image", &err), VB_ERROR, "a missing image");
    contains(err.message, "does not exist", "is named as missing");
    snprintf(path, sizeof path, "rm -rf '%s'", root);
    if (system(path) != 0) {
    }
}

int main(void) {
    test_cpu_mask();
    test_apply_oom();
    test_image();
    test_open_errors();
    test_start_and_properties();
    return done_testing();
}
