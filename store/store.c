/* SQLite results store. Statements are prepared per call: the write rate is a few per second at most, and
 * keeping no cached statements keeps every function self-contained. */
#include "store/store.h"
#include "store/capacity.h"

#include <jansson.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "store/lock.h"
#include "metrics/coldstart.h"
#include "metrics/histogram.h"
#include "proto/wire.h"
#include "store/views.h"
#include "util/embedded.h"
#include "util/fs.h"

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

/* SQLite's primary codes that are about the record, not the store: the same record fails the same way forever. */
static vb_store_class classify(int sqlite_code) {
    switch (sqlite_code & 0xff) {
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG:
    case SQLITE_RANGE: return VB_STORE_POISON;
    default: return VB_STORE_RETRY;
    }
}

/* Fills err (code: the class) and remembers the first failure of the store itself. Returns the class. */
static vb_store_class store_fail(vb_store *s, vb_error *err, vb_store_class cls, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static vb_store_class store_fail(vb_store *s, vb_error *err, vb_store_class cls, const char *fmt, ...) {
    char msg[1100];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vb_error_set(err, "results", (int)cls, "%s", msg);
    s->last = cls;
    if (cls == VB_STORE_RETRY && !s->failure[0]) snprintf(s->failure, sizeof s->failure, "%s", msg);
    return cls;
}

/* A record the store refuses whatever its state (found before SQLite sees it). */
static vb_store_class poison(vb_store *s, vb_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static vb_store_class poison(vb_store *s, vb_error *err, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vb_error_set(err, "results", VB_STORE_POISON, "%s: %s", s->path, msg);
    return VB_STORE_POISON;
}

static vb_store_class db_error(vb_store *s, vb_error *err, const char *what) {
    int code = sqlite3_extended_errcode(s->db);
    return store_fail(s, err, classify(code), "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
}

static vb_store_class exec(vb_store *s, const char *sql, vb_error *err) {
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        vb_store_class cls = store_fail(s, err, classify(sqlite3_extended_errcode(s->db)), "%s: %s", s->path,
                                        msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        return cls;
    }
    return VB_STORE_OK;
}

/* Ends a failed transaction, if SQLite did not already (it rolls back by itself on some errors, e.g. SQLITE_FULL
 * in a COMMIT): the caller's failure stays the one reported. */
static void rollback(vb_store *s) {
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

/* COMMIT, and on its failure (disk full, I/O) a rollback, so the next BEGIN does not find a transaction open. */
static vb_store_class commit(vb_store *s, vb_error *err) {
    vb_store_class cls = exec(s, "COMMIT", err);
    if (cls != VB_STORE_OK) rollback(s);
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

/* Columns added to a table after it first shipped: CREATE TABLE IF NOT EXISTS leaves an older file's table as it
 * was, so each is added here when missing. Append to this list whenever schema.sql gains a column. */
static const struct {
    const char *table, *column, *type;
} added_columns[] = {
    {"churn_result", "rows_from", "INTEGER"},
    {"event", "kind", "TEXT NOT NULL DEFAULT 'note'"},
    {"sweep_result", "index_used", "INTEGER"},
    {"sweep_result", "plan", "TEXT"},
    {"filtered_result", "index_used", "INTEGER"},
    {"filtered_result", "plan", "TEXT"},
    {"server_sample", "pss_bytes", "INTEGER"},
    {"sweep_result", "duplicate_answers", "INTEGER NOT NULL DEFAULT 0"},
    {"sweep_result", "duplicate_example", "TEXT"},
    {"filtered_result", "duplicate_answers", "INTEGER NOT NULL DEFAULT 0"},
    {"filtered_result", "duplicate_example", "TEXT"},
    {"churn_result", "duplicate_answers", "INTEGER NOT NULL DEFAULT 0"},
    {"churn_result", "duplicate_example", "TEXT"},
    {"sweep_result", "answers", "BLOB"},
    {"build_result", "config", "TEXT"},     /* issue 14: the configuration's label, engine is its adapter */
    {"sweep_result", "config", "TEXT"},
    {"window_result", "config", "TEXT"},
    {"filtered_result", "config", "TEXT"},
    {"churn_result", "config", "TEXT"},
    {"churn_result", "repeat", "INTEGER"},  /* issue 14: churn's before / after measured several times */
    {"filtered_result", "predicate", "TEXT"},  /* issue 26: range, equality, and */
    {"filtered_result", "passed_share", "REAL"},  /* issue 35: the share passed, per query for the class filters */
    {"build_result", "attempts", "INTEGER"},   /* issue 28: a load continued from its checkpoint */
    {"window_result", "edge_queries", "INTEGER"},  /* issue 27: every query sent is in the window's counts */
    {"window_result", "server_calls", "INTEGER"},  /* issue 27: the server's own accounting */
    {"window_result", "server_exec_s", "REAL"},
    {"window_result", "window_start", "REAL"},
    {"window_result", "wait_rounds", "INTEGER"},
    {"window_result", "server_window_calls", "INTEGER"},
    {"window_result", "server_window_exec_s", "REAL"},
    {"window_result", "wait_unit", "TEXT"},   /* issue 27: MariaDB's wait profile is timed, pgvector's sampled */
    /* issue 27: tables added later, by a column each, so that a read-only open of an older file copies it into
     * memory, where schema.sql creates them (show and report read them); CREATE TABLE made them before this runs */
    {"server_profile", "folded", "TEXT"},
    {"server_profile_function", "function", "TEXT"},
    {"plan", "build", "INTEGER"},           /* issue 35: build_repeats, which build each item and result is on */
    {"build_result", "build", "INTEGER"},
    {"sweep_result", "build", "INTEGER"},
    {"sweep_result", "warmup_queries", "INTEGER"},  /* issue 36.5: the sweep's first point warmed the engine */
    {"sweep_result", "warmup_s", "REAL"},
    {"streaming_result", "rows_scheduled_window_end", "INTEGER"},  /* issue 36.1: the window's end, not scoring's */
    {"streaming_result", "fresh_row_max", "INTEGER"},
    {"streaming_result", "interval_max_lag_s", "REAL"},  /* issue 36.3: each stage's own lag */
};

static int add_missing_columns(vb_store *s, vb_error *err) {
    for (size_t i = 0; i < sizeof added_columns / sizeof added_columns[0]; i++) {
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT 1 FROM pragma_table_info('%s') WHERE name = '%s'", added_columns[i].table,
                 added_columns[i].column);
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return db_error(s, err, "reading the schema");
        int present = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
        if (present) continue;
        snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN %s %s", added_columns[i].table, added_columns[i].column,
                 added_columns[i].type);
        if (exec(s, sql, err)) return VB_ERROR;
    }
    return VB_OK;
}

/* Marks of a vbench results database in the SQLite header, set when the file is created (and when resume
 * upgrades an older file): application_id "vbnc", user_version the schema generation. A reader tells a results
 * database from any other file by them (files made before them: by their tables). */
#define VB_STORE_APPLICATION_ID 0x76626e63
#define VB_STORE_USER_VERSION 1

static const char sqlite_magic[16] = "SQLite format 3";

static void sibling(const vb_store *s, const char *suffix, char *out, size_t len) {
    snprintf(out, len, "%s%s", s->path, suffix);
}

static long long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Advice for a database that cannot be read: the last good backup when there is one, and .recover. */
static void damage_advice(const vb_store *s, char *out, size_t len) {
    char bak[1100];
    sibling(s, ".bak", bak, sizeof bak);
    struct stat st;
    int n = 0;
    if (stat(bak, &st) == 0) {
        char when[40];
        struct tm tm;
        gmtime_r(&st.st_mtime, &tm);
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        n = snprintf(out, len, "the last good backup is %s (written %s): `mv %s %s.damaged; rm -f %s-wal %s-shm; "
                               "cp %s %s`, then `vbench resume --out %s` runs again what came after it; ",
                     bak, when, s->path, s->path, s->path, s->path, bak, s->path, s->path);
    } else {
        n = snprintf(out, len, "there is no backup (%s); ", bak);
    }
    if (n >= 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n, "what is still readable can be saved with `sqlite3 %s .recover | "
                                           "sqlite3 RECOVERED.sqlite`", s->path);
}

/* What the file is, before SQLite reads it as a database: refuses an empty file and one that is not SQLite, so
 * that neither a reader nor resume ever writes vbench's schema into it. */
static int check_header(vb_store *s, vb_error *err) {
    char wal[1100];
    sibling(s, "-wal", wal, sizeof wal);
    FILE *f = fopen(s->path, "rb");
    if (!f) return vb_error_set(err, "results", errno, "%s: %s", s->path, strerror(errno));
    char head[100];
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    if (n == 0 && file_size(wal) <= 0)
        return vb_error_set(err, "results", VB_STORE_RETRY, "%s is empty: not a vbench results database (a creation that failed? "
                                               "remove it and start again with `vbench run --out %s`)", s->path,
                            s->path);
    if (n > 0 && (n < sizeof sqlite_magic || memcmp(head, sqlite_magic, sizeof sqlite_magic) != 0)) {
        char bak[1100], advice[3000];
        sibling(s, ".bak", bak, sizeof bak);
        if (file_size(bak) < 0)
            return vb_error_set(err, "results", VB_STORE_RETRY, "%s is not an SQLite database", s->path);
        damage_advice(s, advice, sizeof advice);   /* a results database whose first page is gone */
        return vb_error_set(err, "results", VB_STORE_RETRY, "%s is not an SQLite database (its first page is damaged?): %s",
                            s->path, advice);
    }
    return VB_OK;
}

static int table_count(vb_store *s, const char *sql, int *count) {
    sqlite3_stmt *st = NULL;
    *count = 0;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return VB_ERROR;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *count = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? VB_OK : VB_ERROR;
}

/* A vbench results database: our application_id, or (files made before it was set) our tables. */
static int check_identity(vb_store *s, int *marked, vb_error *err) {
    int app = 0, tables = 0, ours = 0;
    *marked = 0;
    if (table_count(s, "PRAGMA application_id", &app) || table_count(s, "SELECT COUNT(*) FROM sqlite_master", &tables) ||
        table_count(s, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                       "('campaign', 'plan', 'event', 'manifest')", &ours)) {
        char advice[3000];
        damage_advice(s, advice, sizeof advice);
        return vb_error_set(err, "results", sqlite3_errcode(s->db), "%s cannot be read as an SQLite database (%s): %s",
                            s->path, sqlite3_errmsg(s->db), advice);
    }
    if ((uint32_t)app == VB_STORE_APPLICATION_ID) {
        *marked = 1;
        return VB_OK;
    }
    if (app != 0)
        return vb_error_set(err, "results", VB_STORE_RETRY, "%s is an SQLite database but not a vbench results database "
                                               "(application_id 0x%08x)", s->path, (uint32_t)app);
    if (ours == 4) return VB_OK;
    if (tables == 0)
        return vb_error_set(err, "results", VB_STORE_RETRY, "%s is an SQLite database with no tables: not a vbench results "
                                               "database", s->path);
    return vb_error_set(err, "results", VB_STORE_RETRY, "%s is an SQLite database but not a vbench results database (it has no "
                                           "campaign, plan, event and manifest tables)", s->path);
}

/* PRAGMA quick_check: every page of every b-tree is read and its structure checked (a zeroed or overwritten page
 * is found), in O(N), without the index-content cross-check of integrity_check. A damaged file is refused. */
static int check_integrity(vb_store *s, vb_error *err) {
    sqlite3_stmt *st = NULL;
    char found[600] = "";
    int rc = sqlite3_prepare_v2(s->db, "PRAGMA quick_check(3)", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *line = (const char *)sqlite3_column_text(st, 0);
            if (line && strcmp(line, "ok") != 0 && strncmp(line, "*** ", 4) != 0)
                snprintf(found + strlen(found), sizeof found - strlen(found), "%s%s", found[0] ? "; " : "", line);
        }
    }
    if (rc != SQLITE_DONE && !found[0]) snprintf(found, sizeof found, "%s", sqlite3_errmsg(s->db));
    sqlite3_finalize(st);
    for (char *nl = found; (nl = strchr(nl, '\n'));) *nl = ' ';
    if (!found[0]) return VB_OK;
    char advice[3000];
    damage_advice(s, advice, sizeof advice);
    return vb_error_set(err, "results", SQLITE_CORRUPT, "%s is damaged (PRAGMA quick_check: %s); vbench does not "
                                                        "read or write a damaged database: %s", s->path, found, advice);
}

/* Tables newer than some files: a reader of such a file reads an empty one (read_into_memory). */
static const char *const added_tables[] = {"streaming_result" /* issue 25 */, "recall_dist" /* issue 35 */};

static int missing_columns(vb_store *s) {
    for (size_t i = 0; i < sizeof added_tables / sizeof added_tables[0]; i++) {
        char sql[256];
        int present = 0;
        snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '%s'",
                 added_tables[i]);
        if (table_count(s, sql, &present) == VB_OK && !present) return 1;
    }
    for (size_t i = 0; i < sizeof added_columns / sizeof added_columns[0]; i++) {
        char sql[256];
        int present = 0;
        snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM pragma_table_info('%s') WHERE name = '%s'",
                 added_columns[i].table, added_columns[i].column);
        if (table_count(s, sql, &present) == VB_OK && !present) return 1;
    }
    return 0;
}

/* A reader of a file written by an older vbench: a copy in memory gains the current tables and columns, so the
 * current views read it; the file itself is never written. */
static int read_into_memory(vb_store *s, vb_error *err) {
    sqlite3 *mem = NULL;
    if (sqlite3_open(":memory:", &mem) != SQLITE_OK) {
        sqlite3_close(mem);
        return vb_error_set(err, "results", VB_STORE_RETRY, "%s: no memory for a copy of an older results database", s->path);
    }
    sqlite3_backup *b = sqlite3_backup_init(mem, "main", s->db, "main");
    int rc = b ? sqlite3_backup_step(b, -1) : sqlite3_errcode(mem);
    if (b) sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE) {
        vb_error_set(err, "results", rc, "%s: copying it for reading: %s", s->path, sqlite3_errstr(rc));
        sqlite3_close(mem);
        return VB_ERROR;
    }
    sqlite3_close(s->db);
    s->db = mem;
    const vb_embedded_file *schema = vb_embedded_find("store/schema.sql");
    if (!schema) return vb_error_set(err, "results", VB_STORE_RETRY, "the results schema is missing from this binary");
    return exec(s, schema->data, err) || add_missing_columns(s, err);   /* CREATE TABLE IF NOT EXISTS: new ones only */
}

/* Directories made for a new database, so that a failed creation leaves nothing behind. */
static int make_dirs(vb_store *s, mode_t dir_mode, vb_error *err) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", s->path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return VB_OK;
    *slash = '\0';
    for (char *p = dir + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char keep = *p;
        *p = '\0';
        if (mkdir(dir, dir_mode) == 0) {
            chmod(dir, dir_mode);   /* exactly the mode asked for, whatever the umask */
            if (s->n_made < sizeof s->made / sizeof s->made[0]) s->made[s->n_made++] = strdup(dir);
        } else if (errno != EEXIST) {
            return vb_error_set(err, "results", errno, "cannot create the directory %s for %s: %s", dir, s->path,
                                strerror(errno));
        }
        *p = keep;
        if (!keep) break;
    }
    return VB_OK;
}

static void remove_made(vb_store *s) {
    char p[1100];
    static const char *const suffixes[] = {"-wal", "-shm", "-journal", ".bak.tmp"};
    if (s->created) {
        unlink(s->path);
        for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
            sibling(s, suffixes[i], p, sizeof p);
            unlink(p);
        }
    }
    vb_lock_release(&s->lock);
    while (s->n_made) {   /* deepest first; rmdir leaves a directory something else put a file into */
        rmdir(s->made[--s->n_made]);
        free(s->made[s->n_made]);
    }
}

/* The new file with exactly its mode (SQLite would make it 0644 less the umask; its -wal and -shm take the
 * mode of the database file). */
static int create_file(vb_store *s, vb_error *err) {
    int fd = open(s->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, s->mode);
    if (fd < 0)
        return vb_error_set(err, "results", errno, "cannot create %s: %s", s->path, strerror(errno));
    s->created = 1;
    fchmod(fd, s->mode);
    close(fd);
    return VB_OK;
}

int vb_store_open_with(const char *path, const vb_store_opts *o, vb_store **out, vb_error *err) {
    *out = NULL;
    struct stat st;
    int exists = stat(path, &st) == 0, memory = strcmp(path, ":memory:") == 0;
    int create = o->access == VB_STORE_CREATE, read_only = o->access == VB_STORE_READ;
    if (!create && !exists)
        return vb_error_set(err, "results", VB_STORE_RETRY, "%s: no such results database", path);
    if (!create && !S_ISREG(st.st_mode))
        return vb_error_set(err, "results", VB_STORE_RETRY, "%s is not a regular file: not a results database", path);
    vb_store *s = calloc(1, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", path);
    s->mode = create ? (o->mode ? o->mode : 0600) : (st.st_mode & 0777);
    if (create && !memory) {
        /* r gives x on the directories: 0600 -> 0700, 0640 -> 0750 */
        if (make_dirs(s, s->mode | ((s->mode & 0444) >> 2), err)) goto fail;
    }
    if (!read_only && !memory && vb_lock_take(path, o->campaign, s->mode, &s->lock, err)) goto fail;
    if (create && stat(path, &st) == 0) {
        vb_error_set(err, "results", VB_STORE_RETRY, "%s already exists%s: choose another --out, or continue it with "
                                        "`vbench resume --out %s`", path,
                     st.st_size == 0 ? " and is empty (a creation that failed? remove it)" : "", path);
        goto fail;
    }
    if (create && !memory && create_file(s, err)) goto fail;
    if (!create && check_header(s, err)) goto fail;
    int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (memory ? SQLITE_OPEN_CREATE : 0);
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        db_error(s, err, "open");
        goto fail;
    }
    sqlite3_busy_timeout(s->db, 10000);
    int marked = 0;
    if (!create && (check_identity(s, &marked, err) || check_integrity(s, err))) goto fail;
    if (read_only) {
        if (missing_columns(s) ? read_into_memory(s, err) || vb_views_install(s->db, 0, err)
                               : vb_views_install(s->db, 1, err))
            goto fail;
        *out = s;
        return VB_OK;
    }
    const vb_embedded_file *schema = vb_embedded_find("store/schema.sql");
    char marks[128];
    snprintf(marks, sizeof marks, "PRAGMA application_id = %d; PRAGMA user_version = %d;",
             (int)VB_STORE_APPLICATION_ID, VB_STORE_USER_VERSION);
    /* The marks first: on a new file they are written before WAL mode, into the file itself. */
    if ((!marked && exec(s, marks, err)) ||
        exec(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;", err) ||
        !schema || exec(s, schema->data, err) || add_missing_columns(s, err) || vb_views_install(s->db, 0, err)) {
        if (!schema) vb_error_set(err, "results", VB_STORE_RETRY, "the results schema is missing from this binary");
        goto fail;
    }
    if (!create && s->lock) {   /* the holder's record names the campaign, for a refused second coordinator */
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(s->db, "SELECT name FROM campaign WHERE id = 1", -1, &q, NULL) == SQLITE_OK &&
            sqlite3_step(q) == SQLITE_ROW)
            vb_lock_note(s->lock, (const char *)sqlite3_column_text(q, 0));
        sqlite3_finalize(q);
    }
    *out = s;
    return VB_OK;
fail:
    if (err && !strstr(err->message, path)) vb_error_prefix(err, "%s", path);
    if (err && s->created) {   /* e.g. a full disk: say that nothing is left that would refuse the next try */
        char said[sizeof err->message];
        snprintf(said, sizeof said, "%s", err->message);
        vb_error_set(err, "results", err->code, "%s (the half-made file was removed: fix this and run the same "
                                                "command again)", said);
    }
    vb_store_discard(&s);
    return VB_ERROR;
}

int vb_store_open(const char *path, int create, vb_store **out, vb_error *err) {
    vb_store_opts o = {.access = create ? VB_STORE_CREATE : VB_STORE_WRITE};
    return vb_store_open_with(path, &o, out, err);
}

void vb_store_close(vb_store **s) {
    if (!s || !*s) return;
    if ((*s)->db && (*s)->backups) {
        vb_error err;   /* the campaign's last state, so that a damaged file later costs nothing */
        if (vb_store_backup(*s, &err) != VB_OK) fprintf(stderr, "vbench: %s\n", err.message);
    }
    if ((*s)->db) sqlite3_close((*s)->db);
    vb_lock_release(&(*s)->lock);
    for (size_t i = 0; i < (*s)->n_made; i++) free((*s)->made[i]);
    free(*s);
    *s = NULL;
}

void vb_store_discard(vb_store **s) {
    if (!s || !*s) return;
    if ((*s)->db) sqlite3_close((*s)->db);
    (*s)->db = NULL;
    remove_made(*s);
    free(*s);
    *s = NULL;
}

sqlite3 *vb_store_db(vb_store *s) { return s->db; }

static sqlite3_stmt *prepare(vb_store *s, const char *sql, vb_error *err) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        db_error(s, err, "prepare");
        return NULL;
    }
    return st;
}

/* Steps a statement to completion and finalizes it. */
static int run(vb_store *s, sqlite3_stmt *st, vb_error *err, const char *what) {
    int rc = sqlite3_step(st);
    while (rc == SQLITE_ROW) rc = sqlite3_step(st);
    vb_store_class cls = VB_STORE_OK;
    if (rc != SQLITE_DONE) cls = store_fail(s, err, classify(rc), "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
    sqlite3_finalize(st);
    return cls;
}

static void bind_text(sqlite3_stmt *st, int i, const char *v) {
    if (v) sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, i);
}

static void point_text(const vb_plan_item *it, char *buf, size_t len) {
    buf[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < it->n_point && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s=%s", i ? "," : "", it->point[i].key, it->point[i].value);
}

int vb_store_init_campaign(vb_store *s, const vb_profile *p, const char *engines_csv, const vb_plan *plan,
                           vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    if (exec(s, "BEGIN IMMEDIATE", err)) return s->last;
    sqlite3_stmt *st = prepare(s, "INSERT INTO campaign (id, name, profile_source, profile_yaml, engines, status, "
                                  "runs, created_at, updated_at) VALUES (1, ?, ?, ?, ?, 'running', 0, ?, ?)", err);
    if (!st) goto fail;
    bind_text(st, 1, p->name);
    bind_text(st, 2, p->source);
    bind_text(st, 3, p->yaml);
    bind_text(st, 4, engines_csv);
    bind_text(st, 5, now);
    bind_text(st, 6, now);
    if (run(s, st, err, "recording the campaign")) goto fail;
    for (size_t i = 0; i < plan->n_items; i++) {
        const vb_plan_item *it = &plan->items[i];
        char point[512];
        point_text(it, point, sizeof point);
        st = prepare(s, "INSERT INTO plan (key, seq, phase, engine, dataset, point, build) VALUES (?, ?, ?, ?, ?, ?, ?)",
                     err);
        if (!st) goto fail;
        bind_text(st, 1, it->key);
        sqlite3_bind_int(st, 2, it->seq);
        bind_text(st, 3, vb_phase_name(it->kind));
        bind_text(st, 4, p->engines[it->engine].name);
        bind_text(st, 5, p->datasets[it->dataset].name);
        bind_text(st, 6, point);
        sqlite3_bind_int64(st, 7, it->p.build > 0 ? it->p.build : 1);
        if (run(s, st, err, "recording the plan")) goto fail;
    }
    return commit(s, err);
fail:
    rollback(s);
    return s->last;
}

static char *column_dup(sqlite3_stmt *st, int i) {
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? strdup((const char *)t) : NULL;
}

int vb_store_load_campaign(vb_store *s, char **yaml, char **source, char **engines, char **status, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "SELECT profile_yaml, profile_source, engines, status FROM campaign WHERE id = 1", err);
    if (!st) return VB_ERROR;
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return vb_error_set(err, "results", VB_STORE_RETRY, "%s holds no campaign (its creation did not finish): remove it and "
                                               "start again with `vbench run --out %s`", s->path, s->path);
    }
    *yaml = column_dup(st, 0);
    *source = column_dup(st, 1);
    *engines = column_dup(st, 2);
    *status = column_dup(st, 3);
    sqlite3_finalize(st);
    return VB_OK;
}

int vb_store_check_plan(vb_store *s, const vb_plan *plan, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "SELECT key, seq FROM plan ORDER BY seq", err);
    if (!st) return VB_ERROR;
    size_t n = 0;
    int rc = VB_OK;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0);
        if (n >= plan->n_items || strcmp(plan->items[n].key, key) != 0) {
            rc = vb_error_set(err, "results", VB_STORE_RETRY, "%s: stored plan item %zu (%s) does not match the profile's plan",
                              s->path, n, key);
            break;
        }
        n++;
    }
    sqlite3_finalize(st);
    if (rc == VB_OK && n != plan->n_items)
        rc = vb_error_set(err, "results", VB_STORE_RETRY, "%s: stored plan has %zu items, the profile gives %zu", s->path, n,
                          plan->n_items);
    return rc;
}

int vb_store_begin_run(vb_store *s, int retry_failed, const char *resumed_by, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    if (exec(s, "BEGIN IMMEDIATE", err)) return s->last;
    char sql[1024];
    snprintf(sql, sizeof sql,
             "INSERT INTO event (at, level, item_key, source, message, kind) SELECT '%s', 'warn', key, 'coordinator', "
             "'item was running when the coordinator stopped; it runs again unless its agent comes back with it', "
             "'item_orphaned' "
             "FROM plan WHERE status = 'running';"
             "UPDATE plan SET status = 'interrupted' WHERE status = 'running';"
             "UPDATE plan SET status = 'pending' WHERE status = 'expired';"
             "UPDATE campaign SET runs = runs + 1, status = 'running', updated_at = '%s', finished_at = NULL;"
             /* a server whose last row says ready went down with a coordinator that could not say so (killed):
              * its row is closed here, so every server start has its end row */
             "INSERT INTO server_log (engine, unit, state, message, recorded_at) SELECT engine, unit, 'lost', "
             "'the coordinator stopped without recording this server''s end (killed?); closed when the campaign "
             "resumed', '%s' FROM server_log AS l WHERE state = 'ready' AND rowid = "
             "(SELECT MAX(rowid) FROM server_log WHERE engine = l.engine);",
             now, now, now);
    if (exec(s, sql, err)) goto fail;
    if (retry_failed && exec(s, "UPDATE plan SET status = 'pending', error = NULL WHERE status IN ('failed', 'skipped')", err))
        goto fail;
    if (resumed_by) {
        sqlite3_stmt *st = prepare(s, "INSERT INTO event (at, level, item_key, source, message, kind) "
                                      "VALUES (?, 'info', NULL, 'coordinator', 'resumed: ' || ?, 'resumed')", err);
        if (!st) goto fail;
        bind_text(st, 1, now);
        bind_text(st, 2, resumed_by);
        if (run(s, st, err, "recording the resume")) goto fail;
    }
    return commit(s, err);
fail:
    rollback(s);
    return s->last;
}

int vb_store_item_status(vb_store *s, const char *key, char *buf, size_t len, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "SELECT status FROM plan WHERE key = ?", err);
    if (!st) return s->last;
    bind_text(st, 1, key);
    int rc = VB_OK;
    if (sqlite3_step(st) == SQLITE_ROW) snprintf(buf, len, "%s", sqlite3_column_text(st, 0));
    else rc = poison(s, err, "unknown plan item %s", key);
    sqlite3_finalize(st);
    return rc;
}

int vb_store_item_start(vb_store *s, const char *key, const char *agent, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    sqlite3_stmt *st = prepare(s, "UPDATE plan SET status = 'running', attempts = attempts + 1, agent = ?, "
                                  "started_at = ?, finished_at = NULL, error = NULL WHERE key = ?", err);
    if (!st) return s->last;
    bind_text(st, 1, agent);
    bind_text(st, 2, now);
    bind_text(st, 3, key);
    return run(s, st, err, "starting a plan item");
}

int vb_store_item_info(vb_store *s, const char *key, char *status, size_t status_len, int *attempts, char *agent,
                       size_t agent_len, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "SELECT status, attempts, COALESCE(agent, '') FROM plan WHERE key = ?", err);
    if (!st) return s->last;
    bind_text(st, 1, key);
    int rc = VB_OK;
    if (sqlite3_step(st) == SQLITE_ROW) {
        snprintf(status, status_len, "%s", sqlite3_column_text(st, 0));
        *attempts = sqlite3_column_int(st, 1);
        snprintf(agent, agent_len, "%s", sqlite3_column_text(st, 2));
    } else {
        rc = poison(s, err, "unknown plan item %s", key);
    }
    sqlite3_finalize(st);
    return rc;
}

int vb_store_item_orphan(vb_store *s, char *key, size_t key_len, char *agent, size_t agent_len, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "SELECT key, agent FROM plan WHERE attempts > 0 AND agent IS NOT NULL AND "
                                  "(status = 'running' OR (status = 'interrupted' AND error IS NULL)) "
                                  "ORDER BY started_at DESC LIMIT 1", err);
    if (!st) return s->last;
    key[0] = agent[0] = '\0';
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        snprintf(key, key_len, "%s", sqlite3_column_text(st, 0));
        snprintf(agent, agent_len, "%s", sqlite3_column_text(st, 1));
    }
    vb_store_class cls = VB_STORE_OK;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) cls = db_error(s, err, "reading the plan");
    sqlite3_finalize(st);
    return cls;
}

int vb_store_item_adopt(vb_store *s, const char *key, const char *agent, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "UPDATE plan SET status = 'running', agent = ?, finished_at = NULL, error = NULL "
                                  "WHERE key = ?", err);
    if (!st) return s->last;
    bind_text(st, 1, agent);
    bind_text(st, 2, key);
    return run(s, st, err, "taking over a plan item");
}

int vb_store_item_finish(vb_store *s, const char *key, const char *status, const char *error, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    sqlite3_stmt *st = prepare(s, "UPDATE plan SET status = ?, finished_at = ?, error = ? WHERE key = ?", err);
    if (!st) return s->last;
    bind_text(st, 1, status);
    bind_text(st, 2, now);
    bind_text(st, 3, error);
    bind_text(st, 4, key);
    return run(s, st, err, "finishing a plan item");
}

/* Latency columns come from the merged histogram, here, so every percentile in the database has one
 * definition whatever agent produced it. */
typedef struct latency_cols {
    int empty;
    double mean, p50, p95, p99, p999, max;
    unsigned char *blob;   /* (u32 bucket, u64 count) little-endian pairs; malloc'd */
    size_t blob_len;
} latency_cols;

static int latency_decode(vb_store *s, const Vbench__Histogram *lat, const char *result_key, latency_cols *out, vb_error *err) {
    memset(out, 0, sizeof *out);
    out->empty = 1;
    if (lat && lat->n_idx != lat->n_counts)
        return poison(s, err, "result %s: latency histogram has %zu buckets but %zu counts",
                            result_key, lat->n_idx, lat->n_counts);
    char why[256];
    if (lat && vb_histogram_decode_check(lat->idx, lat->counts, lat->n_idx, lat->out_of_range, lat->min_ns,
                                         lat->max_ns, why, sizeof why) != 0)
        return poison(s, err, "result %s: latency histogram: %s", result_key, why);
    vb_histogram *h = vb_histogram_new();
    if (!h) return store_fail(s, err, VB_STORE_RETRY, "%s: out of memory", s->path);
    if (lat && vb_histogram_decode_add(h, lat->idx, lat->counts, lat->n_idx) != 0) {
        vb_histogram_destroy(&h);
        return poison(s, err, "result %s: latency histogram has a bucket out of range", result_key);
    }
    if (lat) vb_histogram_decode_summary(h, lat->out_of_range, lat->min_ns, lat->max_ns);
    out->empty = vb_histogram_count(h) == 0;
    if (!out->empty) {
        out->mean = vb_histogram_mean(h) / 1e6;
        out->p50 = (double)vb_histogram_value_at_percentile(h, 50) / 1e6;
        out->p95 = (double)vb_histogram_value_at_percentile(h, 95) / 1e6;
        out->p99 = (double)vb_histogram_value_at_percentile(h, 99) / 1e6;
        out->p999 = (double)vb_histogram_value_at_percentile(h, 99.9) / 1e6;
        out->max = (double)vb_histogram_max(h) / 1e6;
    }
    vb_histogram_destroy(&h);
    size_t nb = lat ? lat->n_idx : 0;
    out->blob = malloc(nb * 12 + 1);
    out->blob_len = nb * 12;
    for (size_t i = 0; i < nb; i++) {
        uint32_t ix = lat->idx[i];
        uint64_t c = lat->counts[i];
        for (int b = 0; b < 4; b++) out->blob[i * 12 + b] = (unsigned char)(ix >> (8 * b));
        for (int b = 0; b < 8; b++) out->blob[i * 12 + 4 + b] = (unsigned char)(c >> (8 * b));
    }
    return VB_OK;
}

static void bind_double_or_null(sqlite3_stmt *st, int i, int null, double v) {
    if (null) sqlite3_bind_null(st, i);
    else sqlite3_bind_double(st, i, v);
}

/* Binds mean, p50, p95, p99, p99.9, max at *i onwards (6 columns). */
static void bind_latency(sqlite3_stmt *st, int *i, const latency_cols *l) {
    double v[] = {l->mean, l->p50, l->p95, l->p99, l->p999, l->max};
    for (int j = 0; j < 6; j++) bind_double_or_null(st, (*i)++, l->empty, v[j]);
}

/* The four columns every result row starts with. */
static void bind_keys(sqlite3_stmt *st, int *i, const Vbench__Result *r, const char *engine, const char *dataset) {
    bind_text(st, (*i)++, r->result_key);
    bind_text(st, (*i)++, r->item_key);
    bind_text(st, (*i)++, engine);
    bind_text(st, (*i)++, dataset);
}

/* A result's Measurement, or an empty one when the peer sent none (every field reads 0 / empty, as a field a
 * peer does not send does). */
static const Vbench__Measurement *measure_of(const Vbench__Measurement *m) {
    static const Vbench__Measurement none = VBENCH__MEASUREMENT__INIT;
    return m ? m : &none;
}

/* The wire's 0 / 1 / 2 (unknown / uses the index / does not) as NULL / 1 / 0, and the plan text. */
static void bind_index_used(sqlite3_stmt *st, int *i, const Vbench__Measurement *m) {
    if (m->index_used == 1 || m->index_used == 2) sqlite3_bind_int(st, (*i)++, m->index_used == 1);
    else sqlite3_bind_null(st, (*i)++);
    bind_text(st, (*i)++, m->plan && *m->plan ? m->plan : NULL);
}

/* The one place a Measurement (proto/vbench.proto) becomes columns: a one-client measurement (sweep point,
 * filtered point) has the same columns in both tables, in this order: queries, recall, id_overlap,
 * short_answers, duplicate_answers, duplicate_example, errors, elapsed_s, qps, the six latency columns,
 * client_cpu_s, latency_hist (then, after the agent and time columns, bind_index_used's two). lat is
 * m->latency decoded. */
static void bind_measure(sqlite3_stmt *st, int *i, const Vbench__Measurement *m, const latency_cols *lat) {
    sqlite3_bind_int64(st, (*i)++, (sqlite3_int64)m->queries);
    sqlite3_bind_double(st, (*i)++, m->recall);
    sqlite3_bind_double(st, (*i)++, m->id_overlap);
    sqlite3_bind_int64(st, (*i)++, (sqlite3_int64)m->short_answers);
    sqlite3_bind_int64(st, (*i)++, (sqlite3_int64)m->duplicate_answers);
    bind_text(st, (*i)++, m->duplicate_example && *m->duplicate_example ? m->duplicate_example : NULL);
    sqlite3_bind_int64(st, (*i)++, (sqlite3_int64)m->errors);
    sqlite3_bind_double(st, (*i)++, m->elapsed_s);
    sqlite3_bind_double(st, (*i)++, m->qps);
    bind_latency(st, i, lat);
    sqlite3_bind_double(st, (*i)++, m->client_cpu_s);
    sqlite3_bind_blob(st, (*i)++, lat->blob, (int)lat->blob_len, SQLITE_TRANSIENT);
}

static int insert_sweep(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                        const char *agent, const char *now, vb_error *err) {
    const Vbench__SweepResult *w = r->sweep;
    const Vbench__Measurement *m = measure_of(w->m);
    latency_cols lat;
    int lrc = latency_decode(s, m->latency, r->result_key, &lat, err);
    if (lrc) return lrc;
    sqlite3_stmt *st = prepare(s,
        "INSERT INTO sweep_result (result_key, item_key, engine, dataset, ef_search, clients, queries, recall, "
        "id_overlap, short_answers, duplicate_answers, duplicate_example, errors, elapsed_s, qps, mean_ms, p50_ms, "
        "p95_ms, p99_ms, p999_ms, max_ms, client_cpu_s, latency_hist, agent, recorded_at, index_used, plan, "
        "answers, warmup_queries, warmup_s) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    int rc = st ? VB_STORE_OK : s->last;
    if (st) {
        int i = 1;
        bind_keys(st, &i, r, engine, dataset);
        sqlite3_bind_int(st, i++, w->ef_search);
        sqlite3_bind_int(st, i++, (int)(w->clients ? w->clients : 1));
        bind_measure(st, &i, m, &lat);
        bind_text(st, i++, agent);
        bind_text(st, i++, now);
        bind_index_used(st, &i, m);
        /* Kept as the agent sent it; report/export_annb.c checks its shape when it reads it. */
        if (w->answers.len > 0) sqlite3_bind_blob(st, i++, w->answers.data, (int)w->answers.len, SQLITE_STATIC);
        else sqlite3_bind_null(st, i++);
        if (w->warmup_queries > 0) {
            sqlite3_bind_int64(st, i++, (sqlite3_int64)w->warmup_queries);
            sqlite3_bind_double(st, i++, w->warmup_s);
        } else {
            sqlite3_bind_null(st, i++);
            sqlite3_bind_null(st, i++);
        }
        rc = run(s, st, err, "recording a recall sweep result");
    }
    free(lat.blob);
    return rc;
}

static int insert_window(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                         const char *agent, const char *now, vb_error *err) {
    const Vbench__WindowResult *w = r->window;
    latency_cols lat, lag;
    int lrc = latency_decode(s, w->latency, r->result_key, &lat, err);
    if (lrc) return lrc;
    if ((lrc = latency_decode(s, w->lag, r->result_key, &lag, err))) {
        free(lat.blob);
        return lrc;
    }
    double fmin = 0, fsum = 0;
    char *fjson = NULL;
    size_t flen;
    FILE *f = open_memstream(&fjson, &flen);
    fputc('[', f);
    for (size_t j = 0; j < w->n_fraction_in_call; j++) {
        double v = w->fraction_in_call[j];
        /* printf writes NaN and infinity as "nan" and "inf", which are not JSON (found by tests/fuzz/fuzz_wire.c) */
        if (isfinite(v)) fprintf(f, "%s%.4f", j ? "," : "", v);
        else fprintf(f, "%snull", j ? "," : "");
        fsum += v;
        if (j == 0 || v < fmin) fmin = v;
    }
    fputc(']', f);
    fclose(f);
    sqlite3_stmt *st = prepare(s,
        "INSERT INTO window_result (result_key, item_key, engine, dataset, clients, repeat, ef_search, window_s, "
        "queries, errors, qps, mean_ms, p50_ms, p95_ms, p99_ms, p999_ms, max_ms, in_call_s, in_flight, qps_x_p50, "
        "fraction_in_call_min, fraction_in_call_mean, fraction_in_call, client_cpu_s, warmup_queries, edge_queries, "
        "server_calls, server_exec_s, window_start, wait_rounds, wait_unit, server_window_calls, server_window_exec_s, "
        "target_rate, late_starts, lag_p99_ms, clients_lost, latency_hist, agent, recorded_at) VALUES "
        "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    int rc = st ? VB_STORE_OK : s->last;
    if (st) {
        int i = 1, nf = (int)w->n_fraction_in_call;
        bind_keys(st, &i, r, engine, dataset);
        sqlite3_bind_int(st, i++, (int)w->clients);
        sqlite3_bind_int(st, i++, (int)w->repeat);
        sqlite3_bind_int(st, i++, w->ef_search);
        sqlite3_bind_double(st, i++, w->window_s);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->queries);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->errors);
        sqlite3_bind_double(st, i++, w->qps);
        bind_latency(st, &i, &lat);
        sqlite3_bind_double(st, i++, w->in_call_s);
        sqlite3_bind_double(st, i++, w->window_s > 0 ? w->in_call_s / w->window_s : 0);
        bind_double_or_null(st, i++, lat.empty, w->qps * lat.p50 / 1e3);
        bind_double_or_null(st, i++, nf == 0, fmin);
        bind_double_or_null(st, i++, nf == 0, nf ? fsum / nf : 0);
        bind_text(st, i++, fjson);
        sqlite3_bind_double(st, i++, w->client_cpu_s);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->warmup_queries);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->edge_queries);
        if (w->server_stats) sqlite3_bind_int64(st, i++, (sqlite3_int64)w->server_calls);
        else sqlite3_bind_null(st, i++);
        bind_double_or_null(st, i++, !w->server_stats, w->server_exec_s);
        bind_double_or_null(st, i++, !(w->window_start > 0), w->window_start);
        if (w->wait_rounds) sqlite3_bind_int64(st, i++, (sqlite3_int64)w->wait_rounds);
        else sqlite3_bind_null(st, i++);
        if (w->wait_rounds && w->wait_unit && w->wait_unit[0]) bind_text(st, i++, w->wait_unit);
        else sqlite3_bind_null(st, i++);
        if (w->server_window_calls > 0) sqlite3_bind_int64(st, i++, (sqlite3_int64)w->server_window_calls);
        else sqlite3_bind_null(st, i++);
        bind_double_or_null(st, i++, w->server_window_calls <= 0, w->server_window_exec_s);
        bind_double_or_null(st, i++, w->target_rate <= 0, w->target_rate);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->late_starts);
        bind_double_or_null(st, i++, lag.empty, lag.p99);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->clients_lost);
        sqlite3_bind_blob(st, i++, lat.blob, (int)lat.blob_len, SQLITE_TRANSIENT);
        bind_text(st, i++, agent);
        bind_text(st, i++, now);
        rc = run(s, st, err, "recording a concurrency window");
    }
    free(fjson);
    free(lat.blob);
    free(lag.blob);
    return rc;
}

static int insert_filtered(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                           const char *agent, const char *now, vb_error *err) {
    const Vbench__FilteredResult *w = r->filtered;
    const Vbench__Measurement *m = measure_of(w->m);
    latency_cols lat;
    int lrc = latency_decode(s, m->latency, r->result_key, &lat, err);
    if (lrc) return lrc;
    sqlite3_stmt *st = prepare(s,
        "INSERT INTO filtered_result (result_key, item_key, engine, dataset, selectivity, passing_rows, filter, "
        "ef_search, queries, recall, id_overlap, short_answers, duplicate_answers, duplicate_example, errors, "
        "elapsed_s, qps, mean_ms, p50_ms, p95_ms, p99_ms, p999_ms, max_ms, client_cpu_s, latency_hist, agent, "
        "recorded_at, index_used, plan, predicate, passed_share) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        err);
    int rc = st ? VB_STORE_OK : s->last;
    if (st) {
        int i = 1;
        bind_keys(st, &i, r, engine, dataset);
        sqlite3_bind_double(st, i++, w->selectivity);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->passing_rows);
        bind_text(st, i++, w->filter);
        sqlite3_bind_int(st, i++, w->ef_search);
        bind_measure(st, &i, m, &lat);
        bind_text(st, i++, agent);
        bind_text(st, i++, now);
        bind_index_used(st, &i, m);
        bind_text(st, i++, w->predicate && w->predicate[0] ? w->predicate : "range");
        if (w->passed_share > 0) sqlite3_bind_double(st, i++, w->passed_share);
        else sqlite3_bind_null(st, i++);   /* an older agent's result: not sent */
        rc = run(s, st, err, "recording a filtered result");
    }
    free(lat.blob);
    return rc;
}

static int insert_churn(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                        const char *agent, const char *now, vb_error *err) {
    const Vbench__ChurnResult *c = r->churn;
    const Vbench__Measurement *m = measure_of(c->m);
    if (c->stage < VBENCH__CHURN_STAGE__CHURN_BEFORE || c->stage > VBENCH__CHURN_STAGE__CHURN_CHECKPOINT)
        return poison(s, err, "result %s: churn stage %d is not one of this coordinator's", r->result_key, (int)c->stage);
    latency_cols lat;
    int lrc = latency_decode(s, m->latency, r->result_key, &lat, err);
    if (lrc) return lrc;
    int measured = c->stage == VBENCH__CHURN_STAGE__CHURN_BEFORE || c->stage == VBENCH__CHURN_STAGE__CHURN_AFTER;
    int rows = !measured && c->stage != VBENCH__CHURN_STAGE__CHURN_MAINTAIN;
    int reinsert = c->stage == VBENCH__CHURN_STAGE__CHURN_REINSERT;
    sqlite3_stmt *st = prepare(s,
        "INSERT INTO churn_result (result_key, item_key, engine, dataset, stage, qps, recall, p50_ms, p99_ms, "
        "queries, short_answers, errors, rows_planned, rows_done, rows_from, seconds, rows_per_s, completed, "
        "ids_reused, agent, recorded_at, duplicate_answers, duplicate_example, repeat) VALUES "
        "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    int rc = st ? VB_STORE_OK : s->last;
    if (st) {
        int i = 1;
        bind_keys(st, &i, r, engine, dataset);
        bind_text(st, i++, vb_wire_churn_stage_name(c->stage));
        bind_double_or_null(st, i++, !measured, m->qps);
        bind_double_or_null(st, i++, !measured, m->recall);
        bind_double_or_null(st, i++, !measured || lat.empty, lat.p50);
        bind_double_or_null(st, i++, !measured || lat.empty, lat.p99);
        if (measured) {
            sqlite3_bind_int64(st, i++, (sqlite3_int64)m->queries);
            sqlite3_bind_int64(st, i++, (sqlite3_int64)m->short_answers);
            sqlite3_bind_int64(st, i++, (sqlite3_int64)m->errors);
        } else {
            for (int j = 0; j < 3; j++) sqlite3_bind_null(st, i++);
        }
        sqlite3_bind_int64(st, i++, (sqlite3_int64)c->rows_planned);
        if (rows) sqlite3_bind_int64(st, i++, (sqlite3_int64)c->rows_done);
        else sqlite3_bind_null(st, i++);
        int attempt = reinsert || c->stage == VBENCH__CHURN_STAGE__CHURN_CHECKPOINT;
        if (attempt) sqlite3_bind_int64(st, i++, (sqlite3_int64)c->rows_from);
        else sqlite3_bind_null(st, i++);
        sqlite3_bind_double(st, i++, c->seconds);
        bind_double_or_null(st, i++, !rows, c->rows_per_s);
        if (reinsert) sqlite3_bind_int(st, i++, c->completed);
        else sqlite3_bind_null(st, i++);
        if (reinsert) sqlite3_bind_int(st, i++, c->ids_reused);
        else sqlite3_bind_null(st, i++);
        bind_text(st, i++, agent);
        bind_text(st, i++, now);
        /* before / after only; 0 (the column's default) for the stages that run no queries */
        sqlite3_bind_int64(st, i++, measured ? (sqlite3_int64)m->duplicate_answers : 0);
        bind_text(st, i++, measured && m->duplicate_example && *m->duplicate_example ? m->duplicate_example : NULL);
        if (measured) sqlite3_bind_int(st, i++, c->repeat > 0 ? (int)c->repeat : 1);   /* 0: an older agent */
        else sqlite3_bind_null(st, i++);
        rc = run(s, st, err, "recording a churn result");
    }
    free(lat.blob);
    return rc;
}

static int insert_load_checkpoint(vb_store *s, const Vbench__Result *r, const char *agent, const char *now,
                                  vb_error *err) {
    const Vbench__BuildResult *b = r->build;
    sqlite3_stmt *st = prepare(s,
        "INSERT INTO load_checkpoint (result_key, item_key, attempt, connections, slice_rows, rows, load_s, attempts, "
        "agent, recorded_at) VALUES (?,?,?,?,?,?,?,?,?,?)", err);
    if (!st) return s->last;
    bind_text(st, 1, r->result_key);
    bind_text(st, 2, r->item_key);
    sqlite3_bind_int(st, 3, (int)r->attempt);
    sqlite3_bind_int(st, 4, (int)b->load_connections);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)b->slice_rows);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)b->rows);
    sqlite3_bind_double(st, 7, b->load_s);
    sqlite3_bind_int(st, 8, (int)b->attempts);
    bind_text(st, 9, agent);
    bind_text(st, 10, now);
    return run(s, st, err, "recording a load checkpoint");
}

/* p50 and p99 of a wire histogram in ms, NULL columns when it is empty (or absent). */
static int bind_hist_p50_p99(vb_store *s, sqlite3_stmt *st, int *i, const Vbench__Histogram *h, const char *key,
                             vb_error *err) {
    latency_cols c;
    int rc = latency_decode(s, h, key, &c, err);
    if (rc) return rc;
    bind_double_or_null(st, (*i)++, c.empty, c.p50);
    bind_double_or_null(st, (*i)++, c.empty, c.p99);
    free(c.blob);
    return VB_STORE_OK;
}

static int insert_streaming(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                            const char *agent, const char *now, vb_error *err) {
    const Vbench__StreamingResult *w = r->streaming;
    const Vbench__Measurement *m = measure_of(w->m);
    latency_cols lat;
    int lrc = latency_decode(s, m->latency, r->result_key, &lat, err);
    if (lrc) return lrc;
    sqlite3_stmt *st = prepare(s,
        "INSERT INTO streaming_result (result_key, item_key, engine, dataset, attempt, stage_index, stage, at_rest, "
        "insert_rate, clients, rows_total, rows_initial, rows_visible, queries, recall, short_answers, errors, "
        "elapsed_s, qps, mean_ms, p50_ms, p95_ms, p99_ms, p999_ms, max_ms, latency_hist, fresh_rows_found, "
        "rows_during_window, rows_scheduled, rows_inserted, interval_s, offered_rows_s, achieved_rows_s, "
        "insert_p50_ms, insert_p99_ms, max_lag_s, fresh_probes, fresh_never, fresh_p50_ms, fresh_p99_ms, "
        "insert_errors, rows_inserted_total, rows_scheduled_total, recall_full, rows_scheduled_window_end, "
        "fresh_row_max, interval_max_lag_s, agent, recorded_at) VALUES "
        "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    int rc = st ? VB_STORE_OK : s->last;
    if (st) {
        int i = 1;
        bind_keys(st, &i, r, engine, dataset);
        sqlite3_bind_int64(st, i++, r->attempt);
        sqlite3_bind_int64(st, i++, w->stage_index);
        sqlite3_bind_double(st, i++, w->stage);
        sqlite3_bind_int(st, i++, w->at_rest);
        sqlite3_bind_double(st, i++, w->insert_rate);
        sqlite3_bind_int64(st, i++, w->clients);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->rows_total);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->rows_initial);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->rows_visible);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)m->queries);
        bind_double_or_null(st, i++, m->queries == 0, m->recall);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)m->short_answers);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)m->errors);
        sqlite3_bind_double(st, i++, m->elapsed_s);
        sqlite3_bind_double(st, i++, m->qps);
        bind_latency(st, &i, &lat);
        sqlite3_bind_blob(st, i++, lat.blob, (int)lat.blob_len, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->fresh_rows_found);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->rows_during_window);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->rows_scheduled);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)w->rows_inserted);
        sqlite3_bind_double(st, i++, w->interval_s);
        bind_double_or_null(st, i++, w->at_rest, w->offered_rows_s);
        bind_double_or_null(st, i++, w->at_rest, w->achieved_rows_s);
        rc = bind_hist_p50_p99(s, st, &i, w->insert_latency, r->result_key, err);
        if (rc == VB_STORE_OK) {
            sqlite3_bind_double(st, i++, w->max_lag_s);
            sqlite3_bind_int64(st, i++, (sqlite3_int64)w->fresh_probes);
            sqlite3_bind_int64(st, i++, (sqlite3_int64)w->fresh_never);
            rc = bind_hist_p50_p99(s, st, &i, w->freshness, r->result_key, err);
        }
        if (rc == VB_STORE_OK) {
            sqlite3_bind_int64(st, i++, (sqlite3_int64)w->insert_errors);
            sqlite3_bind_int64(st, i++, (sqlite3_int64)w->rows_inserted_total);
            sqlite3_bind_int64(st, i++, (sqlite3_int64)w->rows_scheduled_total);
            bind_double_or_null(st, i++, w->recall_full < 0, w->recall_full);
            /* 0 from an agent before issue 36.1, which did not send them */
            if (w->rows_scheduled_window_end > 0)
                sqlite3_bind_int64(st, i++, (sqlite3_int64)w->rows_scheduled_window_end);
            else
                sqlite3_bind_null(st, i++);
            if (w->fresh_rows_found > 0 && w->fresh_row_max > 0)
                sqlite3_bind_int64(st, i++, (sqlite3_int64)w->fresh_row_max);
            else
                sqlite3_bind_null(st, i++);
            bind_double_or_null(st, i++, w->rows_scheduled_window_end == 0, w->interval_max_lag_s);
            bind_text(st, i++, agent);
            bind_text(st, i++, now);
            rc = run(s, st, err, "recording a streaming window");
        } else
            sqlite3_finalize(st);
    }
    free(lat.blob);
    return rc;
}

/* A pass's failed queries as a mask over its n queries; POISON for an index out of range. *mask is malloc'd. */
static int failed_mask(vb_store *s, const Vbench__Result *r, const char *pass, const uint32_t *idx, size_t n_idx,
                       size_t n, uint8_t **mask, vb_error *err) {
    *mask = calloc(n ? n : 1, 1);
    if (!*mask) return store_fail(s, err, VB_STORE_RETRY, "%s: out of memory", s->path);
    for (size_t i = 0; i < n_idx; i++) {
        if (idx[i] >= n) {
            free(*mask);
            *mask = NULL;
            return poison(s, err, "result %s: failed %s query %u of %zu", r->result_key, pass, idx[i], n);
        }
        (*mask)[idx[i]] = 1;
    }
    return VB_STORE_OK;
}

/* The rows of one pass in cold_start_query, through one statement; rolling: the cold pass's rolling medians (NULL
 * for warm). */
static int insert_cold_queries(vb_store *s, const Vbench__Result *r, const char *pass, const uint64_t *ns, size_t n,
                               const uint8_t *failed, const double *rolling, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "INSERT INTO cold_start_query (result_key, pass, n, latency_ms, ok, rolling_p50_ms) "
                                  "VALUES (?, ?, ?, ?, ?, ?)", err);
    if (!st) return s->last;
    bind_text(st, 1, r->result_key);
    bind_text(st, 2, pass);
    int rc = SQLITE_DONE;
    for (size_t i = 0; i < n && rc == SQLITE_DONE; i++) {
        sqlite3_bind_int64(st, 3, (sqlite3_int64)(i + 1));
        sqlite3_bind_double(st, 4, (double)ns[i] / 1e6);
        sqlite3_bind_int(st, 5, !failed[i]);
        bind_double_or_null(st, 6, !rolling || isnan(rolling[i]), rolling ? rolling[i] : 0);
        rc = sqlite3_step(st);
        sqlite3_reset(st);
    }
    vb_store_class cls = VB_STORE_OK;
    if (rc != SQLITE_DONE)
        cls = store_fail(s, err, classify(rc), "%s: recording a cold start's query: %s", s->path, sqlite3_errmsg(s->db));
    sqlite3_finalize(st);
    return cls;
}

/* A cold start: the summary computed here from the queries (metrics/coldstart.h), the queries beside it. */
static int insert_cold_start(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                             const char *agent, const char *now, vb_error *err) {
    const Vbench__ColdStartResult *c = r->cold_start;
    uint8_t *cf = NULL, *wf = NULL;
    double *rolling = NULL;
    vb_coldstart sum;
    int rc = VB_STORE_OK;
    if (c->applicable) {
        if (c->n_cold_ns == 0 || c->n_warm_ns == 0)
            return poison(s, err, "result %s: a cold start with %zu cold and %zu warm queries", r->result_key,
                          c->n_cold_ns, c->n_warm_ns);
        if ((rc = failed_mask(s, r, "cold", c->cold_failed, c->n_cold_failed, c->n_cold_ns, &cf, err)) ||
            (rc = failed_mask(s, r, "warm", c->warm_failed, c->n_warm_failed, c->n_warm_ns, &wf, err)))
            goto out;
        if (!(rolling = malloc(c->n_cold_ns * sizeof *rolling))) {
            rc = store_fail(s, err, VB_STORE_RETRY, "%s: out of memory", s->path);
            goto out;
        }
        if (vb_coldstart_summarize(c->cold_ns, cf, c->n_cold_ns, c->warm_ns, wf, c->n_warm_ns, rolling, &sum) != 0) {
            rc = poison(s, err, "result %s: a cold start whose every cold or every warm query failed (%s)",
                        r->result_key, c->first_error && *c->first_error ? c->first_error : "no message");
            goto out;
        }
    }
    sqlite3_stmt *st = prepare(s,
        "INSERT INTO cold_start_result (result_key, item_key, engine, dataset, applicable, reason, ef_search, queries, "
        "errors, rolling_window, tolerance, evicted_files, evicted_bytes, restart_s, first_ms, cold_mean_ms, "
        "cold_p50_ms, cold_max_ms, warm_first_ms, warm_mean_ms, warm_p50_ms, ratio_first, ratio_mean, ratio_p50, "
        "warm_after, warm_after_s, session_reopened, first_error, agent, recorded_at) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    if (!st) {
        rc = s->last;
        goto out;
    }
    int i = 1, na = !c->applicable;
    bind_keys(st, &i, r, engine, dataset);
    sqlite3_bind_int(st, i++, c->applicable);
    bind_text(st, i++, c->reason && *c->reason ? c->reason : NULL);
    if (na) {
        for (int j = 0; j < 21; j++) sqlite3_bind_null(st, i++);   /* ef_search .. session_reopened */
    } else {
        sqlite3_bind_int(st, i++, c->ef_search);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)c->n_cold_ns);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)(c->n_cold_failed + c->n_warm_failed));
        sqlite3_bind_int(st, i++, VB_COLDSTART_WINDOW);
        sqlite3_bind_double(st, i++, VB_COLDSTART_TOLERANCE);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)c->evicted_files);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)c->evicted_bytes);
        sqlite3_bind_double(st, i++, c->restart_s);
        double v[] = {sum.first_ms, sum.cold_mean_ms, sum.cold_p50_ms, sum.cold_max_ms, sum.warm_first_ms,
                      sum.warm_mean_ms, sum.warm_p50_ms, sum.ratio_first, sum.ratio_mean, sum.ratio_p50};
        for (size_t j = 0; j < sizeof v / sizeof v[0]; j++) bind_double_or_null(st, i++, !isfinite(v[j]), v[j]);
        if (sum.warm_after > 0) {
            sqlite3_bind_int64(st, i++, sum.warm_after);
            sqlite3_bind_double(st, i++, sum.warm_after_s);
        } else {
            sqlite3_bind_null(st, i++);
            sqlite3_bind_null(st, i++);
        }
        sqlite3_bind_int(st, i++, c->session_reopened);
    }
    bind_text(st, i++, c->first_error && *c->first_error ? c->first_error : NULL);
    bind_text(st, i++, agent);
    bind_text(st, i++, now);
    rc = run(s, st, err, "recording a cold start");
    if (rc == VB_STORE_OK && c->applicable)
        rc = insert_cold_queries(s, r, "cold", c->cold_ns, c->n_cold_ns, cf, rolling, err);
    if (rc == VB_STORE_OK && c->applicable)
        rc = insert_cold_queries(s, r, "warm", c->warm_ns, c->n_warm_ns, wf, NULL, err);
out:
    free(cf), free(wf), free(rolling);
    return rc;
}

static int insert_build(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                        const char *agent, const char *now, vb_error *err) {
    const Vbench__BuildResult *b = r->build;
    if (b->checkpoint) return insert_load_checkpoint(s, r, agent, now, err);
    sqlite3_stmt *st = prepare(s,
        "INSERT INTO build_result (result_key, item_key, engine, dataset, rows, load_s, build_s, first_query_s, "
        "rows_per_s, index_bytes, table_bytes, client_cpu_s, load_connections, engine_version, dataset_hash, agent, "
        "recorded_at, attempts) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    if (!st) return s->last;
    int i = 1;
    bind_keys(st, &i, r, engine, dataset);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)b->rows);
    sqlite3_bind_double(st, i++, b->load_s);
    sqlite3_bind_double(st, i++, b->build_s);
    sqlite3_bind_double(st, i++, b->first_query_s);
    sqlite3_bind_double(st, i++, b->rows_per_s);
    if (b->index_bytes >= 0) sqlite3_bind_int64(st, i++, b->index_bytes);
    else sqlite3_bind_null(st, i++);
    if (b->table_bytes >= 0) sqlite3_bind_int64(st, i++, b->table_bytes);
    else sqlite3_bind_null(st, i++);
    sqlite3_bind_double(st, i++, b->client_cpu_s);
    sqlite3_bind_int(st, i++, (int)b->load_connections);
    bind_text(st, i++, b->engine_version);
    bind_text(st, i++, b->dataset_hash);
    bind_text(st, i++, agent);
    bind_text(st, i++, now);
    sqlite3_bind_int(st, i++, b->attempts > 0 ? (int)b->attempts : 1);
    return run(s, st, err, "recording a build result");
}

static int result_known(vb_store *s, const char *key, int *known, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "SELECT 1 FROM build_result WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM sweep_result WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM window_result WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM filtered_result WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM churn_result WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM load_checkpoint WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM streaming_result WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM cold_start_result WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM capacity_window WHERE result_key = ?1 UNION ALL "
                                  "SELECT 1 FROM capacity_result WHERE result_key = ?1", err);
    if (!st) return s->last;
    bind_text(st, 1, key);
    int rc = sqlite3_step(st);
    *known = rc == SQLITE_ROW;
    vb_store_class cls = VB_STORE_OK;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) cls = db_error(s, err, "looking up a result key");
    sqlite3_finalize(st);
    return cls;
}

/* The result's Measurement, when it has one that scored recall with its distribution (an older agent sends none):
 * a sweep or filtered point, churn before / after, a streaming window. */
static const Vbench__Measurement *measured_recall(const Vbench__Result *r) {
    const Vbench__Measurement *m = NULL;
    switch (r->body_case) {
    case VBENCH__RESULT__BODY_SWEEP: m = r->sweep->m; break;
    case VBENCH__RESULT__BODY_FILTERED: m = r->filtered->m; break;
    case VBENCH__RESULT__BODY_CHURN: m = r->churn->m; break;
    case VBENCH__RESULT__BODY_STREAMING: m = r->streaming->m; break;
    default: break;
    }
    return m && m->recall_queries > 0 ? m : NULL;
}

/* The one place a Measurement's recall distribution becomes a row (table recall_dist), for every kind of result.
 * The per-query values are kept as sent when their length is whole floats; a blob of another length is a bad
 * result and poisons it. */
static int insert_recall_dist(vb_store *s, const Vbench__Result *r, const Vbench__Measurement *m, vb_error *err) {
    if (m->query_recall.len % 4 != 0)
        return poison(s, err, "result %s: query_recall of %zu bytes is not whole float32 values", r->result_key,
                      m->query_recall.len);
    sqlite3_stmt *st = prepare(s,
        "INSERT INTO recall_dist (result_key, item_key, queries, recall_min, recall_p1, recall_p10, recall_p50, "
        "zero_share, below_half_share, query_recall) VALUES (?,?,?,?,?,?,?,?,?,?)", err);
    if (!st) return s->last;
    bind_text(st, 1, r->result_key);
    bind_text(st, 2, r->item_key);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)m->recall_queries);
    sqlite3_bind_double(st, 4, m->recall_min);
    sqlite3_bind_double(st, 5, m->recall_p1);
    sqlite3_bind_double(st, 6, m->recall_p10);
    sqlite3_bind_double(st, 7, m->recall_p50);
    sqlite3_bind_double(st, 8, m->recall_zero_share);
    sqlite3_bind_double(st, 9, m->recall_below_half_share);
    if (m->query_recall.len > 0) sqlite3_bind_blob(st, 10, m->query_recall.data, (int)m->query_recall.len, SQLITE_STATIC);
    else sqlite3_bind_null(st, 10);
    return run(s, st, err, "recording a recall distribution");
}

int vb_store_commit_result(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                           const char *agent, int *duplicate, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    *duplicate = 0;
    switch (r->body_case) {
    case VBENCH__RESULT__BODY_BUILD:
    case VBENCH__RESULT__BODY_SWEEP:
    case VBENCH__RESULT__BODY_WINDOW:
    case VBENCH__RESULT__BODY_FILTERED:
    case VBENCH__RESULT__BODY_CHURN:
    case VBENCH__RESULT__BODY_STREAMING:
    case VBENCH__RESULT__BODY_COLD_START:
    case VBENCH__RESULT__BODY_CAPACITY_WINDOW:
    case VBENCH__RESULT__BODY_CAPACITY: break;
    default: return poison(s, err, "result %s has no body (nothing to record)", r->result_key);
    }
    if (exec(s, "BEGIN IMMEDIATE", err)) return s->last;
    int known = 0;
    if (result_known(s, r->result_key, &known, err)) {
        rollback(s);
        return s->last;
    }
    if (known) {
        *duplicate = 1;
        return commit(s, err);
    }
    int rc = VB_STORE_OK;
    switch (r->body_case) {
    case VBENCH__RESULT__BODY_BUILD: rc = insert_build(s, r, engine, dataset, agent, now, err); break;
    case VBENCH__RESULT__BODY_SWEEP: rc = insert_sweep(s, r, engine, dataset, agent, now, err); break;
    case VBENCH__RESULT__BODY_WINDOW: rc = insert_window(s, r, engine, dataset, agent, now, err); break;
    case VBENCH__RESULT__BODY_FILTERED: rc = insert_filtered(s, r, engine, dataset, agent, now, err); break;
    case VBENCH__RESULT__BODY_CHURN: rc = insert_churn(s, r, engine, dataset, agent, now, err); break;
    case VBENCH__RESULT__BODY_STREAMING: rc = insert_streaming(s, r, engine, dataset, agent, now, err); break;
    case VBENCH__RESULT__BODY_COLD_START: rc = insert_cold_start(s, r, engine, dataset, agent, now, err); break;
    /* the capacity results set their configuration themselves (store/capacity.c) */
    case VBENCH__RESULT__BODY_CAPACITY_WINDOW: rc = vb_store_insert_capacity_window(s, r, engine, dataset, agent, now, err); break;
    case VBENCH__RESULT__BODY_CAPACITY: rc = vb_store_insert_capacity(s, r, engine, dataset, agent, now, err); break;
    default: break;
    }
    if (rc != VB_STORE_OK && (r->body_case == VBENCH__RESULT__BODY_CAPACITY_WINDOW ||
                              r->body_case == VBENCH__RESULT__BODY_CAPACITY))
        s->last = (vb_store_class)rc;
    int sets_config = r->body_case != VBENCH__RESULT__BODY_CAPACITY_WINDOW && r->body_case != VBENCH__RESULT__BODY_CAPACITY;
    if (rc == VB_STORE_OK && sets_config && !(r->body_case == VBENCH__RESULT__BODY_BUILD && r->build->checkpoint)) {
        /* the configuration's label is its plan item's engine (the adapter may run several configurations); a build
         * and a sweep point name the build of the index they are (build_repeats), their item's */
        const char *table = r->body_case == VBENCH__RESULT__BODY_BUILD      ? "build_result"
                          : r->body_case == VBENCH__RESULT__BODY_SWEEP      ? "sweep_result"
                          : r->body_case == VBENCH__RESULT__BODY_WINDOW     ? "window_result"
                          : r->body_case == VBENCH__RESULT__BODY_FILTERED   ? "filtered_result"
                          : r->body_case == VBENCH__RESULT__BODY_STREAMING  ? "streaming_result"
                          : r->body_case == VBENCH__RESULT__BODY_COLD_START ? "cold_start_result"
                                                                            : "churn_result";
        int builds = r->body_case == VBENCH__RESULT__BODY_BUILD || r->body_case == VBENCH__RESULT__BODY_SWEEP;
        char sql[200];
        snprintf(sql, sizeof sql, "UPDATE %s SET (config%s) = (SELECT engine%s FROM plan WHERE key = ?) WHERE "
                 "result_key = ?", table, builds ? ", build" : "", builds ? ", build" : "");
        sqlite3_stmt *st = prepare(s, sql, err);
        if (!st) rc = s->last;
        else {
            bind_text(st, 1, r->item_key);
            bind_text(st, 2, r->result_key);
            rc = run(s, st, err, "recording the configuration");
        }
    }
    const Vbench__Measurement *mr = rc == VB_STORE_OK ? measured_recall(r) : NULL;
    if (mr) rc = insert_recall_dist(s, r, mr, err);
    /* the window's wait profile (proto WaitCount), one row per class and event */
    for (size_t i = 0; rc == VB_STORE_OK && r->body_case == VBENCH__RESULT__BODY_WINDOW && i < r->window->n_waits; i++) {
        const Vbench__WaitCount *wc = r->window->waits[i];
        sqlite3_stmt *st = prepare(s, "INSERT OR REPLACE INTO window_wait (result_key, item_key, wait_class, event, "
                                      "samples, rounds) VALUES (?, ?, ?, ?, ?, ?)", err);
        if (!st) rc = s->last;
        else {
            bind_text(st, 1, r->result_key);
            bind_text(st, 2, r->item_key);
            bind_text(st, 3, wc->wait_class ? wc->wait_class : "");
            bind_text(st, 4, wc->event ? wc->event : "");
            sqlite3_bind_int64(st, 5, (sqlite3_int64)wc->samples);
            sqlite3_bind_int64(st, 6, (sqlite3_int64)r->window->wait_rounds);
            rc = run(s, st, err, "recording a window's wait profile");
        }
    }
    for (size_t i = 0; rc == VB_STORE_OK && i < r->n_server_counts; i++) {
        const Vbench__ServerCount *sc = r->server_counts[i];
        sqlite3_stmt *st = prepare(s, "INSERT OR REPLACE INTO server_count (result_key, item_key, command, sent, server) "
                                      "VALUES (?, ?, ?, ?, ?)", err);
        if (!st) rc = s->last;
        else {
            bind_text(st, 1, r->result_key);
            bind_text(st, 2, r->item_key);
            bind_text(st, 3, sc->command);
            sqlite3_bind_int64(st, 4, (sqlite3_int64)sc->sent);
            if (sc->server >= 0) sqlite3_bind_int64(st, 5, sc->server);
            else sqlite3_bind_null(st, 5);
            rc = run(s, st, err, "recording the server's command counts");
        }
    }
    if (rc == VB_STORE_OK && r->completes_item) {
        sqlite3_stmt *st = prepare(s, "UPDATE plan SET status = 'done', finished_at = ?, error = NULL WHERE key = ?", err);
        if (!st) rc = s->last;
        else {
            bind_text(st, 1, now);
            bind_text(st, 2, r->item_key);
            rc = run(s, st, err, "marking an item done");
        }
    }
    if (rc != VB_STORE_OK) {
        rollback(s);
        return rc;
    }
    return commit(s, err);
}

const char *vb_event_kind_name(vb_event_kind k) {
#define VB_EVENT_KIND_WORD(name, word) word,
    static const char *const words[] = {VB_EVENT_KINDS(VB_EVENT_KIND_WORD)};
#undef VB_EVENT_KIND_WORD
    return (unsigned)k < VB_EVENT__COUNT ? words[k] : "note";
}

int vb_store_event(vb_store *s, vb_event_kind kind, const char *level, const char *item_key, const char *source,
                   const char *fmt, ...) {
    char msg[4096], now[40];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vb_store_now(now, sizeof now);
    sqlite3_stmt *st = prepare(s, "INSERT INTO event (at, level, item_key, source, message, kind) VALUES (?,?,?,?,?,?)",
                               NULL);
    if (!st) return s->last;
    bind_text(st, 1, now);
    bind_text(st, 2, level);
    bind_text(st, 3, item_key);
    bind_text(st, 4, source);
    bind_text(st, 5, msg);
    bind_text(st, 6, vb_event_kind_name(kind));
    return run(s, st, NULL, "recording an event");
}

int vb_store_manifest_get(vb_store *s, const char *key, char *buf, size_t len) {
    buf[0] = '\0';
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT value FROM manifest WHERE key = ?", -1, &st, NULL) != SQLITE_OK) return 0;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
    int found = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0);
    if (found) snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return found;
}

int vb_store_manifest_set(vb_store *s, const char *key, const char *value, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    sqlite3_stmt *st = prepare(s, "INSERT INTO manifest (key, value, recorded_at) VALUES (?,?,?) "
                                  "ON CONFLICT(key) DO UPDATE SET value = excluded.value, recorded_at = excluded.recorded_at", err);
    if (!st) return s->last;
    bind_text(st, 1, key);
    bind_text(st, 2, value ? value : "");
    bind_text(st, 3, now);
    return run(s, st, err, "recording the manifest");
}

int vb_store_agent_seen(vb_store *s, const Vbench__Hello *h, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    char *roles = NULL, *cpus = NULL, *versions = NULL;
    size_t lr, lc, lv;
    FILE *fr = open_memstream(&roles, &lr), *fc = open_memstream(&cpus, &lc), *fv = open_memstream(&versions, &lv);
    for (size_t i = 0; i < h->n_roles; i++) fprintf(fr, "%s%s", i ? "," : "", h->roles[i]);
    for (size_t i = 0; i < h->n_cpus; i++) fprintf(fc, "%s%d", i ? "," : "", h->cpus[i]);
    /* the versions column: a JSON object through jansson, the one JSON path (text that is not UTF-8: null) */
    json_t *vo = json_object();
    for (size_t i = 0; i < h->n_versions; i++) {
        json_t *v = json_string(h->versions[i]->value);
        json_object_set_new(vo, h->versions[i]->key, v ? v : json_null());
    }
    char *vj = json_dumps(vo, JSON_COMPACT | JSON_PRESERVE_ORDER);
    fputs(vj ? vj : "{}", fv);
    free(vj);
    json_decref(vo);
    fclose(fr);
    fclose(fc);
    fclose(fv);
    sqlite3_stmt *st = prepare(s, "INSERT INTO agent (id, host, roles, cores, cpus, memory_bytes, versions, first_seen, last_seen) "
                                  "VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET host = excluded.host, "
                                  "roles = excluded.roles, cores = excluded.cores, cpus = excluded.cpus, "
                                  "memory_bytes = excluded.memory_bytes, versions = excluded.versions, last_seen = excluded.last_seen", err);
    int rc = st ? VB_STORE_OK : s->last;
    if (st) {
        bind_text(st, 1, h->agent_id);
        bind_text(st, 2, h->host);
        bind_text(st, 3, roles);
        sqlite3_bind_int(st, 4, (int)h->cores);
        bind_text(st, 5, cpus);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)h->memory_bytes);
        bind_text(st, 7, versions);
        bind_text(st, 8, now);
        bind_text(st, 9, now);
        rc = run(s, st, err, "recording an agent");
    }
    free(roles);
    free(cpus);
    free(versions);
    return rc;
}

int vb_store_set_status(vb_store *s, const char *status, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    int fin = strcmp(status, "finished") == 0;
    sqlite3_stmt *st = prepare(s, "UPDATE campaign SET status = ?, updated_at = ?, finished_at = ? WHERE id = 1", err);
    if (!st) return s->last;
    bind_text(st, 1, status);
    bind_text(st, 2, now);
    bind_text(st, 3, fin ? now : NULL);
    return run(s, st, err, "updating the campaign status");
}

int vb_store_churn_checkpoint(vb_store *s, const char *item_key, long *rows, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "SELECT MAX(rows_done) FROM churn_result WHERE item_key = ? "
                                  "AND stage IN ('reinsert', 'checkpoint')", err);
    if (!st) return s->last;
    bind_text(st, 1, item_key);
    *rows = -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) *rows = (long)sqlite3_column_int64(st, 0);
    vb_store_class cls = VB_STORE_OK;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) cls = db_error(s, err, "reading a churn checkpoint");
    sqlite3_finalize(st);
    return cls;
}

int vb_store_load_checkpoint(vb_store *s, const char *item_key, vb_load_checkpoint *out, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "SELECT connections, slice_rows, rows, load_s, attempts FROM load_checkpoint "
                                  "WHERE item_key = ? ORDER BY attempt DESC, rows DESC LIMIT 1", err);
    if (!st) return s->last;
    bind_text(st, 1, item_key);
    memset(out, 0, sizeof *out);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        out->connections = sqlite3_column_int64(st, 0);
        out->slice_rows = sqlite3_column_int64(st, 1);
        out->rows = sqlite3_column_int64(st, 2);
        out->load_s = sqlite3_column_double(st, 3);
        out->attempts = sqlite3_column_int64(st, 4);
    }
    vb_store_class cls = VB_STORE_OK;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) cls = db_error(s, err, "reading a load checkpoint");
    sqlite3_finalize(st);
    return cls;
}

int vb_store_churn_reset(vb_store *s, const char *item_key, vb_error *err) {
    sqlite3_stmt *st = prepare(s, "DELETE FROM churn_result WHERE item_key = ?", err);
    if (!st) return s->last;
    bind_text(st, 1, item_key);
    if (run(s, st, err, "resetting a churn checkpoint")) return s->last;
    vb_store_event(s, VB_EVENT_CHURN_RESTARTED, "warn", item_key, "coordinator", "churn restarts from the beginning (on_resume: restart); "
                                                        "the earlier attempt's rows are discarded");
    return VB_OK;
}

int vb_store_plan_tally(vb_store *s, size_t *done, size_t *failed, size_t *expired, size_t *rest, char *not_done,
                        size_t len, vb_error *err) {
    *done = *failed = *expired = *rest = 0;
    if (not_done && len) not_done[0] = '\0';
    sqlite3_stmt *st = prepare(s, "SELECT key, status FROM plan ORDER BY seq", err);
    if (!st) return s->last;
    size_t used = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0), *status = (const char *)sqlite3_column_text(st, 1);
        if (status && strcmp(status, "done") == 0) {
            (*done)++;
            continue;
        }
        if (status && (strcmp(status, "failed") == 0 || strcmp(status, "skipped") == 0)) (*failed)++;
        else if (status && strcmp(status, "expired") == 0) (*expired)++;
        else (*rest)++;
        if (not_done && used + 1 < len)
            used += (size_t)snprintf(not_done + used, len - used, "%s%s (%s)", used ? ", " : "", key ? key : "?",
                                     status ? status : "?");
        if (not_done && used >= len && len > 4) snprintf(not_done + len - 4, 4, "...");
    }
    vb_store_class cls = VB_STORE_OK;
    if (rc != SQLITE_DONE) cls = db_error(s, err, "reading the plan");
    sqlite3_finalize(st);
    return cls;
}

/* ---- servers (orchestrator reports) ------------------------------------------------------------------------ */

int vb_store_server_samples(vb_store *s, const char *engine, const char *item_key, Vbench__ServerSample **rows,
                            size_t n, vb_error *err) {
    if (n == 0) return VB_OK;
    if (exec(s, "BEGIN IMMEDIATE", err)) return s->last;
    sqlite3_stmt *st = prepare(s, "INSERT OR IGNORE INTO server_sample (engine, item_key, t, cgroup_bytes, rss_bytes, "
                                  "cpu_s, pss_bytes) VALUES (?,?,?,?,?,?,?)", err);
    if (!st) {
        rollback(s);
        return s->last;
    }
    for (size_t i = 0; i < n; i++) {
        sqlite3_reset(st);
        bind_text(st, 1, engine);
        bind_text(st, 2, item_key && *item_key ? item_key : NULL);
        sqlite3_bind_double(st, 3, rows[i]->wall);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)rows[i]->cgroup_bytes);
        sqlite3_bind_int64(st, 5, (sqlite3_int64)rows[i]->rss_bytes);
        sqlite3_bind_double(st, 6, (double)rows[i]->cpu_usec / 1e6);
        sqlite3_bind_int64(st, 7, (sqlite3_int64)rows[i]->pss_bytes);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            db_error(s, err, "recording server samples");
            rollback(s);
            return s->last;
        }
    }
    sqlite3_finalize(st);
    return commit(s, err);
}

int vb_store_server_size(vb_store *s, const char *engine, const char *item_key, const char *path, long long bytes,
                         vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    sqlite3_stmt *st = prepare(s, "INSERT INTO server_size (engine, item_key, path, bytes, recorded_at) VALUES (?,?,?,?,?)", err);
    if (!st) return s->last;
    bind_text(st, 1, engine);
    bind_text(st, 2, item_key && *item_key ? item_key : NULL);
    bind_text(st, 3, path);
    sqlite3_bind_int64(st, 4, bytes);
    bind_text(st, 5, now);
    return run(s, st, err, "recording a server size");
}

int vb_store_server_log(vb_store *s, const char *engine, const char *unit, const char *state, const char *message,
                        const char *log_tail, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    sqlite3_stmt *st = prepare(s, "INSERT INTO server_log (engine, unit, state, message, log_tail, recorded_at) "
                                  "VALUES (?,?,?,?,?,?)", err);
    if (!st) return s->last;
    bind_text(st, 1, engine);
    bind_text(st, 2, unit && *unit ? unit : NULL);
    bind_text(st, 3, state);
    bind_text(st, 4, message && *message ? message : NULL);
    bind_text(st, 5, log_tail && *log_tail ? log_tail : NULL);
    bind_text(st, 6, now);
    return run(s, st, err, "recording a server event");
}

/* ---- backup ------------------------------------------------------------------------------------------------ */

void vb_store_backup_every(vb_store *s, double seconds) {
    s->backups = 1;
    s->backup_every_s = seconds;
    s->next_backup = time(NULL) + (time_t)seconds;
}

/* sqlite3_backup into FILE.bak.tmp, checked with quick_check, made durable, then renamed over FILE.bak: the
 * .bak is always a whole, good copy (a damaged source fails the check and the previous .bak stays). */
int vb_store_backup(vb_store *s, vb_error *err) {
    char tmp[1100], bak[1100], journal[1200];
    sibling(s, ".bak.tmp", tmp, sizeof tmp);
    sibling(s, ".bak", bak, sizeof bak);
    snprintf(journal, sizeof journal, "%s-journal", tmp);
    unlink(tmp);   /* left by a killed coordinator: only the lock holder writes it */
    unlink(journal);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, s->mode);
    if (fd < 0) return vb_error_set(err, "results", errno, "backup of %s: cannot create %s: %s", s->path, tmp,
                                    strerror(errno));
    fchmod(fd, s->mode);
    close(fd);
    sqlite3 *dst = NULL;
    char found[300] = "";
    int rc = sqlite3_open_v2(tmp, &dst, SQLITE_OPEN_READWRITE, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_backup *b = sqlite3_backup_init(dst, "main", s->db, "main");
        rc = b ? sqlite3_backup_step(b, -1) : sqlite3_errcode(dst);
        if (b && sqlite3_backup_finish(b) != SQLITE_OK && rc == SQLITE_DONE) rc = sqlite3_errcode(dst);
        if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    /* One self-contained file (rollback journal mode), checked as a reader would check it. */
    if (rc == SQLITE_OK) rc = sqlite3_exec(dst, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_stmt *st = NULL;
        rc = sqlite3_prepare_v2(dst, "PRAGMA quick_check(1)", -1, &st, NULL);
        if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
            const char *line = (const char *)sqlite3_column_text(st, 0);
            if (!line || strcmp(line, "ok") != 0) snprintf(found, sizeof found, "%s", line ? line : "?");
        } else if (rc == SQLITE_OK) {
            snprintf(found, sizeof found, "%s", sqlite3_errmsg(dst));
        }
        sqlite3_finalize(st);
    }
    const char *msg = rc != SQLITE_OK ? (dst ? sqlite3_errmsg(dst) : sqlite3_errstr(rc)) : NULL;
    char why[1400] = "";
    if (msg) snprintf(why, sizeof why, "%s", msg);
    sqlite3_close(dst);
    if (!why[0] && found[0]) snprintf(why, sizeof why, "the copy fails PRAGMA quick_check (%s): the source is damaged",
                                      found);
    if (!why[0]) {   /* durable before it replaces the previous backup */
        fd = open(tmp, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fsync(fd) != 0) snprintf(why, sizeof why, "fsync: %s", strerror(errno));
        if (fd >= 0) close(fd);
    }
    if (!why[0] && rename(tmp, bak) != 0) snprintf(why, sizeof why, "rename to %s: %s", bak, strerror(errno));
    if (why[0]) {
        unlink(tmp);
        unlink(journal);
        /* Only a backup that exists is kept: before the first one (a disk that fills during the first build)
         * there is none to speak of. */
        struct stat bst;
        char kept[1200];
        if (stat(bak, &bst) == 0 && S_ISREG(bst.st_mode)) snprintf(kept, sizeof kept, "the previous %s is kept", bak);
        else snprintf(kept, sizeof kept, "no backup %s has been written yet", bak);
        return vb_error_set(err, "results", VB_STORE_RETRY, "backup of %s not written (%s): %s", s->path, kept, why);
    }
    vb_fsync_dir_of(s->path);   /* the rename survives a power cut */
    return VB_OK;
}

void vb_store_backup_tick(vb_store *s) {
    if (!s->backups || s->backup_every_s <= 0 || time(NULL) < s->next_backup) return;
    s->next_backup = time(NULL) + (time_t)s->backup_every_s;
    vb_error err;
    if (vb_store_backup(s, &err) != VB_OK) vb_store_event(s, VB_EVENT_BACKUP_FAILED, "warn", NULL, "coordinator", "%s", err.message);
}

/* ---- CPU profiles (server_profile) -------------------------------------------------------------------------- */

int vb_store_server_profile(vb_store *s, const char *engine, const char *config, const char *dataset,
                            const vb_store_profile_window *w, const Vbench__ServerProfile *pr, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    if (exec(s, "BEGIN IMMEDIATE", err)) return s->last;
    sqlite3_stmt *st = prepare(s, "INSERT OR REPLACE INTO server_profile (item_key, engine, config, dataset, clients, "
                                  "efficiency, window_start, window_end, samples, malformed, dropped, folded, "
                                  "recorded_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", err);
    if (!st) return rollback(s), s->last;
    bind_text(st, 1, pr->item_key);
    bind_text(st, 2, engine);
    bind_text(st, 3, config);
    bind_text(st, 4, dataset);
    sqlite3_bind_int(st, 5, w->clients);
    if (w->has_efficiency) sqlite3_bind_double(st, 6, w->efficiency);
    sqlite3_bind_double(st, 7, pr->window_start);
    sqlite3_bind_double(st, 8, pr->window_end);
    sqlite3_bind_int64(st, 9, (sqlite3_int64)pr->samples);
    sqlite3_bind_int64(st, 10, (sqlite3_int64)pr->malformed);
    sqlite3_bind_int64(st, 11, (sqlite3_int64)pr->dropped);
    bind_text(st, 12, pr->folded ? pr->folded : "");
    bind_text(st, 13, now);
    if (run(s, st, err, "recording a server profile")) return rollback(s), s->last;
    if (!(st = prepare(s, "DELETE FROM server_profile_function WHERE item_key = ?", err))) return rollback(s), s->last;
    bind_text(st, 1, pr->item_key);
    if (run(s, st, err, "recording a server profile")) return rollback(s), s->last;
    for (size_t i = 0; i < pr->n_top; i++) {
        if (!(st = prepare(s, "INSERT INTO server_profile_function (item_key, rank, function, samples) VALUES (?,?,?,?)",
                           err)))
            return rollback(s), s->last;
        bind_text(st, 1, pr->item_key);
        sqlite3_bind_int(st, 2, (int)i + 1);
        bind_text(st, 3, pr->top[i]->name);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)pr->top[i]->samples);
        if (run(s, st, err, "recording a server profile")) return rollback(s), s->last;
    }
    return commit(s, err);
}

int vb_store_has_server_profile(vb_store *s, const char *config, const char *dataset) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT 1 FROM server_profile WHERE config = ? AND dataset = ?", -1, &st, NULL) != SQLITE_OK)
        return 0;
    bind_text(st, 1, config);
    bind_text(st, 2, dataset);
    int found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

int vb_store_window_for_profile(vb_store *s, const char *item_key, vb_store_profile_window *w) {
    memset(w, 0, sizeof *w);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT w.clients, w.window_start, w.window_s, v.efficiency FROM window_result AS w "
                           "LEFT JOIN v_concurrency AS v ON v.engine = COALESCE(w.config, w.engine) AND v.dataset = "
                           "w.dataset AND v.clients = w.clients AND v.repeat = w.repeat AND v.qps = w.qps "
                           "AND v.target_rate IS w.target_rate WHERE w.item_key = ? AND w.window_start > 0 LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    bind_text(st, 1, item_key);
    int found = sqlite3_step(st) == SQLITE_ROW;
    if (found) {
        w->clients = sqlite3_column_int(st, 0);
        w->start = sqlite3_column_double(st, 1);
        w->end = w->start + sqlite3_column_double(st, 2);
        w->has_efficiency = sqlite3_column_type(st, 3) != SQLITE_NULL;
        w->efficiency = sqlite3_column_double(st, 3);
    }
    sqlite3_finalize(st);
    return found;
}
