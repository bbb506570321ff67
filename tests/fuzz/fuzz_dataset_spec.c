/* Fuzz target: a dataset entry in key/value form, as the agent receives it in an Assign message and hands it to
 * vb_dataset_open_spec (key check, source choice, numbers, metric, then the synthetic generator or a file).
 *
 * Input: lines "key=value" (at most 32). The target keeps the run inside its scratch directory and bounded:
 *   - path and every KEY_path (queries_path, groundtruth_path, labels_path, queries_labels_path) are reduced to
 *     their last component and looked up in a directory of small valid files made at start-up (base and query
 *     .fvecs, .fbin, .bvecs, .u8bin; gt.ivecs, gt.ibin; ann.hdf5, ann.h5; IDX images and labels, gzipped:
 *     images.gz, qimages.gz, labels.gz, qlabels.gz), so an input never opens a file of the host (a FIFO would
 *     block, /dev/zero would never end);
 *   - a synthetic spec is not run when it would generate more than 64 Ki floats per matrix or more than 1024
 *     clusters (big corpora are what the generator is for, not a parsing question).
 * The dataset cache is emptied after every input.
 *
 * Invariants checked beyond the sanitizers: a refused spec says why and names the dataset (once) when it has a
 * name; an accepted one carries the spec's name, has readable non-empty matrices, given neighbours exactly when
 * the spec names a ground-truth file (each a row of the corpus; a row subset drops them), a class per row and per
 * query below n_classes exactly when the spec names label files, and for synthetic data exactly the rows, queries
 * and dimension asked for. */
#include <hdf5.h>
#include <zlib.h>

#include "datasets/dataset_spec.h"
#include "tests/fuzz/fuzz_util.h"

#define MAX_PAIRS 32
#define MAX_FLOATS 65536

static char files_dir[PATH_MAX], cache_dir[PATH_MAX];

/* A vector file of rows x dim: fbin = 1 for the big-ann layout (header), else TEXMEX (a dimension word per row);
 * elem 4 (float32) or 1 (uint8). */
static void make_vecs(const char *name, int fbin, size_t elem, uint32_t rows, uint32_t dim) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", files_dir, name);
    size_t len = fbin ? 8 + (size_t)rows * dim * elem : (size_t)rows * (4 + dim * elem);
    uint8_t *buf = calloc(1, len), *p = buf;
    if (fbin) {
        memcpy(p, &rows, 4);
        memcpy(p + 4, &dim, 4);
        p += 8;
    }
    for (uint32_t i = 0; i < rows; i++) {
        if (!fbin) {
            memcpy(p, &dim, 4);
            p += 4;
        }
        for (uint32_t j = 0; j < dim; j++, p += elem) {
            float v = (float)(i * 7 + j) / 10.0f;
            if (elem == 4)
                memcpy(p, &v, 4);
            else
                *p = (uint8_t)(i * 7 + j);
        }
    }
    fz_write(path, buf, len);
    free(buf);
}

/* Given neighbours for 4 queries over 30 rows, k = 5: .ivecs, or .ibin with distances. */
static void make_gt(const char *name, int ibin) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", files_dir, name);
    uint8_t buf[8 + 4 * 5 * 8], *p = buf;
    uint32_t rows = 4, k = 5;
    if (ibin) {
        memcpy(p, &rows, 4);
        memcpy(p + 4, &k, 4);
        p += 8;
    }
    for (uint32_t q = 0; q < rows; q++) {
        if (!ibin) {
            memcpy(p, &k, 4);
            p += 4;
        }
        for (uint32_t j = 0; j < k; j++, p += 4) {
            uint32_t id = (q * 11 + j * 3) % 30;
            memcpy(p, &id, 4);
        }
    }
    for (uint32_t i = 0; ibin && i < rows * k; i++, p += 4) {
        float d = (float)i;
        memcpy(p, &d, 4);
    }
    fz_write(path, buf, (size_t)(p - buf));
}

static void make_hdf5(const char *name) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", files_dir, name);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    float train[20 * 4], test[3 * 4];
    for (int i = 0; i < 80; i++) train[i] = (float)i / 7.0f;
    for (int i = 0; i < 12; i++) test[i] = (float)i / 3.0f;
    hsize_t dt[2] = {20, 4}, dq[2] = {3, 4};
    const float *bufs[2] = {train, test};
    hsize_t *dims[2] = {dt, dq};
    const char *names[2] = {"train", "test"};
    for (int i = 0; i < 2; i++) {
        hid_t sp = H5Screate_simple(2, dims[i], NULL);
        hid_t d = H5Dcreate2(f, names[i], H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, bufs[i]);
        H5Dclose(d);
        H5Sclose(sp);
    }
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 8);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, "distance", t, sp, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, "angular");
    H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
    if (H5Fclose(f) < 0) abort();
}

/* A gzipped IDX file: images (count x 2 x 4) or labels (count, values 0..4). */
static void make_idx(const char *name, int labels, uint32_t count) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", files_dir, name);
    unsigned char b[16 + 64 * 8];
    size_t len = 0, item = labels ? 1 : 8;
    uint32_t words[4] = {labels ? 0x801u : 0x803u, count, 2, 4};
    for (int w = 0; w < (labels ? 2 : 4); w++)
        for (int i = 3; i >= 0; i--) b[len++] = (unsigned char)(words[w] >> (8 * i));
    for (size_t i = 0; i < count * item; i++) b[len++] = (unsigned char)(labels ? i % 5 : i * 13 % 256);
    gzFile g = gzopen(path, "wb");
    if (!g || gzwrite(g, b, (unsigned)len) != (int)len || gzclose(g) != Z_OK) abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_mkdir(fz_path("files", files_dir, sizeof files_dir));
    fz_mkdir(fz_path("cache", cache_dir, sizeof cache_dir));
    make_vecs("base.fvecs", 0, 4, 30, 8);
    make_vecs("query.fvecs", 0, 4, 4, 8);
    make_vecs("base.fbin", 1, 4, 30, 8);
    make_vecs("query.fbin", 1, 4, 4, 8);
    make_vecs("base.bvecs", 0, 1, 30, 8);
    make_vecs("query.bvecs", 0, 1, 4, 8);
    make_vecs("base.u8bin", 1, 1, 30, 8);
    make_vecs("query.u8bin", 1, 1, 4, 8);
    make_gt("gt.ivecs", 0);
    make_gt("gt.ibin", 1);
    make_hdf5("ann.hdf5");
    make_hdf5("ann.h5");
    make_idx("images.gz", 0, 30);
    make_idx("qimages.gz", 0, 4);
    make_idx("labels.gz", 1, 30);
    make_idx("qlabels.gz", 1, 4);
    return 0;
}

/* The last path component with unsafe characters replaced, inside files_dir. */
static void sandbox_path(const char *value, char *out, size_t len) {
    const char *base = strrchr(value, '/');
    base = base ? base + 1 : value;
    if (!*value) {
        snprintf(out, len, "%s", "");
        return;
    }
    int n = snprintf(out, len, "%s/", files_dir);
    for (const char *p = base; *p && (size_t)n + 1 < len; p++) {
        char c = *p;
        int safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                   c == '_' || c == '-';
        out[n++] = safe ? c : '_';
    }
    out[n] = '\0';
}

/* The synthetic generator's parameter as the spec will read it, or def when absent or malformed (the spec then
 * refuses it anyway). */
static long spec_long(const vb_kv *kv, size_t n, const char *key, long def) {
    const char *v = vb_kv_get(kv, n, key, NULL);
    if (!v) return def;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    return errno || end == v || *end ? def : x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    vb_kv kv[MAX_PAIRS];
    char paths[MAX_PAIRS][PATH_MAX + 64];
    size_t n = 0;
    for (char *line = text, *next; line && n < MAX_PAIRS; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = '\0';
        kv[n].key = line;
        kv[n].value = eq + 1;
        size_t kl = strlen(line);
        if (strcmp(line, "path") == 0 || (kl > 5 && strcmp(line + kl - 5, "_path") == 0)) {
            sandbox_path(eq + 1, paths[n], sizeof paths[n]);
            kv[n].value = paths[n];
        }
        n++;
    }
    const char *src = vb_kv_get(kv, n, "source", NULL);
    long rows = spec_long(kv, n, "rows", 10000), queries = spec_long(kv, n, "queries", 1000),
         dim = spec_long(kv, n, "dim", 128), clusters = spec_long(kv, n, "clusters", 0);
    int big = rows > MAX_FLOATS || queries > MAX_FLOATS || dim > MAX_FLOATS || clusters > 1024 ||
              (rows > 0 && dim > 0 && rows * dim > MAX_FLOATS) ||
              (queries > 0 && dim > 0 && queries * dim > MAX_FLOATS);
    if (src && strcmp(src, "synthetic") == 0 && big) {
        FZ_SAY("not run: a synthetic corpus above the target's size bound");
        free(text);
        return 0;
    }

    vb_dataset *ds = NULL;
    vb_error err = {0};
    const char *name = vb_kv_get(kv, n, "name", NULL);
    if (vb_dataset_open_spec(kv, n, cache_dir, &ds, &err) != VB_OK) {
        FZ_CHECK(ds == NULL && err.message[0], "refused without a message");
        FZ_SAY("refused: %s", err.message);
        if (name && *name && strlen(name) < 200) {
            char twice[512];
            snprintf(twice, sizeof twice, "dataset '%s': dataset '%s'", name, name);
            FZ_CHECK(strstr(err.message, name) != NULL, "the message does not name dataset '%s': %s", name,
                     err.message);
            FZ_CHECK(strncmp(err.message, twice, strlen(twice)) != 0, "the message names the dataset twice: %s",
                     err.message);
        }
    } else {
        FZ_SAY("accepted: %s, %zu x %zu, %zu queries", ds->source, ds->n_train, ds->dim, ds->n_test);
        FZ_CHECK(name && strncmp(ds->name, name, sizeof ds->name - 1) == 0, "named '%s', spec says '%s'", ds->name,
                 name ? name : "(none)");
        FZ_CHECK(ds->n_train > 0 && ds->n_test > 0 && ds->dim > 0, "%zu x %zu, %zu queries", ds->n_train, ds->dim,
                 ds->n_test);
        fz_touch(ds->train, ds->n_train * ds->dim * sizeof(float));
        fz_touch(ds->test, ds->n_test * ds->dim * sizeof(float));
        const char *gtp = vb_kv_get(kv, n, "groundtruth_path", NULL);
        size_t sl = strlen(ds->source);
        int h5 = (sl > 5 && strcmp(ds->source + sl - 5, ".hdf5") == 0) ||
                 (sl > 3 && strcmp(ds->source + sl - 3, ".h5") == 0);
        FZ_CHECK(!gtp || ds->gt_k > 0 || vb_kv_get(kv, n, "rows", NULL), "groundtruth_path %s accepted without "
                 "neighbours", gtp);
        const char *lp = vb_kv_get(kv, n, "labels_path", NULL);
        /* a file's classes come from its labels_path; a synthetic corpus's are its clusters (always there) */
        int has_classes = lp || strcmp(ds->source, "synthetic") == 0;
        FZ_CHECK(has_classes == !!ds->train_class && has_classes == !!ds->test_class,
                 "class columns exactly with labels_path or a synthetic corpus");
        for (size_t i = 0; ds->train_class && i < ds->n_train; i++)
            FZ_CHECK(ds->train_class[i] >= 0 && ds->train_class[i] < ds->n_classes, "row %zu's class", i);
        for (size_t i = 0; ds->test_class && i < ds->n_test; i++)
            FZ_CHECK(ds->test_class[i] >= 0 && ds->test_class[i] < ds->n_classes, "query %zu's class", i);
        FZ_CHECK(gtp || h5 || ds->gt_k == 0, "neighbours (k = %zu) from %s without a groundtruth_path", ds->gt_k,
                 ds->source);
        for (size_t i = 0; ds->neighbors && i < ds->n_test * ds->gt_k; i++)
            FZ_CHECK(ds->neighbors[i] >= 0 && (size_t)ds->neighbors[i] < ds->n_train, "neighbour %zu is %d of %zu rows",
                     i, ds->neighbors[i], ds->n_train);
        if (src && strcmp(src, "synthetic") == 0)
            FZ_CHECK(ds->n_train == (size_t)rows && ds->n_test == (size_t)queries && ds->dim == (size_t)dim,
                     "synthetic %zu x %zu, %zu queries; asked %ld x %ld, %ld", ds->n_train, ds->dim, ds->n_test, rows,
                     dim, queries);
        vb_dataset_close(&ds);
    }
    fz_empty_dir(cache_dir);
    free(text);
    return 0;
}
