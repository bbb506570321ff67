/* Small file-system helpers shared by the coordinator and the agent. */
#ifndef VB_UTIL_FS_H
#define VB_UTIL_FS_H

#include <stddef.h>
#include <sys/types.h>

#include "util/error.h"

/* mkdir -p: every missing directory of `path` is made with `mode` (the umask applies); one that exists is fine.
 * On failure err names the directory that could not be made (domain "fs") and VB_ERROR is returned. */
int vb_mkdirs(const char *path, mode_t mode, vb_error *err);

/* The newest file whose name ends in `suffix` in directory `dir` (by modification time) into out, as
 * "dir/name". 0, or -1 when there is none (or no such directory). `vbench status`, `show`, `resume`, `report`
 * and `export` take the newest results.db/ *.sqlite this way when no file is named. */
int vb_newest_file(const char *dir, const char *suffix, char *out, size_t len);

/* fsync of a directory, so that a rename or a new file in it survives a power cut. 0, or -1 with errno. */
int vb_fsync_dir(const char *dir);
/* vb_fsync_dir of the directory holding `file` ("." for a bare name). */
int vb_fsync_dir_of(const char *file);

#endif
