/* The coordinator's server machine as a table (see coordinator/server_fsm.h for how the caller uses it).
 *
 * The caller is coordinator/servers.c: vb_campaign_server_ready_for() (an item needs its server),
 * vb_campaign_on_server_report() (the orchestrator's reports), vb_campaign_servers_housekeeping() (idle servers
 * stop) and the stop loop at the campaign's end fire events; server_facts() computes the guard flags,
 * vb_campaign_server_fire() steps this table, and server_start(), server_stop() and server_died() carry out the
 * actions. The rows keep the behaviour the code had before the table was written, except three marked
 * DIFFERENCE (a death reported while stopping, a start that timed out or whose budget fails under
 * limits.on_server_failure: stop) and the rows marked ADDITION (the cold start of a cold_start item, COLD_PENDING;
 * the parts of a server placed over several orchestrators, PARTS_PENDING).
 * tests/unit/test_server_fsm.c checks that every (state, event) pair has rows ending with one without guard. */
#include "coordinator/server_fsm.h"

#define F(x) VB_SERVER_F_##x
#define A(x) VB_SERVER_ACT_##x
#define ROW(st, ev, when, unless, next, note, ...) \
    {VB_SERVER_##st, VB_SERVER_EV_##ev, (when), (unless), VB_SERVER_##next, (note), {__VA_ARGS__}}

/* NEEDED where no server runs (NONE, STOPPED): one server at a time, so no two databases share the budget;
 * without an orchestrator the item waits (the loop gives up after 60 s); a budget that cannot be resolved for
 * the orchestrator's host fails the server, and the item fails at its next turn. DIFFERENCE: with
 * limits.on_server_failure: stop, a server that cannot start stops the campaign (campaign.c did so only for a
 * "failed" report, not for a budget error or a start timeout). ADDITION: for a cold_start item the start is a cold
 * one (the data directory evicted first). */
#define NEEDED_DOWN(st) \
    ROW(st, NEEDED, F(OTHER_UP), 0, st, "another server is up: wait for it to stop", A(WAIT)), \
    ROW(st, NEEDED, F(NO_ORCHESTRATOR), 0, st, "no orchestrator yet: wait", A(WAIT)), \
    ROW(st, NEEDED, F(BUDGET_FAILS) | F(POLICY_STOP), 0, FAILED, "budget cannot be resolved: campaign stops", \
        A(BUDGET_FAILED), A(STOP_CAMPAIGN)), \
    ROW(st, NEEDED, F(BUDGET_FAILS), 0, FAILED, "budget cannot be resolved", A(BUDGET_FAILED)), \
    ROW(st, NEEDED, F(COLD_PENDING), 0, STARTING, "cold start requested", A(REQUEST_COLD_START)), \
    ROW(st, NEEDED, 0, 0, STARTING, "start requested", A(REQUEST_START))

/* Reports handled the same in every state the coordinator rests in (on_server_report). "ready" makes the server
 * ready whatever was asked (a late answer to a start that timed out brings the engine back; one that crossed a
 * stop is stopped again by the housekeeping). "stopped" is taken as it comes. */
#define REPORTS(st) \
    ROW(st, REPORT_READY, 0, 0, READY, "ready", A(LOG_REPORT), A(TAKE_READY)), \
    ROW(st, REPORT_STOPPED, 0, 0, STOPPED, "stopped", A(LOG_REPORT), A(RECORD_STOP)), \
    ROW(st, REPORT_SAMPLES, 0, 0, st, "samples", A(STORE_SAMPLES)), \
    ROW(st, REPORT_SIZES, 0, 0, st, "sizes", A(STORE_SIZES)), \
    ROW(st, REPORT_PROFILE, 0, 0, st, "a window's CPU profile", A(STORE_PROFILE)), \
    ROW(st, REPORT_OTHER, 0, 0, st, "another report: logged", A(LOG_REPORT))

/* "failed": could not start (or stop, see STOPPING); with limits.on_server_failure: stop the campaign stops. */
#define REPORT_FAILED_UP(st) \
    ROW(st, REPORT_FAILED, F(POLICY_STOP), 0, FAILED, "failed: campaign stops", \
        A(LOG_REPORT), A(RECORD_FAILURE), A(STOP_CAMPAIGN)), \
    ROW(st, REPORT_FAILED, 0, 0, FAILED, "failed", A(LOG_REPORT), A(RECORD_FAILURE))

/* "died" (server_died): the item that ran on it fails; restart (at most 2 times), skip or stop decides next. */
#define REPORT_DIED_UP(st) \
    ROW(st, REPORT_DIED, F(POLICY_RESTART) | F(RESTARTS_LEFT), 0, NONE, "died: started again for the next item", \
        A(LOG_REPORT), A(SERVER_DIED), A(COUNT_RESTART)), \
    ROW(st, REPORT_DIED, F(POLICY_STOP), 0, FAILED, "died: campaign stops", \
        A(LOG_REPORT), A(SERVER_DIED), A(NO_RESTART), A(STOP_CAMPAIGN)), \
    ROW(st, REPORT_DIED, 0, 0, FAILED, "died: its remaining items fail", \
        A(LOG_REPORT), A(SERVER_DIED), A(NO_RESTART))

/* Timers run only while a request is out; the housekeeping stops only a ready server. */
#define NO_TIMERS(st) \
    ROW(st, START_TIMEOUT, 0, 0, st, "no start is out", A(IGNORE)), \
    ROW(st, STOP_TIMEOUT, 0, 0, st, "no stop is out", A(IGNORE))

static const vb_server_row rows[] = {
    /* ---- NONE: not started, or wanted again after a death it may restart ---------------------------------- */
    NEEDED_DOWN(NONE),
    REPORTS(NONE),
    REPORT_FAILED_UP(NONE),
    REPORT_DIED_UP(NONE),
    NO_TIMERS(NONE),
    ROW(NONE, NO_PENDING, 0, 0, NONE, "not up", A(IGNORE)),
    ROW(NONE, CAMPAIGN_END, 0, 0, NONE, "not up", A(IGNORE)),

    /* ---- STARTING: "start" is out ------------------------------------------------------------------------- */
    ROW(STARTING, NEEDED, 0, 0, STARTING, "starting: wait", A(WAIT)),
    /* ADDITION: a server placed over several orchestrators is ready when its last part is (placement.h). */
    ROW(STARTING, REPORT_READY, F(PARTS_PENDING), 0, STARTING, "a part is ready: wait for the others",
        A(LOG_REPORT), A(TAKE_PART)),
    REPORTS(STARTING),
    REPORT_FAILED_UP(STARTING),
    REPORT_DIED_UP(STARTING),
    /* DIFFERENCE: a start that timed out under limits.on_server_failure: stop stops the campaign. */
    ROW(STARTING, START_TIMEOUT, F(POLICY_STOP), 0, FAILED, "not ready in time: campaign stops",
        A(START_TIMED_OUT), A(STOP_CAMPAIGN)),
    ROW(STARTING, START_TIMEOUT, 0, 0, FAILED, "not ready in time", A(START_TIMED_OUT)),
    ROW(STARTING, STOP_TIMEOUT, 0, 0, STARTING, "no stop is out", A(IGNORE)),
    /* Its items are pending (that is why it starts); the end of the campaign waits for the answer, then stops it. */
    ROW(STARTING, NO_PENDING, 0, 0, STARTING, "not ready yet: stopped once ready", A(IGNORE)),
    ROW(STARTING, CAMPAIGN_END, 0, 0, STARTING, "wait for the start's answer", A(WAIT)),

    /* ---- READY: serving ---------------------------------------------------------------------------------- */
    /* ADDITION: a cold_start item restarts its server cold first (the orchestrator stops the running unit, evicts
     * its data directory from the page cache and starts it); the item runs once that start answered ready. */
    ROW(READY, NEEDED, F(COLD_PENDING) | F(NO_ORCHESTRATOR), 0, READY, "a cold start needs an orchestrator: wait",
        A(WAIT)),
    ROW(READY, NEEDED, F(COLD_PENDING) | F(BUDGET_FAILS) | F(POLICY_STOP), 0, FAILED,
        "cold start: budget cannot be resolved: campaign stops", A(BUDGET_FAILED), A(STOP_CAMPAIGN)),
    ROW(READY, NEEDED, F(COLD_PENDING) | F(BUDGET_FAILS), 0, FAILED, "cold start: budget cannot be resolved",
        A(BUDGET_FAILED)),
    ROW(READY, NEEDED, F(COLD_PENDING), 0, STARTING, "cold start requested", A(REQUEST_COLD_START)),
    ROW(READY, NEEDED, 0, 0, READY, "may run once confirmed", A(MAY_RUN)),
    REPORTS(READY),
    REPORT_FAILED_UP(READY),
    REPORT_DIED_UP(READY),
    NO_TIMERS(READY),
    /* server_stop(): without an orchestrator there is nobody to ask; taken as stopped. */
    ROW(READY, NO_PENDING, F(NO_ORCHESTRATOR), 0, STOPPED, "nothing left, no orchestrator: taken as stopped",
        A(NONE)),
    ROW(READY, NO_PENDING, 0, 0, STOPPING, "nothing left: stop requested", A(REQUEST_STOP)),
    ROW(READY, CAMPAIGN_END, F(NO_ORCHESTRATOR), 0, STOPPED, "campaign over, no orchestrator: taken as stopped",
        A(NONE)),
    ROW(READY, CAMPAIGN_END, 0, 0, STOPPING, "campaign over: stop requested", A(REQUEST_STOP)),

    /* ---- STOPPING: "stop" is out ------------------------------------------------------------------------- */
    ROW(STOPPING, NEEDED, 0, 0, STOPPING, "stopping: wait", A(WAIT)),
    /* ADDITION: a placed server is stopped when its last part is. */
    ROW(STOPPING, REPORT_STOPPED, F(PARTS_PENDING), 0, STOPPING, "a part stopped: wait for the others",
        A(LOG_REPORT), A(TAKE_PART)),
    REPORTS(STOPPING),
    /* A failed stop ends as stopped: the unit is gone or not ours to run any more. */
    ROW(STOPPING, REPORT_FAILED, 0, 0, STOPPED, "the stop failed: taken as stopped", A(LOG_REPORT),
        A(RECORD_FAILURE)),
    /* DIFFERENCE: a death found at the stop request (the orchestrator reports it before the stop) charges the
     * item that ran on it, and its event says the server was ready, not stopping (issue 36.9), but the stop's answer
     * still comes: the state stays STOPPING and no restart is counted
     * (campaign.c went to NONE or FAILED, so the campaign could end, or another server start, before "stopped"
     * arrived, and the at_stop facts were lost). */
    ROW(STOPPING, REPORT_DIED, F(POLICY_STOP), 0, STOPPING, "died before the stop: campaign stops",
        A(LOG_REPORT), A(SERVER_DIED), A(STOP_CAMPAIGN)),
    ROW(STOPPING, REPORT_DIED, 0, 0, STOPPING, "died before the stop: wait for the stop's answer",
        A(LOG_REPORT), A(SERVER_DIED)),
    ROW(STOPPING, START_TIMEOUT, 0, 0, STOPPING, "no start is out", A(IGNORE)),
    ROW(STOPPING, STOP_TIMEOUT, 0, 0, STOPPED, "no answer to the stop", A(STOP_TIMED_OUT)),
    ROW(STOPPING, NO_PENDING, 0, 0, STOPPING, "stopping already", A(IGNORE)),
    ROW(STOPPING, CAMPAIGN_END, 0, 0, STOPPING, "wait for the stop's answer", A(WAIT)),

    /* ---- STOPPED: stopped on request; started again when an item needs it ---------------------------------- */
    NEEDED_DOWN(STOPPED),
    REPORTS(STOPPED),
    REPORT_FAILED_UP(STOPPED),
    REPORT_DIED_UP(STOPPED),
    NO_TIMERS(STOPPED),
    ROW(STOPPED, NO_PENDING, 0, 0, STOPPED, "not up", A(IGNORE)),
    ROW(STOPPED, CAMPAIGN_END, 0, 0, STOPPED, "not up", A(IGNORE)),

    /* ---- FAILED: its remaining items fail ------------------------------------------------------------------ */
    ROW(FAILED, NEEDED, 0, 0, FAILED, "failed: the item fails", A(FAIL_ITEM)),
    REPORTS(FAILED),
    REPORT_FAILED_UP(FAILED),
    REPORT_DIED_UP(FAILED),
    NO_TIMERS(FAILED),
    ROW(FAILED, NO_PENDING, 0, 0, FAILED, "not up", A(IGNORE)),
    ROW(FAILED, CAMPAIGN_END, 0, 0, FAILED, "not up", A(IGNORE)),

    /* ---- DIED: the orchestrator's state; the coordinator never rests in it --------------------------------- */
    ROW(DIED, NEEDED, 0, 0, DIED, "not a coordinator state", A(REFUSE)),
    ROW(DIED, REPORT_READY, 0, 0, DIED, "not a coordinator state", A(REFUSE)),
    ROW(DIED, REPORT_FAILED, 0, 0, DIED, "not a coordinator state", A(REFUSE)),
    ROW(DIED, REPORT_DIED, 0, 0, DIED, "not a coordinator state", A(REFUSE)),
    ROW(DIED, REPORT_STOPPED, 0, 0, DIED, "not a coordinator state", A(REFUSE)),
    ROW(DIED, REPORT_SAMPLES, 0, 0, DIED, "not a coordinator state", A(REFUSE)),
    ROW(DIED, REPORT_SIZES, 0, 0, DIED, "not a coordinator state", A(REFUSE)),
    ROW(DIED, REPORT_PROFILE, 0, 0, DIED, "not a coordinator state", A(REFUSE)),
    ROW(DIED, REPORT_OTHER, 0, 0, DIED, "not a coordinator state", A(REFUSE)),
    ROW(DIED, START_TIMEOUT, 0, 0, DIED, "not a coordinator state", A(REFUSE)),
    ROW(DIED, STOP_TIMEOUT, 0, 0, DIED, "not a coordinator state", A(REFUSE)),
    ROW(DIED, NO_PENDING, 0, 0, DIED, "not a coordinator state", A(REFUSE)),
    ROW(DIED, CAMPAIGN_END, 0, 0, DIED, "not a coordinator state", A(REFUSE)),
};

const vb_server_row *vb_server_fsm_rows(size_t *n) {
    *n = sizeof rows / sizeof rows[0];
    return rows;
}

const vb_server_row *vb_server_fsm_step(vb_server_state state, vb_server_event event, unsigned facts) {
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const vb_server_row *r = &rows[i];
        if (r->state == state && r->event == event && (facts & r->when) == r->when && !(facts & r->unless)) return r;
    }
    return NULL;
}

const char *vb_server_fsm_event_name(vb_server_event e) {
    static const char *const names[] = {"needed", "report_ready", "report_failed", "report_died", "report_stopped",
                                        "report_samples", "report_sizes", "report_profile", "report_other", "start_timeout",
                                        "stop_timeout", "no_pending", "campaign_end"};
    _Static_assert(sizeof names / sizeof names[0] == VB_SERVER_N_EVENTS, "a name per event");
    return (unsigned)e < VB_SERVER_N_EVENTS ? names[e] : "?";
}

const char *vb_server_fsm_action_name(vb_server_action a) {
    static const char *const names[] = {
        "none", "ignore", "refuse", "may_run", "wait", "fail_item", "request_start", "budget_failed", "log_report",
        "take_ready", "record_failure", "server_died", "count_restart", "no_restart", "stop_campaign",
        "record_stop", "store_samples", "store_sizes", "start_timed_out", "stop_timed_out", "request_stop",
        "request_cold_start", "store_profile", "take_part"};
    _Static_assert(sizeof names / sizeof names[0] == VB_SERVER_N_ACTIONS, "a name per action");
    return (unsigned)a < VB_SERVER_N_ACTIONS ? names[a] : "?";
}

const char *vb_server_fsm_fact_name(unsigned bit) {
    static const char *const names[] = {"other_up", "no_orchestrator", "budget_fails", "policy_restart",
                                        "policy_stop", "restarts_left", "cold_pending", "parts_pending"};
    _Static_assert(sizeof names / sizeof names[0] == VB_SERVER_N_FACTS, "a name per fact");
    for (unsigned i = 0; i < VB_SERVER_N_FACTS; i++)
        if (bit == 1u << i) return names[i];
    return "?";
}
