/* The writer of the phases that search while rows are written (streaming, mixed): what their writer thread, their
 * freshness probe and the phase thread share, and the steps all of them take alike.
 *
 * The writer runs its writes one at a time on its own connection (vb_writer_call), each under the count lock shared:
 * the server-count check (agent/phase.h ctx->count) takes it exclusively while vb_phase_result reads what vbench sent
 * and the server's counters (vb_writer_result), so that both are read with no write or probe search in flight; the
 * lock prefers that writer, so it gets in between two calls. A transient failure (VB_RETRY: a lost connection) is
 * written once more on a new connection (every write is idempotent: an upsert or a delete), never skipped. The probe
 * searches under the same lock shared (vb_writer_probe_search) and waits for the next acknowledgement on acked_cond
 * (vb_writer_wait). When the writer ends it leaves its code and error for the phase thread (vb_writer_finish,
 * vb_writer_failed). The phase keeps its own figures beside this (its state under `lock`). */
#ifndef VB_AGENT_WRITER_H
#define VB_AGENT_WRITER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "agent/phase.h"
#include "engines/engine.h"
#include "util/error.h"

typedef struct vb_writer {
    atomic_int stop;             /* writer and probe: stop now */
    pthread_rwlock_t count_lock; /* shared by each write and probe search, exclusive around a result (above) */
    pthread_mutex_t lock;        /* the fields below, and the phase's own shared figures */
    pthread_cond_t acked_cond;   /* signalled at each acknowledgement the probe follows, and at the writer's end */
    int rc, done;                /* the writer's end: VB_OK or VB_ERROR with err */
    vb_error err;
    int64_t probe_id;            /* the latest acknowledged write the probe follows (-1 none yet): its row, */
    int32_t probe_src;           /* the row of the dataset whose vector it holds, */
    uint64_t probe_ack_ns;       /* and when it was acknowledged */
} vb_writer;

void vb_writer_init(vb_writer *w);
void vb_writer_destroy(vb_writer *w);

/* Sleeps until the monotonic clock reads t (ns): a write's due time. */
void vb_writer_sleep_until(uint64_t t);

/* One write (fn on the connection *c) under the count lock; after VB_RETRY once more on a new connection (*c
 * replaced, *retried = 1). *start and *ack: the call's start and acknowledgement (the lock's wait is before start). */
typedef int (*vb_write_fn)(vb_conn *c, void *arg, vb_error *err);
int vb_writer_call(vb_writer *w, vb_engine *e, vb_conn **c, vb_write_fn fn, void *arg, int *retried, uint64_t *start,
                   uint64_t *ack, vb_error *err);

/* The writer's end (its code and error kept, the probe woken). */
void vb_writer_finish(vb_writer *w, int rc, const vb_error *err);

/* The phase thread: VB_ERROR with the writer's error, prefixed "<engine>: <what>", when the writer ended in failure;
 * VB_OK while it runs or after it ended well. */
int vb_writer_failed(vb_writer *w, const char *engine, const char *what, vb_error *err);

/* The writer, holding w->lock: row id, now holding the vector of dataset row src, was acknowledged at ack; the
 * probe is woken to follow it. */
void vb_writer_acked(vb_writer *w, int64_t id, int32_t src, uint64_t ack);

/* The probe's connection, searching at ef_search. */
int vb_writer_probe_connect(vb_engine *e, int ef_search, vb_conn **c, vb_error *err);

/* The probe: waits (up to 50 ms, so that the stop flag is seen) for an acknowledgement later than *last_ack. 1: one,
 * in *id, *src and *ack (*last_ack moved to it); 0: none yet; -1: none, and the writer is done. */
int vb_writer_next_ack(vb_writer *w, uint64_t *last_ack, int64_t *id, int32_t *src, uint64_t *ack);

/* The probe's search under the count lock, its count flushed before the lock is let go. */
int vb_writer_probe_search(vb_writer *w, vb_conn *c, const float *query, int k, int64_t *ids, int *n, vb_error *err);

/* The phase thread: a result sent with no write or probe search in flight (vb_phase_result under the lock). */
void vb_writer_result(vb_writer *w, vb_phase_ctx *ctx, Vbench__Result *r, const char *suffix);

/* Unscored searches of the point's clients for secs between windows (the searches never pause): open loop at rate
 * or closed loop; *qps (may be NULL) the rate they reached. */
int vb_writer_gap_search(vb_phase_ctx *ctx, vb_session *s, double secs, int open, double rate, double *qps,
                         vb_error *err);

#endif
