/* Unit tests of coordinator/lend.c, client agents lent to a capacity item (docs/design.md §8 "A capacity window on
 * several client agents"), on a campaign struct, a real results database and real DEALERs for the agents
 * (tests/unit/campaign_fixture.h): client_agents 0 borrows every idle client agent, N waits until N are idle, 1 none,
 * and only a capacity item borrows; the leader's Assign names its helpers, a helper's names its leader and its share;
 * a ShareRequest of the leader reaches each helper and a helper's ShareReport the leader; once the item no longer
 * runs, each helper is sent its release, once; a lent helper's Done frees it without touching the item. */
#include "tests/unit/campaign_fixture.h"

static const char *profile(char *buf, size_t len, int agents) {
    snprintf(buf, len,
             "name: lend\n"
             "datasets:\n"
             "  - {name: d1, source: synthetic, rows: 1000}\n"
             "engines:\n"
             "  - {name: sleep, service_us: 100}\n"
             "phases:\n"
             "  build: {}\n"
             "  capacity: {recall: 0, p99_ms: [10], client_agents: %d}\n", agents);
    return buf;
}

static int item_of(campaign *c, vb_phase_kind k) {
    for (size_t i = 0; i < c->plan->n_items; i++)
        if (c->plan->items[i].kind == k) return (int)i;
    return -1;
}

static void pick(void) {
    char y[600];
    fixture f;
    if (!ok(fixture_open(&f, profile(y, sizeof y, 0)) == 0, "pick: a campaign")) return;
    campaign *c = &f.c;
    int cap = item_of(c, VB_PHASE_CAPACITY), build = item_of(c, VB_PHASE_BUILD);
    peer *a = fixture_agent(&f, "a", "client", VB_AGENT_IDLE, 0, NULL);
    fixture_agent(&f, "b", "client", VB_AGENT_IDLE, 0, NULL);
    fixture_agent(&f, "o", "orchestrator", VB_AGENT_IDLE, 0, NULL);
    fixture_agent(&f, "z", "client", VB_AGENT_LOST, 0, NULL);
    a = vb_campaign_find_peer(c, "a");   /* the records may have moved as they grew */
    is_int(vb_campaign_lend_pick(c, build, a), 0, "a build borrows no agent");
    is_int(vb_campaign_lend_pick(c, cap, a), 1, "client_agents 0: every other idle client agent (not the "
                                                 "orchestrator, not a lost one)");
    is_int(vb_campaign_find_peer(c, "b")->lend_to, cap + 1, "... b is marked for the item");
    is_int(vb_campaign_find_peer(c, "o")->lend_to + vb_campaign_find_peer(c, "z")->lend_to + a->lend_to, 0,
           "... and no other");
    vb_campaign_find_peer(c, "b")->lend_to = 0;
    c->plan->items[cap].p.client_agents = 3;
    is_int(vb_campaign_lend_pick(c, cap, a), -1, "client_agents 3 with 2 idle: the item waits");
    is_int(vb_campaign_find_peer(c, "b")->lend_to, 0, "... nothing marked");
    c->plan->items[cap].p.client_agents = 1;
    is_int(vb_campaign_lend_pick(c, cap, a), 0, "client_agents 1: none");
    fixture_close(&f);
}

static void lend_and_relay(void) {
    char y[600];
    fixture f;
    if (!ok(fixture_open(&f, profile(y, sizeof y, 2)) == 0, "lend: a campaign")) return;
    campaign *c = &f.c;
    int cap = item_of(c, VB_PHASE_CAPACITY);
    c->items[item_of(c, VB_PHASE_BUILD)] = ITEM_DONE;
    zsock_t *da, *db;
    peer *a = fixture_agent(&f, "a", "client", VB_AGENT_IDLE, 1, &da);
    peer *b = fixture_agent(&f, "b", "client", VB_AGENT_IDLE, 1, &db);
    a = vb_campaign_find_peer(c, "a");   /* the records may have moved as they grew */
    is_int(vb_campaign_lend_pick(c, cap, a), 1, "client_agents 2 with 2 idle: one helper");
    vb_campaign_agent_fire(c, &(agent_ev){.kind = VB_AGENT_EV_ASSIGN, .p = a, .id = a->id, .item = cap});
    Vbench__Envelope *env = fixture_received(da);
    ok(env && env->body_case == VBENCH__ENVELOPE__BODY_ASSIGN && env->assign->n_helpers == 1 &&
           strcmp(env->assign->helpers[0], "b") == 0 && !env->assign->helper_of[0],
       "the leader's Assign names its helper b");
    if (env) vb_wire_free(env);
    for (peer *q; (q = vb_campaign_lend_next(c, cap));)
        vb_campaign_agent_fire(c, &(agent_ev){.kind = VB_AGENT_EV_LEND, .p = q, .id = q->id, .item = cap});
    ok(vb_campaign_lend_next(c, cap) == NULL, "... each marked agent lent once");
    is_int(b->state, VB_AGENT_BUSY, "b is lent: busy");
    is_int(b->item, cap, "... with the item");
    env = fixture_received(db);
    ok(env && env->body_case == VBENCH__ENVELOPE__BODY_ASSIGN && strcmp(env->assign->helper_of, "a") == 0 &&
           env->assign->share_index == 1 && env->assign->attempt == c->runs[cap].attempt,
       "the helper's Assign names its leader a and its share 1, the same attempt");
    if (env) vb_wire_free(env);

    Vbench__ShareRequest rq = VBENCH__SHARE_REQUEST__INIT;
    rq.item_key = (char *)c->plan->items[cap].key;
    rq.attempt = c->runs[cap].attempt;
    rq.step = 3;
    rq.rate = 500;
    Vbench__Envelope e = VBENCH__ENVELOPE__INIT;
    e.body_case = VBENCH__ENVELOPE__BODY_SHARE_REQUEST;
    e.share_request = &rq;
    vb_campaign_relay_share(c, a, &e);
    env = fixture_received(db);
    ok(env && env->body_case == VBENCH__ENVELOPE__BODY_SHARE_REQUEST && env->share_request->step == 3 &&
           env->share_request->rate == 500, "the leader's ShareRequest reaches the helper");
    if (env) vb_wire_free(env);
    ok(!fixture_pending(da), "... not the leader");
    Vbench__ShareReport rp = VBENCH__SHARE_REPORT__INIT;
    rp.item_key = rq.item_key;
    rp.attempt = rq.attempt;
    rp.step = 3;
    rp.agent = "b";
    e.body_case = VBENCH__ENVELOPE__BODY_SHARE_REPORT;
    e.share_report = &rp;
    vb_campaign_relay_share(c, b, &e);
    env = fixture_received(da);
    ok(env && env->body_case == VBENCH__ENVELOPE__BODY_SHARE_REPORT && strcmp(env->share_report->agent, "b") == 0,
       "the helper's ShareReport reaches the leader");
    if (env) vb_wire_free(env);

    vb_campaign_lend_release(c);
    ok(!fixture_pending(db), "while the item runs its attempt, no release");
    c->items[cap] = ITEM_DONE;
    c->running = -1;
    vb_campaign_lend_release(c);
    env = fixture_received(db);
    ok(env && env->body_case == VBENCH__ENVELOPE__BODY_SHARE_REQUEST && env->share_request->release,
       "the item done: the helper is sent its release");
    if (env) vb_wire_free(env);
    vb_campaign_lend_release(c);
    ok(!fixture_pending(db), "... once");
    fixture_close(&f);
}

int main(void) {
    pick();
    lend_and_relay();
    return done_testing();
}
