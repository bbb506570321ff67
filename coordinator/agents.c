/* Agent sessions: the facts and actions of the agent machine (the table in coordinator/agent_fsm.c) for
 * hello/welcome, assignments, aborts and the messages an agent sends; the drain of the events the services posted
 * (coordinator/agent_queue.h); and the check that a message's sender is the agent its key belongs to (under CURVE).
 * The agents' records and the messages out are coordinator/peers.c's. This file calls the services (intake,
 * limits, plan_state, servers, local_agents); none of them calls back into it. */
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator/campaign_int.h"
#include "store/capacity.h"
#include "util/pidns.h"
#include "util/versions.h"

/* Sends item i's Assign, for its current attempt, to p. first: the attempt starts now (a churn reinsert
 * restarts or continues from its checkpoint, said once); otherwise the same Assign again, to an agent whose
 * hello shows it never got it (the agent ignores a copy of what it already runs). */
static void send_assign(campaign *c, peer *p, int i, int first) {
    const vb_plan_item *it = &c->plan->items[i];
    const vb_profile_engine *e = &c->profile->engines[it->engine];
    const vb_profile_dataset *d = &c->profile->datasets[it->dataset];
    vb_error err;
    /* Churn continues from its committed checkpoint (or, with on_resume: restart, from the beginning). */
    vb_point point = it->p;
    if (it->kind == VB_PHASE_CHURN) {
        long rows = -1;
        if (vb_store_churn_checkpoint(c->store, it->key, &rows, &err)) vb_console_say(&c->console, "vbench: %s", err.message);
        if (rows >= 0 && it->p.on_resume == VB_RESUME_RESTART) {
            if (first) vb_store_churn_reset(c->store, it->key, NULL);
            point.churn_start = VB_CHURN_RESTART;
        } else if (rows >= 0) {
            point.churn_start = VB_CHURN_CONTINUE;
            point.resume_rows = rows;
            if (first)
                vb_console_say(&c->console, "%s: continuing the reinsert from its checkpoint, %ld rows already in", it->key, rows);
        }
    }
    /* A build continues its load from the committed checkpoint, where the agent finds the engine and the server's
     * table allow it (agent/phase_build.c load_resume); a checkpoint of other load connections is not this plan's. */
    if (it->kind == VB_PHASE_BUILD) {
        vb_load_checkpoint ck;
        if (vb_store_load_checkpoint(c->store, it->key, &ck, &err)) vb_console_say(&c->console, "vbench: %s", err.message);
        else if (ck.rows > 0 && ck.connections == it->p.load_connections) {
            point.load_resume_rows = ck.slice_rows;
            point.load_resume_s = ck.load_s;
            point.load_resume_attempts = ck.attempts;
            if (first)
                vb_console_say(&c->console, "%s: continuing the load from its checkpoint, %ld rows already in (%.1f s of "
                               "load in %ld attempt%s)", it->key, ck.rows, ck.load_s, ck.attempts, ck.attempts == 1 ? "" : "s");
        }
    }
    vb_campaign_server_cold(c, i, first, &point);   /* cold_start: the facts of its cold start */
    /* capacity with ef_search auto: the operating point from the committed recall sweep of the same configuration */
    if (it->kind == VB_PHASE_CAPACITY && it->p.op_source == VB_OP_PROBE) {
        vb_capacity_op op;
        if (vb_store_capacity_op(c->store, e->name, d->name, it->p.recall_target, &op, &err))
            vb_console_say(&c->console, "vbench: %s", err.message);
        else if (op.points && op.ef_search) {
            point.op_source = VB_OP_SWEEP, point.ef_search = op.ef_search, point.op_recall = op.recall;
            if (first)
                vb_console_say(&c->console, "%s: operating point from the recall sweep: ef_search %ld, recall %.4f >= %g",
                               it->key, op.ef_search, op.recall, it->p.recall_target);
        } else if (op.points) {
            point.op_source = VB_OP_UNREACHABLE, point.op_recall = op.best_recall, point.op_best_ef = op.best_ef;
        }
    }
    Vbench__Assign a = VBENCH__ASSIGN__INIT;
    a.item_key = (char *)it->key;
    a.attempt = c->runs[i].attempt;
    /* the same order (proto/vbench.proto Phase), but mixed's number, 900 */
    a.phase = it->kind == VB_PHASE_MIXED ? VBENCH__PHASE__PHASE_MIXED : (Vbench__Phase)it->kind;
    a.engine = e->adapter;
    a.config = e->name;
    /* The adapter gets the profile's engine parameters without the general keys (recipe, optional), and the
     * parameters of its server (socket, password, ...) from the orchestrator, which win. */
    const server *sv = &c->servers[vb_campaign_server_of(c, (int)it->engine)];
    vb_kv eparams[128];
    size_t n_ep = 0;
    for (size_t j = 0; j < e->n_params && n_ep < 96; j++) {
        if (vb_profile_engine_param_is_general(e->params[j].key) ||
            vb_kv_get(sv->connect, sv->n_connect, e->params[j].key, NULL))
            continue;
        eparams[n_ep++] = e->params[j];
    }
    for (size_t j = 0; j < sv->n_connect && n_ep < 128; j++) eparams[n_ep++] = sv->connect[j];
    /* a configuration of several gets its own table in the server (one index each) */
    char table[64];
    if (vb_profile_config_table(c->profile, it->engine, table, sizeof table) && n_ep < 128)
        eparams[n_ep++] = (vb_kv){.key = "table", .value = table};
    a.n_engine_params = n_ep;
    a.engine_params = vb_wire_kv_make(eparams, n_ep);
    a.dataset = d->name;
    a.n_dataset_params = d->n_params;
    a.dataset_params = vb_wire_kv_make(d->params, d->n_params);
    Vbench__Point wp;
    vb_wire_point_make(&point, &wp);
    a.point = &wp;
    a.k = (uint32_t)c->profile->k;
    /* no driver call outlasts the phase (docs/reliability.md) */
    a.io_timeout_s = (uint32_t)c->profile->limits.phase_timeout_s;
    /* capacity on several client agents: the leader names its helpers, a helper its leader and its share */
    char *helpers[VB_LEND_MAX];
    if (it->kind == VB_PHASE_CAPACITY && p->lend_to) {
        const peer *l = vb_campaign_lend_leader(c, i);
        a.helper_of = l ? (char *)l->id : "";
        a.share_index = (uint32_t)vb_campaign_lend_index(c, p);
    } else if (it->kind == VB_PHASE_CAPACITY) {
        a.n_helpers = vb_campaign_lend_helpers(c, i, p, (const char **)helpers, VB_LEND_MAX);
        a.helpers = helpers;
    }
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_ASSIGN;
    env.assign = &a;
    vb_campaign_send_to(c, p, &env);
    vb_wire_kv_free(a.engine_params, a.n_engine_params);
    vb_wire_kv_free(a.dataset_params, a.n_dataset_params);
}

static int assign(campaign *c, peer *p, int i) {
    const vb_plan_item *it = &c->plan->items[i];
    vb_error err;
    /* Every start counts, resumes included (a coordinator killed during a long load starts it again each time):
     * an item started limits.max_attempts times fails with the count instead of starting once more. */
    unsigned used = c->runs[i].attempt - c->runs[i].base;
    if (used >= c->profile->limits.max_attempts) {
        char msg[300];
        snprintf(msg, sizeof msg, "started %u times (every start counts, resumes included); limits.max_attempts = %u "
                 "is used up (raise it, or `vbench resume --retry-failed` for a new budget)", used,
                 c->profile->limits.max_attempts);
        vb_campaign_fail_item(c, i, "attempts", msg);
        return VB_ERROR;
    }
    int rc = vb_store_item_start(c->store, it->key, p->id, &err);
    if (rc != VB_STORE_OK) {
        /* RETRY: the store is failing (vb_store_failure): the main loop stops at its next turn, nothing is sent.
         * POISON: this item's row cannot be written: it fails, with the reason. */
        if (rc == VB_STORE_POISON) vb_campaign_fail_item(c, i, "results", err.message);
        return rc;
    }
    vb_campaign_item_limit_reset(c, i);
    c->runs[i].attempt++;   /* as vb_store_item_start counted it */
    c->runs[i].live = 1;
    c->runs[i].started_wall = vb_wall_time();
    if (c->runs[i].attempt > 1)
        vb_store_event(c->store, VB_EVENT_ITEM_ATTEMPT, "info", it->key, "coordinator", "attempt %u on agent %s",
                       c->runs[i].attempt, p->id);
    send_assign(c, p, i, 1);
    c->items[i] = ITEM_RUNNING;
    c->running = i;
    p->item = i;
    p->item_started_ns = vb_now_ns();
    vb_console_item(&c->console, it->seq, c->plan->n_items, it->key);
    return VB_OK;
}

/* ---- the agent state machine ------------------------------------------------------------------------------ */

/* The item a message names (its plan index, -1 when none or not in the plan), its key and attempt. */
static int message_item(campaign *c, const Vbench__Envelope *env, const char **key, unsigned *attempt) {
    *key = "";
    *attempt = 0;
    if (!env) return -1;
    switch (env->body_case) {
    case VBENCH__ENVELOPE__BODY_HELLO: *key = env->hello->item_key, *attempt = env->hello->item_attempt; break;
    case VBENCH__ENVELOPE__BODY_RESULT: *key = env->result->item_key, *attempt = env->result->attempt; break;
    case VBENCH__ENVELOPE__BODY_DONE: *key = env->done->item_key, *attempt = env->done->attempt; break;
    case VBENCH__ENVELOPE__BODY_FAILED: *key = env->failed->item_key, *attempt = env->failed->attempt; break;
    case VBENCH__ENVELOPE__BODY_PROGRESS: *key = env->progress->item_key; break;
    case VBENCH__ENVELOPE__BODY_SHARE_REQUEST:
        *key = env->share_request->item_key, *attempt = env->share_request->attempt;
        break;
    case VBENCH__ENVELOPE__BODY_SHARE_REPORT:
        *key = env->share_report->item_key, *attempt = env->share_report->attempt;
        break;
    default: break;
    }
    return (*key)[0] ? vb_campaign_item_index(c, *key) : -1;
}

/* The facts of the agent table for ev, as they are before anything changes (see VB_AGENT_F_* for each). */
static unsigned agent_facts(campaign *c, const agent_ev *ev) {
    const peer *p = ev->p;
    const char *key;
    unsigned att, f = 0;
    int y = message_item(c, ev->env, &key, &att);
    if (ev->kind == VB_AGENT_EV_HELLO) {
        const Vbench__Hello *h = ev->env->hello;
        int same_process = p && h->instance && p->instance == h->instance;
        if (h->protocol != VB_PROTOCOL_VERSION) f |= VB_AGENT_F_BAD_PROTOCOL;
        /* an older hello, overtaken on another connection */
        if (same_process && h->seq && h->seq <= p->hello_seq) f |= VB_AGENT_F_OLD_HELLO;
        if (!same_process) f |= VB_AGENT_F_NEW_PROCESS;
        if (key[0]) f |= VB_AGENT_F_NAMES_ITEM;
        if (h->item_finished) f |= VB_AGENT_F_FINISHED;
        if (p && p->state == VB_AGENT_BUSY && p->item >= 0 && c->items[p->item] == ITEM_RUNNING)
            f |= VB_AGENT_F_ITEM_RUNNING;
        if (y >= 0 && vb_campaign_attempt_current(c, y, att) && c->items[y] == ITEM_RUNNING && c->running == y)
            f |= VB_AGENT_F_RUNNING_ATTEMPT;
        /* a helper lent to a capacity item (coordinator/lend.c) never takes it over: the item is its leader's */
        if (y >= 0 && y == c->orphan && att == c->runs[y].attempt && c->items[y] == ITEM_PENDING && c->running < 0 &&
            !vb_campaign_engine_recipe(c, (int)c->plan->items[y].engine) && !h->item_helper)
            f |= VB_AGENT_F_ORPHAN;
    }
    if (ev->kind == VB_AGENT_EV_HELLO && p && p->state == VB_AGENT_LOST && p->stuck_key[0] && key[0] &&
        strcmp(key, p->stuck_key) == 0 && att == p->stuck_attempt && !ev->env->hello->item_finished)
        f |= VB_AGENT_F_STUCK_ON_IT;
    if (p && p->state == VB_AGENT_BUSY && y >= 0 && y == p->item && att == c->runs[y].attempt)
        f |= VB_AGENT_F_ITS_ATTEMPT;
    if (p && p->state == VB_AGENT_DRAINING && strcmp(key, p->drain_key) == 0 && att == p->drain_attempt)
        f |= VB_AGENT_F_ITS_ATTEMPT;
    if (ev->kind == VB_AGENT_EV_PROGRESS && p && c->running >= 0 && y == c->running && p->item == c->running)
        f |= VB_AGENT_F_ON_RUNNING;
    if (ev->kind == VB_AGENT_EV_SHARE && p && c->running >= 0 && y == c->running && p->item == c->running &&
        vb_campaign_attempt_current(c, y, att))
        f |= VB_AGENT_F_ON_RUNNING;
    if (p && p->state == VB_AGENT_BUSY && p->lend_to) f |= VB_AGENT_F_LENT;
    if (vb_campaign_attempt_current(c, y, att)) f |= VB_AGENT_F_CURRENT;
    return f;
}

/* A hello accepted (RECORD_HELLO): the record, made if the agent is new, takes the hello's facts. */
static peer *record_hello(campaign *c, agent_ev *ev) {
    const Vbench__Hello *h = ev->env->hello;
    peer *p = ev->p;
    if (!p && !(p = vb_campaign_peer_add(c, ev->id))) return NULL;
    zframe_destroy(&p->routing);
    p->routing = zframe_dup(ev->routing);
    p->send_failed = 0;
    p->roles[0] = '\0';
    for (size_t i = 0; i < h->n_roles; i++)
        snprintf(p->roles + strlen(p->roles), sizeof p->roles - strlen(p->roles), "%s%s", i ? "," : "", h->roles[i]);
    p->cores = (int)h->cores;
    p->memory_bytes = h->memory_bytes;
    snprintf(p->host, sizeof p->host, "%s", h->host ? h->host : "");
    p->last_heard_ns = vb_now_ns();
    p->instance = h->instance;
    p->hello_seq = h->seq;
    p->stuck_key[0] = '\0';   /* welcomed again: no longer in the call it was stuck in */
    return p;
}

/* The orphan's agent still runs (or finished) its attempt after we restarted (TAKE_OVER_ORPHAN): taken over. */
static void take_over_orphan(campaign *c, peer *p, const Vbench__Hello *h, int y) {
    unsigned att = h->item_attempt;
    c->items[y] = ITEM_RUNNING;
    c->running = y;
    vb_console_item(&c->console, c->plan->items[y].seq, c->plan->n_items, c->plan->items[y].key);
    c->runs[y].started_wall = vb_wall_time();
    vb_campaign_item_limit_reset(c, y);
    p->item = y;
    p->item_started_ns = vb_now_ns();
    vb_store_item_adopt(c->store, h->item_key, p->id, NULL);
    vb_store_event(c->store, VB_EVENT_ITEM_TAKEN_OVER, "info", h->item_key, "coordinator",
                   "agent %s still %s attempt %u after the coordinator restarted: taken over, not run again", p->id,
                   h->item_finished ? "has the results of" : "runs", att);
    vb_console_say(&c->console, "%s: agent %s %s attempt %u: taken over", h->item_key, p->id,
        h->item_finished ? "has the results of" : "still runs", att);
    c->orphan = -1;
}

/* It runs an attempt that is no longer current (ABORT_STALE): stop it, and give the agent nothing until it has. */
static void abort_stale(campaign *c, peer *p, const Vbench__Hello *h, int y) {
    Vbench__Abort ab = VBENCH__ABORT__INIT;
    ab.item_key = h->item_key;
    ab.reason = VBENCH__ABORT_REASON__ABORT_NOT_CURRENT;
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_ABORT;
    env.abort = &ab;
    vb_campaign_send_to(c, p, &env);
    snprintf(p->drain_key, sizeof p->drain_key, "%s", h->item_key);
    p->drain_attempt = h->item_attempt;
    p->abort_sent_ns = vb_now_ns();
    snprintf(p->abort_why, sizeof p->abort_why, "its attempt is no longer current");
    vb_store_event(c->store, VB_EVENT_STALE_ABORTED, "warn", h->item_key, "coordinator",
                   "agent %s runs attempt %u, which is no longer current (the item's attempt is %u): told to stop it",
                   p->id, h->item_attempt, y >= 0 ? c->runs[y].attempt : 0);
}

/* The hello is answered (WELCOME): the agent is seen, the event says what the hello meant (the row's note). */
/* The agent's PID for the events: as util/pidns.h says it when the agent runs on this host (its namespace's number
 * and this one's), with its namespace when on another. */
static void agent_pid_text(const Vbench__Hello *h, char *buf, size_t len) {
    char here[256] = "";
    gethostname(here, sizeof here - 1);
    const char *ns = h->pid_ns ? h->pid_ns : "";
    if (strcmp(here, h->host ? h->host : "") == 0) vb_pidns_text((long)h->pid, ns, buf, len);
    else if (ns[0] && !vb_pidns_is_init(ns))
        snprintf(buf, len, "PID %llu of PID namespace %s on its host", (unsigned long long)h->pid, ns);
    else snprintf(buf, len, "PID %llu", (unsigned long long)h->pid);
}

static void welcome(campaign *c, peer *p, const Vbench__Hello *h, vb_agent_state was, const char *now) {
    vb_store_agent_seen(c->store, h, NULL);
    char pid[300];
    agent_pid_text(h, pid, sizeof pid);
    if (was == VB_AGENT_NEW)
        vb_store_event(c->store, VB_EVENT_AGENT_JOINED, "info", NULL, "coordinator",
                       "agent %s (%s, %s, roles %s) joined%s%s; outbox %u",
                       p->id, h->host, pid, p->roles, strcmp(now, "idle") ? ": " : "",
                       strcmp(now, "idle") ? now : "", h->outbox);
    else
        vb_store_event(c->store, VB_EVENT_AGENT_BACK, was == VB_AGENT_LOST ? "warn" : "info", NULL, "coordinator",
                       "agent %s (%s, %s) said hello again (was %s): %s; outbox %u", p->id, h->host, pid,
                       vb_agent_fsm_state_name(was), now, h->outbox);
    if (was != VB_AGENT_NEW) vb_console_say(&c->console, "agent %s is back (was %s): %s", p->id, vb_agent_fsm_state_name(was), now);
    Vbench__Welcome w = VBENCH__WELCOME__INIT;
    w.campaign = c->profile->name;
    w.heartbeat_ms = HEARTBEAT_MS;
    w.silent_ms = (uint32_t)(c->profile->limits.agent_silent_ns / 1000000ull);
    Vbench__Envelope out = VBENCH__ENVELOPE__INIT;
    out.body_case = VBENCH__ENVELOPE__BODY_WELCOME;
    out.welcome = &w;
    vb_campaign_send_to(c, p, &out);
}

/* REPORT_STUCK: the agent did not answer an Abort within limits.abort_unanswered_s: it is stuck in a call (a
 * driver waiting on a hung server). An event names the agent, the item and the wait; our own local agent is
 * killed now (and started again by local_agents.c), a remote one stays lost while its hellos name that attempt. */
static void report_stuck(campaign *c, peer *p, vb_agent_state was) {
    const char *key = was == VB_AGENT_DRAINING ? p->drain_key : p->item >= 0 ? c->plan->items[p->item].key : "";
    unsigned att = was == VB_AGENT_DRAINING ? p->drain_attempt : p->item >= 0 ? c->runs[p->item].attempt : 0;
    double waited = p->abort_sent_ns ? (double)(vb_now_ns() - p->abort_sent_ns) / 1e9 : 0;
    snprintf(p->stuck_key, sizeof p->stuck_key, "%s", key);
    p->stuck_attempt = att;
    pid_t pid = vb_campaign_kill_local_agent(c, p->id);
    char what[200];
    if (pid > 0) snprintf(what, sizeof what, "the local agent (pid %d) is killed (SIGKILL) and started again", (int)pid);
    else snprintf(what, sizeof what, "marked lost: it gets nothing until it comes back without that attempt");
    vb_store_event(c->store, VB_EVENT_AGENT_STUCK, "error", key[0] ? key : NULL, "coordinator",
                   "agent %s did not answer the Abort of %s (attempt %u; %s) within limits.abort_unanswered_s = %.0f s "
                   "(waited %.1f s): stuck in a call; %s", p->id, key, att, p->abort_why,
                   c->profile->limits.abort_unanswered_s, waited, what);
    vb_console_say(&c->console, "agent %s is stuck in %s (no answer to the Abort for %.0f s): %s", p->id, key, waited,
                   what);
    p->abort_sent_ns = 0;
}

/* One action of an agent row. VB_ERROR stops the row: the state stays as it was (an Assign the store refused). */
static int agent_do(campaign *c, agent_ev *ev, const vb_agent_row *row, vb_agent_state was, vb_agent_action a) {
    peer *p = ev->p;
    const Vbench__Envelope *env = ev->env;
    const Vbench__Hello *h = env && env->body_case == VBENCH__ENVELOPE__BODY_HELLO ? env->hello : NULL;
    const char *key;
    unsigned att;
    int y = message_item(c, env, &key, &att);
    uint64_t now = vb_now_ns();
    switch (a) {
    case VB_AGENT_ACT_NONE:
    case VB_AGENT_ACT_IGNORE:
    case VB_AGENT_N_ACTIONS: break;
    case VB_AGENT_ACT_REFUSE:
        vb_store_event(c->store, VB_EVENT_UNEXPECTED, "error", NULL, "coordinator",
                       "agent %s: %s while %s is not expected (%s)",
                       p ? p->id : ev->id, vb_agent_fsm_event_name(ev->kind), vb_agent_fsm_state_name(was), row->note);
        break;
    case VB_AGENT_ACT_REJECT_HELLO: {
        /* Told, not ignored: the agent prints the Bye and exits instead of saying Hello forever (an agent of
         * protocol 3 reads Bye.reason too, field 1 in both). */
        char why[600];
        snprintf(why, sizeof why, "agent %s speaks protocol %u, this coordinator (vbench %s) protocol %d: install the "
                 "same vbench version on the agent's host (%s) and start the agent again", ev->id, h->protocol,
                 vb_git_revision(), VB_PROTOCOL_VERSION, h->host);
        vb_store_event(c->store, VB_EVENT_PROTOCOL_REFUSED, "error", NULL, "coordinator", "%s: refused", why);
        vb_console_say(&c->console, "refused agent %s: %s", ev->id, why);
        vb_campaign_send_bye_to(c, ev->routing, VBENCH__BYE_CODE__BYE_PROTOCOL, why);
        break;
    }
    case VB_AGENT_ACT_RECORD_HELLO:
        if (!(ev->p = record_hello(c, ev))) return VB_ERROR;   /* out of memory: not welcomed */
        break;
    case VB_AGENT_ACT_INTERRUPT_ITEM: vb_campaign_interrupt_item(c, p->item, ev->why, 1); break;
    case VB_AGENT_ACT_REQUEUE_ITEM: {
        char why[700];
        snprintf(why, sizeof why, "agent %s was still running %s when it was assigned", p->id, key);
        vb_campaign_interrupt_item(c, p->item, why, 0);
        break;
    }
    case VB_AGENT_ACT_RESEND_ASSIGN:
        send_assign(c, p, p->item, 0);
        vb_store_event(c->store, VB_EVENT_ASSIGN_RESENT, "info", c->plan->items[p->item].key, "coordinator",
                       "agent %s had not received attempt %u: its Assign sent again", p->id, c->runs[p->item].attempt);
        break;
    case VB_AGENT_ACT_REJOIN_ITEM: p->item = y; break;
    case VB_AGENT_ACT_TAKE_OVER_ORPHAN: take_over_orphan(c, p, h, y); break;
    case VB_AGENT_ACT_ABORT_STALE: abort_stale(c, p, h, y); break;
    case VB_AGENT_ACT_FORGET_ORPHAN:
        /* The orphan's agent came back without it: that attempt is gone with the agent's previous process. */
        if (c->orphan >= 0 && strcmp(c->orphan_agent, p->id) == 0)
            vb_campaign_orphan_gone(c, "its agent came back without it");
        break;
    case VB_AGENT_ACT_WELCOME: welcome(c, p, h, was, row->note); break;
    case VB_AGENT_ACT_TOUCH: p->last_heard_ns = now; break;
    case VB_AGENT_ACT_NOTE_HEARD:
        if (p->last_heard_ns + c->profile->limits.agent_silent_ns < now)
            vb_store_event(c->store, VB_EVENT_AGENT_HEARD, "info", NULL, "coordinator",
                           "agent %s (lost) is heard again: asked to say hello",
                           p->id);
        p->last_heard_ns = now;
        break;
    case VB_AGENT_ACT_ASK_HELLO: vb_campaign_send_hello_again(c, ev->routing); break;
    case VB_AGENT_ACT_NOTE_PROGRESS: vb_campaign_note_progress(c, env->progress); break;
    case VB_AGENT_ACT_RECORD_LOG:
        vb_store_event(c->store, VB_EVENT_AGENT_LOG, vb_wire_log_level_name(env->log->level),
                       env->log->item_key[0] ? env->log->item_key : NULL, p->id, "%s", env->log->message);
        vb_console_say(&c->console, "%s: %s", p->id, env->log->message);
        break;
    case VB_AGENT_ACT_RECORD_RESULT: vb_campaign_record_result(c, p, env->result); break;
    case VB_AGENT_ACT_ACK_ONLY: vb_campaign_result_not_recorded(c, p, env->result); break;
    case VB_AGENT_ACT_SERVER_REPORT: vb_campaign_on_server_report(c, p, env->server_report); break;
    case VB_AGENT_ACT_FINISH_ITEM:
    case VB_AGENT_ACT_FAIL_ITEM:
    case VB_AGENT_ACT_END_STALE: vb_campaign_on_item_end(c, p, env, a); break;
    case VB_AGENT_ACT_WARN_UNEXPECTED:
        vb_store_event(c->store, VB_EVENT_UNEXPECTED, "warn", NULL, "coordinator", "unexpected %s from agent %s",
                       vb_wire_body_name(env),
                       p->id);
        break;
    case VB_AGENT_ACT_ASSIGN: return assign(c, p, ev->item);
    case VB_AGENT_ACT_LEND:
        p->item = ev->item;
        p->lend_to = ev->item + 1;
        p->lent_attempt = c->runs[ev->item].attempt;
        p->released = 0;
        p->item_started_ns = now;
        send_assign(c, p, ev->item, 0);
        break;
    case VB_AGENT_ACT_RELAY_SHARE: vb_campaign_relay_share(c, p, env); break;
    case VB_AGENT_ACT_END_LENT: {
        const Vbench__Failed *f = env->body_case == VBENCH__ENVELOPE__BODY_FAILED ? env->failed : NULL;
        if (f)
            vb_store_event(c->store, VB_EVENT_AGENT_LOG, "warn", key, p->id, "its share of the capacity item failed: %s",
                           f->message);
        const char *ack_key = f ? f->key : env->done->key;
        if (ack_key && ack_key[0] && !vb_store_failure(c->store)) vb_campaign_send_ack(c, p, ack_key, att);
        break;
    }
    case VB_AGENT_ACT_SEND_ABORT:
        vb_campaign_send_simple(c, p, VBENCH__ENVELOPE__BODY_ABORT, ev->reason, c->plan->items[ev->item].key, ev->why);
        /* The bound runs from the first Abort of the attempt. Not the reinsert's limit: the agent stops the reinsert
         * and goes on measuring the item (maintain, after), and that Abort has its own bound (LIMIT_UNANSWERED,
         * cleared by the agent's next stage). */
        if (!p->abort_sent_ns && ev->reason != VBENCH__ABORT_REASON__ABORT_LIMIT) {
            p->abort_sent_ns = now;
            snprintf(p->abort_why, sizeof p->abort_why, "%s", ev->why ? ev->why : "told to stop");
        }
        break;
    case VB_AGENT_ACT_REPORT_STUCK: report_stuck(c, p, was); break;
    case VB_AGENT_ACT_REPORT_SILENT:
        vb_store_event(c->store, VB_EVENT_AGENT_LOST, "error", NULL, "coordinator",
                       "agent %s silent for %.1f s (limits.agent_silent_s = %.0f): marked lost (was %s)", p->id,
                       (double)(now - p->last_heard_ns) / 1e9, c->profile->limits.agent_silent_s,
                       vb_agent_fsm_state_name(was));
        vb_console_say(&c->console, "agent %s silent for %.1f s: marked lost", p->id, (double)(now - p->last_heard_ns) / 1e9);
        break;
    case VB_AGENT_ACT_EXPIRE_ITEM: {
        char msg[160];
        snprintf(msg, sizeof msg, "the agent did not stop within limits.abort_unanswered_s = %.0f s of the limit",
                 c->profile->limits.abort_unanswered_s);
        vb_campaign_expire_item(c, p->item, msg);
        break;
    }
    case VB_AGENT_ACT_SEND_BYE:
        vb_campaign_send_simple(c, p, VBENCH__ENVELOPE__BODY_BYE, VBENCH__BYE_CODE__BYE_CAMPAIGN_OVER, NULL,
                                "campaign over");
        break;
    }
    return VB_OK;
}

/* Drives an agent's machine: the table's row for the event (coordinator/agent_fsm.c), its actions in order, its
 * next state. An agent's item is kept only while BUSY, its drain key only while DRAINING. */
void vb_campaign_agent_fire(campaign *c, agent_ev *ev) {
    vb_agent_state was = ev->p ? ev->p->state : VB_AGENT_NEW;
    const vb_agent_row *row = vb_agent_fsm_step(was, ev->kind, agent_facts(c, ev));
    for (int k = 0; k < VB_AGENT_FSM_MAX_ACTIONS && row->actions[k] != VB_AGENT_ACT_NONE; k++)
        if (agent_do(c, ev, row, was, row->actions[k]) != VB_OK) return;
    peer *p = ev->p;
    if (!p) return;
    if (row->next != p->state || (row->next == VB_AGENT_BUSY && ev->kind == VB_AGENT_EV_HELLO)) p->abort_sent_ns = 0;
    p->state = row->next;
    if (p->state != VB_AGENT_BUSY) p->item = -1, p->lend_to = 0, p->released = 0;
    if (p->state != VB_AGENT_DRAINING) p->drain_key[0] = '\0';
}

/* Fires the events the services posted (coordinator/agent_queue.h), oldest first, each into its agent's machine;
 * what an action posts meanwhile (a server report whose death stops an item) is fired in the same drain. An event
 * for an agent that has no record (none is posted for one) is dropped. */
void vb_campaign_agent_drain(campaign *c) {
    vb_agent_post e;
    while (vb_agent_queue_take(&c->agent_events, &e)) {
        peer *p = vb_campaign_find_peer(c, e.agent);
        if (!p) continue;
        vb_campaign_agent_fire(c, &(agent_ev){.kind = e.kind, .p = p, .id = p->id, .item = e.item,
                                              .reason = e.reason, .why = e.has_why ? e.why : NULL});
    }
}

/* Handles one message from an agent: its body is the event of the agent's machine. */
void vb_campaign_agent_on(campaign *c, zframe_t *routing, Vbench__Envelope *env) {
    static const struct { Vbench__Envelope__BodyCase body; vb_agent_event kind; } kinds[] = {
        {VBENCH__ENVELOPE__BODY_HELLO, VB_AGENT_EV_HELLO},
        {VBENCH__ENVELOPE__BODY_HEARTBEAT, VB_AGENT_EV_HEARTBEAT},
        {VBENCH__ENVELOPE__BODY_PROGRESS, VB_AGENT_EV_PROGRESS},
        {VBENCH__ENVELOPE__BODY_LOG, VB_AGENT_EV_LOG},
        {VBENCH__ENVELOPE__BODY_RESULT, VB_AGENT_EV_RESULT},
        {VBENCH__ENVELOPE__BODY_SERVER_REPORT, VB_AGENT_EV_SERVER_REPORT},
        {VBENCH__ENVELOPE__BODY_DONE, VB_AGENT_EV_DONE},
        {VBENCH__ENVELOPE__BODY_FAILED, VB_AGENT_EV_FAILED},
        {VBENCH__ENVELOPE__BODY_SHARE_REQUEST, VB_AGENT_EV_SHARE},
        {VBENCH__ENVELOPE__BODY_SHARE_REPORT, VB_AGENT_EV_SHARE}};
    /* The store failed (full, I/O error): the campaign is stopping. What a Result, Done or Failed would record
     * stays in the agent's outbox, unacknowledged, for the next `vbench resume`; nothing moves an item meanwhile
     * (not even if space came back during the stop). */
    if (vb_store_failure(c->store) && (env->body_case == VBENCH__ENVELOPE__BODY_RESULT ||
                                       env->body_case == VBENCH__ENVELOPE__BODY_DONE ||
                                       env->body_case == VBENCH__ENVELOPE__BODY_FAILED))
        return;
    char *id = zframe_strdup(routing);
    agent_ev ev = {.kind = VB_AGENT_EV_OTHER, .p = vb_campaign_find_peer(c, id), .id = id, .routing = routing, .env = env,
                   .item = -1, .why = "the agent restarted during the item"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (env->body_case == kinds[i].body) ev.kind = kinds[i].kind;
    vb_campaign_agent_fire(c, &ev);
    free(id);
}

/* Under CURVE an agent's id is bound to its key: the allow-list name of the key that authenticated the connection
 * (libzmq's "User-Id" of every message) must be the id the agent speaks as (its routing id). Otherwise the holder
 * of one allowed key could speak for another agent: take its routing id, its items, its results. Such a message
 * is dropped and answered with a Bye that says why; the refusal is an event, once per id and key. A key taken off
 * the allow-list (SIGHUP) is refused the same way from its next message on. */
int vb_campaign_sender_allowed(campaign *c, zframe_t *routing, const char *key) {
    if (!c->zap) return 1;
    const char *name = vb_transport_zap_name_of(c->zap, key);
    char id[128];
    size_t n = zframe_size(routing) < sizeof id - 1 ? zframe_size(routing) : sizeof id - 1;
    memcpy(id, zframe_data(routing), n);
    id[n] = '\0';
    if (name && strcmp(name, id) == 0) return 1;
    char why[700];
    if (name)
        snprintf(why, sizeof why, "the key of agent %s cannot speak for agent %s: start it with --id %s, or give it a "
                 "key of its own (vbench keys %s) and put %s.pub into the coordinator's --allow directory", name, id,
                 name, id, id);
    else
        snprintf(why, sizeof why, "the key agent %s connected with is not on the allow-list any more", id);
    char pair[200];
    snprintf(pair, sizeof pair, "%.100s %.60s", id, key ? key : "");
    int seen = 0;
    for (unsigned i = 0; i < c->refused_total && i < 8 && !seen; i++) seen = strcmp(c->refused_senders[i], pair) == 0;
    if (!seen) {
        snprintf(c->refused_senders[c->refused_total++ % 8], sizeof c->refused_senders[0], "%s", pair);
        vb_store_event(c->store, VB_EVENT_SENDER_REFUSED, "error", NULL, "transport",
                       "refused messages of agent %s: %s", id, why);
        vb_console_say(&c->console, "refused messages of agent %s: %s", id, why);
    }
    vb_campaign_send_bye_to(c, routing, VBENCH__BYE_CODE__BYE_REFUSED_KEY, why);
    return 0;
}
