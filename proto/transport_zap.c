/* The coordinator's side of transport security: its ROUTER's set-up and a ZAP handler (RFC 27/ZAP) of our own.
 *
 * libzmq asks the handler about every CURVE client during the handshake: a request on a REP socket bound to
 * inproc://zeromq.zap.01 carrying the client's long-term public key. We answer 200 for keys on the allow-list
 * and 400 otherwise, and report every decision through the caller's callback, in the caller's thread: the
 * coordinator polls the handler in its main loop (a handshake waits at most one loop turn), which keeps the
 * events table single-threaded. A socket monitor on the ROUTER adds the failures ZAP never sees: clients that
 * do not hold this coordinator's public key (the handshake fails before any key is known) and plain clients.
 * Every decision is counted per source and reported at most once a minute (transport.h, "Reports"): libzmq
 * reconnects a refused client every 100 ms, and a hostile one can open thousands of connections; the events table
 * and the terminal get a handful of lines with counts, never one row each. */
#include "proto/transport.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DOMAIN "transport"
#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define REPORT_MS (VB_TRANSPORT_REPORT_S * 1000ull)

/* One source of decisions, counted between two reports. */
typedef struct tally {
    char source[VB_TRANSPORT_KEY_LEN + 300];   /* "" for a free slot; else verdict and key, or verdict and kind */
    vb_transport_peer last;                    /* the latest decision: what the next report says */
    unsigned pending;                          /* decisions since the last report */
    uint64_t reported_ms;                      /* the last report */
} tally;

typedef struct allow_entry {
    char key[VB_TRANSPORT_KEY_LEN + 1];
    char name[128];
    int pinned;   /* added with vb_transport_zap_allow: survives reloads */
} allow_entry;

struct vb_transport_zap {
    zsock_t *rep;
    vb_transport_monitor *mon;     /* on the ROUTER */
    char server_key[VB_TRANSPORT_KEY_LEN + 1];
    char *allow_dir;
    char **allow_files;
    size_t n_files;
    allow_entry *keys;
    size_t n_keys;
    vb_transport_peer_fn on_peer;
    void *on_peer_arg;
    tally tallies[VB_TRANSPORT_SOURCES];
    tally others[3];                          /* per verdict: sources beyond the ones followed */
    uint64_t window_ms;                       /* start of the minute in which new sources are counted */
    unsigned new_sources;                     /* sources given a tally of their own in that minute */
};

/* ---- the allow-list ------------------------------------------------------------------------------------------ */

static int add_entry(allow_entry **list, size_t *n, const char *key, const char *name, int pinned) {
    allow_entry *grown = realloc(*list, (*n + 1) * sizeof **list);
    if (!grown) return -1;
    *list = grown;
    allow_entry *e = &grown[(*n)++];
    snprintf(e->key, sizeof e->key, "%s", key);
    snprintf(e->name, sizeof e->name, "%s", name ? name : "");
    e->pinned = pinned;
    return 0;
}

static int add_file(allow_entry **list, size_t *n, const char *path, vb_error *err) {
    char key[VB_TRANSPORT_KEY_LEN + 1], name[128];
    if (vb_transport_public_load(path, key, name, err) != VB_OK) return vb_error_prefix(err, "allow-list");
    if (add_entry(list, n, key, name, 0) != 0) return vb_error_set(err, DOMAIN, ENOMEM, "out of memory");
    return VB_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every *.pub regular file of dir, in name order (other files, e.g. a stray .key, are not read). */
static int add_dir(allow_entry **list, size_t *n, const char *dir, vb_error *err) {
    DIR *d = opendir(dir);
    if (!d) return vb_error_set(err, DOMAIN, errno, "cannot read the allow-list directory %s: %s", dir, strerror(errno));
    char **names = NULL;
    size_t nn = 0;
    int rc = VB_OK;
    struct dirent *e;
    while (rc == VB_OK && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".pub") != 0 || e->d_name[0] == '.') continue;
        char **grown = realloc(names, (nn + 1) * sizeof *names);
        if (!grown || !(grown[nn] = strdup(e->d_name))) {
            if (grown) names = grown;
            rc = vb_error_set(err, DOMAIN, ENOMEM, "out of memory");
            break;
        }
        names = grown;
        nn++;
    }
    closedir(d);
    if (rc == VB_OK) qsort(names, nn, sizeof *names, cmp_str);
    for (size_t i = 0; i < nn; i++) {
        char path[PATH_MAX];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (rc == VB_OK && stat(path, &st) == 0 && S_ISREG(st.st_mode)) rc = add_file(list, n, path, err);
        free(names[i]);
    }
    free(names);
    return rc;
}

/* Builds the list from the directory, the files and the pinned keys of the current list; replaces the current
 * list only when everything loaded. */
static int load_allow(vb_transport_zap *z, vb_error *err) {
    allow_entry *list = NULL;
    size_t n = 0;
    int rc = VB_OK;
    if (z->allow_dir) rc = add_dir(&list, &n, z->allow_dir, err);
    for (size_t i = 0; rc == VB_OK && i < z->n_files; i++) rc = add_file(&list, &n, z->allow_files[i], err);
    for (size_t i = 0; rc == VB_OK && i < z->n_keys; i++)
        if (z->keys[i].pinned && add_entry(&list, &n, z->keys[i].key, z->keys[i].name, 1) != 0)
            rc = vb_error_set(err, DOMAIN, ENOMEM, "out of memory");
    if (rc != VB_OK) {
        free(list);
        return VB_ERROR;
    }
    free(z->keys);
    z->keys = list;
    z->n_keys = n;
    return VB_OK;
}

static const allow_entry *find_key(const vb_transport_zap *z, const char *key) {
    for (size_t i = 0; i < z->n_keys; i++)
        if (strcmp(z->keys[i].key, key) == 0) return &z->keys[i];
    return NULL;
}

int vb_transport_zap_reload(vb_transport_zap *zap, vb_error *err) { return load_allow(zap, err); }

const char *vb_transport_zap_name_of(const vb_transport_zap *zap, const char *key) {
    const allow_entry *e = zap && key ? find_key(zap, key) : NULL;
    return e ? e->name : NULL;
}

int vb_transport_zap_allow(vb_transport_zap *zap, const char *key, const char *name, vb_error *err) {
    uint8_t bin[32];
    if (!key || strlen(key) != VB_TRANSPORT_KEY_LEN || !zmq_z85_decode(bin, key))
        return vb_error_set(err, DOMAIN, EINVAL, "\"%s\" is not a 40-character Z85 public key", key ? key : "");
    if (add_entry(&zap->keys, &zap->n_keys, key, name, 1) != 0) return vb_error_set(err, DOMAIN, ENOMEM, "out of memory");
    return VB_OK;
}

size_t vb_transport_zap_count(const vb_transport_zap *zap) { return zap ? zap->n_keys : 0; }
const char *vb_transport_zap_server_key(const vb_transport_zap *zap) { return zap ? zap->server_key : ""; }
zsock_t *vb_transport_zap_sock(vb_transport_zap *zap) { return zap ? zap->rep : NULL; }

/* ---- life cycle --------------------------------------------------------------------------------------------- */

void vb_transport_zap_destroy(vb_transport_zap **zap) {
    if (!zap || !*zap) return;
    vb_transport_zap *z = *zap;
    vb_transport_zap_flush(z);
    vb_transport_monitor_destroy(&z->mon);
    /* Unbinding releases the inproc name now; closing alone releases it later, in libzmq's reaper thread, and a
     * new handler bound right after would find the name still taken. */
    if (z->rep) zsock_unbind(z->rep, ZAP_ENDPOINT);
    zsock_destroy(&z->rep);
    for (size_t i = 0; i < z->n_files; i++) free(z->allow_files[i]);
    free(z->allow_files);
    free(z->allow_dir);
    free(z->keys);
    free(z);
    *zap = NULL;
}

static vb_transport_zap *zap_new(zsock_t *router, const vb_transport_opts *o, const char *server_key, vb_error *err) {
    vb_transport_zap *z = calloc(1, sizeof *z);
    if (!z) {
        vb_error_set(err, DOMAIN, ENOMEM, "out of memory");
        return NULL;
    }
    snprintf(z->server_key, sizeof z->server_key, "%s", server_key);
    z->on_peer = o->on_peer;
    z->on_peer_arg = o->on_peer_arg;
    int rc = VB_OK;
    if (o->allow_dir && !(z->allow_dir = strdup(o->allow_dir))) rc = VB_ERROR;
    for (size_t i = 0; rc == VB_OK && o->allow_files && o->allow_files[i]; i++) {
        char **grown = realloc(z->allow_files, (z->n_files + 1) * sizeof *grown);
        if (!grown || !(grown[z->n_files] = strdup(o->allow_files[i]))) {
            if (grown) z->allow_files = grown;
            rc = VB_ERROR;
            break;
        }
        z->allow_files = grown;
        z->n_files++;
    }
    if (rc != VB_OK) {
        vb_error_set(err, DOMAIN, ENOMEM, "out of memory");
    } else if (load_allow(z, err) == VB_OK) {
        z->rep = zsock_new(ZMQ_REP);
        if (z->rep) zsock_set_linger(z->rep, 0);
        if (!z->rep || zsock_bind(z->rep, ZAP_ENDPOINT) != 0) {
            int e = zmq_errno();
            rc = vb_error_set(err, DOMAIN, e, "cannot start the ZAP handler on %s: %s%s", ZAP_ENDPOINT, zmq_strerror(e),
                              e == EADDRINUSE ? " (another one runs in this process: one CURVE coordinator per "
                                                "process)" : "");
        } else {
            z->mon = vb_transport_monitor_new(router, o, err);
            if (!z->mon) rc = VB_ERROR;
        }
    } else {
        rc = VB_ERROR;
    }
    if (rc != VB_OK) vb_transport_zap_destroy(&z);
    return z;
}

int vb_transport_server_setup(zsock_t *router, const vb_transport_opts *o, vb_transport_zap **zap, vb_error *err) {
    *zap = NULL;
    int curve = o->cert != NULL;
    int has_allow = o->allow_dir || (o->allow_files && o->allow_files[0]);
    if (!curve && has_allow)
        return vb_error_set(err, DOMAIN, EINVAL,
                            "--allow needs --cert FILE.key: the coordinator's own key pair (make one with `vbench "
                            "keys coordinator`)");
    if (curve && !has_allow)
        return vb_error_set(err, DOMAIN, EINVAL,
                            "--cert needs --allow DIR: a directory of the agents' .pub files (made with `vbench keys "
                            "agent-NAME`); without it no agent could connect");
    if (vb_transport_check_endpoint(o->endpoint, curve, o->insecure, 1, err) != VB_OK) return VB_ERROR;
    vb_transport_socket_limits(router, 1);
    vb_transport_zap *z = NULL;
    if (curve) {
        zcert_t *cert = vb_transport_cert_load(o->cert, err);
        if (!cert) return VB_ERROR;
        /* The handler first: a CURVE socket that finds no handler lets every client in. */
        z = zap_new(router, o, zcert_public_txt(cert), err);
        if (!z) {
            zcert_destroy(&cert);
            return VB_ERROR;
        }
        zcert_apply(cert, router);
        zsock_set_curve_server(router, 1);
        zsock_set_zap_domain(router, VB_TRANSPORT_ZAP_DOMAIN);
        zcert_destroy(&cert);
    }
    if (zsock_bind(router, "%s", o->endpoint) < 0) {
        int e = zmq_errno();
        vb_transport_zap_destroy(&z);
        return vb_error_set(err, DOMAIN, e, "cannot bind %s: %s", o->endpoint, zmq_strerror(e));
    }
    *zap = z;
    return VB_OK;
}

/* ---- handling ------------------------------------------------------------------------------------------------- */

static void report(vb_transport_zap *z, const vb_transport_peer *p) {
    if (z->on_peer) z->on_peer(z->on_peer_arg, p);
}

/* Reports what t counted since its last report (nothing when it counted nothing) and starts its next minute. */
static void tally_report(vb_transport_zap *z, tally *t, uint64_t now) {
    if (t->pending) {
        vb_transport_peer p = t->last;
        p.count = t->pending;
        p.window_s = (unsigned)((now - t->reported_ms + 999) / 1000);
        t->pending = 0;
        report(z, &p);
    }
    t->reported_ms = now;
}

/* Counts one decision of source: the first of a source is reported at once, the next ones at most once a minute
 * (see vb_transport_zap_handle, which reports a minute that is over). */
static void record(vb_transport_zap *z, const char *source, const vb_transport_peer *p) {
    uint64_t now = (uint64_t)zclock_mono();
    tally *t = NULL, *free_slot = NULL, *oldest = NULL;
    for (size_t i = 0; i < VB_TRANSPORT_SOURCES && !t; i++) {
        tally *c = &z->tallies[i];
        if (!c->source[0]) free_slot = free_slot ? free_slot : c;
        else if (strcmp(c->source, source) == 0) t = c;
        else if (!oldest || c->reported_ms < oldest->reported_ms) oldest = c;
    }
    if (!t) {
        if (now - z->window_ms >= REPORT_MS) z->window_ms = now, z->new_sources = 0;
        if (z->new_sources >= VB_TRANSPORT_SOURCES || (!free_slot && oldest && now - oldest->reported_ms < REPORT_MS)) {
            /* Many sources in one minute: count them together, so that a new key per connection is no way around. */
            t = &z->others[p->verdict];
            if (!t->source[0]) {
                snprintf(t->source, sizeof t->source, "others");
                t->reported_ms = now;
            }
            t->last = *p;
            t->last.others = 1;
            t->pending++;
            return;
        }
        if (!free_slot) {   /* the least recent source has been quiet for a minute: its slot is taken over */
            tally_report(z, oldest, now);
            free_slot = oldest;
        }
        t = free_slot;
        t->reported_ms = now;
        snprintf(t->source, sizeof t->source, "%s", source);
        t->last = *p;
        t->pending = 1;
        z->new_sources++;
        tally_report(z, t, now);
        return;
    }
    t->last = *p;
    t->pending++;
    if (now - t->reported_ms >= REPORT_MS) tally_report(z, t, now);
}

/* Reports the minutes that are over (all pending counts when force); frees the slots of sources quiet for two. */
static void report_due(vb_transport_zap *z, int force) {
    uint64_t now = (uint64_t)zclock_mono();
    for (size_t i = 0; i < VB_TRANSPORT_SOURCES + 3; i++) {
        tally *t = i < VB_TRANSPORT_SOURCES ? &z->tallies[i] : &z->others[i - VB_TRANSPORT_SOURCES];
        if (!t->source[0]) continue;
        if (force || (t->pending && now - t->reported_ms >= REPORT_MS)) tally_report(z, t, now);
        else if (!t->pending && now - t->reported_ms >= 2 * REPORT_MS) t->source[0] = '\0';
    }
}

void vb_transport_zap_flush(vb_transport_zap *zap) {
    if (zap) report_due(zap, 1);
}

static void allow_summary(const vb_transport_zap *z, char *buf, size_t len) {
    size_t pinned = 0;
    for (size_t i = 0; i < z->n_keys; i++) pinned += z->keys[i].pinned != 0;
    size_t listed = z->n_keys - pinned;
    int n = snprintf(buf, len, "%zu key%s", listed, listed == 1 ? "" : "s");
    if (n > 0 && (size_t)n < len && z->allow_dir) n += snprintf(buf + n, len - (size_t)n, " from %s", z->allow_dir);
    if (n > 0 && (size_t)n < len && pinned) snprintf(buf + n, len - (size_t)n, ", %zu added by the coordinator", pinned);
}

/* Answers one ZAP request. Frames (RFC 27): version, request id, domain, address, identity, mechanism,
 * credentials... A REP socket must answer whatever it received, so every path sends a reply. */
static void answer(vb_transport_zap *z) {
    zmsg_t *req = zmsg_recv(z->rep);
    if (!req) return;
    char *version = zmsg_popstr(req);
    zframe_t *request_id = zmsg_pop(req);
    char *domain = zmsg_popstr(req), *address = zmsg_popstr(req);
    zframe_t *identity = zmsg_pop(req);
    char *mechanism = zmsg_popstr(req);
    zframe_t *cred = zmsg_pop(req);

    vb_transport_peer p = {.verdict = VB_TRANSPORT_REFUSED, .count = 1};
    snprintf(p.address, sizeof p.address, "%s", address && *address ? address : "a local socket");
    const char *status = "400";
    if (!version || strcmp(version, "1.0") != 0 || !request_id || !mechanism) {
        status = "500";
        snprintf(p.reason, sizeof p.reason, "malformed ZAP request (version %s)", version ? version : "none");
    } else if (!domain || strcmp(domain, VB_TRANSPORT_ZAP_DOMAIN) != 0) {
        snprintf(p.reason, sizeof p.reason, "ZAP domain \"%s\" is not vbench's", domain ? domain : "");
    } else if (strcmp(mechanism, "CURVE") != 0) {
        snprintf(p.reason, sizeof p.reason, "mechanism %s is not accepted: this coordinator requires CURVE", mechanism);
    } else if (!cred || zframe_size(cred) != 32) {
        snprintf(p.reason, sizeof p.reason, "malformed CURVE credentials");
    } else {
        zmq_z85_encode(p.key, zframe_data(cred), 32);
        const allow_entry *e = find_key(z, p.key);
        char summary[PATH_MAX + 32];
        allow_summary(z, summary, sizeof summary);
        if (e) {
            p.verdict = VB_TRANSPORT_ALLOWED;
            status = "200";
            snprintf(p.name, sizeof p.name, "%s", e->name);
            snprintf(p.reason, sizeof p.reason, "the key of %s is on the allow-list", e->name[0] ? e->name : "an agent");
        } else {
            snprintf(p.reason, sizeof p.reason, "the key is not on the allow-list (%.400s)", summary);
        }
    }
    zmsg_t *rep = zmsg_new();
    zmsg_addstr(rep, "1.0");
    if (request_id) zmsg_append(rep, &request_id);
    else zmsg_addmem(rep, "", 0);
    zmsg_addstr(rep, status);
    zmsg_addstr(rep, p.verdict == VB_TRANSPORT_ALLOWED ? "OK" : p.reason);
    zmsg_addstr(rep, p.verdict == VB_TRANSPORT_ALLOWED ? p.key : "");   /* User-Id of the peer's messages */
    zmsg_addmem(rep, "", 0);                                            /* no metadata */
    zmsg_send(&rep, z->rep);

    free(version);
    free(domain);
    free(address);
    free(mechanism);
    zframe_destroy(&request_id);
    zframe_destroy(&identity);
    zframe_destroy(&cred);
    zmsg_destroy(&req);
    char source[sizeof ((tally *)0)->source];
    snprintf(source, sizeof source, "%d %s", (int)p.verdict, p.key[0] ? p.key : p.address);
    record(z, source, &p);
}

/* A failed handshake seen by the ROUTER's monitor. ZAP refusals also show up here (as HANDSHAKE_FAILED_AUTH):
 * they were reported by answer() already. */
static void monitor_event(vb_transport_zap *z) {
    vb_transport_event ev;
    vb_error ignored;
    vb_transport_monitor_handle(z->mon, &ev, &ignored);
    if (ev.event != ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL && ev.event != ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) return;
    /* libzmq 4.3 names no peer in these events (the endpoint is ours), so they are counted per kind of failure. */
    enum { FAIL_CRYPTO, FAIL_PLAIN, FAIL_OTHER };
    int kind = ev.event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL         ? FAIL_OTHER
               : ev.value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC       ? FAIL_CRYPTO
               : ev.value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH ? FAIL_PLAIN
                                                                         : FAIL_OTHER;
    vb_transport_peer p = {.verdict = VB_TRANSPORT_HANDSHAKE_FAILED, .count = 1};
    snprintf(p.address, sizeof p.address, "%s", ev.endpoint);
    if (ev.event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)   /* the client closed first: seen with plain clients */
        snprintf(p.reason, sizeof p.reason,
                 "a client dropped the handshake (%s): a client without CURVE, or one that gave up",
                 strerror((int)ev.value));
    else if (kind == FAIL_CRYPTO)
        snprintf(p.reason, sizeof p.reason,
                 "a client failed the CURVE handshake: it does not hold this coordinator's public key (%s; an agent "
                 "started with the wrong --server-key?)",
                 z->server_key);
    else if (kind == FAIL_PLAIN)
        snprintf(p.reason, sizeof p.reason,
                 "a client connected without CURVE: start the agent with --cert and --server-key");
    else
        snprintf(p.reason, sizeof p.reason, "the CURVE handshake failed (ZMTP protocol error 0x%x)", ev.value);
    char source[64];
    snprintf(source, sizeof source, "%d kind %d", (int)p.verdict, kind);
    record(z, source, &p);
}

int vb_transport_zap_poll_add(vb_transport_zap *zap, zpoller_t *poller) {
    if (!zap) return 0;
    if (zpoller_add(poller, zap->rep) != 0) return -1;
    return zpoller_add(poller, vb_transport_monitor_sock(zap->mon));
}

int vb_transport_zap_handle(vb_transport_zap *zap, void *which) {
    if (!zap) return 0;
    report_due(zap, 0);
    if (!which) return 0;
    if (which == zap->rep) {
        while (zsock_events(zap->rep) & ZMQ_POLLIN) answer(zap);
        return 1;
    }
    zsock_t *ms = vb_transport_monitor_sock(zap->mon);
    if (which == ms) {
        while (zsock_events(ms) & ZMQ_POLLIN) monitor_event(zap);
        return 1;
    }
    return 0;
}
