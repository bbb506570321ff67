/* The coordinator's agent machine as a table (see coordinator/agent_fsm.h for how the caller uses it).
 *
 * The caller is coordinator/agents.c: vb_campaign_agent_on() turns each message into an event, agent_facts()
 * computes the guard flags, vb_campaign_agent_fire() steps this table and agent_do() carries out the actions
 * (intake.c records results and item ends). The loop's events come from the services as posts, fired by
 * vb_campaign_agent_drain() (coordinator/agent_queue.h): limits.c's checks post SILENT, the limits' ABORT and the
 * unanswered ones, local_agents.c posts a local agent's death, servers.c an ABORT for a dead server's item. The
 * comments say which message each row is for. Rows of one (state, event) pair are tried in order and the last has no guard: a pair without rows, or
 * without that last row, is a bug that tests/unit/test_agent_fsm.c catches. */
#include "coordinator/agent_fsm.h"

#define F(x) VB_AGENT_F_##x
#define A(x) VB_AGENT_ACT_##x
#define ROW(st, ev, when, unless, next, note, ...) \
    {VB_AGENT_##st, VB_AGENT_EV_##ev, (when), (unless), VB_AGENT_##next, (note), {__VA_ARGS__}}

/* A hello, first: another protocol is refused (no record made, no Welcome); an older hello of the same process,
 * overtaken by a newer one on another connection, changes nothing. */
#define HELLO_PREFIX(st) \
    ROW(st, HELLO, F(BAD_PROTOCOL), 0, st, "refused: another protocol version", A(REJECT_HELLO)), \
    ROW(st, HELLO, F(OLD_HELLO), 0, st, "an older hello, overtaken", A(IGNORE))

/* A hello, last (after the rows for a hello without an item): where the item it names leaves the agent.
 *   it runs the running item's current attempt          -> busy with it (our view was behind)
 *   it runs or finished the orphan's attempt            -> taken over: busy with it, not run again
 *   it runs anything else                               -> told to abort it: draining until its end
 *   it finished anything else (the end is in its outbox) -> idle; the end comes in as stale
 *   it names nothing                                    -> idle
 * `pre` is what happened to the item it had (BUSY), or nothing. */
#define HELLO_TAIL(st, when, unless, ...) \
    ROW(st, HELLO, (when) | F(RUNNING_ATTEMPT), (unless) | F(FINISHED), BUSY, "reconnected, item running", \
        A(RECORD_HELLO), __VA_ARGS__ A(REJOIN_ITEM), A(FORGET_ORPHAN), A(WELCOME)), \
    ROW(st, HELLO, (when) | F(ORPHAN), (unless), BUSY, "took over its item", \
        A(RECORD_HELLO), __VA_ARGS__ A(TAKE_OVER_ORPHAN), A(WELCOME)), \
    ROW(st, HELLO, (when) | F(NAMES_ITEM), (unless) | F(FINISHED), DRAINING, "draining a stale item", \
        A(RECORD_HELLO), __VA_ARGS__ A(ABORT_STALE), A(FORGET_ORPHAN), A(WELCOME)), \
    ROW(st, HELLO, (when) | F(NAMES_ITEM), (unless), IDLE, "idle, a stale item finished", \
        A(RECORD_HELLO), __VA_ARGS__ A(FORGET_ORPHAN), A(WELCOME)), \
    ROW(st, HELLO, (when), (unless), IDLE, "idle", A(RECORD_HELLO), __VA_ARGS__ A(FORGET_ORPHAN), A(WELCOME))

/* A message other than hello from an agent this process does not know, or marked lost: it waits in the agent's
 * outbox until the agent said hello again and was welcomed (agent_on). */
#define ASK_HELLO(st, ev, ...) ROW(st, ev, 0, 0, st, "asked to say hello", __VA_ARGS__ A(ASK_HELLO))

/* The messages of a welcomed agent that do not depend on its state (agent_on's switch): every one refreshes
 * its last-heard time. A result is recorded only for the current attempt of its item, whatever the agent's
 * state (on_result); otherwise acknowledged so the agent forgets it, and recorded as an event. */
#define CHATTER(st) \
    ROW(st, HEARTBEAT, 0, 0, st, "heartbeat", A(TOUCH)), \
    ROW(st, LOG, 0, 0, st, "log", A(TOUCH), A(RECORD_LOG)), \
    ROW(st, RESULT, F(CURRENT), 0, st, "result recorded", A(TOUCH), A(RECORD_RESULT)), \
    ROW(st, RESULT, 0, 0, st, "result of an interrupted attempt or unknown item: acknowledged, not recorded", \
        A(TOUCH), A(ACK_ONLY)), \
    ROW(st, SERVER_REPORT, 0, 0, st, "server report", A(TOUCH), A(SERVER_REPORT)), \
    ROW(st, OTHER, 0, 0, st, "unexpected message", A(TOUCH), A(WARN_UNEXPECTED))

/* Done or Failed (on_item_end): only the current attempt moves the item (`fin`: done or failed); the agent
 * becomes idle when it is the end of what it ran or drained (its attempt); any other end is stale: an event. */
#define ITEM_END(st, ev, fin) \
    ROW(st, ev, F(ITS_ATTEMPT) | F(CURRENT), 0, IDLE, "its item ended", A(TOUCH), A(fin)), \
    ROW(st, ev, F(ITS_ATTEMPT), 0, IDLE, "its stale item ended", A(TOUCH), A(END_STALE)), \
    ROW(st, ev, F(CURRENT), 0, st, "the current attempt of another item ended", A(TOUCH), A(fin)), \
    ROW(st, ev, 0, 0, st, "the end of an interrupted attempt: not recorded", A(TOUCH), A(END_STALE))

static const vb_agent_row rows[] = {
    /* ---- NEW: no record in this process ------------------------------------------------------------------ */
    HELLO_PREFIX(NEW),
    HELLO_TAIL(NEW, 0, 0, ),
    ASK_HELLO(NEW, HEARTBEAT, ),
    ASK_HELLO(NEW, PROGRESS, ),
    ASK_HELLO(NEW, LOG, ),
    ASK_HELLO(NEW, RESULT, ),
    ASK_HELLO(NEW, SERVER_REPORT, ),
    ASK_HELLO(NEW, DONE, ),
    ASK_HELLO(NEW, FAILED, ),
    ASK_HELLO(NEW, OTHER, ),
    ASK_HELLO(NEW, SHARE, ),
    ROW(NEW, LEND, 0, 0, NEW, "no record: never chosen", A(REFUSE)),
    /* The loop acts only on agents it has a record of. */
    ROW(NEW, ASSIGN, 0, 0, NEW, "no record: never chosen", A(REFUSE)),
    ROW(NEW, ABORT, 0, 0, NEW, "no record: runs nothing of ours", A(REFUSE)),
    ROW(NEW, SILENT, 0, 0, NEW, "no record: no clock", A(REFUSE)),
    ROW(NEW, LIMIT_UNANSWERED, 0, 0, NEW, "no record: runs nothing of ours", A(REFUSE)),
    ROW(NEW, ABORT_UNANSWERED, 0, 0, NEW, "no record: was told nothing", A(REFUSE)),
    /* A local agent that died before its hello: the caller restarts the process; no record to change. */
    ROW(NEW, PROCESS_DIED, 0, 0, NEW, "died before its hello", A(IGNORE)),
    ROW(NEW, CAMPAIGN_END, 0, 0, NEW, "no record: no Bye", A(IGNORE)),

    /* ---- IDLE: welcomed, runs nothing --------------------------------------------------------------------- */
    HELLO_PREFIX(IDLE),
    HELLO_TAIL(IDLE, 0, 0, ),
    CHATTER(IDLE),
    ROW(IDLE, PROGRESS, 0, 0, IDLE, "progress of an item it does not run: not shown", A(TOUCH)),
    ITEM_END(IDLE, DONE, FINISH_ITEM),
    ITEM_END(IDLE, FAILED, FAIL_ITEM),
    ROW(IDLE, ASSIGN, 0, 0, BUSY, "assigned", A(ASSIGN)),
    ROW(IDLE, SHARE, 0, 0, IDLE, "a share of an item it does not run: dropped", A(TOUCH)),
    /* a capacity item just assigned to another client agent borrows it (docs/design.md §8) */
    ROW(IDLE, LEND, 0, 0, BUSY, "lent to the capacity item as a helper", A(LEND)),
    ROW(IDLE, ABORT, 0, 0, IDLE, "runs nothing", A(IGNORE)),
    /* check_liveness: silent past limits.agent_silent_s; watch_local_agents: its process died. */
    ROW(IDLE, SILENT, 0, 0, LOST, "silent: lost", A(REPORT_SILENT)),
    ROW(IDLE, PROCESS_DIED, 0, 0, LOST, "its process died: lost", A(NONE)),
    ROW(IDLE, LIMIT_UNANSWERED, 0, 0, IDLE, "runs nothing: no limit", A(REFUSE)),
    ROW(IDLE, ABORT_UNANSWERED, 0, 0, IDLE, "runs nothing: no Abort outstanding", A(REFUSE)),
    ROW(IDLE, CAMPAIGN_END, 0, 0, IDLE, "campaign over", A(SEND_BYE)),

    /* ---- BUSY: runs x, its current attempt ----------------------------------------------------------------- */
    HELLO_PREFIX(BUSY),
    /* a hello naming an item, "we had it run X":
     *   it runs or finished X under the same attempt   -> it reconnected: still busy with X (any process) */
    ROW(BUSY, HELLO, F(ITS_ATTEMPT) | F(FINISHED), 0, BUSY, "reconnected, item finished",
        A(RECORD_HELLO), A(FORGET_ORPHAN), A(WELCOME)),
    ROW(BUSY, HELLO, F(ITS_ATTEMPT), 0, BUSY, "reconnected, item running",
        A(RECORD_HELLO), A(FORGET_ORPHAN), A(WELCOME)),
    /*   a lent helper restarted: its share is gone, the item is not its own (the leader's window waits for the
     *   share and fails naming it) */
    ROW(BUSY, HELLO, F(LENT) | F(NEW_PROCESS) | F(NAMES_ITEM), F(FINISHED), DRAINING,
        "a lent helper restarted running a stale item", A(RECORD_HELLO), A(ABORT_STALE), A(FORGET_ORPHAN), A(WELCOME)),
    ROW(BUSY, HELLO, F(LENT) | F(NEW_PROCESS), 0, IDLE, "a lent helper restarted: idle",
        A(RECORD_HELLO), A(FORGET_ORPHAN), A(WELCOME)),
    /*   another process says otherwise                 -> it restarted: X interrupted, then the tail */
    HELLO_TAIL(BUSY, F(NEW_PROCESS), 0, A(INTERRUPT_ITEM), ),
    /*   the same process runs nothing or finished another, X still running -> our Assign and its hello crossed
     *   (or the Assign was lost): send it again */
    ROW(BUSY, HELLO, F(FINISHED) | F(ITEM_RUNNING), 0, BUSY, "busy: the Assign it had not received sent again",
        A(RECORD_HELLO), A(RESEND_ASSIGN), A(FORGET_ORPHAN), A(WELCOME)),
    ROW(BUSY, HELLO, F(ITEM_RUNNING), F(NAMES_ITEM), BUSY, "busy: the Assign it had not received sent again",
        A(RECORD_HELLO), A(RESEND_ASSIGN), A(FORGET_ORPHAN), A(WELCOME)),
    /*   ... X no longer running (it failed meanwhile) -> the tail, X left as it is */
    ROW(BUSY, HELLO, F(FINISHED) | F(ORPHAN), 0, BUSY, "took over its item",
        A(RECORD_HELLO), A(TAKE_OVER_ORPHAN), A(WELCOME)),
    ROW(BUSY, HELLO, F(FINISHED) | F(NAMES_ITEM), 0, IDLE, "idle, a stale item finished",
        A(RECORD_HELLO), A(FORGET_ORPHAN), A(WELCOME)),
    ROW(BUSY, HELLO, 0, F(NAMES_ITEM), IDLE, "idle", A(RECORD_HELLO), A(FORGET_ORPHAN), A(WELCOME)),
    ROW(BUSY, HELLO, F(LENT) | F(NAMES_ITEM), F(FINISHED), DRAINING, "a lent helper runs a stale item: draining it",
        A(RECORD_HELLO), A(ABORT_STALE), A(FORGET_ORPHAN), A(WELCOME)),
    /*   the same process runs another item             -> X did not take: back to the plan, then the tail */
    ROW(BUSY, HELLO, F(RUNNING_ATTEMPT), F(FINISHED), BUSY, "reconnected, item running",
        A(RECORD_HELLO), A(REQUEUE_ITEM), A(REJOIN_ITEM), A(FORGET_ORPHAN), A(WELCOME)),
    ROW(BUSY, HELLO, F(ORPHAN), 0, BUSY, "took over its item",
        A(RECORD_HELLO), A(REQUEUE_ITEM), A(TAKE_OVER_ORPHAN), A(WELCOME)),
    ROW(BUSY, HELLO, 0, 0, DRAINING, "draining a stale item",
        A(RECORD_HELLO), A(REQUEUE_ITEM), A(ABORT_STALE), A(FORGET_ORPHAN), A(WELCOME)),
    CHATTER(BUSY),
    ROW(BUSY, PROGRESS, F(LENT), 0, BUSY, "a lent helper's progress: the leader's is shown", A(TOUCH)),
    ROW(BUSY, PROGRESS, F(ON_RUNNING), 0, BUSY, "progress", A(TOUCH), A(NOTE_PROGRESS)),
    ROW(BUSY, PROGRESS, 0, 0, BUSY, "progress of an item it does not run: not shown", A(TOUCH)),
    /* A lent helper's end is the end of its share session, never the item's (the leader's Done or Failed is). */
    ROW(BUSY, DONE, F(LENT) | F(ITS_ATTEMPT), 0, IDLE, "its lent share ended", A(TOUCH), A(END_LENT)),
    ROW(BUSY, FAILED, F(LENT) | F(ITS_ATTEMPT), 0, IDLE, "its lent share failed", A(TOUCH), A(END_LENT)),
    ITEM_END(BUSY, DONE, FINISH_ITEM),
    ITEM_END(BUSY, FAILED, FAIL_ITEM),
    ROW(BUSY, ASSIGN, 0, 0, BUSY, "busy: only idle agents are chosen", A(REFUSE)),
    ROW(BUSY, LEND, 0, 0, BUSY, "busy: only idle agents are lent", A(REFUSE)),
    ROW(BUSY, SHARE, F(ON_RUNNING), 0, BUSY, "a share of the running capacity item: relayed", A(TOUCH),
        A(RELAY_SHARE)),
    ROW(BUSY, SHARE, 0, 0, BUSY, "a share of an item not running: dropped", A(TOUCH)),
    /* The item is stopped by the coordinator; the agent stays busy until its Done or Failed. */
    ROW(BUSY, ABORT, 0, 0, BUSY, "told to stop its item", A(SEND_ABORT)),
    /* A lent helper lost does not interrupt the item: the leader's window waits for its share and fails naming it. */
    ROW(BUSY, SILENT, F(LENT), 0, LOST, "a lent helper silent: lost", A(REPORT_SILENT)),
    ROW(BUSY, SILENT, 0, 0, LOST, "silent: lost, its item interrupted", A(REPORT_SILENT), A(INTERRUPT_ITEM)),
    ROW(BUSY, PROCESS_DIED, F(LENT), 0, LOST, "a lent helper's process died: lost", A(NONE)),
    ROW(BUSY, PROCESS_DIED, 0, 0, LOST, "its process died: lost, its item interrupted", A(INTERRUPT_ITEM)),
    ROW(BUSY, LIMIT_UNANSWERED, F(LENT), 0, LOST, "a lent helper did not stop: stuck", A(REPORT_STUCK)),
    /* check_liveness: the reinsert's limit abort was not answered within limits.abort_unanswered_s. */
    ROW(BUSY, LIMIT_UNANSWERED, 0, 0, LOST, "did not stop at the limit: item expired, agent stuck",
        A(EXPIRE_ITEM), A(REPORT_STUCK)),
    /* check_liveness: any other Abort (phase timeout, server died) unanswered as long: stuck in a driver call. The
     * item already ended (failed) or is interrupted here; the campaign goes on without the agent. */
    ROW(BUSY, ABORT_UNANSWERED, F(LENT), 0, LOST, "a lent helper did not answer the Abort: stuck, lost",
        A(REPORT_STUCK)),
    ROW(BUSY, ABORT_UNANSWERED, 0, 0, LOST, "did not answer the Abort: stuck, lost",
        A(INTERRUPT_ITEM), A(REPORT_STUCK)),
    ROW(BUSY, CAMPAIGN_END, 0, 0, BUSY, "campaign over", A(SEND_BYE)),

    /* ---- DRAINING: runs a stale attempt, told to abort it --------------------------------------------------- */
    HELLO_PREFIX(DRAINING),
    /* It reconnected and still runs the attempt it was told to stop. */
    ROW(DRAINING, HELLO, F(ITS_ATTEMPT), F(FINISHED), DRAINING, "reconnected, still stopping a stale item",
        A(RECORD_HELLO), A(FORGET_ORPHAN), A(WELCOME)),
    HELLO_TAIL(DRAINING, 0, 0, ),
    CHATTER(DRAINING),
    ROW(DRAINING, PROGRESS, 0, 0, DRAINING, "progress of a stale item: not shown", A(TOUCH)),
    ITEM_END(DRAINING, DONE, FINISH_ITEM),
    ITEM_END(DRAINING, FAILED, FAIL_ITEM),
    ROW(DRAINING, ASSIGN, 0, 0, DRAINING, "draining: only idle agents are chosen", A(REFUSE)),
    ROW(DRAINING, LEND, 0, 0, DRAINING, "draining: only idle agents are lent", A(REFUSE)),
    ROW(DRAINING, SHARE, 0, 0, DRAINING, "a share of a stale item: dropped", A(TOUCH)),
    ROW(DRAINING, ABORT, 0, 0, DRAINING, "already told to stop", A(IGNORE)),
    ROW(DRAINING, SILENT, 0, 0, LOST, "silent: lost", A(REPORT_SILENT)),
    ROW(DRAINING, PROCESS_DIED, 0, 0, LOST, "its process died: lost", A(NONE)),
    ROW(DRAINING, LIMIT_UNANSWERED, 0, 0, DRAINING, "runs no current item: no limit", A(REFUSE)),
    /* A stale attempt that does not stop would hold every assignment (hold_assignments): stuck, lost. */
    ROW(DRAINING, ABORT_UNANSWERED, 0, 0, LOST, "did not stop its stale item: stuck, lost", A(REPORT_STUCK)),
    ROW(DRAINING, CAMPAIGN_END, 0, 0, DRAINING, "campaign over", A(SEND_BYE)),

    /* ---- LOST: silent or dead; its item was interrupted ------------------------------------------------------ */
    HELLO_PREFIX(LOST),
    /* Still in the call it was found stuck in (a remote agent: nobody kills it): not welcomed, so it gets nothing
     * and holds nothing; it is welcomed once its hello says the attempt finished, or names none. */
    ROW(LOST, HELLO, F(STUCK_ON_IT), 0, LOST, "still stuck in the item it was told to stop", A(NOTE_HEARD)),
    HELLO_TAIL(LOST, 0, 0, ),
    ASK_HELLO(LOST, HEARTBEAT, A(NOTE_HEARD), ),
    ASK_HELLO(LOST, PROGRESS, A(NOTE_HEARD), ),
    ASK_HELLO(LOST, LOG, A(NOTE_HEARD), ),
    ASK_HELLO(LOST, RESULT, A(NOTE_HEARD), ),
    ASK_HELLO(LOST, SERVER_REPORT, A(NOTE_HEARD), ),
    ASK_HELLO(LOST, DONE, A(NOTE_HEARD), ),
    ASK_HELLO(LOST, FAILED, A(NOTE_HEARD), ),
    ASK_HELLO(LOST, OTHER, A(NOTE_HEARD), ),
    ASK_HELLO(LOST, SHARE, A(NOTE_HEARD), ),
    ROW(LOST, LEND, 0, 0, LOST, "lost: only idle agents are lent", A(REFUSE)),
    ROW(LOST, ASSIGN, 0, 0, LOST, "lost: only idle agents are chosen", A(REFUSE)),
    ROW(LOST, ABORT, 0, 0, LOST, "lost: its item was interrupted already", A(IGNORE)),
    ROW(LOST, SILENT, 0, 0, LOST, "still silent", A(IGNORE)),
    ROW(LOST, PROCESS_DIED, 0, 0, LOST, "already lost", A(IGNORE)),
    ROW(LOST, LIMIT_UNANSWERED, 0, 0, LOST, "lost: runs nothing of ours", A(REFUSE)),
    ROW(LOST, ABORT_UNANSWERED, 0, 0, LOST, "lost: stuck already", A(IGNORE)),
    ROW(LOST, CAMPAIGN_END, 0, 0, LOST, "lost: no Bye", A(IGNORE)),
};

const vb_agent_row *vb_agent_fsm_rows(size_t *n) {
    *n = sizeof rows / sizeof rows[0];
    return rows;
}

const vb_agent_row *vb_agent_fsm_step(vb_agent_state state, vb_agent_event event, unsigned facts) {
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const vb_agent_row *r = &rows[i];
        if (r->state == state && r->event == event && (facts & r->when) == r->when && !(facts & r->unless)) return r;
    }
    return NULL;
}

const char *vb_agent_fsm_state_name(vb_agent_state s) {
    static const char *const names[] = {"new", "idle", "busy", "draining", "lost"};
    return (unsigned)s < VB_AGENT_N_STATES ? names[s] : "?";
}

const char *vb_agent_fsm_event_name(vb_agent_event e) {
    static const char *const names[] = {"hello", "heartbeat", "progress", "log", "result", "server_report", "done",
                                        "failed", "other", "assign", "abort", "silent", "process_died",
                                        "limit_unanswered", "campaign_end", "abort_unanswered", "share", "lend"};
    _Static_assert(sizeof names / sizeof names[0] == VB_AGENT_N_EVENTS, "a name per event");
    return (unsigned)e < VB_AGENT_N_EVENTS ? names[e] : "?";
}

const char *vb_agent_fsm_action_name(vb_agent_action a) {
    static const char *const names[] = {
        "none", "ignore", "refuse", "reject_hello", "record_hello", "interrupt_item", "requeue_item", "resend_assign",
        "rejoin_item", "take_over_orphan", "abort_stale", "forget_orphan", "welcome", "touch", "note_heard",
        "ask_hello", "note_progress", "record_log", "record_result", "ack_only", "server_report", "finish_item",
        "fail_item", "end_stale", "warn_unexpected", "assign", "send_abort", "report_silent", "expire_item",
        "send_bye", "report_stuck", "relay_share", "lend", "end_lent"};
    _Static_assert(sizeof names / sizeof names[0] == VB_AGENT_N_ACTIONS, "a name per action");
    return (unsigned)a < VB_AGENT_N_ACTIONS ? names[a] : "?";
}

const char *vb_agent_fsm_fact_name(unsigned bit) {
    static const char *const names[] = {"bad_protocol", "old_hello", "new_process", "names_item", "finished",
                                        "its_attempt", "item_running", "running_attempt", "orphan", "on_running",
                                        "current", "stuck_on_it", "lent"};
    _Static_assert(sizeof names / sizeof names[0] == VB_AGENT_N_FACTS, "a name per fact");
    for (unsigned i = 0; i < VB_AGENT_N_FACTS; i++)
        if (bit == 1u << i) return names[i];
    return "?";
}
