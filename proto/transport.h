/* Transport security: who may talk to a coordinator, and how an agent knows it reached the right one.
 *
 * When a campaign leaves the host, the coordinator's ROUTER and the agents' DEALERs speak CURVE (ZeroMQ's
 * CurveZMQ): every host has a key pair made by `vbench keys NAME` (czmq's zcert format: NAME.key holds both
 * keys and stays on its host with mode 0600; NAME.pub holds the public key and is copied to the other side).
 * The coordinator accepts only agents whose public key is on its allow-list (a directory of .pub files and/or
 * explicit files), checked by a ZAP handler (RFC 27) that this module runs in the coordinator's own loop; the
 * agent pins the coordinator's public key, so a coordinator with another key never completes the handshake.
 *
 * Endpoint rules, one place for both sides (vb_transport_check_endpoint):
 *   ipc:// and inproc://  no CURVE needed (the socket file's permissions / the process are the boundary);
 *                         CURVE is still honoured on ipc:// when keys are given (inproc has no handshake)
 *   tcp://                CURVE required, unless `insecure` is set (profile `transport: {insecure: true}`)
 *                         AND the address is loopback (127.0.0.0/8, ::1, localhost, the interface lo)
 *   anything else         refused
 * Keys win: with keys, tcp:// uses CURVE even when insecure is set.
 *
 * Wiring, coordinator:                                  Wiring, agent:
 *   vb_transport_server_setup(router, &t, &zap, err)      vb_transport_client_setup(dealer, &t, &mon, err)
 *   if (zap) vb_transport_zap_poll_add(zap, poller)       zpoller_add(poller, vb_transport_monitor_sock(mon))
 *   if (vb_transport_zap_handle(zap, which)) ...          if (which == vb_transport_monitor_sock(mon) &&
 *   zsock_destroy(&router); then zap_destroy(&zap)            vb_transport_monitor_handle(mon, NULL, err)) exit
 * Every function that can fail fills a vb_error (domain "transport") naming the file or endpoint at fault. */
#ifndef VB_PROTO_TRANSPORT_H
#define VB_PROTO_TRANSPORT_H

#include <czmq.h>

#include "util/error.h"

#define VB_TRANSPORT_ZAP_DOMAIN "vbench"
#define VB_TRANSPORT_KEY_LEN 40              /* a CURVE key in Z85 text */

/* ---- decisions reported to the coordinator -------------------------------------------------------------- */

typedef enum {
    VB_TRANSPORT_ALLOWED,          /* the ZAP handler accepted a key on the allow-list */
    VB_TRANSPORT_REFUSED,          /* the ZAP handler refused (unknown key, wrong mechanism or domain) */
    VB_TRANSPORT_HANDSHAKE_FAILED, /* a peer failed the CURVE handshake before any key was known: it does not
                                      have this coordinator's public key, or speaks plain ZMTP */
} vb_transport_verdict;

typedef struct vb_transport_peer {
    vb_transport_verdict verdict;
    char key[VB_TRANSPORT_KEY_LEN + 1]; /* the client's public key in Z85; "" when not known */
    char name[128];                     /* the allow-list entry (the .pub file's name metadata or stem); "" */
    char address[256];                  /* the peer's IP from ZAP; for handshake failures the bound endpoint */
    char reason[512];                   /* a sentence: why allowed or refused */
    unsigned count;                     /* decisions this report stands for: 1 for the first one of its source
                                           (key, or kind of failure), then at most one report a minute with the
                                           count since the previous one (see "Reports" below) */
    unsigned window_s;                  /* count > 1: the seconds the count covers */
    int others;                         /* 1: the count folds sources beyond the ones followed one by one */
} vb_transport_peer;

/* Reports: decisions are counted per source (an allowed or refused key; a kind of failed handshake, where libzmq
 * names no peer), and a source is reported at its first decision and then at most once a minute, with the count
 * since its previous report: 5,000 rogue connections make a handful of events, not 5,000. At most
 * VB_TRANSPORT_SOURCES sources are followed one by one in a minute; decisions of further sources (a client that
 * makes a new key per connection) are counted together, per verdict (p->others). Counts still pending are reported
 * by vb_transport_zap_flush and when the handler is destroyed, so none is lost. */
#define VB_TRANSPORT_SOURCES 16
#define VB_TRANSPORT_REPORT_S 60

/* Called once per report, in the thread that calls vb_transport_zap_handle (or _flush, _destroy). p is valid during
 * the call. */
typedef void (*vb_transport_peer_fn)(void *arg, const vb_transport_peer *p);

/* ---- options ---------------------------------------------------------------------------------------------- */

/* One struct for both sides; each side reads its own fields. Strings are borrowed for the duration of the
 * setup call (the ZAP handler copies what it keeps). */
typedef struct vb_transport_opts {
    const char *endpoint;           /* tcp://HOST:PORT, ipc://PATH, inproc://NAME (bound or connected) */
    const char *cert;               /* this side's secret certificate NAME.key; NULL: no CURVE */
    int insecure;                   /* the profile's transport.insecure: plain tcp allowed on loopback only */
    /* coordinator */
    const char *allow_dir;          /* directory of agents' .pub files (others are ignored), or NULL */
    const char *const *allow_files; /* NULL-terminated list of .pub files, or NULL */
    vb_transport_peer_fn on_peer;   /* decisions of the ZAP handler (may be NULL) */
    void *on_peer_arg;
    /* agent */
    const char *server_key;         /* the coordinator's public certificate NAME.pub (pinned) */
} vb_transport_opts;

/* ---- rules ------------------------------------------------------------------------------------------------ */

/* Applies the endpoint rules above. curve: keys are configured. server: words the hint for the coordinator
 * (--cert/--allow) or the agent (--cert/--server-key). VB_OK or VB_ERROR with a sentence that says what to do. */
int vb_transport_check_endpoint(const char *endpoint, int curve, int insecure, int server, vb_error *err);

/* 1 if the host part of a tcp:// endpoint is loopback (127.0.0.0/8, ::1, ::ffff:127.x, localhost, lo). Names
 * other than localhost are not resolved: a name that resolves to 127.0.0.1 today may not tomorrow. */
int vb_transport_is_loopback(const char *endpoint);

/* ---- limits ------------------------------------------------------------------------------------------------ */

/* ZMTP heartbeats of the coordinator's ROUTER: a connection that died on the wire (no RST: a cut link, a host gone)
 * is closed after VB_TRANSPORT_HEARTBEAT_TIMEOUT_MS without an answer to a PING, so that, with ROUTER_HANDOVER off,
 * the agent's next connection is not shut out by a dead one holding its routing id. */
#define VB_TRANSPORT_HEARTBEAT_IVL_MS 1000
#define VB_TRANSPORT_HEARTBEAT_TIMEOUT_MS 3000

/* Options for every vbench socket, set before it binds or connects: ZMQ_MAXMSGSIZE = VB_WIRE_FRAME_MAX (libzmq
 * drops a larger frame when its header arrives and closes the connection, before allocating anything; the bound
 * is derived in proto/wire.h); server (the coordinator's ROUTER): the ZMTP heartbeats above. The set-up functions
 * below call it; call it yourself for a socket that does not go through them (the coordinator's ipc ROUTER). */
void vb_transport_socket_limits(zsock_t *sock, int server);

/* ---- keys ------------------------------------------------------------------------------------------------- */

/* Makes a key pair: DIR/NAME.key (both keys, mode 0600) and DIR/NAME.pub (public only, mode 0644), creating
 * DIR (mode 0700) when missing. Refuses to overwrite either file unless force. NAME: letters, digits, '.', '_',
 * '-', not starting with '.' or '-'. public_key (may be NULL) receives the public key in Z85. */
int vb_transport_keys_make(const char *dir, const char *name, int force, char public_key[VB_TRANSPORT_KEY_LEN + 1],
                           vb_error *err);

/* Loads a secret certificate (NAME.key): refuses a file other users can read, one without a secret key (a .pub
 * given by mistake), and one whose public key does not belong to its secret key. Caller destroys the cert. */
zcert_t *vb_transport_cert_load(const char *path, vb_error *err);

/* Loads a public certificate (NAME.pub) into key (Z85) and name (its "name" metadata, else the file's stem;
 * name may be NULL). Refuses a file that holds a secret key: a .key must never leave its host. */
int vb_transport_public_load(const char *path, char key[VB_TRANSPORT_KEY_LEN + 1], char name[128], vb_error *err);

/* ---- coordinator side ------------------------------------------------------------------------------------- */

typedef struct vb_transport_zap vb_transport_zap;

/* Checks the rules for o->endpoint, then binds router to it. With o->cert it first starts the ZAP handler
 * (bound to inproc://zeromq.zap.01 in czmq's context, allow-list loaded from o->allow_dir and o->allow_files,
 * at least one of them required) and returns it in *zap; the router becomes a CURVE server in the ZAP domain
 * "vbench". Without CURVE *zap is NULL. The caller must poll the ZAP handler: handshakes wait for its answers.
 * Order of destruction: the router first, then the handler (a ROUTER whose ZAP handler is gone would let any
 * CURVE client in: libzmq 4.3 only enforces ZAP when a handler is bound). The bound endpoint (useful with
 * tcp://127.0.0.1:*) is zsock_endpoint(router). */
int vb_transport_server_setup(zsock_t *router, const vb_transport_opts *o, vb_transport_zap **zap, vb_error *err);
/* Reports the counts still pending (see "Reports"), then stops the handler. */
void vb_transport_zap_destroy(vb_transport_zap **zap);
/* Reports every count still pending now, whatever the minute (e.g. before a summary is read). */
void vb_transport_zap_flush(vb_transport_zap *zap);

/* The REP socket of the handler, for a poller of one's own. */
zsock_t *vb_transport_zap_sock(vb_transport_zap *zap);
/* Adds the handler's sockets (the ZAP REP and a monitor of the router's failed handshakes) to poller. */
int vb_transport_zap_poll_add(vb_transport_zap *zap, zpoller_t *poller);
/* Given what zpoller_wait returned (NULL after a timeout too): if it is one of the handler's sockets, answers the
 * pending ZAP request or reads the monitor event, reports through on_peer, and returns 1; otherwise returns 0.
 * Either way it reports the counts whose minute is over, so call it on every turn of the loop. zap may be NULL
 * (returns 0). Never blocks. */
int vb_transport_zap_handle(vb_transport_zap *zap, void *which);

/* Reads the allow-list again from its directory and files (e.g. on SIGHUP or a `reload` command). On error the
 * old list stays in force. Keys added with vb_transport_zap_allow are kept. */
int vb_transport_zap_reload(vb_transport_zap *zap, vb_error *err);
/* Puts one public key (Z85) on the allow-list, in memory only; name is reported with its decisions. */
int vb_transport_zap_allow(vb_transport_zap *zap, const char *key, const char *name, vb_error *err);
size_t vb_transport_zap_count(const vb_transport_zap *zap);   /* keys on the allow-list */
/* The allow-list name of a public key (Z85, as libzmq's "User-Id" of a message under CURVE), or NULL when the key
 * is not (or no longer) on the list. The coordinator binds an agent's id to this name. */
const char *vb_transport_zap_name_of(const vb_transport_zap *zap, const char *key);
/* The coordinator's own public key (Z85), for the start banner and the manifest. */
const char *vb_transport_zap_server_key(const vb_transport_zap *zap);

/* Local mode under CURVE: the local agent must speak CURVE too (the ROUTER's mechanism is per socket). Makes a
 * throw-away key pair DIR/NAME.key + .pub (DIR: the run directory, mode 0700), writes the coordinator's public
 * key to DIR/coordinator.pub, and allows the agent's key in memory. cert_out and server_key_out receive the two
 * paths to pass as the agent's --cert and --server-key. The caller removes the three files at the end. */
int vb_transport_zap_local_agent(vb_transport_zap *zap, const char *dir, const char *name, char *cert_out,
                                 size_t cert_len, char *server_key_out, size_t server_key_len, vb_error *err);

/* One line for the terminal and the events table, e.g. "refused agent key rq:rM>... from 10.0.0.7: the key is
 * not on the allow-list (2 keys from /etc/vbench/allow)". Returns buf. */
const char *vb_transport_peer_describe(const vb_transport_peer *p, char *buf, size_t len);
const char *vb_transport_verdict_name(vb_transport_verdict v);   /* "allowed", "refused", "handshake failed" */

/* ---- agent side ------------------------------------------------------------------------------------------- */

typedef struct vb_transport_monitor vb_transport_monitor;

/* Checks the rules for o->endpoint, makes dealer a CURVE client with o->cert and the pinned o->server_key when
 * given, and connects it. If mon is not NULL, a handshake monitor is attached before connecting (so no event is
 * missed) and returned in *mon (destroy it with vb_transport_monitor_destroy, before or after the dealer). */
int vb_transport_client_setup(zsock_t *dealer, const vb_transport_opts *o, vb_transport_monitor **mon,
                              vb_error *err);

/* Watches the handshakes of sock through a ZMQ socket monitor. o gives the endpoint and key files for messages.
 * To close sock while the process goes on (a reconnect on a new socket), stop the monitor first with
 * zmq_socket_monitor(zsock_resolve(sock), NULL, 0): in libzmq 4.3.4 a socket closed while monitored keeps
 * connecting, as a ghost that takes the connection over. */
vb_transport_monitor *vb_transport_monitor_new(zsock_t *sock, const vb_transport_opts *o, vb_error *err);
void vb_transport_monitor_destroy(vb_transport_monitor **m);
zsock_t *vb_transport_monitor_sock(vb_transport_monitor *m);

typedef struct vb_transport_event {
    int event;          /* ZMQ_EVENT_* */
    uint32_t value;     /* its value: ZMQ_PROTOCOL_ERROR_*, a ZAP status, an errno or a descriptor */
    char endpoint[256];
} vb_transport_event;

/* Reads one pending event (ev may be NULL). Returns VB_OK while nothing is known to be wrong, VB_ERROR with
 * the diagnosis in err once the connection cannot succeed:
 *   the coordinator refused this agent's key (ZAP 400)          -> add the .pub to its --allow directory
 *   mechanism mismatch (one side CURVE, the other plain)         -> which side needs keys
 *   the coordinator closed 3 handshakes in a row, none succeeded -> --server-key is not its public key
 * libzmq does not reconnect after the first two, so the agent should stop with the message. A plain agent
 * facing a CURVE coordinator gets "requires CURVE" either from the mismatch or from 3 dropped handshakes. */
int vb_transport_monitor_handle(vb_transport_monitor *m, vb_transport_event *ev, vb_error *err);
/* 1 while the current connection has completed its handshake. */
int vb_transport_monitor_ready(const vb_transport_monitor *m);

/* The error for "no Welcome within waited_s seconds": the monitor's diagnosis when it has one, else the most
 * likely cause from what it saw (nothing accepted the connection / connected but the CURVE handshake never
 * completed / handshake done but the coordinator is silent). m may be NULL. Returns VB_ERROR. */
int vb_transport_handshake_error(const vb_transport_opts *o, const vb_transport_monitor *m, int waited_s,
                                 vb_error *err);

#endif
