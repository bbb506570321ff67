/* The engine contract's conformance script (the contract is written in engines/engine.h).
 *
 * One script, run through the public wrappers against any registered engine: open, version, create, a parallel
 * load (one connection per thread, some rows without a tag), build, sizes, searches checked against a brute-force
 * answer computed here (k distinct live ids, closest first for the table's metric, recall), ef_search per
 * connection, the tag filter (rows without a tag never pass it, yet unfiltered searches find them), the class filter
 * (each query on its own class and on another; rows without a class never pass it), remove (and remove of absent
 * ids), insert of a live id (an upsert: vector, tag and class replaced, no new row), insert of removed
 * ids (they come back), concurrent searches on two connections, errors as classes, and, for a server engine when
 * the caller can restart the server, VB_RETRY and recovery after the restart.
 *
 * The same script serves the unit test (tests/unit/test_engines.c: hnswlib and exact) and the server tests
 * (tests/tools/vb_conformance.c, driven by tests/e2e/63-conformance.t); what it prints goes through the caller's
 * callbacks, so each side speaks its own TAP. */
#ifndef VB_ENGINES_CONFORMANCE_H
#define VB_ENGINES_CONFORMANCE_H

#include <stddef.h>

#include "engines/engine.h"

typedef struct vb_conformance_report {
    /* One check: pass 1 / 0. name may end in " # TODO reason" or " # SKIP reason" (TAP directives). */
    void (*check)(void *arg, int pass, const char *name);
    /* A diagnostic line (measured numbers, the engine's messages); no leading '#'. */
    void (*note)(void *arg, const char *text);
    void *arg;
} vb_conformance_report;

typedef struct vb_conformance_opts {
    const char *engine;              /* registered name */
    const vb_kv *params;             /* the engine's profile parameters (server address, credentials, ...) */
    size_t n_params;
    const char *data_dir;            /* may be NULL */
    vb_metric metric;                /* the table's metric */
    size_t rows, dim, queries;       /* 0: 3000 rows of 24 dimensions, 60 queries */
    double min_recall;               /* recall@10 the engine must reach at ef_search 200; 0: 0.9 */
    /* Repeated ids and ids out of order break the contract; when a server is known to do both in filtered answers
     * (MariaDB 11.8), this names the defect and those two checks of filtered answers are TODO instead of failing
     * (in an unfiltered answer they still fail). */
    const char *known_filtered_defects;
    /* A row in the table that even ef_search 1000 does not reach fails the script; when a server is known to leave
     * a node of its graph unreachable now and then (MariaDB 11.8), this names it and one such row per check is
     * allowed, reported as a TODO (two fail; a lost update or a row missing from the count always fails). */
    const char *known_unreachable;
    /* Restarts the server and returns once it answers again (VB_OK); NULL: the restart check is skipped. */
    int (*restart)(void *arg, vb_error *err);
    void *restart_arg;
} vb_conformance_opts;

/* Runs the script; returns the number of failed checks (TODO and SKIP do not count). */
int vb_conformance_run(const vb_conformance_opts *o, const vb_conformance_report *r);

#endif
