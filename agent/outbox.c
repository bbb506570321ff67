/* The agent's on-disk outbox (see outbox.h for the contract and the file format). */
#include "agent/outbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "util/clock.h"
#include "util/fs.h"

#define DOMAIN "outbox"
#define MAGIC "VBOUTBOX"
#define FORMAT 1u
#define HEADER_BYTES 36        /* magic 8, format 4, seq 8, key length 4, body length 4, checksum 8 */
#define MAX_KEY 4096
#define MAX_BODY (64u << 20)   /* the wire's limit (proto/wire.h) */

typedef struct entry {
    char *key;
    unsigned char *data;
    size_t len;
    uint64_t seq;
    char file[32];
} entry;

struct vb_outbox {
    char dir[1024];
    int lock_fd;
    entry *e;
    size_t n, cap;
    uint64_t next_seq;
    vb_outbox_report_fn report;
    void *report_arg;
};

/* ---- helpers ------------------------------------------------------------------------------------------------ */

static uint64_t checksum(const char *key, size_t key_len, const void *data, size_t len) {
    XXH64_state_t *st = XXH64_createState();
    XXH64_reset(st, 0);
    XXH64_update(st, key, key_len);
    XXH64_update(st, data, len);
    uint64_t h = XXH64_digest(st);
    XXH64_freeState(st);
    return h;
}

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

const char *vb_outbox_file_name(const char *key, char *buf, size_t len) {
    snprintf(buf, len, "%016llx.pb", (unsigned long long)XXH64(key, strlen(key), 0));
    return buf;
}

static int write_all(int fd, const void *buf, size_t len) {
    const unsigned char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static ssize_t find(const vb_outbox *o, const char *key) {
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->e[i].key, key) == 0) return (ssize_t)i;
    return -1;
}

static void entry_free(entry *e) {
    free(e->key);
    free(e->data);
    memset(e, 0, sizeof *e);
}

static void remove_at(vb_outbox *o, size_t i) {
    entry_free(&o->e[i]);
    memmove(&o->e[i], &o->e[i + 1], (o->n - i - 1) * sizeof *o->e);
    o->n--;
}

static int append(vb_outbox *o, entry *e) {
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 16;
        entry *ne = realloc(o->e, cap * sizeof *ne);
        if (!ne) return -1;
        o->e = ne;
        o->cap = cap;
    }
    o->e[o->n++] = *e;
    return 0;
}

/* Moves DIR/name to DIR/corrupt/name (unique if taken) and reports it. */
static void set_aside_file(vb_outbox *o, const char *name, const char *why) {
    char cdir[1100], from[1100], to[1200];
    snprintf(cdir, sizeof cdir, "%s/corrupt", o->dir);
    mkdir(cdir, 0700);
    snprintf(from, sizeof from, "%s/%s", o->dir, name);
    snprintf(to, sizeof to, "%s/%s", cdir, name);
    for (int k = 1; access(to, F_OK) == 0 && k < 1000; k++) snprintf(to, sizeof to, "%s/%s.%d", cdir, name, k);
    const char *where = to;
    if (rename(from, to) != 0) {
        unlink(from);   /* cannot keep it aside: never load it again either */
        where = from;
    }
    vb_fsync_dir(o->dir);
    if (o->report) o->report(o->report_arg, where, why);
}

/* Reads and checks one file; on success fills e (owning key and data). why receives the reason otherwise. */
static int load_file(const char *path, entry *e, char *why, size_t why_len) {
    memset(e, 0, sizeof *e);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_len, "cannot be read: %s", strerror(errno));
        return -1;
    }
    unsigned char h[HEADER_BYTES];
    int rc = -1;
    if (fread(h, 1, sizeof h, f) != sizeof h) {
        snprintf(why, why_len, "truncated header");
    } else if (memcmp(h, MAGIC, 8) != 0) {
        snprintf(why, why_len, "not an outbox file (bad magic)");
    } else if (get_u32(h + 8) != FORMAT) {
        snprintf(why, why_len, "unknown format %u", get_u32(h + 8));
    } else {
        uint64_t seq = get_u64(h + 12);
        uint32_t key_len = get_u32(h + 20), len = get_u32(h + 24);
        uint64_t sum = get_u64(h + 28);
        if (key_len == 0 || key_len > MAX_KEY || len > MAX_BODY) {
            snprintf(why, why_len, "impossible lengths (key %u, body %u bytes)", key_len, len);
        } else {
            char *key = malloc(key_len + 1);
            unsigned char *data = malloc(len ? len : 1);
            int extra = 0;
            if (fread(key, 1, key_len, f) != key_len || fread(data, 1, len, f) != len) {
                snprintf(why, why_len, "truncated (shorter than its header says)");
            } else if ((extra = fgetc(f)) != EOF) {
                snprintf(why, why_len, "longer than its header says");
            } else if (checksum(key, key_len, data, len) != sum) {
                snprintf(why, why_len, "checksum mismatch");
            } else if (memchr(key, '\0', key_len)) {
                snprintf(why, why_len, "key holds a NUL byte");
            } else {
                key[key_len] = '\0';
                *e = (entry){.key = key, .data = data, .len = len, .seq = seq};
                key = NULL;
                data = NULL;
                rc = 0;
            }
            free(key);
            free(data);
        }
    }
    fclose(f);
    return rc;
}

static int by_seq(const void *a, const void *b) {
    const entry *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ---- API -------------------------------------------------------------------------------------------------- */

vb_outbox *vb_outbox_open(const char *dir, int lock_wait_ms, vb_outbox_report_fn report, void *arg, vb_error *err) {
    if (strlen(dir) > 900) {
        vb_error_set(err, DOMAIN, ENAMETOOLONG, "outbox directory name too long: %s", dir);
        return NULL;
    }
    if (vb_mkdirs(dir, 0700, err) != VB_OK) return NULL;
    vb_outbox *o = calloc(1, sizeof *o);
    snprintf(o->dir, sizeof o->dir, "%s", dir);
    o->report = report;
    o->report_arg = arg;
    o->next_seq = 1;
    char lock[1100];
    snprintf(lock, sizeof lock, "%s/.lock", dir);
    o->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (o->lock_fd < 0) {
        vb_error_set(err, DOMAIN, errno, "cannot open %s: %s", lock, strerror(errno));
        free(o);
        return NULL;
    }
    uint64_t deadline = vb_now_ns() + (uint64_t)(lock_wait_ms > 0 ? lock_wait_ms : 0) * 1000000ull;
    while (flock(o->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK || vb_now_ns() >= deadline) {
            vb_error_set(err, DOMAIN, errno, "the outbox %s is in use by another agent process (same --id and "
                         "--workdir); each agent needs its own", dir);
            close(o->lock_fd);
            free(o);
            return NULL;
        }
        vb_sleep_ns(50000000ull);
    }
    DIR *d = opendir(dir);
    if (!d) {
        vb_error_set(err, DOMAIN, errno, "cannot read %s: %s", dir, strerror(errno));
        vb_outbox_close(&o);
        return NULL;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *name = de->d_name;
        size_t l = strlen(name);
        char path[1400], why[200];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (strncmp(name, ".tmp-", 5) == 0) {
            unlink(path);   /* an unfinished write of a process that died: never renamed into place */
            continue;
        }
        if (name[0] == '.' || l < 4 || strcmp(name + l - 3, ".pb") != 0 || l >= sizeof o->e[0].file) continue;
        entry e;
        if (load_file(path, &e, why, sizeof why) != 0) {
            set_aside_file(o, name, why);
            continue;
        }
        if (find(o, e.key) >= 0) {   /* only if files were copied by hand: the name is the key's hash */
            entry_free(&e);
            set_aside_file(o, name, "a second file for a key already loaded");
            continue;
        }
        memcpy(e.file, name, l + 1);   /* l < sizeof e.file: checked above */
        if (append(o, &e) != 0) {
            entry_free(&e);
            break;
        }
        if (e.seq >= o->next_seq) o->next_seq = e.seq + 1;
    }
    closedir(d);
    if (o->n > 1) qsort(o->e, o->n, sizeof *o->e, by_seq);
    return o;
}

void vb_outbox_close(vb_outbox **o) {
    if (!o || !*o) return;
    for (size_t i = 0; i < (*o)->n; i++) entry_free(&(*o)->e[i]);
    free((*o)->e);
    if ((*o)->lock_fd >= 0) close((*o)->lock_fd);   /* releases the flock */
    free(*o);
    *o = NULL;
}

int vb_outbox_put(vb_outbox *o, const char *key, const void *data, size_t len, vb_error *err) {
    size_t key_len = strlen(key);
    if (key_len == 0 || key_len > MAX_KEY || len > MAX_BODY)
        return vb_error_set(err, DOMAIN, EINVAL, "cannot keep a message with a %zu byte key and %zu byte body",
                            key_len, len);
    char name[32], tmp[1100], final[1100];
    vb_outbox_file_name(key, name, sizeof name);
    ssize_t old = find(o, key);
    for (size_t i = 0; i < o->n; i++)
        if ((ssize_t)i != old && strcmp(o->e[i].file, name) == 0)
            return vb_error_set(err, DOMAIN, EEXIST, "keys %s and %s have the same file name %s", key, o->e[i].key, name);
    snprintf(tmp, sizeof tmp, "%s/.tmp-%s", o->dir, name);
    snprintf(final, sizeof final, "%s/%s", o->dir, name);
    unsigned char h[HEADER_BYTES];
    memcpy(h, MAGIC, 8);
    put_u32(h + 8, FORMAT);
    put_u64(h + 12, o->next_seq);
    put_u32(h + 20, (uint32_t)key_len);
    put_u32(h + 24, (uint32_t)len);
    put_u64(h + 28, checksum(key, key_len, data, len));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return vb_error_set(err, DOMAIN, errno, "cannot create %s: %s", tmp, strerror(errno));
    if (write_all(fd, h, sizeof h) || write_all(fd, key, key_len) || write_all(fd, data, len) || fsync(fd)) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return vb_error_set(err, DOMAIN, e, "cannot write %s: %s", tmp, strerror(e));
    }
    close(fd);
    if (rename(tmp, final) != 0) {
        int e = errno;
        unlink(tmp);
        return vb_error_set(err, DOMAIN, e, "cannot rename %s into place: %s", tmp, strerror(e));
    }
    if (vb_fsync_dir(o->dir) != 0) return vb_error_set(err, DOMAIN, errno, "cannot sync %s: %s", o->dir, strerror(errno));
    entry e = {.key = strdup(key), .data = malloc(len ? len : 1), .len = len, .seq = o->next_seq++};
    memcpy(e.data, data, len);
    snprintf(e.file, sizeof e.file, "%s", name);
    if (old >= 0) remove_at(o, (size_t)old);   /* its file was just replaced */
    if (append(o, &e) != 0) {
        entry_free(&e);
        return vb_error_set(err, DOMAIN, ENOMEM, "out of memory");
    }
    return VB_OK;
}

int vb_outbox_ack(vb_outbox *o, const char *key) {
    ssize_t i = find(o, key);
    if (i < 0) return 0;
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", o->dir, o->e[i].file);
    unlink(path);   /* not synced: should it come back after a power loss, it is resent and ignored as a duplicate */
    remove_at(o, (size_t)i);
    return 1;
}

int vb_outbox_set_aside(vb_outbox *o, const char *key, const char *why) {
    ssize_t i = find(o, key);
    if (i < 0) return 0;
    char name[32];
    snprintf(name, sizeof name, "%s", o->e[i].file);
    remove_at(o, (size_t)i);
    set_aside_file(o, name, why);
    return 1;
}

size_t vb_outbox_count(const vb_outbox *o) { return o ? o->n : 0; }
const char *vb_outbox_key(const vb_outbox *o, size_t i) { return i < o->n ? o->e[i].key : NULL; }
const char *vb_outbox_dir(const vb_outbox *o) { return o->dir; }

const void *vb_outbox_data(const vb_outbox *o, size_t i, size_t *len) {
    if (i >= o->n) return NULL;
    if (len) *len = o->e[i].len;
    return o->e[i].data;
}
