/* Unit tests of coordinator/servers.c, the servers of engines with a recipe, on a campaign struct and a real
 * results database (tests/unit/campaign_fixture.h): an orchestrator's "died" report fails the item that ran on the
 * server (or interrupts one that started after the death, or fails or restates an item that ended just before it,
 * by vb_campaign_note_finished), and the agents that run the item are told to stop by an ABORT posted for the agent
 * machine (coordinator/agent_queue.h), fired only when the loop drains: the Abort goes out after the item's failure.
 * limits.on_server_failure comes from the profile's typed limits. */
#include "tests/unit/campaign_fixture.h"

static const char *const PROFILE =
    "name: servers\n"
    "datasets:\n"
    "  - {name: d1, source: synthetic, rows: 1000}\n"
    "engines:\n"
    "  - {name: pgvector, recipe: pgvector}\n"
    "phases:\n"
    "  build: {}\n"
    "  recall_sweep: {ef_search: [10, 20]}\n";

/* An orchestrator's report that engine's server died at died_at (epoch seconds) with message msg. */
static void report_died(fixture *f, peer *orch, double died_at, const char *msg) {
    Vbench__ServerEnd end = VBENCH__SERVER_END__INIT;
    char at[64];
    snprintf(at, sizeof at, "%.3f", died_at);
    Vbench__KV kv = VBENCH__KV__INIT, *facts[1] = {&kv};
    kv.key = "died_at";
    kv.value = at;
    end.message = (char *)msg;
    end.log_tail = "";
    end.facts = facts;
    end.n_facts = 1;
    Vbench__ServerReport r = VBENCH__SERVER_REPORT__INIT;
    r.engine = "pgvector";
    r.unit = "vbench-pgvector.service";
    r.body_case = VBENCH__SERVER_REPORT__BODY_DIED;
    r.died = &end;
    f->c.servers[0].state = VB_SERVER_READY;
    vb_campaign_on_server_report(&f->c, orch, &r);
}

static void died_while_running(void) {
    fixture f;
    if (!ok(fixture_open(&f, PROFILE) == 0, "died: a campaign")) return;
    campaign *c = &f.c;
    ok(c->need_orchestrator && vb_campaign_engine_recipe(c, 0), "died: the engine has a recipe: a server");
    peer *o = fixture_agent(&f, "o", "orchestrator", VB_AGENT_IDLE, 0, NULL);
    zsock_t *d;
    peer *a = fixture_agent(&f, "a", "client", VB_AGENT_IDLE, 1, &d);
    o = vb_campaign_find_peer(c, "o");
    fixture_run(&f, a, 0);
    report_died(&f, o, vb_wall_time(), "the postgres process was killed");
    is_int(c->items[0], ITEM_FAILED, "died while its item ran: the item failed");
    is_int(fixture_count(&f, "SELECT count(*) FROM plan WHERE error LIKE 'server error: the postgres process was killed%'"),
           1, "died: the item's error is the server's");
    is_int(fixture_events(&f, VB_EVENT_SERVER_DIED), 1, "died: a server_died event");
    is_int(c->servers[0].restarts, 1, "died: limits.on_server_failure restart (the default): a restart counted");
    ok(!fixture_pending(d), "died: no Abort sent yet (it is posted, after the failure)");
    vb_agent_post e;
    ok(fixture_posted(&f, &e) && e.kind == VB_AGENT_EV_ABORT && strcmp(e.agent, "a") == 0 && e.item == 0 &&
           e.reason == VBENCH__ABORT_REASON__ABORT_SERVER_DIED,
       "died: an ABORT posted for the agent that ran the item, reason server died");
    ok(!fixture_posted(&f, &e), "died: only for that agent (not the orchestrator)");
    vb_campaign_post(c, VB_AGENT_EV_ABORT, a, 0, VBENCH__ABORT_REASON__ABORT_SERVER_DIED, NULL);
    vb_campaign_agent_drain(c);
    Vbench__Envelope *env = fixture_received(d);
    ok(env && env->body_case == VBENCH__ENVELOPE__BODY_ABORT &&
           env->abort->reason == VBENCH__ABORT_REASON__ABORT_SERVER_DIED,
       "died: drained, the agent receives the Abort");
    if (env) vb_wire_free(env);
    fixture_close(&f);
}

static void died_reported_late(void) {
    fixture f;
    if (!ok(fixture_open(&f, PROFILE) == 0, "late: a campaign")) return;
    campaign *c = &f.c;
    fixture_agent(&f, "o", "orchestrator", VB_AGENT_IDLE, 0, NULL);
    peer *a = fixture_agent(&f, "a", "client", VB_AGENT_IDLE, 0, NULL);
    /* item 0 finished (done) a moment ago: noted for its engine's server */
    c->items[0] = ITEM_DONE;
    vb_campaign_note_finished(c, 0, NULL);
    is_int(c->servers[0].last_item, 0, "note_finished: the server remembers the item that ended last");
    /* item 1 was assigned after the death: the death, reported late, is not its */
    fixture_run(&f, a, 1);
    c->runs[1].started_wall = vb_wall_time() + 5;
    c->servers[0].last_finished = vb_wall_time() - 100;   /* item 0 ended long before the death */
    report_died(&f, vb_campaign_find_peer(c, "o"), vb_wall_time(), "killed");
    is_int(c->items[1], ITEM_PENDING, "late: the item assigned after the death runs again (interrupted)");
    is_int(c->items[0], ITEM_DONE, "late: ... and item 0, done long before the death, keeps its results");
    vb_agent_post e;
    ok(fixture_posted(&f, &e) && e.kind == VB_AGENT_EV_ABORT && e.item == 1, "late: its agent is told to stop (posted)");
    /* nothing runs: a death at the end of the item that just finished fails it, its results kept */
    c->running = -1;
    c->servers[0].last_finished = vb_wall_time();
    report_died(&f, vb_campaign_find_peer(c, "o"), vb_wall_time(), "killed at the end");
    is_int(c->items[0], ITEM_FAILED, "finished, then its server's death: the item failed");
    ok(!fixture_posted(&f, &e), "finished: nobody runs it: nothing posted");
    fixture_close(&f);
}

static void restated(void) {
    fixture f;
    if (!ok(fixture_open(&f, PROFILE) == 0, "restated: a campaign")) return;
    campaign *c = &f.c;
    fixture_agent(&f, "o", "orchestrator", VB_AGENT_IDLE, 0, NULL);
    /* the agent saw the dying server first and failed the item with its own words */
    vb_campaign_fail_item(c, 1, "engine", "server closed the connection unexpectedly");
    vb_campaign_note_finished(c, 1, "server closed the connection unexpectedly");
    c->profile->limits.on_server_failure = VB_ON_SERVER_FAILURE_STOP;
    report_died(&f, vb_campaign_find_peer(c, "o"), vb_wall_time(), "killed by signal 9");
    is_int(fixture_count(&f, "SELECT count(*) FROM plan WHERE error LIKE 'server error: killed by signal 9 (the agent "
                             "saw: server closed the connection unexpectedly)%'"),
           1, "restated: the item's error names the death and keeps what the agent saw");
    is_int(c->failures, 1, "restated: counted once");
    ok(c->stop_reason && strstr(c->stop_reason, "limits.on_server_failure is stop"),
       "on_server_failure stop (typed limits): the campaign stops");
    is_int(c->servers[0].state, VB_SERVER_FAILED, "on_server_failure stop: the server is failed");
    is_int(vb_agent_queue_waiting(&c->agent_events), 0, "restated: nobody ran it: nothing posted");
    fixture_close(&f);
}

int main(void) {
    died_while_running();
    died_reported_late();
    restated();
    return done_testing();
}
