/* util/fs.h: vb_fs_evict_tree, the page-cache eviction of a data directory that the cold-start measurement needs
 * (posix_fadvise DONTNEED per file, never the host's whole cache). Residency is read back with mincore over a
 * mapping of each file: after the call no page of a clean file stays cached on a file system with its own page
 * cache (ext4 here; tmpfs keeps its pages by nature, and the check says so and skips). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "tests/tap.h"
#include "util/fs.h"

#define TMPFS_MAGIC_ 0x01021994

/* Pages of path resident in the page cache, or -1. */
static long resident(const char *path) {
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) return fd >= 0 ? (close(fd), -1) : -1;
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return -1;
    long page = sysconf(_SC_PAGESIZE), n = (st.st_size + page - 1) / page, in = 0;
    unsigned char *vec = malloc((size_t)n);
    if (vec && mincore(m, (size_t)st.st_size, vec) == 0)
        for (long i = 0; i < n; i++) in += vec[i] & 1;
    else
        in = -1;
    free(vec);
    munmap(m, (size_t)st.st_size);
    return in;
}

static void write_file(const char *path, size_t bytes) {
    FILE *f = fopen(path, "w");
    char block[4096];
    memset(block, 'x', sizeof block);
    for (size_t i = 0; f && i < bytes / sizeof block; i++) fwrite(block, 1, sizeof block, f);
    if (f) fclose(f);
}

int main(void) {
    char dir[] = "/var/tmp/vbench-fs.XXXXXX", sub[64], a[96], b[96], link[96];
    ok(mkdtemp(dir) != NULL, "a scratch directory on disk (%s)", dir);
    snprintf(sub, sizeof sub, "%s/base", dir);
    snprintf(a, sizeof a, "%s/ibdata1", dir);
    snprintf(b, sizeof b, "%s/16384", sub);
    snprintf(link, sizeof link, "%s/link", dir);
    mkdir(sub, 0700);
    write_file(a, 1 << 20);
    write_file(b, 256 << 10);
    ok(symlink("/etc/hostname", link) == 0, "a symbolic link out of the tree (never followed)");
    long before = resident(a) + resident(b);
    ok(before > 0, "the files just written are in the page cache (%ld pages)", before);

    long files = -1;
    long long bytes = -1;
    vb_error err = {0};
    int rc = vb_fs_evict_tree(dir, &files, &bytes, &err);
    ok(rc == VB_OK, "evict the tree (%s)", rc == VB_OK ? "ok" : err.message);
    is_int(files, 2, "two regular files advised, the nested one too, the link not");
    is_int(bytes, (1 << 20) + (256 << 10), "their bytes");
    struct statfs fs;
    if (statfs(dir, &fs) == 0 && fs.f_type == TMPFS_MAGIC_) {
        tap_skip("%s is tmpfs: its pages are the files and stay", dir);
    } else {
        long after = resident(a) + resident(b);
        ok(after == 0, "no page of either file is cached afterwards (%ld, was %ld)", after, before);
    }

    is_int(vb_fs_evict_tree("/nonexistent/vbench", &files, &bytes, &err), VB_ERROR, "a missing tree is an error");
    contains(err.message, "/nonexistent/vbench", "naming it");

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("# could not remove %s\n", dir);
    return done_testing();
}
