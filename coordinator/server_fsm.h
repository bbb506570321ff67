/* The coordinator's server machine, written as data: one table of rows {state, event, guard, actions, next},
 * looked up by vb_server_fsm_step(). One machine per engine that has a recipe (an engine without one has no
 * server and never consults it). No sockets, no store: the caller owns the server's record, the table says
 * what to do. tests/unit/test_server_fsm.c drives it through every (state, event) pair.
 *
 * States are proto/server_state.h's, shared with the orchestrator. The coordinator rests in NONE (not started,
 * or wanted again after a death it may restart), STARTING / STOPPING (a request is out to the orchestrator),
 * READY (the engine's items may run, with the server's connect parameters), STOPPED, FAILED (could not start,
 * or died and may not restart: the engine's remaining items fail with the failure). DIED is the orchestrator's
 * own state: the coordinator turns a "died" report into NONE or FAILED at once, so every DIED row refuses.
 *
 * How the caller uses it (coordinator/campaign.c):
 *   1. Name the event: NEEDED (the next item is this engine's and nothing runs), a server report from the
 *      orchestrator (its state word: ready, failed, died, stopped, samples, sizes, anything else), or what the
 *      loop's housekeeping sees (START_TIMEOUT after limits.server_start_timeout_s in STARTING, STOP_TIMEOUT
 *      after 900 s in STOPPING, NO_PENDING when the engine has no pending or running item, CAMPAIGN_END).
 *   2. Evaluate the facts (VB_SERVER_F_*) the event needs, as they are before anything changes.
 *   3. row = vb_server_fsm_step(state, event, facts): the first row of the pair whose `when` bits all hold and
 *      whose `unless` bits all fail; every pair ends with a row without guard.
 *   4. Do row->actions in order (up to the first VB_SERVER_ACT_NONE); a REFUSE is a caller bug: record it.
 *   5. Set the state to row->next. For NEEDED, the item is assigned only after MAY_RUN (once the orchestrator
 *      confirmed the server for it: the "phase" request); after WAIT, REQUEST_START or a failure it waits. */
#ifndef VB_COORDINATOR_SERVER_FSM_H
#define VB_COORDINATOR_SERVER_FSM_H

#include <stddef.h>

#include "proto/server_state.h"

typedef enum {
    VB_SERVER_EV_NEEDED,          /* the next item is this engine's, nothing runs (server_ready_for) */
    VB_SERVER_EV_REPORT_READY,    /* the orchestrator's reports (on_server_report), by their state word */
    VB_SERVER_EV_REPORT_FAILED,
    VB_SERVER_EV_REPORT_DIED,
    VB_SERVER_EV_REPORT_STOPPED,
    VB_SERVER_EV_REPORT_SAMPLES,
    VB_SERVER_EV_REPORT_SIZES,
    VB_SERVER_EV_REPORT_PROFILE,  /* the answer to SERVER_PROFILE: a window's CPU profile, or why there is none */
    VB_SERVER_EV_REPORT_OTHER,    /* any other word: logged */
    VB_SERVER_EV_START_TIMEOUT,   /* STARTING for longer than limits.server_start_timeout_s */
    VB_SERVER_EV_STOP_TIMEOUT,    /* STOPPING for longer than 900 s */
    VB_SERVER_EV_NO_PENDING,      /* the engine has no pending or running item left */
    VB_SERVER_EV_CAMPAIGN_END,    /* the loop ended: servers still up are stopped (up to 120 s) */
    VB_SERVER_N_EVENTS
} vb_server_event;

/* Facts: the guards of the rows, one bit each, evaluated by the caller. */
enum {
    VB_SERVER_F_OTHER_UP = 1u << 0,        /* another engine's server is starting, ready or stopping */
    VB_SERVER_F_NO_ORCHESTRATOR = 1u << 1, /* no welcomed agent (not lost) has the role orchestrator */
    VB_SERVER_F_BUDGET_FAILS = 1u << 2,    /* the budget cannot be resolved for the orchestrator's host */
    VB_SERVER_F_POLICY_RESTART = 1u << 3,  /* limits.on_server_failure is restart (the default) */
    VB_SERVER_F_POLICY_STOP = 1u << 4,     /* limits.on_server_failure is stop */
    VB_SERVER_F_RESTARTS_LEFT = 1u << 5,   /* fewer than 2 restarts so far */
    VB_SERVER_F_COLD_PENDING = 1u << 6,    /* NEEDED by a cold_start item whose cold start is not done for it yet */
    VB_SERVER_F_PARTS_PENDING = 1u << 7,   /* a ready or stopped report of one part of a server placed over several
                                            * orchestrators while another part has not answered (placement.h) */
    VB_SERVER_N_FACTS = 8
};

typedef enum {
    VB_SERVER_ACT_NONE,            /* ends the list */
    VB_SERVER_ACT_IGNORE,          /* nothing to do: the event means nothing in this state */
    VB_SERVER_ACT_REFUSE,          /* the caller never raises this event in this state: a bug; record an error */
    VB_SERVER_ACT_MAY_RUN,         /* the item may be assigned, once the orchestrator confirmed it ("phase") */
    VB_SERVER_ACT_WAIT,            /* the item waits (a request is out, or another server must stop first, or
                                    * no orchestrator joined yet) */
    VB_SERVER_ACT_FAIL_ITEM,       /* the item fails with the server's failure ("server" domain) */
    VB_SERVER_ACT_REQUEST_START,   /* budget into the manifest, send "start" to the orchestrator, remember it, since
                                    * := now; the item waits */
    VB_SERVER_ACT_BUDGET_FAILED,   /* failure := the budget's error; server log "failed" */
    VB_SERVER_ACT_LOG_REPORT,      /* server log and event "server E S (was T): message" */
    VB_SERVER_ACT_TAKE_READY,      /* connect parameters and facts from the report; say ready */
    VB_SERVER_ACT_RECORD_FAILURE,  /* failure := message and log tail; say FAILED */
    VB_SERVER_ACT_SERVER_DIED,     /* failure := message; event; the item that ran on it fails (the running one,
                                    * its agents told to abort; or the last finished within 0.5 s of the death);
                                    * no phase confirmation pending */
    VB_SERVER_ACT_COUNT_RESTART,   /* restarts += 1; say it starts again for the next item */
    VB_SERVER_ACT_NO_RESTART,      /* say the engine's remaining items fail (limits.on_server_failure) */
    VB_SERVER_ACT_STOP_CAMPAIGN,   /* the campaign stops (limits.on_server_failure: stop), as interrupted */
    VB_SERVER_ACT_RECORD_STOP,     /* the report's facts as server.E.at_stop.* */
    VB_SERVER_ACT_STORE_SAMPLES,   /* the time series batch into the store */
    VB_SERVER_ACT_STORE_SIZES,     /* sizes into the store; an answer to the pending "phase": the item may go */
    VB_SERVER_ACT_START_TIMED_OUT, /* failure := "did not become ready within ..."; server log; say */
    VB_SERVER_ACT_STOP_TIMED_OUT,  /* server log "no answer to the stop request within 900 s" */
    VB_SERVER_ACT_REQUEST_STOP,    /* send "stop" to the orchestrator, since := now; say */
    VB_SERVER_ACT_REQUEST_COLD_START, /* as REQUEST_START, but "cold start" (stop if running, evict the data
                                       * directory from the page cache, start) for the item; the item waits */
    VB_SERVER_ACT_STORE_PROFILE,   /* the window's CPU profile into the store, or its note into the manifest */
    VB_SERVER_ACT_TAKE_PART,       /* one part's answer of a placed server (coordinator/placement.h): its connect
                                    * parameters and facts (ready) or its at_stop facts (stopped) recorded; part 0
                                    * ready starts the parts that wait for it */
    VB_SERVER_N_ACTIONS
} vb_server_action;

#define VB_SERVER_FSM_MAX_ACTIONS 4

typedef struct vb_server_row {
    vb_server_state state;
    vb_server_event event;
    unsigned when;     /* facts that must all hold */
    unsigned unless;   /* facts that must all fail */
    vb_server_state next;
    const char *note;
    vb_server_action actions[VB_SERVER_FSM_MAX_ACTIONS];   /* in order, up to the first VB_SERVER_ACT_NONE */
} vb_server_row;

/* The row for `event` in `state` under `facts` (VB_SERVER_F_* bits). NULL only for a state or event out of
 * range. The row is static: the caller does not free it. */
const vb_server_row *vb_server_fsm_step(vb_server_state state, vb_server_event event, unsigned facts);

/* The whole table, in lookup order. */
const vb_server_row *vb_server_fsm_rows(size_t *n);

/* Words for events and logs; state names are vb_server_state_name(); "?" out of range. */
const char *vb_server_fsm_event_name(vb_server_event e);
const char *vb_server_fsm_action_name(vb_server_action a);
const char *vb_server_fsm_fact_name(unsigned bit);

#endif
