/* Reading a built engine image: its passwd file, its package list and what image-build recorded. */
#include "orchestrator/image.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int vb_image_check(const char *root, vb_error *err) {
    struct stat st;
    char path[4096];
    if (!root || stat(root, &st) != 0 || !S_ISDIR(st.st_mode))
        return vb_error_set(err, "image", ENOENT, "image %s does not exist (build it with deploy/image-build NAME)",
                            root ? root : "(null)");
    snprintf(path, sizeof path, "%s/vbench-packages.txt", root);
    if (stat(path, &st) != 0)
        return vb_error_set(err, "image", ENOENT,
                            "%s is not a finished image: no vbench-packages.txt (rebuild it with deploy/image-build)",
                            root);
    return VB_OK;
}

int vb_image_user(const char *root, const char *user, uid_t *uid, gid_t *gid, vb_error *err) {
    char path[4096], line[1024];
    snprintf(path, sizeof path, "%s/etc/passwd", root);
    FILE *f = fopen(path, "r");
    if (!f) return vb_error_set(err, "image", errno, "cannot read %s: %s", path, strerror(errno));
    size_t ulen = strlen(user);
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        /* name:password:uid:gid:gecos:home:shell */
        if (strncmp(line, user, ulen) != 0 || line[ulen] != ':') continue;
        char *p = strchr(line + ulen + 1, ':');
        if (!p) continue;
        char *end;
        unsigned long u = strtoul(p + 1, &end, 10);
        if (*end != ':') continue;
        unsigned long g = strtoul(end + 1, &end, 10);
        if (*end != ':') continue;
        *uid = (uid_t)u;
        *gid = (gid_t)g;
        found = 1;
    }
    fclose(f);
    if (!found) return vb_error_set(err, "image", ENOENT, "no user \"%s\" in %s", user, path);
    return VB_OK;
}

int vb_image_field(const char *root, const char *file, const char *key, char *out, size_t len, vb_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, file);
    FILE *f = fopen(path, "r");
    if (!f) return vb_error_set(err, "image", errno, "cannot read %s: %s", path, strerror(errno));
    size_t klen = strlen(key);
    char *line = NULL;
    size_t cap = 0;
    int found = 0;
    while (!found && getline(&line, &cap, f) > 0) {
        if (strncmp(line, key, klen) != 0 || line[klen] != '\t') continue;
        line[strcspn(line, "\r\n")] = '\0';
        snprintf(out, len, "%s", line + klen + 1);
        found = 1;
    }
    free(line);
    fclose(f);
    if (!found) return vb_error_set(err, "image", ENOENT, "%s has no %s", path, key);
    return VB_OK;
}

int vb_image_package_version(const char *root, const char *package, char *out, size_t len, vb_error *err) {
    if (vb_image_check(root, err) != VB_OK) return VB_ERROR;
    if (vb_image_field(root, "vbench-packages.txt", package, out, len, err) == VB_OK) return VB_OK;
    if (err && err->code != ENOENT) return VB_ERROR;
    return vb_error_set(err, "image", ENOENT, "image %s does not hold package %s", root, package);
}

int vb_image_find(const char *images_dir, const char *name, char *out, size_t len, vb_error *err) {
    DIR *d = opendir(images_dir);
    time_t best = 0;
    out[0] = '\0';
    size_t nl = strlen(name);
    for (struct dirent *e; d && (e = readdir(d));) {
        /* NAME-<16 hex>, exactly: "db-trixie" must not match another image "db-trixie-extra-<key>" */
        if (strncmp(e->d_name, name, nl) != 0 || e->d_name[nl] != '-' || strlen(e->d_name + nl + 1) != 16 ||
            strspn(e->d_name + nl + 1, "0123456789abcdef") != 16)
            continue;
        char path[PATH_MAX], done[PATH_MAX + 32];
        if (snprintf(path, sizeof path, "%s/%s", images_dir, e->d_name) >= (int)sizeof path) continue;
        snprintf(done, sizeof done, "%s/vbench-packages.txt", path);
        struct stat st;
        if (stat(done, &st) != 0 || st.st_mtime < best) continue;
        best = st.st_mtime;
        snprintf(out, len, "%s", path);
    }
    if (d) closedir(d);
    if (out[0]) return VB_OK;
    return vb_error_set(err, "orchestrator", 1,
                        "engine image '%s' is not built in %s: build it with `vbench image build %s` (debootstrap, "
                        "about 3 minutes)", name, images_dir, name);
}
