/* IDX files, the format of MNIST and Fashion-MNIST (Debian's dataset-fashion-mnist ships them gzipped under
 * /usr/share/datasets/fashion-mnist): a big-endian header, then the items, row-major.
 *
 *   byte 0..1   0x00 0x00
 *   byte 2      element type: 0x08 unsigned byte (the only one read here)
 *   byte 3      number of dimensions: 1 for labels (magic 0x00000801), 3 for images (0x00000803)
 *   byte 4..    one uint32 (big-endian) per dimension: items, then rows and columns for images
 *   then        items x (product of the other dimensions) bytes
 *
 * A file is read as a stream, gzipped (zlib checks the gzip trailer's CRC and length) or plain (told by the gzip
 * signature 1f 8b). Every error names the file and the byte offset: in the IDX data ("IDX byte N", what the header
 * counts), and for a broken gzip stream also in the file ("file byte N"). Refused: a wrong magic, a dimension of 0 or
 * a product too large, data shorter than the header declares (truncated at the header or in the data: a plain file
 * shorter than its header declares, or a gzip file too small to inflate to it, is refused at the header, before
 * anything is allocated for the data), bytes after the declared data, and corrupt or cut gzip data. */
#ifndef VB_DATASETS_IDX_H
#define VB_DATASETS_IDX_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#define VB_IDX_MAGIC_LABELS 0x00000801u
#define VB_IDX_MAGIC_IMAGES 0x00000803u

typedef struct vb_idx vb_idx;

typedef struct vb_idx_info {
    uint32_t magic;
    unsigned ndims;
    uint32_t dims[3];     /* dims[0]: the items; images: rows, columns */
    uint64_t items;       /* dims[0] */
    size_t item_bytes;    /* product of dims[1..]: 1 for a label, rows x columns for an image */
    uint64_t header_bytes;
} vb_idx_info;

/* Opens path and reads its header, which must carry `magic` (VB_IDX_MAGIC_LABELS or _IMAGES). *out is the reader
 * (vb_idx_close frees it); VB_ERROR with err naming the file and the byte. */
int vb_idx_open(const char *path, uint32_t magic, vb_idx **out, vb_error *err);
const vb_idx_info *vb_idx_info_of(const vb_idx *x);
/* Reads the next n items into buf (n x item_bytes bytes). A file that ends first: VB_ERROR naming the IDX byte it
 * ends at, the item and what the header declares. */
int vb_idx_read(vb_idx *x, void *buf, uint64_t n, vb_error *err);
/* After the last item: VB_OK when the file ends there (for gzip: the stream ends, its CRC and length check), else
 * VB_ERROR naming the byte where more data follows. */
int vb_idx_finish(vb_idx *x, vb_error *err);
void vb_idx_close(vb_idx **x);   /* NULL-safe, sets *x = NULL */

/* A whole labels file: *out (malloc'd, the caller frees) holds items int32 values 0..255; *max_label the largest. */
int vb_idx_read_labels(const char *path, int32_t **out, uint64_t *items, int *max_label, vb_error *err);

#endif
