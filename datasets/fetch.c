/* Downloading dataset files into the cache (datasets/fetch.h): libcurl into FILE.part with resume, size and
 * sha256 (OpenSSL's libcrypto) checked, an atomic rename, and progress on stderr. */
#include "datasets/fetch.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "datasets/shape.h"
#include "datasets/unpack.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/versions.h"

static int fetch_fail(vb_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fetch_fail(vb_error *err, int code, const char *fmt, ...) {
    char msg[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vb_error_set(err, "fetch", 1, "%s", msg);
    return code;
}

static double now_s(void) { return (double)vb_now_ns() / 1e9; }

const char *vb_fetch_human(double bytes, char *buf, size_t len) {
    static const char *const unit[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (bytes >= 1000 && u < 4) bytes /= 1000, u++;
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
    return buf;
}

/* "1:02:03" or "2:03" */
static const char *clock_of(double s, char *buf, size_t len) {
    if (s < 0 || s > 1e8) return snprintf(buf, len, "?"), buf;
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
    return buf;
}

int vb_fetch_sha256_file(const char *path, char hex[65], vb_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fetch_fail(err, VB_ERROR, "%s: cannot open it to check its sha256: %s", path, strerror(errno));
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char *buf = malloc(1 << 20), md[32];
    unsigned mdlen = 0;
    ssize_t n = 0;
    int ok = ctx && buf && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;
    while (ok && (n = read(fd, buf, 1 << 20)) > 0) ok = EVP_DigestUpdate(ctx, buf, (size_t)n) == 1;
    int rerr = n < 0 ? errno : 0;
    ok = ok && n == 0 && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen == 32;
    EVP_MD_CTX_free(ctx);
    free(buf);
    close(fd);
    if (!ok)
        return fetch_fail(err, VB_ERROR, "%s: cannot read it to check its sha256: %s", path,
                          rerr ? strerror(rerr) : "out of memory or no sha256 in libcrypto");
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return VB_OK;
}

int vb_fetch_recorded_sha256(const char *path, char hex[65]) {
    char side[PATH_MAX + 8];
    snprintf(side, sizeof side, "%s.sha256", path);
    FILE *f = fopen(side, "r");
    if (!f) return -1;
    int n = fscanf(f, "%64[0-9a-fA-F]", hex);
    fclose(f);
    if (n != 1 || strlen(hex) != 64) return -1;
    for (char *p = hex; *p; p++)
        if (*p >= 'A' && *p <= 'F') *p = (char)(*p - 'A' + 'a');
    return 0;
}

/* path.sha256, written whole (a temporary file renamed), in sha256sum's format so `sha256sum -c` reads it. */
static int record_sha256(const char *path, const char *hex, vb_error *err) {
    char side[PATH_MAX + 8], tmp[PATH_MAX + 16];
    snprintf(side, sizeof side, "%s.sha256", path);
    snprintf(tmp, sizeof tmp, "%s.tmp", side);
    const char *base = strrchr(path, '/');
    FILE *f = fopen(tmp, "w");
    int ok = f && fprintf(f, "%s  %s\n", hex, base ? base + 1 : path) > 0;
    ok = f && fclose(f) == 0 && ok;
    if (!ok || rename(tmp, side) != 0) {
        unlink(tmp);
        return fetch_fail(err, VB_ERROR, "%s: cannot record the checksum: %s", side, strerror(errno));
    }
    return VB_OK;
}

/* ---- one transfer -------------------------------------------------------------------------------------------- */

typedef struct xfer {
    int fd;
    uint64_t offset;      /* bytes of .part before this transfer */
    uint64_t got;         /* bytes this transfer wrote */
    uint64_t size;        /* the whole file, 0: unknown */
    const char *label;
    FILE *say;
    int tty, quiet, drawn;
    double t0, last, every;
    int werr;
    uint64_t limit;       /* a cut: stop at this byte of the file (a Range request), 0: the whole file */
    int full;             /* the limit is reached */
    int checked;          /* the response was checked at its first bytes */
    CURL *h;
} xfer;

static size_t on_data(char *p, size_t sz, size_t n, void *arg) {
    xfer *x = arg;
    size_t len = sz * n, done = 0;
    if (x->limit && !x->checked) {
        x->checked = 1;
        long code = 0;
        curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
        if (code == 200 && x->offset) {   /* an HTTP server that ignored the Range: its bytes start at the first */
            if (ftruncate(x->fd, 0) != 0 || lseek(x->fd, 0, SEEK_SET) != 0) {
                x->werr = errno;
                return 0;
            }
            x->offset = 0;
        }
    }
    if (x->limit && x->offset + x->got + len >= x->limit) {
        /* a cut: keep what is before the limit, then stop (libcurl ends with CURLE_WRITE_ERROR, x->full says why) */
        len = (size_t)(x->limit - x->offset - x->got);
        x->full = 1;
    }
    while (done < len) {
        ssize_t w = write(x->fd, p + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            x->werr = w < 0 ? errno : ENOSPC;
            return 0;   /* libcurl stops with CURLE_WRITE_ERROR */
        }
        done += (size_t)w;
    }
    x->got += len;
    return x->full ? 0 : len;
}

static void draw(xfer *x, curl_off_t dltotal, int final) {
    double t = now_s();
    if (x->quiet || (!final && t - x->last < x->every)) return;
    x->last = t;
    uint64_t total = x->size ? x->size : dltotal > 0 ? x->offset + (uint64_t)dltotal : 0;
    uint64_t have = x->offset + x->got;
    double el = t - x->t0, rate = el > 0 ? x->got / el : 0;
    char a[32], b[32], r[32], eta[32];
    vb_fetch_human((double)have, a, sizeof a);
    vb_fetch_human((double)total, b, sizeof b);
    vb_fetch_human(rate, r, sizeof r);
    clock_of(total && rate > 0 ? (double)(total - (have < total ? have : total)) / rate : -1, eta, sizeof eta);
    int pct = total ? (int)(100.0 * have / total) : -1;
    if (x->tty) {
        char bar[25];
        int fill = pct < 0 ? 0 : pct * 24 / 100;
        for (int i = 0; i < 24; i++) bar[i] = i < fill ? '=' : ' ';
        bar[24] = '\0';
        fprintf(x->say, "\r%-30.30s %3d%% [%s] %s / %s  %s/s  ETA %s\033[K", x->label, pct < 0 ? 0 : pct, bar, a,
                total ? b : "?", r, eta);
        if (final) fputc('\n', x->say);
        x->drawn = 1;
    } else {
        if (pct >= 0)
            fprintf(x->say, "fetch %s: %d%%, %s of %s, %s/s, ETA %s\n", x->label, pct, a, b, r, eta);
        else
            fprintf(x->say, "fetch %s: %s, %s/s\n", x->label, a, r);
    }
    fflush(x->say);
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    (void)dlnow, (void)ultotal, (void)ulnow;
    draw(arg, dltotal, 0);
    return 0;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_start(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

/* Transfer errors after which the same request can simply resume. */
static int transient(CURLcode rc) {
    switch (rc) {
    case CURLE_PARTIAL_FILE: case CURLE_RECV_ERROR: case CURLE_SEND_ERROR: case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING: case CURLE_COULDNT_CONNECT: case CURLE_HTTP2: case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
        return 1;
    default:
        return 0;
    }
}

/* One request from x->offset. *announced: the whole size the server told (0: none). */
static CURLcode transfer(const char *url, xfer *x, uint64_t *announced, long *http, char *ebuf) {
    CURL *h = curl_easy_init();
    if (!h) return CURLE_OUT_OF_MEMORY;
    char ua[64];
    snprintf(ua, sizeof ua, "vbench/%s", vb_git_revision());
    long stall = getenv("VBENCH_FETCH_STALL_S") ? atol(getenv("VBENCH_FETCH_STALL_S")) : 120;
    ebuf[0] = '\0';
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
    /* a transfer that moves nothing for `stall` seconds is broken off (and resumed when retries remain) */
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, stall > 0 ? stall : 120L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, ua);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
    char range[64];
    if (x->limit) {   /* a cut: these bytes only (HTTP Range; libcurl does the same for file:// and ftp://) */
        snprintf(range, sizeof range, "%llu-%llu", (unsigned long long)x->offset, (unsigned long long)x->limit - 1);
        curl_easy_setopt(h, CURLOPT_RANGE, range);
    } else {
        curl_easy_setopt(h, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)x->offset);
    }
    x->h = h;
    x->t0 = x->last = now_s();
    x->got = 0;
    x->full = x->checked = 0;
    CURLcode rc = curl_easy_perform(h);
    curl_off_t cl = -1;
    curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
    *announced = cl >= 0 ? x->offset + (uint64_t)cl : 0;
    *http = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, http);
    curl_easy_cleanup(h);
    if (!ebuf[0]) snprintf(ebuf, CURL_ERROR_SIZE, "%s", curl_easy_strerror(rc));
    return rc;
}

/* ---- verification -------------------------------------------------------------------------------------------- */

/* Checks file (the download or the cached copy) against size and sha256 (the published one, else the one recorded
 * beside dest). what: "the download of URL" or "the copy in the cache". Fills got[65]; *recorded says whether no
 * checksum was known (the caller records got). */
static int verify(const char *file, const char *dest, const char *what, uint64_t size, const char *sha256,
                  char got[65], int *unknown, const char **whencep, vb_error *err) {
    struct stat st;
    if (stat(file, &st) != 0) return fetch_fail(err, VB_ERROR, "%s: %s", file, strerror(errno));
    char want[65] = "";
    const char *whence = "published";
    if (sha256) snprintf(want, sizeof want, "%s", sha256);
    else if (vb_fetch_recorded_sha256(dest, want) == 0) whence = "recorded at its first fetch";
    *whencep = whence;
    if (size && (uint64_t)st.st_size != size)
        return fetch_fail(err, VB_ERROR, "%s: %s has %llu bytes, expected %llu", file, what,
                          (unsigned long long)st.st_size, (unsigned long long)size);
    if (vb_fetch_sha256_file(file, got, err)) return VB_ERROR;
    *unknown = !want[0];
    if (want[0] && strcasecmp(want, got) != 0)
        return fetch_fail(err, VB_ERROR, "%s: %s has sha256 %s, expected %s (%s%s%s)", file, what, got, want,
                          whence, sha256 ? "" : " in ", sha256 ? "" : dest);
    return VB_OK;
}

static void note(const vb_fetch_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(const vb_fetch_opts *o, const char *fmt, ...) {
    if (o->quiet) return;
    FILE *f = o->say ? o->say : stderr;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fflush(f);
}


/* dest already here: checked, or its checksum recorded when none is known. */
static int verify_cached(const char *dest, uint64_t size, const char *sha256, const vb_fetch_opts *o,
                         vb_error *err) {
    char got[65];
    int unknown = 0;
    const char *whence = NULL;
    if (verify(dest, dest, "the copy in the cache", size, sha256, got, &unknown, &whence, err) != VB_OK) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        return fetch_fail(err, VB_ERROR, "%s; refused: it is damaged or another file: delete it (rm %s) and fetch "
                          "again", msg, dest);
    }
    if (unknown) {
        if (record_sha256(dest, got, err)) return VB_ERROR;
        note(o, "%s: already here, unverified (no published checksum; sha256 %s recorded in %s.sha256)", dest, got,
             dest);
    } else {
        note(o, "%s: already here, verified (sha256 %s, %s)", dest, got, whence);
    }
    return VB_OK;
}

/* A cut's header in .part (its first 8 bytes): the dimension the registry says (when it says one) and at least the
 * rows the cut takes (exactly them once rewritten). Fills *size, the cut's bytes. */
static int cut_header(int fd, const char *part, const char *url, const vb_fetch_cut *cut, uint64_t *size,
                      vb_error *err) {
    uint32_t h[2];
    if (pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h)
        return fetch_fail(err, VB_ERROR, "%s: cannot read the header it fetched: %s", part, strerror(errno));
    if (h[1] == 0 || h[1] > 65536 || (cut->dim && h[1] != cut->dim) || h[0] < cut->rows)
        return fetch_fail(err, VB_ERROR, "%s: the header of %s says %u rows x %u dims; a cut of its first %llu rows%s%llu "
                          "dims needs at least those rows: is it a big-ann .fbin/.u8bin file?", part, url,
                          h[0], h[1], (unsigned long long)cut->rows, cut->dim ? " of " : "",
                          (unsigned long long)cut->dim);
    *size = 8 + cut->rows * h[1] * cut->elem;
    return VB_OK;
}

int vb_fetch_file(const char *url, const char *dest, uint64_t size, const char *sha256, const vb_fetch_opts *o,
                  vb_error *err) {
    return vb_fetch_file_cut(url, dest, NULL, size, sha256, o, err);
}

int vb_fetch_file_cut(const char *url, const char *dest, const vb_fetch_cut *cut, uint64_t size, const char *sha256,
                      const vb_fetch_opts *o, vb_error *err) {
    static const vb_fetch_opts none = {0};
    if (!o) o = &none;
    struct stat st;
    if (stat(dest, &st) == 0) return verify_cached(dest, size, sha256, o, err);
    pthread_once(&curl_once, curl_start);

    char part[PATH_MAX + 8], bad[PATH_MAX + 8];
    snprintf(part, sizeof part, "%s.part", dest);
    snprintf(bad, sizeof bad, "%s.bad", dest);
    int fd = open(part, O_RDWR | O_CREAT | O_CLOEXEC, 0644);   /* read too: a cut's header */
    if (fd < 0)
        return fetch_fail(err, VB_ERROR, "%s: cannot write the download: %s (check the cache directory, "
                          "--cache-dir or $VBENCH_CACHE)", part, strerror(errno));
    /* one fetch per file: a second vbench fetching the same file would write into the same .part */
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        return fetch_fail(err, VB_ERROR, "%s: another vbench is downloading this file now; wait for it to finish",
                          part);
    }
    off_t end = lseek(fd, 0, SEEK_END);
    if (end < 0 || (size && (uint64_t)end > size)) {   /* longer than the file: not a prefix of it */
        if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) end = -1;
        else end = 0;
    }
    xfer x = {.fd = fd, .offset = end > 0 ? (uint64_t)end : 0, .size = size, .say = o->say ? o->say : stderr,
              .quiet = o->quiet};
    if (cut) {
        /* the header first (8 bytes) when the cut's size is not known yet; it says the dimension */
        if (!size && x.offset >= 8 && cut_header(fd, part, url, cut, &size, err) != VB_OK) {
            close(fd);
            unlink(part);   /* not the start of a big-ann file: nothing worth resuming */
            return VB_ERROR;
        }
        x.size = size;
        x.limit = size ? size : 8;
    }
    const char *slash = strrchr(dest, '/');
    x.label = slash ? slash + 1 : dest;
    x.tty = isatty(fileno(x.say));
    x.every = x.tty ? 0.25 : (getenv("VBENCH_PROGRESS_S") ? atof(getenv("VBENCH_PROGRESS_S")) : 10);
    char a[32], b[32];
    if (x.offset) note(o, "%s: resuming at %s of %s from %s", dest, vb_fetch_human((double)x.offset, a, sizeof a),
                       size ? vb_fetch_human((double)size, b, sizeof b) : "?", url);
    else if (cut) note(o, "%s: fetching the first %llu rows of %s (%s, a Range request)", dest,
                       (unsigned long long)cut->rows, url, size ? vb_fetch_human((double)size, b, sizeof b) : "size from its header");
    else note(o, "%s: fetching %s (%s)", dest, url, size ? vb_fetch_human((double)size, b, sizeof b) : "size not known yet");

    uint64_t announced = 0;
    int restarted = 0;
    for (int attempt = 0;; attempt++) {
        if (size && x.offset == size) break;   /* the whole file is in .part already: verify it */
        char ebuf[CURL_ERROR_SIZE];
        long http = 0;
        CURLcode rc = transfer(url, &x, &announced, &http, ebuf);
        if (x.got || rc == CURLE_OK) draw(&x, announced > x.offset ? (curl_off_t)(announced - x.offset) : 0, 1);
        else if (x.drawn) fputc('\n', x.say);
        x.offset += x.got;
        if (cut && (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && x.full)) && !size && x.offset >= 8) {
            /* the header is here: now the cut's size is known, fetch the rest of it */
            if (cut_header(fd, part, url, cut, &size, err) != VB_OK) {
                close(fd);
                unlink(part);
                return VB_ERROR;
            }
            x.size = x.limit = size;
            attempt--;
            continue;
        }
        if (rc == CURLE_WRITE_ERROR && x.full) rc = CURLE_OK;
        if (rc == CURLE_OK && cut && x.offset < size) rc = CURLE_PARTIAL_FILE;   /* the source is shorter */
        if (rc == CURLE_OK) break;
        if (rc == CURLE_RANGE_ERROR && !restarted) {
            /* the server cannot resume: start again from the first byte */
            note(o, "%s: %s cannot resume (no HTTP Range support); starting again from the first byte", dest, url);
            restarted = 1;
            if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) {
                close(fd);
                return fetch_fail(err, VB_ERROR, "%s: cannot truncate: %s", part, strerror(errno));
            }
            x.offset = 0;
            attempt--;
            continue;
        }
        if (rc == CURLE_WRITE_ERROR && x.werr) {
            close(fd);
            return fetch_fail(err, VB_ERROR, "%s: cannot write the download: %s (%s kept; free space and run the "
                              "same command again to resume)", part, strerror(x.werr), part);
        }
        if (!transient(rc)) {
            if (x.offset == 0) unlink(part);   /* nothing came: leave no empty .part behind */
            close(fd);
            return fetch_fail(err, VB_ERROR, "cannot fetch %s: %s (check the address; a machine without internet "
                              "takes --mirror URL|DIR, a place holding %s)", url, ebuf, x.label);
        }
        if (attempt >= o->retries) {
            close(fd);
            return fetch_fail(err, VB_RETRY, "the transfer of %s broke off at %s of %s (%s); %s is kept: run the "
                              "same command again to resume from there", url, vb_fetch_human((double)x.offset, a, sizeof a),
                              size || announced ? vb_fetch_human((double)(size ? size : announced), b, sizeof b) : "?", ebuf,
                              part);
        }
        unsigned wait = attempt < 5 ? 1u << attempt : 30;
        note(o, "%s: the transfer broke off at %s (%s); resuming in %u s (attempt %d of %d)", dest,
             vb_fetch_human((double)x.offset, a, sizeof a), ebuf, wait, attempt + 2, o->retries + 1);
        sleep(wait);
    }
    if (cut) {
        /* the cut's header says its own rows (as big-ann-benchmarks' prepare() writes it) */
        uint32_t rows32 = (uint32_t)cut->rows;
        if (cut_header(fd, part, url, cut, &size, err) != VB_OK) {
            char msg[sizeof err->message];
            snprintf(msg, sizeof msg, "%s", err->message);
            close(fd);
            rename(part, bad);
            return fetch_fail(err, VB_ERROR, "%s (refused and moved to %s)", msg, bad);
        }
        if (pwrite(fd, &rows32, 4, 0) != 4) {
            close(fd);
            return fetch_fail(err, VB_ERROR, "%s: cannot write its header: %s", part, strerror(errno));
        }
    }
    int synced = fsync(fd);
    close(fd);
    if (synced != 0) return fetch_fail(err, VB_ERROR, "%s: cannot write the download: %s", part, strerror(errno));

    /* the size the registry knows, else the one the server announced */
    uint64_t want_size = size ? size : announced;
    char what[PATH_MAX + 64], got[65];
    snprintf(what, sizeof what, "the download of %s", url);
    int unknown = 0;
    const char *whence = NULL;
    if (verify(part, dest, what, want_size, sha256, got, &unknown, &whence, err) != VB_OK) {
        rename(part, bad);
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        return fetch_fail(err, VB_ERROR, "%s; refused and moved to %s: the copy at the source is damaged or is "
                          "another file: fetch it from another mirror (--mirror URL|DIR)%s", msg, bad,
                          whence && !sha256 && strcmp(whence, "published") != 0
                              ? ", or delete the recorded .sha256 if it is the wrong one" : "");
    }
    if (unknown && record_sha256(dest, got, err)) return VB_ERROR;
    if (rename(part, dest) != 0)
        return fetch_fail(err, VB_ERROR, "%s: cannot rename it to %s: %s", part, dest, strerror(errno));
    vb_fsync_dir_of(dest);   /* the rename survives a power cut */
    if (unknown)
        note(o, "%s: fetched, %s, unverified: no published checksum; sha256 %s recorded in %s.sha256 (later fetches "
             "and copies are checked against it)", dest, vb_fetch_human((double)x.offset, a, sizeof a), got, dest);
    else
        note(o, "%s: fetched, %s, verified (sha256 %s, %s)", dest, vb_fetch_human((double)x.offset, a, sizeof a), got, whence);
    return VB_OK;
}

void vb_fetch_source_url(const vb_registry_file *f, const char *mirror, char *buf, size_t len) {
    const char *name = f->archive ? f->archive : f->file;   /* a mirror holds an archive, not its members */
    if (!mirror || !*mirror) {
        snprintf(buf, len, "%s", f->url);
        return;
    }
    size_t n = strlen(mirror);
    const char *sep = n && mirror[n - 1] == '/' ? "" : "/";
    if (strstr(mirror, "://")) {
        snprintf(buf, len, "%s%s%s", mirror, sep, name);
        return;
    }
    /* a directory: file:// with its absolute path */
    char abs[PATH_MAX];
    if (!realpath(mirror, abs)) snprintf(abs, sizeof abs, "%s", mirror);
    snprintf(buf, len, "file://%s/%s", abs, name);
}

int vb_fetch_registry(const vb_registry_entry *e, const char *datasets_dir, const vb_fetch_opts *o, vb_error *err) {
    size_t n = vb_registry_n_files(e);
    if (!vb_registry_verified(e) && !(o && o->quiet))
        fprintf(o && o->say ? o->say : stderr,
                "%s: unverified: %s publishes no checksum for it; checked on first fetch and recorded (FILE.sha256)\n",
                e->name, e->origin);
    vb_unpack_member todo[VB_REGISTRY_MAX_FILES];
    char dests[VB_REGISTRY_MAX_FILES][PATH_MAX + 256], archive[PATH_MAX + 256] = "";
    size_t n_todo = 0;
    for (size_t i = 0; i < n; i++) {
        const vb_registry_file *f = &e->files[i];
        char url[PATH_MAX + 512];
        struct stat st;
        vb_fetch_source_url(f, o ? o->mirror : NULL, url, sizeof url);
        snprintf(dests[i], sizeof dests[i], "%s/%s", datasets_dir, f->file);
        int rc;
        if (f->member) {
            /* the archive is fetched, or verified when it is here, once; the members not here are unpacked from it
             * below (a member here was renamed only when whole). Members here without their archive (deleted to
             * save space) are kept as they are. */
            char a[PATH_MAX + 256];
            snprintf(a, sizeof a, "%s/%s", datasets_dir, f->archive);
            int have = stat(dests[i], &st) == 0;
            if (have && stat(a, &st) != 0) continue;
            if (archive[0] && strcmp(a, archive) != 0)
                return fetch_fail(err, VB_ERROR, "%s: registry entry names two archives (datasets/registry.c)", e->name);
            if (!archive[0] && (rc = vb_fetch_file(url, a, 0, NULL, o, err)) != VB_OK) return rc;
            snprintf(archive, sizeof archive, "%s", a);
            if (!have) todo[n_todo++] = (vb_unpack_member){f->member, dests[i], f->size};
            continue;
        }
        if (f->cut_rows) {
            vb_fetch_cut cut = {f->cut_rows, e->dim, vb_registry_bin_elem(f->file)};
            rc = vb_fetch_file_cut(url, dests[i], &cut, f->size, f->sha256, o, err);
        } else {
            rc = vb_fetch_file(url, dests[i], f->size, f->sha256, o, err);
        }
        if (rc != VB_OK) return rc;
    }
    if (n_todo) {
        note(o ? o : &(vb_fetch_opts){0}, "%s: unpacking %zu file%s", archive, n_todo, n_todo == 1 ? "" : "s");
        if (vb_unpack_members(archive, todo, n_todo, err) != VB_OK) return VB_ERROR;
    }
    return vb_registry_check_shape(e, datasets_dir, 1, err);
}
