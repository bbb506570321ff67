/* Datasets: opening ann-benchmarks HDF5, TEXMEX .fvecs/.bvecs and big-ann .fbin/.u8bin files (with given
 * neighbours from .ivecs/.ibin), and the seeded synthetic generator, always ending with the corpus memory-mapped
 * read-only so every thread shares one copy.
 *
 * Data that cannot be mapped where it lies (chunked or compressed HDF5, float64, .fvecs with its per-row
 * header, uint8 .bvecs/.u8bin, generated data) is converted once into a cache file: a 64-byte header (magic,
 * rows, cols, a key that identifies the source) followed by row-major float32. Cache files are written under a
 * temporary name, fsynced and renamed, so a reader never sees half a file and two processes may race
 * harmlessly. */
#include "datasets/dataset.h"
#include "datasets/idx.h"
#include "util/fs.h"
#include "util/mix.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>
#include <xxhash.h>

#define VB_DS_MAX_REGIONS 16
/* The largest matrix a file may declare, in bytes of float32: far beyond any real corpus, far below where
 * rows x cols x 4 (and the cache file's header on top) could wrap around 2^64 and turn a huge shape into a small
 * mapping or buffer that is then written or read as if it were huge. */
#define VB_DS_MAX_BYTES (1ull << 46)

struct vb_dataset_private {
    struct {
        void *addr;
        size_t len;
    } map[VB_DS_MAX_REGIONS];
    int n_map;
    void *owned[VB_DS_MAX_REGIONS];
    int n_owned;
};

/* ---------------------------------------------------------------------------------------------------------
 * Small helpers */

static int ds_fail(vb_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int ds_fail(vb_error *err, const char *fmt, ...) {
    char buf[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return vb_error_set(err, "dataset", 1, "%s", buf);
}

static vb_dataset *ds_new(void) {
    vb_dataset *ds = calloc(1, sizeof *ds);
    if (!ds) return NULL;
    ds->priv = calloc(1, sizeof *ds->priv);
    if (!ds->priv) {
        free(ds);
        return NULL;
    }
    return ds;
}

void vb_dataset_close(vb_dataset **pds) {
    if (!pds || !*pds) return;
    vb_dataset *ds = *pds;
    if (ds->priv) {
        for (int i = 0; i < ds->priv->n_map; i++) munmap(ds->priv->map[i].addr, ds->priv->map[i].len);
        for (int i = 0; i < ds->priv->n_owned; i++) free(ds->priv->owned[i]);
        free(ds->priv);
    }
    free(ds);
    *pds = NULL;
}

static void ds_own(vb_dataset *ds, void *p) {
    /* the fixed table is sized for the few buffers a source can own (neighbors, distances); callers check room */
    if (ds->priv->n_owned >= VB_DS_MAX_REGIONS) abort();
    ds->priv->owned[ds->priv->n_owned++] = p;
}

/* The file name without directory and extension, reduced to characters that are safe in a file name. */
static void safe_stem(const char *path, char *out, size_t len) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *dot = strrchr(b, '.');
    size_t n = dot && dot != b ? (size_t)(dot - b) : strlen(b);
    if (n >= len) n = len - 1;
    for (size_t i = 0; i < n; i++) {
        char c = b[i];
        int okc = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                  c == '_' || c == '.';
        out[i] = okc ? c : '_';
    }
    out[n] = '\0';
}

/* A new dataset read from the file at path: named after its stem, its source the path; NULL when out of memory. */
static vb_dataset *ds_new_file(const char *path) {
    vb_dataset *ds = ds_new();
    if (!ds) return NULL;
    char stem[sizeof ds->name];
    safe_stem(path, stem, sizeof stem);
    snprintf(ds->name, sizeof ds->name, "%s", stem);
    snprintf(ds->source, sizeof ds->source, "%s", path);
    return ds;
}

static int has_suffix(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

static void shape_str(const hsize_t *dims, int rank, char *out, size_t len) {
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < rank && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, "%s%llu", i ? "x" : "", (unsigned long long)dims[i]);
    if (rank == 0) snprintf(out, len, "scalar");
}

void vb_dataset_cache_dir_name(const char *given, char *buf, size_t len) {
    const char *env;
    if (given && *given)
        snprintf(buf, len, "%s", given);
    else if ((env = getenv("VBENCH_CACHE")) && *env)
        snprintf(buf, len, "%s", env);
    else if ((env = getenv("XDG_CACHE_HOME")) && *env)
        snprintf(buf, len, "%s/vbench", env);
    else if ((env = getenv("HOME")) && *env)
        snprintf(buf, len, "%s/.cache/vbench", env);
    else
        snprintf(buf, len, "/tmp/vbench-cache");
}

int vb_dataset_cache_dir(const char *given, char *buf, size_t len, vb_error *err) {
    vb_dataset_cache_dir_name(given, buf, len);
    vb_error mk;
    if (vb_mkdirs(buf, 0775, &mk) != VB_OK) return ds_fail(err, "cache directory %s: %s", buf, mk.message);
    struct stat st;
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) return ds_fail(err, "cache directory %s is not a directory", buf);
    return VB_OK;
}

static const char *file_kind(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

int vb_dataset_check_file(const char *path, vb_error *err) {
    struct stat st;
    if (stat(path, &st) != 0) return ds_fail(err, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return ds_fail(err, "%s is %s: a dataset file must be a regular file", path, file_kind(st.st_mode));
    return VB_OK;
}

int vb_dataset_open_file(const char *path, vb_error *err) {
    /* O_NONBLOCK: open() of a FIFO with no writer would wait forever (a device may too); for a regular file it
     * changes nothing, and it is cleared below anyway. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return ds_fail(err, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return ds_fail(err, "%s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return ds_fail(err, "%s is %s: a dataset file must be a regular file", path, file_kind(st.st_mode));
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

/* vb_dataset_open_file as a stdio stream. */
static FILE *fopen_regular(const char *path, vb_error *err) {
    int fd = vb_dataset_open_file(path, err);
    if (fd < 0) return NULL;
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        ds_fail(err, "%s: %s", path, strerror(errno));
        close(fd);
    }
    return fp;
}

/* Maps [offset, offset + len) of a file read-only; the mapping belongs to ds and goes with vb_dataset_close. */
static int map_region(vb_dataset *ds, const char *path, uint64_t offset, size_t len, const void **out,
                      vb_error *err) {
    int fd = vb_dataset_open_file(path, err);
    if (fd < 0) return VB_ERROR;
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < offset + len) {
        close(fd);
        return ds_fail(err, "%s: file is shorter (%lld bytes) than the data it describes (%llu bytes at %llu)",
                       path, (long long)st.st_size, (unsigned long long)len, (unsigned long long)offset);
    }
    if (ds->priv->n_map >= VB_DS_MAX_REGIONS) {
        close(fd);
        return ds_fail(err, "%s: too many mapped regions", path);
    }
    long page = sysconf(_SC_PAGESIZE);
    uint64_t delta = offset % (uint64_t)page;
    void *base = mmap(NULL, len + delta, PROT_READ, MAP_SHARED, fd, (off_t)(offset - delta));
    int e = errno;
    close(fd);
    if (base == MAP_FAILED) return ds_fail(err, "%s: mmap failed: %s", path, strerror(e));
    ds->priv->map[ds->priv->n_map].addr = base;
    ds->priv->map[ds->priv->n_map].len = len + delta;
    ds->priv->n_map++;
    *out = (const char *)base + delta;
    return VB_OK;
}

/* A key for a converted file: its real path, identity and modification time, plus what was taken from it. */
static int file_key(const char *path, const char *what, uint64_t *key, vb_error *err) {
    char real[PATH_MAX];
    struct stat st;
    if (!realpath(path, real) || stat(real, &st) != 0) return ds_fail(err, "%s: %s", path, strerror(errno));
    char desc[PATH_MAX + 256];
    int n = snprintf(desc, sizeof desc, "vbench-convert-v1|%s|%s|%llu|%llu|%lld|%lld.%09ld", real, what,
                     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, (long long)st.st_size,
                     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    *key = XXH3_64bits(desc, (size_t)n);
    return VB_OK;
}

/* ---------------------------------------------------------------------------------------------------------
 * Cache files: header + float32 rows */

#define CACHE_MAGIC "VBMAT01\n"
typedef struct cache_hdr {
    char magic[8];
    uint64_t rows, cols, key, data_offset;
    uint64_t reserved[3];
} cache_hdr;
_Static_assert(sizeof(cache_hdr) == 64, "cache header is 64 bytes");

/* Maps a cache file if it exists and its header and size agree with key (and cols when non-zero).
 * Returns 1 when mapped, 0 when absent or unusable (the caller regenerates it), VB_ERROR on mmap failure. */
static int cache_try_map(vb_dataset *ds, const char *path, uint64_t key, size_t want_cols, size_t *rows,
                         size_t *cols, const float **data, vb_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);   /* no wait on a FIFO put in the cache's place */
    if (fd < 0) return 0;
    cache_hdr h;
    struct stat st;
    int good = fstat(fd, &st) == 0 && pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
               memcmp(h.magic, CACHE_MAGIC, 8) == 0 && h.key == key && h.data_offset == sizeof h &&
               h.rows > 0 && h.cols > 0 && (want_cols == 0 || h.cols == want_cols) &&
               h.rows <= (UINT64_MAX - sizeof h) / 4 / h.cols &&
               (uint64_t)st.st_size == sizeof h + h.rows * h.cols * 4;
    close(fd);
    if (!good) return 0;
    const void *p;
    if (map_region(ds, path, sizeof h, h.rows * h.cols * 4, &p, err) != VB_OK) return VB_ERROR;
    *rows = h.rows;
    *cols = h.cols;
    *data = p;
    return 1;
}

/* Writes the float32 copy of a source file into the cache file `file` under `key` (cache_begin ... cache_commit). */
typedef int (*cache_fill_fn)(void *ctx, const char *file, uint64_t key, vb_error *err);

/* The float32 copy of `path` in the dataset cache, DIR/PREFIX-STEM[-TAIL]-KEY.f32 (KEY: file_key of path and
 * key_label), mapped: as it is when it holds want_rows rows (0: any) of want_cols columns (0: any), else written
 * first by fill and mapped then (a stale copy under the key is unmapped and replaced). The one path of every
 * source that is not float32 as it lies (HDF5 arrays, vector files, IDX images). */
static int cache_load(vb_dataset *ds, const char *cache_dir, const char *path, const char *prefix, const char *tail,
                      const char *key_label, size_t want_rows, size_t want_cols, cache_fill_fn fill, void *ctx,
                      size_t *rows, size_t *cols, const float **data, vb_error *err) {
    char dir[PATH_MAX], stem[80], file[PATH_MAX + 200];
    uint64_t key = 0;
    if (vb_dataset_cache_dir(cache_dir, dir, sizeof dir, err) != VB_OK) return VB_ERROR;
    if (file_key(path, key_label, &key, err) != VB_OK) return VB_ERROR;
    safe_stem(path, stem, sizeof stem);
    snprintf(file, sizeof file, "%s/%s-%s%s%s-%016llx.f32", dir, prefix, stem, tail ? "-" : "", tail ? tail : "",
             (unsigned long long)key);
    int r = cache_try_map(ds, file, key, want_cols, rows, cols, data, err);
    if (r < 0) return VB_ERROR;
    if (r == 1 && (!want_rows || *rows == want_rows)) return VB_OK;
    if (r == 1) { /* a stale file under this key: forget its mapping before replacing it */
        ds->priv->n_map--;
        munmap(ds->priv->map[ds->priv->n_map].addr, ds->priv->map[ds->priv->n_map].len);
    }
    if (fill(ctx, file, key, err) != VB_OK) return VB_ERROR;
    r = cache_try_map(ds, file, key, want_cols, rows, cols, data, err);
    if (r < 0) return VB_ERROR;
    if (r == 0 || (want_rows && *rows != want_rows))
        return ds_fail(err, "%s: cache file unusable right after writing it", file);
    return VB_OK;
}

typedef struct cache_writer {
    int fd;
    char tmp[PATH_MAX], path[PATH_MAX];
    void *map;
    size_t len;
} cache_writer;

/* Creates a temporary file beside path, sized and allocated for rows x cols, and maps it for writing.
 * Space is reserved with posix_fallocate, so a full disk is an error here rather than SIGBUS later. */
static int cache_begin(cache_writer *w, const char *path, size_t rows, size_t cols, uint64_t key, float **data,
                       vb_error *err) {
    memset(w, 0, sizeof *w);
    w->fd = -1;
    snprintf(w->path, sizeof w->path, "%s", path);
    static unsigned long counter;
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%ld.%lu", path, (long)getpid(),
             __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
    w->len = sizeof(cache_hdr) + rows * cols * 4;
    w->fd = open(w->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (w->fd < 0) return ds_fail(err, "%s: cannot create: %s", w->tmp, strerror(errno));
    int e = posix_fallocate(w->fd, 0, (off_t)w->len);
    if (e != 0) {
        close(w->fd);
        unlink(w->tmp);
        return ds_fail(err, "%s: cannot reserve %zu bytes: %s", w->tmp, w->len, strerror(e));
    }
    w->map = mmap(NULL, w->len, PROT_READ | PROT_WRITE, MAP_SHARED, w->fd, 0);
    if (w->map == MAP_FAILED) {
        e = errno;
        close(w->fd);
        unlink(w->tmp);
        return ds_fail(err, "%s: mmap failed: %s", w->tmp, strerror(e));
    }
    cache_hdr h = {.rows = rows, .cols = cols, .key = key, .data_offset = sizeof h};
    memcpy(h.magic, CACHE_MAGIC, 8);
    memcpy(w->map, &h, sizeof h);
    *data = (float *)((char *)w->map + sizeof h);
    return VB_OK;
}

static void cache_abort(cache_writer *w) {
    if (w->map && w->map != MAP_FAILED) munmap(w->map, w->len);
    if (w->fd >= 0) close(w->fd);
    unlink(w->tmp);
    w->map = NULL;
    w->fd = -1;
}

static int cache_commit(cache_writer *w, vb_error *err) {
    int rc = msync(w->map, w->len, MS_SYNC) == 0 && fsync(w->fd) == 0 ? 0 : errno;
    munmap(w->map, w->len);
    w->map = NULL;
    close(w->fd);
    w->fd = -1;
    if (rc == 0 && rename(w->tmp, w->path) != 0) rc = errno;
    if (rc != 0) {
        unlink(w->tmp);
        return ds_fail(err, "%s: cannot write cache file: %s", w->path, strerror(rc));
    }
    return VB_OK;
}

/* ---------------------------------------------------------------------------------------------------------
 * Content hash and the filter tag */

static int ds_hash(vb_dataset *ds, vb_error *err) {
    XXH3_state_t *st = XXH3_createState();
    if (!st) return ds_fail(err, "out of memory");
    static const char domain[] = "vbench-dataset-v1";
    uint32_t metric = (uint32_t)ds->metric;
    uint64_t dims[3] = {ds->dim, ds->n_train, ds->n_test};
    XXH3_128bits_reset(st);
    XXH3_128bits_update(st, domain, sizeof domain);
    XXH3_128bits_update(st, &metric, sizeof metric);
    XXH3_128bits_update(st, dims, sizeof dims);
    XXH3_128bits_update(st, ds->train, ds->n_train * ds->dim * sizeof(float));
    XXH3_128bits_update(st, ds->test, ds->n_test * ds->dim * sizeof(float));
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(st));
    XXH3_freeState(st);
    for (int i = 0; i < 16; i++) snprintf(ds->content_hash + 2 * i, 3, "%02x", c.digest[i]);
    return VB_OK;
}


int32_t vb_dataset_tag(int64_t id) {
    return (int32_t)(vb_mix64((uint64_t)id + 0x9e3779b97f4a7c15ull) % 10000u);
}

int32_t vb_dataset_tag2(int64_t id) {
    return (int32_t)(vb_mix64((uint64_t)id * 0xd6e8feb86659fd93ull + 0x2545f4914f6cdd1dull) % 10000u);
}

/* Label i's share of the rows, in units of 1e-5 (label 0 takes what the others leave: 11200). */
static const uint32_t label_units[VB_LABELS] = {11200, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000};

int32_t vb_dataset_label(int64_t id) {
    uint32_t u = (uint32_t)(vb_mix64((uint64_t)id ^ 0xa0761d6478bd642full) % 100000u), at = 0;
    for (int32_t i = 1; i < VB_LABELS; i++) {
        at += label_units[i];
        if (u < at) return i;
    }
    return 0;
}

double vb_dataset_label_share(int32_t label) {
    return label >= 0 && label < VB_LABELS ? label_units[label] / 100000.0 : 0;
}

int32_t vb_dataset_label_for(double share) {
    for (int32_t i = 0; i < VB_LABELS; i++)
        if (fabs(vb_dataset_label_share(i) - share) < 1e-9) return i;
    return -1;
}

/* ---------------------------------------------------------------------------------------------------------
 * ann-benchmarks HDF5 */

typedef struct h5_array {
    hid_t dset, space, type;
    size_t rows, cols;
} h5_array;

static void h5_array_close(h5_array *a) {
    if (a->type >= 0) H5Tclose(a->type);
    if (a->space >= 0) H5Sclose(a->space);
    if (a->dset >= 0) H5Dclose(a->dset);
    a->dset = a->space = a->type = -1;
}

/* Opens a 2-D numeric array. Returns VB_OK, VB_ERROR with a message naming file, array and shape, or 1 when the
 * array is absent and not required. */
static int h5_array_open(hid_t f, const char *path, const char *name, int required, h5_array *a, vb_error *err) {
    a->dset = a->space = a->type = -1;
    if (H5Lexists(f, name, H5P_DEFAULT) <= 0) {
        if (!required) return 1;
        return ds_fail(err, "%s: array '%s' is missing", path, name);
    }
    a->dset = H5Dopen2(f, name, H5P_DEFAULT);
    if (a->dset < 0)
        return ds_fail(err, "%s: '%s' exists but cannot be opened as an array (HDF5 dataset)", path, name);
    a->space = H5Dget_space(a->dset);
    a->type = H5Dget_type(a->dset);
    int rank = a->space >= 0 ? H5Sget_simple_extent_ndims(a->space) : -1;
    hsize_t dims[H5S_MAX_RANK];
    if (rank < 0 || a->type < 0 || H5Sget_simple_extent_dims(a->space, dims, NULL) < 0) {
        h5_array_close(a);
        return ds_fail(err, "%s: cannot read the shape of array '%s'", path, name);
    }
    char shape[128];
    shape_str(dims, rank, shape, sizeof shape);
    if (rank != 2) {
        h5_array_close(a);
        return ds_fail(err, "%s: array '%s' has %d dimensions (shape %s), expected 2 (rows x dim)", path, name, rank,
                       shape);
    }
    if (dims[0] == 0 || dims[1] == 0) {
        h5_array_close(a);
        return ds_fail(err, "%s: array '%s' is empty (shape %s)", path, name, shape);
    }
    /* An unwritten chunked array may declare any shape in a file of a few KB (found by tests/fuzz/fuzz_hdf5.c). */
    if (dims[1] > VB_DS_MAX_BYTES / 4 || dims[0] > VB_DS_MAX_BYTES / 4 / dims[1]) {
        h5_array_close(a);
        return ds_fail(err, "%s: array '%s' (shape %s) is larger than %llu TiB", path, name, shape,
                        VB_DS_MAX_BYTES >> 40);
    }
    H5T_class_t cls = H5Tget_class(a->type);
    if (cls != H5T_FLOAT && cls != H5T_INTEGER) {
        h5_array_close(a);
        return ds_fail(err, "%s: array '%s' (shape %s) does not hold numbers (HDF5 type class %d)", path, name,
                       shape, (int)cls);
    }
    a->rows = (size_t)dims[0];
    a->cols = (size_t)dims[1];
    return VB_OK;
}

/* cache_fill_fn of an HDF5 array: H5Dread does the decompression and type conversion. */
typedef struct h5_fill_ctx {
    const char *path, *name;
    h5_array *a;
} h5_fill_ctx;

static int h5_fill(void *ctx, const char *file, uint64_t key, vb_error *err) {
    h5_fill_ctx *c = ctx;
    cache_writer w;
    float *data;
    if (cache_begin(&w, file, c->a->rows, c->a->cols, key, &data, err) != VB_OK) return VB_ERROR;
    if (H5Dread(c->a->dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
        cache_abort(&w);
        return ds_fail(err, "%s: reading array '%s' (%zux%zu) failed", c->path, c->name, c->a->rows, c->a->cols);
    }
    return cache_commit(&w, err);
}

/* Maps a float matrix: in place when it is a contiguous little-endian float32 array, else through a cache file
 * filled by H5Dread (h5_fill). */
static int h5_map_matrix(vb_dataset *ds, const char *path, const char *name, h5_array *a, const char *cache_dir,
                         const float **out, vb_error *err) {
    size_t bytes = a->rows * a->cols * sizeof(float);
    hid_t dcpl = H5Dget_create_plist(a->dset);
    H5D_layout_t layout = dcpl >= 0 ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
    if (dcpl >= 0) H5Pclose(dcpl);
    if (layout == H5D_CONTIGUOUS && H5Tequal(a->type, H5T_IEEE_F32LE) > 0) {
        haddr_t off = H5Dget_offset(a->dset);
        struct stat st;
        if (off != HADDR_UNDEF && stat(path, &st) == 0 && (uint64_t)st.st_size >= (uint64_t)off + bytes) {
            const void *p;
            if (map_region(ds, path, (uint64_t)off, bytes, &p, err) != VB_OK) return VB_ERROR;
            *out = p;
            return VB_OK;
        }
    }
    size_t rows, cols;
    h5_fill_ctx c = {path, name, a};
    return cache_load(ds, cache_dir, path, "h5", name, name, a->rows, a->cols, h5_fill, &c, &rows, &cols, out, err);
}

/* Reads a small array (neighbors, distances) into memory owned by ds. */
static int h5_read_small(vb_dataset *ds, const char *path, const char *name, h5_array *a, hid_t memtype,
                         void **out, vb_error *err) {
    void *buf = malloc(a->rows * a->cols * 4);
    if (!buf) return ds_fail(err, "%s: out of memory reading array '%s'", path, name);
    if (H5Dread(a->dset, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        free(buf);
        return ds_fail(err, "%s: reading array '%s' (%zux%zu) failed", path, name, a->rows, a->cols);
    }
    ds_own(ds, buf);
    *out = buf;
    return VB_OK;
}

/* The "distance" attribute, fixed-length or variable-length string (h5py writes the latter), holding one value.
 * H5Aread writes every element of an attribute, so one that holds an array of strings (or none) is refused
 * before reading: it would overflow the one-value buffer (found by tests/fuzz/fuzz_hdf5.c). */
static int h5_read_metric(hid_t f, const char *path, vb_metric *metric, vb_error *err) {
    if (H5Aexists(f, "distance") <= 0)
        return ds_fail(err, "%s: attribute 'distance' is missing (expected angular, euclidean or dot)", path);
    char value[256] = "";
    int rc = VB_ERROR;
    hid_t a = H5Aopen(f, "distance", H5P_DEFAULT);
    hid_t t = a >= 0 ? H5Aget_type(a) : -1;
    hid_t sp = a >= 0 ? H5Aget_space(a) : -1;
    hssize_t values = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    if (sp >= 0) H5Sclose(sp);
    if (values != 1) {
        if (t >= 0) H5Tclose(t);
        if (a >= 0) H5Aclose(a);
        return ds_fail(err, "%s: attribute 'distance' holds %lld values, expected one string (angular, euclidean "
                            "or dot)", path, (long long)values);
    }
    if (t >= 0 && H5Tget_class(t) == H5T_STRING) {
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_cset(mt, H5Tget_cset(t));
        if (H5Tis_variable_str(t) > 0) {
            char *s = NULL;
            H5Tset_size(mt, H5T_VARIABLE);
            if (H5Aread(a, mt, &s) >= 0 && s) {
                snprintf(value, sizeof value, "%s", s);
                H5free_memory(s);
                rc = VB_OK;
            }
        } else {
            size_t n = H5Tget_size(t);
            char *s = calloc(1, n + 1);
            H5Tset_size(mt, n);
            if (s && H5Aread(a, mt, s) >= 0) {
                snprintf(value, sizeof value, "%s", s);
                rc = VB_OK;
            }
            free(s);
        }
        H5Tclose(mt);
    }
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    if (rc != VB_OK) return ds_fail(err, "%s: attribute 'distance' is not a readable string", path);
    if (vb_metric_parse(value, metric) != 0)
        return ds_fail(err, "%s: attribute 'distance' is '%s', which vbench does not support (angular, euclidean, dot)",
                       path, value);
    return VB_OK;
}

int vb_dataset_metric_of(const vb_kv *kv, size_t n, vb_metric *out, vb_error *err) {
    const char *metric = vb_kv_get(kv, n, "metric", NULL), *path = vb_kv_get(kv, n, "path", NULL);
    const char *source = vb_kv_get(kv, n, "source", "");
    if (metric && metric[0]) {
        if (vb_metric_parse(metric, out) != 0)
            return ds_fail(err, "metric '%s' is not one vbench knows (angular, euclidean, dot)", metric);
        return VB_OK;
    }
    size_t pl = path ? strlen(path) : 0;
    int hdf5 = strcmp(source, "hdf5") == 0 || (pl > 5 && strcmp(path + pl - 5, ".hdf5") == 0) ||
               (pl > 3 && strcmp(path + pl - 3, ".h5") == 0);
    if (!path || !hdf5) return VB_RETRY;
    H5E_auto2_t fn;
    void *data;
    H5Eget_auto2(H5E_DEFAULT, &fn, &data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    int rc = f >= 0 ? h5_read_metric(f, path, out, err) : VB_RETRY;
    if (f >= 0) H5Fclose(f);
    H5Eclear2(H5E_DEFAULT);   /* a failed call's error stack (vb_dataset_hdf5_why) */
    H5Eset_auto2(H5E_DEFAULT, fn, data);
    return rc;
}

static int hdf5_load(vb_dataset *ds, hid_t f, const char *path, const char *cache_dir, vb_error *err) {
    if (h5_read_metric(f, path, &ds->metric, err) != VB_OK) return VB_ERROR;
    h5_array train, test, nb, di;
    if (h5_array_open(f, path, "train", 1, &train, err) != VB_OK) return VB_ERROR;
    if (h5_array_open(f, path, "test", 1, &test, err) != VB_OK) {
        h5_array_close(&train);
        return VB_ERROR;
    }
    int rc = VB_ERROR;
    nb.dset = nb.space = nb.type = di.dset = di.space = di.type = -1;
    if (test.cols != train.cols) {
        ds_fail(err, "%s: array 'test' has shape %zux%zu but 'train' has %zu columns (shape %zux%zu)", path,
                test.rows, test.cols, train.cols, train.rows, train.cols);
        goto out;
    }
    ds->dim = train.cols;
    ds->n_train = train.rows;
    ds->n_test = test.rows;
    if (h5_map_matrix(ds, path, "train", &train, cache_dir, &ds->train, err) != VB_OK) goto out;
    if (h5_map_matrix(ds, path, "test", &test, cache_dir, &ds->test, err) != VB_OK) goto out;

    int r = h5_array_open(f, path, "neighbors", 0, &nb, err);
    if (r == VB_ERROR) goto out;
    if (r == VB_OK) {
        if (nb.rows != test.rows) {
            ds_fail(err, "%s: array 'neighbors' has shape %zux%zu but 'test' has %zu rows", path, nb.rows, nb.cols,
                    test.rows);
            goto out;
        }
        void *p;
        if (h5_read_small(ds, path, "neighbors", &nb, H5T_NATIVE_INT32, &p, err) != VB_OK) goto out;
        ds->neighbors = p;
        ds->gt_k = nb.cols;
        r = h5_array_open(f, path, "distances", 0, &di, err);
        if (r == VB_ERROR) goto out;
        if (r == VB_OK) {
            if (di.rows != nb.rows || di.cols != nb.cols) {
                ds_fail(err, "%s: array 'distances' has shape %zux%zu but 'neighbors' has shape %zux%zu", path,
                        di.rows, di.cols, nb.rows, nb.cols);
                goto out;
            }
            if (h5_read_small(ds, path, "distances", &di, H5T_NATIVE_FLOAT, &p, err) != VB_OK) goto out;
            ds->distances = p;
        }
    }
    rc = VB_OK;
out:
    h5_array_close(&train);
    h5_array_close(&test);
    h5_array_close(&nb);
    h5_array_close(&di);
    return rc;
}

/* The end-of-file address an HDF5 superblock declares (plus its base address: the bytes the file must have), from
 * the superblock itself, found at 0, 512, 1024, ... as HDF5 looks for it. Versions 0 and 1: flags and B-tree K values,
 * then base, free-space, end-of-file addresses; versions 2 and 3: base, extension, end-of-file addresses. 0; 1 when
 * the file ends inside the superblock (*need: the bytes it would take); -1 when there is no superblock to read. */
static int h5_superblock_eof(int fd, uint64_t size, unsigned *version, uint64_t *need) {
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    for (uint64_t at = 0; at + 8 <= size && at <= (1ull << 30); at = at ? at * 2 : 512) {
        unsigned char b[96];
        ssize_t got = pread(fd, b, sizeof b, (off_t)at);
        if (got < 8 || memcmp(b, sig, 8) != 0) continue;
        unsigned v = got > 8 ? b[8] : 0, osz = got > 13 ? (v <= 1 ? b[13] : b[9]) : 8;
        size_t base_at = v == 0 ? 24 : v == 1 ? 28 : 12;
        if (v > 3 || (osz != 2 && osz != 4 && osz != 8)) return -1;
        if (base_at + 3 * (size_t)osz > (size_t)got) {   /* the file ends inside its superblock */
            *version = v;
            *need = at + base_at + 3 * (uint64_t)osz;
            return 1;
        }
        uint64_t base = 0, eof = 0;
        for (unsigned i = 0; i < osz; i++) {   /* little-endian addresses */
            base |= (uint64_t)b[base_at + i] << (8 * i);
            eof |= (uint64_t)b[base_at + 2 * osz + i] << (8 * i);
        }
        *version = v;
        *need = base + eof;
        return 0;
    }
    return -1;
}

/* HDF5's innermost error description (the deepest frame of the error stack), for a message. */
static herr_t h5_deepest(unsigned n, const H5E_error2_t *e, void *data) {
    (void)n;
    if (e->desc && *e->desc && !*(char *)data) snprintf(data, 256, "%s", e->desc);   /* upward: the innermost first */
    return 0;
}

void vb_dataset_hdf5_why(const char *path, char *buf, size_t len) {
    char deep[256] = "";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, h5_deepest, deep);
    /* a failed call leaves its error stack behind: in a thread other than the first, the library then cannot close
     * at exit ("HDF5: infinite loop closing library"), so every error path clears it */
    H5Eclear2(H5E_DEFAULT);
    struct stat st;
    unsigned v;
    uint64_t need;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    int known = fd >= 0 && fstat(fd, &st) == 0 ? h5_superblock_eof(fd, (uint64_t)st.st_size, &v, &need) : -1;
    if (fd >= 0) close(fd);
    if (known == 1)
        snprintf(buf, len, "truncated: the file has %lld bytes and ends inside its superblock (version %u, at least "
                 "%llu bytes): an interrupted download or copy? fetch or copy it again", (long long)st.st_size, v,
                 (unsigned long long)need);
    else if (known == 0 && (uint64_t)st.st_size < need)
        snprintf(buf, len, "truncated: the file has %lld bytes, its superblock (version %u) says it ends at byte %llu "
                 "(%llu bytes missing): an interrupted download or copy? fetch or copy it again", (long long)st.st_size,
                 v, (unsigned long long)need, (unsigned long long)(need - (uint64_t)st.st_size));
    else if (deep[0])
        snprintf(buf, len, "HDF5 says: %s", deep);
    else
        snprintf(buf, len, "HDF5 gives no reason");
}

/* The Debian libhdf5 is the serial build, which is not thread-safe: one HDF5 open at a time per process. */
static pthread_mutex_t h5_lock = PTHREAD_MUTEX_INITIALIZER;

static int hdf5_open_locked(const char *path, const char *cache_dir, vb_dataset **out, vb_error *err);

int vb_dataset_open_hdf5(const char *path, const char *cache_dir, vb_dataset **out, vb_error *err) {
    *out = NULL;
    pthread_mutex_lock(&h5_lock);
    int rc = hdf5_open_locked(path, cache_dir, out, err);
    pthread_mutex_unlock(&h5_lock);
    if (rc == VB_OK && ds_hash(*out, err) != VB_OK) {
        vb_dataset_close(out);
        return VB_ERROR;
    }
    return rc;
}

static int hdf5_open_locked(const char *path, const char *cache_dir, vb_dataset **out, vb_error *err) {
    struct stat st;
    /* stat before H5Fopen: HDF5 opens without O_NONBLOCK, and a FIFO would hold it forever */
    if (stat(path, &st) != 0) return ds_fail(err, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return ds_fail(err, "%s is %s: a dataset file must be a regular file", path, file_kind(st.st_mode));
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* errors are reported through vb_error, not printed by HDF5 */
    if (H5Fis_hdf5(path) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return ds_fail(err, "%s: not an HDF5 file", path);
    }
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        char why[512];
        vb_dataset_hdf5_why(path, why, sizeof why);
        return ds_fail(err, "%s: cannot open as HDF5: %s", path, why);
    }
    vb_dataset *ds = ds_new_file(path);
    if (!ds) {
        H5Fclose(f);
        return ds_fail(err, "out of memory");
    }
    int rc = hdf5_load(ds, f, path, cache_dir, err);
    H5Fclose(f);
    H5Eclear2(H5E_DEFAULT);   /* what a failed call inside left on the error stack (vb_dataset_hdf5_why) */
    if (rc != VB_OK) {
        vb_dataset_close(&ds);
        return VB_ERROR;
    }
    *out = ds;
    return VB_OK;
}

/* ---------------------------------------------------------------------------------------------------------
 * Synthetic generator.
 *
 * Bit-for-bit reproducibility: every random number comes from xoshiro256** seeded per row by splitmix64 of
 * (seed, stream, row), so the result does not depend on the number of threads; Gaussians come from Marsaglia's
 * polar method with a logarithm computed here from +, -, *, / only (libm's log may differ between versions),
 * and the generator functions are compiled without floating-point contraction so no FMA changes a rounding. */

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#define VB_STRICT_FP
#else
#define VB_STRICT_FP __attribute__((optimize("fp-contract=off")))
#endif

enum { STREAM_TRAIN = 1, STREAM_TEST = 2, STREAM_CENTRE = 3, STREAM_MEAN = 4 };

typedef struct rng {
    uint64_t s[4];
    double spare;
    int has_spare;
} rng;

static void rng_seed(rng *r, uint64_t seed, uint64_t stream, uint64_t index) {
    uint64_t x = vb_mix64(seed ^ vb_mix64(stream * 0x9e3779b97f4a7c15ull ^ vb_mix64(index + 0x632be59bd9b4e019ull)));
    for (int i = 0; i < 4; i++) {
        x += 0x9e3779b97f4a7c15ull;
        r->s[i] = vb_mix64(x);
    }
    r->has_spare = 0;
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t rng_next(rng *r) {
    uint64_t *s = r->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform in [0, 1), 53 random bits. */
static inline double rng_uniform(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Natural logarithm of x > 0 from frexp (exact) and the atanh series on [sqrt(1/2), sqrt(2)). */
VB_STRICT_FP static double det_log(double x) {
    int e;
    double m = frexp(x, &e);
    if (m < 0.70710678118654752440) {
        m *= 2.0;
        e -= 1;
    }
    /* ln m = 2 atanh(t) = 2 (t + t^3/3 + t^5/5 + ...) with |t| <= 0.172: 12 terms leave an error below 1e-19,
     * evaluated as two interleaved Horner chains in t^4 (Estrin) to halve the dependency chain */
    static const double c[12] = {1.0 / 1,  1.0 / 3,  1.0 / 5,  1.0 / 7,  1.0 / 9,  1.0 / 11,
                                 1.0 / 13, 1.0 / 15, 1.0 / 17, 1.0 / 19, 1.0 / 21, 1.0 / 23};
    double t = (m - 1.0) / (m + 1.0), t2 = t * t, t4 = t2 * t2;
    double even = c[10], odd = c[11];
    for (int i = 8; i >= 0; i -= 2) {
        even = even * t4 + c[i];
        odd = odd * t4 + c[i + 1];
    }
    double sum = even + t2 * odd;
    return 2.0 * t * sum + (double)e * 0.69314718055994530942;
}

VB_STRICT_FP static double rng_gauss(rng *r) {
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u, v, s;
    do {
        u = 2.0 * rng_uniform(r) - 1.0;
        v = 2.0 * rng_uniform(r) - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    double f = sqrt(-2.0 * det_log(s) / s);
    r->spare = v * f;
    r->has_spare = 1;
    return u * f;
}

typedef struct synth_model {
    const vb_synth_params *p;
    size_t clusters;
    double *centre, *spread; /* clusters x dim */
    double *cum;             /* cumulative cluster weights, power law 1 / (c + 1) */
} synth_model;

/* Centres around a shared non-zero mean (real embeddings are not centred), a decaying per-dimension scale (as in
 * the spectrum of real embeddings), and per-cluster, per-dimension spreads. */
VB_STRICT_FP static int synth_model_init(synth_model *m, const vb_synth_params *p, size_t clusters) {
    size_t dim = p->dim;
    m->p = p;
    m->clusters = clusters;
    m->centre = malloc(clusters * dim * sizeof(double));
    m->spread = malloc(clusters * dim * sizeof(double));
    m->cum = malloc(clusters * sizeof(double));
    double *scale = malloc(dim * sizeof(double)), *mean = malloc(dim * sizeof(double));
    if (!m->centre || !m->spread || !m->cum || !scale || !mean) {
        free(scale);
        free(mean);
        return VB_ERROR;
    }
    rng r;
    rng_seed(&r, p->seed, STREAM_MEAN, 0);
    for (size_t d = 0; d < dim; d++) {
        scale[d] = 1.0 / sqrt(1.0 + 4.0 * (double)d / (double)dim);
        mean[d] = 0.5 * rng_gauss(&r) * scale[d];
    }
    double total = 0.0;
    for (size_t c = 0; c < clusters; c++) {
        rng_seed(&r, p->seed, STREAM_CENTRE, c);
        double s_c = 0.3 + 0.5 * rng_uniform(&r);
        for (size_t d = 0; d < dim; d++) {
            m->centre[c * dim + d] = mean[d] + rng_gauss(&r) * scale[d];
            m->spread[c * dim + d] = s_c * (0.5 + rng_uniform(&r)) * scale[d];
        }
        total += 1.0 / (double)(c + 1);
        m->cum[c] = total;
    }
    free(scale);
    free(mean);
    return VB_OK;
}

static void synth_model_free(synth_model *m) {
    free(m->centre);
    free(m->spread);
    free(m->cum);
}

/* The cluster a row is drawn from: the first draw of its stream, against the cumulative weights. The row's class
 * (vb_dataset train_class / test_class) is this cluster, found again by synth_classes without the vectors. */
VB_STRICT_FP static size_t synth_cluster(const double *cum, size_t clusters, rng *r) {
    double u = rng_uniform(r) * cum[clusters - 1];
    size_t lo = 0, hi = clusters - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cum[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

VB_STRICT_FP static void synth_row(const synth_model *m, uint64_t stream, size_t row, float *out, double *tmp) {
    size_t dim = m->p->dim;
    rng r;
    rng_seed(&r, m->p->seed, stream, row);
    size_t lo = synth_cluster(m->cum, m->clusters, &r);
    const double *cen = m->centre + lo * dim, *spr = m->spread + lo * dim;
    double norm2 = 0.0;
    for (size_t d = 0; d < dim; d++) {
        tmp[d] = cen[d] + spr[d] * rng_gauss(&r);
        norm2 += tmp[d] * tmp[d];
    }
    double inv = 1.0;
    if (m->p->metric == VB_METRIC_ANGULAR && norm2 > 0.0) inv = 1.0 / sqrt(norm2);
    for (size_t d = 0; d < dim; d++) out[d] = (float)(tmp[d] * inv);
}

typedef struct synth_job {
    const synth_model *m;
    uint64_t stream;
    float *out;
    size_t begin, end;
} synth_job;

static void *synth_worker(void *arg) {
    synth_job *j = arg;
    size_t dim = j->m->p->dim;
    double *tmp = malloc(dim * sizeof(double));
    if (!tmp) return (void *)1;
    for (size_t i = j->begin; i < j->end; i++) synth_row(j->m, j->stream, i, j->out + i * dim, tmp);
    free(tmp);
    return NULL;
}

/* Fills rows [0, n) of a stream, split over threads; the bytes do not depend on the split. */
static int synth_fill(const synth_model *m, uint64_t stream, float *out, size_t n) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t nt = cores > 0 ? (size_t)cores : 1;
    if (nt > 64) nt = 64;
    if (nt > n / 1024 + 1) nt = n / 1024 + 1;
    pthread_t th[64];
    synth_job jobs[64];
    size_t started = 0;
    int failed = 0;
    for (size_t t = 0; t < nt; t++) {
        jobs[t] = (synth_job){m, stream, out, n * t / nt, n * (t + 1) / nt};
        if (t + 1 < nt && pthread_create(&th[t], NULL, synth_worker, &jobs[t]) == 0)
            started++;
        else if (synth_worker(&jobs[t]) != NULL)
            failed = 1;
    }
    for (size_t t = 0; t < started; t++) {
        void *res;
        pthread_join(th[t], &res);
        if (res) failed = 1;
    }
    return failed ? VB_ERROR : VB_OK;
}

static size_t synth_clusters(const vb_synth_params *p) {
    if (p->clusters) return p->clusters;
    size_t c = (size_t)sqrt((double)p->rows);
    return c < 1 ? 1 : c > 1024 ? 1024 : c;
}

static int synth_generate(const vb_synth_params *p, size_t clusters, const char *train_path,
                          const char *test_path, uint64_t key, vb_error *err) {
    synth_model m = {0};
    if (synth_model_init(&m, p, clusters) != VB_OK) {
        synth_model_free(&m);
        return ds_fail(err, "synthetic: out of memory for %zu clusters x %zu dims", clusters, p->dim);
    }
    cache_writer wt, wq;
    float *train, *test;
    int rc = VB_ERROR;
    if (cache_begin(&wt, train_path, p->rows, p->dim, key, &train, err) != VB_OK) goto out;
    if (cache_begin(&wq, test_path, p->queries, p->dim, key, &test, err) != VB_OK) {
        cache_abort(&wt);
        goto out;
    }
    if (synth_fill(&m, STREAM_TRAIN, train, p->rows) != VB_OK ||
        synth_fill(&m, STREAM_TEST, test, p->queries) != VB_OK) {
        cache_abort(&wt);
        cache_abort(&wq);
        ds_fail(err, "synthetic: out of memory while generating");
        goto out;
    }
    if (cache_commit(&wt, err) != VB_OK) {
        cache_abort(&wq);
        goto out;
    }
    rc = cache_commit(&wq, err);
out:
    synth_model_free(&m);
    return rc;
}

/* The class of every row and query: the cluster each was drawn from (the first draw of its stream, as synth_row
 * takes it), so a class filter over a synthetic corpus selects whole clusters as a real label selects a category.
 * Cheap beside the vectors (one draw per row), so it is recomputed at every open instead of cached. */
VB_STRICT_FP static int synth_classes(vb_dataset *ds, const vb_synth_params *p, size_t clusters, vb_error *err) {
    if (clusters > INT32_MAX) return ds_fail(err, "synthetic '%s': %zu clusters are too many classes", ds->name, clusters);
    double *cum = malloc(clusters * sizeof(double));
    int32_t *train = malloc(p->rows * sizeof(int32_t)), *test = malloc(p->queries * sizeof(int32_t));
    if (!cum || !train || !test || ds->priv->n_owned + 2 > VB_DS_MAX_REGIONS) {
        free(cum), free(train), free(test);
        return ds_fail(err, "synthetic '%s': out of memory for the class columns", ds->name);
    }
    double total = 0.0;   /* the weights synth_model_init gives the clusters */
    for (size_t c = 0; c < clusters; c++) cum[c] = total += 1.0 / (double)(c + 1);
    rng r;
    for (size_t i = 0; i < p->rows; i++) {
        rng_seed(&r, p->seed, STREAM_TRAIN, i);
        train[i] = (int32_t)synth_cluster(cum, clusters, &r);
    }
    for (size_t i = 0; i < p->queries; i++) {
        rng_seed(&r, p->seed, STREAM_TEST, i);
        test[i] = (int32_t)synth_cluster(cum, clusters, &r);
    }
    free(cum);
    ds_own(ds, train);
    ds_own(ds, test);
    ds->train_class = train;
    ds->test_class = test;
    ds->n_classes = (int)clusters;
    return VB_OK;
}

int vb_dataset_open_synthetic(const char *name, const vb_synth_params *p, const char *cache_dir, vb_dataset **out,
                              vb_error *err) {
    *out = NULL;
    if (p->rows == 0 || p->queries == 0 || p->dim == 0)
        return ds_fail(err, "synthetic '%s': rows (%zu), queries (%zu) and dim (%zu) must be positive",
                       name ? name : "", p->rows, p->queries, p->dim);
    if (p->metric != VB_METRIC_ANGULAR && p->metric != VB_METRIC_EUCLIDEAN && p->metric != VB_METRIC_DOT)
        return ds_fail(err, "synthetic '%s': unknown metric %d", name ? name : "", (int)p->metric);
    if (p->dim > (1u << 20) || p->rows > ((size_t)1 << 40) / p->dim || p->queries > ((size_t)1 << 40) / p->dim)
        return ds_fail(err, "synthetic '%s': %zu x %zu is too large", name ? name : "", p->rows, p->dim);
    size_t clusters = synth_clusters(p);
    char desc[256], dir[PATH_MAX], train_path[PATH_MAX + 64], test_path[PATH_MAX + 64];
    int n = snprintf(desc, sizeof desc,
                     "vbench-synthetic-v1|rows=%zu|queries=%zu|dim=%zu|clusters=%zu|metric=%s|seed=%llu", p->rows,
                     p->queries, p->dim, clusters, vb_metric_name(p->metric), (unsigned long long)p->seed);
    uint64_t key = XXH3_64bits(desc, (size_t)n);
    if (vb_dataset_cache_dir(cache_dir, dir, sizeof dir, err) != VB_OK) return VB_ERROR;
    snprintf(train_path, sizeof train_path, "%s/synth-%016llx-train.f32", dir, (unsigned long long)key);
    snprintf(test_path, sizeof test_path, "%s/synth-%016llx-test.f32", dir, (unsigned long long)key);

    vb_dataset *ds = ds_new();
    if (!ds) return ds_fail(err, "out of memory");
    snprintf(ds->name, sizeof ds->name, "%s", name && *name ? name : "synthetic");
    snprintf(ds->source, sizeof ds->source, "synthetic");
    ds->metric = p->metric;
    ds->dim = p->dim;
    for (int attempt = 0; attempt < 2; attempt++) {
        size_t r1, c1, r2, c2;
        int a = cache_try_map(ds, train_path, key, p->dim, &r1, &c1, &ds->train, err);
        int b = a == 1 ? cache_try_map(ds, test_path, key, p->dim, &r2, &c2, &ds->test, err) : 0;
        if (a < 0 || b < 0) goto fail;
        if (a == 1 && b == 1 && r1 == p->rows && r2 == p->queries) {
            ds->n_train = r1;
            ds->n_test = r2;
            if (ds_hash(ds, err) != VB_OK || synth_classes(ds, p, clusters, err) != VB_OK) goto fail;
            *out = ds;
            return VB_OK;
        }
        for (int i = 0; i < ds->priv->n_map; i++) munmap(ds->priv->map[i].addr, ds->priv->map[i].len);
        ds->priv->n_map = 0;
        if (attempt == 0 && synth_generate(p, clusters, train_path, test_path, key, err) != VB_OK) goto fail;
    }
    ds_fail(err, "synthetic '%s': cache files in %s are unusable after generation", ds->name, dir);
fail:
    vb_dataset_close(&ds);
    return VB_ERROR;
}

/* ---------------------------------------------------------------------------------------------------------
 * TEXMEX .fvecs / .bvecs and big-ann .fbin / .u8bin
 *
 * Every size is checked against the file's length before anything is read or mapped: a header or a dimension
 * word can claim anything. The float32 .fbin is mapped in place; the others are converted once into a float32
 * cache file (cache_begin / cache_try_map, keyed like every converted file by file_key), then mapped. */

typedef struct vec_format {
    const char *ext;  /* ".fvecs" */
    const char *name; /* "fvecs": the cache file's prefix and part of its key */
    int texmex;       /* 1: each vector is int32 dimension + the vector; 0: uint32 rows, uint32 dim header */
    size_t elem;      /* bytes per element: 4 (float32) or 1 (uint8) */
} vec_format;

static const vec_format vec_formats[] = {
    {".fvecs", "fvecs", 1, 4},
    {".bvecs", "bvecs", 1, 1},
    {".fbin", "fbin", 0, 4},
    {".u8bin", "u8bin", 0, 1},
};

static const vec_format *vec_format_of(const char *path) {
    for (size_t i = 0; i < sizeof vec_formats / sizeof vec_formats[0]; i++)
        if (has_suffix(path, vec_formats[i].ext)) return &vec_formats[i];
    return NULL;
}

static const char *elem_name(size_t elem) { return elem == 1 ? "uint8" : "float32"; }

/* At most this many vectors are walked to find the one that breaks a TEXMEX file whose length is not a whole
 * number of vectors (one pread each); past it the error gives the sizes only. */
#define TEXMEX_WALK_MAX ((uint64_t)1 << 20)

/* A TEXMEX file (fvecs, bvecs, ivecs) whose length is not a multiple of row 0's record: finds the first record
 * whose dimension word differs or that runs past the end of the file, and says which. */
static int texmex_bad_length(const char *path, int fd, const char *ext, size_t elem, int32_t d0, uint64_t size,
                             vb_error *err) {
    uint64_t rec = 4 + elem * (uint64_t)d0, off = 0;
    for (uint64_t i = 0; i < TEXMEX_WALK_MAX && off < size; i++, off += rec) {
        int32_t d;
        if (size - off < 4 || pread(fd, &d, 4, (off_t)off) != 4)
            return ds_fail(err, "%s: vector %llu (byte offset %llu) is cut short: %llu bytes left, a vector of "
                                "dimension %d takes %llu (truncated file?)",
                           path, (unsigned long long)i, (unsigned long long)off, (unsigned long long)(size - off),
                           d0, (unsigned long long)rec);
        if (d != d0)
            return ds_fail(err, "%s: vector %llu (byte offset %llu) has dimension %d, expected %d (from vector 0)",
                           path, (unsigned long long)i, (unsigned long long)off, d, d0);
        if (size - off < rec)
            return ds_fail(err, "%s: vector %llu (byte offset %llu) is cut short: %llu bytes left, a vector of "
                                "dimension %d takes %llu (truncated file?)",
                           path, (unsigned long long)i, (unsigned long long)off, (unsigned long long)(size - off),
                           d0, (unsigned long long)rec);
    }
    return ds_fail(err, "%s: size %llu is not a multiple of the %s record size %llu (dimension %d from vector 0)",
                   path, (unsigned long long)size, ext, (unsigned long long)rec, d0);
}

/* The shape of a TEXMEX file (fvecs, bvecs, ivecs) from row 0's dimension word and the file's length. max_dim
 * bounds the dimension word; the per-row words are checked when the rows are read. */
static int texmex_shape(const char *path, const char *ext, size_t elem, int64_t max_dim, size_t *rows,
                        size_t *dim, vb_error *err) {
    int fd = vb_dataset_open_file(path, err);
    if (fd < 0) return VB_ERROR;
    struct stat st;
    int32_t d = 0;
    int rc = VB_OK;
    if (fstat(fd, &st) != 0) {
        rc = ds_fail(err, "%s: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        rc = ds_fail(err, "%s: not a regular file", path);
    } else if (pread(fd, &d, 4, 0) != 4) {
        rc = ds_fail(err, "%s: too short for a %s vector (%lld bytes)", path, ext, (long long)st.st_size);
    } else if (d <= 0 || d > max_dim) {
        rc = ds_fail(err, "%s: vector 0 (byte offset 0) has dimension %d, expected 1..%lld", path, d,
                     (long long)max_dim);
    } else if ((uint64_t)st.st_size % (4 + elem * (uint64_t)d) != 0) {
        rc = texmex_bad_length(path, fd, ext, elem, d, (uint64_t)st.st_size, err);
    } else {
        uint64_t n = (uint64_t)st.st_size / (4 + elem * (uint64_t)d);
        /* the float32 copy is up to 4x the file (bvecs): bounded like every matrix */
        if (n > VB_DS_MAX_BYTES / 4 / (uint64_t)d) {
            rc = ds_fail(err, "%s: %llu vectors of dimension %d are more than %llu TiB as float32", path,
                         (unsigned long long)n, d, VB_DS_MAX_BYTES >> 40);
        } else {
            *rows = (size_t)n;
            *dim = (size_t)d;
        }
    }
    close(fd);
    return rc;
}

/* The shape of a big-ann file (fbin, u8bin, ibin) from its 8-byte header: uint32 rows, uint32 cols. The file
 * must hold exactly 8 + rows x cols x elem bytes, or (when alt_elem is non-zero, .ibin with distances) exactly
 * 8 + rows x cols x alt_elem; *which says which (0 or 1). what names the elements in messages. */
static int bigann_shape(const char *path, const char *ext, const char *what, size_t elem, size_t alt_elem,
                        uint64_t max_cols, size_t *rows, size_t *cols, int *which, vb_error *err) {
    int fd = vb_dataset_open_file(path, err);
    if (fd < 0) return VB_ERROR;
    struct stat st;
    uint32_t h[2] = {0, 0};
    int okst = fstat(fd, &st) == 0;
    int e = errno;
    ssize_t got = okst && S_ISREG(st.st_mode) ? pread(fd, h, sizeof h, 0) : -1;
    close(fd);
    if (!okst) return ds_fail(err, "%s: %s", path, strerror(e));
    if (!S_ISREG(st.st_mode)) return ds_fail(err, "%s: not a regular file", path);
    if (got != (ssize_t)sizeof h)
        return ds_fail(err, "%s: too short for a %s header (%lld bytes, the header is 8)", path, ext,
                       (long long)st.st_size);
    if (h[0] == 0 || h[1] == 0)
        return ds_fail(err, "%s: header says %u x %u %s: empty", path, h[0], h[1], what);
    if (h[1] > max_cols)
        return ds_fail(err, "%s: header says %u x %u %s: %u columns, at most %llu", path, h[0], h[1], what, h[1],
                       (unsigned long long)max_cols);
    /* rows x cols x 4 of two 32-bit numbers can wrap around 2^64: 2^31 x 2^31 passed as an 8-byte file */
    uint64_t elems = (uint64_t)h[0] * h[1];
    size_t biggest = alt_elem > elem ? alt_elem : elem;
    if (elems > VB_DS_MAX_BYTES / 4 || elems > VB_DS_MAX_BYTES / biggest)
        return ds_fail(err, "%s: header says %u x %u %s, more than %llu TiB", path, h[0], h[1], what,
                       VB_DS_MAX_BYTES >> 40);
    uint64_t want = 8 + elems * elem, alt = alt_elem ? 8 + elems * alt_elem : 0;
    if ((uint64_t)st.st_size == want) {
        *which = 0;
    } else if (alt_elem && (uint64_t)st.st_size == alt) {
        *which = 1;
    } else if (alt_elem) {
        return ds_fail(err, "%s: header says %u x %u (%llu bytes with ids only, %llu with ids and distances) but "
                            "the file has %lld bytes",
                       path, h[0], h[1], (unsigned long long)want, (unsigned long long)alt, (long long)st.st_size);
    } else {
        return ds_fail(err, "%s: header says %u x %u %s (%llu bytes) but the file has %lld bytes", path, h[0], h[1],
                       what, (unsigned long long)want, (long long)st.st_size);
    }
    *rows = h[0];
    *cols = h[1];
    return VB_OK;
}

/* Converts a vector file whose shape was checked into the cache file `file` as float32. TEXMEX dimension words
 * are checked again row by row (a file may have the right length with one vector longer and another shorter),
 * and a short read (the file shrank since its shape was read) is an error naming the vector. */
static int vec_convert(const vec_format *f, const char *path, const char *file, uint64_t key, size_t rows,
                       size_t dim, vb_error *err) {
    FILE *fp = fopen_regular(path, err);
    if (!fp) return VB_ERROR;
    cache_writer w;
    float *data;
    uint8_t *buf = NULL;
    size_t chunk_rows = f->texmex ? 1 : ((size_t)1 << 20) / dim + 1;
    if (f->elem == 1 && !(buf = malloc(chunk_rows * dim))) {
        fclose(fp);
        return ds_fail(err, "%s: out of memory", path);
    }
    if (cache_begin(&w, file, rows, dim, key, &data, err) != VB_OK) {
        free(buf);
        fclose(fp);
        return VB_ERROR;
    }
    uint64_t rec = f->texmex ? 4 + f->elem * (uint64_t)dim : f->elem * (uint64_t)dim;
    uint64_t base = f->texmex ? 0 : 8;
    int rc = VB_OK;
    if (!f->texmex && fseeko(fp, 8, SEEK_SET) != 0) rc = ds_fail(err, "%s: cannot seek: %s", path, strerror(errno));
    for (size_t i = 0; i < rows && rc == VB_OK; i += chunk_rows) {
        size_t nr = rows - i < chunk_rows ? rows - i : chunk_rows;
        unsigned long long off = (unsigned long long)(base + i * rec);
        if (f->texmex) {
            int32_t d;
            if (fread(&d, 4, 1, fp) != 1) {
                rc = ds_fail(err, "%s: vector %zu (byte offset %llu): short read", path, i, off);
                break;
            }
            if ((size_t)d != dim || d <= 0) {
                rc = ds_fail(err, "%s: vector %zu (byte offset %llu) has dimension %d, expected %zu (from vector 0)",
                             path, i, off, d, dim);
                break;
            }
        }
        float *out = data + i * dim;
        size_t n = nr * dim;
        if (f->elem == 4) {
            if (fread(out, 4, n, fp) != n)
                rc = ds_fail(err, "%s: vector %zu (byte offset %llu): short read", path, i, off);
        } else if (fread(buf, 1, n, fp) != n) {
            rc = ds_fail(err, "%s: vector %zu (byte offset %llu): short read", path, i, off);
        } else {
            for (size_t j = 0; j < n; j++) out[j] = (float)buf[j];
        }
    }
    free(buf);
    fclose(fp);
    if (rc != VB_OK) {
        cache_abort(&w);
        return VB_ERROR;
    }
    return cache_commit(&w, err);
}

/* cache_fill_fn of a vector file: vec_convert. */
typedef struct vec_fill_ctx {
    const vec_format *f;
    const char *path;
    size_t rows, dim;
} vec_fill_ctx;

static int vec_fill(void *ctx, const char *file, uint64_t key, vb_error *err) {
    const vec_fill_ctx *c = ctx;
    return vec_convert(c->f, c->path, file, key, c->rows, c->dim, err);
}

static int vec_load(vb_dataset *ds, const char *path, const char *cache_dir, size_t *rows, size_t *cols,
                    const float **data, vb_error *err) {
    const vec_format *f = vec_format_of(path);
    if (!f) return ds_fail(err, "%s: unknown vector file format (expected .fvecs, .bvecs, .fbin or .u8bin)", path);
    size_t n, dim;
    int which;
    if (f->texmex ? texmex_shape(path, f->ext, f->elem, VB_DATASET_MAX_DIM, &n, &dim, err)
                  : bigann_shape(path, f->ext, elem_name(f->elem), f->elem, 0, VB_DATASET_MAX_DIM, &n, &dim, &which,
                                 err))
        return VB_ERROR;
    if (!f->texmex && f->elem == 4) { /* .fbin: float32 rows as they lie */
        const void *p;
        if (map_region(ds, path, 8, n * dim * 4, &p, err) != VB_OK) return VB_ERROR;
        *rows = n;
        *cols = dim;
        *data = p;
        return VB_OK;
    }
    vec_fill_ctx c = {f, path, n, dim};
    return cache_load(ds, cache_dir, path, f->name, NULL, f->name, n, dim, vec_fill, &c, rows, cols, data, err);
}

int vb_dataset_open_vecs(const char *base_path, const char *query_path, vb_metric metric, const char *cache_dir,
                         vb_dataset **out, vb_error *err) {
    *out = NULL;
    if (metric != VB_METRIC_ANGULAR && metric != VB_METRIC_EUCLIDEAN && metric != VB_METRIC_DOT)
        return ds_fail(err, "%s: unknown metric %d", base_path, (int)metric);
    vb_dataset *ds = ds_new_file(base_path);
    if (!ds) return ds_fail(err, "out of memory");
    ds->metric = metric;
    size_t qdim;
    if (vec_load(ds, base_path, cache_dir, &ds->n_train, &ds->dim, &ds->train, err) != VB_OK) goto fail;
    if (vec_load(ds, query_path, cache_dir, &ds->n_test, &qdim, &ds->test, err) != VB_OK) goto fail;
    if (qdim != ds->dim) {
        ds_fail(err, "%s: queries have dimension %zu but the base file %s has %zu", query_path, qdim, base_path,
                ds->dim);
        goto fail;
    }
    if (ds_hash(ds, err) != VB_OK) goto fail;
    *out = ds;
    return VB_OK;
fail:
    vb_dataset_close(&ds);
    return VB_ERROR;
}

/* ---------------------------------------------------------------------------------------------------------
 * IDX images and labels (MNIST, Fashion-MNIST: datasets/idx.h) */

/* Converts an IDX images file (checked by datasets/idx.c as it is read) into the cache file `file` as float32
 * rows, one per image, the pixel values 0..255 as floats (as ann-benchmarks' fashion-mnist-784-euclidean). */
static int idx_convert(vb_idx *x, const char *path, const char *file, uint64_t key, vb_error *err) {
    const vb_idx_info *in = vb_idx_info_of(x);
    size_t dim = in->item_bytes, chunk = ((size_t)1 << 20) / dim + 1;
    uint8_t *buf = malloc(chunk * dim);
    if (!buf) return ds_fail(err, "%s: out of memory", path);
    cache_writer w;
    float *data;
    if (cache_begin(&w, file, (size_t)in->items, dim, key, &data, err) != VB_OK) {
        free(buf);
        return VB_ERROR;
    }
    int rc = VB_OK;
    for (uint64_t i = 0; i < in->items && rc == VB_OK; i += chunk) {
        size_t nr = in->items - i < chunk ? (size_t)(in->items - i) : chunk;
        rc = vb_idx_read(x, buf, nr, err);
        for (size_t j = 0; rc == VB_OK && j < nr * dim; j++) data[i * dim + j] = (float)buf[j];
    }
    if (rc == VB_OK) rc = vb_idx_finish(x, err);
    free(buf);
    if (rc != VB_OK) {
        cache_abort(&w);
        return VB_ERROR;
    }
    return cache_commit(&w, err);
}

/* cache_fill_fn of an IDX images file (ctx: its path): idx_convert. */
static int idx_fill(void *ctx, const char *file, uint64_t key, vb_error *err) {
    const char *path = ctx;
    vb_idx *x;
    if (vb_idx_open(path, VB_IDX_MAGIC_IMAGES, &x, err) != VB_OK) return VB_ERROR;
    int r = idx_convert(x, path, file, key, err);
    vb_idx_close(&x);
    return r;
}

/* Maps an IDX images file's float32 copy from the cache, converting it first when it is not there. */
static int idx_load_images(vb_dataset *ds, const char *path, const char *cache_dir, size_t *rows, size_t *cols,
                           const float **data, vb_error *err) {
    if (vb_dataset_check_file(path, err) != VB_OK) return VB_ERROR;
    return cache_load(ds, cache_dir, path, "idx", NULL, "idx-images", 0, 0, idx_fill, (void *)path, rows, cols, data,
                      err);
}

/* A labels file as the class column of `rows` images (of images_path): one label per image. */
static int idx_load_labels(vb_dataset *ds, const char *path, const char *images_path, size_t rows,
                           const int32_t **out, int *max_label, vb_error *err) {
    int32_t *lab;
    uint64_t n;
    if (vb_idx_read_labels(path, &lab, &n, max_label, err) != VB_OK) return VB_ERROR;
    if (n != rows) {
        free(lab);
        return ds_fail(err, "%s: IDX byte 4: %llu labels, but %s holds %zu images (one label per image)", path,
                       (unsigned long long)n, images_path, rows);
    }
    ds_own(ds, lab);
    *out = lab;
    return VB_OK;
}

int vb_dataset_open_idx(const char *train_images, const char *test_images, const char *train_labels,
                        const char *test_labels, vb_metric metric, const char *cache_dir, vb_dataset **out,
                        vb_error *err) {
    *out = NULL;
    if (metric != VB_METRIC_ANGULAR && metric != VB_METRIC_EUCLIDEAN && metric != VB_METRIC_DOT)
        return ds_fail(err, "%s: unknown metric %d", train_images, (int)metric);
    if (!train_labels != !test_labels)
        return ds_fail(err, "%s: labels for the %s only: the class column needs both label files", train_images,
                       train_labels ? "corpus" : "queries");
    vb_dataset *ds = ds_new_file(train_images);
    if (!ds) return ds_fail(err, "out of memory");
    ds->metric = metric;
    size_t qdim;
    int m1 = 0, m2 = 0;
    if (idx_load_images(ds, train_images, cache_dir, &ds->n_train, &ds->dim, &ds->train, err) != VB_OK) goto fail;
    if (idx_load_images(ds, test_images, cache_dir, &ds->n_test, &qdim, &ds->test, err) != VB_OK) goto fail;
    if (qdim != ds->dim) {
        ds_fail(err, "%s: IDX byte 8: images of %zu pixels, but %s holds images of %zu", test_images, qdim,
                train_images, ds->dim);
        goto fail;
    }
    if (train_labels) {
        if (idx_load_labels(ds, train_labels, train_images, ds->n_train, &ds->train_class, &m1, err) != VB_OK ||
            idx_load_labels(ds, test_labels, test_images, ds->n_test, &ds->test_class, &m2, err) != VB_OK)
            goto fail;
        ds->n_classes = (m1 > m2 ? m1 : m2) + 1;
    }
    if (ds_hash(ds, err) != VB_OK) goto fail;
    *out = ds;
    return VB_OK;
fail:
    vb_dataset_close(&ds);
    return VB_ERROR;
}

/* ---------------------------------------------------------------------------------------------------------
 * Seeded subsets of the rows and the queries */

/* Chooses k of n indices in increasing order, the same for the same (seed, stream) on any machine: selection
 * sampling (Knuth's Algorithm S), each index taken with probability (still needed) / (still left). */
static void choose_sorted(size_t n, size_t k, uint64_t seed, uint64_t stream, size_t *out) {
    uint64_t st = vb_mix64(seed ^ vb_mix64(stream));
    size_t got = 0;
    for (size_t i = 0; i < n && got < k; i++) {
        double u = (double)(vb_splitmix64(&st) >> 11) * 0x1.0p-53;
        if ((double)(n - i) * u < (double)(k - got)) out[got++] = i;
    }
}

/* Copies the chosen rows of a rows x width matrix of `elem` bytes per value into memory owned by ds. */
static const void *pick_rows(vb_dataset *ds, const void *src, size_t width, size_t elem, const size_t *idx, size_t k) {
    char *dst = malloc(k * width * elem + 1);
    if (!dst) return NULL;
    for (size_t i = 0; i < k; i++) memcpy(dst + i * width * elem, (const char *)src + idx[i] * width * elem, width * elem);
    ds_own(ds, dst);
    return dst;
}

int vb_dataset_subset(vb_dataset *ds, size_t rows, size_t queries, uint64_t seed, vb_error *err) {
    if (rows > ds->n_train)
        return ds_fail(err, "rows: %zu is more than the %zu rows of %s", rows, ds->n_train, ds->source);
    if (queries > ds->n_test)
        return ds_fail(err, "queries: %zu is more than the %zu queries of %s", queries, ds->n_test, ds->source);
    if (rows == ds->n_train) rows = 0;
    if (queries == ds->n_test) queries = 0;
    if (!rows && !queries) return VB_OK;
    size_t *idx = malloc(((rows > queries ? rows : queries) + 1) * sizeof *idx);
    if (!idx) return ds_fail(err, "out of memory");
    int oom = 0;
    if (rows) {
        choose_sorted(ds->n_train, rows, seed, 1, idx);
        oom |= !(ds->train = pick_rows(ds, ds->train, ds->dim, sizeof(float), idx, rows));
        if (ds->train_class) oom |= !(ds->train_class = pick_rows(ds, ds->train_class, 1, sizeof(int32_t), idx, rows));
        ds->n_train = rows;
        /* the file's neighbours are ids of the whole corpus: they say nothing about a subset */
        ds->neighbors = NULL, ds->distances = NULL, ds->gt_k = 0;
    }
    if (queries && !oom) {
        choose_sorted(ds->n_test, queries, seed, 2, idx);
        oom |= !(ds->test = pick_rows(ds, ds->test, ds->dim, sizeof(float), idx, queries));
        if (ds->test_class) oom |= !(ds->test_class = pick_rows(ds, ds->test_class, 1, sizeof(int32_t), idx, queries));
        if (ds->neighbors) oom |= !(ds->neighbors = pick_rows(ds, ds->neighbors, ds->gt_k, sizeof(int32_t), idx, queries));
        if (ds->distances) oom |= !(ds->distances = pick_rows(ds, ds->distances, ds->gt_k, sizeof(float), idx, queries));
        ds->n_test = queries;
    }
    free(idx);
    if (oom) return ds_fail(err, "out of memory for a subset of %zu rows and %zu queries", rows, queries);
    return ds_hash(ds, err);
}

/* ---------------------------------------------------------------------------------------------------------
 * Given neighbours: TEXMEX .ivecs and big-ann .ibin */

/* Checks one given neighbour id (as read: int32 for .ivecs, uint32 for .ibin) against the corpus. */
static int gt_check_id(const vb_dataset *ds, const char *path, int64_t id, size_t q, size_t j, uint64_t off,
                       vb_error *err) {
    if (id >= 0 && (uint64_t)id < ds->n_train && id <= INT32_MAX) return VB_OK;
    return ds_fail(err, "%s: query %zu, neighbour %zu (byte offset %llu): id %lld is not a row of the corpus "
                        "(0..%zu)",
                   path, q, j, (unsigned long long)off, (long long)id, ds->n_train - 1);
}

static int ivecs_read(vb_dataset *ds, const char *path, int32_t *ids, size_t rows, size_t k, vb_error *err) {
    FILE *fp = fopen_regular(path, err);
    if (!fp) return VB_ERROR;
    uint64_t rec = 4 + 4 * (uint64_t)k;
    int rc = VB_OK;
    for (size_t q = 0; q < rows && rc == VB_OK; q++) {
        int32_t d;
        unsigned long long off = (unsigned long long)(q * rec);
        if (fread(&d, 4, 1, fp) != 1 || fread(ids + q * k, 4, k, fp) != k) {
            rc = ds_fail(err, "%s: query %zu (byte offset %llu): short read", path, q, off);
        } else if (d <= 0 || (size_t)d != k) {
            rc = ds_fail(err, "%s: query %zu (byte offset %llu) has %d neighbours, expected %zu (from query 0)", path,
                         q, off, d, k);
        } else {
            for (size_t j = 0; j < k && rc == VB_OK; j++)
                rc = gt_check_id(ds, path, ids[q * k + j], q, j, off + 4 + 4 * j, err);
        }
    }
    fclose(fp);
    return rc;
}

static int ibin_read(vb_dataset *ds, const char *path, int32_t *ids, float *dists, size_t rows, size_t k,
                     vb_error *err) {
    FILE *fp = fopen_regular(path, err);
    if (!fp) return VB_ERROR;
    size_t n = rows * k;
    int rc = VB_OK;
    if (fseeko(fp, 8, SEEK_SET) != 0 || fread(ids, 4, n, fp) != n || (dists && fread(dists, 4, n, fp) != n))
        rc = ds_fail(err, "%s: short read (the file changed while reading?)", path);
    fclose(fp);
    for (size_t i = 0; i < n && rc == VB_OK; i++) {
        uint32_t id;
        memcpy(&id, ids + i, 4);
        rc = gt_check_id(ds, path, (int64_t)id, i / k, i % k, 8 + 4 * (uint64_t)i, err);
    }
    return rc;
}

int vb_dataset_read_neighbors(vb_dataset *ds, const char *path, vb_error *err) {
    if (ds->neighbors)
        return ds_fail(err, "%s: the dataset (%s) already has given neighbours", path, ds->source);
    int ivecs = has_suffix(path, ".ivecs");
    if (!ivecs && !has_suffix(path, ".ibin"))
        return ds_fail(err, "%s: unknown ground-truth file format (expected .ivecs or .ibin)", path);
    size_t rows = 0, k = 0;
    int with_dist = 0;
    /* k is bounded by the file's length only; the ids, at most one copy of the file, go into memory */
    if (ivecs ? texmex_shape(path, ".ivecs", 4, INT32_MAX, &rows, &k, err)
              : bigann_shape(path, ".ibin", "ids", 4, 8, UINT32_MAX, &rows, &k, &with_dist, err))
        return VB_ERROR;
    if (rows != ds->n_test)
        return ds_fail(err, "%s: %zu rows of neighbours (k = %zu) but the queries file has %zu queries", path, rows,
                       k, ds->n_test);
    if (ds->priv->n_owned + 2 > VB_DS_MAX_REGIONS) return ds_fail(err, "%s: too many buffers", path);
    int32_t *ids = malloc(rows * k * 4);
    float *dists = with_dist ? malloc(rows * k * 4) : NULL;
    if (!ids || (with_dist && !dists)) {
        free(ids);
        free(dists);
        return ds_fail(err, "%s: out of memory for %zu x %zu neighbours", path, rows, k);
    }
    int rc = ivecs ? ivecs_read(ds, path, ids, rows, k, err) : ibin_read(ds, path, ids, dists, rows, k, err);
    if (rc != VB_OK) {
        free(ids);
        free(dists);
        return VB_ERROR;
    }
    ds_own(ds, ids);
    if (dists) ds_own(ds, dists);
    ds->neighbors = ids;
    ds->distances = dists;
    ds->gt_k = k;
    return VB_OK;
}
