/* SQLite results store: what every part of store/ shares (store_int.h): a failed call's class, and the
 * prepare / step / bind helpers. Statements are prepared per call: the write rate is a few per second at most, and
 * keeping no cached statements keeps every function self-contained. */
#include "store/store_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

/* SQLite's primary codes that are about the record, not the store: the same record fails the same way forever. */
vb_store_class store_classify(int sqlite_code) {
    switch (sqlite_code & 0xff) {
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG:
    case SQLITE_RANGE: return VB_STORE_POISON;
    default: return VB_STORE_RETRY;
    }
}

/* Fills err (code: SQLite's or errno) and remembers the first failure of the store itself. Returns the class. */
vb_store_class store_fail(vb_store *s, vb_error *err, vb_store_class cls, int code, const char *fmt, ...) {
    char msg[1100];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vb_error_set(err, "results", code, "%s", msg);
    s->last = cls;
    if (cls == VB_STORE_RETRY && !s->failure[0]) snprintf(s->failure, sizeof s->failure, "%s", msg);
    return cls;
}

/* A record the store refuses whatever its state (found before SQLite sees it). */
vb_store_class store_poison(vb_store *s, vb_error *err, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vb_error_set(err, "results", 0, "%s: %s", s->path, msg);
    return VB_STORE_POISON;
}

vb_store_class store_db_error(vb_store *s, vb_error *err, const char *what) {
    int code = sqlite3_extended_errcode(s->db);
    return store_fail(s, err, store_classify(code), code, "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
}

vb_store_class store_exec(vb_store *s, const char *sql, vb_error *err) {
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        int code = sqlite3_extended_errcode(s->db);
        vb_store_class cls = store_fail(s, err, store_classify(code), code, "%s: %s", s->path,
                                        msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        return cls;
    }
    return VB_STORE_OK;
}

/* Ends a failed transaction, if SQLite did not already (it rolls back by itself on some errors, e.g. SQLITE_FULL
 * in a COMMIT): the caller's failure stays the one reported. */
void store_rollback(vb_store *s) {
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

/* COMMIT, and on its failure (disk full, I/O) a rollback, so the next BEGIN does not find a transaction open. */
vb_store_class store_commit(vb_store *s, vb_error *err) {
    vb_store_class cls = store_exec(s, "COMMIT", err);
    if (cls != VB_STORE_OK) store_rollback(s);
    return cls;
}

const char *vb_store_failure(vb_store *s) { return s && s->failure[0] ? s->failure : NULL; }

void vb_store_now(char *buf, size_t len) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char base[32];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%03dZ", base, (int)(tv.tv_usec / 1000));
}

sqlite3 *vb_store_db(vb_store *s) { return s->db; }

sqlite3_stmt *store_prepare(vb_store *s, const char *sql, vb_error *err) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        store_db_error(s, err, "prepare");
        return NULL;
    }
    return st;
}

/* Steps a statement to completion and finalizes it. */
int store_run(vb_store *s, sqlite3_stmt *st, vb_error *err, const char *what) {
    int rc = sqlite3_step(st);
    while (rc == SQLITE_ROW) rc = sqlite3_step(st);
    vb_store_class cls = VB_STORE_OK;
    if (rc != SQLITE_DONE)
        cls = store_fail(s, err, store_classify(rc), sqlite3_extended_errcode(s->db), "%s: %s: %s", s->path, what,
                         sqlite3_errmsg(s->db));
    sqlite3_finalize(st);
    return cls;
}

void store_bind_text(sqlite3_stmt *st, int i, const char *v) {
    if (v) sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, i);
}
