/* Framing of protocol messages on ZeroMQ sockets (czmq), shared by the coordinator and the agents.
 *
 * A message is one protobuf-encoded vbench.Envelope in the last frame; on a ROUTER socket it is preceded by the
 * peer's routing id. Decoding is the trust boundary: anything that is not a well-formed Envelope with a body
 * set, or larger than VB_WIRE_MAX_BYTES, is rejected with an error and never reaches a handler. */
#ifndef VB_PROTO_WIRE_H
#define VB_PROTO_WIRE_H

#include <czmq.h>

#include "proto/vbench.pb-c.h"
#include "util/error.h"
#include "util/kv.h"

/* 3: attempts on Result/Done/Failed/Ack, the outbox resend, Hello.item_*, Heartbeat.hello_again. */
#define VB_PROTOCOL_VERSION 3
#define VB_WIRE_MAX_BYTES (64u << 20)

/* Encodes env and sends it. routing_id (ROUTER side) may be NULL; it is not consumed. */
int vb_wire_send(zsock_t *sock, zframe_t *routing_id, const Vbench__Envelope *env, vb_error *err);

/* Receives one message. On a ROUTER pass routing_id_out to get the sender's id (caller destroys it).
 * Returns the decoded envelope (free with vb_wire_free) or NULL with err set (malformed, interrupted). */
Vbench__Envelope *vb_wire_recv(zsock_t *sock, zframe_t **routing_id_out, vb_error *err);
/* The same, and the connection's "User-Id" (under CURVE: the sender's public key, Z85, as our ZAP handler set it)
 * into user_id ("" when there is none). */
Vbench__Envelope *vb_wire_recv_from(zsock_t *sock, zframe_t **routing_id_out, char *user_id, size_t user_id_len,
                                    vb_error *err);

/* Decodes bytes into an envelope, enforcing the same rules as vb_wire_recv (exposed for the fuzzer). */
Vbench__Envelope *vb_wire_decode(const uint8_t *data, size_t len, vb_error *err);
void vb_wire_free(Vbench__Envelope *env);

/* Converts key/value lists between the wire and vb_kv. The vb_kv view borrows the message's strings
 * (valid while the message lives); the caller frees the returned array with free(). */
vb_kv *vb_wire_kv_view(Vbench__KV **kv, size_t n);
/* Builds wire KVs pointing at the given strings (not copied); free the returned array with vb_wire_kv_free. */
Vbench__KV **vb_wire_kv_make(const vb_kv *kv, size_t n);
void vb_wire_kv_free(Vbench__KV **kv, size_t n);

/* Short name of an envelope's body, for logs ("hello", "result", ...). */
const char *vb_wire_body_name(const Vbench__Envelope *env);

#endif
