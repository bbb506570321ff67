/* What the unit tests of the run's services share (test_limits.c, test_plan_state.c, test_servers.c,
 * test_intake.c, test_local_agents.c): a campaign struct (coordinator/campaign_int.h) as campaign.c's prepare
 * leaves it, on a real results database in a scratch directory, with no event loop, no local agents and no
 * transport. Agents are records made here; an agent that must receive what the coordinator sends gets a real
 * DEALER on an inproc endpoint of the campaign's ROUTER, so a test reads the Ack or Abort it was sent. A test calls
 * a service and reads what it posted for the agent machine (c.agent_events), the store and the records.
 * Header-only: each test is one program. */
#ifndef VB_TESTS_CAMPAIGN_FIXTURE_H
#define VB_TESTS_CAMPAIGN_FIXTURE_H

#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coordinator/campaign_int.h"
#include "tests/tap.h"

typedef struct fixture {
    char dir[64], db[128];
    vb_campaign_opts o;
    campaign c;
    zsock_t *dealers[8];
    int n_dealers;
} fixture;

/* The campaign of profile `yaml` in a new scratch directory: its plan in a new database, a run begun, every item
 * pending, the servers' slots made. Console output goes to /dev/null. 0 on success. */
static inline int fixture_open(fixture *f, const char *yaml) {
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/vbench-unit.XXXXXX");
    if (!mkdtemp(f->dir)) return -1;
    snprintf(f->db, sizeof f->db, "%s/r.sqlite", f->dir);
    f->o.out = f->db;
    f->c.o = &f->o;
    f->c.running = -1;
    f->c.orphan = -1;
    vb_console_init(&f->c.console, fopen("/dev/null", "w"), 0, 0);
    snprintf(f->c.work_dir, sizeof f->c.work_dir, "%s", f->dir);
    vb_error err = {0};
    int rc = vb_profile_parse(yaml, strlen(yaml), "fixture.yml", &f->c.profile, &err);
    if (rc == VB_OK) rc = vb_plan_build(f->c.profile, &f->c.plan, &err);
    if (rc == VB_OK) rc = vb_store_open(f->db, 1, &f->c.store, &err);
    if (rc == VB_OK) rc = vb_store_init_campaign(f->c.store, f->c.profile, NULL, f->c.plan, &err);
    if (rc == VB_OK) rc = vb_store_begin_run(f->c.store, 0, NULL, &err);
    if (rc == VB_OK) rc = vb_campaign_load_item_states(&f->c, NULL, &err);
    if (rc == VB_OK) rc = vb_campaign_servers_init(&f->c);
    if (rc == VB_OK) {
        static int n;
        f->c.router = zsock_new(ZMQ_ROUTER);
        rc = zsock_bind(f->c.router, "inproc://fixture-%d-%d", (int)getpid(), n++) < 0 ? VB_ERROR : VB_OK;
    }
    if (rc != VB_OK) printf("# fixture: %s\n", err.message);
    return rc;
}

/* An agent's record, state st (IDLE, BUSY, ...), with roles. linked: it gets a DEALER connected to the campaign's
 * ROUTER (returned in *dealer when not NULL), so what the coordinator sends it can be read; else its routing id
 * names no connection and a send to it fails (as to an agent whose connection is gone). */
static inline peer *fixture_agent(fixture *f, const char *id, const char *roles, vb_agent_state st, int linked,
                                  zsock_t **dealer) {
    peer *p = vb_campaign_peer_add(&f->c, id);
    if (!p) return NULL;
    snprintf(p->roles, sizeof p->roles, "%s", roles);
    p->state = st;
    p->last_heard_ns = p->last_sent_ns = vb_now_ns();
    p->instance = 1;
    if (!linked) {
        p->routing = zframe_new(id, strlen(id));
        return p;
    }
    zsock_t *d = zsock_new(ZMQ_DEALER);
    zsock_set_identity(d, id);
    zsock_set_rcvtimeo(d, 5000);
    zsock_connect(d, "%s", zsock_endpoint(f->c.router));
    zstr_send(d, "ping");   /* the ROUTER learns the connection; its routing frame is the agent's */
    zsock_set_rcvtimeo(f->c.router, 5000);
    zmsg_t *m = zmsg_recv(f->c.router);
    p = vb_campaign_find_peer(&f->c, id);
    p->routing = m ? zmsg_pop(m) : zframe_new(id, strlen(id));
    zmsg_destroy(&m);
    f->dealers[f->n_dealers++] = d;
    if (dealer) *dealer = d;
    return p;
}

/* Item i starts on agent p, as the ASSIGN action leaves it: a new attempt in the store, the item running, the agent
 * busy with it. */
static inline void fixture_run(fixture *f, peer *p, int i) {
    campaign *c = &f->c;
    vb_store_item_start(c->store, c->plan->items[i].key, p->id, NULL);
    c->runs[i].attempt++;
    c->runs[i].live = 1;
    c->runs[i].started_wall = vb_wall_time();
    c->items[i] = ITEM_RUNNING;
    c->running = i;
    p->state = VB_AGENT_BUSY;
    p->item = i;
    p->item_started_ns = vb_now_ns();
}

/* The message the coordinator sent to a linked agent (NULL: none within the DEALER's 5 s); vb_wire_free it. */
static inline Vbench__Envelope *fixture_received(zsock_t *dealer) {
    vb_error err;
    return vb_wire_recv(dealer, NULL, &err);
}

/* Whether a message waits at the DEALER now (nothing is waited for). */
static inline int fixture_pending(zsock_t *dealer) {
    zsock_set_rcvtimeo(dealer, 0);
    zmsg_t *m = zmsg_recv(dealer);
    zsock_set_rcvtimeo(dealer, 5000);
    int got = m != NULL;
    zmsg_destroy(&m);
    return got;
}

/* The number of rows of a SQL count over the campaign's database (-1 on an error). */
static inline long long fixture_count(fixture *f, const char *sql) {
    sqlite3_stmt *st = NULL;
    long long n = -1;
    if (sqlite3_prepare_v2(vb_store_db(f->c.store), sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* Events of kind k written so far. */
static inline long long fixture_events(fixture *f, vb_event_kind k) {
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM event WHERE kind = '%s'", vb_event_kind_name(k));
    return fixture_count(f, sql);
}

/* Item i's status in the store ("pending", "failed", ...), in a static buffer. */
static inline const char *fixture_status(fixture *f, int i) {
    static char st[32];
    if (vb_store_item_status(f->c.store, f->c.plan->items[i].key, st, sizeof st, NULL)) snprintf(st, sizeof st, "?");
    return st;
}

/* The next event posted for the agent machine into *e; 0 when none waits. */
static inline int fixture_posted(fixture *f, vb_agent_post *e) { return vb_agent_queue_take(&f->c.agent_events, e); }

/* The plan index of the first item of phase kind k (-1: none). */
static inline int fixture_item_of(fixture *f, vb_phase_kind k) {
    for (size_t i = 0; i < f->c.plan->n_items; i++)
        if (f->c.plan->items[i].kind == k) return (int)i;
    return -1;
}

static inline void fixture_close(fixture *f) {
    campaign *c = &f->c;
    for (int k = 0; k < f->n_dealers; k++) zsock_destroy(&f->dealers[k]);
    for (size_t i = 0; i < c->n_peers; i++) zframe_destroy(&c->peers[i].routing);
    zsock_destroy(&c->router);
    vb_campaign_free_state(c);
    if (c->console.out) fclose(c->console.out);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    if (strncmp(f->dir, "/tmp/vbench-unit.", 17) == 0 && system(cmd) != 0) printf("# could not remove %s\n", f->dir);
}

#endif
