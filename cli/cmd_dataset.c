/* `vbench dataset`: fetch a registry dataset (or any URL) into the cache, list the registry with what is here,
 * and convert VectorDBBench's parquet cases into .fbin / .ibin with a small Node.js program (the only parquet
 * reader this machine can get is hyparquet, a pure-JavaScript one from npm; Debian packages no C reader). */
#include "cli/cmd_dataset.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "datasets/dataset.h"
#include "datasets/dataset_spec.h"
#include "datasets/fetch.h"
#include "datasets/groundtruth.h"
#include "datasets/package.h"
#include "datasets/registry.h"
#include "datasets/shape.h"
#include "util/embedded.h"
#include "util/fs.h"

#include <xxhash.h>

static const char *usage_dataset =
    "usage: vbench dataset fetch NAME|URL [options]   download a dataset into the cache, checked\n"
    "       vbench dataset list [--cache-dir DIR]       the registry, and what the cache holds\n"
    "       vbench dataset info NAME [options]          what vbench finds in a registry dataset: shape, classes,\n"
    "                                                   duplicate rows, ties at the k-th neighbour\n"
    "       vbench dataset convert DIR --metric M       VectorDBBench parquet files -> .fbin + .ibin\n"
    "\n"
    "vbench dataset COMMAND --help for each.\n";

static const char *usage_fetch =
    "usage: vbench dataset fetch NAME|URL [--mirror URL|DIR] [--cache-dir DIR] [--retries N] [--quiet]\n"
    "                            [--sha256 HEX] [--size BYTES] [--output FILE] [--cut ROWS]\n"
    "\n"
    "Downloads a registry dataset (vbench dataset list) or the file at URL into CACHE/datasets/ (CACHE: --cache-dir,\n"
    "else $VBENCH_CACHE, else ~/.cache/vbench). The download goes to FILE.part and resumes from its end when it\n"
    "breaks off (HTTP Range; file:// and ftp:// too); it is checked against its size and sha256 and only then\n"
    "renamed to FILE. The registry's public files have no published checksums: they are fetched \"unverified\",\n"
    "and the sha256 of the first complete download is recorded in FILE.sha256; every later fetch and copy is\n"
    "checked against it. A file already in the cache is verified instead of fetched again. A download or copy that\n"
    "does not match is refused (a download is moved to FILE.bad). Progress on stderr: a bar with rate and ETA on a\n"
    "terminal, else a line every $VBENCH_PROGRESS_S (10) seconds.\n"
    "A TEXMEX dataset (texmex-*) is one .tar.gz archive: it is fetched and checked like any file, kept in the cache,\n"
    "and the files the dataset needs are unpacked from it (each written whole, then renamed). A big-ann 10M dataset\n"
    "(bigann-10M, text2image-10M, msturing-10M) is a cut: the first 10M rows of the 1B file, fetched with a Range\n"
    "request for those bytes only and its header set to 10M rows, as big-ann-benchmarks does. After the fetch every\n"
    "file's rows and dimension are read from its header and compared with the registry: a file of another shape\n"
    "is refused and moved to FILE.bad (with its recorded checksum, FILE.bad.sha256), so the next fetch gets it anew.\n"
    "\n"
    "  --mirror URL|DIR     fetch from here instead of the publisher: a base URL (http://, https://, ftp://,\n"
    "                       file://) or a local directory, holding the files under their cache names (the FILE\n"
    "                       column of `vbench dataset list --files`; a TEXMEX dataset's archive under its own\n"
    "                       name, e.g. siftsmall.tar.gz). Default $VBENCH_MIRROR. For machines\n"
    "                       without internet: copy the files onto a disk or a local web server and point here.\n"
    "  --retries N          after a transfer breaks off, resume up to N more times (default 5, waits 1..30 s)\n"
    "  --sha256 HEX         URL only: the file's sha256 (refused when it differs)\n"
    "  --size BYTES         URL only: the file's size\n"
    "  --output FILE        URL only: where to put it (default CACHE/datasets/ and the URL's last part)\n"
    "  --cut ROWS           URL only, a big-ann .fbin/.u8bin/.i8bin file: fetch its first ROWS rows only (Range\n"
    "                       requests for 8 + ROWS x dim x element bytes, dim from its header) and set its header\n"
    "                       to ROWS\n"
    "  --hdf5               a dataset that a Debian package ships: fetch the publisher's download instead\n"
    "  --quiet              no progress and no notes\n"
    "\n"
    "A dataset that a Debian package ships (fashion-mnist-784-euclidean: dataset-fashion-mnist, Fashion-MNIST's IDX\n"
    "files and their class labels under /usr/share/datasets/fashion-mnist) is taken from the package: as root the\n"
    "package is installed (apt-get install -y PACKAGE); otherwise the command prints the one apt command that does and\n"
    "exits 1. When apt has no such package (or with --hdf5, or --mirror and the package not installed), the\n"
    "publisher's download is fetched as for any other dataset. `vbench run` does the same for a profile's\n"
    "`registry: NAME`.\n"
    "\n"
    "exit code: 0 here and verified, 1 refused or failed (the message says why and what to do), 2 usage,\n"
    "           3 the transfer broke off after the retries: FILE.part is kept, the same command resumes it\n"
    "example: vbench dataset fetch glove-100-angular --mirror /mnt/datasets\n";

static const char *usage_list =
    "usage: vbench dataset list [--files] [--cache-dir DIR]\n"
    "\n"
    "The registry: each dataset's name, source (deb|hdf5: a Debian package ships it, and it is used when installed;\n"
    "the cache column then says \"deb PACKAGE (VERSION)\"), shape, metric, size, whether its checksum is published\n"
    "(\"verified\") or not (\"unverified\": recorded at the first fetch), and what the cache holds of it (\"here\",\n"
    "\"recorded\": here with a recorded checksum, \"partial N%\": a download to resume, \"-\"); for a dataset whose\n"
    "files are all here, \"+shape\" when their headers match the registry's shape, \"WRONG SHAPE\" when not (vbench\n"
    "dataset fetch NAME says which file and moves it aside). --files: one row per file with its cache name and\n"
    "its URL (a mirror holds the file, or for a TEXMEX member its archive, under its cache name). A profile names\n"
    "one with\n"
    "  datasets: [{name: glove, registry: glove-100-angular}]\n"
    "and `vbench run` fetches it when it is missing.\n";

static const char *usage_info =
    "usage: vbench dataset info NAME [--queries N] [--k K] [--gt-out FILE] [--cache-dir DIR]\n"
    "\n"
    "Opens a registry dataset that is here (its Debian package installed, or its files in the cache: vbench dataset\n"
    "fetch NAME) as a campaign would, and says what vbench finds in it: where it comes from, its shape and metric,\n"
    "its classes (rows and queries per class) when it has them, the exact duplicate rows in the corpus (each row\n"
    "equal to an earlier one, byte for byte), the queries equal to a corpus row, and, for a sample of N queries\n"
    "(default 200, evenly spaced over the query set: query i x count / N), vbench's exact ground truth to K + 1\n"
    "(datasets/groundtruth.c; K default 10): how many have a tie between the K-th and the (K+1)-th distance\n"
    "(equal floats), and how many a (K+1)-th within 1e-3 of the K-th (recall counts an answer that close as right,\n"
    "as ann-benchmarks does, so such a query has more than K right answers).\n"
    "\n"
    "  --queries N          the sample's size (1 .. the queries)\n"
    "  --k K                the neighbour whose ties are counted (1 .. 1000)\n"
    "  --gt-out FILE        write the sample's ground truth to K: a line per query, its index in the query set\n"
    "                       then K pairs \"id distance\" (ascending), for checks from outside\n";

static const char *usage_convert =
    "usage: vbench dataset convert DIR --metric angular|euclidean|dot [--name NAME] [--out DIR] [--cache-dir DIR]\n"
    "\n"
    "Turns a VectorDBBench case (a directory of parquet files as VectorDBBench downloads them: train.parquet or\n"
    "shuffle_train.parquet, or their -NN-of-MM parts, with columns id and emb; test.parquet with id and emb;\n"
    "neighbors.parquet with id and neighbors_id) into big-ann files: NAME.base.fbin, NAME.query.fbin and the\n"
    "ground truth NAME.gt.ibin (ids only), each vector at the row its id names (ids must be 0..rows-1). Prints\n"
    "the profile entry that uses them. VectorDBBench's Cohere and OpenAI cases are cosine (angular), its SIFT and\n"
    "GIST cases L2 (euclidean).\n"
    "\n"
    "It runs a small Node.js program (node, from Debian's nodejs package) with hyparquet, a pure-JavaScript parquet\n"
    "reader, which npm installs into CACHE/node on first use (needs npm and its registry once; $VBENCH_NPM_REGISTRY\n"
    "or npm's own configuration choose the registry).\n"
    "\n"
    "  --name NAME          the files' and dataset's name (default: DIR's last part)\n"
    "  --out DIR            where to write them (default CACHE/datasets)\n";

enum { O_MIRROR = 300, O_CACHE, O_RETRIES, O_SHA, O_SIZE, O_OUTPUT, O_QUIET, O_FILES, O_METRIC, O_NAME, O_OUT, O_CUT,
       O_HDF5, O_QUERIES, O_K, O_GT_OUT };

static int is_url(const char *s) { return strstr(s, "://") != NULL; }

/* A registry dataset that a Debian package ships: installed (as root), or the command that installs it. The exit
 * code, or -1: take the publisher's download instead (apt has no such package, it could not be installed, or a
 * mirror was named for a package that is not installed). */
static int fetch_package(const vb_registry_entry *e, const vb_fetch_opts *fo, int mirror_named) {
    const vb_registry_package *pk = e->package;
    char cmd[256], ver[128];
    vb_package_install_command(pk, cmd, sizeof cmd);
    if (!vb_package_here(pk)) {
        if (mirror_named) return -1;
        if (geteuid() != 0) {
            fprintf(stderr, "vbench dataset fetch: %s is in Debian's package %s, which is not installed: as root, "
                            "run\n  %s\n(or `vbench dataset fetch %s --hdf5` for %s's download)\n", e->name, pk->name,
                    cmd, e->name, e->origin);
            return 1;
        }
        if (!vb_package_installable(pk)) {
            if (!fo->quiet)
                fprintf(stderr, "vbench dataset fetch: apt has no package %s here (apt-cache policy %s): fetching "
                                "%s's download instead\n", pk->name, pk->name, e->origin);
            return -1;
        }
        vb_error err;
        FILE *say = fo->quiet ? fopen("/dev/null", "w") : stderr;
        int rc = vb_package_install(pk, say ? say : stderr, &err);
        if (say && say != stderr) fclose(say);
        if (rc != VB_OK) {
            fprintf(stderr, "vbench dataset fetch: %s; fetching %s's download instead\n", err.message, e->origin);
            return -1;
        }
    }
    vb_package_version(pk, ver, sizeof ver);
    if (!fo->quiet)
        printf("%s is Debian's package %s %s, installed: its files under %s are the dataset; a profile uses it "
               "with: datasets: [{name: %s, registry: %s}]\n", e->name, pk->name, ver[0] ? ver : "(version unknown)",
               pk->dir, e->name, e->name);
    return 0;
}

static int cmd_fetch(int argc, char **argv) {
    static const struct option opts[] = {
        {"mirror", required_argument, 0, O_MIRROR}, {"cache-dir", required_argument, 0, O_CACHE},
        {"retries", required_argument, 0, O_RETRIES}, {"sha256", required_argument, 0, O_SHA},
        {"size", required_argument, 0, O_SIZE},     {"output", required_argument, 0, O_OUTPUT},
        {"quiet", no_argument, 0, O_QUIET},         {"cut", required_argument, 0, O_CUT},
        {"hdf5", no_argument, 0, O_HDF5},           {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *cache_dir = NULL, *sha = NULL, *output = NULL;
    vb_fetch_opts fo = {.mirror = getenv("VBENCH_MIRROR"), .retries = 5};
    unsigned long long size = 0, cut_rows = 0;
    int c, hdf5 = 0, mirror_named = fo.mirror != NULL;
    char *end;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_MIRROR: fo.mirror = optarg, mirror_named = 1; break;
        case O_CACHE: cache_dir = optarg; break;
        case O_HDF5: hdf5 = 1; break;
        case O_RETRIES:
            fo.retries = (int)strtol(optarg, &end, 10);
            if (!*optarg || *end || fo.retries < 0) {
                fprintf(stderr, "vbench dataset fetch: --retries takes a number >= 0, not \"%s\"\n", optarg);
                return 2;
            }
            break;
        case O_SHA: sha = optarg; break;
        case O_SIZE:
            size = strtoull(optarg, &end, 10);
            if (!*optarg || *end || !size) {
                fprintf(stderr, "vbench dataset fetch: --size takes a number of bytes, not \"%s\"\n", optarg);
                return 2;
            }
            break;
        case O_OUTPUT: output = optarg; break;
        case O_CUT:
            cut_rows = strtoull(optarg, &end, 10);
            if (!*optarg || *end || !cut_rows || cut_rows > UINT32_MAX) {
                fprintf(stderr, "vbench dataset fetch: --cut takes a number of rows (1..%u), not \"%s\"\n", UINT32_MAX,
                        optarg);
                return 2;
            }
            break;
        case O_QUIET: fo.quiet = 1; break;
        case 'h': fputs(usage_fetch, stdout); return 0;
        default: fputs(usage_fetch, stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "vbench dataset fetch: needs one NAME (vbench dataset list) or URL\n\n%s", usage_fetch);
        return 2;
    }
    const char *what = argv[optind];
    if (sha && (strlen(sha) != 64 || strspn(sha, "0123456789abcdefABCDEF") != 64)) {
        fprintf(stderr, "vbench dataset fetch: --sha256 takes 64 hex digits, not \"%s\"\n", sha);
        return 2;
    }
    const vb_registry_entry *e = is_url(what) ? NULL : vb_registry_find(what);
    if (!is_url(what) && !e) {
        fprintf(stderr, "vbench dataset fetch: no dataset \"%s\" in the registry (vbench dataset list shows them; "
                        "a URL is fetched as it is)\n", what);
        return 1;
    }
    if (e && (sha || size || output || cut_rows)) {
        fprintf(stderr, "vbench dataset fetch: --sha256, --size, --output and --cut go with a URL; a registry dataset "
                        "has its own\n");
        return 2;
    }
    if (hdf5 && (!e || !e->package)) {
        fprintf(stderr, "vbench dataset fetch: --hdf5 goes with a registry dataset that a Debian package ships "
                        "(vbench dataset list: source deb|hdf5)\n");
        return 2;
    }
    if (e && e->package && !hdf5) {
        int r = fetch_package(e, &fo, mirror_named);
        if (r >= 0) return r;
    }
    unsigned elem = cut_rows ? vb_registry_bin_elem(output ? output : what) : 0;
    if (cut_rows && !elem) {
        fprintf(stderr, "vbench dataset fetch: --cut takes a big-ann file (.fbin, .u8bin, .i8bin; --output names the "
                        "type when the URL does not), not \"%s\"\n", output ? output : what);
        return 2;
    }
    char cache[PATH_MAX], dir[PATH_MAX + 16];
    vb_error err;
    vb_error_clear(&err);
    if (vb_dataset_cache_dir(cache_dir, cache, sizeof cache, &err)) {
        fprintf(stderr, "vbench dataset fetch: %s\n", err.message);
        return 1;
    }
    snprintf(dir, sizeof dir, "%s/datasets", cache);
    if (vb_mkdirs(dir, 0775, &err)) {
        fprintf(stderr, "vbench dataset fetch: %s\n", err.message);
        return 1;
    }
    int rc;
    if (e) {
        rc = vb_fetch_registry(e, dir, &fo, &err);
    } else {
        char dest[PATH_MAX + 300];
        const char *base = strrchr(what, '/');
        base = base && base[1] ? base + 1 : "download";
        if (output) snprintf(dest, sizeof dest, "%s", output);
        else snprintf(dest, sizeof dest, "%s/%s", dir, base);
        vb_fetch_cut cut = {cut_rows, 0, elem};
        rc = vb_fetch_file_cut(what, dest, cut_rows ? &cut : NULL, size, sha, &fo, &err);
    }
    if (rc != VB_OK) {
        fprintf(stderr, "vbench dataset fetch: %s\n", err.message);
        return rc == VB_RETRY ? 3 : 1;
    }
    if (e && !fo.quiet)
        printf("%s is in %s; a profile uses it with: datasets: [{name: %s, registry: %s}]%s\n", e->name, dir, e->name,
               e->name, cache_dir ? " (and --cache-dir)" : "");
    return 0;
}

/* What the cache holds of one file: "here", "recorded" (here, checksum recorded), "packed" (its archive is here,
 * it is not unpacked yet), "partial N%" (of its archive: "partial"), "-". */
static void file_state(const char *dir, const vb_registry_file *f, char *buf, size_t len) {
    char p[PATH_MAX + 300], hex[65];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, f->file);
    if (stat(p, &st) == 0) {
        snprintf(buf, len, "%s", !f->sha256 && vb_fetch_recorded_sha256(p, hex) == 0 ? "recorded" : "here");
        return;
    }
    snprintf(p, sizeof p, "%s/%s", dir, f->archive ? f->archive : "");
    if (f->archive && stat(p, &st) == 0) {   /* the archive is here, this member not unpacked yet */
        snprintf(buf, len, "packed");
        return;
    }
    snprintf(p, sizeof p, "%s/%s.part", dir, f->archive ? f->archive : f->file);
    if (stat(p, &st) == 0 && f->size && !f->archive) snprintf(buf, len, "partial %d%%", (int)(100.0 * st.st_size / f->size));
    else if (stat(p, &st) == 0) snprintf(buf, len, "partial");
    else snprintf(buf, len, "-");
}

static int cmd_list(int argc, char **argv) {
    static const struct option opts[] = {{"cache-dir", required_argument, 0, O_CACHE}, {"files", no_argument, 0, O_FILES},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *cache_dir = NULL;
    int files = 0, c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_CACHE: cache_dir = optarg; break;
        case O_FILES: files = 1; break;
        case 'h': fputs(usage_list, stdout); return 0;
        default: fputs(usage_list, stderr); return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "vbench dataset list: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    char cache[PATH_MAX], dir[PATH_MAX + 16], sz[32], st[32];
    vb_dataset_cache_dir_name(cache_dir, cache, sizeof cache);
    snprintf(dir, sizeof dir, "%s/datasets", cache);
    if (files) printf("%-30s %-34s %-10s %-10s %-10s %s\n", "dataset", "file", "size", "checksum", "cache", "url");
    else printf("%-30s %-9s %-20s %-9s %-10s %-10s %s\n", "dataset", "source", "rows x dim, queries", "metric", "size",
                "checksum", "cache");
    for (const vb_registry_entry *e = vb_registry_all(); e->name; e++) {
        size_t n = vb_registry_n_files(e);
        const vb_registry_package *pk = e->package;
        int pk_here = pk && vb_package_here(pk);
        if (files) {
            for (size_t i = 0; pk && i < vb_registry_package_n_files(pk); i++) {
                char p[1024], where[1200];
                struct stat fst;
                vb_package_file_path(pk, i, p, sizeof p);
                snprintf(where, sizeof where, "Debian package %s: %s", pk->name, p);
                printf("%-30s %-34s %-10s %-10s %-10s %s\n", e->name, pk->files[i].file,
                       stat(p, &fst) == 0 ? vb_fetch_human((double)fst.st_size, sz, sizeof sz) : "?", "deb",
                       pk_here ? "installed" : "-", where);
            }
            for (size_t i = 0; i < n; i++) {
                const vb_registry_file *f = &e->files[i];
                file_state(dir, f, st, sizeof st);
                char url[1024];
                if (f->archive) snprintf(url, sizeof url, "%s, member %s (a mirror holds %s)", f->url, f->member, f->archive);
                else snprintf(url, sizeof url, "%s%s", f->url, f->cut_rows ? ", its first rows (a cut)" : "");
                printf("%-30s %-34s %-10s %-10s %-10s %s\n", e->name, f->file, f->size ? vb_fetch_human((double)f->size, sz, sizeof sz) : "?",
                       f->sha256 ? "verified" : "unverified", st, url);
            }
            continue;
        }
        char shape[64], state[32] = "";
        snprintf(shape, sizeof shape, "%llux%llu, %llu", (unsigned long long)e->rows, (unsigned long long)e->dim,
                 (unsigned long long)e->queries);
        int all_sized = 1;
        for (size_t i = 0; i < n; i++) all_sized &= e->files[i].size != 0;
        snprintf(sz, sizeof sz, "%s", "");
        vb_fetch_human((double)vb_registry_expected_bytes(e), sz + (all_sized ? 0 : 1), sizeof sz - 1);
        if (!all_sized) sz[0] = '~';
        if (pk_here) {   /* the installed package's files, as they are */
            double bytes = 0;
            for (size_t i = 0; i < vb_registry_package_n_files(pk); i++) {
                char p[1024];
                struct stat fst;
                vb_package_file_path(pk, i, p, sizeof p);
                if (stat(p, &fst) == 0) bytes += (double)fst.st_size;
            }
            vb_fetch_human(bytes, sz, sizeof sz);
        }
        /* the dataset's state: the first file that is not here says it */
        for (size_t i = 0; i < n; i++) {
            file_state(dir, &e->files[i], st, sizeof st);
            if (!state[0] || strcmp(st, "here") != 0) snprintf(state, sizeof state, "%s", st);
            if (strcmp(st, "here") != 0 && strcmp(st, "recorded") != 0) break;
        }
        if (strcmp(st, "here") == 0 || strcmp(st, "recorded") == 0) {
            /* all here: do their headers say the registry's shape? (read only, nothing moved) */
            vb_error serr;
            size_t len = strlen(state);
            snprintf(state + len, sizeof state - len, "%s",
                     vb_registry_check_shape(e, dir, 0, &serr) == VB_OK ? "+shape" : " WRONG SHAPE");
        }
        char source[32], pstate[160];
        snprintf(source, sizeof source, "%s%s", pk ? "deb|" : "", e->source);
        if (pk_here) {   /* the package is the source: its version, the download's state after it */
            char ver[96];
            vb_package_version(pk, ver, sizeof ver);
            snprintf(pstate, sizeof pstate, "deb %s (%s)%s%s", pk->name, ver[0] ? ver : "?",
                     strcmp(state, "-") != 0 ? "; hdf5 " : "", strcmp(state, "-") != 0 ? state : "");
        } else {
            snprintf(pstate, sizeof pstate, "%s", state);
        }
        printf("%-30s %-9s %-20s %-9s %-10s %-10s %s\n", e->name, source, shape, e->metric, sz,
               pk_here ? "deb" : vb_registry_verified(e) ? "verified" : "unverified", pstate);
    }
    printf("\ncache: %s  (~: estimated from the shape; unverified: no published checksum, recorded at the first "
           "fetch;\n+shape: every file here and its header matches the registry's shape; deb|: a Debian package ships "
           "it, used when installed,\nchecked by dpkg: vbench dataset fetch NAME installs it)\n", dir);
    return 0;
}

/* ---- info ---------------------------------------------------------------------------------------------------- */

typedef struct row_hash {
    uint64_t h;
    size_t i;
} row_hash;

static int by_hash(const void *a, const void *b) {
    const row_hash *x = a, *y = b;
    return x->h < y->h ? -1 : x->h > y->h ? 1 : x->i < y->i ? -1 : x->i > y->i;
}

/* The registry dataset's files as a dataset spec (its package's when installed, else the cache's): n entries in kv,
 * backed by files[]; 0, or -1 with the reason printed when they are not here. */
static int info_spec(const vb_registry_entry *e, const char *dir, vb_kv *kv, char files[][PATH_MAX + 320], size_t *n) {
    size_t k = 0;
    kv[k++] = (vb_kv){"name", e->name};
    if (e->package && vb_package_here(e->package)) {
        kv[k++] = (vb_kv){"source", e->package->source};
        kv[k++] = (vb_kv){"metric", e->metric};
        for (size_t i = 0; i < vb_registry_package_n_files(e->package); i++) {
            vb_package_file_path(e->package, i, files[i], sizeof files[i]);
            kv[k++] = (vb_kv){e->package->files[i].key, files[i]};
        }
        *n = k;
        return 0;
    }
    kv[k++] = (vb_kv){"source", e->source};
    if (strcmp(e->source, "hdf5") != 0) kv[k++] = (vb_kv){"metric", e->metric};
    for (size_t i = 0; i < vb_registry_n_files(e); i++) {
        struct stat st;
        snprintf(files[i], sizeof files[i], "%s/%s", dir, e->files[i].file);
        if (stat(files[i], &st) != 0) {
            fprintf(stderr, "vbench dataset info: %s is not here (%s is missing): vbench dataset fetch %s\n", e->name,
                    files[i], e->name);
            return -1;
        }
        kv[k++] = (vb_kv){e->files[i].key, files[i]};
    }
    *n = k;
    return 0;
}

/* Rows of a equal to an earlier row of a (dups), and rows of b equal to a row of a (cross), byte for byte: rows are
 * hashed, sorted by hash, and equal hashes compared in full. */
static int count_equal_rows(const vb_dataset *ds, size_t *dups, size_t *cross) {
    size_t bytes = ds->dim * sizeof(float);
    row_hash *h = malloc((ds->n_train ? ds->n_train : 1) * sizeof *h);
    if (!h) return -1;
    for (size_t i = 0; i < ds->n_train; i++) h[i] = (row_hash){XXH3_64bits(ds->train + i * ds->dim, bytes), i};
    qsort(h, ds->n_train, sizeof *h, by_hash);
    *dups = 0;
    for (size_t i = 1; i < ds->n_train; i++)
        for (size_t j = i; j-- > 0 && h[j].h == h[i].h;)
            if (memcmp(ds->train + h[i].i * ds->dim, ds->train + h[j].i * ds->dim, bytes) == 0) {
                (*dups)++;
                break;
            }
    *cross = 0;
    for (size_t q = 0; q < ds->n_test; q++) {
        row_hash key = {XXH3_64bits(ds->test + q * ds->dim, bytes), 0};
        size_t lo = 0, hi = ds->n_train;   /* the first entry with this hash */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (h[mid].h < key.h) lo = mid + 1;
            else hi = mid;
        }
        for (; lo < ds->n_train && h[lo].h == key.h; lo++)
            if (memcmp(ds->test + q * ds->dim, ds->train + h[lo].i * ds->dim, bytes) == 0) {
                (*cross)++;
                break;
            }
    }
    free(h);
    return 0;
}

/* "st", "nd", "rd" or "th" after n. */
static const char *ordinal(long n) {
    if (n % 100 >= 11 && n % 100 <= 13) return "th";
    return n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
}

static int cmd_info(int argc, char **argv) {
    static const struct option opts[] = {{"cache-dir", required_argument, 0, O_CACHE}, {"queries", required_argument, 0, O_QUERIES},
                                         {"k", required_argument, 0, O_K}, {"gt-out", required_argument, 0, O_GT_OUT},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *cache_dir = NULL, *gt_out = NULL;
    long sample = 200, k = 10;
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_CACHE: cache_dir = optarg; break;
        case O_QUERIES:
        case O_K: {
            long v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < 1 || (c == O_K && v > 1000)) {
                fprintf(stderr, "vbench dataset info: --%s takes a number from 1%s, not \"%s\"\n",
                        c == O_K ? "k" : "queries", c == O_K ? " to 1000" : "", optarg);
                return 2;
            }
            *(c == O_K ? &k : &sample) = v;
            break;
        }
        case O_GT_OUT: gt_out = optarg; break;
        case 'h': fputs(usage_info, stdout); return 0;
        default: fputs(usage_info, stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "vbench dataset info: needs one NAME (vbench dataset list)\n\n%s", usage_info);
        return 2;
    }
    const vb_registry_entry *e = vb_registry_find(argv[optind]);
    if (!e) {
        fprintf(stderr, "vbench dataset info: no dataset \"%s\" in the registry (vbench dataset list)\n", argv[optind]);
        return 1;
    }
    char cache[PATH_MAX], dir[PATH_MAX + 16], files[VB_REGISTRY_MAX_PKG_FILES + VB_REGISTRY_MAX_FILES][PATH_MAX + 320];
    vb_kv kv[12];
    size_t nkv;
    vb_error err;
    vb_error_clear(&err);
    if (vb_dataset_cache_dir(cache_dir, cache, sizeof cache, &err)) {
        fprintf(stderr, "vbench dataset info: %s\n", err.message);
        return 1;
    }
    snprintf(dir, sizeof dir, "%s/datasets", cache);
    if (info_spec(e, dir, kv, files, &nkv)) return 1;
    vb_dataset *ds = NULL;
    if (vb_dataset_open_spec(kv, nkv, cache, &ds, &err) != VB_OK) {
        fprintf(stderr, "vbench dataset info: %s\n", err.message);
        return 1;
    }
    char ver[128] = "";
    if (e->package && vb_package_here(e->package)) vb_package_version(e->package, ver, sizeof ver);
    printf("dataset      %s\n", e->name);
    if (ver[0]) printf("source       Debian package %s %s (%s, IDX)\n", e->package->name, ver, e->package->dir);
    else printf("source       %s (%s, %s)\n", e->origin, dir, e->source);
    printf("shape        %zu rows x %zu, %zu queries, %s\n", ds->n_train, ds->dim, ds->n_test, vb_metric_name(ds->metric));
    printf("content      %s\n", ds->content_hash);
    if (ds->n_classes > 0) {
        printf("classes      %d (rows / queries per class:", ds->n_classes);
        for (int cl = 0; cl < ds->n_classes; cl++) {
            size_t r = 0, q = 0;
            for (size_t i = 0; i < ds->n_train; i++) r += ds->train_class[i] == cl;
            for (size_t i = 0; i < ds->n_test; i++) q += ds->test_class[i] == cl;
            printf(" %d: %zu/%zu", cl, r, q);
        }
        printf(")\n");
    }
    size_t dups = 0, cross = 0;
    if (count_equal_rows(ds, &dups, &cross) == 0)
        printf("duplicates   %zu corpus rows equal to an earlier corpus row; %zu queries equal to a corpus row\n", dups,
               cross);
    if ((size_t)sample > ds->n_test) sample = (long)ds->n_test;
    if ((size_t)k >= ds->n_train) k = (long)ds->n_train - 1;
    float *qs = malloc((size_t)sample * ds->dim * sizeof *qs);
    size_t *qi = malloc((size_t)sample * sizeof *qi);
    vb_groundtruth gt = {0};
    int rc = 0;
    if (!qs || !qi) {
        fprintf(stderr, "vbench dataset info: out of memory\n");
        rc = 1;
        goto out;
    }
    for (long i = 0; i < sample; i++) {
        qi[i] = (size_t)i * ds->n_test / (size_t)sample;
        memcpy(qs + (size_t)i * ds->dim, ds->test + qi[i] * ds->dim, ds->dim * sizeof *qs);
    }
    if (vb_groundtruth_compute(ds->train, ds->n_train, qs, (size_t)sample, ds->dim, ds->metric, (size_t)k + 1, NULL, 0,
                               &gt, &err) != VB_OK) {
        fprintf(stderr, "vbench dataset info: %s\n", err.message);
        rc = 1;
        goto out;
    }
    size_t ties = 0, near = 0, K = (size_t)k + 1;
    for (long q = 0; q < sample; q++) {
        float dk = gt.dists[(size_t)q * K + (size_t)k - 1], dk1 = gt.dists[(size_t)q * K + (size_t)k];
        ties += dk == dk1;
        near += dk1 <= dk + 1e-3f;
    }
    printf("ties         %zu of %ld sampled queries have the %ld%s and %ld%s distance equal; %zu have the %ld%s within "
           "1e-3 of the %ld%s (vbench's exact ground truth, datasets/groundtruth.c)\n", ties, sample, k, ordinal(k),
           k + 1, ordinal(k + 1), near, k + 1, ordinal(k + 1), k, ordinal(k));
    if (gt_out) {
        FILE *f = fopen(gt_out, "w");
        for (long q = 0; f && q < sample; q++) {
            fprintf(f, "%zu", qi[q]);
            for (long j = 0; j < k; j++)
                fprintf(f, " %lld %.9g", (long long)gt.ids[(size_t)q * K + (size_t)j], gt.dists[(size_t)q * K + (size_t)j]);
            fputc('\n', f);
        }
        if (!f || fclose(f) != 0) {
            fprintf(stderr, "vbench dataset info: cannot write %s: %s\n", gt_out, strerror(errno));
            rc = 1;
        }
    }
out:
    vb_groundtruth_free(&gt);
    free(qs);
    free(qi);
    vb_dataset_close(&ds);
    return rc;
}

/* ---- convert ------------------------------------------------------------------------------------------------- */

#define HYPARQUET "hyparquet@1.33.0"   /* checked with `npm view hyparquet`: pure JavaScript, no dependencies */

/* Runs argv, stderr inherited, stdout too unless `silent` (then /dev/null: convert's stdout is the profile entry
 * alone); its exit status (or -1 when it cannot start). */
static int run_wait(char *const argv[], int silent) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int null = silent ? open("/dev/null", O_WRONLY) : -1;
        if (null >= 0) dup2(null, 1);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* CACHE/node with hyparquet installed and the converter written out of the binary; 0, or -1 with the reason. */
static int converter_ready(const char *cache, char *script, size_t len) {
    char node_dir[PATH_MAX + 8], mod[PATH_MAX + 64];
    snprintf(node_dir, sizeof node_dir, "%s/node", cache);
    vb_error err;
    if (vb_mkdirs(node_dir, 0775, &err)) {
        fprintf(stderr, "vbench dataset convert: %s\n", err.message);
        return -1;
    }
    char *probe[] = {"node", "--version", NULL};
    if (run_wait(probe, 1) != 0) {
        fprintf(stderr, "vbench dataset convert: node (Node.js) is not here: install Debian's nodejs package "
                        "(apt-get install nodejs npm), then run the same command again\n");
        return -1;
    }
    snprintf(mod, sizeof mod, "%s/node_modules/hyparquet/package.json", node_dir);
    if (access(mod, R_OK) != 0) {
        fprintf(stderr, "vbench dataset convert: installing %s (a parquet reader) into %s with npm, once\n",
                HYPARQUET, node_dir);
        const char *reg = getenv("VBENCH_NPM_REGISTRY");
        char regopt[512] = "";
        if (reg && *reg) snprintf(regopt, sizeof regopt, "--registry=%s", reg);
        char *npm[] = {"npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix", node_dir, HYPARQUET,
                       regopt[0] ? regopt : NULL, NULL};
        int rc = run_wait(npm, 1);
        if (rc != 0 || access(mod, R_OK) != 0) {
            fprintf(stderr, "vbench dataset convert: npm could not install %s into %s (%s): convert needs it once. "
                            "Install npm (apt-get install npm), check that its registry is reachable (npm view "
                            "hyparquet; $VBENCH_NPM_REGISTRY names another), or copy a node_modules/hyparquet from "
                            "another machine into %s\n", HYPARQUET, node_dir,
                    rc < 0 || rc == 127 ? "npm is not here" : "npm failed", node_dir);
            return -1;
        }
    }
    const vb_embedded_file *js = vb_embedded_find("datasets/parquet2fbin.mjs");
    snprintf(script, len, "%s/parquet2fbin.mjs", node_dir);
    FILE *f = js ? fopen(script, "w") : NULL;
    int ok = f && fwrite(js->data, 1, js->size, f) == js->size;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) {
        fprintf(stderr, "vbench dataset convert: cannot write %s: %s\n", script, js ? strerror(errno) : "not built in");
        return -1;
    }
    return 0;
}

static int cmd_convert(int argc, char **argv) {
    static const struct option opts[] = {{"metric", required_argument, 0, O_METRIC}, {"name", required_argument, 0, O_NAME},
                                         {"out", required_argument, 0, O_OUT}, {"cache-dir", required_argument, 0, O_CACHE},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *metric = NULL, *name = NULL, *out = NULL, *cache_dir = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_METRIC: metric = optarg; break;
        case O_NAME: name = optarg; break;
        case O_OUT: out = optarg; break;
        case O_CACHE: cache_dir = optarg; break;
        case 'h': fputs(usage_convert, stdout); return 0;
        default: fputs(usage_convert, stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "vbench dataset convert: needs one DIR (a VectorDBBench case's parquet files)\n\n%s",
                usage_convert);
        return 2;
    }
    vb_metric m;
    if (!metric || vb_metric_parse(metric, &m) != 0) {
        fprintf(stderr, "vbench dataset convert: --metric angular|euclidean|dot is required (VectorDBBench's Cohere "
                        "and OpenAI cases are angular, its SIFT and GIST cases euclidean)\n");
        return 2;
    }
    const char *dir = argv[optind];
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "vbench dataset convert: %s is not a directory (give the directory holding train.parquet, "
                        "test.parquet and neighbors.parquet)\n", dir);
        return 1;
    }
    char cache[PATH_MAX], outdir[PATH_MAX + 16], script[PATH_MAX + 32], base[PATH_MAX];
    vb_error err;
    if (vb_dataset_cache_dir(cache_dir, cache, sizeof cache, &err)) {
        fprintf(stderr, "vbench dataset convert: %s\n", err.message);
        return 1;
    }
    if (out) snprintf(outdir, sizeof outdir, "%s", out);
    else snprintf(outdir, sizeof outdir, "%s/datasets", cache);
    if (vb_mkdirs(outdir, 0775, &err)) {
        fprintf(stderr, "vbench dataset convert: %s\n", err.message);
        return 1;
    }
    if (!name) {
        snprintf(base, sizeof base, "%s", dir);
        size_t n = strlen(base);
        while (n > 1 && base[n - 1] == '/') base[--n] = '\0';
        const char *s = strrchr(base, '/');
        name = s ? s + 1 : base;
    }
    if (converter_ready(cache, script, sizeof script)) return 1;
    char *node[] = {"node", script, (char *)dir, outdir, (char *)name, (char *)vb_metric_name(m), NULL};
    int rc = run_wait(node, 0);
    if (rc != 0) {
        fprintf(stderr, "vbench dataset convert: the converter (%s) failed with exit %d; its message is above\n", script,
                rc);
        return 1;
    }
    return 0;
}

int vb_cmd_dataset(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage_dataset, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *sub = argv[1];
    argc--, argv++;
    optind = 0;
    if (strcmp(sub, "fetch") == 0) return cmd_fetch(argc, argv);
    if (strcmp(sub, "list") == 0) return cmd_list(argc, argv);
    if (strcmp(sub, "convert") == 0) return cmd_convert(argc, argv);
    if (strcmp(sub, "info") == 0) return cmd_info(argc, argv);
    fprintf(stderr, "vbench dataset: unknown command \"%s\"\n\n%s", sub, usage_dataset);
    return 2;
}
