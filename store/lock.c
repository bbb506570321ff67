/* The results database's writer lock (lock.h): an OFD lock on FILE.lock with the holder's record in it. */
#include "store/lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "util/pidns.h"

struct vb_lock {
    int fd;
    char path[1100];
    long pid;
    char host[256], since[40], pidns[64];
};

/* The holder's PID as this process sees it (util/pidns.h). */
static void holder_pid_here(vb_lock_holder *h) {
    h->pid_here = vb_pidns_here(h->pid, h->pidns);
    vb_pidns_text(h->pid, h->pidns, h->pid_text, sizeof h->pid_text);
}

static void lock_path(const char *db_path, char *out, size_t len) { snprintf(out, len, "%s.lock", db_path); }

static void now_utc(char *buf, size_t len) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The record is "key value" lines; unknown keys are skipped so that it can grow. */
static void read_record(int fd, vb_lock_holder *h) {
    char buf[1024];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return;
    buf[n] = '\0';
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        char *v = strchr(line, ' ');
        if (!v) continue;
        *v++ = '\0';
        if (strcmp(line, "pid") == 0) h->pid = atol(v);
        else if (strcmp(line, "host") == 0) snprintf(h->host, sizeof h->host, "%s", v);
        else if (strcmp(line, "since") == 0) snprintf(h->since, sizeof h->since, "%s", v);
        else if (strcmp(line, "campaign") == 0) snprintf(h->campaign, sizeof h->campaign, "%s", v);
        else if (strcmp(line, "pidns") == 0) snprintf(h->pidns, sizeof h->pidns, "%s", v);
    }
    holder_pid_here(h);
}

static void write_record(vb_lock *l, const char *campaign) {
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "pid %ld\nhost %s\nsince %s\ncampaign %s\npidns %s\n", l->pid, l->host, l->since,
                     campaign ? campaign : "", l->pidns);
    if (ftruncate(l->fd, 0) == 0 && pwrite(l->fd, buf, (size_t)n, 0) == n) return;
    /* a record we could not write leaves the lock itself intact; a refused taker then says less about us */
}

/* A conflicting lock on fd (F_WRLCK: any lock conflicts), tested without taking it. */
static int lock_held(int fd) {
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(fd, F_OFD_GETLK, &fl) != 0) return 0;
    return fl.l_type != F_UNLCK;
}

int vb_lock_take(const char *db_path, const char *campaign, mode_t mode, vb_lock **out, vb_error *err) {
    *out = NULL;
    vb_lock *l = calloc(1, sizeof *l);
    lock_path(db_path, l->path, sizeof l->path);
    l->pid = (long)getpid();
    vb_pidns_of(0, l->pidns, sizeof l->pidns);
    gethostname(l->host, sizeof l->host - 1);
    now_utc(l->since, sizeof l->since);
    for (int tries = 0; tries < 10; tries++) {
        l->fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC, mode);
        if (l->fd < 0) {
            vb_error_set(err, "lock", errno, "cannot open the lock file %s: %s", l->path, strerror(errno));
            free(l);
            return VB_ERROR;
        }
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        if (fcntl(l->fd, F_OFD_SETLK, &fl) != 0) {
            int e = errno;
            vb_lock_holder h = {.held = 1};
            read_record(l->fd, &h);
            close(l->fd);
            free(l);
            if (e != EAGAIN && e != EACCES)
                return vb_error_set(err, "lock", e, "cannot lock %s.lock: %s", db_path, strerror(e));
            char who[600];
            if (h.campaign[0]) snprintf(who, sizeof who, "campaign %s", h.campaign);
            else snprintf(who, sizeof who, "the campaign in %s", db_path);
            /* The PID as the holder's namespace numbers it, and as this one does (a PID of another namespace
             * means another process here: kill would hit it) */
            char kill_how[64];
            if (h.pid_here > 0) snprintf(kill_how, sizeof kill_how, "kill %ld", h.pid_here);
            else snprintf(kill_how, sizeof kill_how, "kill %ld inside its PID namespace", h.pid);
            return vb_error_set(err, "lock", EAGAIN,
                                "%s is being run by %s on %s since %s: only one coordinator may write %s. "
                                "Follow it with `vbench status --out %s`; to take over, stop that coordinator first "
                                "(%s, or `systemctl stop vbench-coordinator` if it is the service), then "
                                "`vbench resume --out %s`",
                                who, h.pid_text, h.host[0] ? h.host : "?", h.since[0] ? h.since : "?", db_path, db_path,
                                kill_how, db_path);
        }
        /* Locked: but the previous holder may have removed the file between our open and our lock; then we hold
         * a file nobody else sees, and must lock the one at the path instead. */
        struct stat a, b;
        if (fstat(l->fd, &a) == 0 && stat(l->path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
            fchmod(l->fd, mode);
            write_record(l, campaign);
            *out = l;
            return VB_OK;
        }
        close(l->fd);
    }
    free(l);
    return vb_error_set(err, "lock", EAGAIN, "cannot lock %s.lock: it keeps being replaced", db_path);
}

void vb_lock_note(vb_lock *l, const char *campaign) {
    if (l) write_record(l, campaign);
}

void vb_lock_release(vb_lock **l) {
    if (!l || !*l) return;
    /* Unlink before close: while we still hold the lock nobody else can have locked this file. */
    unlink((*l)->path);
    close((*l)->fd);
    free(*l);
    *l = NULL;
}

void vb_lock_probe(const char *db_path, vb_lock_holder *h) {
    memset(h, 0, sizeof *h);
    char path[1100];
    lock_path(db_path, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    h->held = lock_held(fd);
    if (h->held) read_record(fd, h);
    close(fd);
}
