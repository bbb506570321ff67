/* The IDX reader (datasets/idx.h): a byte stream over a plain or gzipped file (zlib's inflate on our own input
 * buffer, so the file offset of a gzip error is exact), and the header and item checks on top of it. */
#include "datasets/idx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "datasets/dataset.h"

/* Far beyond any IDX file (Fashion-MNIST's training images are 47 MB), far below where a product of three
 * uint32 dimensions could wrap around. */
#define IDX_MAX_BYTES (1ull << 40)
#define IDX_IN_BUF (64 * 1024)

struct vb_idx {
    char path[1024];
    int fd;
    int gz;                   /* a gzip stream (else plain bytes) */
    int gz_end;               /* the last gzip member ended (its trailer checked) */
    z_stream z;
    int z_live;
    unsigned char in[IDX_IN_BUF];
    size_t in_len, in_pos;    /* plain files: bytes in `in` not yet handed out */
    uint64_t file_read;       /* bytes read from the file so far */
    uint64_t pos;             /* IDX bytes handed out so far */
    int eof;                  /* the file's end was read */
    vb_idx_info info;
};


/* Reads more of the file into `in` (after what is left of it). 0, or -1 with errno. */
static int fill(vb_idx *x, size_t keep_from) {
    size_t keep = x->in_len - keep_from;
    memmove(x->in, x->in + keep_from, keep);
    x->in_len = keep;
    x->in_pos = 0;
    while (!x->eof && x->in_len < sizeof x->in) {
        ssize_t r = read(x->fd, x->in + x->in_len, sizeof x->in - x->in_len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) x->eof = 1;
        x->in_len += (size_t)r;
        x->file_read += (uint64_t)r;
        if (r > 0) break;
    }
    return 0;
}

/* The file offset of the next compressed byte inflate would take. */
static uint64_t gz_file_pos(const vb_idx *x) { return x->file_read - x->z.avail_in; }

/* Up to len bytes of IDX data into buf; *got < len only at the end of the data. */
static int stream_read(vb_idx *x, unsigned char *buf, size_t len, size_t *got, vb_error *err) {
    *got = 0;
    if (!x->gz) {
        while (*got < len) {
            if (x->in_pos == x->in_len) {
                if (x->eof) break;
                if (fill(x, x->in_len) != 0) return vb_error_set(err, "dataset", 1, "%s: read error at byte %llu: %s", x->path,
                                                             (unsigned long long)x->file_read, strerror(errno));
                continue;
            }
            size_t n = x->in_len - x->in_pos < len - *got ? x->in_len - x->in_pos : len - *got;
            memcpy(buf + *got, x->in + x->in_pos, n);
            x->in_pos += n, *got += n, x->pos += n;
        }
        return VB_OK;
    }
    x->z.next_out = buf;
    x->z.avail_out = (uInt)len;
    while (x->z.avail_out > 0 && !x->gz_end) {
        if (x->z.avail_in == 0) {
            if (x->eof) {
                *got = len - x->z.avail_out;
                x->pos += *got;
                return vb_error_set(err, "dataset", 1, "%s: truncated: the gzip stream breaks off at file byte %llu (IDX byte %llu): "
                                "the file is cut short", x->path, (unsigned long long)x->file_read,
                                (unsigned long long)x->pos);
            }
            if (fill(x, x->in_len) != 0) return vb_error_set(err, "dataset", 1, "%s: read error at byte %llu: %s", x->path,
                                                         (unsigned long long)x->file_read, strerror(errno));
            x->z.next_in = x->in;
            x->z.avail_in = (uInt)x->in_len;
            continue;
        }
        int r = inflate(&x->z, Z_NO_FLUSH);
        if (r == Z_STREAM_END) {
            /* another gzip member may follow (gzip -c a b > c), which gunzip reads on */
            if (x->z.avail_in == 0 && !x->eof && fill(x, x->in_len) == 0) {
                x->z.next_in = x->in;
                x->z.avail_in = (uInt)x->in_len;
            }
            if (x->z.avail_in == 0) x->gz_end = 1;
            else inflateReset(&x->z);
        } else if (r != Z_OK && r != Z_BUF_ERROR) {
            size_t out = len - x->z.avail_out;
            return vb_error_set(err, "dataset", 1, "%s: corrupt gzip data at file byte %llu (IDX byte %llu): %s", x->path,
                            (unsigned long long)gz_file_pos(x), (unsigned long long)(x->pos + out),
                            x->z.msg ? x->z.msg : r == Z_MEM_ERROR ? "out of memory" : "inflate failed");
        }
    }
    *got = len - x->z.avail_out;
    x->pos += *got;
    return VB_OK;
}

void vb_idx_close(vb_idx **px) {
    if (!px || !*px) return;
    vb_idx *x = *px;
    if (x->z_live) inflateEnd(&x->z);
    if (x->fd >= 0) close(x->fd);
    free(x);
    *px = NULL;
}

static const char *magic_name(uint32_t m) {
    return m == VB_IDX_MAGIC_LABELS ? "labels: unsigned bytes, 1 dimension"
           : m == VB_IDX_MAGIC_IMAGES ? "images: unsigned bytes, 3 dimensions" : "?";
}

int vb_idx_open(const char *path, uint32_t magic, vb_idx **out, vb_error *err) {
    *out = NULL;
    vb_idx *x = calloc(1, sizeof *x);
    if (!x) return vb_error_set(err, "dataset", 1, "%s: out of memory", path);
    snprintf(x->path, sizeof x->path, "%s", path);
    x->fd = vb_dataset_open_file(path, err);   /* a FIFO or a directory refused by name */
    if (x->fd < 0) {
        free(x);
        return VB_ERROR;
    }
    if (fill(x, 0) != 0) {
        int e = errno;
        vb_idx_close(&x);
        return vb_error_set(err, "dataset", 1, "%s: cannot read: %s", path, strerror(e));
    }
    x->gz = x->in_len >= 2 && x->in[0] == 0x1f && x->in[1] == 0x8b;
    if (x->gz) {
        if (inflateInit2(&x->z, 15 + 16) != Z_OK) {   /* 15 + 16: a gzip wrapper, its CRC and length checked */
            vb_idx_close(&x);
            return vb_error_set(err, "dataset", 1, "%s: out of memory", path);
        }
        x->z_live = 1;
        x->z.next_in = x->in;
        x->z.avail_in = (uInt)x->in_len;
    }
    unsigned char h[16];
    size_t got;
    unsigned ndims = magic & 0xff;
    size_t hlen = 4 + 4 * (size_t)ndims;
    if (stream_read(x, h, 4, &got, err) != VB_OK) goto fail;
    if (got < 4) {
        vb_error_set(err, "dataset", 1, "%s: truncated at IDX byte %zu: the header needs %zu bytes (a magic number and %u dimensions)",
                 path, got, hlen, ndims);
        goto fail;
    }
    uint32_t m = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
    if (m != magic) {
        vb_error_set(err, "dataset", 1, "%s: IDX byte 0: magic 0x%08x, expected 0x%08x (%s)%s", path, m, magic, magic_name(magic),
                 m == VB_IDX_MAGIC_LABELS || m == VB_IDX_MAGIC_IMAGES ? ": the files are swapped?"
                 : (m >> 16) != 0 ? ": not an IDX file" : (m & 0xff00) != 0x0800 ? ": an element type vbench does "
                 "not read (only unsigned bytes, 0x08)" : "");
        goto fail;
    }
    if (stream_read(x, h + 4, hlen - 4, &got, err) != VB_OK) goto fail;
    if (got < hlen - 4) {
        vb_error_set(err, "dataset", 1, "%s: truncated at IDX byte %zu: the header needs %zu bytes (a magic number and %u dimensions)",
                 path, 4 + got, hlen, ndims);
        goto fail;
    }
    x->info.magic = m;
    x->info.ndims = ndims;
    x->info.header_bytes = hlen;
    uint64_t total = 1;
    for (unsigned i = 0; i < ndims; i++) {
        const unsigned char *d = h + 4 + 4 * i;
        x->info.dims[i] = (uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 | (uint32_t)d[2] << 8 | d[3];
        if (x->info.dims[i] == 0) {
            vb_error_set(err, "dataset", 1, "%s: IDX byte %u: dimension %u is 0 (%s)", path, 4 + 4 * i, i,
                     i == 0 ? "no items" : "empty items");
            goto fail;
        }
        total *= x->info.dims[i];
        if (total > IDX_MAX_BYTES) {
            vb_error_set(err, "dataset", 1, "%s: IDX byte %u: the dimensions declare more than %llu GiB of data", path, 4 + 4 * i,
                     IDX_MAX_BYTES >> 30);
            goto fail;
        }
    }
    x->info.items = x->info.dims[0];
    x->info.item_bytes = (size_t)(total / x->info.items);
    /* Before anything is allocated for the data: can the file hold what the header declares? A plain file must be
     * that long (the same message as when its end is read); deflate inflates 1032 bytes per byte at most. */
    struct stat st;
    if (fstat(x->fd, &st) == 0) {
        uint64_t size = (uint64_t)st.st_size, declared = hlen + total;
        if (!x->gz && size < declared) {
            vb_error_set(err, "dataset", 1, "%s: truncated at IDX byte %llu (in item %llu of %llu): the header declares %llu bytes", path,
                     (unsigned long long)size, (unsigned long long)((size - hlen) / x->info.item_bytes),
                     (unsigned long long)x->info.items, (unsigned long long)declared);
            goto fail;
        }
        if (x->gz && total / 1032 > size) {
            vb_error_set(err, "dataset", 1, "%s: truncated: IDX byte 4: the header declares %llu bytes of data, more than a gzip file of "
                     "%llu bytes can hold (deflate: 1032 to 1 at most)", path, (unsigned long long)total,
                     (unsigned long long)size);
            goto fail;
        }
    }
    *out = x;
    return VB_OK;
fail:
    vb_idx_close(&x);
    return VB_ERROR;
}

const vb_idx_info *vb_idx_info_of(const vb_idx *x) { return &x->info; }

int vb_idx_read(vb_idx *x, void *buf, uint64_t n, vb_error *err) {
    uint64_t first = (x->pos - x->info.header_bytes) / x->info.item_bytes;
    if (first + n > x->info.items)
        return vb_error_set(err, "dataset", 1, "%s: %llu items asked after item %llu, the header declares %llu", x->path,
                        (unsigned long long)n, (unsigned long long)first, (unsigned long long)x->info.items);
    size_t want = (size_t)(n * x->info.item_bytes), got;
    if (stream_read(x, buf, want, &got, err) != VB_OK) return VB_ERROR;
    if (got < want) {
        uint64_t declared = x->info.header_bytes + x->info.items * x->info.item_bytes;
        return vb_error_set(err, "dataset", 1, "%s: truncated at IDX byte %llu (in item %llu of %llu): the header declares %llu bytes",
                        x->path, (unsigned long long)x->pos, (unsigned long long)(first + got / x->info.item_bytes),
                        (unsigned long long)x->info.items, (unsigned long long)declared);
    }
    return VB_OK;
}

int vb_idx_finish(vb_idx *x, vb_error *err) {
    unsigned char c;
    size_t got;
    uint64_t at = x->pos;
    if (stream_read(x, &c, 1, &got, err) != VB_OK) return VB_ERROR;   /* for gzip: on to the trailer's check */
    /* more data in a gzip stream: corrupt bytes inflate to anything, so the stream's own check (read to its end)
     * says more than "too long" when it fails */
    unsigned char scratch[16384];
    for (size_t more = got; x->gz && more;)
        if (stream_read(x, scratch, sizeof scratch, &more, err) != VB_OK) return VB_ERROR;
    if (got)
        return vb_error_set(err, "dataset", 1, "%s: IDX byte %llu: data goes on after the %llu items of %zu bytes the header declares",
                        x->path, (unsigned long long)at, (unsigned long long)x->info.items, x->info.item_bytes);
    return VB_OK;
}

int vb_idx_read_labels(const char *path, int32_t **out, uint64_t *items, int *max_label, vb_error *err) {
    *out = NULL;
    vb_idx *x;
    if (vb_idx_open(path, VB_IDX_MAGIC_LABELS, &x, err) != VB_OK) return VB_ERROR;
    uint64_t n = x->info.items;
    unsigned char *raw = malloc(n);
    int32_t *lab = malloc(n * sizeof *lab);
    int rc = VB_ERROR;
    if (!raw || !lab) {
        vb_error_set(err, "dataset", 1, "%s: out of memory for %llu labels", path, (unsigned long long)n);
    } else if (vb_idx_read(x, raw, n, err) == VB_OK && vb_idx_finish(x, err) == VB_OK) {
        int mx = 0;
        for (uint64_t i = 0; i < n; i++) {
            lab[i] = raw[i];
            if (raw[i] > mx) mx = raw[i];
        }
        *out = lab, *items = n, *max_label = mx;
        lab = NULL;
        rc = VB_OK;
    }
    free(raw);
    free(lab);
    vb_idx_close(&x);
    return rc;
}
