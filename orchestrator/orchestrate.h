/* The orchestrator role of the agent: runs database servers from the engine recipes installed on this host
 * (orchestrator/recipe.h) as systemd transient units confined to the budget the coordinator sends, waits until
 * the engine answers a real query through its own adapter, samples the unit's memory and CPU while the
 * engine's items run, measures its files on disk, and stops it (docs/design.md §1, issue #4).
 *
 * Threads: requests arrive in the agent's main thread. "phase" is answered there. "start" and "stop" take
 * seconds to minutes (initdb, readiness, a clean shutdown), so each runs on an operation thread of its own
 * server and reports through the agent's inproc inbox, as the work thread does; the main thread keeps
 * heartbeating. One operation per server at a time; a request that arrives while one runs waits its turn.
 * vb_orch_tick (main thread, about once a second) streams new samples and notices a unit that died. */
#ifndef VB_ORCHESTRATOR_ORCHESTRATE_H
#define VB_ORCHESTRATOR_ORCHESTRATE_H

#include <czmq.h>

#include "proto/wire.h"

typedef struct vb_orch_opts {
    const char *recipes_dir;   /* NULL: vb_recipe_default_dir */
    const char *images_dir;    /* NULL: $VBENCH_IMAGES or /var/cache/vbench/images */
    const char *work_dir;      /* servers' data directories go below WORK_DIR/servers/ */
    const char *bus_address;   /* NULL: the local systemd (see orchestrator/units.h) */
    const char *inbox_ep;      /* the agent's inproc PULL endpoint */
    const char *agent_id;
    /* Where other hosts reach this one (the servers of a topology placed over several orchestrators listen there,
     * coordinator/placement.h): address, or NULL for the address this host reaches the coordinator from (its
     * endpoint, coordinator: the local end of the route to tcp://HOST:PORT; 127.0.0.1 for another transport). */
    const char *address;
    const char *coordinator;
} vb_orch_opts;

typedef struct vb_orch vb_orch;

vb_orch *vb_orch_new(const vb_orch_opts *o);
/* Takes a request (the main thread keeps ownership of rq). */
void vb_orch_request(vb_orch *o, const Vbench__ServerRequest *rq, zsock_t *coord);
/* Streams samples, reports deaths, starts queued operations. */
void vb_orch_tick(vb_orch *o, zsock_t *coord);
/* Waits for running operations and stops sampling. Units keep running: the coordinator stops them, and a
 * restarted orchestrator adopts a healthy one. */
void vb_orch_destroy(vb_orch **o);

#endif
