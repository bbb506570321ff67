/* Files compiled into the binary (the profiles and store/schema.sql); see util/embed.sh. */
#ifndef VB_UTIL_EMBEDDED_H
#define VB_UTIL_EMBEDDED_H

#include <stddef.h>

typedef struct vb_embedded_file {
    const char *name; /* path relative to the source tree, e.g. "profiles/dev.yml" */
    const char *data; /* NUL-terminated */
    size_t size;
} vb_embedded_file;

extern const vb_embedded_file vb_embedded_files[]; /* ends with a {NULL} entry */

/* Returns the embedded file with that path, or NULL. */
const vb_embedded_file *vb_embedded_find(const char *name);

#endif
