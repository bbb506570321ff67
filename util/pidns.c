/* PIDs across PID namespaces (pidns.h). */
#include "util/pidns.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void vb_pidns_of(long pid, char *buf, size_t len) {
    char link[64];
    if (pid > 0) snprintf(link, sizeof link, "/proc/%ld/ns/pid", pid);
    else snprintf(link, sizeof link, "/proc/self/ns/pid");
    ssize_t n = readlink(link, buf, len - 1);
    buf[n > 0 ? (size_t)n : 0] = '\0';
}

/* The last PID of /proc/N/status's NSpid line: N as its own (innermost) PID namespace numbers it; -1 if none. */
static long inner_pid(const char *dir) {
    char path[300], line[512];
    snprintf(path, sizeof path, "/proc/%s/status", dir);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long inner = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "NSpid:", 6) == 0) {
            char *save = NULL;
            for (char *t = strtok_r(line + 6, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save)) inner = atol(t);
            break;
        }
    fclose(f);
    return inner;
}

static int same_ns(const char *ns) {
    char mine[64];
    vb_pidns_of(0, mine, sizeof mine);
    return !ns || !ns[0] || !mine[0] || strcmp(ns, mine) == 0;
}

long vb_pidns_here(long pid, const char *ns) {
    if (same_ns(ns)) return pid;
    long here = -1;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) && here < 0) {
        if (!isdigit((unsigned char)e->d_name[0]) || inner_pid(e->d_name) != pid) continue;
        char other[64];
        vb_pidns_of(atol(e->d_name), other, sizeof other);
        if (strcmp(other, ns) == 0) here = atol(e->d_name);
    }
    if (d) closedir(d);
    return here;
}

/* The inode of the initial PID namespace (the kernel's PROC_PID_INIT_INO): a host's processes are numbered in it. */
#define INIT_PIDNS "pid:[4026531836]"

int vb_pidns_is_init(const char *ns) { return ns && strcmp(ns, INIT_PIDNS) == 0; }

void vb_pidns_text(long pid, const char *ns, char *buf, size_t len) {
    if (same_ns(ns)) {
        if (ns && ns[0] && !vb_pidns_is_init(ns))
            snprintf(buf, len, "PID %ld of PID namespace %s (this process's too, not the host's)", pid, ns);
        else
            snprintf(buf, len, "PID %ld", pid);
        return;
    }
    long here = vb_pidns_here(pid, ns);
    if (here > 0)
        snprintf(buf, len, "PID %ld of another PID namespace (%s), PID %ld here", pid, ns, here);
    else
        snprintf(buf, len, "PID %ld of another PID namespace (%s, not visible from here)", pid, ns);
}
