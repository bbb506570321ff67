/* Lookup in the table that util/embed.sh generates at build time. */
#include "util/embedded.h"

#include <string.h>

const vb_embedded_file *vb_embedded_find(const char *name) {
    for (const vb_embedded_file *f = vb_embedded_files; f->name; f++)
        if (strcmp(f->name, name) == 0) return f;
    return NULL;
}
