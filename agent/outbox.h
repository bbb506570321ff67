/* The agent's outbox: the messages the coordinator must acknowledge (results, and the Done or Failed that ends
 * an item), kept on disk from before they are sent until the coordinator's Ack arrives, so that neither a lost
 * connection, nor a coordinator that restarts, nor the agent's own crash loses one (docs/design.md §6).
 *
 * One file per message, DIR/<16 hex digits: xxh64 of the key>.pb, holding a header (magic, format version,
 * sequence number, lengths, xxh64 checksum of key and body), the key and the body (an encoded envelope; the
 * outbox does not look inside). A file is written under a temporary name, fsync'd, renamed into place and the
 * directory fsync'd: a file under its final name is whole, or it is corrupt. Putting a key that is already
 * there replaces it. On open every file is read back and checked; one that fails (truncated, bad checksum,
 * unknown format) is moved to DIR/corrupt/, reported through the callback with its path and why, and never
 * loaded: a bad file costs one message (which the coordinator then re-runs), never the agent.
 *
 * Order: entries come back in the order they were put, across restarts (the sequence number), so a resend
 * replays results before the Done that followed them.
 *
 * Two processes must not share an outbox: open takes an exclusive lock on DIR/.lock (waiting up to lock_wait_ms
 * for a previous process with the same id and work directory to finish exiting) and fails naming the directory.
 * Not thread-safe: one thread (the agent's main thread) owns it. */
#ifndef VB_AGENT_OUTBOX_H
#define VB_AGENT_OUTBOX_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct vb_outbox vb_outbox;

/* Called for every file set aside: path is where it went (DIR/corrupt/NAME), why a sentence. */
typedef void (*vb_outbox_report_fn)(void *arg, const char *path, const char *why);

/* Opens (creating DIR and its parents, mode 0700) and loads the outbox in DIR. report may be NULL. Returns NULL
 * with err set when DIR cannot be created or locked. The caller destroys it with vb_outbox_close. */
vb_outbox *vb_outbox_open(const char *dir, int lock_wait_ms, vb_outbox_report_fn report, void *arg, vb_error *err);
/* Releases the memory and the lock; the files stay for the next open. */
void vb_outbox_close(vb_outbox **o);

/* Stores a copy of data under key (durable when this returns VB_OK), replacing an entry with the same key;
 * the entry goes to the end of the order. */
int vb_outbox_put(vb_outbox *o, const char *key, const void *data, size_t len, vb_error *err);
/* Removes the entry (its file first). Returns 1 if it was there, 0 if not. */
int vb_outbox_ack(vb_outbox *o, const char *key);
/* Moves the entry's file to DIR/corrupt/ and reports it (for a body the caller cannot decode). Returns 1 if the
 * entry was there. */
int vb_outbox_set_aside(vb_outbox *o, const char *key, const char *why);

size_t vb_outbox_count(const vb_outbox *o);
/* Entry i (0 .. count - 1) in put order: its key and body, borrowed until the next put/ack/set_aside. */
const char *vb_outbox_key(const vb_outbox *o, size_t i);
const void *vb_outbox_data(const vb_outbox *o, size_t i, size_t *len);
const char *vb_outbox_dir(const vb_outbox *o);

/* The file name an entry with this key has (16 hex digits + ".pb"), into buf of at least 20 bytes. */
const char *vb_outbox_file_name(const char *key, char *buf, size_t len);

#endif
