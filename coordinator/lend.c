/* A capacity item on several client agents (docs/design.md §8 "A capacity window on several client agents"): items
 * run one at a time, so the other client agents are idle during a capacity item and are lent to it as helpers. The
 * item's own agent (the leader) runs the search; for each window it sends a ShareRequest that is relayed here to each
 * helper, and each helper's ShareReport is relayed back to the leader. A helper is BUSY on the item with lend_to set
 * (the agent table's LENT fact): its Done or Failed ends its share session, never the item, and losing it does not
 * interrupt the item (the leader's window waits for its share and fails naming it). When the item is no longer
 * running its attempt, each helper is told to end its session (ShareRequest.release). */
#include <string.h>

#include "coordinator/campaign_int.h"

const peer *vb_campaign_lend_leader(campaign *c, int i) {
    for (size_t k = 0; k < c->n_peers; k++)
        if (c->peers[k].state == VB_AGENT_BUSY && c->peers[k].item == i && !c->peers[k].lend_to) return &c->peers[k];
    return NULL;
}

size_t vb_campaign_lend_helpers(campaign *c, int i, const peer *leader, const char **ids, size_t cap) {
    size_t n = 0;
    for (size_t k = 0; k < c->n_peers && n < cap; k++)
        if (c->peers[k].lend_to == i + 1 && &c->peers[k] != leader) ids[n++] = c->peers[k].id;
    return n;
}

int vb_campaign_lend_index(campaign *c, const peer *p) {
    int n = 0;
    for (size_t k = 0; k < c->n_peers; k++) {
        if (c->peers[k].lend_to != p->lend_to) continue;
        n++;
        if (&c->peers[k] == p) return n;
    }
    return 0;
}

int vb_campaign_lend_pick(campaign *c, int i, const peer *leader) {
    const vb_plan_item *it = &c->plan->items[i];
    if (it->kind != VB_PHASE_CAPACITY) return 0;
    long want = it->p.client_agents;   /* 0: every idle client agent */
    if (want == 1) return 0;
    int idle = 0;
    for (size_t k = 0; k < c->n_peers; k++) {
        const peer *q = &c->peers[k];
        if (q != leader && q->state == VB_AGENT_IDLE && strstr(q->roles, "client")) idle++;
    }
    if (want > 1 && idle < want - 1) {
        /* said when the wait starts, then once a minute: the item waits as an item waits for an agent of its role */
        uint64_t now = vb_now_ns();
        if (!c->lend_said_ns || now - c->lend_said_ns >= 60000000000ull) {
            c->lend_said_ns = now;
            vb_console_say(&c->console, "%s waits for %ld client agents (capacity's client_agents): %d idle besides "
                           "its own", it->key, want, idle);
        }
        return -1;
    }
    c->lend_said_ns = 0;
    int n = 0;
    for (size_t k = 0; k < c->n_peers && n < VB_LEND_MAX && (want == 0 || n < want - 1); k++) {
        peer *q = &c->peers[k];
        if (q != leader && q->state == VB_AGENT_IDLE && strstr(q->roles, "client")) q->lend_to = i + 1, n++;
    }
    return n;
}

peer *vb_campaign_lend_next(campaign *c, int i) {
    for (size_t k = 0; k < c->n_peers; k++) {
        peer *q = &c->peers[k];
        if (q->lend_to != i + 1 || q->state != VB_AGENT_IDLE) continue;
        if (c->running == i) return q;
        q->lend_to = 0;   /* the leader's Assign did not go out (the item failed at its start) */
    }
    return NULL;
}

void vb_campaign_relay_share(campaign *c, peer *from, const Vbench__Envelope *env) {
    if (env->body_case == VBENCH__ENVELOPE__BODY_SHARE_REQUEST && !from->lend_to) {
        for (size_t k = 0; k < c->n_peers; k++) {
            peer *q = &c->peers[k];
            if (q->state == VB_AGENT_BUSY && q->lend_to == from->item + 1 && !q->released)
                vb_campaign_send_to(c, q, (Vbench__Envelope *)env);
        }
    } else if (env->body_case == VBENCH__ENVELOPE__BODY_SHARE_REPORT && from->lend_to) {
        const peer *l = vb_campaign_lend_leader(c, from->item);
        if (l) vb_campaign_send_to(c, (peer *)l, (Vbench__Envelope *)env);
    }
}

void vb_campaign_lend_release(campaign *c) {
    for (size_t k = 0; k < c->n_peers; k++) {
        peer *q = &c->peers[k];
        if (q->state != VB_AGENT_BUSY || !q->lend_to || q->released) continue;
        int i = q->lend_to - 1;
        if (c->running == i && c->runs[i].attempt == q->lent_attempt && c->runs[i].live) continue;
        Vbench__ShareRequest r = VBENCH__SHARE_REQUEST__INIT;
        r.item_key = (char *)c->plan->items[i].key;
        r.attempt = q->lent_attempt;
        r.release = 1;
        Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
        env.body_case = VBENCH__ENVELOPE__BODY_SHARE_REQUEST;
        env.share_request = &r;
        vb_campaign_send_to(c, q, &env);
        q->released = 1;
    }
}
