/* Unit tests of coordinator/intake.c, results and the ends of attempts, on a campaign struct, a real results
 * database and a real DEALER for the agent (tests/unit/campaign_fixture.h): a result of the current attempt is
 * committed, then acknowledged, and completes its item (noted for its engine's server: vb_campaign_note_finished);
 * a copy is acknowledged again and changes nothing; a result that is not current is acknowledged and only an
 * event; a Failed fails the item with the agent's words, a Done without a result interrupts it. Intake sends
 * through peers.c and posts no agent event. */
#include "tests/unit/campaign_fixture.h"

static const char *const PROFILE =
    "name: intake\n"
    "datasets:\n"
    "  - {name: d1, source: synthetic, rows: 1000}\n"
    "engines:\n"
    "  - name: exact\n"
    "phases:\n"
    "  build: {}\n"
    "  recall_sweep: {ef_search: [10, 20]}\n";

static Vbench__Measurement m;

/* A sweep result of item `key`, attempt `attempt`, completing it. */
static void sweep(Vbench__Result *r, Vbench__SweepResult *w, const char *result_key, const char *key, unsigned attempt) {
    vbench__result__init(r);
    vbench__sweep_result__init(w);
    vbench__measurement__init(&m);
    w->ef_search = 10;
    w->m = &m;
    m.queries = 100;
    m.recall = 0.95;
    m.id_overlap = 0.9;
    m.qps = 1000;
    m.elapsed_s = 0.1;
    r->result_key = (char *)result_key;
    r->item_key = (char *)key;
    r->attempt = attempt;
    r->completes_item = 1;
    r->body_case = VBENCH__RESULT__BODY_SWEEP;
    r->sweep = w;
}

/* The next message at the agent is an Ack of result_key. */
static int acked(zsock_t *d, const char *result_key) {
    Vbench__Envelope *env = fixture_received(d);
    int yes = env && env->body_case == VBENCH__ENVELOPE__BODY_ACK && strcmp(env->ack->result_key, result_key) == 0;
    if (env) vb_wire_free(env);
    return yes;
}

static void results(void) {
    fixture f;
    if (!ok(fixture_open(&f, PROFILE) == 0, "results: a campaign")) return;
    campaign *c = &f.c;
    zsock_t *d;
    peer *a = fixture_agent(&f, "a", "client", VB_AGENT_IDLE, 1, &d);
    c->items[0] = ITEM_DONE;   /* the build: done before */
    fixture_run(&f, a, 1);
    const char *key = c->plan->items[1].key;
    Vbench__Result r;
    Vbench__SweepResult w;
    sweep(&r, &w, "r1", key, 1);
    vb_campaign_record_result(c, a, &r);
    ok(acked(d, "r1"), "result: acknowledged");
    is_str(fixture_status(&f, 1), "done", "result: committed, its item done in the store");
    ok(c->items[1] == ITEM_DONE && c->running == -1, "result: the item is done, nothing runs");
    is_int(c->servers[0].last_item, 1, "result: noted as its engine's last finished item (servers.c)");
    is_str(c->servers[0].last_error, "", "result: done, no error noted");
    is_int(fixture_count(&f, "SELECT count(*) FROM sweep_result"), 1, "result: one sweep row");
    /* a copy (the agent did not get the Ack): acknowledged again, not counted twice */
    vb_campaign_record_result(c, a, &r);
    ok(acked(d, "r1"), "a copy: acknowledged again");
    is_int(fixture_count(&f, "SELECT count(*) FROM sweep_result"), 1, "a copy: still one sweep row");
    /* a result of an item not in the plan, and one of an attempt that is not current */
    sweep(&r, &w, "r2", "no/such/item", 1);
    vb_campaign_result_not_recorded(c, a, &r);
    ok(acked(d, "r2"), "not in the plan: acknowledged, so the agent forgets it");
    sweep(&r, &w, "r3", c->plan->items[2].key, 7);
    vb_campaign_result_not_recorded(c, a, &r);
    ok(acked(d, "r3"), "a stale attempt: acknowledged");
    is_int(fixture_events(&f, VB_EVENT_NOT_RECORDED), 2, "not recorded: one event each");
    is_int(fixture_count(&f, "SELECT count(*) FROM sweep_result"), 1, "not recorded: no row");
    is_int(vb_agent_queue_waiting(&c->agent_events), 0, "intake posts no agent event");
    fixture_close(&f);
}

static void ends(void) {
    fixture f;
    if (!ok(fixture_open(&f, PROFILE) == 0, "ends: a campaign")) return;
    campaign *c = &f.c;
    zsock_t *d;
    peer *a = fixture_agent(&f, "a", "client", VB_AGENT_IDLE, 1, &d);
    c->items[0] = ITEM_DONE;
    fixture_run(&f, a, 1);
    Vbench__Failed fl = VBENCH__FAILED__INIT;
    fl.item_key = (char *)c->plan->items[1].key;
    fl.key = "f1";
    fl.attempt = 1;
    fl.domain = "engine";
    fl.message = "lost connection to the server";
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_FAILED;
    env.failed = &fl;
    vb_campaign_on_item_end(c, a, &env, VB_AGENT_ACT_FAIL_ITEM);
    ok(acked(d, "f1"), "failed: acknowledged once written");
    is_int(c->items[1], ITEM_FAILED, "failed: the item failed");
    is_int(fixture_count(&f, "SELECT count(*) FROM plan WHERE error = 'engine error: lost connection to the server'"), 1,
           "failed: the agent's domain and words in the store");
    is_str(c->servers[0].last_error, "lost connection to the server",
           "failed: the agent's words noted for its server (a death reported next restates them)");
    /* a Done without a committed result: the item runs again, as the agent's fault */
    fixture_run(&f, a, 2);
    Vbench__Done dn = VBENCH__DONE__INIT;
    dn.item_key = (char *)c->plan->items[2].key;
    dn.key = "d1";
    dn.attempt = 1;
    env.body_case = VBENCH__ENVELOPE__BODY_DONE;
    env.done = &dn;
    vb_campaign_on_item_end(c, a, &env, VB_AGENT_ACT_FINISH_ITEM);
    ok(acked(d, "d1"), "done without a result: acknowledged");
    is_int(c->items[2], ITEM_PENDING, "done without a result: the item runs again");
    contains(fixture_status(&f, 2), "interrupted", "done without a result: interrupted in the store");
    /* the end of an interrupted attempt: only an event */
    dn.key = "d2";
    vb_campaign_on_item_end(c, a, &env, VB_AGENT_ACT_END_STALE);
    ok(acked(d, "d2"), "a stale end: acknowledged");
    is_int(c->items[2], ITEM_PENDING, "a stale end: moves nothing");
    is_int(fixture_events(&f, VB_EVENT_NOT_RECORDED), 1, "a stale end: a not_recorded event");
    is_int(vb_agent_queue_waiting(&c->agent_events), 0, "intake posts no agent event");
    fixture_close(&f);
}

int main(void) {
    results();
    ends();
    return done_testing();
}
