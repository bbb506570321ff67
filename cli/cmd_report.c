/* `vbench report [DB ...] [-o DIR]` and `vbench export [DB] --format F [-o DIR]`. */
#include "cli/cmd_report.h"

#include <dirent.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report/export.h"
#include "report/report_html.h"
#include "util/fs.h"

static const char *usage_report =
    "usage: vbench report [DB ...] [-o DIR] [--quiet]\n"
    "\n"
    "Writes DIR/report.html (one file: charts inlined, no network fetch, readable on a phone), DIR/report.md (the\n"
    "same tables, charts beside it) and DIR/charts/*.svg, *.png with the gnuplot scripts and data that drew them.\n"
    "Several databases are drawn side by side; where their dataset, k, budget or engine versions differ the\n"
    "report says so at the top and in every chart. Charts need gnuplot (Debian's gnuplot-nox).\n"
    "\n"
    "  DB ...        results databases (default: the newest results.db/*.sqlite)\n"
    "  -o DIR        the report folder (default: beside the first DB, NAME-report/ for NAME.sqlite)\n"
    "  --quiet       no progress on stderr\n";

static const char *usage_export =
    "usage: vbench export [DB] --format csv|json|annb|bundle [-o DIR]\n"
    "\n"
    "  csv      one file per result view (header row, RFC 4180 quoting)\n"
    "  json     DIR/results.json: the manifest, the profile and every result row, one document\n"
    "  annb     ann-benchmarks result files: DIR/results/DATASET/K/ALGO/NAME.hdf5, one per recall-sweep point\n"
    "  bundle   DIR/NAME.tar.gz: the database, the report, the csv, json and annb exports, the resolved profile\n"
    "           and a README on how to reproduce the run\n"
    "\n"
    "  DB        a results database (default: the newest results.db/*.sqlite)\n"
    "  -o DIR    where to write (default: beside DB, NAME-export/)\n";

/* DB.sqlite -> DB-SUFFIX */
static void beside(const char *db, const char *suffix, char *out, size_t len) {
    snprintf(out, len, "%s", db);
    size_t l = strlen(out);
    if (l > 7 && strcmp(out + l - 7, ".sqlite") == 0) out[l - 7] = '\0';
    snprintf(out + strlen(out), len - strlen(out), "-%s", suffix);
}

int vb_cmd_report(int argc, char **argv) {
    static const struct option opts[] = {{"out-dir", required_argument, 0, 'o'}, {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    char dir[PATH_MAX] = "", def[PATH_MAX];
    const char *def_list[1] = {def}; /* the default's list lives as long as the function, not the if below */
    int quiet = 0, c;
    while ((c = getopt_long(argc, argv, "ho:q", opts, NULL)) != -1) {
        switch (c) {
        case 'o': snprintf(dir, sizeof dir, "%s", optarg); break;
        case 'q': quiet = 1; break;
        case 'h': fputs(usage_report, stdout); return 0;
        default: fputs(usage_report, stderr); return 2;
        }
    }
    const char **dbs = (const char **)argv + optind;
    size_t n = (size_t)(argc - optind);
    if (n == 0) {
        if (vb_newest_file("results.db", ".sqlite", def, sizeof def) != 0) {
            fprintf(stderr, "vbench: no results.db/*.sqlite here; name the databases: vbench report DB ...\n");
            return 2;
        }
        dbs = def_list;
        n = 1;
    }
    if (!dir[0]) beside(dbs[0], "report", dir, sizeof dir);
    vb_error err;
    vb_error_clear(&err);
    if (vb_report_write(dbs, n, dir, quiet, &err) != VB_OK) {
        fprintf(stderr, "vbench: %s\n", err.message);
        return 2;
    }
    if (!quiet) printf("%s/report.html\n", dir);
    return 0;
}

int vb_cmd_export(int argc, char **argv) {
    static const struct option opts[] = {{"format", required_argument, 0, 'f'}, {"out-dir", required_argument, 0, 'o'},
                                         {"quiet", no_argument, 0, 'q'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    char dir[PATH_MAX] = "", db[PATH_MAX] = "";
    const char *format = NULL;
    int quiet = 0, c;
    while ((c = getopt_long(argc, argv, "hf:o:q", opts, NULL)) != -1) {
        switch (c) {
        case 'f': format = optarg; break;
        case 'o': snprintf(dir, sizeof dir, "%s", optarg); break;
        case 'q': quiet = 1; break;
        case 'h': fputs(usage_export, stdout); return 0;
        default: fputs(usage_export, stderr); return 2;
        }
    }
    if (!format) {
        fprintf(stderr, "vbench: export needs --format csv|json|annb|bundle\n");
        return 2;
    }
    if (optind + 1 < argc) {
        fprintf(stderr, "vbench: export reads one database (got %d); see --help\n", argc - optind);
        return 2;
    }
    if (optind < argc) snprintf(db, sizeof db, "%s", argv[optind]);
    else if (vb_newest_file("results.db", ".sqlite", db, sizeof db) != 0) {
        fprintf(stderr, "vbench: no results.db/*.sqlite here; name the database: vbench export DB --format F\n");
        return 2;
    }
    if (!dir[0]) beside(db, "export", dir, sizeof dir);
    vb_error err;
    vb_error_clear(&err);
    if (vb_export(db, format, dir, quiet, &err) != VB_OK) {
        fprintf(stderr, "vbench: %s\n", err.message);
        return 2;
    }
    return 0;
}
