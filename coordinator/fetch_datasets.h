/* `vbench run` / `resume` for a profile whose datasets name registry entries (`registry: NAME`, no path): the
 * files are looked up in the dataset cache, fetched when missing (datasets/fetch.h) or, with --no-fetch, refused
 * with the exact command that fetches them, and their paths are given to the dataset entry before any agent
 * sees it. A dataset that a Debian package ships (fashion-mnist-784-euclidean: dataset-fashion-mnist) is taken from
 * the package's files when it is installed, or installed first (as root, when apt has it, unless --no-fetch or a
 * mirror is named); otherwise its download is fetched as any other's. Runs after the preflight (which counts the bytes still to fetch) and before the results database is
 * created, so a failed fetch leaves nothing behind. The paths are the coordinator's: agents on other hosts need
 * the same cache path (or their own fetch with the same --cache-dir). */
#ifndef VB_COORDINATOR_FETCH_DATASETS_H
#define VB_COORDINATOR_FETCH_DATASETS_H

#include "config/profile.h"
#include "util/error.h"

typedef struct vb_fetch_datasets_opts {
    const char *cache_dir;   /* --cache-dir, or NULL (datasets/dataset.h resolves it) */
    const char *mirror;      /* --mirror URL|DIR, or NULL ($VBENCH_MIRROR, else the publishers) */
    int no_fetch;            /* --no-fetch: a missing file is an error naming the command that fetches it */
    int quiet;
} vb_fetch_datasets_opts;

int vb_fetch_profile_datasets(vb_profile *p, const vb_fetch_datasets_opts *o, vb_error *err);

#endif
