/* What the parts of store/ share and no caller outside it sees: the store's struct and the helpers every part
 * uses to run SQL and turn a failure into its class (store.h: RETRY or POISON). store.c defines them; open.c,
 * plan.c, results.c, events.c and servers.c use them. */
#ifndef VB_STORE_STORE_INT_H
#define VB_STORE_STORE_INT_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "metrics/coldstart.h"
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
/* Fills err (its code: SQLite's extended result code, errno, or 0: never the class) and remembers the first
 * RETRY-class failure of the store itself. Returns the class. */
vb_store_class store_fail(vb_store *s, vb_error *err, vb_store_class cls, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* A record the store refuses whatever its state (found before SQLite sees it): POISON, err code 0. */
vb_store_class store_poison(vb_store *s, vb_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The connection's last failure, classified, "PATH: what: SQLite's message", err code SQLite's extended code. */
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

/* ---- the result kinds (results.c commits them, result_kinds.c is their table) ------------------------------ */

/* A latency histogram as columns: they come from the merged histogram, here, so every percentile in the database
 * has one definition whatever agent produced it. */
typedef struct store_latency {
    int empty;
    double mean, p50, p95, p99, p999, max;
    unsigned char *blob;   /* (u32 bucket, u64 count) little-endian pairs; malloc'd */
    size_t blob_len;
} store_latency;
/* Decodes a wire histogram (NULL: an empty one); POISON for an inconsistent one. out->blob is malloc'd. */
int store_latency_decode(vb_store *s, const Vbench__Histogram *h, const char *result_key, store_latency *out,
                         vb_error *err);

/* One column's value. */
typedef struct store_value {
    enum { STORE_NULL, STORE_INT, STORE_REAL, STORE_TEXT, STORE_BLOB } type;
    sqlite3_int64 i;
    double d;
    const void *p;   /* TEXT: NUL-terminated; BLOB: n bytes */
    size_t n;
} store_value;

/* A result on its way to its row: what the column getters read. */
typedef struct store_row {
    const Vbench__Result *r;
    const char *engine, *dataset, *agent, *now;
    const Vbench__Measurement *m;    /* the kind's Measurement, or an empty one (every field 0 / "") */
    store_latency lat;               /* the kind's latency histogram, decoded by its prepare (decode_measurement:
                                      * m->latency) */
    store_latency lat2, lat3;        /* more histograms a kind's prepare decoded (window: lag; streaming: insert
                                      * latency, freshness) */
    /* what a kind's prepare computed; freed by the commit (text, the masks, rolling) */
    char *text;                      /* window: fraction_in_call as JSON */
    double fmin, fmean;              /* window: fraction_in_call's smallest and mean; nf the count */
    size_t nf;
    vb_coldstart cold;               /* cold start: the summary */
    uint8_t *cold_failed, *warm_failed;
    double *rolling;
} store_row;

/* A column of a kind's table: its name and its value. The INSERT statement and its binds are made from the list
 * (results.c), one named parameter per column, so a column cannot be bound to another's place; a unit test holds
 * each list to its table (PRAGMA table_info of a new database: tests/unit/test_result_kinds.c). */
typedef struct store_column {
    const char *name;
    store_value (*get)(const store_row *w);
    const char *plan;   /* instead of get: the column is this column of the result's plan item (config, build) */
} store_column;

/* A kind of result: the Result oneof's case it records (and, for a variant, which of them: a build's load
 * checkpoint), its table and columns, and what the coordinator says when one is committed. */
struct vb_result_kind {
    Vbench__Result__BodyCase body;
    int (*is)(const Vbench__Result *r);   /* NULL: every result of body; the entries are tried in order */
    const char *name;                     /* a word: "sweep" */
    const char *table;
    const char *what;                     /* "a recall sweep result": "recording ..." when it fails */
    const store_column *columns;
    size_t n_columns;
    /* The kind's Measurement, NULL when it has none (or the agent sent none): the row's m, and its recall
     * distribution, when scored, a recall_dist row. NULL: the kind has none. */
    const Vbench__Measurement *(*measurement)(const Vbench__Result *r);
    /* Checks and computes what the columns need (POISON for a result that can never be stored); NULL: nothing. */
    int (*prepare)(vb_store *s, store_row *w, vb_error *err);
    /* The rows stored beside it, in the same transaction (a cold start's queries, a window's waits); NULL: none. */
    int (*after)(vb_store *s, store_row *w, vb_error *err);
    /* The lines the coordinator's terminal shows when one is committed, '\n' between them ("" for none). */
    void (*describe)(const Vbench__Result *r, char *buf, size_t len);
};
extern const vb_result_kind store_result_kinds[];
extern const size_t store_n_result_kinds;

#endif
