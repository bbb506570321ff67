/* ZeroMQ framing of vbench.Envelope messages. */
#include "proto/wire.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int vb_wire_send(zsock_t *sock, zframe_t *routing_id, const Vbench__Envelope *env, vb_error *err) {
    /* A server's log tail is the one field whose size the sender does not bound (journal lines can be long): keep
     * its end, which says why the server stopped, in a shallow copy of the message. */
    Vbench__Envelope clipped_env;
    Vbench__ServerReport clipped_report;
    Vbench__ServerEnd clipped_end;
    const Vbench__ServerReport *rep = env->body_case == VBENCH__ENVELOPE__BODY_SERVER_REPORT ? env->server_report : NULL;
    Vbench__ServerEnd *end = !rep ? NULL
                           : rep->body_case == VBENCH__SERVER_REPORT__BODY_FAILED  ? rep->failed
                           : rep->body_case == VBENCH__SERVER_REPORT__BODY_DIED    ? rep->died
                           : rep->body_case == VBENCH__SERVER_REPORT__BODY_STOPPED ? rep->stopped
                                                                                   : NULL;
    if (end && end->log_tail && strlen(end->log_tail) > VB_WIRE_LOG_TAIL_MAX) {
        clipped_end = *end;
        const char *tail = clipped_end.log_tail + strlen(clipped_end.log_tail) - VB_WIRE_LOG_TAIL_MAX;
        const char *line = strchr(tail, '\n');   /* start at a whole line, else at a whole UTF-8 character */
        if (line && line[1]) tail = line + 1;
        else while ((*tail & 0xC0) == 0x80) tail++;
        clipped_end.log_tail = (char *)tail;
        clipped_report = *rep;
        /* the oneof's members share one pointer: setting one sets the body */
        clipped_report.failed = &clipped_end;
        clipped_env = *env;
        clipped_env.server_report = &clipped_report;
        env = &clipped_env;
    }
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
    /* A server report is its body (ready, failed, ...): without one it says nothing a handler could act on. */
    if (env->body_case == VBENCH__ENVELOPE__BODY_SERVER_REPORT &&
        env->server_report->body_case == VBENCH__SERVER_REPORT__BODY__NOT_SET) {
        vbench__envelope__free_unpacked(env, NULL);
        vb_error_set(err, "wire", 5, "server report without a body (ready, failed, died, stopped, samples, sizes)");
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
    if (env->body_case == VBENCH__ENVELOPE__BODY_SHARE_REQUEST) return "share_request";
    if (env->body_case == VBENCH__ENVELOPE__BODY_SHARE_REPORT) return "share_report";
    return c < sizeof names / sizeof names[0] ? names[c] : "unknown";
}

/* Tables indexed by the enum's value (the values are dense from 0, proto/vbench.proto). */
#define NAME_OF(table, v) ((unsigned)(v) < sizeof table / sizeof table[0] ? table[(unsigned)(v)] : "unknown")

const char *vb_wire_abort_name(Vbench__AbortReason r) {
    static const char *const names[] = {"unspecified", "limit", "coordinator stopping", "server died",
                                        "this attempt is no longer current", "phase timeout"};
    return NAME_OF(names, r);
}

const char *vb_wire_churn_stage_name(Vbench__ChurnStage s) {
    static const char *const names[] = {"", "before", "delete", "reinsert", "maintain", "after", "checkpoint"};
    return NAME_OF(names, s);
}

const char *vb_wire_log_level_name(Vbench__LogLevel l) {
    static const char *const names[] = {"info", "warn", "error"};
    return NAME_OF(names, l);
}

const char *vb_wire_server_action_name(Vbench__ServerAction a) {
    static const char *const names[] = {"start", "phase", "stop", "cold start"};
    if (a == VBENCH__SERVER_ACTION__SERVER_PROFILE) return "profile";
    return NAME_OF(names, a);
}

const char *vb_wire_server_report_name(const Vbench__ServerReport *r) {
    switch (r->body_case) {
    case VBENCH__SERVER_REPORT__BODY_READY: return "ready";
    case VBENCH__SERVER_REPORT__BODY_FAILED: return "failed";
    case VBENCH__SERVER_REPORT__BODY_DIED: return "died";
    case VBENCH__SERVER_REPORT__BODY_STOPPED: return "stopped";
    case VBENCH__SERVER_REPORT__BODY_SAMPLES: return "samples";
    case VBENCH__SERVER_REPORT__BODY_SIZES: return "sizes";
    case VBENCH__SERVER_REPORT__BODY_PROFILE: return "profile";
    default: return "none";
    }
}

void vb_wire_final_key(char *buf, size_t len, const char *item_key) {
    snprintf(buf, len, "%s" VB_WIRE_FINAL_SUFFIX, item_key);
}

int vb_wire_is_final_key(const char *key, const char *item_key) {
    size_t l = strlen(item_key);
    return strncmp(key, item_key, l) == 0 && strcmp(key + l, VB_WIRE_FINAL_SUFFIX) == 0;
}

void vb_wire_point_make(const vb_point *p, Vbench__Point *w) {
    vbench__point__init(w);
    w->ef_search = (int32_t)p->ef_search;
    w->queries = (uint64_t)p->queries;
    w->load_connections = (uint32_t)p->load_connections;
    w->load_batch = (uint32_t)p->load_batch;
    w->clients = (uint32_t)p->clients;
    w->repeat = (uint32_t)p->repeat;
    w->window_s = p->window_s;
    w->warmup_s = p->warmup_s;
    w->mode = p->mode == VB_POINT_OPEN ? VBENCH__LOOP_MODE__LOOP_OPEN : VBENCH__LOOP_MODE__LOOP_CLOSED;
    w->target_rate = p->target_rate;
    w->selectivity = p->selectivity;
    w->predicate = (uint32_t)p->predicate;
    w->filter_class = (int32_t)p->filter_class;
    w->class_seed = (uint64_t)p->class_seed;
    w->fraction = p->fraction;
    w->insert_batch = (uint32_t)p->insert_batch;
    w->limit_s = (uint32_t)p->limit_s;
    w->churn_start = (Vbench__ChurnStart)p->churn_start;
    w->resume_rows = (uint64_t)p->resume_rows;
    w->skip_answers = !p->answers;
    w->repeats = (uint32_t)p->repeats;
    w->load_resume_rows = (uint64_t)p->load_resume_rows;
    w->load_resume_s = p->load_resume_s;
    w->load_resume_attempts = (uint32_t)p->load_resume_attempts;
    w->insert_rate = p->insert_rate;
    w->n_stages = (size_t)p->n_stages;
    w->stages = p->n_stages ? (double *)p->stages : NULL;   /* borrowed from p: the point outlives the message */
    w->cold = p->cold != 0;
    w->evicted_files = p->evicted_files > 0 ? (uint64_t)p->evicted_files : 0;
    w->evicted_bytes = p->evicted_bytes > 0 ? (uint64_t)p->evicted_bytes : 0;
    w->restart_s = p->restart_s;
    w->build = p->build > 0 ? (uint32_t)p->build : 0;
    w->mix_search = p->mix[0];
    w->mix_update = p->mix[1];
    w->mix_delete = p->mix[2];
    w->mix_insert = p->mix[3];
    w->zipf_s = p->zipf_s;
    w->mix_windows = (uint32_t)p->mix_windows;
    w->pool_fraction = p->pool_fraction;
    w->recall_target = p->recall_target;
    w->n_p99_ms = (size_t)p->n_p99;
    w->p99_ms = p->n_p99 ? (double *)p->p99_ms : NULL;     /* borrowed from p, as stages */
    w->precision = p->precision;
    w->op_source = (Vbench__CapacityOpSource)p->op_source;
    w->op_recall = p->op_recall;
    w->op_best_ef = (int32_t)p->op_best_ef;
}

void vb_wire_point_read(const Vbench__Point *w, vb_point *p) {
    memset(p, 0, sizeof *p);
    if (!w) return;
    p->ef_search = w->ef_search;
    p->queries = (long)w->queries;
    p->load_connections = w->load_connections;
    p->load_batch = w->load_batch;
    p->clients = w->clients;
    p->repeat = w->repeat;
    p->repeats = w->repeats > 0 ? w->repeats : 1;
    p->window_s = w->window_s;
    p->warmup_s = w->warmup_s;
    p->mode = w->mode == VBENCH__LOOP_MODE__LOOP_OPEN ? VB_POINT_OPEN : VB_POINT_CLOSED;
    p->target_rate = w->target_rate;
    p->selectivity = w->selectivity;
    p->predicate = (int)w->predicate;
    p->filter_class = w->filter_class;
    p->class_seed = (long)w->class_seed;
    p->fraction = w->fraction;
    p->insert_batch = w->insert_batch;
    p->limit_s = w->limit_s;
    p->churn_start = w->churn_start == VBENCH__CHURN_START__CHURN_START_CONTINUE ? VB_CHURN_CONTINUE
                   : w->churn_start == VBENCH__CHURN_START__CHURN_START_RESTART  ? VB_CHURN_RESTART
                                                                                 : VB_CHURN_FRESH;
    p->resume_rows = (long)w->resume_rows;
    p->load_resume_rows = (long)w->load_resume_rows;
    p->load_resume_s = w->load_resume_s;
    p->load_resume_attempts = (long)w->load_resume_attempts;
    p->answers = !w->skip_answers;
    p->insert_rate = w->insert_rate;
    p->n_stages = w->n_stages < VB_PLAN_MAX_STAGES ? (int)w->n_stages : VB_PLAN_MAX_STAGES;
    for (int i = 0; i < p->n_stages; i++) p->stages[i] = w->stages[i];
    p->cold = w->cold;
    p->evicted_files = w->evicted_files <= INT64_MAX ? (long long)w->evicted_files : INT64_MAX;
    p->evicted_bytes = w->evicted_bytes <= INT64_MAX ? (long long)w->evicted_bytes : INT64_MAX;
    p->restart_s = w->restart_s;
    p->build = w->build;
    p->mix[0] = w->mix_search;
    p->mix[1] = w->mix_update;
    p->mix[2] = w->mix_delete;
    p->mix[3] = w->mix_insert;
    p->zipf_s = w->zipf_s;
    p->mix_windows = w->mix_windows;
    p->pool_fraction = w->pool_fraction;
    p->recall_target = w->recall_target;
    p->n_p99 = w->n_p99_ms < VB_PLAN_MAX_TARGETS ? (int)w->n_p99_ms : VB_PLAN_MAX_TARGETS;
    for (int i = 0; i < p->n_p99; i++) p->p99_ms[i] = w->p99_ms[i];
    p->precision = w->precision;
    p->op_source = w->op_source == VBENCH__CAPACITY_OP_SOURCE__OP_GIVEN         ? VB_OP_GIVEN
                 : w->op_source == VBENCH__CAPACITY_OP_SOURCE__OP_SWEEP         ? VB_OP_SWEEP
                 : w->op_source == VBENCH__CAPACITY_OP_SOURCE__OP_UNREACHABLE   ? VB_OP_UNREACHABLE
                                                                                : VB_OP_PROBE;
    p->op_recall = w->op_recall;
    p->op_best_ef = w->op_best_ef;
}
