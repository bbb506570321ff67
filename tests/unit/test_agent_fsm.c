/* Self-test of coordinator/agent_fsm: the agent machine's table, without sockets.
 *   - the table is whole: every (state, event) pair has rows, the last without guard; no duplicate guard, no
 *     row that can never be chosen, no action out of range, IGNORE and REFUSE alone and without a move;
 *   - every (state, event) pair, under every combination of the facts, gives what campaign.c did: `legacy()`
 *     below is campaign.c's agent_on() / on_hello() / hello_item() / on_item_end() / check_liveness() /
 *     watch_local_agents() transcribed over the same facts;
 *   - the scenarios of the e2e tests (20 kill/resume, 80 coordinator kills, 81 agent restart, 82 link cut,
 *     83 agent lost) walked as sequences of events. */
#include <stdio.h>
#include <string.h>

#include "coordinator/agent_fsm.h"
#include "tests/tap.h"

#define N_COMBOS (1u << VB_AGENT_N_FACTS)

/* The row's actions as "a,b,c" (names), for comparisons and messages. */
static const char *actions_str(const vb_agent_action *a, char *buf, size_t len) {
    buf[0] = '\0';
    for (int i = 0; i < VB_AGENT_FSM_MAX_ACTIONS && a[i] != VB_AGENT_ACT_NONE; i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? "," : "", vb_agent_fsm_action_name(a[i]));
    return buf;
}

static const char *facts_str(unsigned f, char *buf, size_t len) {
    buf[0] = '\0';
    for (unsigned i = 0; i < VB_AGENT_N_FACTS; i++)
        if (f & (1u << i)) snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? "|" : "",
                                    vb_agent_fsm_fact_name(1u << i));
    return buf[0] ? buf : "-";
}

/* ---- campaign.c, transcribed ------------------------------------------------------------------------------ */

typedef struct outcome {
    vb_agent_action acts[VB_AGENT_FSM_MAX_ACTIONS + 2];
    int n;
    vb_agent_state next;
} outcome;

#define DO(a) (o.acts[o.n++] = VB_AGENT_ACT_##a)
#define HAS(x) ((f & VB_AGENT_F_##x) != 0)

static outcome legacy_hello(vb_agent_state st, unsigned f) {
    outcome o = {.next = st};
    /* on_hello: the protocol check, then an older hello of the same process. */
    if (HAS(BAD_PROTOCOL)) return DO(REJECT_HELLO), o;
    if (HAS(OLD_HELLO)) return DO(IGNORE), o;
    /* issue 28: a lost agent still in the attempt it was found stuck in is heard, not welcomed */
    if (st == VB_AGENT_LOST && HAS(STUCK_ON_IT)) return DO(NOTE_HEARD), o;
    DO(RECORD_HELLO);
    /* hello_item */
    int named = HAS(NAMES_ITEM), fin = HAS(FINISHED);
    if (st == VB_AGENT_BUSY) {
        if (HAS(ITS_ATTEMPT)) return DO(FORGET_ORPHAN), DO(WELCOME), o;
        /* coordinator/lend.c: a helper lent to a capacity item that restarted, or runs a stale item, leaves the item
         * alone (it is the leader's); a stale item it runs is drained */
        if (HAS(LENT) && (HAS(NEW_PROCESS) || (named && !fin))) {
            if (named && !fin) DO(ABORT_STALE), o.next = VB_AGENT_DRAINING;
            else o.next = VB_AGENT_IDLE;
            return DO(FORGET_ORPHAN), DO(WELCOME), o;
        }
        if (HAS(NEW_PROCESS)) {
            DO(INTERRUPT_ITEM);
        } else if (!named || fin) {
            if (HAS(ITEM_RUNNING)) return DO(RESEND_ASSIGN), DO(FORGET_ORPHAN), DO(WELCOME), o;
        } else {
            DO(REQUEUE_ITEM);
        }
    }
    if (st == VB_AGENT_DRAINING && !fin && HAS(ITS_ATTEMPT)) return DO(FORGET_ORPHAN), DO(WELCOME), o;
    if (named && !fin && HAS(RUNNING_ATTEMPT)) {
        DO(REJOIN_ITEM);
        o.next = VB_AGENT_BUSY;
    } else if (HAS(ORPHAN)) {
        DO(TAKE_OVER_ORPHAN);   /* the orphan is cleared: on_hello's orphan_gone does nothing */
        o.next = VB_AGENT_BUSY;
        return DO(WELCOME), o;
    } else if (named && !fin) {
        DO(ABORT_STALE);
        o.next = VB_AGENT_DRAINING;
    } else {
        o.next = VB_AGENT_IDLE;
    }
    /* on_hello: the orphan's agent came back without it */
    DO(FORGET_ORPHAN);
    DO(WELCOME);
    return o;
}

static outcome legacy(vb_agent_state st, vb_agent_event ev, unsigned f) {
    outcome o = {.next = st};
    int known = st != VB_AGENT_NEW && st != VB_AGENT_LOST;
    switch (ev) {
    case VB_AGENT_EV_HELLO: return legacy_hello(st, f);
    case VB_AGENT_EV_HEARTBEAT:
    case VB_AGENT_EV_PROGRESS:
    case VB_AGENT_EV_LOG:
    case VB_AGENT_EV_RESULT:
    case VB_AGENT_EV_SERVER_REPORT:
    case VB_AGENT_EV_DONE:
    case VB_AGENT_EV_FAILED:
    case VB_AGENT_EV_OTHER:
        /* agent_on: not known, or lost: asked to say hello (a lost one is noted as heard) */
        if (!known) {
            if (st == VB_AGENT_LOST) DO(NOTE_HEARD);
            return DO(ASK_HELLO), o;
        }
        DO(TOUCH);
        /* a lent helper's end is its share session's (coordinator/lend.c), its progress not shown */
        if ((ev == VB_AGENT_EV_DONE || ev == VB_AGENT_EV_FAILED) && st == VB_AGENT_BUSY && HAS(LENT) &&
            HAS(ITS_ATTEMPT))
            return DO(END_LENT), o.next = VB_AGENT_IDLE, o;
        if (ev == VB_AGENT_EV_PROGRESS && st == VB_AGENT_BUSY && HAS(LENT)) return o;
        if (ev == VB_AGENT_EV_PROGRESS && st == VB_AGENT_BUSY && HAS(ON_RUNNING)) DO(NOTE_PROGRESS);
        if (ev == VB_AGENT_EV_LOG) DO(RECORD_LOG);
        if (ev == VB_AGENT_EV_RESULT) HAS(CURRENT) ? DO(RECORD_RESULT) : DO(ACK_ONLY);
        if (ev == VB_AGENT_EV_SERVER_REPORT) DO(SERVER_REPORT);
        if (ev == VB_AGENT_EV_OTHER) DO(WARN_UNEXPECTED);
        if (ev == VB_AGENT_EV_DONE || ev == VB_AGENT_EV_FAILED) {
            /* on_item_end: ran_it, then the current attempt moves the item */
            int ran_it = (st == VB_AGENT_BUSY || st == VB_AGENT_DRAINING) && HAS(ITS_ATTEMPT);
            if (!HAS(CURRENT)) DO(END_STALE);
            else if (ev == VB_AGENT_EV_DONE) DO(FINISH_ITEM);
            else DO(FAIL_ITEM);
            if (ran_it) o.next = VB_AGENT_IDLE;
        }
        return o;
    case VB_AGENT_EV_SHARE:    /* coordinator/lend.c: relayed while its agent runs (or helps) the running item */
        if (!known) {
            if (st == VB_AGENT_LOST) DO(NOTE_HEARD);
            return DO(ASK_HELLO), o;
        }
        DO(TOUCH);
        if (st == VB_AGENT_BUSY && HAS(ON_RUNNING)) DO(RELAY_SHARE);
        return o;
    case VB_AGENT_EV_LEND:     /* coordinator/lend.c: idle client agents lent to a capacity item */
        if (st != VB_AGENT_IDLE) return DO(REFUSE), o;
        o.next = VB_AGENT_BUSY;
        return DO(LEND), o;
    case VB_AGENT_EV_ASSIGN:   /* idle_peer_with_role + assign() */
        if (st != VB_AGENT_IDLE) return DO(REFUSE), o;
        o.next = VB_AGENT_BUSY;
        return DO(ASSIGN), o;
    case VB_AGENT_EV_ABORT:    /* server_died, the phase timeout, the limit, the interrupted end: BUSY peers */
        if (st == VB_AGENT_BUSY) return DO(SEND_ABORT), o;
        return st == VB_AGENT_NEW ? DO(REFUSE) : DO(IGNORE), o;
    case VB_AGENT_EV_SILENT:   /* check_liveness */
        if (st == VB_AGENT_NEW) return DO(REFUSE), o;
        if (st == VB_AGENT_LOST) return DO(IGNORE), o;
        DO(REPORT_SILENT);
        if (st == VB_AGENT_BUSY && !HAS(LENT)) DO(INTERRUPT_ITEM);   /* a lent helper's loss: the leader's to say */
        o.next = VB_AGENT_LOST;
        return o;
    case VB_AGENT_EV_PROCESS_DIED:   /* watch_local_agents */
        if (st == VB_AGENT_NEW || st == VB_AGENT_LOST) return DO(IGNORE), o;
        if (st == VB_AGENT_BUSY && !HAS(LENT)) DO(INTERRUPT_ITEM);
        else if (st == VB_AGENT_BUSY) DO(NONE);
        o.next = VB_AGENT_LOST;
        return o;
    case VB_AGENT_EV_LIMIT_UNANSWERED:   /* check_liveness: the busy agent of the running churn item */
        if (st != VB_AGENT_BUSY) return DO(REFUSE), o;
        o.next = VB_AGENT_LOST;
        if (HAS(LENT)) return DO(REPORT_STUCK), o;
        return DO(EXPIRE_ITEM), DO(REPORT_STUCK), o;   /* issue 28: stuck, a local one killed */
    case VB_AGENT_EV_ABORT_UNANSWERED:   /* issue 28: check_liveness, any Abort unanswered past the bound */
        if (st == VB_AGENT_LOST) return DO(IGNORE), o;
        if (st != VB_AGENT_BUSY && st != VB_AGENT_DRAINING) return DO(REFUSE), o;
        if (st == VB_AGENT_BUSY && !HAS(LENT)) DO(INTERRUPT_ITEM);
        o.next = VB_AGENT_LOST;
        return DO(REPORT_STUCK), o;
    case VB_AGENT_EV_CAMPAIGN_END:   /* teardown: Bye to every agent not lost */
        return known ? DO(SEND_BYE) : DO(IGNORE), o;
    case VB_AGENT_N_EVENTS: break;
    }
    return DO(REFUSE), o;
}

/* Combinations that cannot happen: a hello's facts about "the item it names" need it to name one. */
static int possible(vb_agent_event ev, unsigned f) {
    unsigned about_item = VB_AGENT_F_ITS_ATTEMPT | VB_AGENT_F_RUNNING_ATTEMPT | VB_AGENT_F_ORPHAN |
                          VB_AGENT_F_STUCK_ON_IT;
    if (ev == VB_AGENT_EV_HELLO && (f & VB_AGENT_F_STUCK_ON_IT) && (f & VB_AGENT_F_FINISHED)) return 0;
    return ev != VB_AGENT_EV_HELLO || (f & about_item) == 0 || (f & VB_AGENT_F_NAMES_ITEM);
}

/* ---- the table's shape -------------------------------------------------------------------------------------- */

static void test_shape(void) {
    size_t n;
    const vb_agent_row *rows = vb_agent_fsm_rows(&n);
    int bad_range = 0, bad_list = 0, bad_ignore = 0, overlap = 0, dup = 0;
    for (size_t i = 0; i < n; i++) {
        const vb_agent_row *r = &rows[i];
        if ((unsigned)r->state >= VB_AGENT_N_STATES || (unsigned)r->event >= VB_AGENT_N_EVENTS ||
            (unsigned)r->next >= VB_AGENT_N_STATES || (r->when | r->unless) >> VB_AGENT_N_FACTS || !r->note)
            bad_range++, printf("# row %zu out of range\n", i);
        if (r->when & r->unless) overlap++, printf("# row %zu: a fact both required and excluded\n", i);
        int ended = 0, n_act = 0, alone = 0;
        for (int k = 0; k < VB_AGENT_FSM_MAX_ACTIONS; k++) {
            vb_agent_action a = r->actions[k];
            if ((unsigned)a >= VB_AGENT_N_ACTIONS || (ended && a != VB_AGENT_ACT_NONE)) bad_list++;
            if (a == VB_AGENT_ACT_NONE) ended = 1;
            else n_act++;
            alone |= a == VB_AGENT_ACT_IGNORE || a == VB_AGENT_ACT_REFUSE;
        }
        /* IGNORE and REFUSE are the whole answer and keep the state; a row without action must move. */
        if ((alone && (n_act != 1 || r->next != r->state)) || (n_act == 0 && r->next == r->state))
            bad_ignore++, printf("# row %zu (%s %s): ignore/refuse with other actions or a move, or no effect\n", i,
                                 vb_agent_fsm_state_name(r->state), vb_agent_fsm_event_name(r->event));
        for (size_t j = 0; j < i; j++)
            if (rows[j].state == r->state && rows[j].event == r->event && rows[j].when == r->when &&
                rows[j].unless == r->unless)
                dup++, printf("# rows %zu and %zu: same state, event and guard\n", j, i);
    }
    is_int(bad_range, 0, "every row's state, event, next, facts and note are in range");
    is_int(overlap, 0, "no row requires and excludes the same fact");
    is_int(bad_list, 0, "every action list holds known actions, ended by NONE");
    is_int(bad_ignore, 0, "IGNORE and REFUSE stand alone and keep the state; every other row does something");
    is_int(dup, 0, "no duplicate rows (same state, event and guard)");

    /* Complete: each pair has rows and its last row has no guard; reachable: every row is chosen for some facts. */
    int missing = 0, open_end = 0, unreachable = 0;
    static unsigned char hit[1024];
    memset(hit, 0, sizeof hit);
    for (int s = 0; s < VB_AGENT_N_STATES; s++)
        for (int e = 0; e < VB_AGENT_N_EVENTS; e++) {
            const vb_agent_row *last = NULL;
            for (size_t i = 0; i < n; i++)
                if ((int)rows[i].state == s && (int)rows[i].event == e) last = &rows[i];
            if (!last) {
                missing++;
                printf("# no row for %s --%s-->\n", vb_agent_fsm_state_name(s), vb_agent_fsm_event_name(e));
                continue;
            }
            if (last->when || last->unless) open_end++, printf("# %s --%s--> has no unguarded last row\n",
                                                               vb_agent_fsm_state_name(s), vb_agent_fsm_event_name(e));
            for (unsigned f = 0; f < N_COMBOS; f++) {
                const vb_agent_row *r = vb_agent_fsm_step(s, e, f);
                if (r && possible(e, f)) hit[r - rows] = 1;
            }
        }
    for (size_t i = 0; i < n; i++)
        if (!hit[i]) unreachable++, printf("# row %zu (%s --%s--> %s) is never chosen\n", i,
                                           vb_agent_fsm_state_name(rows[i].state),
                                           vb_agent_fsm_event_name(rows[i].event), rows[i].note);
    ok(missing == 0, "every (state, event) pair has a row (%d states x %d events)", VB_AGENT_N_STATES,
       VB_AGENT_N_EVENTS);
    is_int(open_end, 0, "every pair ends with a row without guard");
    ok(unreachable == 0, "every row is chosen for some facts (%zu rows)", n);
    ok(vb_agent_fsm_step(VB_AGENT_N_STATES, VB_AGENT_EV_HELLO, 0) == NULL &&
           vb_agent_fsm_step(VB_AGENT_IDLE, VB_AGENT_N_EVENTS, 0) == NULL,
       "a state or event out of range has no row");
}

static void test_names(void) {
    int bad = 0;
    for (int s = 0; s < VB_AGENT_N_STATES; s++) bad += strcmp(vb_agent_fsm_state_name(s), "?") == 0;
    for (int e = 0; e < VB_AGENT_N_EVENTS; e++) bad += strcmp(vb_agent_fsm_event_name(e), "?") == 0;
    for (int a = 0; a < VB_AGENT_N_ACTIONS; a++) bad += strcmp(vb_agent_fsm_action_name(a), "?") == 0;
    for (unsigned i = 0; i < VB_AGENT_N_FACTS; i++) bad += strcmp(vb_agent_fsm_fact_name(1u << i), "?") == 0;
    is_int(bad, 0, "every state, event, action and fact has a name");
    is_str(vb_agent_fsm_state_name(VB_AGENT_DRAINING), "draining", "state names are the event table's words");
    is_str(vb_agent_fsm_state_name(VB_AGENT_N_STATES), "?", "a state out of range is \"?\"");
}

/* ---- every pair, every combination of facts, against campaign.c -------------------------------------------- */

static void test_against_legacy(void) {
    for (int s = 0; s < VB_AGENT_N_STATES; s++)
        for (int e = 0; e < VB_AGENT_N_EVENTS; e++) {
            unsigned combos = 0, wrong = 0;
            char shown[1200] = "";
            for (unsigned f = 0; f < N_COMBOS; f++) {
                if (!possible(e, f)) continue;
                combos++;
                const vb_agent_row *r = vb_agent_fsm_step(s, e, f);
                outcome o = legacy(s, e, f);
                o.acts[o.n] = VB_AGENT_ACT_NONE;
                char got[300], want[300], fs[300];
                if (!r) {
                    if (!wrong++) snprintf(shown, sizeof shown, "no row for facts %s", facts_str(f, fs, sizeof fs));
                    continue;
                }
                actions_str(r->actions, got, sizeof got);
                actions_str(o.acts, want, sizeof want);
                if (strcmp(got, want) != 0 || r->next != o.next) {
                    if (!wrong++)
                        snprintf(shown, sizeof shown, "facts %s: got %s -> %s, campaign.c %s -> %s",
                                 facts_str(f, fs, sizeof fs), got, vb_agent_fsm_state_name(r->next), want,
                                 vb_agent_fsm_state_name(o.next));
                }
            }
            if (!ok(wrong == 0, "%s --%s--> as campaign.c under all %u fact combinations", vb_agent_fsm_state_name(s),
                    vb_agent_fsm_event_name(e), combos))
                printf("#   %u differ; first: %s\n", wrong, shown);
        }
}

/* ---- the e2e scenarios as sequences of events ---------------------------------------------------------------- */

/* One step of a walk: from *st, event ev under facts f, the actions must be `want` and the next state `next`. */
static void walk(const char *scenario, vb_agent_state *st, vb_agent_event ev, unsigned f, const char *want,
                 vb_agent_state next) {
    const vb_agent_row *r = vb_agent_fsm_step(*st, ev, f);
    char got[300] = "(no row)";
    if (r) actions_str(r->actions, got, sizeof got);
    int pass = r && strcmp(got, want) == 0 && r->next == next;
    if (!ok(pass, "%s: %s --%s--> %s [%s]", scenario, vb_agent_fsm_state_name(*st), vb_agent_fsm_event_name(ev),
            vb_agent_fsm_state_name(next), want))
        printf("#   got [%s] -> %s\n", got, r ? vb_agent_fsm_state_name(r->next) : "?");
    if (r) *st = r->next;
}

#define E(x) VB_AGENT_EV_##x
#define S(x) VB_AGENT_##x
#define F(x) VB_AGENT_F_##x

static void test_scenarios(void) {
    vb_agent_state st;

    /* 20/80: the coordinator is killed mid-item and resumed; the agent, never restarted, reattaches. Its first
     * message to the new process is a heartbeat (asked to say hello); its hello names the orphan's attempt. */
    const char *sc = "kill/resume: orphan taken over";
    st = S(NEW);
    walk(sc, &st, E(HEARTBEAT), 0, "ask_hello", S(NEW));
    walk(sc, &st, E(RESULT), 0, "ask_hello", S(NEW));
    walk(sc, &st, E(HELLO), F(NEW_PROCESS) | F(NAMES_ITEM) | F(ORPHAN), "record_hello,take_over_orphan,welcome",
         S(BUSY));
    walk(sc, &st, E(PROGRESS), F(ON_RUNNING), "touch,note_progress", S(BUSY));
    walk(sc, &st, E(RESULT), F(CURRENT), "touch,record_result", S(BUSY));
    walk(sc, &st, E(DONE), F(ITS_ATTEMPT) | F(CURRENT), "touch,finish_item", S(IDLE));
    walk(sc, &st, E(ASSIGN), 0, "assign", S(BUSY));

    /* 80: killed after the agent finished: its hello says it has the results; they come from its outbox. */
    sc = "kill/resume: orphan finished";
    st = S(NEW);
    walk(sc, &st, E(HELLO), F(NEW_PROCESS) | F(NAMES_ITEM) | F(FINISHED) | F(ORPHAN),
         "record_hello,take_over_orphan,welcome", S(BUSY));
    walk(sc, &st, E(RESULT), F(CURRENT), "touch,record_result", S(BUSY));
    walk(sc, &st, E(DONE), F(ITS_ATTEMPT) | F(CURRENT), "touch,finish_item", S(IDLE));

    /* 20: the orphan's agent came back without it (it restarted too): the orphan runs again. */
    sc = "kill/resume: orphan gone";
    st = S(NEW);
    walk(sc, &st, E(HELLO), F(NEW_PROCESS), "record_hello,forget_orphan,welcome", S(IDLE));
    walk(sc, &st, E(ASSIGN), 0, "assign", S(BUSY));

    /* 82: the link is cut for 10 s with agent_silent_s = 3: lost, item interrupted; the agent finished the
     * window meanwhile and says so; its result and Done belong to the interrupted attempt. Attempt 2 runs. */
    sc = "link cut";
    st = S(IDLE);
    walk(sc, &st, E(ASSIGN), 0, "assign", S(BUSY));
    walk(sc, &st, E(SILENT), 0, "report_silent,interrupt_item", S(LOST));
    walk(sc, &st, E(HEARTBEAT), 0, "note_heard,ask_hello", S(LOST));
    walk(sc, &st, E(HELLO), F(NAMES_ITEM) | F(FINISHED), "record_hello,forget_orphan,welcome", S(IDLE));
    walk(sc, &st, E(RESULT), 0, "touch,ack_only", S(IDLE));
    walk(sc, &st, E(DONE), 0, "touch,end_stale", S(IDLE));
    walk(sc, &st, E(ASSIGN), 0, "assign", S(BUSY));
    walk(sc, &st, E(RESULT), F(CURRENT), "touch,record_result", S(BUSY));
    walk(sc, &st, E(DONE), F(ITS_ATTEMPT) | F(CURRENT), "touch,finish_item", S(IDLE));

    /* 82, variants: the link comes back before the silence limit (same attempt: nothing happened), or after it
     * while the agent still measures the interrupted attempt (told to stop it, drained, then idle). */
    sc = "link cut, short";
    st = S(BUSY);
    walk(sc, &st, E(HELLO), F(NAMES_ITEM) | F(ITS_ATTEMPT) | F(ITEM_RUNNING), "record_hello,forget_orphan,welcome",
         S(BUSY));
    sc = "link cut, still measuring";
    st = S(LOST);
    walk(sc, &st, E(HELLO), F(NAMES_ITEM), "record_hello,abort_stale,forget_orphan,welcome", S(DRAINING));
    walk(sc, &st, E(ASSIGN), 0, "refuse", S(DRAINING));
    walk(sc, &st, E(HELLO), F(NAMES_ITEM) | F(ITS_ATTEMPT), "record_hello,forget_orphan,welcome", S(DRAINING));
    walk(sc, &st, E(FAILED), F(ITS_ATTEMPT), "touch,end_stale", S(IDLE));

    /* 81.1: SIGKILL mid-window, restarted by systemd: a hello of another process without the item. */
    sc = "agent restart mid-item";
    st = S(BUSY);
    walk(sc, &st, E(HELLO), F(NEW_PROCESS) | F(ITEM_RUNNING), "record_hello,interrupt_item,forget_orphan,welcome",
         S(IDLE));
    walk(sc, &st, E(ASSIGN), 0, "assign", S(BUSY));
    /* 81.2: crash after the Done was written to the outbox: the new process says it finished the same attempt. */
    sc = "agent restart after its Done";
    st = S(BUSY);
    walk(sc, &st, E(HELLO), F(NEW_PROCESS) | F(NAMES_ITEM) | F(FINISHED) | F(ITS_ATTEMPT) | F(ITEM_RUNNING),
         "record_hello,forget_orphan,welcome", S(BUSY));
    walk(sc, &st, E(DONE), F(ITS_ATTEMPT) | F(CURRENT), "touch,finish_item", S(IDLE));

    /* An Assign and the agent's hello crossed: the same process runs nothing; the Assign is sent again. */
    sc = "assign crossed a hello";
    st = S(BUSY);
    walk(sc, &st, E(HELLO), F(ITEM_RUNNING), "record_hello,resend_assign,forget_orphan,welcome", S(BUSY));
    /* The same process still runs an older item when assigned: the new one goes back to the plan. */
    sc = "assign did not take";
    st = S(BUSY);
    walk(sc, &st, E(HELLO), F(NAMES_ITEM) | F(ITEM_RUNNING),
         "record_hello,requeue_item,abort_stale,forget_orphan,welcome", S(DRAINING));

    /* 83: local mode, the client agent is SIGKILLed mid-window; the coordinator starts it again. */
    sc = "local agent killed";
    st = S(BUSY);
    walk(sc, &st, E(PROCESS_DIED), 0, "interrupt_item", S(LOST));
    walk(sc, &st, E(SILENT), 0, "ignore", S(LOST));
    walk(sc, &st, E(HELLO), F(NEW_PROCESS), "record_hello,forget_orphan,welcome", S(IDLE));
    walk(sc, &st, E(ASSIGN), 0, "assign", S(BUSY));
    walk(sc, &st, E(CAMPAIGN_END), 0, "send_bye", S(BUSY));

    /* 40: the churn reinsert reaches its limit and the agent does not stop within 30 s. */
    sc = "reinsert limit unanswered";
    st = S(BUSY);
    walk(sc, &st, E(ABORT), 0, "send_abort", S(BUSY));
    walk(sc, &st, E(LIMIT_UNANSWERED), 0, "expire_item,report_stuck", S(LOST));
    walk(sc, &st, E(CAMPAIGN_END), 0, "ignore", S(LOST));

    /* 43 (issue 28): a SIGSTOPped server; the window's Abort at the phase timeout is not answered within
     * limits.abort_unanswered_s. A local agent is killed and comes back as a new process; a remote one that says
     * hello still stuck in that attempt is heard, not welcomed, until its hello says the attempt finished. */
    sc = "abort unanswered, local";
    st = S(BUSY);
    walk(sc, &st, E(ABORT), 0, "send_abort", S(BUSY));
    walk(sc, &st, E(ABORT_UNANSWERED), 0, "interrupt_item,report_stuck", S(LOST));
    walk(sc, &st, E(PROCESS_DIED), 0, "ignore", S(LOST));
    walk(sc, &st, E(HELLO), F(NEW_PROCESS), "record_hello,forget_orphan,welcome", S(IDLE));
    walk(sc, &st, E(ASSIGN), 0, "assign", S(BUSY));
    sc = "abort unanswered, remote";
    st = S(BUSY);
    walk(sc, &st, E(ABORT), 0, "send_abort", S(BUSY));
    walk(sc, &st, E(ABORT_UNANSWERED), 0, "interrupt_item,report_stuck", S(LOST));
    walk(sc, &st, E(HELLO), F(NAMES_ITEM) | F(STUCK_ON_IT), "note_heard", S(LOST));
    walk(sc, &st, E(HELLO), F(NAMES_ITEM) | F(FINISHED), "record_hello,forget_orphan,welcome", S(IDLE));
    sc = "stale item never stops";
    st = S(DRAINING);
    walk(sc, &st, E(ABORT_UNANSWERED), 0, "report_stuck", S(LOST));

    /* An agent of another protocol version is refused and stays unknown. */
    sc = "old agent";
    st = S(NEW);
    walk(sc, &st, E(HELLO), F(BAD_PROTOCOL) | F(NEW_PROCESS), "reject_hello", S(NEW));
    walk(sc, &st, E(LOG), 0, "ask_hello", S(NEW));

    /* 48: a capacity item borrows an idle client agent (coordinator/lend.c): its shares relayed, its end the end of its
     * share session (not the item's), and its loss the leader's to report, not an interrupted item. */
    sc = "lent helper";
    st = S(IDLE);
    walk(sc, &st, E(LEND), 0, "lend", S(BUSY));
    walk(sc, &st, E(ASSIGN), F(LENT), "refuse", S(BUSY));
    walk(sc, &st, E(PROGRESS), F(LENT) | F(ON_RUNNING), "touch", S(BUSY));
    walk(sc, &st, E(SHARE), F(LENT) | F(ON_RUNNING), "touch,relay_share", S(BUSY));
    walk(sc, &st, E(SHARE), F(LENT), "touch", S(BUSY));
    walk(sc, &st, E(DONE), F(LENT) | F(ITS_ATTEMPT) | F(CURRENT), "touch,end_lent", S(IDLE));
    sc = "lent helper lost";
    st = S(BUSY);
    walk(sc, &st, E(SILENT), F(LENT), "report_silent", S(LOST));
    st = S(BUSY);
    walk(sc, &st, E(PROCESS_DIED), F(LENT), "", S(LOST));
    st = S(BUSY);
    walk(sc, &st, E(HELLO), F(LENT) | F(NEW_PROCESS), "record_hello,forget_orphan,welcome", S(IDLE));
    sc = "lent helper's item ended while it was away: its share session is stale";
    st = S(BUSY);
    walk(sc, &st, E(HELLO), F(LENT) | F(NAMES_ITEM), "record_hello,abort_stale,forget_orphan,welcome", S(DRAINING));
}

int main(void) {
    test_shape();
    test_names();
    test_against_legacy();
    test_scenarios();
    return done_testing();
}
