/* Versions of the libraries this binary runs with, for the manifest and the agent's hello. */
#ifndef VB_UTIL_VERSIONS_H
#define VB_UTIL_VERSIONS_H

#include <stddef.h>

#include "util/kv.h"

/* Fills out with static strings ("lib.zmq" -> "4.3.4", ...); returns the count (<= cap). */
size_t vb_versions_collect(vb_kv *out, size_t cap);
const char *vb_git_revision(void);

#endif
