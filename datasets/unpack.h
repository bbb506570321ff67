/* Unpacking dataset files from a fetched archive (the TEXMEX .tar.gz files, datasets/registry.h), with libarchive.
 *
 * Only the members asked for are written, each to DEST.unpack and renamed to DEST when it is whole (its size the
 * archive's and, when given, the expected one) and synced, so DEST in the cache is always a complete member; an
 * unpack cut off leaves DEST.unpack, which the next unpack writes again from the start (it is never trusted). An
 * archive holding a member with an absolute path or a ".." component is refused whole: it is not the publisher's. */
#ifndef VB_DATASETS_UNPACK_H
#define VB_DATASETS_UNPACK_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct vb_unpack_member {
    const char *member;   /* its path in the archive: "siftsmall/siftsmall_base.fvecs" (a leading "./" is ignored) */
    const char *dest;     /* where it goes */
    uint64_t size;        /* its expected size, 0: any */
} vb_unpack_member;

/* Unpacks the n members of archive (any format and compression libarchive reads) to their dests. VB_ERROR names
 * the archive and the member: one that is missing, not a regular file, unsafe, of another size, or unwritable. */
int vb_unpack_members(const char *archive, const vb_unpack_member *m, size_t n, vb_error *err);

#endif
