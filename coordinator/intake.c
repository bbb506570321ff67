/* Result intake: a Result of an item's current attempt is committed and acknowledged (or acknowledged and only
 * written as an event when it is not current), and the end of an attempt (Done or Failed) moves its item. */
#include <stdio.h>
#include <string.h>

#include "coordinator/campaign_int.h"

/* ---- results ---------------------------------------------------------------------------------------------- */

/* An engine that returned the same id twice in an answer: scored with the repeats as misses and kept as a
 * validity finding (v_validity), said here so the terminal shows it as it happens. */
static void say_duplicates(campaign *c, const char *item, uint64_t answers, uint64_t queries, const char *example) {
    if (answers == 0) return;
    vb_console_say(&c->console, "%s: %llu of %llu answers repeated an id (first: %s); the repeats count as misses", item,
        (unsigned long long)answers, (unsigned long long)queries, example && *example ? example : "not recorded");
}

/* Queries with nothing right behind a mean (docs/metrics.md "Recall distribution"): said as they happen, with the
 * command that names them. */
static void say_zero_recall(campaign *c, const char *item, const Vbench__Measurement *m) {
    if (!m || m->recall_queries == 0 || m->recall_zero_share <= 0) return;
    vb_console_say(&c->console, "%s: %.0f of %llu queries at recall 0 behind the mean %.4f (p10 %.4f; vbench show "
        "--worst N names them)", item, m->recall_zero_share * (double)m->recall_queries,
        (unsigned long long)m->recall_queries, m->recall, m->recall_p10);
}

static void print_result(campaign *c, const Vbench__Result *r) {
    if (r->body_case == VBENCH__RESULT__BODY_BUILD && r->build->checkpoint) {
        return;   /* a load checkpoint: the progress line says how far the load is */
    } else if (r->body_case == VBENCH__RESULT__BODY_BUILD) {
        const Vbench__BuildResult *b = r->build;
        vb_console_say(&c->console, "%s: %llu rows, load %.2fs, build %.2fs, first query after %.2fs, %.0f rows/s, index %.1f MiB",
            r->item_key, (unsigned long long)b->rows, b->load_s, b->build_s, b->first_query_s, b->rows_per_s,
            b->index_bytes >= 0 ? (double)b->index_bytes / 1048576.0 : -1.0);
        if (b->attempts > 1)
            vb_console_say(&c->console, "%s: the load continued from its checkpoint: %.2fs of load over %u attempts",
                           r->item_key, b->load_s, b->attempts);
    } else if (r->body_case == VBENCH__RESULT__BODY_SWEEP) {
        const Vbench__Measurement *w = r->sweep->m;
        vb_console_say(&c->console, "%s: recall %.4f, %.0f QPS, %llu short answers, %llu errors", r->item_key, w->recall, w->qps,
            (unsigned long long)w->short_answers, (unsigned long long)w->errors);
        say_duplicates(c, r->item_key, w->duplicate_answers, w->queries, w->duplicate_example);
        say_zero_recall(c, r->item_key, w);
    } else if (r->body_case == VBENCH__RESULT__BODY_WINDOW) {
        const Vbench__WindowResult *w = r->window;
        vb_console_say(&c->console, "%s: %.0f QPS, in flight %.2f of %u clients, %llu errors, client CPU %.2fs", r->item_key, w->qps,
            w->window_s > 0 ? w->in_call_s / w->window_s : 0, w->clients, (unsigned long long)w->errors, w->client_cpu_s);
    } else if (r->body_case == VBENCH__RESULT__BODY_FILTERED) {
        const Vbench__FilteredResult *f = r->filtered;
        const Vbench__Measurement *m = f->m;
        vb_console_say(&c->console, "%s: %s (%llu rows pass), recall %.4f, %.0f QPS, %llu short answers of %llu", r->item_key,
            f->filter, (unsigned long long)f->passing_rows, m->recall, m->qps, (unsigned long long)m->short_answers,
            (unsigned long long)m->queries);
        say_duplicates(c, r->item_key, m->duplicate_answers, m->queries, m->duplicate_example);
        say_zero_recall(c, r->item_key, m);
    } else if (r->body_case == VBENCH__RESULT__BODY_STREAMING) {
        const Vbench__StreamingResult *w = r->streaming;
        const Vbench__Measurement *m = w->m;
        char stage[32];
        if (w->at_rest) snprintf(stage, sizeof stage, "at rest");
        else snprintf(stage, sizeof stage, "stage %g", w->stage);
        vb_console_say(&c->console, "%s %s: %llu rows visible, recall %.4f, %.0f QPS; inserts %.0f rows/s of %.0f "
            "offered, largest lag %.3fs", r->item_key, stage, (unsigned long long)w->rows_visible, m ? m->recall : 0,
            m ? m->qps : 0, w->achieved_rows_s, w->offered_rows_s, w->max_lag_s);
    } else if (r->body_case == VBENCH__RESULT__BODY_CAPACITY_WINDOW) {
        const Vbench__CapacityWindow *w = r->capacity_window;
        vb_console_say(&c->console, "%s: window %u at %.1f/s offered, %.1f/s achieved, p99 %.3f ms%s%s", r->item_key,
                       w->step, w->offered_rate, w->achieved_rate, w->p99_ms,
                       w->client_limited ? "; client-limited: " : "", w->client_limited ? w->client_reason : "");
    } else if (r->body_case == VBENCH__RESULT__BODY_CAPACITY) {
        const Vbench__CapacitySummary *m = r->capacity;
        if (m->status == VBENCH__CAPACITY_STATUS__CAPACITY_FOUND)
            vb_console_say(&c->console, "%s: %.1f queries/s at p99 <= %g ms (ef_search %d, recall %.4f; p99 there %.3f ms; "
                           "%u of %u confirmations met it; the knee at %.1f/s %s)", r->item_key, m->rate, m->target_ms,
                           m->ef_search, m->recall, m->p99_ms, m->repeats_met, m->repeats, m->knee_rate,
                           m->knee_failed ? "failed it" : "did not fail it");
        else
            vb_console_say(&c->console, "%s: no capacity at p99 <= %g ms: %s", r->item_key, m->target_ms, m->reason);
    } else if (r->body_case == VBENCH__RESULT__BODY_COLD_START) {
        /* the raw times only: the summary (ratios, time to warm) is the store's, in show and the report */
        const Vbench__ColdStartResult *cs = r->cold_start;
        if (!cs->applicable)
            vb_console_say(&c->console, "%s: not applicable (%s)", r->item_key, cs->reason);
        else if (cs->n_cold_ns && cs->n_warm_ns)
            vb_console_say(&c->console, "%s: first query after the cold restart %.3f ms (the warm pass's first %.3f ms), "
                           "%zu queries each pass, %zu failed", r->item_key, (double)cs->cold_ns[0] / 1e6,
                           (double)cs->warm_ns[0] / 1e6, cs->n_cold_ns, cs->n_cold_failed + cs->n_warm_failed);
    } else if (r->body_case == VBENCH__RESULT__BODY_CHURN && r->churn->stage != VBENCH__CHURN_STAGE__CHURN_CHECKPOINT) {
        const Vbench__ChurnResult *ch = r->churn;
        const char *stage = vb_wire_churn_stage_name(ch->stage);
        if (ch->m && (ch->stage == VBENCH__CHURN_STAGE__CHURN_BEFORE || ch->stage == VBENCH__CHURN_STAGE__CHURN_AFTER)) {
            vb_console_say(&c->console, "%s %s: recall %.4f, %.0f QPS", r->item_key, stage, ch->m->recall, ch->m->qps);
            say_duplicates(c, r->item_key, ch->m->duplicate_answers, ch->m->queries, ch->m->duplicate_example);
            say_zero_recall(c, r->item_key, ch->m);
        } else if (ch->stage == VBENCH__CHURN_STAGE__CHURN_MAINTAIN) {
            if (ch->rows_done == 0) vb_console_say(&c->console, "%s maintain: none, the engine has no maintenance step", r->item_key);
            else vb_console_say(&c->console, "%s maintain: %.2fs", r->item_key, ch->seconds);
        } else if (ch->rows_done <= ch->rows_from) {
            vb_console_say(&c->console, "%s %s: no rows in this attempt (%llu of %llu done before it)", r->item_key, stage,
                (unsigned long long)ch->rows_done, (unsigned long long)ch->rows_planned);
        } else
            vb_console_say(&c->console, "%s %s: %llu of %llu rows in %.2fs (%.0f rows/s)", r->item_key, stage,
                (unsigned long long)ch->rows_done, (unsigned long long)ch->rows_planned, ch->seconds, ch->rows_per_s);
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
