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
