/* Helpers shared by the fuzz targets (tests/fuzz/fuzz_*.c).
 *
 * File-based decoders are driven through their real API, so a target writes its input to a file in a private
 * scratch directory (one per process, removed at exit) and empties the cache directory between inputs: a cache
 * file left by one input must never answer for the next. FZ_CHECK turns a broken promise of a decoder (a claim
 * about data that is not true) into a crash libFuzzer records, like a sanitizer report. */
#ifndef VB_TESTS_FUZZ_UTIL_H
#define VB_TESTS_FUZZ_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FZ_CHECK(cond, ...)                                                                                        \
    do {                                                                                                           \
        if (!(cond)) {                                                                                             \
            fprintf(stderr, "fuzz invariant failed at %s:%d: %s: ", __FILE__, __LINE__, #cond);                   \
            fprintf(stderr, __VA_ARGS__);                                                                          \
            fputc('\n', stderr);                                                                                   \
            abort();                                                                                               \
        }                                                                                                          \
    } while (0)

/* With VB_FUZZ_VERBOSE set, targets say what became of each input (for looking at a corpus: run the target on
 * its files). */
#define FZ_SAY(...)                                                                                                \
    do {                                                                                                           \
        if (getenv("VB_FUZZ_VERBOSE")) {                                                                           \
            fprintf(stderr, "fuzz: " __VA_ARGS__);                                                                 \
            fputc('\n', stderr);                                                                                   \
        }                                                                                                          \
    } while (0)

static char fz_dir_[PATH_MAX];

static inline int fz_rm_(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static inline void fz_cleanup_(void) {
    if (fz_dir_[0]) nftw(fz_dir_, fz_rm_, 16, FTW_DEPTH | FTW_PHYS);
}

/* The process's scratch directory, created on first use; "name" inside it, into buf. It lives in $VB_FUZZ_TMP
 * when set (run.sh and the corpus test give each run one they remove, since a crash skips the clean-up at exit),
 * else in /dev/shm when there is one (the dataset cache fsyncs every file it writes: free on tmpfs, the bulk of a
 * run on a disk), else in $TMPDIR or /tmp. */
static inline const char *fz_path(const char *name, char *buf, size_t len) {
    if (!fz_dir_[0]) {
        const char *t = getenv("TMPDIR");
        if (access("/dev/shm", W_OK) == 0) t = "/dev/shm";
        if (getenv("VB_FUZZ_TMP") && *getenv("VB_FUZZ_TMP")) t = getenv("VB_FUZZ_TMP");
        snprintf(fz_dir_, sizeof fz_dir_, "%s/vbench-fuzz.XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(fz_dir_)) {
            perror("fuzz: mkdtemp");
            abort();
        }
        atexit(fz_cleanup_);
    }
    if (snprintf(buf, len, "%s/%s", fz_dir_, name) >= (int)len) abort(); /* the harness's own buffer: too small */
    return buf;
}

/* Creates (or truncates) path with exactly these bytes; a failure here is the harness's, so it aborts. */
static inline void fz_write(const char *path, const void *data, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const char *p = data;
    while (fd >= 0 && len > 0) {
        ssize_t n = write(fd, p, len);
        if (n <= 0) break;
        p += n;
        len -= (size_t)n;
    }
    if (fd < 0 || len != 0 || close(fd) != 0) {
        perror(path);
        abort();
    }
}

static inline void fz_mkdir(const char *path) {
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        perror(path);
        abort();
    }
}

/* Removes every entry of a flat directory (the dataset cache), keeping the directory. */
static inline void fz_empty_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    char path[PATH_MAX + 256];
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

/* Reads every byte of [p, p + len): a decoder that claims more than it mapped or allocated faults here. */
static inline uint64_t fz_touch(const void *p, size_t len) {
    const volatile unsigned char *b = p;
    uint64_t sum = 0;
    for (size_t i = 0; i < len; i++) sum += b[i];
    return sum;
}

/* Reads little-endian integers from the front of an input, yielding zeros once it is used up: lets a
 * structure-aware target turn any byte string into a description. */
typedef struct fz_reader {
    const uint8_t *p;
    size_t n;
} fz_reader;

static inline uint64_t fz_take(fz_reader *r, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) {
        uint64_t b = 0;
        if (r->n) {
            b = *r->p++;
            r->n--;
        }
        v |= b << (8 * i);
    }
    return v;
}

#endif
