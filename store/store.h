/* The results store: the campaign's SQLite database, written only by the coordinator.
 *
 * Every write is its own transaction and is durable when the call returns (WAL, synchronous=FULL): a result is
 * committed together with the plan item it completes, so the database never holds a result whose item still
 * looks unfinished, and a resent result (same result_key) is ignored. The plan table is the checkpoint. */
#ifndef VB_STORE_STORE_H
#define VB_STORE_STORE_H

#include <sqlite3.h>
#include <sys/types.h>

#include "config/plan.h"
#include "config/profile.h"
#include "proto/vbench.pb-c.h"
#include "util/error.h"

typedef struct vb_store vb_store;

/* What a failed store call means to its caller (issue 12). The coordinator decides on these classes, never on
 * SQLite's numbers. Every function below that writes or reads the campaign's rows returns one; they are the
 * statuses of util/error.h, so the tree has one retry number (VB_STORE_RETRY is VB_RETRY) and
 * `if (vb_store_x(...))` still reads "failed". err->code is never the class: it is SQLite's extended result code
 * when SQLite reported the failure, errno for a system call, 0 otherwise (a record refused before SQLite saw it).
 *   RETRY (VB_RETRY):  the store itself failed (disk full, I/O error, a damaged file, cannot open, locked):
 *           nothing of the call was written; the same record can be stored once the cause is fixed. The
 *           coordinator keeps the record where it is (an unacknowledged result stays in its agent's outbox) and
 *           stops cleanly.
 *   POISON (VB_ERROR): this record can never be stored (a constraint, a type mismatch, too big, a value out of
 *           range, an inconsistent latency histogram, a Result with no body, an unknown plan item): the
 *           coordinator acknowledges it and fails its item with the reason.
 * Opening, vb_store_load_campaign, vb_store_check_plan and vb_store_backup return VB_ERROR for a file that
 * cannot be used as asked (not vbench's, damaged, no campaign, another plan), RETRY when SQLite failed. */
typedef enum { VB_STORE_OK = VB_OK, VB_STORE_RETRY = VB_RETRY, VB_STORE_POISON = VB_ERROR } vb_store_class;


/* How a results database is opened.
 *  VB_STORE_CREATE  a new file (refused if it exists), its missing directories, the writer lock; mode 0600 and
 *                   directories 0700 unless opts.mode says otherwise (r bits give the directories x bits).
 *  VB_STORE_WRITE   an existing campaign (resume): the writer lock, then the checks below; an older vbench file
 *                   gains the current columns and marks.
 *  VB_STORE_READ    status / show: read-only, never writes the file, no lock; the views are TEMP views (a file
 *                   of an older vbench is read through a copy in memory that gains the current columns).
 * WRITE and READ refuse, saying what the file is, an empty file, a file that is not SQLite, an SQLite database
 * that is not vbench's (PRAGMA application_id, or for older files the tables), and a damaged one
 * (PRAGMA quick_check), with what to do (FILE.bak, `sqlite3 FILE .recover`). A second writer is refused by the
 * lock (lock.h: "campaign NAME is being run by PID N on HOST since T"). */
typedef enum { VB_STORE_CREATE, VB_STORE_WRITE, VB_STORE_READ } vb_store_access;
typedef struct vb_store_opts {
    vb_store_access access;
    mode_t mode;              /* CREATE: the file's mode, 0 = 0600 */
    const char *campaign;     /* CREATE: the campaign's name, for the lock's record; may be NULL */
} vb_store_opts;
int vb_store_open_with(const char *path, const vb_store_opts *o, vb_store **out, vb_error *err);
/* vb_store_open_with with create ? VB_STORE_CREATE : VB_STORE_WRITE and the default mode. */
int vb_store_open(const char *path, int create, vb_store **out, vb_error *err);
/* Closes (a campaign's writer first writes its final backup, see vb_store_backup_every) and lets the lock go. */
void vb_store_close(vb_store **s);
/* Closes a database whose creation did not finish and removes what the open made: the file, its -wal and -shm,
 * the lock, the directories made for it. For a file that was not created by this open, like vb_store_close
 * without the backup. */
void vb_store_discard(vb_store **s);
sqlite3 *vb_store_db(vb_store *s);
/* The message of the store's first RETRY-class failure since it was opened (also of a call made with err NULL,
 * such as vb_store_event), or NULL while every call worked: the coordinator stops on it. */
const char *vb_store_failure(vb_store *s);
/* The plan's tally as the database has it (not as a coordinator remembers it): items done, failed or skipped,
 * expired, and the rest (pending, running, interrupted: not done). not_done receives up to `len` bytes of the
 * keys of the rest and of the failed ones ("key (status), ..."); may be NULL. */
int vb_store_plan_tally(vb_store *s, size_t *done, size_t *failed, size_t *expired, size_t *rest, char *not_done,
                        size_t len, vb_error *err);

/* Backups of a campaign's database to FILE.bak, so that a damaged file costs minutes: sqlite3_backup into
 * FILE.bak.tmp, checked (quick_check), fsynced, renamed over FILE.bak; a failed one keeps the previous .bak.
 * vb_store_backup_every turns them on: every `seconds` (<= 0: none on the way) through vb_store_backup_tick, and
 * one at vb_store_close. */
void vb_store_backup_every(vb_store *s, double seconds);
int vb_store_backup(vb_store *s, vb_error *err);
/* Cheap when no backup is due; call it from the coordinator's loop. A failed backup becomes a warn event. */
void vb_store_backup_tick(vb_store *s);

/* Records the campaign row and the plan (new campaign). */
int vb_store_init_campaign(vb_store *s, const vb_profile *p, const char *engines_csv, const vb_plan *plan,
                           vb_error *err);
/* Reads back what resume needs. Strings are malloc'd; the caller frees them. engines may come back NULL. */
int vb_store_load_campaign(vb_store *s, char **yaml, char **source, char **engines, char **status, vb_error *err);
/* Checks that the stored plan has exactly the keys of `plan` (the profile text did not change under us). */
int vb_store_check_plan(vb_store *s, const vb_plan *plan, vb_error *err);
/* Starts a coordinator run: runs += 1, status running; items left 'running' by a killed coordinator become
 * 'interrupted' (they will run again), with an event each; a server whose last server_log row says ready (it went
 * down with a killed coordinator) gets its end row, state 'lost'. retry_failed also re-queues failed/skipped items.
 * resumed_by: the command line of a resume (a "resumed" event), NULL for a new campaign; in the same
 * transaction, so a coordinator killed at any moment leaves runs - 1 = the number of "resumed" events. */
int vb_store_begin_run(vb_store *s, int retry_failed, const char *resumed_by, vb_error *err);

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

/* Commits a result (and, when r->completes_item, marks its item done) in one transaction. engine: the adapter;
 * the row's config is its plan item's engine (the configuration's label).
 * *duplicate = 1 when the result_key was already stored (nothing written). */
int vb_store_commit_result(vb_store *s, const Vbench__Result *r, const char *engine, const char *dataset,
                           const char *agent, int *duplicate, vb_error *err);

/* The kinds of result (a Result's body: build, sweep, window, ...). One table, store/result_kinds.c, gives each
 * kind its table, its columns (each a name and the getter of its value, from which the INSERT and its binds are
 * made) and what the coordinator says when one is committed. Adding a kind is an entry there, its CREATE TABLE in
 * store/schema.sql and its view in store/views.sql (docs/design.md, "Adding a result kind"). */
typedef struct vb_result_kind vb_result_kind;
/* The kind of r; NULL for a Result with no body (or one this store does not know: committing it is POISON). */
const vb_result_kind *vb_result_kind_of(const Vbench__Result *r);
/* Its name, a word ("build", "load_checkpoint", "sweep", ...). */
const char *vb_result_kind_name(const vb_result_kind *k);
/* What the terminal shows for a committed result r of kind k: lines with '\n' between them, "" when nothing. */
void vb_result_describe(const vb_result_kind *k, const Vbench__Result *r, char *buf, size_t len);
/* The table of the i-th kind (i = 0, 1, ...), NULL past the last: for a reader that looks at every result. */
const char *vb_result_table(size_t i);

/* What an event is about: the `kind` column of the event table, one stable word per kind (VB_EVENT_KINDS gives
 * the names), so tests and tools match kinds, never the English of a message. Append new kinds; never rename. */
#define VB_EVENT_KINDS(X)                                                                                            \
    X(NOTE, "note")                           /* anything else */                                                  \
    X(RESUMED, "resumed")                     /* a coordinator run started on an existing campaign */              \
    X(CAMPAIGN_ERROR, "campaign_error")       /* set-up failed */                                                  \
    X(CAMPAIGN_INTERRUPTED, "campaign_interrupted")                                                                \
    X(ITEM_ORPHANED, "item_orphaned")         /* running when a previous coordinator stopped */                    \
    X(ITEM_ATTEMPT, "item_attempt")           /* a second or later attempt started */                             \
    X(ITEM_TAKEN_OVER, "item_taken_over")     /* a restarted coordinator took over a running attempt */           \
    X(ITEM_INTERRUPTED, "item_interrupted")                                                                        \
    X(ITEM_FAILED, "item_failed")                                                                                  \
    X(ITEM_EXPIRED, "item_expired")           /* stopped at its wall-clock limit */                               \
    X(ITEM_WAITING, "item_waiting")           /* waits for an agent with its role */                              \
    X(ASSIGN_RESENT, "assign_resent")                                                                              \
    X(STALE_ABORTED, "stale_aborted")         /* an agent told to stop an attempt that is no longer current */    \
    X(NOT_RECORDED, "not_recorded")           /* a result, end or failure of an attempt that is not current */    \
    X(AGENT_JOINED, "agent_joined")                                                                                \
    X(AGENT_BACK, "agent_back")               /* an agent said hello again */                                     \
    X(AGENT_HEARD, "agent_heard")             /* a lost agent is heard again (asked to say hello) */              \
    X(AGENT_LOST, "agent_lost")               /* silent past limits.agent_silent_s */                             \
    X(AGENT_LOG, "agent_log")                 /* a line an agent logged */                                        \
    X(LOCAL_AGENT_KILLED, "local_agent_killed")                                                                    \
    X(LOCAL_AGENT_EXITED, "local_agent_exited")                                                                    \
    X(PROTOCOL_REFUSED, "protocol_refused")                                                                        \
    X(SENDER_REFUSED, "sender_refused")       /* a key that may not speak for an agent id */                      \
    X(TRANSPORT, "transport")                 /* a connection allowed or refused (summarised per source) */       \
    X(ALLOW_LIST, "allow_list")               /* the allow-list reloaded, or not */                               \
    X(SEND_FAILED, "send_failed")                                                                                  \
    X(MESSAGE_DROPPED, "message_dropped")                                                                          \
    X(UNEXPECTED, "unexpected")               /* an event a state machine does not expect */                      \
    X(REINSERT_STARTED, "reinsert_started")                                                                        \
    X(LIMIT_REACHED, "limit_reached")         /* the reinsert's limit: the agent is told to stop */               \
    X(CHURN_RESTARTED, "churn_restarted")     /* on_resume: restart */                                            \
    X(SERVER, "server")                       /* a server's report: ready, failed, stopped */                     \
    X(SERVER_DIED, "server_died")                                                                                  \
    X(SERVER_UNCONFIRMED, "server_unconfirmed")                                                                    \
    X(BACKUP_FAILED, "backup_failed")                                                                              \
    X(ESTIMATE, "estimate")                   /* the runtime estimate, and at the end the truth beside it */      \
    X(HISTORY, "history")                     /* measured rates kept for the next estimate */                     \
    X(NOTIFY, "notify")                       /* the notify command ran, failed or was killed */          \
    X(FOOTPRINT, "footprint")                 /* the coordinator's own memory, every limits.footprint_every_s */ \
    X(AGENT_STUCK, "agent_stuck")             /* an Abort unanswered for limits.abort_unanswered_s */
#define VB_EVENT_KIND_ENUM(name, word) VB_EVENT_##name,
typedef enum { VB_EVENT_KINDS(VB_EVENT_KIND_ENUM) VB_EVENT__COUNT } vb_event_kind;
#undef VB_EVENT_KIND_ENUM
const char *vb_event_kind_name(vb_event_kind k);

int vb_store_event(vb_store *s, vb_event_kind kind, const char *level, const char *item_key, const char *source,
                   const char *fmt, ...) __attribute__((format(printf, 6, 7)));
int vb_store_manifest_set(vb_store *s, const char *key, const char *value, vb_error *err);
/* The manifest's value of key into buf; 1 when there is one, 0 when not (buf ""). */
int vb_store_manifest_get(vb_store *s, const char *key, char *buf, size_t len);
int vb_store_agent_seen(vb_store *s, const Vbench__Hello *h, vb_error *err);
/* status: "running", "finished", "incomplete", "failed", "interrupted". */
int vb_store_set_status(vb_store *s, const char *status, vb_error *err);

/* A build's load checkpoint (table load_checkpoint): the largest of the item's latest attempt that sent one (an
 * attempt that loads from the first row sends one of 0 rows first); rows 0 when none. */
typedef struct vb_load_checkpoint {
    long connections, slice_rows, rows, attempts;
    double load_s;
} vb_load_checkpoint;
int vb_store_load_checkpoint(vb_store *s, const char *item_key, vb_load_checkpoint *out, vb_error *err);
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

/* A concurrency window as the CPU profile picks it (phases.concurrency.profile: perf): its clients, its span on the
 * agent's wall clock and its efficiency (v_concurrency; has_efficiency 0 where the view shows none). */
typedef struct vb_store_profile_window {
    int clients;
    double start, end;
    int has_efficiency;
    double efficiency;
} vb_store_profile_window;

/* The window of item_key's stored result; 0 when there is none (or it has no window_start). */
int vb_store_window_for_profile(vb_store *s, const char *item_key, vb_store_profile_window *w);
/* Whether configuration config has a CPU profile on dataset (one per configuration and dataset). */
int vb_store_has_server_profile(vb_store *s, const char *config, const char *dataset);
/* A window's CPU profile (server_profile and its functions), in one transaction; replaces one of the same item. */
int vb_store_server_profile(vb_store *s, const char *engine, const char *config, const char *dataset,
                            const vb_store_profile_window *w, const Vbench__ServerProfile *pr, vb_error *err);

/* UTC ISO-8601 timestamp with milliseconds, for the at/recorded_at columns. */
void vb_store_now(char *buf, size_t len);

#endif
