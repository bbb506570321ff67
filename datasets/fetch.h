/* Downloading dataset files into the cache: `vbench dataset fetch` and `vbench run` for a profile that names a
 * registry dataset (datasets/registry.h).
 *
 * A download goes to FILE.part and resumes from its end after an interruption (an HTTP Range request; libcurl
 * does the same for file:// and ftp://), is checked against the expected size and sha256, and is renamed to
 * FILE only when it is complete and verified, so FILE in the cache is always a whole, checked file. Where no
 * checksum is published, the first complete download's sha256 is recorded in FILE.sha256 (the format of
 * sha256sum) and every later fetch or copy is checked against it. A mirror (a base URL or a local directory)
 * replaces the publisher's location: it holds the files under their cache names. Progress goes to stderr: a bar
 * with rate and ETA on a terminal, a plain line every few seconds otherwise. A cut (the first N rows of a big-ann
 * file) is fetched the same way with Range requests for its bytes only. */
#ifndef VB_DATASETS_FETCH_H
#define VB_DATASETS_FETCH_H

#include <stdint.h>
#include <stdio.h>

#include "datasets/registry.h"
#include "util/error.h"

typedef struct vb_fetch_opts {
    const char *mirror;   /* base URL (http://, https://, ftp://, file://) or a directory, or NULL */
    int retries;          /* further attempts after a transfer breaks off, each resuming (default: 0) */
    int quiet;            /* no progress and no notes */
    FILE *say;            /* notes and progress (NULL: stderr) */
} vb_fetch_opts;

/* Fetches url into dest (a path; its directory must exist). size 0 and sha256 NULL: unknown (then recorded).
 * An existing dest is verified instead (size, and sha256 against the known or recorded one): VB_OK when it
 * matches, else VB_ERROR saying what to do. A download whose size or sha256 does not match is moved to
 * dest.bad and refused. VB_RETRY: the transfer broke off (after the retries); dest.part is kept and the same
 * call resumes it. */
int vb_fetch_file(const char *url, const char *dest, uint64_t size, const char *sha256, const vb_fetch_opts *o,
                  vb_error *err);

/* A cut (datasets/registry.h): the first rows of a big-ann .fbin/.u8bin file (8-byte header: uint32 rows, uint32 dim,
 * then rows x dim values of elem bytes). */
typedef struct vb_fetch_cut {
    uint64_t rows;
    uint64_t dim;     /* the dimension the header must say, 0: any (the cut's size then comes from the header) */
    unsigned elem;    /* bytes per value: 1 (.u8bin), 4 (.fbin) */
} vb_fetch_cut;

/* vb_fetch_file for a cut: fetches bytes [0, 8 + rows x dim x elem) of url with Range requests (resumable like a
 * whole file; with size 0 the header is fetched first and gives dim), checks the header (dim, at least rows rows),
 * sets its row count to rows, and then verifies and records as vb_fetch_file does. cut NULL: vb_fetch_file. */
int vb_fetch_file_cut(const char *url, const char *dest, const vb_fetch_cut *cut, uint64_t size, const char *sha256,
                      const vb_fetch_opts *o, vb_error *err);

/* Fetches every file of a registry entry into datasets_dir, from o->mirror when given: whole files, cuts, and
 * archives (fetched once, then the members the entry names unpacked: datasets/unpack.h). Then the files' shapes
 * are checked against the entry (vb_registry_check_shape, datasets/shape.h): a file of another shape is refused
 * and moved aside to FILE.bad. */
int vb_fetch_registry(const vb_registry_entry *e, const char *datasets_dir, const vb_fetch_opts *o, vb_error *err);

/* The URL a registry file is fetched from: the mirror's (MIRROR/FILE; a directory becomes file://) or its own. */
void vb_fetch_source_url(const vb_registry_file *f, const char *mirror, char *buf, size_t len);

/* Bytes as a person reads a download: "1.2 GB" (decimal units, as transfer rates are given). */
const char *vb_fetch_human(double bytes, char *buf, size_t len);

/* sha256 of a file as 64 lowercase hex characters into hex[65]. */
int vb_fetch_sha256_file(const char *path, char hex[65], vb_error *err);

/* The checksum recorded beside path (path.sha256), into hex[65]; 0 when there is one, -1 otherwise. */
int vb_fetch_recorded_sha256(const char *path, char hex[65]);

#endif
