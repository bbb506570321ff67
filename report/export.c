/* `vbench export` (export.h). */
#include "report/export.h"

#include <errno.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report/export_annb.h"
#include "report/json_rows.h"
#include "report/report_html.h"
#include "store/store.h"
#include "util/fs.h"

/* The result views, one csv file each; the json export has these and the tables below. */
static const char *const views[] = {"v_build", "v_recall_sweep", "v_build_spread", "v_recall_targets", "v_recall_dist",
                                    "v_concurrency", "v_concurrency_points", "v_filtered", "v_cold_start",
                                    "v_cold_start_queries", "v_churn", "v_streaming", "v_streaming_cost", "v_capacity",
                                    "v_capacity_windows", "v_mixed", "v_mixed_ops", "v_servers", "v_server_phase",
                                    "v_validity", "v_topology", "v_topology_points", "v_nodes", NULL};
static const char *const tables[] = {"campaign", "plan", "agent", "build_result", "sweep_result", "window_result",
                                     "filtered_result", "cold_start_result", "cold_start_query", "churn_result",
                                     "recall_dist", "streaming_result", "capacity_window", "capacity_window_share",
                                     "capacity_result", "mixed_result", "server_log", "server_size", "server_profile",
                                     "server_profile_function", "event", "node_reading", "node_result",
                                     NULL};

/* RFC 4180: a field with a comma, quote, CR or LF is quoted, quotes doubled; lines end in CRLF. */
static void csv_field(FILE *f, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static int export_csv(sqlite3 *db, const char *dir, int quiet, vb_error *err) {
    if (vb_mkdirs(dir, 0755, err)) return VB_ERROR;
    for (const char *const *v = views; *v; v++) {
        char sql[128], path[PATH_MAX];
        snprintf(sql, sizeof sql, "SELECT * FROM %s", *v);
        snprintf(path, sizeof path, "%s/%s.csv", dir, *v + 2);
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
            return vb_error_set(err, "export", 1, "reading %s: %s", *v, sqlite3_errmsg(db));
        FILE *f = fopen(path, "w");
        if (!f) {
            sqlite3_finalize(st);
            return vb_error_set(err, "export", errno, "cannot write %s: %s", path, strerror(errno));
        }
        int cols = sqlite3_column_count(st), rows = 0;
        for (int i = 0; i < cols; i++) fputs(i ? "," : "", f), csv_field(f, sqlite3_column_name(st, i));
        fputs("\r\n", f);
        while (sqlite3_step(st) == SQLITE_ROW) {
            rows++;
            for (int i = 0; i < cols; i++) {
                if (i) fputc(',', f);
                if (sqlite3_column_type(st, i) == SQLITE_BLOB) fprintf(f, "%d", sqlite3_column_bytes(st, i));
                else if (sqlite3_column_type(st, i) != SQLITE_NULL) csv_field(f, (const char *)sqlite3_column_text(st, i));
            }
            fputs("\r\n", f);
        }
        sqlite3_finalize(st);
        if (fclose(f) != 0) return vb_error_set(err, "export", errno, "cannot write %s: %s", path, strerror(errno));
        if (!quiet) fprintf(stderr, "export: %s (%d rows)\n", path, rows);
    }
    return VB_OK;
}

static int export_json(sqlite3 *db, const char *dir, int quiet, vb_error *err) {
    if (vb_mkdirs(dir, 0755, err)) return VB_ERROR;
    json_t *doc = json_object(), *tabs = json_object(), *vws = json_object();
    const char *why = NULL;
    json_t *manifest = json_object();
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT key, value FROM manifest ORDER BY key", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *k = (const char *)sqlite3_column_text(st, 0), *v = (const char *)sqlite3_column_text(st, 1);
            /* the resolved profile is JSON itself: nested, not a string */
            json_t *parsed = strcmp(k, "profile.resolved") == 0 ? json_loads(v, 0, NULL) : NULL;
            if (parsed) json_object_set_new(doc, "profile", parsed);
            json_t *text = json_string(v);   /* NULL when v is not UTF-8: null, not a second copy leaked */
            json_object_set_new(manifest, k, text ? text : json_null());
        }
        sqlite3_finalize(st);
    }
    json_object_set_new(doc, "manifest", manifest);
    for (const char *const *t = tables; *t; t++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT * FROM %s", *t);
        json_t *rows = vb_json_rows(db, sql, &why);
        if (!rows) {
            json_decref(doc), json_decref(tabs), json_decref(vws);
            return vb_error_set(err, "export", 1, "reading %s: %s", *t, why);
        }
        json_object_set_new(tabs, *t, rows);
    }
    for (const char *const *v = views; *v; v++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT * FROM %s", *v);
        json_t *rows = vb_json_rows(db, sql, &why);
        if (!rows) {
            json_decref(doc), json_decref(tabs), json_decref(vws);
            return vb_error_set(err, "export", 1, "reading %s: %s", *v, why);
        }
        json_object_set_new(vws, *v, rows);
    }
    json_object_set_new(doc, "tables", tabs);
    json_object_set_new(doc, "views", vws);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/results.json", dir);
    int rc = json_dump_file(doc, path, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    json_decref(doc);
    if (rc != 0) return vb_error_set(err, "export", errno, "cannot write %s: %s", path, strerror(errno));
    if (!quiet) fprintf(stderr, "export: %s\n", path);
    return VB_OK;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static int run_tar(const char *dir, const char *archive, const char *member, vb_error *err) {
    pid_t pid = fork();
    if (pid < 0) return vb_error_set(err, "export", errno, "cannot start tar: %s", strerror(errno));
    if (pid == 0) {
        execlp("tar", "tar", "-czf", archive, "-C", dir, member, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return vb_error_set(err, "export", 1, "tar -czf %s failed (exit %d)%s", archive,
                            WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                            WIFEXITED(status) && WEXITSTATUS(status) == 127 ? ": install Debian's tar" : "");
    return VB_OK;
}

static int write_text(const char *path, const char *text, vb_error *err) {
    FILE *f = fopen(path, "w");
    if (!f || fputs(text ? text : "", f) < 0 || fclose(f) != 0)
        return vb_error_set(err, "export", errno, "cannot write %s: %s", path, strerror(errno));
    return VB_OK;
}

static int export_bundle(const char *db_path, sqlite3 *db, const char *dir, int quiet, vb_error *err) {
    char name[256] = "campaign", stage[PATH_MAX], path[PATH_MAX + 64], archive[PATH_MAX + 64];
    char *yaml = NULL, *resolved = NULL, *cmd = NULL, *rev = NULL;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT name, profile_yaml, (SELECT value FROM manifest WHERE key = 'profile.resolved'), "
                               "(SELECT value FROM manifest WHERE key = 'command_line'), "
                               "(SELECT value FROM manifest WHERE key = 'vbench.git_revision') FROM campaign",
                           -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW) {
            snprintf(name, sizeof name, "%s", sqlite3_column_text(st, 0));
            yaml = strdup(sqlite3_column_text(st, 1) ? (const char *)sqlite3_column_text(st, 1) : "");
            resolved = strdup(sqlite3_column_text(st, 2) ? (const char *)sqlite3_column_text(st, 2) : "");
            cmd = strdup(sqlite3_column_text(st, 3) ? (const char *)sqlite3_column_text(st, 3) : "(not recorded)");
            rev = strdup(sqlite3_column_text(st, 4) ? (const char *)sqlite3_column_text(st, 4) : "unknown");
        }
        sqlite3_finalize(st);
    }
    for (char *p = name; *p; p++)
        if (*p == '/' || *p == ' ') *p = '-';
    char base[PATH_MAX], *b;
    snprintf(base, sizeof base, "%s", db_path);
    b = basename(base);
    char *dot = strrchr(b, '.');
    if (dot) *dot = '\0';
    snprintf(stage, sizeof stage, "%s/%s", dir, b);
    nftw(stage, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    int rc = vb_mkdirs(stage, 0755, err);
    /* the database: a consistent copy through SQLite's backup, whatever a coordinator is doing to it */
    if (rc == VB_OK) {
        snprintf(path, sizeof path, "%s/%s.sqlite", stage, b);
        sqlite3 *dst = NULL;
        if (sqlite3_open(path, &dst) != SQLITE_OK) {
            rc = vb_error_set(err, "export", 1, "cannot write %s: %s", path, sqlite3_errmsg(dst));
        } else {
            sqlite3_backup *bk = sqlite3_backup_init(dst, "main", db, "main");
            if (!bk || sqlite3_backup_step(bk, -1) != SQLITE_DONE)
                rc = vb_error_set(err, "export", 1, "copying the database into %s: %s", path, sqlite3_errmsg(dst));
            if (bk) sqlite3_backup_finish(bk);
        }
        sqlite3_close(dst);
    }
    if (rc == VB_OK) snprintf(path, sizeof path, "%s/profile.yml", stage), rc = write_text(path, yaml, err);
    if (rc == VB_OK) snprintf(path, sizeof path, "%s/profile.resolved.json", stage), rc = write_text(path, resolved, err);
    if (rc == VB_OK) snprintf(path, sizeof path, "%s/csv", stage), rc = export_csv(db, path, quiet, err);
    if (rc == VB_OK) snprintf(path, sizeof path, "%s/json", stage), rc = export_json(db, path, quiet, err);
    if (rc == VB_OK) {
        snprintf(path, sizeof path, "%s/annb", stage);
        int have = vb_export_annb_available(db);
        if (have > 0) rc = vb_export_annb(db, path, quiet, err);
    }
    if (rc == VB_OK) {
        const char *one[] = {db_path};
        snprintf(path, sizeof path, "%s/report", stage);
        rc = vb_report_write(one, 1, path, quiet, err);
    }
    if (rc == VB_OK) {
        char *readme = NULL;
        if (asprintf(&readme,
                     "# vbench campaign %s\n\n"
                     "What is here:\n\n"
                     "- `%s.sqlite`: the results database (SQLite; `vbench show %s.sqlite` prints its tables)\n"
                     "- `report/report.html`: the report, one file that opens offline; `report/report.md` its twin\n"
                     "- `csv/`: one file per result view; `json/results.json`: every row, the manifest, the profile\n"
                     "- `annb/` (when the sweep recorded its answers): ann-benchmarks result files\n"
                     "- `profile.yml`: the profile as run; `profile.resolved.json`: with every default filled in\n\n"
                     "## Reproduce\n\n"
                     "Build vbench at revision `%s` (`git checkout %s && make`), then:\n\n"
                     "    vbench run --profile profile.yml\n\n"
                     "The command as it was run:\n\n    %s\n\n"
                     "Compare the new run with this one:\n\n"
                     "    vbench report %s.sqlite results.db/NEW.sqlite -o compare\n\n"
                     "The report flags a dataset, k, budget or engine version that differs between the two.\n",
                     name, b, b, rev, rev, cmd, b) < 0)
            readme = NULL;
        snprintf(path, sizeof path, "%s/README.md", stage);
        rc = write_text(path, readme, err);
        free(readme);
    }
    if (rc == VB_OK) {
        char member[PATH_MAX];
        snprintf(member, sizeof member, "%s", b);
        snprintf(archive, sizeof archive, "%s/%s.tar.gz", dir, b);
        rc = run_tar(dir, archive, member, err);
        if (rc == VB_OK) {
            nftw(stage, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
            if (!quiet) fprintf(stderr, "export: %s\n", archive);
            printf("%s\n", archive);
        }
    }
    free(yaml), free(resolved), free(cmd), free(rev);
    return rc;
}

int vb_export(const char *db_path, const char *format, const char *dir, int quiet, vb_error *err) {
    if (strcmp(format, "csv") != 0 && strcmp(format, "json") != 0 && strcmp(format, "annb") != 0 &&
        strcmp(format, "bundle") != 0)
        return vb_error_set(err, "export", 1, "unknown --format %s: use csv, json, annb or bundle", format);
    vb_store *store = NULL;
    vb_store_opts so = {.access = VB_STORE_READ};
    if (vb_store_open_with(db_path, &so, &store, err) != VB_OK) return VB_ERROR;
    sqlite3 *db = vb_store_db(store);
    int rc;
    if (strcmp(format, "csv") == 0) rc = export_csv(db, dir, quiet, err);
    else if (strcmp(format, "json") == 0) rc = export_json(db, dir, quiet, err);
    else if (strcmp(format, "annb") == 0) rc = vb_mkdirs(dir, 0755, err) ? VB_ERROR : vb_export_annb(db, dir, quiet, err);
    else rc = vb_mkdirs(dir, 0755, err) ? VB_ERROR : export_bundle(db_path, db, dir, quiet, err);
    vb_store_close(&store);
    return rc;
}
