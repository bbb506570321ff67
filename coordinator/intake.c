/* Result intake: a Result of an item's current attempt is committed and acknowledged (or acknowledged and only
 * written as an event when it is not current), and the end of an attempt (Done or Failed) moves its item. */
#include <stdio.h>
#include <string.h>

#include "coordinator/campaign_int.h"

/* ---- results ---------------------------------------------------------------------------------------------- */

/* What the terminal shows for a committed result: its kind's description (store/result_kinds.c), a line each. */
static void print_result(campaign *c, const Vbench__Result *r) {
    char lines[4096];
    vb_result_describe(vb_result_kind_of(r), r, lines, sizeof lines);
    for (char *line = lines, *nl; *line; line = nl + 1) {
        if ((nl = strchr(line, '\n'))) *nl = '\0';
        vb_console_say(&c->console, "%s", line);
        if (!nl) break;
    }
}

/* A result the agent table does not record (ACK_ONLY): of an item not in the plan, or of an attempt that is not
 * current. Acknowledged, so the agent forgets it, and written as an event. */
void vb_campaign_result_not_recorded(campaign *c, peer *p, const Vbench__Result *r) {
    int i = vb_campaign_item_index(c, r->item_key);
    if (i < 0) {
        vb_store_event(c->store, VB_EVENT_NOT_RECORDED, "warn", r->item_key, p->id,
                       "result %s for an item not in the plan: ignored", r->result_key);
        if (!vb_store_failure(c->store)) vb_campaign_send_ack(c, p, r->result_key, r->attempt);
        return;
    }
    /* A late copy from an interrupted attempt: the item runs (or ran) again; recording this one as well
     * would count the measurement twice. The agent may forget it. */
    vb_store_event(c->store, VB_EVENT_NOT_RECORDED, "warn", r->item_key, p->id,
                   "result %s of attempt %u arrived after that attempt was interrupted: not recorded (the item's "
                   "attempt is now %u, %s)", r->result_key, r->attempt, c->runs[i].attempt,
                   c->items[i] == ITEM_DONE ? "done" : c->items[i] == ITEM_RUNNING ? "running" : "to run again");
    if (!vb_store_failure(c->store)) vb_campaign_send_ack(c, p, r->result_key, r->attempt);
}

/* A result of the current attempt of its item (RECORD_RESULT): committed, then acknowledged. */
void vb_campaign_record_result(campaign *c, peer *p, const Vbench__Result *r) {
    int i = vb_campaign_item_index(c, r->item_key);
    int dup = 0;
    vb_error err;
    const char *adapter = c->profile->engines[c->plan->items[i].engine].adapter;   /* the row's config: the label */
    int rc = vb_store_commit_result(c->store, r, adapter, vb_campaign_item_dataset(c, i), p->id, &dup, &err);
    if (rc == VB_STORE_RETRY) return;   /* not acknowledged: it stays in the agent's outbox; the loop stops */
    if (rc == VB_STORE_POISON) {
        /* A result that can never be stored (a NaN where the schema wants a number, an inconsistent histogram,
         * no body) is acknowledged, so the agent stops resending it, and fails its item with the reason. */
        vb_console_say(&c->console, "vbench: could not record result %s: %s", r->result_key, err.message);
        vb_campaign_send_ack(c, p, r->result_key, r->attempt);
        if (c->items[i] == ITEM_RUNNING || c->items[i] == ITEM_DONE) {
            char why[1200];
            snprintf(why, sizeof why, "its result %s could not be recorded: %.1000s", r->result_key, err.message);
            vb_campaign_fail_item(c, i, "results", why);
        }
        return;
    }
    if (r->body_case == VBENCH__RESULT__BODY_BUILD && !r->build->checkpoint) {
        /* Before the ack, and again for a resent copy: a build whose versions are not in the manifest stays in
         * the agent's outbox until they are. */
        char key[256];
        snprintf(key, sizeof key, "engine.%s.version", vb_campaign_item_engine(c, i));
        if (vb_store_manifest_set(c->store, key, r->build->engine_version, NULL) == VB_STORE_RETRY) return;
        snprintf(key, sizeof key, "dataset.%s.content_hash", vb_campaign_item_dataset(c, i));
        if (vb_store_manifest_set(c->store, key, r->build->dataset_hash, NULL) == VB_STORE_RETRY) return;
    }
    vb_campaign_send_ack(c, p, r->result_key, r->attempt);
    if (dup) return;
    print_result(c, r);
    if (r->body_case == VBENCH__RESULT__BODY_WINDOW) vb_campaign_server_window_done(c, i);
    if (r->completes_item && c->items[i] == ITEM_FAILED) {
        /* Kept for the record, but the item failed before this arrived (its server died): it stays failed. */
        vb_store_item_finish(c->store, r->item_key, "failed", "the item's server died while it ran", NULL);
        return;
    }
    if (r->completes_item && c->items[i] != ITEM_DONE) {
        c->items[i] = ITEM_DONE;
        vb_campaign_note_finished(c, i, NULL);
        if (c->running == i) c->running = -1, vb_console_idle(&c->console);
    }
}

/* The end of an attempt (Done or Failed), acknowledged. FINISH_ITEM / FAIL_ITEM: the current attempt ended, the
 * item is done or failed if it still runs; END_STALE: an interrupted attempt's end, only an event. */
void vb_campaign_on_item_end(campaign *c, peer *p, const Vbench__Envelope *env, vb_agent_action a) {
    const Vbench__Failed *failed = env->body_case == VBENCH__ENVELOPE__BODY_FAILED ? env->failed : NULL;
    const char *item_key = failed ? failed->item_key : env->done->item_key;
    const char *ack_key = failed ? failed->key : env->done->key;
    unsigned attempt = failed ? failed->attempt : env->done->attempt;
    int i = vb_campaign_item_index(c, item_key);
    /* Acknowledged only once what it moved is written: otherwise it stays in the agent's outbox. */
    int ack = ack_key && ack_key[0];
    if (a == VB_AGENT_ACT_END_STALE) {
        vb_store_event(c->store, VB_EVENT_NOT_RECORDED, p->state == VB_AGENT_DRAINING ? "info" : "warn", item_key,
                       p->id,
                       "%s of attempt %u%s%s arrived after that attempt was interrupted: not recorded",
                       failed ? "failure" : "end", attempt, failed ? ": " : "", failed ? failed->message : "");
        if (ack && !vb_store_failure(c->store)) vb_campaign_send_ack(c, p, ack_key, attempt);
        return;
    }
    if (failed && c->items[i] == ITEM_RUNNING) {
        vb_campaign_fail_item(c, i, failed->kind == VBENCH__FAIL_KIND__FAIL_LIMIT ? "limit" : failed->domain,
                              failed->message);
        vb_campaign_note_finished(c, i, failed->message);
    } else if (!failed && c->items[i] == ITEM_RUNNING) {
        /* Done, but no completing result of this attempt was committed (every phase sends one before its
         * Done): the item is done only when its result is in the database, so it runs again (as an agent
         * fault: limits.max_attempts bounds it). */
        char why[300];
        snprintf(why, sizeof why, "agent %s ended attempt %u without a recorded result", p->id, attempt);
        vb_campaign_interrupt_item(c, i, why, 1);
    }
    if (c->running == i) c->running = -1, vb_console_idle(&c->console);
    if (ack && !vb_store_failure(c->store)) vb_campaign_send_ack(c, p, ack_key, attempt);
}
