/* Limits the coordinator enforces while an item runs: agents silent past limits.agent_silent_s, the churn
 * reinsert's limit clock (limit_s), and the wall-clock limit of one item (limits.phase_timeout_s). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator/campaign_int.h"
#include "report/status_eta.h"

/* The churn reinsert's limit clock for item i: it starts with the first "reinsert" progress of the attempt
 * (also of an attempt taken over after a restart: the clock then starts again, the limit is per coordinator). */
void vb_campaign_item_limit_reset(campaign *c, int i) {
    const vb_plan_item *it = &c->plan->items[i];
    if (it->kind == VB_PHASE_CHURN) c->limit_s = it->p.limit_s;
    c->limit_deadline_ns = c->limit_aborted_ns = 0;
}

/* Progress of the running item from its agent (NOTE_PROGRESS): the progress line and the reinsert's clock. */
void vb_campaign_note_progress(campaign *c, const Vbench__Progress *pr) {
    if (c->plan->items[c->running].kind == VB_PHASE_CHURN && pr->churn_stage == VBENCH__CHURN_STAGE__CHURN_REINSERT &&
        c->limit_deadline_ns == 0) {
        c->limit_deadline_ns = vb_now_ns() + (uint64_t)c->limit_s * 1000000000ull;
        vb_store_event(c->store, VB_EVENT_REINSERT_STARTED, "info", pr->item_key, "coordinator",
                       "reinsert started; limit %ld s", c->limit_s);
    }
    /* The limit is the reinsert's (docs/design.md §1): once the agent moved on to maintenance and the after
     * measurement, the clock stops, so a deadline that falls just after the last row cannot abort them. */
    if (c->plan->items[c->running].kind == VB_PHASE_CHURN && pr->churn_stage == VBENCH__CHURN_STAGE__CHURN_MAINTAIN)
        c->limit_deadline_ns = c->limit_aborted_ns = 0; /* the agent ignores a late limit abort too */
    vb_status_progress_write(c->work_dir, pr->item_key, pr->stage, pr->done, pr->total, pr->rate, 0);
    vb_console_progress(&c->console, pr->stage, pr->done, pr->total, pr->rate);
}

/* The checks below post events for the agent machine (coordinator/agent_queue.h) and never fire them: the event
 * loop drains the queue after each check, so each sees the agents as the previous one's events left them. */

/* Agents silent past limits.agent_silent_s: SILENT (the machine marks them lost, interrupting their item). */
void vb_campaign_check_silent(campaign *c) {
    uint64_t now = vb_now_ns();
    for (size_t i = 0; i < c->n_peers; i++) {
        peer *p = &c->peers[i];
        if (now - p->last_heard_ns < c->profile->limits.agent_silent_ns) continue;
        char why[300];
        snprintf(why, sizeof why, "its agent %s went silent", p->id);
        vb_campaign_post(c, VB_AGENT_EV_SILENT, p, -1, 0, why);
    }
}

/* The churn reinsert's limit: abort at the deadline; the agent stops between two insert calls and reports the rows
 * done. If it does not answer within limits.abort_unanswered_s, LIMIT_UNANSWERED (the machine expires the item). */
void vb_campaign_check_reinsert_limit(campaign *c) {
    uint64_t now = vb_now_ns();
    if (c->running < 0 || !c->limit_deadline_ns || now < c->limit_deadline_ns) return;
    for (size_t i = 0; i < c->n_peers; i++) {
        peer *p = &c->peers[i];
        if (p->state != VB_AGENT_BUSY || p->item != c->running) continue;
        if (!c->limit_aborted_ns) {
            c->limit_aborted_ns = now;
            vb_campaign_post(c, VB_AGENT_EV_ABORT, p, c->running, VBENCH__ABORT_REASON__ABORT_LIMIT, NULL);
            vb_store_event(c->store, VB_EVENT_LIMIT_REACHED, "warn", c->plan->items[c->running].key, "coordinator",
                           "reinsert limit of %ld s reached: stopping it", c->limit_s);
        } else if (now - c->limit_aborted_ns > c->profile->limits.abort_unanswered_ns) {
            vb_campaign_post(c, VB_AGENT_EV_LIMIT_UNANSWERED, p, c->running, 0, NULL);
        }
    }
}

/* Any other Abort (the phase timeout below, a server death, a stale attempt) unanswered for
 * limits.abort_unanswered_s: the agent is stuck in a call; the campaign goes on without it (issue 28). */
void vb_campaign_check_unanswered(campaign *c) {
    uint64_t now = vb_now_ns();
    for (size_t i = 0; i < c->n_peers; i++) {
        peer *p = &c->peers[i];
        if ((p->state != VB_AGENT_BUSY && p->state != VB_AGENT_DRAINING) || !p->abort_sent_ns ||
            now - p->abort_sent_ns <= c->profile->limits.abort_unanswered_ns)
            continue;
        char why[300];
        snprintf(why, sizeof why, "its agent %s did not answer the Abort within limits.abort_unanswered_s", p->id);
        vb_campaign_post(c, VB_AGENT_EV_ABORT_UNANSWERED, p, p->item, 0, why);
    }
}

/* The wall-clock limit of one item (limits.phase_timeout_s, plus the reinsert's limit for churn): the item fails
 * at once and an Abort is posted for its agent, fired when the loop drains the queue, so the Abort goes out after
 * the item's failure is written (before this queue it went out just before). */
void vb_campaign_check_phase_timeout(campaign *c) {
    uint64_t now = vb_now_ns();
    for (size_t i = 0; i < c->n_peers && c->running >= 0; i++) {
        peer *p = &c->peers[i];
        if (p->state != VB_AGENT_BUSY || p->item != c->running) continue;
        uint64_t limit_ns = (uint64_t)c->profile->limits.phase_timeout_s * 1000000000ull;
        if (c->plan->items[c->running].kind == VB_PHASE_CHURN) limit_ns += (uint64_t)c->limit_s * 1000000000ull;
        if (now - p->item_started_ns > limit_ns) {
            char why[128];
            snprintf(why, sizeof why, "exceeded limits.phase_timeout_s = %ld s", c->profile->limits.phase_timeout_s);
            vb_campaign_post(c, VB_AGENT_EV_ABORT, p, c->running, VBENCH__ABORT_REASON__ABORT_PHASE_TIMEOUT, why);
            vb_campaign_fail_item(c, c->running, "limit", why);
        }
    }
}
