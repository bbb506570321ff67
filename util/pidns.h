/* PIDs across PID namespaces: a process in a container or in the systemd namespace of the server tests numbers
 * itself from 1, and that number means another process on the host. Whoever records a PID records its namespace
 * with it, and whoever shows one says, where it can, which process that is here. */
#ifndef VB_UTIL_PIDNS_H
#define VB_UTIL_PIDNS_H

#include <stddef.h>

/* The PID namespace of process `pid` (0: this one) as /proc names it, "pid:[INODE]"; "" when it cannot be read. */
void vb_pidns_of(long pid, char *buf, size_t len);

/* 1 when ns names the initial PID namespace (a host's own), by the kernel's fixed inode of it. */
int vb_pidns_is_init(const char *ns);

/* pid of namespace ns (may be ""), as this process sees it: the same PID when both share a namespace (or ns is
 * unknown); from another, the process of /proc in that namespace whose own (innermost) PID it is; -1 when none is
 * visible here (this process inside, that one outside). */
long vb_pidns_here(long pid, const char *ns);

/* A PID for people: "PID N" in this namespace when it is the host's; "PID N of PID namespace pid:[X] (this process's
 * too, not the host's)" in a shared one that is not; "PID N of another PID namespace (pid:[X]), PID M here"; or
 * "... (pid:[X], not visible from here)". */
void vb_pidns_text(long pid, const char *ns, char *buf, size_t len);

#endif
