/* The coordinator's agent machine, written as data: one table of rows {state, event, guard, actions, next},
 * looked up by vb_agent_fsm_step(). No sockets, no store: the caller owns the agent's record and the plan, the
 * table only says what to do. tests/unit/test_agent_fsm.c drives it through every (state, event) pair.
 *
 * States. NEW: the coordinator process has no record of the sender (never welcomed, or the coordinator
 * restarted). IDLE: welcomed, runs nothing. BUSY: runs `item`, its current attempt. DRAINING: runs an attempt
 * that is no longer current (it said so in its hello, after a restart of ours or a cut link); it was told to
 * abort and gets nothing new until its Done or Failed for it arrives. LOST: silent past limits.agent_silent_s,
 * or its local process died; its item was interrupted.
 *
 * How the caller uses it (coordinator/campaign.c):
 *   1. Find the sender's record (none: state NEW) and name the event: a message's body (HELLO ... OTHER), or
 *      what the loop saw (ASSIGN, ABORT, SILENT, PROCESS_DIED, LIMIT_UNANSWERED, CAMPAIGN_END).
 *   2. Evaluate the facts (VB_AGENT_F_*) the event needs, from the record, the message and the plan, as they are
 *      before anything changes; each is a one-line comparison, defined next to its bit below. A fact that does
 *      not apply to the state is 0.
 *   3. row = vb_agent_fsm_step(state, event, facts). The rows of a (state, event) pair are tried in order; the
 *      first whose `when` bits all hold and whose `unless` bits all fail is the answer. Every pair ends with a
 *      row without guard, so the answer is never NULL for a valid state and event.
 *   4. Do row->actions in order (the list ends at the first VB_AGENT_ACT_NONE; see each action's comment for
 *      what it does); a REFUSE is a caller bug: record it as an error event. An action that cannot be done
 *      (ASSIGN when the store refuses the item's start) ends the row there and the state stays.
 *   5. Set the state to row->next; the agent keeps its item only in BUSY and its drain key only in DRAINING.
 *   row->note is the word for the event table ("reconnected, item running", "took over its item", ...). */
#ifndef VB_COORDINATOR_AGENT_FSM_H
#define VB_COORDINATOR_AGENT_FSM_H

#include <stddef.h>

typedef enum {
    VB_AGENT_NEW,
    VB_AGENT_IDLE,
    VB_AGENT_BUSY,
    VB_AGENT_DRAINING,
    VB_AGENT_LOST,
    VB_AGENT_N_STATES
} vb_agent_state;

typedef enum {
    /* Messages from the agent. */
    VB_AGENT_EV_HELLO,
    VB_AGENT_EV_HEARTBEAT,
    VB_AGENT_EV_PROGRESS,
    VB_AGENT_EV_LOG,
    VB_AGENT_EV_RESULT,
    VB_AGENT_EV_SERVER_REPORT,
    VB_AGENT_EV_DONE,
    VB_AGENT_EV_FAILED,
    VB_AGENT_EV_OTHER,            /* any other body: not something an agent sends */
    /* What the coordinator's loop decides or sees. */
    VB_AGENT_EV_ASSIGN,           /* the next item goes to this agent (chosen among the idle ones with its role) */
    VB_AGENT_EV_ABORT,            /* its item must stop: phase timeout, reinsert limit, server died, interrupted */
    VB_AGENT_EV_SILENT,           /* nothing heard for limits.agent_silent_s */
    VB_AGENT_EV_PROCESS_DIED,     /* local mode: its process ended (waitpid) */
    VB_AGENT_EV_LIMIT_UNANSWERED, /* no answer within limits.abort_unanswered_s to the reinsert limit's abort */
    VB_AGENT_EV_CAMPAIGN_END,     /* the campaign is over (teardown) */
    VB_AGENT_EV_ABORT_UNANSWERED, /* an Abort (any phase, or a stale attempt's) unanswered for
                                   * limits.abort_unanswered_s: the agent is stuck in a call */
    VB_AGENT_EV_SHARE,            /* a ShareRequest (leader) or ShareReport (helper) of a capacity item: relayed */
    VB_AGENT_EV_LEND,             /* lent to the capacity item just assigned, as a helper (idle client agents) */
    VB_AGENT_N_EVENTS
} vb_agent_event;

/* Facts: the guards of the rows, one bit each, evaluated by the caller. y is the item the message names, x the
 * agent's item (BUSY), "current" means attempt == plan attempt of that item and not interrupted. */
enum {
    VB_AGENT_F_BAD_PROTOCOL = 1u << 0,    /* hello: Hello.protocol != VB_PROTOCOL_VERSION */
    VB_AGENT_F_OLD_HELLO = 1u << 1,       /* hello: same process (instance) and Hello.seq not newer than the last */
    VB_AGENT_F_NEW_PROCESS = 1u << 2,     /* hello: no record, or Hello.instance differs (0: unknown, counts as new) */
    VB_AGENT_F_NAMES_ITEM = 1u << 3,      /* hello: Hello.item_key is not empty */
    VB_AGENT_F_FINISHED = 1u << 4,        /* hello: Hello.item_finished */
    VB_AGENT_F_ITS_ATTEMPT = 1u << 5,     /* hello, done, failed: names the item and attempt this agent runs (BUSY:
                                           * y == x and attempt == the plan's latest attempt of x) or drains
                                           * (DRAINING: the drain key and attempt) */
    VB_AGENT_F_ITEM_RUNNING = 1u << 6,    /* hello, BUSY: x is still running in the plan */
    VB_AGENT_F_RUNNING_ATTEMPT = 1u << 7, /* hello: y is the running item (campaign's `running`), its attempt current */
    VB_AGENT_F_ORPHAN = 1u << 8,          /* hello: y is the orphan of the previous coordinator process, same attempt,
                                           * still pending, nothing running, and its engine has no server */
    VB_AGENT_F_ON_RUNNING = 1u << 9,      /* progress: names the running item, and this agent runs it */
    VB_AGENT_F_CURRENT = 1u << 10,        /* result, done, failed: y is in the plan and the attempt is current */
    VB_AGENT_F_LENT = 1u << 12,           /* BUSY as a helper lent to x (a capacity item another agent leads) */
    VB_AGENT_F_STUCK_ON_IT = 1u << 11,    /* hello, LOST: names, unfinished, the attempt it was found stuck in */
    VB_AGENT_N_FACTS = 13
};

typedef enum {
    VB_AGENT_ACT_NONE,            /* ends the list */
    VB_AGENT_ACT_IGNORE,          /* nothing to do: the event means nothing in this state */
    VB_AGENT_ACT_REFUSE,          /* the caller never raises this event in this state: a bug; record an error */
    VB_AGENT_ACT_REJECT_HELLO,    /* error event "speaks protocol N: refused"; no record, no Welcome */
    VB_AGENT_ACT_RECORD_HELLO,    /* create the record if NEW; take the hello's routing id, roles, cores, memory,
                                   * instance, seq; last heard = now */
    VB_AGENT_ACT_INTERRUPT_ITEM,  /* interrupt x, the agent's fault (restart, silence, death): interrupt_item(.., 1),
                                   * limits.on_agent_lost and max_attempts decide rerun or fail */
    VB_AGENT_ACT_REQUEUE_ITEM,    /* x did not take (the same process runs another item): interrupt_item(.., 0) */
    VB_AGENT_ACT_RESEND_ASSIGN,   /* the same process never got x's Assign: send it again (same attempt) */
    VB_AGENT_ACT_REJOIN_ITEM,     /* the agent's item := y, the running item it still runs */
    VB_AGENT_ACT_TAKE_OVER_ORPHAN,/* y runs again here without a new attempt: item running, adopted in the store,
                                   * the agent's item := y, the orphan cleared */
    VB_AGENT_ACT_ABORT_STALE,     /* send Abort for the stale attempt it names; drain key/attempt := the hello's */
    VB_AGENT_ACT_FORGET_ORPHAN,   /* if the orphan ran on this agent, which came back without it: that attempt is
                                   * gone, the item runs again (orphan_gone) */
    VB_AGENT_ACT_WELCOME,         /* agent seen (store), "joined" / "said hello again (was S)" event with the
                                   * row's note, send Welcome */
    VB_AGENT_ACT_TOUCH,           /* last heard = now */
    VB_AGENT_ACT_NOTE_HEARD,      /* LOST: last heard = now; an event the first time after a silence */
    VB_AGENT_ACT_ASK_HELLO,       /* send Heartbeat.hello_again to the sender: its message waits in its outbox */
    VB_AGENT_ACT_NOTE_PROGRESS,   /* progress line, and the churn reinsert's limit clock */
    VB_AGENT_ACT_RECORD_LOG,      /* the agent's log line into the events */
    VB_AGENT_ACT_RECORD_RESULT,   /* commit the result (the store decides retry or poison), ack it */
    VB_AGENT_ACT_ACK_ONLY,        /* ack a result that is not recorded (stale attempt, unknown item), with an event */
    VB_AGENT_ACT_SERVER_REPORT,   /* hand the report to the server machine (server_fsm) */
    VB_AGENT_ACT_FINISH_ITEM,     /* Done of the current attempt: ack; the item is done if still running; the
                                   * running slot is freed */
    VB_AGENT_ACT_FAIL_ITEM,       /* Failed of the current attempt: ack; the item fails if still running; the
                                   * running slot is freed */
    VB_AGENT_ACT_END_STALE,       /* Done or Failed of an interrupted attempt: ack; an event, not an outcome */
    VB_AGENT_ACT_WARN_UNEXPECTED, /* an event "unexpected <body> from agent" */
    VB_AGENT_ACT_ASSIGN,          /* start a new attempt of the item: store, Assign; the agent's item := it */
    VB_AGENT_ACT_SEND_ABORT,      /* send Abort for its item, with the reason */
    VB_AGENT_ACT_REPORT_SILENT,   /* error event "silent for N s: marked lost (was S)" */
    VB_AGENT_ACT_EXPIRE_ITEM,     /* the reinsert did not stop at its limit: the item expires (resume continues) */
    VB_AGENT_ACT_SEND_BYE,        /* send Bye "campaign over" */
    VB_AGENT_ACT_REPORT_STUCK,    /* an agent_stuck event (the agent, the item, the wait); a local agent is SIGKILLed
                                   * (local_agents.c starts it again), a remote one stays lost until it comes back
                                   * without that attempt */
    VB_AGENT_ACT_RELAY_SHARE,     /* a ShareRequest to each helper lent to the running item, a ShareReport to its leader */
    VB_AGENT_ACT_LEND,            /* the agent's item := the running one as its helper; its Assign (helper_of) */
    VB_AGENT_ACT_END_LENT,        /* the end of a helper's share session: ack; an event when it failed; not lent */
    VB_AGENT_N_ACTIONS
} vb_agent_action;

#define VB_AGENT_FSM_MAX_ACTIONS 6

typedef struct vb_agent_row {
    vb_agent_state state;
    vb_agent_event event;
    unsigned when;     /* facts that must all hold */
    unsigned unless;   /* facts that must all fail */
    vb_agent_state next;
    const char *note;
    vb_agent_action actions[VB_AGENT_FSM_MAX_ACTIONS];   /* in order, up to the first VB_AGENT_ACT_NONE */
} vb_agent_row;

/* The row for `event` in `state` under `facts` (VB_AGENT_F_* bits): its actions and next state. NULL only for
 * a state or event out of range. The row is static: the caller does not free it. */
const vb_agent_row *vb_agent_fsm_step(vb_agent_state state, vb_agent_event event, unsigned facts);

/* The whole table, in lookup order (for the tests and for printing it). */
const vb_agent_row *vb_agent_fsm_rows(size_t *n);

/* Words for events and logs ("busy", "hello", "resend_assign", "finished"); "?" out of range. */
const char *vb_agent_fsm_state_name(vb_agent_state s);
const char *vb_agent_fsm_event_name(vb_agent_event e);
const char *vb_agent_fsm_action_name(vb_agent_action a);
const char *vb_agent_fsm_fact_name(unsigned bit);

#endif
