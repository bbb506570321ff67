/* Self-test of datasets/registry.c and the registry's shape check (datasets/shape.c, vb_registry_check_shape):
 * every entry is consistent (sizes that the formats fix from the shape, cuts of the 1B files, TEXMEX members with
 * their archive, cache names unique), and files written here in the registry's shape pass the check while a file
 * of another shape is refused with both shapes named and moved aside with its recorded checksum; a registry cut
 * (vb_fetch_registry on an entry made here, from a directory mirror: file://) takes the first rows of a bigger
 * file, sets its header, resumes a part, and passes the shape check. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datasets/fetch.h"
#include "datasets/registry.h"
#include "datasets/shape.h"
#include "tests/tap.h"

static int exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* A .fvecs of rows x dim (every record int32 dim + dim floats), or an .ivecs of rows x k ids. */
static void write_vecs(const char *path, uint64_t rows, uint32_t dim) {
    FILE *f = fopen(path, "wb");
    float *row = calloc(dim, sizeof *row);
    for (uint64_t r = 0; r < rows; r++) {
        fwrite(&dim, 4, 1, f);
        fwrite(row, 4, dim, f);
    }
    free(row);
    fclose(f);
}

static void check_entries(void) {
    int bad_cut = 0, bad_member = 0, bad_size = 0, dup = 0, cuts = 0, members = 0;
    for (const vb_registry_entry *e = vb_registry_all(); e->name; e++) {
        size_t n = vb_registry_n_files(e);
        for (size_t i = 0; i < n; i++) {
            const vb_registry_file *f = &e->files[i];
            if (f->cut_rows) {
                cuts++;
                unsigned elem = vb_registry_bin_elem(f->file);
                /* the cut is the entry's corpus: its rows, its dim, the header and nothing more */
                if (strcmp(f->key, "path") != 0 || f->cut_rows != e->rows || !elem ||
                    f->size != 8 + f->cut_rows * e->dim * elem)
                    bad_cut++, printf("#   cut %s/%s\n", e->name, f->file);
            }
            if (f->member || f->archive) {
                members++;
                uint64_t rows = strcmp(f->key, "path") == 0 ? e->rows : e->queries;
                uint64_t want = strcmp(f->key, "groundtruth_path") == 0 ? rows * (4 + 100 * 4) : rows * (4 + e->dim * 4);
                if (!f->member || !f->archive || strstr(f->member, "..") || f->member[0] == '/' || f->size != want)
                    bad_member++, printf("#   member %s/%s\n", e->name, f->file);
            }
            if (strcmp(e->source, "fbin") == 0 && strcmp(f->key, "queries_path") == 0 &&
                f->size != 8 + e->queries * e->dim * 4)
                bad_size++, printf("#   queries %s\n", e->name);
            for (const vb_registry_entry *o = vb_registry_all(); o->name; o++)
                for (size_t j = 0; j < vb_registry_n_files(o); j++)
                    if ((o != e || j != i) && strcmp(o->files[j].file, f->file) == 0) dup++;
        }
    }
    ok(cuts == 3, "three cut files (bigann-10M, text2image-10M, msturing-10M): %d", cuts);
    is_int(bad_cut, 0, "every cut is the first `rows` rows: 8 + rows x dim x element bytes");
    ok(members == 9, "three TEXMEX entries of three members each: %d", members);
    is_int(bad_member, 0, "every member names its archive, a relative path, and the size its shape fixes");
    is_int(bad_size, 0, "big-ann query files are 8 + queries x dim x 4 bytes");
    is_int(dup, 0, "no two files share a cache name");
    const vb_registry_entry *b = vb_registry_find("bigann-10M");
    ok(b && strcmp(b->source, "u8bin") == 0 && b->dim == 128 && b->files[0].size == 8ULL + 10000000ULL * 128,
       "bigann-10M: u8bin, 128 dims, 1.28 GB cut");
    ok(b && strstr(b->files[2].url, "GT_10M/bigann-10M") != NULL, "with big-ann-benchmarks' GT_10M ground truth");
    const vb_registry_entry *t = vb_registry_find("texmex-siftsmall");
    ok(t && strcmp(t->files[0].archive, "siftsmall.tar.gz") == 0 &&
           strcmp(t->files[0].member, "siftsmall/siftsmall_base.fvecs") == 0,
       "texmex-siftsmall: siftsmall/siftsmall_base.fvecs of siftsmall.tar.gz");
    is_int(vb_registry_bin_elem("x.u8bin"), 1, "u8bin: 1 byte per value");
    is_int(vb_registry_bin_elem("x.fbin"), 4, "fbin: 4 bytes per value");
    is_int(vb_registry_bin_elem("x.fvecs"), 0, "fvecs: not a big-ann file");
}

static void check_shape(const char *dir) {
    const vb_registry_entry *e = vb_registry_find("texmex-siftsmall");
    char base[512], query[512], gt[512], side[600];
    snprintf(base, sizeof base, "%s/%s", dir, e->files[0].file);
    snprintf(query, sizeof query, "%s/%s", dir, e->files[1].file);
    snprintf(gt, sizeof gt, "%s/%s", dir, e->files[2].file);
    vb_error err;
    vb_error_clear(&err);
    ok(vb_registry_check_shape(e, dir, 1, &err) == VB_ERROR && strstr(err.message, "not here"),
       "nothing here: refused (%s)", err.message);
    write_vecs(base, 10000, 128);
    write_vecs(query, 100, 128);
    write_vecs(gt, 100, 100);
    vb_error_clear(&err);
    ok(vb_registry_check_shape(e, dir, 1, &err) == VB_OK, "files in the registry's shape pass (%s)", err.message);

    /* the query set with another dimension (the same bytes as 100 x 128 would be 50 x 257) */
    write_vecs(query, 50, 257);
    snprintf(side, sizeof side, "%s.sha256", query);
    FILE *f = fopen(side, "w");
    fputs("0000000000000000000000000000000000000000000000000000000000000000  x\n", f);
    fclose(f);
    ok(vb_registry_check_shape(e, dir, 0, &err) == VB_ERROR, "a query set of another shape is refused");
    contains(err.message, "query set is 100 x 128, the file holds 50 x 257", "naming both shapes");
    contains(err.message, query, "and the file");
    ok(exists(query), "without move_aside (dataset list) the file stays");
    ok(vb_registry_check_shape(e, dir, 1, &err) == VB_ERROR, "refused again, moving it aside");
    char bad[600], badside[600];
    snprintf(bad, sizeof bad, "%s.bad", query);
    snprintf(badside, sizeof badside, "%s.bad.sha256", query);
    ok(!exists(query) && exists(bad), "the file is moved to FILE.bad");
    ok(!exists(side) && exists(badside), "its recorded checksum goes with it (FILE.bad.sha256)");
    contains(err.message, bad, "the message says where it is");

    write_vecs(query, 100, 128);
    write_vecs(gt, 99, 100);
    ok(vb_registry_check_shape(e, dir, 0, &err) == VB_ERROR, "a ground truth of 99 rows for 100 queries is refused");
    contains(err.message, "ground truth (rows, one per query) is 100, the file holds 99", "saying so");
}

/* A big-ann file: uint32 rows, uint32 dim, then rows x dim values of elem bytes (value = row + column). */
static void write_bin(const char *path, uint32_t rows, uint32_t dim, unsigned elem, uint64_t extra) {
    FILE *f = fopen(path, "wb");
    uint32_t h[2] = {rows, dim};
    fwrite(h, 4, 2, f);
    for (uint64_t i = 0; i < (uint64_t)rows * dim; i++) {
        uint32_t v = (uint32_t)(i / dim + i % dim);
        fwrite(&v, elem, 1, f);
    }
    for (uint64_t i = 0; i < extra; i++) fputc(0, f);
    fclose(f);
}

static void check_cut(const char *dir) {
    char mirror[256], cache[256], base[512], part[512];
    snprintf(mirror, sizeof mirror, "%s/mirror", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    mkdir(mirror, 0755);
    mkdir(cache, 0755);
    /* the "1B" file: 5000 rows of 16 uint8; the cut takes 1000 */
    snprintf(base, sizeof base, "%s/t.base.u8bin", mirror);
    write_bin(base, 5000, 16, 1, 0);
    snprintf(base, sizeof base, "%s/t.query.u8bin", mirror);
    write_bin(base, 10, 16, 1, 0);
    snprintf(base, sizeof base, "%s/t.gt.ibin", mirror);
    write_bin(base, 10, 100, 4, 10 * 100 * 4);   /* ids, then as many float32 distances */
    vb_registry_entry e = {"t-cut", "u8bin", "euclidean", 1000, 10, 16, "test",
                           {{"path", "http://unused/base.1B.u8bin", "t.base.u8bin", 8 + 1000 * 16, NULL, NULL, NULL, 1000},
                            {"queries_path", "http://unused/q", "t.query.u8bin", 8 + 10 * 16, NULL, NULL, NULL, 0},
                            {"groundtruth_path", "http://unused/gt", "t.gt.ibin", 8 + 10 * 100 * 8, NULL, NULL, NULL, 0}},
                           NULL};
    /* a part of the cut is here already: the fetch resumes it */
    snprintf(part, sizeof part, "%s/t.base.u8bin.part", cache);
    FILE *in = fopen(strcat(strcpy(base, mirror), "/t.base.u8bin"), "rb"), *out = fopen(part, "wb");
    char buf[4000];
    size_t n = fread(buf, 1, sizeof buf, in);
    fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
    vb_fetch_opts o = {.mirror = mirror, .quiet = 1};
    vb_error err;
    vb_error_clear(&err);
    ok(vb_fetch_registry(&e, cache, &o, &err) == VB_OK, "a registry cut is fetched from a directory mirror (%s)",
       err.message);
    snprintf(base, sizeof base, "%s/t.base.u8bin", cache);
    struct stat st;
    is_int(stat(base, &st) == 0 ? st.st_size : -1, 8 + 1000 * 16, "the cut has 8 + 1000 x 16 bytes");
    FILE *f = fopen(base, "rb");
    uint32_t h[2] = {0, 0};
    unsigned char row[16];
    int same = f && fread(h, 4, 2, f) == 2;
    for (uint32_t r = 0; same && r < 1000; r++) {
        same = fread(row, 1, 16, f) == 16;
        for (int c = 0; same && c < 16; c++) same = row[c] == (unsigned char)(r + c);
    }
    if (f) fclose(f);
    ok(h[0] == 1000 && h[1] == 16, "its header says 1000 rows of 16 (%u x %u)", h[0], h[1]);
    ok(same, "its rows are the first 1000 of the big file, the resumed part's included");
    ok(!exists(part), "no .part left");
    vb_error_clear(&err);
    ok(vb_fetch_registry(&e, cache, &o, &err) == VB_OK, "fetched again: verified in the cache (%s)", err.message);
}

int main(void) {
    char dir[] = "/tmp/vb-registry-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    check_entries();
    check_shape(dir);
    check_cut(dir);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("#   could not remove %s\n", dir);
    return done_testing();
}
