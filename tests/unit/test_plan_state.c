/* Unit tests of coordinator/plan_state.c, the items' states, on a campaign struct and a real results database
 * (tests/unit/campaign_fixture.h): an interrupted item runs again or fails by limits.on_agent_lost and
 * limits.max_attempts (read from the profile's typed limits), a failed build skips its dependents, a limit expires
 * a churn item, limits.on_item_failure: stop stops the campaign, the orphan and a draining agent hold assignments.
 * plan_state.c calls no other part of the run: it posts no agent event either. */
#include "tests/unit/campaign_fixture.h"

static const char *const PROFILE =
    "name: plan\n"
    "datasets:\n"
    "  - {name: d1, source: synthetic, rows: 1000}\n"
    "engines:\n"
    "  - name: exact\n"
    "phases:\n"
    "  build: {}\n"
    "  recall_sweep: {ef_search: [10, 20]}\n"
    "  churn: {}\n"
    "limits: {max_attempts: 2}\n";

static void interrupt(void) {
    fixture f;
    if (!ok(fixture_open(&f, PROFILE) == 0, "interrupt: a campaign")) return;
    campaign *c = &f.c;
    peer *a = fixture_agent(&f, "a", "client", VB_AGENT_IDLE, 0, NULL);
    is_int(vb_campaign_next_item(c), 0, "next: the first pending item");
    fixture_run(&f, a, 0);
    is_int(vb_campaign_next_item(c), 1, "next: a running item is not next");
    vb_campaign_interrupt_item(c, 0, "the agent restarted", 1);
    is_int(c->items[0], ITEM_PENDING, "interrupt, attempt 1 of max_attempts 2: pending again");
    is_str(fixture_status(&f, 0), "interrupted", "interrupt: the store says interrupted");
    ok(!c->runs[0].live && c->running == -1, "interrupt: its attempt is no longer current, nothing runs");
    ok(!vb_campaign_attempt_current(c, 0, 1), "interrupt: messages of attempt 1 are not recorded any more");
    fixture_run(&f, a, 0);
    vb_campaign_interrupt_item(c, 0, "the agent restarted again", 1);
    is_int(c->items[0], ITEM_FAILED, "interrupt, attempt 2 of max_attempts 2: failed");
    is_int(fixture_count(&f, "SELECT count(*) FROM plan WHERE error LIKE 'agent error: attempt 2 interrupted: the agent "
                             "restarted again; that was the last of limits.max_attempts = 2%'"),
           1, "interrupt: the failure names limits.max_attempts and its value");
    is_int(c->failures, 1, "interrupt: counted as a failure");
    /* a failed build leaves nothing to measure: the rest of its engine and dataset is skipped */
    for (size_t i = 1; i < c->plan->n_items; i++)
        if (c->items[i] != ITEM_SKIPPED) {
            ok(0, "fail: item %zu (%s) skipped after its build failed", i, c->plan->items[i].key);
            break;
        } else if (i + 1 == c->plan->n_items) {
            ok(1, "fail: the %zu items after the failed build are skipped", c->plan->n_items - 1);
        }
    is_int(vb_campaign_next_item(c), -1, "next: nothing pending");
    is_int(vb_agent_queue_waiting(&c->agent_events), 0, "plan_state posts no agent event");
    fixture_close(&f);
}

static void policies(void) {
    fixture f;
    if (!ok(fixture_open(&f, PROFILE) == 0, "policies: a campaign")) return;
    campaign *c = &f.c;
    peer *a = fixture_agent(&f, "a", "client", VB_AGENT_IDLE, 0, NULL);
    int sw = fixture_item_of(&f, VB_PHASE_RECALL_SWEEP), ch = fixture_item_of(&f, VB_PHASE_CHURN);
    /* on_agent_lost: fail (set in the typed limits, as config fills them) */
    c->profile->limits.fail_on_agent_lost = 1;
    fixture_run(&f, a, sw);
    vb_campaign_interrupt_item(c, sw, "its agent went silent", 1);
    is_int(c->items[sw], ITEM_FAILED, "on_agent_lost fail: the first interruption fails the item");
    is_int(fixture_count(&f, "SELECT count(*) FROM plan WHERE error LIKE '%(limits.on_agent_lost: fail)%'"), 1,
           "on_agent_lost fail: the error says so");
    ok(c->stop_reason == NULL, "on_item_failure continue: the campaign goes on");
    /* the coordinator stopping is not the agent's fault: pending whatever the policy */
    fixture_run(&f, a, sw + 1);
    vb_campaign_interrupt_item(c, sw + 1, "the coordinator was interrupted", 0);
    is_int(c->items[sw + 1], ITEM_PENDING, "interrupt not the agent's fault: pending, whatever on_agent_lost says");
    /* a limit on a churn item expires it; resume continues it */
    fixture_run(&f, a, ch);
    vb_campaign_fail_item(c, ch, "limit", "exceeded limits.phase_timeout_s = 1 s");
    is_int(c->items[ch], ITEM_EXPIRED, "limit on a churn item: expired, not failed");
    is_str(fixture_status(&f, ch), "expired", "limit on a churn item: the store says expired");
    is_int(c->expired, 1, "limit: counted as expired");
    /* on_item_failure: stop */
    c->profile->limits.stop_on_item_failure = 1;
    vb_campaign_fail_item(c, sw + 1, "engine", "boom");
    ok(c->stop_reason && strstr(c->stop_reason, "limits.on_item_failure is stop"),
       "on_item_failure stop: a failure stops the campaign, saying why");
    is_int(vb_agent_queue_waiting(&c->agent_events), 0, "plan_state posts no agent event");
    fixture_close(&f);
}

static void holds(void) {
    fixture f;
    if (!ok(fixture_open(&f, PROFILE) == 0, "holds: a campaign")) return;
    campaign *c = &f.c;
    ok(!vb_campaign_hold_assignments(c), "hold: nothing holds a fresh campaign");
    peer *d = fixture_agent(&f, "d", "client", VB_AGENT_DRAINING, 0, NULL);
    ok(vb_campaign_hold_assignments(c), "hold: an agent draining a stale attempt holds every assignment");
    d->state = VB_AGENT_IDLE;
    ok(vb_campaign_idle_peer_with_role(c, "client") == d, "idle with a role: found");
    ok(vb_campaign_idle_peer_with_role(c, "orchestrator") == NULL, "idle with a role: none with another role");
    /* the orphan of a killed coordinator: held until its agent comes back or limits.agent_silent_s passed */
    c->orphan = 1;
    c->runs[1].live = 1;
    snprintf(c->orphan_agent, sizeof c->orphan_agent, "gone");
    c->orphan_deadline_ns = vb_now_ns() + 1000000000000ull;
    ok(vb_campaign_hold_assignments(c), "hold: the orphan holds assignments before its deadline");
    c->orphan_deadline_ns = vb_now_ns() - 1;
    ok(!vb_campaign_hold_assignments(c), "hold: after its deadline the orphan is gone");
    ok(c->orphan == -1 && !c->runs[1].live, "orphan gone: its attempt is no longer current");
    is_str(fixture_status(&f, 1), "interrupted", "orphan gone: the store says interrupted (so the next run does not wait)");
    is_int(fixture_count(&f, "SELECT count(*) FROM plan WHERE error LIKE '%within limits.agent_silent_s = 15 s%'"), 1,
           "orphan gone: the reason names limits.agent_silent_s and its default");
    fixture_close(&f);
}

int main(void) {
    interrupt();
    policies();
    holds();
    return done_testing();
}
