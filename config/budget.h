/* The server budget: which CPUs and how much memory the database gets, how large its private /dev/shm is, and
 * what is left for the client. docs/design.md §5: the reference run gave the server CPUs 0-63, 120.8 GB (no swap)
 * and a 13 GB /dev/shm, the client CPUs 64-79 and 8 GB. Those numbers belong to one host; a profile names a
 * layout and the budget is resolved against the host the server runs on, so the same profile fits a laptop.
 *
 * Profile section (every key optional):
 *   resources:
 *     layout: auto | reference | small     auto: reference when the host has >= 80 cores and >= 136 GB, else small
 *     server_cpus: "0-63"                  overrides the layout's value, likewise the keys below
 *     server_memory: 120.8GB               sizes: a number with B, KB, MB, GB, TB (powers of 1000) or KiB, MiB,
 *     shm: 13GB                              GiB, TiB (powers of 1024)
 *     client_cpus: "64-79"
 *     client_memory: 8GB
 *
 * The small layout on a host with C cores and M bytes: the client gets the last max(1, C/5) cores (16 of 80 in
 * the reference) and min(8 GB, M/4); the server the other cores (all of them on a one-core host) and M/2; the
 * /dev/shm is the reference's share of the server's memory (13 / 120.8). */
#ifndef VB_CONFIG_BUDGET_H
#define VB_CONFIG_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "config/profile.h"
#include "util/kv.h"
#include "util/error.h"

typedef struct vb_budget {
    char layout[16];          /* "reference" or "small", as resolved */
    char server_cpus[256];
    int n_server_cpus;
    uint64_t server_memory;   /* bytes */
    uint64_t shm;
    char client_cpus[256];
    int n_client_cpus;
    uint64_t client_memory;
    int host_cores;           /* what it was resolved against */
    uint64_t host_memory;
} vb_budget;

/* Resolves the profile's resources section for a host with `cores` online CPUs and `memory` bytes. Errors
 * (a CPU the host does not have, a malformed size) name the key; the loader already checked the syntax. */
int vb_budget_resolve(const vb_profile *p, int cores, uint64_t memory, vb_budget *out, vb_error *err);

/* "120.8GB" -> 120800000000. VB_ERROR naming `what` for anything else than a positive size. */
int vb_size_parse(const char *text, const char *what, uint64_t *out, vb_error *err);
/* Bytes as the shortest exact-enough text: "12.0 GiB", "512 MiB". */
const char *vb_size_format(uint64_t bytes, char *buf, size_t len);

/* Calls fn once per budget entry ("layout", "server_cpus", "server_memory_bytes", ...) with its value as text:
 * what the manifest records and what travels to the orchestrator. */
void vb_budget_each(const vb_budget *b, void (*fn)(void *ctx, const char *key, const char *value), void *ctx);
/* The inverse, on the orchestrator's side: fills b from such entries. VB_ERROR naming a missing or bad key. */
int vb_budget_from_kv(const vb_kv *kv, size_t n, vb_budget *b, vb_error *err);
/* Node k's share (0 .. nodes - 1) of b when one host runs several servers of an engine (topology, issue 39:
 * config/profile.h vb_profile_engine_nodes): the server CPUs cut into nodes contiguous slices, the first ones a
 * CPU larger when they do not divide (fewer CPUs than nodes: node k gets CPU k mod n, shared), the memory and the
 * /dev/shm divided by nodes. The client's part is unchanged. */
void vb_budget_node_share(const vb_budget *b, int node, int nodes, vb_budget *out);

#endif
