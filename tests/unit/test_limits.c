/* Unit tests of coordinator/limits.c, the limits enforced while an item runs, on a campaign struct without the
 * event loop (tests/unit/campaign_fixture.h): each check posts its agent events (coordinator/agent_queue.h) and
 * leaves the agent machine alone; the drain (vb_campaign_agent_drain) then fires them. The clocks are set back
 * instead of waited for: no check here depends on how long it took. */
#include "tests/unit/campaign_fixture.h"

#define S 1000000000ull

static const char *const PROFILE =
    "name: limits\n"
    "datasets:\n"
    "  - {name: d1, source: synthetic, rows: 1000}\n"
    "engines:\n"
    "  - name: exact\n"
    "phases:\n"
    "  build: {}\n"
    "  churn: {limit_s: 60}\n"
    "limits: {phase_timeout_s: 100, agent_silent_s: 15, abort_unanswered_s: 30}\n";

static void silent(void) {
    fixture f;
    if (!ok(fixture_open(&f, PROFILE) == 0, "silent: a campaign")) return;
    campaign *c = &f.c;
    peer *a = fixture_agent(&f, "a", "client", VB_AGENT_IDLE, 0, NULL);
    fixture_run(&f, a, 0);
    fixture_agent(&f, "b", "client", VB_AGENT_IDLE, 0, NULL);
    a = vb_campaign_find_peer(c, "a");
    a->last_heard_ns = vb_now_ns() - 16 * S;   /* past limits.agent_silent_s = 15 */
    vb_campaign_check_silent(c);
    vb_agent_post e;
    ok(fixture_posted(&f, &e) && e.kind == VB_AGENT_EV_SILENT && strcmp(e.agent, "a") == 0,
       "silent: SILENT posted for the agent heard 16 s ago");
    contains(e.why, "its agent a went silent", "silent: the post says why its item stops");
    ok(!fixture_posted(&f, &e), "silent: nothing for the agent heard now");
    ok(a->state == VB_AGENT_BUSY && c->items[0] == ITEM_RUNNING, "silent: posted, not fired: the agent still busy, its item running");

    /* the drain fires it: the agent is lost and its item interrupted (rerun: pending again) */
    vb_campaign_check_silent(c);
    vb_campaign_agent_drain(c);
    a = vb_campaign_find_peer(c, "a");
    is_int(a->state, VB_AGENT_LOST, "silent: drained, the agent is lost");
    is_int(c->items[0], ITEM_PENDING, "silent: drained, its item is pending again");
    is_str(fixture_status(&f, 0), "interrupted", "silent: the store says interrupted");
    is_int(fixture_events(&f, VB_EVENT_AGENT_LOST), 1, "silent: one agent_lost event");
    is_int(vb_agent_queue_waiting(&c->agent_events), 0, "silent: the queue is empty after the drain");
    fixture_close(&f);
}

static void phase_timeout(void) {
    fixture f;
    if (!ok(fixture_open(&f, PROFILE) == 0, "phase timeout: a campaign")) return;
    campaign *c = &f.c;
    zsock_t *d;
    peer *a = fixture_agent(&f, "a", "client", VB_AGENT_IDLE, 1, &d);
    fixture_run(&f, a, 0);
    vb_campaign_check_phase_timeout(c);
    vb_agent_post e;
    ok(!fixture_posted(&f, &e) && c->items[0] == ITEM_RUNNING, "phase timeout: nothing before the limit");
    a->item_started_ns = vb_now_ns() - 101 * S;   /* limits.phase_timeout_s = 100 */
    vb_campaign_check_phase_timeout(c);
    /* the new order: the item's failure is written now, the Abort only posted */
    is_int(c->items[0], ITEM_FAILED, "phase timeout: the item failed at once");
    is_str(fixture_status(&f, 0), "failed", "phase timeout: the store says failed");
    is_int(fixture_count(&f, "SELECT count(*) FROM plan WHERE error LIKE 'limit error: exceeded limits.phase_timeout_s = 100 s%'"),
           1, "phase timeout: its error names the limit and its value");
    is_int(c->running, -1, "phase timeout: nothing runs");
    ok(!fixture_pending(d), "phase timeout: no Abort sent yet (it is posted, after the failure)");
    ok(fixture_posted(&f, &e) && e.kind == VB_AGENT_EV_ABORT && strcmp(e.agent, "a") == 0 && e.item == 0 &&
           e.reason == VBENCH__ABORT_REASON__ABORT_PHASE_TIMEOUT,
       "phase timeout: an ABORT posted for its agent, reason phase timeout");
    ok(!fixture_posted(&f, &e), "phase timeout: one post");
    /* the drain sends it */
    vb_campaign_post(c, VB_AGENT_EV_ABORT, a, 0, VBENCH__ABORT_REASON__ABORT_PHASE_TIMEOUT, "exceeded");
    vb_campaign_agent_drain(c);
    Vbench__Envelope *env = fixture_received(d);
    ok(env && env->body_case == VBENCH__ENVELOPE__BODY_ABORT &&
           strcmp(env->abort->item_key, c->plan->items[0].key) == 0 &&
           env->abort->reason == VBENCH__ABORT_REASON__ABORT_PHASE_TIMEOUT,
       "phase timeout: drained, the agent receives the Abort of its item");
    if (env) vb_wire_free(env);
    ok(a->abort_sent_ns != 0, "phase timeout: the Abort's clock runs (limits.abort_unanswered_s)");
    fixture_close(&f);
}

static void unanswered(void) {
    fixture f;
    if (!ok(fixture_open(&f, PROFILE) == 0, "unanswered: a campaign")) return;
    campaign *c = &f.c;
    peer *a = fixture_agent(&f, "a", "client", VB_AGENT_IDLE, 0, NULL);
    fixture_run(&f, a, 0);
    fixture_agent(&f, "b", "client", VB_AGENT_DRAINING, 0, NULL);
    fixture_agent(&f, "i", "client", VB_AGENT_IDLE, 0, NULL);
    /* the records move as agents join: found again by id */
    a = vb_campaign_find_peer(c, "a");
    peer *b = vb_campaign_find_peer(c, "b"), *i = vb_campaign_find_peer(c, "i");
    uint64_t now = vb_now_ns();
    a->abort_sent_ns = now - 29 * S;   /* within limits.abort_unanswered_s = 30 */
    b->abort_sent_ns = now - 31 * S;
    i->abort_sent_ns = now - 31 * S;   /* idle: no Abort is outstanding whatever the clock says */
    vb_campaign_check_unanswered(c);
    vb_agent_post e;
    ok(fixture_posted(&f, &e) && e.kind == VB_AGENT_EV_ABORT_UNANSWERED && strcmp(e.agent, "b") == 0,
       "unanswered: ABORT_UNANSWERED posted for the draining agent 31 s after its Abort");
    ok(!fixture_posted(&f, &e), "unanswered: none for the agent at 29 s, none for the idle one");
    a->abort_sent_ns = now - 31 * S;
    vb_campaign_check_unanswered(c);
    ok(fixture_posted(&f, &e) && e.kind == VB_AGENT_EV_ABORT_UNANSWERED && strcmp(e.agent, "a") == 0 && e.item == 0,
       "unanswered: and for the busy one at 31 s, naming its item");
    fixture_posted(&f, &e);
    is_int(fixture_events(&f, VB_EVENT_AGENT_STUCK), 0, "unanswered: posted only: no agent_stuck event yet");
    vb_campaign_check_unanswered(c);
    vb_campaign_agent_drain(c);
    a = vb_campaign_find_peer(c, "a");
    is_int(fixture_events(&f, VB_EVENT_AGENT_STUCK), 2, "unanswered: drained, both agents are reported stuck");
    ok(a->state == VB_AGENT_LOST && c->items[0] == ITEM_PENDING, "unanswered: drained, the busy one is lost, its item pending");
    fixture_close(&f);
}

static void reinsert_limit(void) {
    fixture f;
    if (!ok(fixture_open(&f, PROFILE) == 0, "reinsert: a campaign")) return;
    campaign *c = &f.c;
    int ch = fixture_item_of(&f, VB_PHASE_CHURN);
    if (!ok(ch >= 0, "reinsert: the plan has a churn item")) return;
    peer *a = fixture_agent(&f, "a", "client", VB_AGENT_IDLE, 0, NULL);
    fixture_run(&f, a, ch);
    vb_campaign_item_limit_reset(c, ch);
    is_int(c->limit_s, 60, "reinsert: its limit is churn.limit_s");
    Vbench__Progress pr = VBENCH__PROGRESS__INIT;
    pr.item_key = (char *)c->plan->items[ch].key;
    pr.stage = "reinsert";
    pr.churn_stage = VBENCH__CHURN_STAGE__CHURN_REINSERT;
    vb_campaign_note_progress(c, &pr);
    ok(c->limit_deadline_ns > vb_now_ns() + 50 * S, "reinsert: the first reinsert progress starts the limit clock");
    is_int(fixture_events(&f, VB_EVENT_REINSERT_STARTED), 1, "reinsert: a reinsert_started event");
    vb_campaign_check_reinsert_limit(c);
    vb_agent_post e;
    ok(!fixture_posted(&f, &e), "reinsert: nothing before the deadline");
    c->limit_deadline_ns = vb_now_ns() - 1;
    vb_campaign_check_reinsert_limit(c);
    ok(fixture_posted(&f, &e) && e.kind == VB_AGENT_EV_ABORT && e.reason == VBENCH__ABORT_REASON__ABORT_LIMIT &&
           e.item == ch,
       "reinsert: at the deadline an ABORT with reason limit is posted");
    is_int(fixture_events(&f, VB_EVENT_LIMIT_REACHED), 1, "reinsert: a limit_reached event");
    vb_campaign_check_reinsert_limit(c);
    ok(!fixture_posted(&f, &e), "reinsert: the Abort is posted once");
    c->limit_aborted_ns = vb_now_ns() - 31 * S;
    vb_campaign_check_reinsert_limit(c);
    ok(fixture_posted(&f, &e) && e.kind == VB_AGENT_EV_LIMIT_UNANSWERED && e.item == ch,
       "reinsert: unanswered for limits.abort_unanswered_s: LIMIT_UNANSWERED posted");
    vb_campaign_check_reinsert_limit(c);
    vb_campaign_agent_drain(c);
    is_int(c->items[ch], ITEM_EXPIRED, "reinsert: drained, the item expired (resume continues it)");
    is_int(fixture_count(&f, "SELECT count(*) FROM plan WHERE error LIKE '%limits.abort_unanswered_s = 30 s%'"), 1,
           "reinsert: the expiry names limits.abort_unanswered_s and its value");
    /* maintenance stops the clock: a deadline just after the last row cannot abort it */
    c->limit_deadline_ns = vb_now_ns() - 1;
    pr.churn_stage = VBENCH__CHURN_STAGE__CHURN_MAINTAIN;
    c->running = ch;
    vb_campaign_note_progress(c, &pr);
    is_int(c->limit_deadline_ns, 0, "reinsert: the maintain stage stops the limit clock");
    fixture_close(&f);
}

int main(void) {
    silent();
    phase_timeout();
    unanswered();
    reinsert_limit();
    return done_testing();
}
