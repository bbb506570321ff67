/* The plan's state in the coordinator: each item's state and attempts (loaded from the store at the start), what
 * runs next and what holds assignments back (the orphan of a restarted coordinator, an agent draining a stale
 * attempt), and what happens to an item that is interrupted, fails, expires at its limit or is skipped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator/campaign_int.h"

/* ---- plan bookkeeping ---------------------------------------------------------------------------------- */

const char *vb_campaign_item_engine(campaign *c, int i) { return c->profile->engines[c->plan->items[i].engine].name; }
const char *vb_campaign_item_dataset(campaign *c, int i) { return c->profile->datasets[c->plan->items[i].dataset].name; }

int vb_campaign_item_index(campaign *c, const char *key) {
    const vb_plan_item *it = vb_plan_find(c->plan, key);
    return it ? it->seq : -1;
}

/* Where each item's budget of limits.max_attempts starts, read before the store makes items pending again: an
 * item that expired at its limit (its rows committed: continuing it is progress, not a retry) and, with
 * --retry-failed, a failed or skipped one start a new budget at their attempts so far; others at 0. NULL on a
 * store error; the caller frees it. */
unsigned *vb_campaign_attempt_bases(campaign *c, int retry_failed, vb_error *err) {
    unsigned *base = calloc(c->plan->n_items ? c->plan->n_items : 1, sizeof *base);
    for (size_t i = 0; base && i < c->plan->n_items; i++) {
        char st[32], agent[128];
        int attempts;
        if (vb_store_item_info(c->store, c->plan->items[i].key, st, sizeof st, &attempts, agent, sizeof agent, err)) {
            free(base);
            return NULL;
        }
        if (strcmp(st, "expired") == 0 || (retry_failed && (strcmp(st, "failed") == 0 || strcmp(st, "skipped") == 0)))
            base[i] = attempts > 0 ? (unsigned)attempts : 0;
    }
    return base;
}

/* The item a killed coordinator left running, and its agent (see `orphan`). */
int vb_campaign_find_orphan(campaign *c, vb_error *err) {
    char key[512];
    c->orphan = -1;
    if (vb_store_item_orphan(c->store, key, sizeof key, c->orphan_agent, sizeof c->orphan_agent, err)) return VB_ERROR;
    if (key[0]) c->orphan = vb_campaign_item_index(c, key);
    return VB_OK;
}

int vb_campaign_load_item_states(campaign *c, const unsigned *retried_base, vb_error *err) {
    c->items = calloc(c->plan->n_items, sizeof *c->items);
    c->runs = calloc(c->plan->n_items, sizeof *c->runs);
    for (size_t i = 0; retried_base && i < c->plan->n_items; i++) c->runs[i].base = retried_base[i];
    for (size_t i = 0; i < c->plan->n_items; i++) {
        char st[32], agent[128];
        int attempts;
        if (vb_store_item_info(c->store, c->plan->items[i].key, st, sizeof st, &attempts, agent, sizeof agent, err))
            return VB_ERROR;
        c->runs[i].attempt = attempts > 0 ? (unsigned)attempts : 0;
        c->runs[i].live = 1;   /* a finished item still takes late copies of its results (duplicates by key) */
        if (strcmp(st, "done") == 0) c->items[i] = ITEM_DONE;
        else if (strcmp(st, "failed") == 0) c->items[i] = ITEM_FAILED;
        else if (strcmp(st, "skipped") == 0) c->items[i] = ITEM_SKIPPED;
        else if (strcmp(st, "expired") == 0) c->items[i] = ITEM_EXPIRED;
        else c->items[i] = ITEM_PENDING, c->runs[i].live = (int)i == c->orphan; /* pending, interrupted */
    }
    return VB_OK;
}

/* Whether messages of `attempt` of item i are recorded: it is the item's latest attempt, not interrupted. */
int vb_campaign_attempt_current(campaign *c, int i, unsigned attempt) {
    return i >= 0 && attempt == c->runs[i].attempt && c->runs[i].live;
}

/* The item's current attempt stopped before it finished: the item goes back to the plan and runs again from
 * its start (a churn reinsert from its checkpoint). agent_fault: its agent went silent, restarted or died; then
 * limits.on_agent_lost and limits.max_attempts decide whether it runs again or fails. Otherwise (the coordinator
 * stops) it simply waits for the next run. */
void vb_campaign_interrupt_item(campaign *c, int i, const char *why, int agent_fault) {
    if (i < 0 || c->items[i] != ITEM_RUNNING) return;
    const vb_plan_item *it = &c->plan->items[i];
    unsigned n = c->runs[i].attempt;
    c->runs[i].live = 0;
    if (c->running == i) c->running = -1, vb_console_idle(&c->console);
    if (agent_fault && (c->profile->limits.fail_on_agent_lost || n - c->runs[i].base >= c->profile->limits.max_attempts)) {
        char msg[1024];
        if (c->profile->limits.fail_on_agent_lost) snprintf(msg, sizeof msg, "attempt %u interrupted: %s (limits.on_agent_lost: fail)", n, why);
        else snprintf(msg, sizeof msg, "attempt %u interrupted: %s; that was the last of limits.max_attempts = %u", n,
                      why, c->profile->limits.max_attempts);
        vb_campaign_fail_item(c, i, "agent", msg);
        return;
    }
    c->items[i] = ITEM_PENDING;
    vb_store_item_finish(c->store, it->key, "interrupted", why, NULL);
    if (agent_fault)
        vb_store_event(c->store, VB_EVENT_ITEM_INTERRUPTED, "warn", it->key, "coordinator",
                       "interrupted (attempt %u of at most %u): %s; it runs again on the next agent with role %s", n,
                       c->profile->limits.max_attempts, why, it->role);
    else
        vb_store_event(c->store, VB_EVENT_ITEM_INTERRUPTED, "warn", it->key, "coordinator",
                       "interrupted (attempt %u): %s", n, why);
    vb_console_say(&c->console, "interrupted %s (attempt %u): %s", it->key, n, why);
}

/* A failed build leaves nothing to measure: the rest of that engine/dataset pair is skipped, with the reason. */
static void skip_dependents(campaign *c, int failed_build) {
    const vb_plan_item *b = &c->plan->items[failed_build];
    for (size_t i = 0; i < c->plan->n_items; i++) {
        const vb_plan_item *it = &c->plan->items[i];
        if ((int)i == failed_build || it->engine != b->engine || it->dataset != b->dataset) continue;
        if (c->items[i] != ITEM_PENDING) continue;
        c->items[i] = ITEM_SKIPPED;
        char why[300];
        snprintf(why, sizeof why, "skipped: %s failed", b->key);
        vb_store_item_finish(c->store, it->key, "skipped", why, NULL);
    }
}

/* The reinsert reached its limit: partial results are committed; the item is continued by the next resume. */
void vb_campaign_expire_item(campaign *c, int i, const char *message) {
    c->items[i] = ITEM_EXPIRED;
    c->expired++;
    vb_store_item_finish(c->store, c->plan->items[i].key, "expired", message, NULL);
    vb_store_event(c->store, VB_EVENT_ITEM_EXPIRED, "warn", c->plan->items[i].key, "coordinator", "limit reached: %s",
                   message);
    vb_console_say(&c->console, "LIMIT %s: %s", c->plan->items[i].key, message);
    vb_notify_send(&c->notify, "limit_expired", message);
    if (c->running == i) c->running = -1, vb_console_idle(&c->console);
}

/* Writes why item i failed: its plan row, an item_failed event and the terminal line. Also for an item already
 * failed whose cause turned out to be another (a server death reported after the agent's own failure). */
void vb_campaign_record_failure(campaign *c, int i, const char *domain, const char *message) {
    char text[4200];
    snprintf(text, sizeof text, "%s error: %s", domain, message);
    vb_store_item_finish(c->store, c->plan->items[i].key, "failed", text, NULL);
    vb_store_event(c->store, VB_EVENT_ITEM_FAILED, "error", c->plan->items[i].key, "coordinator", "%s", text);
    vb_console_say(&c->console, "FAILED %s: %s", c->plan->items[i].key, text);
}

void vb_campaign_restate_failure(campaign *c, int i, const char *domain, const char *message) {
    char text[4200];
    snprintf(text, sizeof text, "%s error: %s", domain, message);
    vb_store_item_finish(c->store, c->plan->items[i].key, "failed", text, NULL);
    vb_store_event(c->store, VB_EVENT_ITEM_FAILED, "error", c->plan->items[i].key, "coordinator", "the cause: %s",
                   text);
}

void vb_campaign_fail_item(campaign *c, int i, const char *domain, const char *message) {
    if (i < 0) return;
    vb_phase_kind kind = c->plan->items[i].kind;   /* the phases with a limit of their own */
    if (strcmp(domain, "limit") == 0 && (kind == VB_PHASE_CHURN || kind == VB_PHASE_STREAMING || kind == VB_PHASE_MIXED)) {
        vb_campaign_expire_item(c, i, message);
        return;
    }
    c->items[i] = ITEM_FAILED;
    c->failures++;
    vb_campaign_record_failure(c, i, domain, message);
    if (c->plan->items[i].kind == VB_PHASE_BUILD) skip_dependents(c, i);
    if (c->running == i) c->running = -1, vb_console_idle(&c->console);
    if (c->profile->limits.stop_on_item_failure)
        c->stop_reason = "an item failed and limits.on_item_failure is stop (fix the cause, then `vbench resume "
                         "--retry-failed`)";
}

/* The orphan's attempt is gone (its agent came back without it, or did not come back in time): the item runs
 * again. Written with a reason, so that the next coordinator process does not wait for it either. */
void vb_campaign_orphan_gone(campaign *c, const char *why) {
    int i = c->orphan;
    c->orphan = -1;
    if (i < 0 || c->items[i] != ITEM_PENDING) return;
    c->runs[i].live = 0;
    char text[600];
    snprintf(text, sizeof text, "attempt %u ran when the coordinator stopped; %s", c->runs[i].attempt, why);
    vb_store_item_finish(c->store, c->plan->items[i].key, "interrupted", text, NULL);
    vb_store_event(c->store, VB_EVENT_ITEM_INTERRUPTED, "warn", c->plan->items[i].key, "coordinator",
                   "%s: the item runs again", text);
}

int vb_campaign_next_item(campaign *c) {
    for (size_t i = 0; i < c->plan->n_items; i++)
        if (c->items[i] == ITEM_PENDING) return (int)i;
    return -1;
}

/* 1 while nothing may be assigned: the orphan's agent may still run it (until it said hello, or until
 * limits.agent_silent_s after the start), or an agent is stopping a stale item. No two measurements overlap. */
int vb_campaign_hold_assignments(campaign *c) {
    if (c->orphan >= 0 && c->items[c->orphan] != ITEM_PENDING) c->orphan = -1;
    if (c->orphan >= 0 && vb_now_ns() > c->orphan_deadline_ns) {
        char why[300];
        snprintf(why, sizeof why, "its agent did not come back within limits.agent_silent_s = %.0f s",
                 c->profile->limits.agent_silent_s);
        vb_campaign_orphan_gone(c, why);
    }
    if (c->orphan >= 0) return 1;
    for (size_t i = 0; i < c->n_peers; i++)
        if (c->peers[i].state == VB_AGENT_DRAINING) return 1;
    return 0;
}

/* Says (every 60 s, terminal and events) that item i waits for an agent with its role. */
void vb_campaign_note_waiting(campaign *c, int i) {
    uint64_t now = vb_now_ns();
    if (c->waiting_said_ns == 0) c->waiting_said_ns = now;   /* quiet for the first minute */
    if (now - c->waiting_said_ns < 60000000000ull) return;
    c->waiting_said_ns = now;
    char lost[512] = "";
    for (size_t k = 0; k < c->n_peers; k++)
        if (c->peers[k].state == VB_AGENT_LOST && strstr(c->peers[k].roles, c->plan->items[i].role))
            snprintf(lost + strlen(lost), sizeof lost - strlen(lost), "%s%s", lost[0] ? ", " : "", c->peers[k].id);
    vb_store_event(c->store, VB_EVENT_ITEM_WAITING, "warn", c->plan->items[i].key, "coordinator",
                   "waiting for an agent with role %s%s%s",
                   c->plan->items[i].role, lost[0] ? " (lost: " : "", lost[0] ? lost : "");
    vb_console_say(&c->console, "%s waits for an agent with role %s%s%s%s", c->plan->items[i].key, c->plan->items[i].role,
        lost[0] ? " (lost: " : "", lost, lost[0] ? ")" : "");
}
