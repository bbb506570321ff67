/* What the parts of store/ share and no caller outside it sees: the store's struct and the helpers every part
 * uses to run SQL and turn a failure into its class (store.h: RETRY or POISON). store.c defines them; open.c,
 * plan.c, results.c, events.c and servers.c use them. */
#ifndef VB_STORE_STORE_INT_H
#define VB_STORE_STORE_INT_H

#include <sys/types.h>
#include <time.h>

#include "store/lock.h"
#include "store/store.h"

struct vb_store {
    sqlite3 *db;
    char path[1024];
    mode_t mode;           /* of the database file; its lock, -wal, -shm and .bak take it too */
    vb_lock *lock;         /* writers only: the one-writer lock (lock.h) */
    int created;           /* this process created the file (a failed creation removes it) */
    char *made[16];        /* directories made for it, outermost first */
    size_t n_made;
    int backups;           /* a campaign's writer: FILE.bak every backup_every_s and at close */
    double backup_every_s;
    time_t next_backup;
    char failure[1100];   /* the first RETRY-class failure, "" while none (vb_store_failure) */
    vb_store_class last;  /* the class of the latest failure: what a function returns after a failed step */
};

/* SQLite's code as a class: the record's fault (a constraint, a type mismatch, too big, out of range) is POISON,
 * anything else the store's (RETRY). */
vb_store_class store_classify(int sqlite_code);
/* Fills err (code: the class) and remembers the first failure of the store itself. Returns the class. */
vb_store_class store_fail(vb_store *s, vb_error *err, vb_store_class cls, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A record the store refuses whatever its state (found before SQLite sees it): POISON. */
vb_store_class store_poison(vb_store *s, vb_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The connection's last failure, classified, "PATH: what: SQLite's message". */
vb_store_class store_db_error(vb_store *s, vb_error *err, const char *what);
/* sqlite3_exec of sql (several statements may follow each other). */
vb_store_class store_exec(vb_store *s, const char *sql, vb_error *err);
/* Ends a failed transaction, if SQLite did not already (it rolls back by itself on some errors, e.g. SQLITE_FULL
 * in a COMMIT): the caller's failure stays the one reported. */
void store_rollback(vb_store *s);
/* COMMIT, and on its failure (disk full, I/O) a rollback, so the next BEGIN does not find a transaction open. */
vb_store_class store_commit(vb_store *s, vb_error *err);
/* A prepared statement, or NULL with err filled (s->last: its class). */
sqlite3_stmt *store_prepare(vb_store *s, const char *sql, vb_error *err);
/* Steps a statement to completion and finalizes it. */
int store_run(vb_store *s, sqlite3_stmt *st, vb_error *err, const char *what);
/* Text, or NULL for a NULL pointer. */
void store_bind_text(sqlite3_stmt *st, int i, const char *v);

#endif
