/* Self-test of coordinator/server_fsm and proto/server_state.h: the server machine's table, without sockets.
 *   - the table is whole: every (state, event) pair has rows, the last without guard; no duplicate guard, no
 *     row that can never be chosen; IGNORE and REFUSE alone and without a move; DIED is never entered;
 *   - every pair, under every combination of the facts, gives what campaign.c did: `legacy()` below is
 *     campaign.c's server_ready_for() / server_start() / on_server_report() / server_died() /
 *     servers_housekeeping() / the end's stop loop transcribed over the same facts, with the three differences
 *     the table makes marked DIFFERENCE and the cold start added since marked ADDITION;
 *   - the scenarios of tests/e2e/62-orchestrator.t (two servers one at a time, a broken recipe, a server killed
 *     and restarted until the restart budget is spent), a start timeout and the cold start of
 *     tests/e2e/54-cold-start-servers.t, walked as sequences of events. */
#include <stdio.h>
#include <string.h>

#include "coordinator/server_fsm.h"
#include "tests/tap.h"

#define N_COMBOS (1u << VB_SERVER_N_FACTS)

static const char *actions_str(const vb_server_action *a, char *buf, size_t len) {
    buf[0] = '\0';
    for (int i = 0; i < VB_SERVER_FSM_MAX_ACTIONS && a[i] != VB_SERVER_ACT_NONE; i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? "," : "", vb_server_fsm_action_name(a[i]));
    return buf;
}

static const char *facts_str(unsigned f, char *buf, size_t len) {
    buf[0] = '\0';
    for (unsigned i = 0; i < VB_SERVER_N_FACTS; i++)
        if (f & (1u << i)) snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? "|" : "",
                                    vb_server_fsm_fact_name(1u << i));
    return buf[0] ? buf : "-";
}

/* ---- campaign.c, transcribed ------------------------------------------------------------------------------ */

typedef struct outcome {
    vb_server_action acts[VB_SERVER_FSM_MAX_ACTIONS + 2];
    int n;
    vb_server_state next;
} outcome;

#define DO(a) (o.acts[o.n++] = VB_SERVER_ACT_##a)
#define HAS(x) ((f & VB_SERVER_F_##x) != 0)
#define IS(x) (st == VB_SERVER_##x)

static outcome legacy(vb_server_state st, vb_server_event ev, unsigned f) {
    outcome o = {.next = st};
    if (IS(DIED)) return DO(REFUSE), o;   /* not a state of the coordinator's */
    switch (ev) {
    case VB_SERVER_EV_NEEDED:   /* server_ready_for, server_start */
        if (IS(READY) && HAS(COLD_PENDING)) {   /* ADDITION: a cold_start item restarts its server cold first */
            if (HAS(NO_ORCHESTRATOR)) return DO(WAIT), o;
            if (HAS(BUDGET_FAILS)) {
                DO(BUDGET_FAILED);
                if (HAS(POLICY_STOP)) DO(STOP_CAMPAIGN);
                o.next = VB_SERVER_FAILED;
                return o;
            }
            o.next = VB_SERVER_STARTING;
            return DO(REQUEST_COLD_START), o;
        }
        if (IS(READY)) return DO(MAY_RUN), o;
        if (IS(STARTING) || IS(STOPPING)) return DO(WAIT), o;
        if (IS(FAILED)) return DO(FAIL_ITEM), o;
        if (HAS(OTHER_UP) || HAS(NO_ORCHESTRATOR)) return DO(WAIT), o;
        if (HAS(BUDGET_FAILS)) {
            DO(BUDGET_FAILED);
            if (HAS(POLICY_STOP)) DO(STOP_CAMPAIGN);   /* DIFFERENCE: campaign.c went on */
            o.next = VB_SERVER_FAILED;
            return o;
        }
        o.next = VB_SERVER_STARTING;
        if (HAS(COLD_PENDING)) return DO(REQUEST_COLD_START), o;   /* ADDITION */
        return DO(REQUEST_START), o;
    case VB_SERVER_EV_REPORT_SAMPLES: return DO(STORE_SAMPLES), o;
    case VB_SERVER_EV_REPORT_SIZES: return DO(STORE_SIZES), o;
    case VB_SERVER_EV_REPORT_PROFILE: return DO(STORE_PROFILE), o;
    case VB_SERVER_EV_REPORT_READY:
    case VB_SERVER_EV_REPORT_FAILED:
    case VB_SERVER_EV_REPORT_DIED:
    case VB_SERVER_EV_REPORT_STOPPED:
    case VB_SERVER_EV_REPORT_OTHER:
        DO(LOG_REPORT);
        if ((ev == VB_SERVER_EV_REPORT_READY && IS(STARTING) && HAS(PARTS_PENDING)) ||
            (ev == VB_SERVER_EV_REPORT_STOPPED && IS(STOPPING) && HAS(PARTS_PENDING))) {
            DO(TAKE_PART);   /* ADDITION: one part of a placed server answered, another has not */
            return o;
        }
        if (ev == VB_SERVER_EV_REPORT_READY) {
            DO(TAKE_READY);
            o.next = VB_SERVER_READY;
        } else if (ev == VB_SERVER_EV_REPORT_FAILED) {
            DO(RECORD_FAILURE);
            o.next = IS(STOPPING) ? VB_SERVER_STOPPED : VB_SERVER_FAILED;
            if (o.next == VB_SERVER_FAILED && HAS(POLICY_STOP)) DO(STOP_CAMPAIGN);
        } else if (ev == VB_SERVER_EV_REPORT_DIED) {
            DO(SERVER_DIED);
            if (IS(STOPPING)) {
                /* DIFFERENCE: campaign.c went to NONE (counting a restart) or FAILED. */
            } else if (HAS(POLICY_RESTART) && HAS(RESTARTS_LEFT)) {
                DO(COUNT_RESTART);
                o.next = VB_SERVER_NONE;
            } else {
                DO(NO_RESTART);
                o.next = VB_SERVER_FAILED;
            }
            if (HAS(POLICY_STOP)) DO(STOP_CAMPAIGN);
        } else if (ev == VB_SERVER_EV_REPORT_STOPPED) {
            DO(RECORD_STOP);
            o.next = VB_SERVER_STOPPED;
        }
        return o;
    case VB_SERVER_EV_START_TIMEOUT:   /* servers_housekeeping */
        if (!IS(STARTING)) return DO(IGNORE), o;
        DO(START_TIMED_OUT);
        if (HAS(POLICY_STOP)) DO(STOP_CAMPAIGN);   /* DIFFERENCE: campaign.c went on */
        o.next = VB_SERVER_FAILED;
        return o;
    case VB_SERVER_EV_STOP_TIMEOUT:
        if (!IS(STOPPING)) return DO(IGNORE), o;
        o.next = VB_SERVER_STOPPED;
        return DO(STOP_TIMED_OUT), o;
    case VB_SERVER_EV_NO_PENDING:
    case VB_SERVER_EV_CAMPAIGN_END:   /* servers_housekeeping, server_stop; the end's loop */
        if (IS(READY)) {
            if (HAS(NO_ORCHESTRATOR)) {
                o.next = VB_SERVER_STOPPED;
                return o;
            }
            o.next = VB_SERVER_STOPPING;
            return DO(REQUEST_STOP), o;
        }
        if (ev == VB_SERVER_EV_CAMPAIGN_END && (IS(STARTING) || IS(STOPPING))) return DO(WAIT), o;
        return DO(IGNORE), o;
    case VB_SERVER_N_EVENTS: break;
    }
    return DO(REFUSE), o;
}

/* limits.on_server_failure has one value: restart and stop together cannot happen. */
static int possible(unsigned f) {
    unsigned both = VB_SERVER_F_POLICY_RESTART | VB_SERVER_F_POLICY_STOP;
    return (f & both) != both;
}

/* ---- the table's shape -------------------------------------------------------------------------------------- */

static void test_shape(void) {
    size_t n;
    const vb_server_row *rows = vb_server_fsm_rows(&n);
    int bad_range = 0, bad_list = 0, bad_ignore = 0, overlap = 0, dup = 0, into_died = 0;
    for (size_t i = 0; i < n; i++) {
        const vb_server_row *r = &rows[i];
        if ((unsigned)r->state >= VB_SERVER_N_STATES || (unsigned)r->event >= VB_SERVER_N_EVENTS ||
            (unsigned)r->next >= VB_SERVER_N_STATES || (r->when | r->unless) >> VB_SERVER_N_FACTS || !r->note)
            bad_range++, printf("# row %zu out of range\n", i);
        if (r->when & r->unless) overlap++;
        into_died += r->next == VB_SERVER_DIED && r->state != VB_SERVER_DIED;
        int ended = 0, n_act = 0, alone = 0;
        for (int k = 0; k < VB_SERVER_FSM_MAX_ACTIONS; k++) {
            vb_server_action a = r->actions[k];
            if ((unsigned)a >= VB_SERVER_N_ACTIONS || (ended && a != VB_SERVER_ACT_NONE)) bad_list++;
            if (a == VB_SERVER_ACT_NONE) ended = 1;
            else n_act++;
            alone |= a == VB_SERVER_ACT_IGNORE || a == VB_SERVER_ACT_REFUSE;
        }
        if ((alone && (n_act != 1 || r->next != r->state)) || (n_act == 0 && r->next == r->state))
            bad_ignore++, printf("# row %zu: ignore/refuse with other actions or a move, or no effect\n", i);
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
    is_int(into_died, 0, "no row enters DIED: the coordinator never rests there");

    int missing = 0, open_end = 0, unreachable = 0;
    static unsigned char hit[512];
    memset(hit, 0, sizeof hit);
    for (int s = 0; s < VB_SERVER_N_STATES; s++)
        for (int e = 0; e < VB_SERVER_N_EVENTS; e++) {
            const vb_server_row *last = NULL;
            for (size_t i = 0; i < n; i++)
                if ((int)rows[i].state == s && (int)rows[i].event == e) last = &rows[i];
            if (!last) {
                missing++;
                printf("# no row for %s --%s-->\n", vb_server_state_name(s), vb_server_fsm_event_name(e));
                continue;
            }
            if (last->when || last->unless) open_end++;
            for (unsigned f = 0; f < N_COMBOS; f++) {
                const vb_server_row *r = vb_server_fsm_step(s, e, f);
                if (r && possible(f)) hit[r - rows] = 1;
            }
        }
    for (size_t i = 0; i < n; i++)
        if (!hit[i]) unreachable++, printf("# row %zu (%s) is never chosen\n", i, rows[i].note);
    ok(missing == 0, "every (state, event) pair has a row (%d states x %d events)", VB_SERVER_N_STATES,
       VB_SERVER_N_EVENTS);
    is_int(open_end, 0, "every pair ends with a row without guard");
    ok(unreachable == 0, "every row is chosen for some facts (%zu rows)", n);
    ok(vb_server_fsm_step(VB_SERVER_N_STATES, VB_SERVER_EV_NEEDED, 0) == NULL &&
           vb_server_fsm_step(VB_SERVER_NONE, VB_SERVER_N_EVENTS, 0) == NULL,
       "a state or event out of range has no row");
}

/* proto/server_state.h: one enum, a name per state, and the report words map back to their states. */
static void test_state_names(void) {
    int bad = 0;
    for (int s = 0; s < VB_SERVER_N_STATES; s++) {
        bad += strcmp(vb_server_state_name(s), "?") == 0;
        bad += vb_server_state_parse(vb_server_state_name(s)) != s;
    }
    is_int(bad, 0, "every server state has a name that parses back to it");
    is_int(vb_server_state_parse("died"), VB_SERVER_DIED, "the report word \"died\" is the state DIED");
    is_int(vb_server_state_parse("samples"), -1, "a word that is no state parses to -1");
    is_str(vb_server_state_name(VB_SERVER_N_STATES), "?", "a state out of range is \"?\"");
    int bad_names = 0;
    for (int e = 0; e < VB_SERVER_N_EVENTS; e++) bad_names += strcmp(vb_server_fsm_event_name(e), "?") == 0;
    for (int a = 0; a < VB_SERVER_N_ACTIONS; a++) bad_names += strcmp(vb_server_fsm_action_name(a), "?") == 0;
    for (unsigned i = 0; i < VB_SERVER_N_FACTS; i++) bad_names += strcmp(vb_server_fsm_fact_name(1u << i), "?") == 0;
    is_int(bad_names, 0, "every event, action and fact has a name");
}

static void test_against_legacy(void) {
    for (int s = 0; s < VB_SERVER_N_STATES; s++)
        for (int e = 0; e < VB_SERVER_N_EVENTS; e++) {
            unsigned wrong = 0, combos = 0;
            char shown[1200] = "";
            for (unsigned f = 0; f < N_COMBOS; f++) {
                if (!possible(f)) continue;
                combos++;
                const vb_server_row *r = vb_server_fsm_step(s, e, f);
                outcome o = legacy(s, e, f);
                o.acts[o.n] = VB_SERVER_ACT_NONE;
                char got[300], want[300], fs[200];
                if (!r) {
                    if (!wrong++) snprintf(shown, sizeof shown, "no row for facts %s", facts_str(f, fs, sizeof fs));
                    continue;
                }
                actions_str(r->actions, got, sizeof got);
                actions_str(o.acts, want, sizeof want);
                if ((strcmp(got, want) != 0 || r->next != o.next) && !wrong++)
                    snprintf(shown, sizeof shown, "facts %s: got %s -> %s, campaign.c %s -> %s",
                             facts_str(f, fs, sizeof fs), got, vb_server_state_name(r->next), want,
                             vb_server_state_name(o.next));
            }
            if (!ok(wrong == 0, "%s --%s--> as campaign.c under all %u fact combinations", vb_server_state_name(s),
                    vb_server_fsm_event_name(e), combos))
                printf("#   %u differ; first: %s\n", wrong, shown);
        }
}

/* ---- scenarios ------------------------------------------------------------------------------------------------ */

static void walk(const char *scenario, vb_server_state *st, vb_server_event ev, unsigned f, const char *want,
                 vb_server_state next) {
    const vb_server_row *r = vb_server_fsm_step(*st, ev, f);
    char got[300] = "(no row)";
    if (r) actions_str(r->actions, got, sizeof got);
    if (!ok(r && strcmp(got, want) == 0 && r->next == next, "%s: %s --%s--> %s [%s]", scenario,
            vb_server_state_name(*st), vb_server_fsm_event_name(ev), vb_server_state_name(next), want))
        printf("#   got [%s] -> %s\n", got, r ? vb_server_state_name(r->next) : "?");
    if (r) *st = r->next;
}

#define E(x) VB_SERVER_EV_##x
#define S(x) VB_SERVER_##x
#define F(x) VB_SERVER_F_##x

static void test_scenarios(void) {
    const unsigned restart = F(POLICY_RESTART);
    vb_server_state pg = S(NONE), maria = S(NONE), st;

    /* 62: pgvector then MariaDB, one at a time. */
    const char *sc = "two servers, one at a time";
    walk(sc, &pg, E(NEEDED), restart, "request_start", S(STARTING));
    walk(sc, &pg, E(NEEDED), restart, "wait", S(STARTING));
    walk(sc, &pg, E(REPORT_READY), restart, "log_report,take_ready", S(READY));
    walk(sc, &pg, E(NEEDED), restart, "may_run", S(READY));
    walk(sc, &pg, E(REPORT_SIZES), restart, "store_sizes", S(READY));
    walk(sc, &pg, E(REPORT_SAMPLES), restart, "store_samples", S(READY));
    walk(sc, &pg, E(REPORT_PROFILE), restart, "store_profile", S(READY));
    walk(sc, &maria, E(NEEDED), restart | F(OTHER_UP), "wait", S(NONE));
    walk(sc, &pg, E(NO_PENDING), restart, "request_stop", S(STOPPING));
    walk(sc, &maria, E(NEEDED), restart | F(OTHER_UP), "wait", S(NONE));
    walk(sc, &pg, E(REPORT_STOPPED), restart, "log_report,record_stop", S(STOPPED));
    walk(sc, &maria, E(NEEDED), restart, "request_start", S(STARTING));
    walk(sc, &maria, E(REPORT_READY), restart, "log_report,take_ready", S(READY));
    walk(sc, &maria, E(CAMPAIGN_END), restart, "request_stop", S(STOPPING));
    walk(sc, &maria, E(CAMPAIGN_END), restart, "wait", S(STOPPING));
    walk(sc, &maria, E(REPORT_STOPPED), restart, "log_report,record_stop", S(STOPPED));
    walk(sc, &maria, E(CAMPAIGN_END), restart, "ignore", S(STOPPED));

    /* 62: a broken recipe (bad server option), a missing image, an unknown recipe: the start fails, the engine's
     * items fail one by one, the campaign goes on. */
    sc = "broken recipe";
    st = S(NONE);
    walk(sc, &st, E(NEEDED), restart, "request_start", S(STARTING));
    walk(sc, &st, E(REPORT_FAILED), restart, "log_report,record_failure", S(FAILED));
    walk(sc, &st, E(NEEDED), restart, "fail_item", S(FAILED));
    walk(sc, &st, E(NEEDED), restart, "fail_item", S(FAILED));
    walk(sc, &st, E(NO_PENDING), restart, "ignore", S(FAILED));

    /* 62: the server is killed during a window: restarted (twice at most), then the engine's items fail. */
    sc = "server died, restarted, then out of restarts";
    st = S(NONE);
    walk(sc, &st, E(NEEDED), restart, "request_start", S(STARTING));
    walk(sc, &st, E(REPORT_READY), restart, "log_report,take_ready", S(READY));
    walk(sc, &st, E(REPORT_DIED), restart | F(RESTARTS_LEFT), "log_report,server_died,count_restart", S(NONE));
    walk(sc, &st, E(NEEDED), restart, "request_start", S(STARTING));
    walk(sc, &st, E(REPORT_READY), restart, "log_report,take_ready", S(READY));
    walk(sc, &st, E(REPORT_DIED), restart | F(RESTARTS_LEFT), "log_report,server_died,count_restart", S(NONE));
    walk(sc, &st, E(NEEDED), restart, "request_start", S(STARTING));
    walk(sc, &st, E(REPORT_READY), restart, "log_report,take_ready", S(READY));
    walk(sc, &st, E(REPORT_DIED), restart, "log_report,server_died,no_restart", S(FAILED));
    walk(sc, &st, E(NEEDED), restart, "fail_item", S(FAILED));

    /* limits.on_server_failure: skip and stop. */
    sc = "server died, skip";
    st = S(READY);
    walk(sc, &st, E(REPORT_DIED), F(RESTARTS_LEFT), "log_report,server_died,no_restart", S(FAILED));
    sc = "server died, stop";
    st = S(READY);
    walk(sc, &st, E(REPORT_DIED), F(POLICY_STOP) | F(RESTARTS_LEFT), "log_report,server_died,no_restart,stop_campaign",
         S(FAILED));
    sc = "start failed, stop";
    st = S(STARTING);
    walk(sc, &st, E(REPORT_FAILED), F(POLICY_STOP), "log_report,record_failure,stop_campaign", S(FAILED));

    /* limits.server_start_timeout_s: the orchestrator never answers the start. */
    sc = "start timeout";
    st = S(NONE);
    walk(sc, &st, E(NEEDED), restart, "request_start", S(STARTING));
    walk(sc, &st, E(STOP_TIMEOUT), restart, "ignore", S(STARTING));
    walk(sc, &st, E(START_TIMEOUT), restart, "start_timed_out", S(FAILED));
    walk(sc, &st, E(NEEDED), restart, "fail_item", S(FAILED));
    sc = "start timeout, stop";   /* DIFFERENCE: campaign.c went on */
    st = S(STARTING);
    walk(sc, &st, E(START_TIMEOUT), F(POLICY_STOP), "start_timed_out,stop_campaign", S(FAILED));

    /* The stop is never answered (900 s). */
    sc = "stop timeout";
    st = S(READY);
    walk(sc, &st, E(NO_PENDING), restart, "request_stop", S(STOPPING));
    walk(sc, &st, E(STOP_TIMEOUT), restart, "stop_timed_out", S(STOPPED));

    /* A death found at the stop request (reported before the stop): the last item is charged; the stop's answer
     * still comes. DIFFERENCE: campaign.c went to NONE, so the end did not wait for "stopped". */
    sc = "died at the stop";
    st = S(READY);
    walk(sc, &st, E(NO_PENDING), restart, "request_stop", S(STOPPING));
    walk(sc, &st, E(REPORT_DIED), restart | F(RESTARTS_LEFT), "log_report,server_died", S(STOPPING));
    walk(sc, &st, E(CAMPAIGN_END), restart, "wait", S(STOPPING));
    walk(sc, &st, E(REPORT_STOPPED), restart, "log_report,record_stop", S(STOPPED));

    /* No orchestrator: the item waits (the loop gives up after 60 s); a budget too big for its host fails. */
    sc = "no orchestrator";
    st = S(NONE);
    walk(sc, &st, E(NEEDED), restart | F(NO_ORCHESTRATOR), "wait", S(NONE));
    walk(sc, &st, E(NEEDED), restart | F(BUDGET_FAILS), "budget_failed", S(FAILED));
    walk(sc, &st, E(NEEDED), restart, "fail_item", S(FAILED));

    /* 54: a cold_start item on a ready server: restarted cold (stopped, data directory evicted, started), then it
     * runs; on a stopped one (the next engine's) the start itself is the cold one. ADDITION. */
    sc = "cold start";
    st = S(READY);
    walk(sc, &st, E(NEEDED), restart | F(COLD_PENDING), "request_cold_start", S(STARTING));
    walk(sc, &st, E(NEEDED), restart | F(COLD_PENDING), "wait", S(STARTING));
    walk(sc, &st, E(REPORT_READY), restart, "log_report,take_ready", S(READY));
    walk(sc, &st, E(NEEDED), restart, "may_run", S(READY));
    st = S(STOPPED);
    walk(sc, &st, E(NEEDED), restart | F(COLD_PENDING), "request_cold_start", S(STARTING));
    st = S(READY);
    walk(sc, &st, E(NEEDED), restart | F(COLD_PENDING) | F(NO_ORCHESTRATOR), "wait", S(READY));
    walk(sc, &st, E(NEEDED), restart | F(COLD_PENDING) | F(BUDGET_FAILS), "budget_failed", S(FAILED));

    /* The campaign is interrupted while a server starts: wait for it, then stop it. */
    sc = "interrupted while starting";
    st = S(STARTING);
    walk(sc, &st, E(CAMPAIGN_END), restart, "wait", S(STARTING));
    walk(sc, &st, E(REPORT_READY), restart, "log_report,take_ready", S(READY));
    walk(sc, &st, E(CAMPAIGN_END), restart, "request_stop", S(STOPPING));
    walk(sc, &st, E(REPORT_FAILED), restart, "log_report,record_failure", S(STOPPED));

    /* 35: a server placed over two orchestrators (coordinator/placement.h): ready when its last part is, stopped
     * when its last part is; a part's death is the server's. ADDITION. */
    sc = "placed over two orchestrators";
    st = S(NONE);
    walk(sc, &st, E(NEEDED), restart, "request_start", S(STARTING));
    walk(sc, &st, E(REPORT_READY), restart | F(PARTS_PENDING), "log_report,take_part", S(STARTING));
    walk(sc, &st, E(NEEDED), restart, "wait", S(STARTING));
    walk(sc, &st, E(REPORT_READY), restart, "log_report,take_ready", S(READY));
    walk(sc, &st, E(NO_PENDING), restart, "request_stop", S(STOPPING));
    walk(sc, &st, E(REPORT_STOPPED), restart | F(PARTS_PENDING), "log_report,take_part", S(STOPPING));
    walk(sc, &st, E(REPORT_STOPPED), restart, "log_report,record_stop", S(STOPPED));
    st = S(READY);
    walk(sc, &st, E(REPORT_DIED), restart | F(RESTARTS_LEFT), "log_report,server_died,count_restart", S(NONE));
}

int main(void) {
    test_shape();
    test_state_names();
    test_against_legacy();
    test_scenarios();
    return done_testing();
}
