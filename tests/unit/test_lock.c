/* The results database's writer lock (store/lock.c) and the store's backup, on real files: a second taker
 * is refused with the holder's record, a probe tests the lock without taking it, a release removes the lock
 * file; vb_store_backup writes a FILE.bak that passes integrity_check, with the database's mode. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/lock.h"
#include "store/store.h"
#include "tests/tap.h"

int main(void) {
    char dir[] = "/tmp/vbench-test-lock.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char db[256], lockfile[300];
    snprintf(db, sizeof db, "%s/c.sqlite", dir);
    snprintf(lockfile, sizeof lockfile, "%s.lock", db);

    vb_lock_holder h;
    vb_lock_probe(db, &h);
    is_int(h.held, 0, "probe: nobody holds the lock of a new database");
    ok(access(lockfile, F_OK) != 0, "... and the probe made no lock file");

    vb_lock *a = NULL, *b = NULL;
    vb_error err;
    is_int(vb_lock_take(db, NULL, 0600, &a, &err), VB_OK, "the first taker gets the lock");
    struct stat st;
    is_int(stat(lockfile, &st) == 0 ? (int)(st.st_mode & 0777) : -1, 0600, "the lock file has the mode asked for");
    vb_lock_note(a, "camp");
    vb_lock_probe(db, &h);
    is_int(h.held, 1, "probe: held");
    is_int(h.pid, getpid(), "... by this process");
    is_str(h.campaign, "camp", "... for the campaign noted");
    ok(h.host[0] && h.since[0], "... with its host and start time");

    /* Another open file description conflicts even within one process (OFD locks). */
    is_int(vb_lock_take(db, "other", 0600, &b, &err), VB_ERROR, "a second taker is refused");
    is_str(err.domain, "lock", "... in domain lock");
    is_int(err.code, EAGAIN, "... with code EAGAIN");
    char want[128];
    snprintf(want, sizeof want, "campaign camp is being run by PID %ld on ", (long)getpid());
    contains(err.message, want, "... saying who holds it");
    ok(b == NULL, "... and gets nothing");

    vb_lock_release(&a);
    ok(a == NULL, "release NULLs the pointer");
    ok(access(lockfile, F_OK) != 0, "release removes the lock file");
    vb_lock_probe(db, &h);
    is_int(h.held, 0, "probe: free again");
    is_int(vb_lock_take(db, NULL, 0600, &b, &err), VB_OK, "the lock can be taken again");
    vb_lock_release(&b);

    /* The store: created 0600 under a directory it makes 0700; a writer holds the lock; backup. */
    char nested[300];
    snprintf(nested, sizeof nested, "%s/r/s.sqlite", dir);
    vb_store *s = NULL, *s2 = NULL;
    vb_store_opts o = {.access = VB_STORE_CREATE};
    is_int(vb_store_open_with(nested, &o, &s, &err), VB_OK, "store: create");
    is_int(stat(nested, &st) == 0 ? (int)(st.st_mode & 0777) : -1, 0600, "... the file is 0600");
    char rdir[300];
    snprintf(rdir, sizeof rdir, "%s/r", dir);
    is_int(stat(rdir, &st) == 0 ? (int)(st.st_mode & 0777) : -1, 0700, "... the directory it made is 0700");
    is_int(vb_store_open(nested, 0, &s2, &err), VB_ERROR, "a second writer of the same file is refused");
    is_str(err.domain, "lock", "... by the lock");
    vb_store_opts ro = {.access = VB_STORE_READ};
    is_int(vb_store_open_with(nested, &ro, &s2, &err), VB_OK, "a reader opens it while the writer holds the lock");
    vb_store_close(&s2);
    is_int(vb_store_backup(s, &err), VB_OK, "backup");
    char bak[320];
    snprintf(bak, sizeof bak, "%s.bak", nested);
    is_int(stat(bak, &st) == 0 ? (int)(st.st_mode & 0777) : -1, 0600, "... FILE.bak exists, mode 0600");
    sqlite3 *b2 = NULL;
    sqlite3_open_v2(bak, &b2, SQLITE_OPEN_READONLY, NULL);
    sqlite3_stmt *st2 = NULL;
    sqlite3_prepare_v2(b2, "PRAGMA integrity_check", -1, &st2, NULL);
    is_str(sqlite3_step(st2) == SQLITE_ROW ? (const char *)sqlite3_column_text(st2, 0) : "no row", "ok",
           "... and passes integrity_check");
    sqlite3_finalize(st2);
    sqlite3_close(b2);
    vb_store_close(&s);

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return done_testing();
}
