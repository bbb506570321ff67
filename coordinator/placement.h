/* Placement of a topology's nodes over the campaign's orchestrator agents (issue 39; docs/profiles.md "Topology").
 * A server of several nodes (the engine's `shards: N` or `replicas: R`, config/profile.h vb_profile_engine_nodes)
 * runs on one orchestrator when the campaign has one; with H orchestrator agents, node K runs on orchestrator
 * K mod H (round robin, in the order the coordinator knows them), each orchestrator starting the nodes it holds as
 * units of their own from the same recipe and image, under its own host's budget. What one orchestrator runs of a
 * server is a part; part 0 holds node 0 and is started first (a replica placed on another host copies node 0 over
 * the network, so node 0 answers before the other parts start); the server is ready when every part is, stops when
 * every part stopped, and a part that fails or dies is the server's failure or death (the other parts are stopped).
 *
 * The coordinator's server machine (coordinator/server_fsm.h) stays one per server: coordinator/servers.c keeps the
 * parts' states here, tells the machine PARTS_PENDING while another part has not answered, and carries out its
 * TAKE_PART action. This file is the pure half: no sockets, no store; tests/unit/test_placement.c drives it. */
#ifndef VB_COORDINATOR_PLACEMENT_H
#define VB_COORDINATOR_PLACEMENT_H

#include <stddef.h>

#define VB_PLACE_MAX_NODES 16   /* as the orchestrator's MAX_NODES (proto ServerRequest.nodes) */
#define VB_PLACE_MAX_PARTS 16

/* A part's state as the coordinator sees it. IDLE: not asked (or stopped); WAITING: its start waits for part 0's
 * ready; STARTING / STOPPING: a request is out; READY; FAILED: it failed or died; CLEANUP: stopped because another
 * part failed or died (its answer is recorded, not the server's). */
typedef enum {
    VB_PART_IDLE,
    VB_PART_WAITING,
    VB_PART_STARTING,
    VB_PART_READY,
    VB_PART_STOPPING,
    VB_PART_FAILED,
    VB_PART_CLEANUP,
    VB_PART_N_STATES
} vb_part_state;

typedef struct vb_place_part {
    int orch;                        /* index of its orchestrator in the list given to vb_placement_plan */
    int nodes[VB_PLACE_MAX_NODES];   /* the nodes it holds, ascending; nodes[0] leads its reports */
    int n_nodes;
    vb_part_state state;
} vb_place_part;

/* Node K on orchestrator K mod n_orch: one part per orchestrator that holds a node, parts[0] the one with node 0,
 * in orchestrator order. n_orch <= 1 or n_nodes <= 1: one part (orchestrator 0) with every node, the server as one
 * orchestrator runs it. n_nodes is capped at VB_PLACE_MAX_NODES. Returns the number of parts; their state IDLE. */
int vb_placement_plan(int n_nodes, int n_orch, vb_place_part *parts);

/* The part that holds node k, -1 none. */
int vb_placement_part_of(const vb_place_part *parts, int n_parts, int k);

/* The answers a part gives (the orchestrator's reports). */
typedef enum { VB_PART_SAID_READY, VB_PART_SAID_STOPPED, VB_PART_SAID_FAILED, VB_PART_SAID_DIED } vb_part_said;

/* What the server machine hears of a part's answer. */
typedef enum {
    VB_PLACE_SERVER,     /* the server's own answer: the last part ready, the last stopped, a failure or death */
    VB_PLACE_PENDING,    /* a part's answer while another part has not answered: PARTS_PENDING */
    VB_PLACE_RECORDED    /* a part stopped after another's failure (CLEANUP), or an answer nothing asked for: its
                          * facts are recorded, the machine is not told */
} vb_place_heard;

/* Part p answered `said`: its state moves (READY, IDLE after a stop, FAILED), and the return says what the server's
 * machine hears. A failure or death of one part while others run marks those CLEANUP: *stop_others is set, and the
 * caller asks their orchestrators to stop them. A ready part 0 with parts WAITING sets *start_waiting: the caller
 * starts them (they become STARTING). */
vb_place_heard vb_placement_answer(vb_place_part *parts, int n_parts, int p, vb_part_said said, int *stop_others,
                                   int *start_waiting);

/* Whether every part is in state st. */
int vb_placement_all(const vb_place_part *parts, int n_parts, vb_part_state st);

const char *vb_part_state_name(vb_part_state s);

#endif
