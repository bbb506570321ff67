/* Fuzz target: a fetched dataset archive (the TEXMEX .tar.gz files) unpacked by datasets/unpack.c: libarchive
 * reads the bytes, our code picks the members, refuses unsafe names, checks sizes and writes DEST.unpack files
 * it renames when whole. The input is the archive as downloaded. Invariants: on success both members are there at
 * their expected sizes; on refusal neither is, and no DEST.unpack is left behind; nothing is written outside the
 * scratch directory's own two names (checked by listing it). */
#include "datasets/unpack.h"
#include "tests/fuzz/fuzz_util.h"

#define MEMBER_BYTES 1040   /* 10 vectors of 25 dims as .fvecs: 10 x (4 + 25 x 4) */

static int exists(const char *path, off_t *size) {
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    if (size) *size = st.st_size;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char archive[PATH_MAX], base[PATH_MAX + 32], query[PATH_MAX + 32], dir[PATH_MAX], tmp[PATH_MAX + 48];
    fz_path("out", dir, sizeof dir);
    fz_mkdir(dir);
    fz_empty_dir(dir);
    fz_path("in.tar.gz", archive, sizeof archive);
    fz_write(archive, data, size);
    snprintf(base, sizeof base, "%s/base.fvecs", dir);
    snprintf(query, sizeof query, "%s/query.fvecs", dir);
    vb_unpack_member m[2] = {{"d/d_base.fvecs", base, MEMBER_BYTES}, {"d/d_query.fvecs", query, MEMBER_BYTES}};
    vb_error err;
    int rc = vb_unpack_members(archive, m, 2, &err);
    off_t sb = 0, sq = 0;
    int hb = exists(base, &sb), hq = exists(query, &sq);
    if (rc == VB_OK) {
        FZ_CHECK(hb && hq && sb == MEMBER_BYTES && sq == MEMBER_BYTES, "unpacked: base %d (%lld bytes), query %d (%lld)",
                 hb, (long long)sb, hq, (long long)sq);
        FZ_SAY("unpacked both members");
    } else {
        FZ_CHECK(!hb && !hq, "refused (%s) but a member is there", err.message);
        FZ_SAY("refused: %s", err.message);
    }
    for (int i = 0; i < 2; i++) {
        snprintf(tmp, sizeof tmp, "%s.unpack", m[i].dest);
        FZ_CHECK(!exists(tmp, NULL), "%s left behind", tmp);
    }
    /* nothing but the two members in the output directory */
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        FZ_CHECK(strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || strcmp(e->d_name, "base.fvecs") == 0 ||
                     strcmp(e->d_name, "query.fvecs") == 0,
                 "unexpected file %s in the output directory", e->d_name);
    if (d) closedir(d);
    return 0;
}
