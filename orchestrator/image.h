/* Engine images (deploy/image-build): what the orchestrator reads from a built root file system. The users
 * the servers run as exist only inside the image (systemd resolves User= on the host), and the package
 * versions inside go into the manifest. */
#ifndef VB_ORCHESTRATOR_IMAGE_H
#define VB_ORCHESTRATOR_IMAGE_H

#include <stddef.h>
#include <sys/types.h>

#include "util/error.h"

/* The uid and primary gid of `user` in ROOT/etc/passwd. VB_ERROR naming the file when there is no such user. */
int vb_image_user(const char *root, const char *user, uid_t *uid, gid_t *gid, vb_error *err);

/* The version of `package` from ROOT/vbench-packages.txt (written by deploy/image-build). VB_ERROR when the
 * image has no such file (not built by image-build, or unfinished) or does not hold the package. */
int vb_image_package_version(const char *root, const char *package, char *out, size_t len, vb_error *err);

/* The value of `key` in ROOT/FILE, a "key<TAB>value" file image-build writes (vbench-image.txt, and for a layer
 * vbench-layer.txt: source, source_sha256, version, flags, target_isa, built_with, replaces, ...). VB_ERROR
 * when the file or the key is absent; a missing vbench-layer.txt means the image is not a layer. */
int vb_image_field(const char *root, const char *file, const char *key, char *out, size_t len, vb_error *err);

/* Checks that ROOT is a finished image: a directory with vbench-packages.txt. The error says how to build it. */
int vb_image_check(const char *root, vb_error *err);

/* The newest finished build of image NAME in images_dir (NAME-<16 hex>, with vbench-packages.txt: see
 * deploy/image-build) into out. VB_ERROR saying which command builds it. */
int vb_image_find(const char *images_dir, const char *name, char *out, size_t len, vb_error *err);

#endif
