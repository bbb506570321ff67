/* Reading a built engine image: its passwd file and its package list. */
#include "orchestrator/image.h"

#include <errno.h>
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

int vb_image_package_version(const char *root, const char *package, char *out, size_t len, vb_error *err) {
    if (vb_image_check(root, err) != VB_OK) return VB_ERROR;
    char path[4096], line[512];
    snprintf(path, sizeof path, "%s/vbench-packages.txt", root);
    FILE *f = fopen(path, "r");
    if (!f) return vb_error_set(err, "image", errno, "cannot read %s: %s", path, strerror(errno));
    size_t plen = strlen(package);
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, package, plen) != 0 || line[plen] != '\t') continue;
        line[strcspn(line, "\r\n")] = '\0';
        snprintf(out, len, "%s", line + plen + 1);
        found = 1;
    }
    fclose(f);
    if (!found) return vb_error_set(err, "image", ENOENT, "image %s does not hold package %s", root, package);
    return VB_OK;
}
