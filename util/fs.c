/* Small file-system helpers shared by the coordinator and the agent (see fs.h). */
#include "util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int vb_mkdirs(const char *path, mode_t mode, vb_error *err) {
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p)
        return vb_error_set(err, "fs", ENAMETOOLONG, "cannot create %.200s...: the path is too long", path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(p, mode) != 0 && errno != EEXIST)
            return vb_error_set(err, "fs", errno, "cannot create %s: %s", p, strerror(errno));
        *s = '/';
    }
    if (mkdir(p, mode) != 0 && errno != EEXIST)
        return vb_error_set(err, "fs", errno, "cannot create %s: %s", p, strerror(errno));
    return VB_OK;
}

int vb_newest_file(const char *dir, const char *suffix, char *out, size_t len) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    size_t sl = strlen(suffix);
    time_t best = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l <= sl || strcmp(e->d_name + l - sl, suffix) != 0) continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_mtime >= best) {
            best = st.st_mtime;
            snprintf(out, len, "%s", path);
        }
    }
    closedir(d);
    return best ? 0 : -1;
}

int vb_fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

int vb_fsync_dir_of(const char *file) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", file);
    char *slash = strrchr(dir, '/');
    if (!slash) return vb_fsync_dir(".");
    if (slash == dir) slash[1] = '\0';   /* "/name": the root */
    else *slash = '\0';
    return vb_fsync_dir(dir);
}

/* ---- page-cache eviction of a tree ------------------------------------------------------------------------- */

static int evict_file(const char *path, long long size, long *files, long long *bytes, vb_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return vb_error_set(err, "fs", errno, "cannot open %s to evict its pages: %s", path, strerror(errno));
    int rc = fdatasync(fd) != 0 && errno != EINVAL ? errno : 0;
    if (!rc) rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    if (rc) return vb_error_set(err, "fs", rc, "cannot evict the pages of %s: %s", path, strerror(rc));
    (*files)++;
    *bytes += size;
    return VB_OK;
}

static int evict_dir(const char *dir, int depth, long *files, long long *bytes, vb_error *err) {
    if (depth > 64) return vb_error_set(err, "fs", ELOOP, "%s: the tree is deeper than 64 directories", dir);
    DIR *d = opendir(dir);
    if (!d) return vb_error_set(err, "fs", errno, "cannot read the directory %s: %s", dir, strerror(errno));
    int rc = VB_OK;
    for (struct dirent *e; rc == VB_OK && (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) {
            rc = vb_error_set(err, "fs", ENAMETOOLONG, "%s/%s: path too long", dir, e->d_name);
            break;
        }
        struct stat st;
        if (lstat(path, &st) != 0) {
            if (errno == ENOENT) continue;   /* removed meanwhile (a server's temporary file) */
            rc = vb_error_set(err, "fs", errno, "cannot stat %s: %s", path, strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            rc = evict_dir(path, depth + 1, files, bytes, err);
        } else if (S_ISREG(st.st_mode)) {
            rc = evict_file(path, (long long)st.st_size, files, bytes, err);
        }
    }
    closedir(d);
    return rc;
}

int vb_fs_evict_tree(const char *dir, long *files, long long *bytes, vb_error *err) {
    long n = 0;
    long long b = 0;
    int rc = evict_dir(dir, 0, &n, &b, err);
    if (files) *files = n;
    if (bytes) *bytes = b;
    return rc;
}

void vb_fs_io_self(long long *read_bytes, long long *write_bytes) {
    long long r = -1, w = -1, v;
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "read_bytes: %lld", &v) == 1) r = v;
        else if (sscanf(line, "write_bytes: %lld", &v) == 1) w = v;
    }
    if (f) fclose(f);
    if (read_bytes) *read_bytes = r;
    if (write_bytes) *write_bytes = w;
}
