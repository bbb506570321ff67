/* The notify command (coordinator/notify.h). */
#include "coordinator/notify.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"

void vb_notify_init(vb_notify *n, const char *cli_command, const vb_profile *p, vb_store *s, const char *out) {
    memset(n, 0, sizeof *n);
    const char *cmd = cli_command && *cli_command ? cli_command : vb_profile_setting(p, "notify.command", "");
    snprintf(n->command, sizeof n->command, "%s", cmd);
    n->agent_lost_s = atof(vb_profile_setting(p, "notify.agent_lost_min", "10")) * 60;
    n->timeout_s = atof(vb_profile_setting(p, "notify.timeout_s", "60"));
    if (n->timeout_s <= 0) n->timeout_s = 60;
    n->out = out;
    n->profile = p;
    n->store = s;
    if (n->command[0] && s) vb_store_manifest_set(s, "notify.command", n->command, NULL);
}

static int count(sqlite3 *db, const char *sql) {
    sqlite3_stmt *q = NULL;
    int v = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW) v = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    return v;
}

static void summary(vb_notify *n, const char *event, const char *extra, char *buf, size_t len) {
    sqlite3 *db = vb_store_db(n->store);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    int total = count(db, "SELECT count(*) FROM plan"), done = count(db, "SELECT count(*) FROM plan WHERE status = 'done'");
    int failed = count(db, "SELECT count(*) FROM plan WHERE status IN ('failed', 'skipped')");
    int expired = count(db, "SELECT count(*) FROM plan WHERE status = 'expired'");
    int elapsed = count(db, "SELECT CAST((julianday('now') - julianday(created_at)) * 86400 AS INTEGER) FROM campaign");
    char last[600] = "none";
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db, "SELECT COALESCE(item_key || ': ', '') || message FROM event WHERE level = 'error'"
                               " ORDER BY id DESC LIMIT 1", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        snprintf(last, sizeof last, "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    snprintf(buf, len,
             "vbench campaign %s on %s: %s after %dh%02dm. %d of %d items done, %d failed or skipped, %d stopped at "
             "their limit. Last error: %s.%s%s Results: %s (vbench status %s; continue with vbench resume --out %s).\n",
             n->profile->name, host, event, elapsed / 3600, elapsed / 60 % 60, done, total, failed, expired, last,
             extra ? " " : "", extra ? extra : "", n->out, n->out, n->out);
}

int vb_notify_send(vb_notify *n, const char *event, const char *extra) {
    if (!n->command[0] || !n->store) return 0;
    char text[4096];
    summary(n, event, extra, text, sizeof text);
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        vb_store_event(n->store, VB_EVENT_NOTIFY, "warn", NULL, "notify", "notify command not run (%s): pipe: %s",
                       event, strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(pipefd[0]), close(pipefd[1]);
        vb_store_event(n->store, VB_EVENT_NOTIFY, "warn", NULL, "notify", "notify command not run (%s): fork: %s",
                       event, strerror(errno));
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);   /* its own group: a timeout kills whatever it started */
        dup2(pipefd[0], 0);
        close(pipefd[0]), close(pipefd[1]);
        setenv("VBENCH_EVENT", event, 1);
        setenv("VBENCH_CAMPAIGN", n->profile->name, 1);
        setenv("VBENCH_RESULTS", n->out, 1);
        signal(SIGPIPE, SIG_DFL);
        execl("/bin/sh", "sh", "-c", n->command, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    close(pipefd[0]);
    /* the summary is small (< pipe buffer): this write does not block on a command that never reads */
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    ssize_t w = write(pipefd[1], text, strlen(text));
    (void)w;
    close(pipefd[1]);
    signal(SIGPIPE, old);
    if (n->n_running == (int)(sizeof n->running / sizeof n->running[0])) vb_notify_finish(n);   /* rare: 8 at once */
    n->running[n->n_running].pid = pid;
    n->running[n->n_running].deadline_ns = vb_now_ns() + (uint64_t)(n->timeout_s * 1e9);
    snprintf(n->running[n->n_running].event, sizeof n->running[0].event, "%s", event);
    n->n_running++;
    return 0;
}

/* Reaps command i if it ended (or kills it when wait and past its deadline); 1 when it is gone. */
static int reap(vb_notify *n, int i, int block) {
    int status = 0;
    for (;;) {
        pid_t r = waitpid(n->running[i].pid, &status, WNOHANG);
        if (r < 0 && errno == EINTR) continue;
        if (r == n->running[i].pid || r < 0) break;
        if (vb_now_ns() > n->running[i].deadline_ns) {
            kill(-n->running[i].pid, SIGKILL);
            waitpid(n->running[i].pid, &status, 0);
            vb_store_event(n->store, VB_EVENT_NOTIFY, "warn", NULL, "notify",
                           "notify command (%s) killed after notify.timeout_s = %.0f s: %s",
                           n->running[i].event, n->timeout_s, n->command);
            goto gone;
        }
        if (!block) return 0;
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        vb_store_event(n->store, VB_EVENT_NOTIFY, "info", NULL, "notify", "notify command ran (%s)",
                       n->running[i].event);
    else
        vb_store_event(n->store, VB_EVENT_NOTIFY, "warn", NULL, "notify", "notify command (%s) failed: %s %d: %s",
                       n->running[i].event,
                       WIFEXITED(status) ? "exit status" : "signal",
                       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), n->command);
gone:
    n->running[i] = n->running[--n->n_running];
    return 1;
}

void vb_notify_tick(vb_notify *n) {
    for (int i = 0; i < n->n_running;)
        if (!reap(n, i, 0)) i++;
}

void vb_notify_finish(vb_notify *n) {
    while (n->n_running > 0) reap(n, 0, 1);
}

void vb_notify_agent_lost(vb_notify *n, const char *agent, double silent_s) {
    if (!n->command[0] || silent_s < n->agent_lost_s) return;
    for (int i = 0; i < n->n_lost; i++)
        if (strcmp(n->notified_lost[i], agent) == 0) return;
    if (n->n_lost < 16) snprintf(n->notified_lost[n->n_lost++], sizeof n->notified_lost[0], "%s", agent);
    char extra[300];
    snprintf(extra, sizeof extra, "Agent %s has been silent for %.0f min (notify.agent_lost_min = %.1f); the campaign "
             "waits for it or reruns its item elsewhere.", agent, silent_s / 60, n->agent_lost_s / 60);
    vb_notify_send(n, "agent_lost", extra);
}

void vb_notify_agent_back(vb_notify *n, const char *agent) {
    for (int i = 0; i < n->n_lost; i++)
        if (strcmp(n->notified_lost[i], agent) == 0) {
            memmove(n->notified_lost[i], n->notified_lost[n->n_lost - 1], sizeof n->notified_lost[0]);
            n->n_lost--;
            return;
        }
}
