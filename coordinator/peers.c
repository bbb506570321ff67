/* The agents' records and every message sent to one. The records (campaign_int.h `peer`) are made here, found
 * here by id and role, and each message to an agent goes out through vb_campaign_send_to, which records a failed
 * send once. The agent machine (coordinator/agents.c) and the services (intake.c, servers.c) both send through
 * it; neither calls the other to reach an agent. A service that needs the agent machine to act (stop an item,
 * mark an agent lost) posts an event (vb_campaign_post, coordinator/agent_queue.h) instead of firing it. */
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator/campaign_int.h"

/* ---- records ------------------------------------------------------------------------------------------------ */

peer *vb_campaign_find_peer(campaign *c, const char *id) {
    for (size_t i = 0; i < c->n_peers; i++)
        if (strcmp(c->peers[i].id, id) == 0) return &c->peers[i];
    return NULL;
}

/* A new record for agent id, NEW, running nothing; the pointers to other records may move (realloc). NULL when
 * out of memory. */
peer *vb_campaign_peer_add(campaign *c, const char *id) {
    peer *more = realloc(c->peers, (c->n_peers + 1) * sizeof *c->peers);
    if (!more) return NULL;
    c->peers = more;
    peer *p = &c->peers[c->n_peers++];
    memset(p, 0, sizeof *p);
    snprintf(p->id, sizeof p->id, "%s", id);
    p->state = VB_AGENT_NEW;
    p->item = -1;
    return p;
}

peer *vb_campaign_idle_peer_with_role(campaign *c, const char *role) {
    for (size_t i = 0; i < c->n_peers; i++)
        if (c->peers[i].state == VB_AGENT_IDLE && strstr(c->peers[i].roles, role)) return &c->peers[i];
    return NULL;
}

peer *vb_campaign_orchestrator_peer(campaign *c, const char *prefer) {
    peer *any = NULL;
    for (size_t i = 0; i < c->n_peers; i++) {
        peer *p = &c->peers[i];
        if (p->state == VB_AGENT_LOST || !strstr(p->roles, "orchestrator")) continue;
        if (prefer && prefer[0] && strcmp(p->id, prefer) == 0) return p;
        if (!any) any = p;
    }
    return any;
}

/* ---- events for the agent machine --------------------------------------------------------------------------- */

void vb_campaign_post(campaign *c, vb_agent_event kind, const peer *p, int item, int reason, const char *why) {
    if (vb_agent_queue_post(&c->agent_events, kind, p->id, item, reason, why) != 0)
        vb_store_event(c->store, VB_EVENT_UNEXPECTED, "error", NULL, "coordinator",
                       "out of memory: the %s event of agent %s was lost", vb_agent_fsm_event_name(kind), p->id);
}

/* Tells the agents that run item i to stop it (ABORT): a server death, found by servers.c. */
void vb_campaign_post_abort_item(campaign *c, int i, int reason, const char *why) {
    for (size_t j = 0; j < c->n_peers; j++)
        if (c->peers[j].item == i) vb_campaign_post(c, VB_AGENT_EV_ABORT, &c->peers[j], i, reason, why);
}

/* ---- messages out ------------------------------------------------------------------------------------------- */

/* A failed send (the agent's connection is gone: ROUTER_MANDATORY says so) is recorded once until a send to
 * that agent works again; the heartbeat deadline decides what the silence means. */
void vb_campaign_send_to(campaign *c, peer *p, Vbench__Envelope *env) {
    vb_error err;
    if (vb_wire_send(c->router, p->routing, env, &err) != VB_OK) {
        if (!p->send_failed)
            vb_store_event(c->store, VB_EVENT_SEND_FAILED, "warn", NULL, "coordinator",
                           "sending %s to %s: %s (further failures to it are "
                           "not recorded until a send works again)", vb_wire_body_name(env), p->id, err.message);
        p->send_failed = 1;
    } else {
        p->send_failed = 0;
    }
    p->last_sent_ns = vb_now_ns();
}

void vb_campaign_send_ack(campaign *c, peer *p, const char *key, unsigned attempt) {
    Vbench__Ack ack = VBENCH__ACK__INIT;
    ack.result_key = (char *)key;
    ack.attempt = attempt;
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_ACK;
    env.ack = &ack;
    vb_campaign_send_to(c, p, &env);
}

/* An Abort (reason, item, why: its detail), a Bye (reason is its code, why its text) or a Heartbeat. */
void vb_campaign_send_simple(campaign *c, peer *p, Vbench__Envelope__BodyCase which, int reason, const char *item,
                        const char *why) {
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    Vbench__Abort ab = VBENCH__ABORT__INIT;
    Vbench__Bye bye = VBENCH__BYE__INIT;
    Vbench__Heartbeat hb = VBENCH__HEARTBEAT__INIT;
    env.body_case = which;
    if (which == VBENCH__ENVELOPE__BODY_ABORT) {
        ab.item_key = (char *)item;
        ab.reason = (Vbench__AbortReason)reason;
        ab.detail = (char *)(why ? why : "");
        env.abort = &ab;
    } else if (which == VBENCH__ENVELOPE__BODY_BYE) {
        bye.code = (Vbench__ByeCode)reason;
        bye.reason = (char *)why;
        env.bye = &bye;
    } else {
        env.heartbeat = &hb;
    }
    vb_campaign_send_to(c, p, &env);
}

/* A Bye to a sender that is not (or not yet) a peer of ours: one refused before its hello was accepted. */
void vb_campaign_send_bye_to(campaign *c, zframe_t *routing, Vbench__ByeCode code, const char *why) {
    Vbench__Bye bye = VBENCH__BYE__INIT;
    bye.code = code;
    bye.reason = (char *)why;
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_BYE;
    env.bye = &bye;
    vb_wire_send(c->router, routing, &env, NULL);
}

/* "Say hello": to the sender of a message we cannot place (we restarted, or marked it lost). */
void vb_campaign_send_hello_again(campaign *c, zframe_t *routing) {
    Vbench__Heartbeat hb = VBENCH__HEARTBEAT__INIT;
    hb.hello_again = 1;
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    vb_wire_send(c->router, routing, &env, NULL);
}

