/* Fuzz target: IDX files (datasets/idx.c: MNIST's images and labels, gzipped or plain).
 *
 * Input: byte 0 chooses the form, the rest is the file's content:
 *   bit 0   what is expected: 0 images (magic 0x00000803), 1 labels (0x00000801)
 *   bit 1   the rest is gzipped by this target before it is written (so the fuzzer works on the IDX structure
 *           inside a valid gzip stream); else the rest is written as it is (plain IDX, or gzip bytes the fuzzer
 *           mutates itself: corrupt and cut streams)
 * The file is read through the reader's API: the header, every item in chunks, then the end (vb_idx_finish), and
 * for labels vb_idx_read_labels.
 *
 * Invariants beyond the sanitizers: a refusal names the file; an accepted header has items >= 1 and item bytes >= 1
 * and, in a plain file (not gzip), no more data than the file holds; an accepted plain file is exactly header + items x item bytes long and
 * its items are its bytes; accepted labels are the bytes after the header. */
#include <zlib.h>

#include "datasets/idx.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int labels = data[0] & 1, gz = (data[0] >> 1) & 1;
    const uint8_t *body = data + 1;
    size_t blen = size - 1;
    char path[PATH_MAX];
    fz_path("input.idx", path, sizeof path);
    if (gz) {
        uLongf clen = compressBound((uLong)blen) + 32;
        unsigned char *c = malloc(clen);
        z_stream z = {0};
        /* a gzip wrapper (15 + 16), as gzip(1) writes it */
        if (!c || deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
        z.next_in = (unsigned char *)body;
        z.avail_in = (uInt)blen;
        z.next_out = c;
        z.avail_out = (uInt)clen;
        if (deflate(&z, Z_FINISH) != Z_STREAM_END) abort();
        fz_write(path, c, z.total_out);
        deflateEnd(&z);
        free(c);
    } else {
        fz_write(path, body, blen);
    }
    vb_error err;
    vb_error_clear(&err);
    vb_idx *x = NULL;
    uint32_t magic = labels ? VB_IDX_MAGIC_LABELS : VB_IDX_MAGIC_IMAGES;
    if (vb_idx_open(path, magic, &x, &err) != VB_OK) {
        FZ_CHECK(!x && strstr(err.message, path), "a refused header names the file: %s", err.message);
        FZ_SAY("refused at the header: %s", err.message);
        return 0;
    }
    const vb_idx_info *in = vb_idx_info_of(x);
    int plain = !gz && !(blen >= 2 && body[0] == 0x1f && body[1] == 0x8b);   /* the bytes are the IDX data */
    FZ_CHECK(in->items >= 1 && in->item_bytes >= 1 && in->magic == magic, "an accepted header has items");
    uint64_t declared = in->header_bytes + in->items * in->item_bytes;
    FZ_CHECK(!plain || declared <= blen, "a plain file holds what its header declares (%llu > %zu)",
             (unsigned long long)declared, blen);
    size_t chunk = in->item_bytes > 65536 ? 1 : 65536 / in->item_bytes;
    unsigned char *buf = malloc(chunk * in->item_bytes);
    if (!buf) abort();
    int rc = VB_OK;
    uint64_t done = 0;
    while (rc == VB_OK && done < in->items) {
        uint64_t n = in->items - done < chunk ? in->items - done : chunk;
        rc = vb_idx_read(x, buf, n, &err);
        if (rc == VB_OK && plain)   /* a plain file's items are its bytes */
            FZ_CHECK(memcmp(buf, body + in->header_bytes + done * in->item_bytes, n * in->item_bytes) == 0,
                     "items are the file's bytes");
        if (rc == VB_OK) done += n;
    }
    if (rc == VB_OK) rc = vb_idx_finish(x, &err);
    FZ_CHECK(rc == VB_OK || strstr(err.message, path), "a refused file names the file: %s", err.message);
    FZ_CHECK(rc != VB_OK || !plain || declared == blen, "an accepted plain file is exactly as long as declared");
    FZ_SAY("%s: %llu items of %zu bytes%s%s", rc == VB_OK ? "accepted" : "refused", (unsigned long long)in->items,
           in->item_bytes, rc == VB_OK ? "" : ": ", rc == VB_OK ? "" : err.message);
    int whole = rc == VB_OK;
    free(buf);
    vb_idx_close(&x);
    if (labels) {
        int32_t *lab = NULL;
        uint64_t n = 0;
        int mx = -1;
        rc = vb_idx_read_labels(path, &lab, &n, &mx, &err);
        FZ_CHECK((rc == VB_OK) == whole, "labels read whole exactly when the stream read accepted them");
        if (rc == VB_OK) {
            FZ_CHECK(n >= 1 && mx >= 0 && mx <= 255, "labels are bytes");
            for (uint64_t i = 0; plain && i < n; i++) FZ_CHECK(lab[i] == body[8 + i], "label %llu", (unsigned long long)i);
        }
        free(lab);
    }
    return 0;
}
