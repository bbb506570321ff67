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

/* Drops the page cache of every regular file under dir (the tree, symbolic links not followed): each file is
 * written back (fdatasync: dirty pages cannot be dropped) and then posix_fadvise(POSIX_FADV_DONTNEED) over its
 * whole length. For the cold-start measurement (issue 26): the orchestrator, which owns a server's data directory,
 * evicts that directory only, never the host's whole cache (no drop_caches). *files and *bytes (may be NULL): how
 * many files and bytes were advised. VB_ERROR (domain "fs", the file named) when a file cannot be opened or advised;
 * a tree that does not exist is an error too. A file system without a page cache of its own (tmpfs) accepts the
 * advice and keeps the pages. */
int vb_fs_evict_tree(const char *dir, long *files, long long *bytes, vb_error *err);

/* Bytes this process has had read from storage so far (read_bytes of /proc/self/io: page-cache hits do not
 * count, faults on a memory-mapped file do) and written (write_bytes: what it dirtied for writeback), each -1
 * where the kernel does not say. Either pointer may be NULL. */
void vb_fs_io_self(long long *read_bytes, long long *write_bytes);

#endif
