/* Handshake monitor: what an agent needs to tell "wrong key" from "not running" (libzmq 4.3 socket monitor).
 *
 * CURVE failures are silent on a socket: messages simply never arrive. libzmq 4.3 reports them as monitor
 * events, and what each failure looks like from the agent's side was checked against this libzmq (4.3.4):
 *   key not on the coordinator's allow-list   HANDSHAKE_FAILED_AUTH, value 400 (ZAP status); no reconnect
 *   one side CURVE, the other plain           HANDSHAKE_FAILED_PROTOCOL, MECHANISM_MISMATCH; no reconnect
 *   wrong --server-key (coordinator's key)    HANDSHAKE_FAILED_NO_DETAIL (EPIPE) after every connect: the
 *                                             coordinator cannot open our HELLO box and drops us; libzmq
 *                                             reconnects every 100 ms
 * A plain agent against a CURVE coordinator sees MECHANISM_MISMATCH or, when the coordinator closes first,
 * the same EPIPE as a wrong key: it is a race, so both lead to the same advice.
 * A diagnosis, once made, stays: the caller is expected to stop with it. */
#include "proto/transport.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DOMAIN "transport"
#define FAILS_BEFORE_VERDICT 3   /* dropped handshakes in a row before we call it a wrong server key */
#define EVENTS                                                                                                      \
    (ZMQ_EVENT_CONNECTED | ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED |           \
     ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | \
     ZMQ_EVENT_MONITOR_STOPPED)

struct vb_transport_monitor {
    zsock_t *pair;                 /* receives the events libzmq publishes for the watched socket */
    char endpoint[300], cert[300], server_key[300];
    int curve;
    int connects, handshakes, ready, fails_in_row;
    int fatal;
    char diagnosis[2048];
};

static atomic_uint monitor_seq;

vb_transport_monitor *vb_transport_monitor_new(zsock_t *sock, const vb_transport_opts *o, vb_error *err) {
    vb_transport_monitor *m = calloc(1, sizeof *m);
    if (!m) {
        vb_error_set(err, DOMAIN, ENOMEM, "out of memory");
        return NULL;
    }
    snprintf(m->endpoint, sizeof m->endpoint, "%s", o && o->endpoint ? o->endpoint : "?");
    snprintf(m->cert, sizeof m->cert, "%s", o && o->cert ? o->cert : "");
    snprintf(m->server_key, sizeof m->server_key, "%s", o && o->server_key ? o->server_key : "");
    m->curve = o && o->cert;
    char addr[96];
    snprintf(addr, sizeof addr, "inproc://vb-transport-monitor-%d-%u", (int)getpid(), atomic_fetch_add(&monitor_seq, 1));
    if (zmq_socket_monitor(zsock_resolve(sock), addr, EVENTS) != 0 || !(m->pair = zsock_new_pair(NULL)) ||
        zsock_connect(m->pair, "%s", addr) != 0) {
        int e = zmq_errno();
        vb_error_set(err, DOMAIN, e, "cannot monitor the socket for %s: %s", m->endpoint, zmq_strerror(e));
        vb_transport_monitor_destroy(&m);
        return NULL;
    }
    return m;
}

/* Only our end is closed: libzmq drops events nobody reads, and closes its own end with the watched socket.
 * So the monitor and the socket may be destroyed in either order. */
void vb_transport_monitor_destroy(vb_transport_monitor **m) {
    if (!m || !*m) return;
    zsock_destroy(&(*m)->pair);
    free(*m);
    *m = NULL;
}

zsock_t *vb_transport_monitor_sock(vb_transport_monitor *m) { return m ? m->pair : NULL; }
int vb_transport_monitor_ready(const vb_transport_monitor *m) { return m && m->ready; }

/* The agent's public file, for messages: NAME.key -> NAME.pub. */
static void pub_of(const char *cert, char *out, size_t len) {
    size_t n = strlen(cert);
    if (n > 4 && strcmp(cert + n - 4, ".key") == 0) snprintf(out, len, "%.*s.pub", (int)(n - 4), cert);
    else snprintf(out, len, "the .pub file of %s", cert);
}

static void diagnose(vb_transport_monitor *m, int event, uint32_t value) {
    char pub[400];
    pub_of(m->cert, pub, sizeof pub);
    const char *ep = m->endpoint;
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH && value == 400)
        snprintf(m->diagnosis, sizeof m->diagnosis,
                 "the coordinator at %s refused this agent's key (not on its allow-list): put %s into the "
                 "coordinator's --allow directory, then start the agent again",
                 ep, pub);
    else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
        snprintf(m->diagnosis, sizeof m->diagnosis,
                 "the coordinator at %s could not check this agent's key (ZAP status %u)", ep, value);
    else if (value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH && m->curve)
        snprintf(m->diagnosis, sizeof m->diagnosis,
                 "the coordinator at %s does not use CURVE but this agent does: if it runs with `insecure: true` "
                 "on loopback, start the agent with --insecure instead of --cert/--server-key",
                 ep);
    else if (value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)
        snprintf(m->diagnosis, sizeof m->diagnosis,
                 "the coordinator at %s requires CURVE: start the agent with --cert NAME.key --server-key "
                 "coordinator.pub (make the pair with `vbench keys NAME`, put NAME.pub into the coordinator's "
                 "--allow directory)",
                 ep);
    else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL)
        snprintf(m->diagnosis, sizeof m->diagnosis,
                 "the handshake with the coordinator at %s failed (ZMTP protocol error 0x%x)%s%s%s", ep, value,
                 m->curve ? ": check that --server-key " : "", m->curve ? m->server_key : "",
                 m->curve ? " is the coordinator's public key" : "");
    else if (m->curve)
        snprintf(m->diagnosis, sizeof m->diagnosis,
                 "the coordinator at %s did not complete the CURVE handshake (it dropped %d attempts in a row): "
                 "check that --server-key %s is the coordinator's public key",
                 ep, m->fails_in_row, m->server_key);
    else   /* a plain agent: the coordinator drops it, and only sometimes do we read why before it does */
        snprintf(m->diagnosis, sizeof m->diagnosis,
                 "the coordinator at %s dropped %d handshakes in a row (%s): it most likely requires CURVE: start "
                 "the agent with --cert NAME.key --server-key coordinator.pub (make the pair with `vbench keys NAME`, "
                 "put NAME.pub into the coordinator's --allow directory)",
                 ep, m->fails_in_row, strerror((int)value));
    m->fatal = 1;
}

int vb_transport_monitor_handle(vb_transport_monitor *m, vb_transport_event *ev, vb_error *err) {
    vb_transport_event local;
    if (!ev) ev = &local;
    memset(ev, 0, sizeof *ev);
    if (m && (zsock_events(m->pair) & ZMQ_POLLIN)) {
        zmsg_t *msg = zmsg_recv(m->pair);
        zframe_t *head = msg ? zmsg_first(msg) : NULL;
        if (head && zframe_size(head) == 6) {
            uint16_t event;
            memcpy(&event, zframe_data(head), 2);
            memcpy(&ev->value, zframe_data(head) + 2, 4);
            ev->event = event;
            zframe_t *where = zmsg_next(msg);
            if (where)
                snprintf(ev->endpoint, sizeof ev->endpoint, "%.*s", (int)zframe_size(where), (char *)zframe_data(where));
        }
        zmsg_destroy(&msg);
        switch (ev->event) {
        case ZMQ_EVENT_CONNECTED: m->connects++; break;
        case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
            m->handshakes++;
            m->ready = 1;
            m->fails_in_row = 0;
            break;
        case ZMQ_EVENT_DISCONNECTED: m->ready = 0; break;
        case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: if (!m->fatal) diagnose(m, ev->event, ev->value); break;
        case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL: if (!m->fatal) diagnose(m, ev->event, ev->value); break;
        case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
            if (++m->fails_in_row >= FAILS_BEFORE_VERDICT && !m->fatal) diagnose(m, ev->event, ev->value);
            break;
        default: break;
        }
    }
    if (m && m->fatal) return vb_error_set(err, DOMAIN, EACCES, "%s", m->diagnosis);
    return VB_OK;
}

int vb_transport_handshake_error(const vb_transport_opts *o, const vb_transport_monitor *m, int waited_s,
                                 vb_error *err) {
    const char *ep = o && o->endpoint ? o->endpoint : m ? m->endpoint : "?";
    int curve = o ? o->cert != NULL : m && m->curve;
    const char *server_key = o && o->server_key ? o->server_key : m ? m->server_key : "";
    if (m && m->fatal) return vb_error_set(err, DOMAIN, EACCES, "%s", m->diagnosis);
    if (m && m->ready)
        return vb_error_set(err, DOMAIN, ETIMEDOUT,
                            "connected to the coordinator at %s (handshake done) but no Welcome came within %d s: "
                            "is it busy, or a vbench of another protocol version?",
                            ep, waited_s);
    if (m && m->connects == 0)
        return vb_error_set(err, DOMAIN, ETIMEDOUT,
                            "no coordinator accepted a connection at %s within %d s: is it running and listening "
                            "there?",
                            ep, waited_s);
    if (curve)
        return vb_error_set(err, DOMAIN, ETIMEDOUT,
                            "the coordinator at %s did not complete the CURVE handshake within %d s: check that "
                            "--server-key %s is the coordinator's public key",
                            ep, waited_s, server_key);
    return vb_error_set(err, DOMAIN, ETIMEDOUT, "no Welcome from the coordinator at %s within %d s", ep, waited_s);
}

/* ---- words for the coordinator -------------------------------------------------------------------------------- */

const char *vb_transport_verdict_name(vb_transport_verdict v) {
    switch (v) {
    case VB_TRANSPORT_ALLOWED: return "allowed";
    case VB_TRANSPORT_REFUSED: return "refused";
    case VB_TRANSPORT_HANDSHAKE_FAILED: return "handshake failed";
    }
    return "?";
}

/* 1234567 -> "1,234,567" */
static const char *thousands(unsigned n, char buf[16]) {
    char digits[16];
    int len = snprintf(digits, sizeof digits, "%u", n), o = 0;
    for (int i = 0; i < len; i++) {
        if (i && (len - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

const char *vb_transport_peer_describe(const vb_transport_peer *p, char *buf, size_t len) {
    char n[16];
    thousands(p->count, n);
    if (p->verdict == VB_TRANSPORT_HANDSHAKE_FAILED) {
        if (p->count > 1)
            snprintf(buf, len, "refused %s connections on %s in the last %u s: %s", n, p->address, p->window_s,
                     p->reason);
        else
            snprintf(buf, len, "refused a connection on %s: %s", p->address, p->reason);
    } else if (p->verdict == VB_TRANSPORT_ALLOWED) {
        const char *open = p->name[0] ? " (" : "", *close = p->name[0] ? ")" : "";
        if (p->others)
            snprintf(buf, len, "allowed %s connections of other agent keys in the last %u s (the latest: %s%s%s%s "
                     "from %s)", n, p->window_s, p->key, open, p->name, close, p->address);
        else if (p->count > 1)
            snprintf(buf, len, "allowed agent key %s%s%s%s from %s: %s connections in the last %u s", p->key, open,
                     p->name, close, p->address, n, p->window_s);
        else
            snprintf(buf, len, "allowed agent key %s%s%s%s from %s", p->key, open, p->name, close, p->address);
    } else {
        const char *who = p->key[0] ? "agent key " : "a client";
        if (p->others)
            snprintf(buf, len, "refused %s connections of other keys or clients in the last %u s (the latest: %s%s "
                     "from %s): %s", n, p->window_s, who, p->key, p->address, p->reason);
        else if (p->count > 1)
            snprintf(buf, len, "refused %s connections of %s%s from %s in the last %u s: %s", n, who, p->key,
                     p->address, p->window_s, p->reason);
        else
            snprintf(buf, len, "refused %s%s from %s: %s", who, p->key, p->address, p->reason);
    }
    return buf;
}
