/* Test driver for orchestrator/units and orchestrator/sampler: a small systemctl over the C module, so the
 * end-to-end tests (tests/e2e/50-systemd-units.t) exercise exactly the code the orchestrator runs.
 *
 *   vb_unitctl [--bus ADDR] [--journal DIR] COMMAND ...
 *     start NAME [spec options] [--sample SECONDS [--rows]] -- ARGV...
 *         starts a transient unit and prints its state; with --sample, samples it until it ends or SECONDS
 *         pass, then prints the samples' summary and the final state with OOM kills applied
 *     state NAME                 ActiveState, SubState, Result, MainPID, ControlGroup as key=value lines
 *     prop NAME PROPERTY [u64|string|cpus]
 *     stop NAME | reset-failed NAME | kill NAME SIGNAL [all|main]
 *     wait NAME SECONDS          until the unit is inactive or failed; exit 3 on timeout
 *     journal NAME LINES
 *     sample NAME SECONDS [--rows]
 *     ready SERVER PROBE --timeout SECONDS [spec options] -- ARGV...
 *         readiness: runs ARGV as the oneshot unit PROBE until it exits 0; fails at once, with the server's
 *         journal tail, when SERVER stops being active, and after SECONDS with the probe's last words
 *   spec options: --type T --root DIR --bind SRC[:DST] --bind-ro SRC[:DST] --cpus LIST --memory-max SIZE
 *     --shm SIZE --nofile N --user U --group G --image-user NAME (uid/gid from the image, via setpriv)
 *     --env K=V --workdir DIR --kill-mode M --stdout journal|null|file:P|truncate:P --description TEXT --remain
 *   SIZE takes K, M, G suffixes (powers of 1024).
 * Exit status: 0 success, 1 error (message on stderr), 2 usage, 3 timeout. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/image.h"
#include "orchestrator/sampler.h"
#include "orchestrator/units.h"
#include "util/clock.h"

enum { MAX_LIST = 32 };

typedef struct opts {
    vb_unit_spec spec;
    const char *binds[MAX_LIST + 1], *binds_ro[MAX_LIST + 1], *env[MAX_LIST + 1];
    int nbinds, nbinds_ro, nenv;
    double sample_s, timeout_s;
    int rows;
} opts;

static int usage(const char *msg) {
    fprintf(stderr, "vb_unitctl: %s (see the comment at the top of tests/tools/vb_unitctl.c)\n", msg);
    return 2;
}

static int parse_size(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0) return -1;
    switch (*end) {
    case 'K': case 'k': v *= 1024.0; end++; break;
    case 'M': case 'm': v *= 1024.0 * 1024; end++; break;
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end) return -1;
    *out = (uint64_t)v;
    return 0;
}

/* Parses spec options up to "--" (or the end); returns the index after them, or -1 after printing why. */
static int parse_opts(int argc, char **argv, int i, opts *o) {
    vb_unit_spec *s = &o->spec;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) return i + 1;
        if (i + 1 >= argc && strcmp(a, "--remain") != 0 && strcmp(a, "--rows") != 0) {
            fprintf(stderr, "vb_unitctl: option %s needs a value\n", a);
            return -1;
        }
        uint64_t v;
        if (strcmp(a, "--type") == 0) s->type = argv[++i];
        else if (strcmp(a, "--root") == 0) s->root_directory = argv[++i];
        else if (strcmp(a, "--bind") == 0 && o->nbinds < MAX_LIST) o->binds[o->nbinds++] = argv[++i];
        else if (strcmp(a, "--bind-ro") == 0 && o->nbinds_ro < MAX_LIST) o->binds_ro[o->nbinds_ro++] = argv[++i];
        else if (strcmp(a, "--env") == 0 && o->nenv < MAX_LIST) o->env[o->nenv++] = argv[++i];
        else if (strcmp(a, "--cpus") == 0) s->cpus = argv[++i];
        else if (strcmp(a, "--user") == 0) s->user = argv[++i];
        else if (strcmp(a, "--group") == 0) s->group = argv[++i];
        else if (strcmp(a, "--workdir") == 0) s->working_directory = argv[++i];
        else if (strcmp(a, "--kill-mode") == 0) s->kill_mode = argv[++i];
        else if (strcmp(a, "--stdout") == 0) s->standard_output = argv[++i];
        else if (strcmp(a, "--description") == 0) s->description = argv[++i];
        else if (strcmp(a, "--remain") == 0) s->remain_after_exit = 1;
        else if (strcmp(a, "--rows") == 0) o->rows = 1;
        else if (strcmp(a, "--sample") == 0) o->sample_s = atof(argv[++i]);
        else if (strcmp(a, "--timeout") == 0) o->timeout_s = atof(argv[++i]);
        else if (strcmp(a, "--memory-max") == 0 && parse_size(argv[i + 1], &v) == 0) s->memory_max = v, i++;
        else if (strcmp(a, "--shm") == 0 && parse_size(argv[i + 1], &v) == 0) s->shm_bytes = v, i++;
        else if (strcmp(a, "--nofile") == 0 && parse_size(argv[i + 1], &v) == 0) s->limit_nofile = v, i++;
        else if (strcmp(a, "--image-user") == 0) {
            vb_error err = {0};
            if (!s->root_directory) {
                fprintf(stderr, "vb_unitctl: --image-user needs --root first\n");
                return -1;
            }
            if (vb_image_user(s->root_directory, argv[++i], &s->uid, &s->gid, &err) != VB_OK) {
                fprintf(stderr, "vb_unitctl: %s\n", err.message);
                return -1;
            }
            s->drop_privileges = 1;
        } else {
            fprintf(stderr, "vb_unitctl: unknown or bad option %s\n", a);
            return -1;
        }
    }
    return i;
}

static void finish_spec(opts *o, char **argv) {
    o->binds[o->nbinds] = o->binds_ro[o->nbinds_ro] = o->env[o->nenv] = NULL;
    o->spec.bind_paths = o->nbinds ? o->binds : NULL;
    o->spec.bind_ro_paths = o->nbinds_ro ? o->binds_ro : NULL;
    o->spec.environment = o->nenv ? o->env : NULL;
    o->spec.argv = (const char *const *)argv;
}

static int print_state(vb_units *u, const char *name, int oom_kills) {
    vb_unit_state st;
    vb_error err = {0};
    if (vb_unit_state_get(u, name, &st, &err) != VB_OK) {
        fprintf(stderr, "vb_unitctl: %s\n", err.message);
        return 1;
    }
    if (oom_kills >= 0) vb_unit_state_apply_oom(&st, oom_kills);
    printf("loaded=%d\nactive_state=%s\nsub_state=%s\nresult=%s\nsystemd_result=%s\nmain_pid=%d\n"
           "exec_main_code=%d\nexec_main_status=%d\ncontrol_group=%s\n",
           st.loaded, st.active_state, st.sub_state, st.result, st.systemd_result, (int)st.main_pid,
           st.exec_main_code, st.exec_main_status, st.control_group);
    return 0;
}

/* Samples the unit's cgroup until it ends or `seconds` pass; prints the summary (and rows); returns the OOM
 * kills seen, or -1 on error. */
static int sample_unit(vb_units *u, const char *name, double seconds, int rows) {
    vb_unit_state st;
    vb_error err = {0};
    if (vb_unit_state_get(u, name, &st, &err) != VB_OK || !st.control_group[0]) {
        fprintf(stderr, "vb_unitctl: %s has no cgroup to sample%s%s\n", name, err.message[0] ? ": " : "",
                err.message);
        return -1;
    }
    vb_sampler_opts so = {.max_seconds = seconds};
    vb_sampler *s = vb_sampler_new(st.control_group, &so, &err);
    if (!s || vb_sampler_start(s, &err) != VB_OK) {
        fprintf(stderr, "vb_unitctl: sampling %s: %s\n", name, err.message);
        vb_sampler_destroy(&s);
        return -1;
    }
    /* The sampler's own deadline and the cgroup's disappearance end it; the caller thread just joins. */
    vb_sampler_join(s);
    vb_sampler_summary sum;
    vb_sampler_summary_get(s, &sum);
    printf("samples=%zu\npeak_cgroup_bytes=%llu\npeak_cgroup_sampled=%llu\npeak_rss_bytes=%llu\ncpu_usec=%llu\n"
           "cpu_source=%s\noom_kills=%d\noom_watch=%d\ncgroup_version=%d\nended=%d\n",
           sum.samples, (unsigned long long)sum.peak_cgroup_bytes, (unsigned long long)sum.peak_cgroup_sampled,
           (unsigned long long)sum.peak_rss_bytes, (unsigned long long)sum.cpu_usec, sum.cpu_source, sum.oom_kills,
           sum.oom_watch,
           sum.cgroup_version, sum.ended);
    if (rows) {
        size_t n;
        const vb_sample *r = vb_sampler_rows(s, &n);
        for (size_t i = 0; i < n; i++)
            printf("row t=%.3f cgroup=%llu rss=%llu cpu_usec=%llu procs=%d\n", r[i].t_s,
                   (unsigned long long)r[i].cgroup_bytes, (unsigned long long)r[i].rss_bytes,
                   (unsigned long long)r[i].cpu_usec, r[i].nprocs);
    }
    int oom = sum.oom_kills;
    vb_sampler_destroy(&s);
    return oom;
}

static void print_tail(vb_units *u, const char *name, int lines, const char *prefix) {
    char *tail = NULL;
    vb_error err = {0};
    if (vb_unit_journal_tail(u, name, lines, &tail, &err) != VB_OK) {
        fprintf(stderr, "%s(no journal: %s)\n", prefix, err.message);
        return;
    }
    for (char *line = strtok(tail, "\n"); line; line = strtok(NULL, "\n")) fprintf(stderr, "%s%s\n", prefix, line);
    free(tail);
}

/* Readiness: the probe as a oneshot unit until it succeeds, the server dies, or the deadline passes. The pause
 * between attempts is a wait on the server's state changes, so a dying server ends it at once. */
static int ready(vb_units *u, const char *server, const char *probe, opts *o) {
    double timeout = o->timeout_s > 0 ? o->timeout_s : 60;
    uint64_t start = vb_now_ns(), deadline = start + (uint64_t)(timeout * 1e9);
    o->spec.type = "oneshot";
    int attempts = 0;
    for (;;) {
        vb_error err = {0};
        attempts++;
        vb_unit_reset_failed(u, probe, &err);
        if (vb_unit_start(u, probe, &o->spec, &err) == VB_OK) {
            printf("ready_after_s=%.3f\nattempts=%d\n", (double)(vb_now_ns() - start) / 1e9, attempts);
            return 0;
        }
        vb_unit_state st;
        if (vb_unit_state_get(u, server, &st, &err) != VB_OK || strcmp(st.active_state, "active") != 0) {
            fprintf(stderr, "vb_unitctl: %s is not ready: the server unit is %s (Result=%s); its journal:\n",
                    server, st.active_state, st.result);
            print_tail(u, server, 15, "  ");
            return 1;
        }
        if (vb_now_ns() >= deadline) {
            fprintf(stderr, "vb_unitctl: %s did not answer the probe within %.0f s (%d attempts); the probe said:\n",
                    server, timeout, attempts);
            print_tail(u, probe, 3, "  ");
            return 3;
        }
        vb_unit_wait_inactive(u, server, 200000, &err);
    }
}

int main(int argc, char **argv) {
    vb_units_opts uo = {0};
    int i = 1;
    for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (strcmp(argv[i], "--bus") == 0) uo.bus_address = argv[i + 1];
        else if (strcmp(argv[i], "--journal") == 0) uo.journal_dir = argv[i + 1];
        else return usage("unknown global option");
    }
    if (i + 1 >= argc) return usage("expected COMMAND NAME");
    const char *cmd = argv[i], *name = argv[i + 1];
    i += 2;
    vb_error err = {0};
    vb_units *u = vb_units_open(&uo, &err);
    if (!u) {
        fprintf(stderr, "vb_unitctl: %s\n", err.message);
        return 1;
    }
    int rc = 0;
    opts o;
    memset(&o, 0, sizeof o);
    if (strcmp(cmd, "start") == 0) {
        int k = parse_opts(argc, argv, i, &o);
        if (k < 0 || k >= argc) {
            rc = usage("start needs options, then -- ARGV");
        } else {
            finish_spec(&o, argv + k);
            if (vb_unit_start(u, name, &o.spec, &err) != VB_OK) {
                fprintf(stderr, "vb_unitctl: %s\n", err.message);
                rc = 1;
            } else if (o.sample_s > 0) {
                int oom = sample_unit(u, name, o.sample_s, o.rows);
                /* The sampler saw the cgroup go; the unit's state change may still be on the wire. */
                if (oom >= 0) vb_unit_wait_inactive(u, name, 5000000, &err);
                rc = oom < 0 ? 1 : print_state(u, name, oom);
            } else {
                rc = print_state(u, name, -1);
            }
        }
    } else if (strcmp(cmd, "ready") == 0) {
        if (i >= argc) {
            rc = usage("ready SERVER PROBE [options] -- ARGV");
        } else {
            const char *probe = argv[i++];
            int k = parse_opts(argc, argv, i, &o);
            if (k < 0 || k >= argc) rc = usage("ready needs -- ARGV");
            else {
                finish_spec(&o, argv + k);
                rc = ready(u, name, probe, &o);
            }
        }
    } else if (strcmp(cmd, "state") == 0) {
        rc = print_state(u, name, -1);
    } else if (strcmp(cmd, "prop") == 0 && i < argc) {
        const char *kind = i + 1 < argc ? argv[i + 1] : "string";
        char buf[4096];
        uint64_t v;
        int r = strcmp(kind, "u64") == 0    ? vb_unit_property_u64(u, name, argv[i], &v, &err)
                : strcmp(kind, "cpus") == 0 ? vb_unit_property_cpus(u, name, argv[i], buf, sizeof buf, &err)
                                            : vb_unit_property_string(u, name, argv[i], buf, sizeof buf, &err);
        if (r != VB_OK) {
            fprintf(stderr, "vb_unitctl: %s\n", err.message);
            rc = 1;
        } else if (strcmp(kind, "u64") == 0) {
            printf("%llu\n", (unsigned long long)v);
        } else {
            printf("%s\n", buf);
        }
    } else if (strcmp(cmd, "stop") == 0 || strcmp(cmd, "reset-failed") == 0 || strcmp(cmd, "kill") == 0) {
        int r = strcmp(cmd, "stop") == 0           ? vb_unit_stop(u, name, &err)
                : strcmp(cmd, "reset-failed") == 0 ? vb_unit_reset_failed(u, name, &err)
                : i < argc ? vb_unit_kill(u, name, i + 1 < argc ? argv[i + 1] : "all", atoi(argv[i]), &err)
                           : vb_error_set(&err, "usage", 2, "kill NAME SIGNAL [all|main]");
        if (r != VB_OK) {
            fprintf(stderr, "vb_unitctl: %s\n", err.message);
            rc = 1;
        }
    } else if (strcmp(cmd, "wait") == 0 && i < argc) {
        int r = vb_unit_wait_inactive(u, name, (uint64_t)(atof(argv[i]) * 1e6), &err);
        if (r != VB_OK) {
            fprintf(stderr, "vb_unitctl: %s\n", err.message);
            rc = r == VB_RETRY ? 3 : 1;
        }
    } else if (strcmp(cmd, "journal") == 0 && i < argc) {
        char *tail = NULL;
        if (vb_unit_journal_tail(u, name, atoi(argv[i]), &tail, &err) != VB_OK) {
            fprintf(stderr, "vb_unitctl: %s\n", err.message);
            rc = 1;
        } else {
            fputs(tail, stdout);
            free(tail);
        }
    } else if (strcmp(cmd, "sample") == 0 && i < argc) {
        rc = sample_unit(u, name, atof(argv[i]), i + 1 < argc && strcmp(argv[i + 1], "--rows") == 0) < 0;
    } else {
        rc = usage("unknown command or missing arguments");
    }
    vb_units_close(&u);
    return rc;
}
