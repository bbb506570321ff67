/* Framing of protocol messages on ZeroMQ sockets (czmq), shared by the coordinator and the agents.
 *
 * A message is one protobuf-encoded vbench.Envelope in the last frame; on a ROUTER socket it is preceded by the
 * peer's routing id. Decoding is the trust boundary: anything that is not a well-formed Envelope with a body
 * set (for a ServerReport: with its body set), or larger than VB_WIRE_MAX_BYTES, is rejected with an error and
 * never reaches a handler. Also here: the names of the protocol's enums, the "#final" key, and the typed
 * Point's conversion, each in one place. */
#ifndef VB_PROTO_WIRE_H
#define VB_PROTO_WIRE_H

#include <czmq.h>

#include "config/plan.h"
#include "proto/vbench.pb-c.h"
#include "util/error.h"
#include "util/kv.h"

/* 3: attempts on Result/Done/Failed/Ack, the outbox resend, Hello.item_*, Heartbeat.hello_again.
 * 4: typed: enums for abort reasons, churn stages, server actions, log levels, Bye codes; a oneof for server
 *    reports; one Measurement message; a typed Point in Assign. An agent of another version gets Bye BYE_PROTOCOL. */
#define VB_PROTOCOL_VERSION 4

/* ---- the size of a message: one bound, derived from what the code can produce -------------------------------
 *
 * Every receiving socket (the coordinator's ROUTER, the agents' DEALERs) sets ZMQ_MAXMSGSIZE to VB_WIRE_FRAME_MAX,
 * so libzmq drops a larger frame as soon as its header arrives (and closes that connection) instead of allocating
 * it: without a bound, one 300 MB frame from an allowed key took the coordinator from 21 MB to 249 MB.
 * The largest messages the code makes, field by field (varints at most 10 bytes, a tag 1-2 bytes):
 *   Histogram       at most vb_histogram_bucket_count() = 3,393 non-empty buckets (1 us .. 100 s, 128 a power
 *                   of two): idx <= 2 + count <= 10 bytes each, plus min/max/out_of_range  <=  42 KB
 *   WindowResult    2 histograms (latency, lag) + fraction_in_call, 8 bytes per client, clients <= 4,096 (the
 *                   profile's limit) + 14 scalars                     (measured: 114,619 bytes) <= 117 KB
 *   Sweep/Filtered  1 histogram + plan (< 2,048, agent/measure.h) + duplicate_example (< 128) + filter
 *                   + scalars                                                           <=  45 KB
 *                   a sweep's answers: 16 + queries x (4 + 8 k) bytes, kept only up to VB_WIRE_ANSWERS_MAX
 *                   (8 MiB: 10,000 queries at k = 100 are 8,040,016 bytes; at k = 10, 840,016)
 *                   every Measurement's per-query recall: 4 bytes a query, kept only up to VB_WIRE_QUERY_RECALL_MAX
 *   ChurnResult     1 histogram + duplicate_example + scalars                          <=  43 KB
 *   ColdStartResult 2 x queries (<= 10,000, the profile's limit) latencies of <= 10 bytes and as many failed
 *                   indexes of <= 5 bytes, reason and first_error (each < 1,024) + scalars   <= 305 KB
 *   ServerReport    one body: failed / died / stopped carry log_tail (clipped to VB_WIRE_LOG_TAIL_MAX by
 *                   vb_wire_send, which keeps its end) + facts (about 30 entries, values bounded by PATH_MAX:
 *                   < 128 KB) + message (a vb_error, < 1,024); samples carry <= 256 a batch (orchestrator/orchestrate.c,
 *                   5 fields <= 55 bytes each: 14 KB)                                   <= 400 KB
 *   Failed, Log     a vb_error message, < 1,024 bytes; Hello, Assign: a few KB of names and parameters
 * The largest is a SweepResult with its answers (VB_WIRE_ANSWERS_MAX + 45 KB + VB_WIRE_QUERY_RECALL_MAX); VB_WIRE_MAX_BYTES is that bound
 * plus 1 MiB for everything else (a ServerReport, about 400 KB at worst, gets 2.5 times its size). The frame on
 * the wire adds the CURVE MESSAGE command's 33 bytes (name, nonce, MAC, flags): VB_WIRE_FRAME_MAX has room for
 * them. tests/unit/test_wire_limits.c builds the largest Result and ServerReport and checks they fit. */
#define VB_WIRE_LOG_TAIL_MAX (256u << 10)
#define VB_WIRE_ANSWERS_MAX (8u << 20)
#define VB_WIRE_QUERY_RECALL_MAX (256u << 10)   /* Measurement.query_recall: 65,536 queries */
#define VB_WIRE_MAX_BYTES (VB_WIRE_ANSWERS_MAX + (1u << 20))
#define VB_WIRE_FRAME_MAX (VB_WIRE_MAX_BYTES + 4096u)

/* Encodes env and sends it. routing_id (ROUTER side) may be NULL; it is not consumed. A ServerReport's log_tail
 * longer than VB_WIRE_LOG_TAIL_MAX is sent clipped to its last VB_WIRE_LOG_TAIL_MAX bytes (env is not changed); a
 * message still over VB_WIRE_MAX_BYTES is not sent (VB_ERROR): the receiver would drop it and the connection. */
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

/* The text of an enum value, for people and for the database's text columns (a churn stage is stored as
 * "before", "reinsert", ...; a server report's kind as "ready", "died", ...). An unknown value reads "unknown". */
const char *vb_wire_abort_name(Vbench__AbortReason r);        /* "limit", "coordinator stopping", ... */
const char *vb_wire_churn_stage_name(Vbench__ChurnStage s);   /* "before", "delete", ... ("" for CHURN_NONE) */
const char *vb_wire_log_level_name(Vbench__LogLevel l);       /* "info", "warn", "error" */
const char *vb_wire_server_action_name(Vbench__ServerAction a);   /* "start", "phase", "stop", "cold start" */
const char *vb_wire_server_report_name(const Vbench__ServerReport *r);   /* "ready", ..., "none" without a body */

/* The outbox key of an item's Done or Failed, the one the coordinator acknowledges: the item key followed by
 * VB_WIRE_FINAL_SUFFIX. A Result's key is the item key, "#" and a suffix that is never "final". */
#define VB_WIRE_FINAL_SUFFIX "#final"
void vb_wire_final_key(char *buf, size_t len, const char *item_key);
/* 1 when key is item_key's final key. */
int vb_wire_is_final_key(const char *key, const char *item_key);

/* An item's typed parameters on the wire: make fills w (initialised here; no memory is allocated), read fills p
 * from w (NULL: an Assign without a point, every field 0). The conversion is field for field: the plan parsed
 * and defaulted them (config/plan.c), neither side does it again. */
void vb_wire_point_make(const vb_point *p, Vbench__Point *w);
void vb_wire_point_read(const Vbench__Point *w, vb_point *p);

#endif
