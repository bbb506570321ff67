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

/* ---- placement (coordinator/placement.h): a server of two nodes over two orchestrators ----------------------- */

static const char *const PLACED =
    "name: placed\n"
    "datasets:\n"
    "  - {name: d1, source: synthetic, rows: 1000}\n"
    "engines:\n"
    "  - {name: pgvector, recipe: pgvector, replicas: 1}\n"
    "resources: {orchestrators: 2}\n"
    "phases:\n"
    "  build: {}\n"
    "  recall_sweep: {ef_search: [10]}\n";

/* Orchestrator `from` reports engine pgvector's server ready (connect: n pairs key, value) or stopped. */
static void report_state(fixture *f, const char *from, Vbench__ServerReport__BodyCase body, const char *const *connect,
                         size_t n) {
    Vbench__KV kv[8], *kvp[8];
    for (size_t i = 0; i < n && i < 8; i++) {
        vbench__kv__init(&kv[i]);
        kv[i].key = (char *)connect[2 * i];
        kv[i].value = (char *)connect[2 * i + 1];
        kvp[i] = &kv[i];
    }
    Vbench__ServerReady ready = VBENCH__SERVER_READY__INIT;
    Vbench__ServerEnd end = VBENCH__SERVER_END__INIT;
    Vbench__ServerReport r = VBENCH__SERVER_REPORT__INIT;
    r.engine = "pgvector";
    r.unit = "vbench-placed-pgvector";
    r.body_case = body;
    if (body == VBENCH__SERVER_REPORT__BODY_READY) {
        ready.message = "started";
        ready.connect = kvp;
        ready.n_connect = n;
        ready.facts = kvp;
        ready.n_facts = n;
        r.ready = &ready;
    } else {
        end.message = body == VBENCH__SERVER_REPORT__BODY_DIED ? "node 1 was killed" : "stopped";
        end.log_tail = "";
        r.died = &end;
    }
    vb_campaign_on_server_report(&f->c, vb_campaign_find_peer(&f->c, from), &r);
}

/* The ServerRequest orchestrator dealer d was sent (NULL none); vb_wire_free(*env). */
static Vbench__ServerRequest *request_at(zsock_t *d, Vbench__Envelope **env) {
    zsock_set_rcvtimeo(d, 200);
    *env = fixture_received(d);
    zsock_set_rcvtimeo(d, 5000);
    return *env && (*env)->body_case == VBENCH__ENVELOPE__BODY_SERVER_REQUEST ? (*env)->server_request : NULL;
}

static void placed(void) {
    fixture f;
    if (!ok(fixture_open(&f, PLACED) == 0, "placed: a campaign")) return;
    campaign *c = &f.c;
    zsock_t *da, *db;
    peer *a = fixture_agent(&f, "oa", "orchestrator", VB_AGENT_IDLE, 1, &da);
    a->cores = 4, a->memory_bytes = 8ull << 30;
    snprintf(a->host, sizeof a->host, "host-a");
    is_int(vb_campaign_server_ready_for(c, 0), 0, "placed: one orchestrator of resources.orchestrators 2: the item waits");
    is_int(c->servers[0].state, VB_SERVER_NONE, "placed: ... and nothing is started");
    peer *b = fixture_agent(&f, "ob", "orchestrator", VB_AGENT_IDLE, 1, &db);
    a = vb_campaign_find_peer(c, "oa");
    b->cores = 2, b->memory_bytes = 4ull << 30;
    snprintf(b->host, sizeof b->host, "host-b");
    is_int(vb_campaign_server_ready_for(c, 0), 0, "placed: two orchestrators: the server starts, the item waits");
    Vbench__Envelope *env;
    Vbench__ServerRequest *rq = request_at(da, &env);
    ok(rq && rq->action == VBENCH__SERVER_ACTION__SERVER_START && rq->nodes == 2 && rq->replicas == 1 &&
           rq->n_place == 1 && rq->place[0] == 0 && rq->n_primary == 0,
       "placed: orchestrator A is asked to start node 0 of 2 (place [0])");
    char cores[32] = "";
    for (size_t i = 0; rq && i < rq->n_budget; i++)
        if (strcmp(rq->budget[i]->key, "host_cores") == 0) snprintf(cores, sizeof cores, "%s", rq->budget[i]->value);
    is_str(cores, "4", "placed: A's budget is resolved for A's host (4 cores)");
    if (env) vb_wire_free(env);
    ok(!fixture_pending(db), "placed: B waits for node 0 (its replica copies it)");
    static const char *const ca[] = {"host", "10.0.0.1", "port", "5432", "password", "pw"};
    report_state(&f, "oa", VBENCH__SERVER_REPORT__BODY_READY, ca, 3);
    is_int(c->servers[0].state, VB_SERVER_STARTING, "placed: node 0 ready, node 1 not yet: still starting");
    rq = request_at(db, &env);
    ok(rq && rq->action == VBENCH__SERVER_ACTION__SERVER_START && rq->n_place == 1 && rq->place[0] == 1 &&
           rq->n_primary == 3 && strcmp(rq->primary[0]->key, "host") == 0 &&
           strcmp(rq->primary[0]->value, "10.0.0.1") == 0,
       "placed: then B is asked to start node 1 (place [1]) with node 0's connect parameters");
    cores[0] = '\0';
    for (size_t i = 0; rq && i < rq->n_budget; i++)
        if (strcmp(rq->budget[i]->key, "host_cores") == 0) snprintf(cores, sizeof cores, "%s", rq->budget[i]->value);
    is_str(cores, "2", "placed: B's budget is resolved for B's host (2 cores)");
    if (env) vb_wire_free(env);
    static const char *const cb[] = {"node.1.host", "10.0.0.2", "node.1.port", "5433"};
    report_state(&f, "ob", VBENCH__SERVER_REPORT__BODY_READY, cb, 2);
    is_int(c->servers[0].state, VB_SERVER_READY, "placed: both parts ready: the server is");
    ok(vb_kv_get(c->servers[0].connect, c->servers[0].n_connect, "host", NULL) &&
           strcmp(vb_kv_get(c->servers[0].connect, c->servers[0].n_connect, "node.1.host", ""), "10.0.0.2") == 0,
       "placed: the clients' connect parameters are both parts' (host, node.1.host)");
    is_int(fixture_count(&f, "SELECT count(*) FROM manifest WHERE (key = 'server.pgvector.agent' AND value = 'oa') OR "
                             "(key = 'server.pgvector.host' AND value = 'host-a') OR (key = 'server.pgvector.node.1.agent' "
                             "AND value = 'ob') OR (key = 'server.pgvector.node.1.host' AND value = 'host-b')"),
           4, "placed: the manifest says where each node runs (agent and host)");
    ok(fixture_count(&f, "SELECT count(*) FROM manifest WHERE key = 'server.pgvector.placement' AND "
                         "value = 'node 0 on oa (host-a), node 1 on ob (host-b)'") == 1,
       "placed: and the placement in a sentence");

    /* a confirmation asks both; the item may go once both answered */
    is_int(vb_campaign_server_ready_for(c, 0), 1, "placed: ready: the item may run once confirmed");
    is_int(vb_campaign_server_confirmed(c, 0), 0, "placed: the phase request is out");
    ok((rq = request_at(da, &env)) && rq->action == VBENCH__SERVER_ACTION__SERVER_PHASE, "placed: A is asked to confirm");
    if (env) vb_wire_free(env);
    ok((rq = request_at(db, &env)) && rq->action == VBENCH__SERVER_ACTION__SERVER_PHASE, "placed: B is asked to confirm");
    if (env) vb_wire_free(env);
    Vbench__ServerSizes sz = VBENCH__SERVER_SIZES__INIT;
    sz.item_key = c->plan->items[0].key;
    Vbench__ServerReport r = VBENCH__SERVER_REPORT__INIT;
    r.engine = "pgvector";
    r.unit = "u";
    r.body_case = VBENCH__SERVER_REPORT__BODY_SIZES;
    r.sizes = &sz;
    vb_campaign_on_server_report(c, a, &r);
    is_int(vb_campaign_server_confirmed(c, 0), 0, "placed: A answered, B not yet: no go");
    vb_campaign_on_server_report(c, b, &r);
    is_int(vb_campaign_server_confirmed(c, 0), 1, "placed: both answered: go");

    /* node 1 dies on B while the item runs: the server's death; A's part is stopped */
    peer *cl = fixture_agent(&f, "cl", "client", VB_AGENT_IDLE, 0, NULL);
    fixture_run(&f, cl, 0);
    report_state(&f, "ob", VBENCH__SERVER_REPORT__BODY_DIED, NULL, 0);
    is_int(c->items[0], ITEM_FAILED, "placed: node 1 died on B: the item on the server failed");
    is_int(c->servers[0].state, VB_SERVER_NONE, "placed: the server died (restarted for the next item)");
    ok((rq = request_at(da, &env)) && rq->action == VBENCH__SERVER_ACTION__SERVER_STOP,
       "placed: A is asked to stop its part (node 0)");
    if (env) vb_wire_free(env);
    /* restarted for the next item before A's stop answered: the stop's answer is not the new start's */
    c->running = -1;
    is_int(vb_campaign_server_ready_for(c, 1), 0, "placed: the next item needs the server: started again");
    ok((rq = request_at(da, &env)) && rq->action == VBENCH__SERVER_ACTION__SERVER_START && rq->n_place == 1 &&
           rq->place[0] == 0, "placed: A is asked to start node 0 again");
    if (env) vb_wire_free(env);
    report_state(&f, "oa", VBENCH__SERVER_REPORT__BODY_STOPPED, NULL, 0);
    is_int(c->servers[0].state, VB_SERVER_STARTING, "placed: A's late answer to the cleanup stop is recorded only");
    ok(!fixture_pending(db), "placed: ... and B is not started by it");
    report_state(&f, "oa", VBENCH__SERVER_REPORT__BODY_READY, ca, 3);
    ok((rq = request_at(db, &env)) && rq->action == VBENCH__SERVER_ACTION__SERVER_START && rq->place[0] == 1,
       "placed: A's ready starts B's node again");
    if (env) vb_wire_free(env);
    report_state(&f, "ob", VBENCH__SERVER_REPORT__BODY_READY, cb, 2);
    is_int(c->servers[0].state, VB_SERVER_READY, "placed: ready again on both hosts");
    fixture_close(&f);
}

int main(void) {
    placed();
    died_while_running();
    died_reported_late();
    restated();
    return done_testing();
}
