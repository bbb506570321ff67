/* The dataset registry (datasets/registry.h). Shapes of the ann-benchmarks files are the published ones
 * (https://github.com/erikbern/ann-benchmarks, "Data sets"); sizes and checksums are not published there, so they
 * are unknown here and recorded at the first download (datasets/fetch.c). The DEEP files are the ones of
 * big-ann-benchmarks (https://big-ann-benchmarks.com): their sizes follow from their headers (8 bytes, then
 * rows x dim float32 for .fbin; 8 bytes, then queries x 100 uint32 ids and as many float32 distances for the
 * ground-truth .ibin), their checksums are not published. BIGANN, Text-to-Image and MS Turing 10M are cuts: big-ann-
 * benchmarks itself (benchmark/datasets.py, DatasetCompetitionFormat.prepare) downloads the first 8 + 10M x dim x
 * element bytes of the 1B file and sets the header's row count to 10M; the ground truths are its GT_10M files.
 * The TEXMEX files (http://corpus-texmex.irisa.fr/) are .tar.gz archives of .fvecs/.ivecs files (DIR/DIR_base.fvecs,
 * DIR_query.fvecs, DIR_groundtruth.ivecs with 100 neighbours per query); member sizes follow from the shape (a
 * record is int32 dim + dim values), the archives' sizes and checksums are not published. ANN_SIFT1B (bigann_*.bvecs,
 * 1B rows) is not here: its 10M cut is bigann-10M, from big-ann-benchmarks' u8bin copy that a Range request can cut. */
#include "datasets/registry.h"

#include <stdio.h>
#include <string.h>

/* Debian's dataset-fashion-mnist (bookworm, trixie, sid; Expat licence): Fashion-MNIST's four gzipped IDX files,
 * the inputs of ann-benchmarks' fashion-mnist-784-euclidean (its train = the 60,000 training images, its test = the
 * 10,000 test images, 784 pixel values 0-255 as float32, euclidean), with the 10 class labels beside them. */
static const vb_registry_package fashion_mnist_deb = {
    "dataset-fashion-mnist", "/usr/share/datasets/fashion-mnist", "idx",
    {{"path", "train-images-idx3-ubyte.gz"},
     {"queries_path", "t10k-images-idx3-ubyte.gz"},
     {"labels_path", "train-labels-idx1-ubyte.gz"},
     {"queries_labels_path", "t10k-labels-idx1-ubyte.gz"}}};

#define ANNB "http://ann-benchmarks.com/"
/* One ann-benchmarks HDF5 file: train, test, neighbors and distances in one. */
#define ANNB_ENTRY(name, metric, rows, queries, dim) ANNB_PKG_ENTRY(name, metric, rows, queries, dim, NULL)
/* ... also shipped by a Debian package */
#define ANNB_PKG_ENTRY(name, metric, rows, queries, dim, package) \
    {name, "hdf5", metric, rows, queries, dim, "ann-benchmarks", \
     {{"path", ANNB name ".hdf5", name ".hdf5", 0, NULL, NULL, NULL, 0}}, package}

#define TEXMEX "ftp://ftp.irisa.fr/local/texmex/corpus/"
/* bytes of a .fvecs of rows x dim, and of an .ivecs ground truth of q queries x 100 neighbours */
#define FVECS_BYTES(rows, dim) ((uint64_t)(rows) * (4ULL + (dim) * 4ULL))
#define IVECS_GT_BYTES(q) ((uint64_t)(q) * (4ULL + 100ULL * 4ULL))
/* One TEXMEX archive DIR.tar.gz holding DIR/DIR_base.fvecs, DIR/DIR_query.fvecs, DIR/DIR_groundtruth.ivecs */
#define TEXMEX_ENTRY(name, dir, rows, queries, dim) \
    {name, "fvecs", "euclidean", rows, queries, dim, "TEXMEX (corpus-texmex.irisa.fr)", \
     {{"path", TEXMEX dir ".tar.gz", name ".base.fvecs", FVECS_BYTES(rows, dim), NULL, dir ".tar.gz", \
       dir "/" dir "_base.fvecs", 0}, \
      {"queries_path", TEXMEX dir ".tar.gz", name ".query.fvecs", FVECS_BYTES(queries, dim), NULL, dir ".tar.gz", \
       dir "/" dir "_query.fvecs", 0}, \
      {"groundtruth_path", TEXMEX dir ".tar.gz", name ".gt.ivecs", IVECS_GT_BYTES(queries), NULL, dir ".tar.gz", \
       dir "/" dir "_groundtruth.ivecs", 0}}, NULL}

#define DEEP "https://storage.yandexcloud.net/yandex-research/ann-datasets/DEEP/"
#define BIGANN_GT "https://dl.fbaipublicfiles.com/billion-scale-ann-benchmarks/"
/* bytes of a big-ann .fbin of rows x dim float32, and of a ground truth of q queries x 100 neighbours */
#define FBIN_BYTES(rows, dim) (8ULL + (uint64_t)(rows) * (dim) * 4ULL)
#define IBIN_GT_BYTES(q) (8ULL + (uint64_t)(q) * 100ULL * 8ULL)
#define U8BIN_BYTES(rows, dim) (8ULL + (uint64_t)(rows) * (dim))
#define FBF "https://dl.fbaipublicfiles.com/billion-scale-ann-benchmarks/"
#define T2I "https://storage.yandexcloud.net/yandex-research/ann-datasets/T2I/"
#define TURING "https://comp21storage.z5.web.core.windows.net/comp21/MSFT-TURING-ANNS/"

static const vb_registry_entry entries[] = {
    ANNB_ENTRY("dbpedia-openai-1000k-angular", "angular", 990000, 10000, 1536),
    ANNB_PKG_ENTRY("fashion-mnist-784-euclidean", "euclidean", 60000, 10000, 784, &fashion_mnist_deb),
    ANNB_ENTRY("mnist-784-euclidean", "euclidean", 60000, 10000, 784),
    ANNB_ENTRY("sift-128-euclidean", "euclidean", 1000000, 10000, 128),
    ANNB_ENTRY("gist-960-euclidean", "euclidean", 1000000, 1000, 960),
    ANNB_ENTRY("glove-25-angular", "angular", 1183514, 10000, 25),
    ANNB_ENTRY("glove-50-angular", "angular", 1183514, 10000, 50),
    ANNB_ENTRY("glove-100-angular", "angular", 1183514, 10000, 100),
    ANNB_ENTRY("glove-200-angular", "angular", 1183514, 10000, 200),
    ANNB_ENTRY("nytimes-256-angular", "angular", 290000, 10000, 256),
    ANNB_ENTRY("deep-image-96-angular", "angular", 9990000, 10000, 96),
    ANNB_ENTRY("lastfm-64-dot", "angular", 292385, 50000, 65),
    /* big-ann-benchmarks DEEP 10M: the first 10M of Deep1B, its public queries and the 10M ground truth */
    {"deep-10M", "fbin", "euclidean", 10000000, 10000, 96, "big-ann-benchmarks (Yandex DEEP)",
     {{"path", DEEP "base.10M.fbin", "deep-10M.base.fbin", FBIN_BYTES(10000000, 96), NULL, NULL, NULL, 0},
      {"queries_path", DEEP "query.public.10K.fbin", "deep-10M.query.fbin", FBIN_BYTES(10000, 96), NULL, NULL, NULL, 0},
      {"groundtruth_path", BIGANN_GT "GT_10M/deep-10M", "deep-10M.gt.ibin", IBIN_GT_BYTES(10000), NULL, NULL, NULL, 0}},
     NULL},
    /* big-ann-benchmarks BIGANN 10M: the first 10M rows of base.1B.u8bin (SIFT, uint8) */
    {"bigann-10M", "u8bin", "euclidean", 10000000, 10000, 128, "big-ann-benchmarks (BIGANN)",
     {{"path", FBF "bigann/base.1B.u8bin", "bigann-10M.base.u8bin", U8BIN_BYTES(10000000, 128), NULL, NULL, NULL,
       10000000},
      {"queries_path", FBF "bigann/query.public.10K.u8bin", "bigann-10M.query.u8bin", U8BIN_BYTES(10000, 128), NULL,
       NULL, NULL, 0},
      {"groundtruth_path", FBF "GT_10M/bigann-10M", "bigann-10M.gt.ibin", IBIN_GT_BYTES(10000), NULL, NULL, NULL, 0}},
     NULL},
    /* big-ann-benchmarks Text-to-Image 10M: the first 10M rows of base.1B.fbin, inner product */
    {"text2image-10M", "fbin", "dot", 10000000, 100000, 200, "big-ann-benchmarks (Yandex Text-to-Image)",
     {{"path", T2I "base.1B.fbin", "text2image-10M.base.fbin", FBIN_BYTES(10000000, 200), NULL, NULL, NULL, 10000000},
      {"queries_path", T2I "query.public.100K.fbin", "text2image-10M.query.fbin", FBIN_BYTES(100000, 200), NULL, NULL,
       NULL, 0},
      {"groundtruth_path", FBF "GT_10M/text2image-10M", "text2image-10M.gt.ibin", IBIN_GT_BYTES(100000), NULL, NULL,
       NULL, 0}},
     NULL},
    /* big-ann-benchmarks MS Turing 10M: the first 10M rows of base1b.fbin */
    {"msturing-10M", "fbin", "euclidean", 10000000, 100000, 100, "big-ann-benchmarks (Microsoft Turing-ANNS)",
     {{"path", TURING "base1b.fbin", "msturing-10M.base.fbin", FBIN_BYTES(10000000, 100), NULL, NULL, NULL, 10000000},
      {"queries_path", TURING "query100K.fbin", "msturing-10M.query.fbin", FBIN_BYTES(100000, 100), NULL, NULL, NULL,
       0},
      {"groundtruth_path", TURING "msturing-gt-10M", "msturing-10M.gt.ibin", IBIN_GT_BYTES(100000), NULL, NULL, NULL,
       0}},
     NULL},
    TEXMEX_ENTRY("texmex-siftsmall", "siftsmall", 10000, 100, 128),
    TEXMEX_ENTRY("texmex-sift", "sift", 1000000, 10000, 128),
    TEXMEX_ENTRY("texmex-gist", "gist", 1000000, 1000, 960),
    {NULL, NULL, NULL, 0, 0, 0, NULL, {{NULL, NULL, NULL, 0, NULL, NULL, NULL, 0}}, NULL},
};

const vb_registry_entry *vb_registry_all(void) { return entries; }

const vb_registry_entry *vb_registry_find(const char *name) {
    for (const vb_registry_entry *e = entries; name && e->name; e++)
        if (strcmp(e->name, name) == 0) return e;
    return NULL;
}

size_t vb_registry_n_files(const vb_registry_entry *e) {
    size_t n = 0;
    while (n < VB_REGISTRY_MAX_FILES && e->files[n].key) n++;
    return n;
}

size_t vb_registry_package_n_files(const vb_registry_package *p) {
    size_t n = 0;
    while (p && n < VB_REGISTRY_MAX_PKG_FILES && p->files[n].key) n++;
    return n;
}

void vb_registry_file_name(const vb_registry_entry *e, char *buf, size_t len) {
    snprintf(buf, len, "%s", e->files[0].file);
}

uint64_t vb_registry_expected_bytes(const vb_registry_entry *e) {
    uint64_t sum = 0;
    size_t n = vb_registry_n_files(e);
    for (size_t i = 0; i < n; i++) {
        if (!e->files[i].size) return (e->rows + e->queries) * e->dim * 4 + e->queries * 100 * 8;
        /* the archive stays in the cache beside its members (it is what is verified); compressed, it is smaller */
        sum += e->files[i].member ? 2 * e->files[i].size : e->files[i].size;
    }
    return sum;
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

unsigned vb_registry_bin_elem(const char *name) {
    if (ends_with(name, ".u8bin") || ends_with(name, ".i8bin")) return 1;
    if (ends_with(name, ".fbin") || ends_with(name, ".ibin")) return 4;
    return 0;
}

int vb_registry_verified(const vb_registry_entry *e) {
    size_t n = vb_registry_n_files(e);
    for (size_t i = 0; i < n; i++)
        if (!e->files[i].size || !e->files[i].sha256) return 0;
    return 1;
}
