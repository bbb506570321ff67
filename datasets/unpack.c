/* Unpacking members of a dataset archive (datasets/unpack.h): libarchive reads, we choose what is written where. */
#include "datasets/unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* An absolute path or a ".." component would write outside the cache if anyone extracted the archive as it is. */
static int unsafe_name(const char *p) {
    if (p[0] == '/') return 1;
    for (const char *s = p; (s = strstr(s, "..")) != NULL; s += 2)
        if ((s == p || s[-1] == '/') && (s[2] == '\0' || s[2] == '/')) return 1;
    return 0;
}

static const char *plain_name(const char *p) {
    while (p[0] == '.' && p[1] == '/') p += 2;
    return p;
}

/* Writes the current entry's data to fd (pwrite at libarchive's offsets: sparse members too). */
static int copy_data(struct archive *a, int fd, uint64_t *written, int *werr) {
    const void *buf;
    size_t len;
    la_int64_t off;
    int r;
    *written = 0;
    while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
        size_t done = 0;
        while (done < len) {
            ssize_t w = pwrite(fd, (const char *)buf + done, len - done, (off_t)off + (off_t)done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                *werr = w < 0 ? errno : ENOSPC;
                return -1;
            }
            done += (size_t)w;
        }
        if ((uint64_t)off + len > *written) *written = (uint64_t)off + len;
    }
    return r == ARCHIVE_EOF ? 0 : -1;
}

int vb_unpack_members(const char *archive, const vb_unpack_member *m, size_t n, vb_error *err) {
    struct archive *a = archive_read_new();
    if (!a) return vb_error_set(err, "unpack", 1, "%s: out of memory", archive);
    archive_read_support_filter_all(a);
    archive_read_support_format_tar(a);
    int *done = calloc(n ? n : 1, sizeof *done);
    char tmp[PATH_MAX + 8];
    int rc = VB_OK;
    if (!done) {
        rc = vb_error_set(err, "unpack", 1, "%s: out of memory", archive);
        goto out;
    }
    if (archive_read_open_filename(a, archive, 1 << 20) != ARCHIVE_OK) {
        rc = vb_error_set(err, "unpack", 1, "%s: cannot open it as a tar archive: %s (delete it and fetch again)",
                          archive, archive_error_string(a));
        goto out;
    }
    struct archive_entry *ent;
    int r;
    /* the whole archive is read (an unsafe member anywhere refuses it); members are renamed only at the end */
    while ((r = archive_read_next_header(a, &ent)) == ARCHIVE_OK) {
        const char *name = archive_entry_pathname(ent);
        if (!name) continue;
        if (unsafe_name(name)) {
            rc = vb_error_set(err, "unpack", 1, "%s: member \"%s\" points outside the directory it is unpacked in "
                              "(an absolute path or \"..\"): refused, nothing unpacked; this is not the publisher's "
                              "archive: delete it and fetch it from the publisher or another mirror", archive, name);
            goto out;
        }
        size_t i = 0;
        while (i < n && (done[i] || strcmp(plain_name(name), plain_name(m[i].member)) != 0)) i++;
        if (i == n) {
            archive_read_data_skip(a);
            continue;
        }
        if (archive_entry_filetype(ent) != AE_IFREG) {
            rc = vb_error_set(err, "unpack", 1, "%s: member \"%s\" is not a regular file (a link or a directory): "
                              "refused; delete the archive and fetch it again", archive, name);
            goto out;
        }
        uint64_t want = archive_entry_size_is_set(ent) ? (uint64_t)archive_entry_size(ent) : 0;
        if (m[i].size && want && want != m[i].size) {
            rc = vb_error_set(err, "unpack", 1, "%s: member \"%s\" has %llu bytes, the registry expects %llu: refused "
                              "(another version of the dataset?)", archive, name, (unsigned long long)want,
                              (unsigned long long)m[i].size);
            goto out;
        }
        snprintf(tmp, sizeof tmp, "%s.unpack", m[i].dest);
        /* O_TRUNC: what an earlier, cut-off unpack left is written again, never trusted */
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            rc = vb_error_set(err, "unpack", 1, "%s: cannot write it: %s (check the cache directory)", tmp,
                              strerror(errno));
            goto out;
        }
        uint64_t got = 0;
        int werr = 0;
        int cr = copy_data(a, fd, &got, &werr);
        if (cr == 0 && want > got && ftruncate(fd, (off_t)want) != 0) werr = errno, cr = -1;   /* sparse tail */
        if (cr == 0 && fsync(fd) != 0) werr = errno, cr = -1;
        close(fd);
        if (cr != 0) {
            rc = vb_error_set(err, "unpack", 1, "%s: unpacking member \"%s\" into %s failed: %s; run the same command "
                              "again (it unpacks again from the start)", archive, name, tmp,
                              werr ? strerror(werr) : archive_error_string(a));
            goto out;
        }
        done[i] = 1;
    }
    if (r != ARCHIVE_EOF) {
        rc = vb_error_set(err, "unpack", 1, "%s: the archive is damaged: %s (delete it and fetch it again)", archive,
                          archive_error_string(a));
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        if (!done[i]) {
            rc = vb_error_set(err, "unpack", 1, "%s: no member \"%s\" in it: another archive than the registry's? "
                              "(tar tzf %s lists it)", archive, m[i].member, archive);
            goto out;
        }
    for (size_t i = 0; i < n; i++) {
        snprintf(tmp, sizeof tmp, "%s.unpack", m[i].dest);
        if (rename(tmp, m[i].dest) != 0) {
            rc = vb_error_set(err, "unpack", 1, "%s: cannot rename it to %s: %s", tmp, m[i].dest, strerror(errno));
            goto out;
        }
    }
out:
    /* A refused archive leaves nothing half-written behind: the members written whole and the one whose copy
     * failed half-way (found by fuzzing: a damaged member's .unpack stayed). */
    if (rc != VB_OK)
        for (size_t i = 0; i < n; i++) {
            snprintf(tmp, sizeof tmp, "%s.unpack", m[i].dest);
            unlink(tmp);
        }
    free(done);
    archive_read_free(a);
    return rc;
}
