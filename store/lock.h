/* One writer per results database: the lock file beside it (FILE.lock), held by `vbench run` / `vbench resume`
 * for the whole campaign.
 *
 * An open-file-description lock (fcntl F_OFD_SETLK) on FILE.lock: the kernel drops it when the holder exits,
 * killed or not, so a SIGKILLed coordinator never leaves a stale lock behind; the file is opened O_CLOEXEC, so
 * the local agents the coordinator starts do not inherit it. The file records who holds it (pid, host, start
 * time, campaign), for the refusal of a second coordinator and for `vbench status`, which tests the lock
 * without taking it (F_OFD_GETLK), so a reader never makes a starting coordinator fail. The holder removes the
 * file when it lets go; a taker checks after locking that the file it locked is still the one at the path. */
#ifndef VB_STORE_LOCK_H
#define VB_STORE_LOCK_H

#include <sys/types.h>

#include "util/error.h"

typedef struct vb_lock vb_lock;

/* Who holds a database's lock, as its holder wrote it. */
typedef struct vb_lock_holder {
    int held;              /* 1 when a live process holds the lock */
    long pid;
    char host[256];
    char since[40];        /* UTC ISO-8601 */
    char campaign[256];    /* "" until the holder knew the campaign's name */
    char pidns[64];        /* the holder's PID namespace ("pid:[4026531836]"); "" in an older record */
    long pid_here;         /* pid as this process's namespace numbers it (the same when both share one; the
                            * host's PID of a holder inside a namespace, found in /proc); -1: not visible here */
    char pid_text[200];    /* "PID N", or "PID N of another PID namespace (pid:[X]), PID M here" */
} vb_lock_holder;

/* Takes the lock of the database at db_path (creates db_path.lock with `mode`). When another process holds it,
 * returns VB_ERROR with err (domain "lock") saying "campaign NAME is being run by PID N on HOST since T" and what
 * to do. campaign may be NULL (not known yet: vb_lock_note records it later). *out is the caller's: release it
 * with vb_lock_release. */
int vb_lock_take(const char *db_path, const char *campaign, mode_t mode, vb_lock **out, vb_error *err);
/* Records the campaign's name in the holder's record (resume learns it from the database). */
void vb_lock_note(vb_lock *l, const char *campaign);
/* Removes the lock file and lets the lock go; NULLs *l. */
void vb_lock_release(vb_lock **l);

/* Tests the lock of db_path without taking it. Never creates or writes anything. */
void vb_lock_probe(const char *db_path, vb_lock_holder *h);

#endif
