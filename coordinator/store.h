/* The results store: the campaign's SQLite database, written only by the coordinator.
 *
 * Every write is its own transaction and is durable when the call returns (WAL, synchronous=FULL): a result is
 * committed together with the plan item it completes, so the database never holds a result whose item still
 * looks unfinished, and a resent result (same result_key) is ignored. The plan table is the checkpoint. */
#ifndef VB_COORDINATOR_STORE_H
#define VB_COORDINATOR_STORE_H

#include <sqlite3.h>

#include "config/plan.h"
#include "config/profile.h"
#include "proto/vbench.pb-c.h"
#include "util/error.h"

typedef struct vb_store vb_store;

/* Opens (create=1: creates, refusing an existing campaign file) and applies the schema. */
int vb_store_open(const char *path, int create, vb_store **out, vb_error *err);
void vb_store_close(vb_store **s);
sqlite3 *vb_store_db(vb_store *s);

/* Records the campaign row and the plan (new campaign). */
int vb_store_init_campaign(vb_store *s, const vb_profile *p, const char *engines_csv, const vb_plan *plan,
                           vb_error *err);
/* Reads back what resume needs. Strings are malloc'd; the caller frees them. engines may come back NULL. */
int vb_store_load_campaign(vb_store *s, char **yaml, char **source, char **engines, char **status, vb_error *err);
/* Checks that the stored plan has exactly the keys of `plan` (the profile text did not change under us). */
int vb_store_check_plan(vb_store *s, const vb_plan *plan, vb_error *err);
/* Starts a coordinator run: runs += 1, status running; items left 'running' by a killed coordinator become
 * 'interrupted' (they will run again), with an event each. retry_failed also re-queues failed/skipped items. */
int vb_store_begin_run(vb_store *s, int retry_failed, vb_error *err);

/* Status of an item ("pending", "done", ...) into buf; VB_ERROR if the key is unknown. */
int vb_store_item_status(vb_store *s, const char *key, char *buf, size_t len, vb_error *err);
/* Starts an attempt: status running, attempts + 1, the agent. */
int vb_store_item_start(vb_store *s, const char *key, const char *agent, vb_error *err);
/* An item's status, attempts so far and the agent of the last attempt ("" when none); VB_ERROR if unknown. */
int vb_store_item_info(vb_store *s, const char *key, char *status, size_t status_len, int *attempts, char *agent,
                       size_t agent_len, vb_error *err);
/* The item a killed coordinator left running (status running, or interrupted by vb_store_begin_run: no error
 * text), the most recently started if several; key "" when none. Its agent may still be running it. */
int vb_store_item_orphan(vb_store *s, char *key, size_t key_len, char *agent, size_t agent_len, vb_error *err);
/* Running again under its current attempt (attempts unchanged): a restarted coordinator took over an attempt
 * that was still running on its agent. */
int vb_store_item_adopt(vb_store *s, const char *key, const char *agent, vb_error *err);
/* status: "done", "failed", "skipped", "interrupted", "expired"; error may be NULL. */
int vb_store_item_finish(vb_store *s, const char *key, const char *status, const char *error, vb_error *err);

/* Commits a result (and, when r->completes_item, marks its item done) in one transaction.
 * *duplicate = 1 when the result_key was already stored (nothing written). */
int vb_store_commit_result(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                           const char *agent, int *duplicate, vb_error *err);

int vb_store_event(vb_store *s, const char *level, const char *item_key, const char *source, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int vb_store_manifest_set(vb_store *s, const char *key, const char *value, vb_error *err);
int vb_store_agent_seen(vb_store *s, const Vbench__Hello *h, vb_error *err);
/* status: "running", "finished", "incomplete", "failed", "interrupted". */
int vb_store_set_status(vb_store *s, const char *status, vb_error *err);

/* Churn checkpoint: the largest committed count of reinserted rows of the item, or -1 when none. */
int vb_store_churn_checkpoint(vb_store *s, const char *item_key, long *rows, vb_error *err);
/* Forgets the reinsert progress of the item (on_resume: restart), with an event saying so. */
int vb_store_churn_reset(vb_store *s, const char *item_key, vb_error *err);

/* Servers started by the orchestrator: a batch of the 250 ms time series (one transaction; a resent row is
 * ignored by (engine, t)), an on-disk size, and a state change with the engine's log tail. */
int vb_store_server_samples(vb_store *s, const char *engine, const char *item_key, Vbench__ServerSample **rows,
                            size_t n, vb_error *err);
int vb_store_server_size(vb_store *s, const char *engine, const char *item_key, const char *path, long long bytes,
                         vb_error *err);
int vb_store_server_log(vb_store *s, const char *engine, const char *unit, const char *state, const char *message,
                        const char *log_tail, vb_error *err);

/* UTC ISO-8601 timestamp with milliseconds, for the at/recorded_at columns. */
void vb_store_now(char *buf, size_t len);

#endif
