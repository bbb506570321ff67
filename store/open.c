/* Opening a results database: create, check (header, identity, quick_check), upgrade an older file's schema,
 * close, discard, and the backups to FILE.bak. */
#include "store/store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/lock.h"
#include "store/views.h"
#include "util/embedded.h"
#include "util/fs.h"

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
    {"capacity_window", "host_pause_ms", "REAL"},   /* issue 37: a window failed while the client host paused */
    {"capacity_window", "discounted", "INTEGER"},
    {"mixed_result", "maintenance", "TEXT"},  /* issue 38: what the maintenance ran, the rows checked id by id */
    {"mixed_result", "rows_checked", "INTEGER"},
    {"mixed_result", "rows_vectors_checked", "INTEGER"},
    {"mixed_result", "rows_differ", "INTEGER"},
    {"mixed_result", "rows_diff_example", "TEXT"},
    {"capacity_window", "agents", "INTEGER"},   /* issue 37: the client agents that offered a window, and their shares */
    {"capacity_window_share", "client_cores", "REAL"},
    {"capacity_window_share", "window_start", "REAL"},
    {"streaming_result", "fresh_node", "INTEGER"},  /* issue 39: freshness read on a replica; lag samples' times */
    {"node_reading", "at_s", "REAL"},
    {"node_result", "build_ms", "INTEGER"},   /* issue 39: a shard's own index build */
};

static int add_missing_columns(vb_store *s, vb_error *err) {
    for (size_t i = 0; i < sizeof added_columns / sizeof added_columns[0]; i++) {
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT 1 FROM pragma_table_info('%s') WHERE name = '%s'", added_columns[i].table,
                 added_columns[i].column);
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return store_db_error(s, err, "reading the schema");
        int present = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
        if (present) continue;
        snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN %s %s", added_columns[i].table, added_columns[i].column,
                 added_columns[i].type);
        if (store_exec(s, sql, err)) return VB_ERROR;
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
        return vb_error_set(err, "results", 0, "%s is empty: not a vbench results database (a creation that failed? "
                                               "remove it and start again with `vbench run --out %s`)", s->path,
                            s->path);
    if (n > 0 && (n < sizeof sqlite_magic || memcmp(head, sqlite_magic, sizeof sqlite_magic) != 0)) {
        char bak[1100], advice[3000];
        sibling(s, ".bak", bak, sizeof bak);
        if (file_size(bak) < 0)
            return vb_error_set(err, "results", 0, "%s is not an SQLite database", s->path);
        damage_advice(s, advice, sizeof advice);   /* a results database whose first page is gone */
        return vb_error_set(err, "results", 0, "%s is not an SQLite database (its first page is damaged?): %s",
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
        return vb_error_set(err, "results", 0, "%s is an SQLite database but not a vbench results database "
                                               "(application_id 0x%08x)", s->path, (uint32_t)app);
    if (ours == 4) return VB_OK;
    if (tables == 0)
        return vb_error_set(err, "results", 0, "%s is an SQLite database with no tables: not a vbench results "
                                               "database", s->path);
    return vb_error_set(err, "results", 0, "%s is an SQLite database but not a vbench results database (it has no "
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

/* Tables newer than some files: a reader of such a file reads an empty one (read_into_memory). The tables of
 * the result kinds (store_result_kinds) are checked too: a new kind needs no line here. */
static const char *const added_tables[] = {"recall_dist" /* issue 35 */};

static int table_missing(vb_store *s, const char *table) {
    char sql[256];
    int present = 0;
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '%s'", table);
    return table_count(s, sql, &present) == VB_OK && !present;
}

static int missing_columns(vb_store *s) {
    for (size_t i = 0; i < sizeof added_tables / sizeof added_tables[0]; i++)
        if (table_missing(s, added_tables[i])) return 1;
    for (size_t i = 0; i < store_n_result_kinds; i++)
        if (table_missing(s, store_result_kinds[i].table)) return 1;
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
        return vb_error_set(err, "results", ENOMEM, "%s: no memory for a copy of an older results database", s->path);
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
    if (!schema) return vb_error_set(err, "results", 0, "the results schema is missing from this binary");
    return store_exec(s, schema->data, err) || add_missing_columns(s, err);   /* CREATE TABLE IF NOT EXISTS: new ones only */
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
        return vb_error_set(err, "results", ENOENT, "%s: no such results database", path);
    if (!create && !S_ISREG(st.st_mode))
        return vb_error_set(err, "results", 0, "%s is not a regular file: not a results database", path);
    vb_store *s = calloc(1, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", path);
    s->mode = create ? (o->mode ? o->mode : 0600) : (st.st_mode & 0777);
    if (create && !memory) {
        /* r gives x on the directories: 0600 -> 0700, 0640 -> 0750 */
        if (make_dirs(s, s->mode | ((s->mode & 0444) >> 2), err)) goto fail;
    }
    if (!read_only && !memory && vb_lock_take(path, o->campaign, s->mode, &s->lock, err)) goto fail;
    if (create && stat(path, &st) == 0) {
        vb_error_set(err, "results", EEXIST, "%s already exists%s: choose another --out, or continue it with "
                                        "`vbench resume --out %s`", path,
                     st.st_size == 0 ? " and is empty (a creation that failed? remove it)" : "", path);
        goto fail;
    }
    if (create && !memory && create_file(s, err)) goto fail;
    if (!create && check_header(s, err)) goto fail;
    int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (memory ? SQLITE_OPEN_CREATE : 0);
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        store_db_error(s, err, "open");
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
    if ((!marked && store_exec(s, marks, err)) ||
        store_exec(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;", err) ||
        !schema || store_exec(s, schema->data, err) || add_missing_columns(s, err) || vb_views_install(s->db, 0, err)) {
        if (!schema) vb_error_set(err, "results", 0, "the results schema is missing from this binary");
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
        return vb_error_set(err, "results", 0, "backup of %s not written (%s): %s", s->path, kept, why);
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
