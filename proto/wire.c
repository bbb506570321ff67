/* ZeroMQ framing of vbench.Envelope messages. */
#include "proto/wire.h"

#include <stdlib.h>

int vb_wire_send(zsock_t *sock, zframe_t *routing_id, const Vbench__Envelope *env, vb_error *err) {
    size_t len = vbench__envelope__get_packed_size(env);
    if (len > VB_WIRE_MAX_BYTES)
        return vb_error_set(err, "wire", 1, "message of %zu bytes exceeds the %u byte limit", len, VB_WIRE_MAX_BYTES);
    zmsg_t *msg = zmsg_new();
    if (routing_id) zmsg_append(msg, &(zframe_t *){zframe_dup(routing_id)});
    zframe_t *body = zframe_new(NULL, len);
    vbench__envelope__pack(env, zframe_data(body));
    zmsg_append(msg, &body);
    if (zmsg_send(&msg, sock) != 0) {
        zmsg_destroy(&msg);
        return vb_error_set(err, "wire", 2, "send failed: %s", zmq_strerror(zmq_errno()));
    }
    return VB_OK;
}

Vbench__Envelope *vb_wire_decode(const uint8_t *data, size_t len, vb_error *err) {
    if (len > VB_WIRE_MAX_BYTES) {
        vb_error_set(err, "wire", 3, "message of %zu bytes exceeds the limit", len);
        return NULL;
    }
    Vbench__Envelope *env = vbench__envelope__unpack(NULL, len, data);
    if (!env) {
        vb_error_set(err, "wire", 4, "malformed message (%zu bytes are not a vbench.Envelope)", len);
        return NULL;
    }
    if (env->body_case == VBENCH__ENVELOPE__BODY__NOT_SET) {
        vbench__envelope__free_unpacked(env, NULL);
        vb_error_set(err, "wire", 5, "message without a body");
        return NULL;
    }
    return env;
}

Vbench__Envelope *vb_wire_recv(zsock_t *sock, zframe_t **routing_id_out, vb_error *err) {
    return vb_wire_recv_from(sock, routing_id_out, NULL, 0, err);
}

Vbench__Envelope *vb_wire_recv_from(zsock_t *sock, zframe_t **routing_id_out, char *user_id, size_t user_id_len,
                                    vb_error *err) {
    if (user_id && user_id_len) user_id[0] = '\0';
    zmsg_t *msg = zmsg_recv(sock);
    if (!msg) {
        vb_error_set(err, "wire", 6, "receive interrupted");
        return NULL;
    }
    if (routing_id_out) {
        *routing_id_out = zmsg_pop(msg);
        if (!*routing_id_out) {
            zmsg_destroy(&msg);
            vb_error_set(err, "wire", 7, "message without a routing id");
            return NULL;
        }
    }
    Vbench__Envelope *env = NULL;
    if (zmsg_size(msg) != 1) {
        vb_error_set(err, "wire", 8, "expected one body frame, got %zu", zmsg_size(msg));
    } else {
        zframe_t *body = zmsg_first(msg);
        env = vb_wire_decode(zframe_data(body), zframe_size(body), err);
        /* libzmq puts a connection's metadata on the frames it received, not on the routing id a ROUTER adds. */
        const char *uid = user_id && user_id_len ? zframe_meta(body, "User-Id") : NULL;
        if (uid) snprintf(user_id, user_id_len, "%s", uid);
    }
    zmsg_destroy(&msg);
    if (!env && routing_id_out) zframe_destroy(routing_id_out);
    return env;
}

void vb_wire_free(Vbench__Envelope *env) {
    if (env) vbench__envelope__free_unpacked(env, NULL);
}

vb_kv *vb_wire_kv_view(Vbench__KV **kv, size_t n) {
    vb_kv *out = calloc(n ? n : 1, sizeof *out);
    for (size_t i = 0; out && i < n; i++) {
        out[i].key = kv[i]->key;
        out[i].value = kv[i]->value;
    }
    return out;
}

Vbench__KV **vb_wire_kv_make(const vb_kv *kv, size_t n) {
    Vbench__KV **out = calloc(n ? n : 1, sizeof *out);
    for (size_t i = 0; out && i < n; i++) {
        out[i] = malloc(sizeof **out);
        vbench__kv__init(out[i]);
        out[i]->key = (char *)kv[i].key;
        out[i]->value = (char *)kv[i].value;
    }
    return out;
}

void vb_wire_kv_free(Vbench__KV **kv, size_t n) {
    if (!kv) return;
    for (size_t i = 0; i < n; i++) free(kv[i]);
    free(kv);
}

const char *vb_wire_body_name(const Vbench__Envelope *env) {
    static const char *names[] = {"none",   "hello", "welcome", "assign", "progress", "heartbeat", "result",
                                  "done",   "failed", "abort",  "ack",      "log",       "bye",
                                  "server_request", "server_report"};
    unsigned c = (unsigned)env->body_case;
    return c < sizeof names / sizeof names[0] ? names[c] : "unknown";
}
