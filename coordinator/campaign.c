/* The coordinator's event loop and the per-agent state machine. */
#include "coordinator/campaign.h"

#include <czmq.h>
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/plan.h"
#include "config/profile.h"
#include "coordinator/manifest.h"
#include "coordinator/report.h"
#include "coordinator/store.h"
#include "proto/wire.h"
#include "util/clock.h"

extern char **environ;

#define HEARTBEAT_MS 1000
#define SILENT_AFTER_NS (15ull * 1000000000ull)   /* an agent quiet this long is lost */
#define HELLO_WAIT_NS (60ull * 1000000000ull)     /* how long to wait for the first agent */
#define MAX_LOCAL_RESPAWNS 3

/* ITEM_EXPIRED: stopped at its wall-clock limit with partial results; the next resume continues it. */
typedef enum { ITEM_PENDING, ITEM_RUNNING, ITEM_DONE, ITEM_FAILED, ITEM_SKIPPED, ITEM_EXPIRED } item_state;

/* Agent states. IDLE: welcomed, no item. BUSY: runs `item`. LOST: silent past its deadline; its item was
 * handed back to the plan. Events and what they do are in agent_on(). */
typedef enum { AGENT_IDLE, AGENT_BUSY, AGENT_LOST } agent_state;
static const char *agent_state_name[] = {"idle", "busy", "lost"};

typedef struct peer {
    char id[128];
    zframe_t *routing;
    char roles[128];
    agent_state state;
    int item;             /* plan index while BUSY, else -1 */
    uint64_t last_heard_ns, item_started_ns;
} peer;

typedef struct campaign {
    const vb_campaign_opts *o;
    vb_profile *profile;
    vb_plan *plan;
    vb_store *store;
    item_state *items;
    zsock_t *router;
    char run_dir[256], endpoint[300], work_dir[1100];
    peer *peers;
    size_t n_peers;
    pid_t local_pid;
    int respawns;
    uint64_t last_sent_ns;
    int running;          /* plan index of the running item, or -1 */
    long phase_timeout_s;
    int failures, expired;
    /* The churn reinsert's limit clock: started by the agent's first "reinsert" progress message. */
    uint64_t limit_deadline_ns, limit_aborted_ns;
    long limit_s;
    /* progress line */
    int tty;
    uint64_t last_print_ns;
    char progress_stage[64];
    uint64_t progress_done, progress_total;
    double progress_rate;
} campaign;

/* ---- output ---------------------------------------------------------------------------------------------- */

static void clear_progress(campaign *c) {
    if (c->tty && !c->o->quiet) fputs("\r\033[K", stderr);
}

static void say(campaign *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(campaign *c, const char *fmt, ...) {
    if (c->o->quiet) return;
    clear_progress(c);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void print_progress(campaign *c, int force) {
    if (c->o->quiet || c->running < 0) return;
    uint64_t now = vb_now_ns();
    uint64_t every = c->tty ? 200000000ull : 10000000000ull;
    if (!force && now - c->last_print_ns < every) return;
    c->last_print_ns = now;
    const vb_plan_item *it = &c->plan->items[c->running];
    char line[512];
    int n = snprintf(line, sizeof line, "[%d/%zu] %s", it->seq + 1, c->plan->n_items, it->key);
    if (c->progress_stage[0]) {
        n += snprintf(line + n, sizeof line - (size_t)n, " | %s", c->progress_stage);
        if (c->progress_total > 0) {
            double pct = 100.0 * (double)c->progress_done / (double)c->progress_total;
            n += snprintf(line + n, sizeof line - (size_t)n, " %.1f%% (%llu/%llu)", pct,
                          (unsigned long long)c->progress_done, (unsigned long long)c->progress_total);
        }
        if (c->progress_rate > 0) {
            n += snprintf(line + n, sizeof line - (size_t)n, " %.0f/s", c->progress_rate);
            if (c->progress_total > c->progress_done)
                snprintf(line + n, sizeof line - (size_t)n, " ETA %.0fs",
                         (double)(c->progress_total - c->progress_done) / c->progress_rate);
        }
    }
    if (c->tty) fprintf(stderr, "\r\033[K%s", line);
    else fprintf(stderr, "%s\n", line);
}

/* ---- plan bookkeeping ---------------------------------------------------------------------------------- */

static const char *item_engine(campaign *c, int i) { return c->profile->engines[c->plan->items[i].engine].name; }
static const char *item_dataset(campaign *c, int i) { return c->profile->datasets[c->plan->items[i].dataset].name; }

static int item_index(campaign *c, const char *key) {
    const vb_plan_item *it = vb_plan_find(c->plan, key);
    return it ? it->seq : -1;
}

static int load_item_states(campaign *c, vb_error *err) {
    c->items = calloc(c->plan->n_items, sizeof *c->items);
    for (size_t i = 0; i < c->plan->n_items; i++) {
        char st[32];
        if (vb_store_item_status(c->store, c->plan->items[i].key, st, sizeof st, err)) return VB_ERROR;
        if (strcmp(st, "done") == 0) c->items[i] = ITEM_DONE;
        else if (strcmp(st, "failed") == 0) c->items[i] = ITEM_FAILED;
        else if (strcmp(st, "skipped") == 0) c->items[i] = ITEM_SKIPPED;
        else if (strcmp(st, "expired") == 0) c->items[i] = ITEM_EXPIRED;
        else c->items[i] = ITEM_PENDING; /* pending, interrupted */
    }
    return VB_OK;
}

/* The item went back to the plan (agent lost, coordinator stopping): it will run again from its start. */
static void interrupt_item(campaign *c, int i, const char *why) {
    if (i < 0 || c->items[i] != ITEM_RUNNING) return;
    c->items[i] = ITEM_PENDING;
    vb_store_item_finish(c->store, c->plan->items[i].key, "interrupted", why, NULL);
    vb_store_event(c->store, "warn", c->plan->items[i].key, "coordinator", "interrupted: %s", why);
    say(c, "interrupted %s: %s", c->plan->items[i].key, why);
    if (c->running == i) c->running = -1;
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
static void expire_item(campaign *c, int i, const char *message) {
    c->items[i] = ITEM_EXPIRED;
    c->expired++;
    vb_store_item_finish(c->store, c->plan->items[i].key, "expired", message, NULL);
    vb_store_event(c->store, "warn", c->plan->items[i].key, "coordinator", "limit reached: %s", message);
    say(c, "LIMIT %s: %s", c->plan->items[i].key, message);
    if (c->running == i) c->running = -1;
}

static void fail_item(campaign *c, int i, const char *domain, const char *message) {
    if (i < 0) return;
    if (strcmp(domain, "limit") == 0 && c->plan->items[i].kind == VB_PHASE_CHURN) {
        expire_item(c, i, message);
        return;
    }
    c->items[i] = ITEM_FAILED;
    c->failures++;
    char text[4200];
    snprintf(text, sizeof text, "%s error: %s", domain, message);
    vb_store_item_finish(c->store, c->plan->items[i].key, "failed", text, NULL);
    vb_store_event(c->store, "error", c->plan->items[i].key, "coordinator", "%s", text);
    say(c, "FAILED %s: %s", c->plan->items[i].key, text);
    if (c->plan->items[i].kind == VB_PHASE_BUILD) skip_dependents(c, i);
    if (c->running == i) c->running = -1;
}

/* ---- messages out ---------------------------------------------------------------------------------------- */

static void send_to(campaign *c, peer *p, Vbench__Envelope *env) {
    vb_error err;
    if (vb_wire_send(c->router, p->routing, env, &err) != VB_OK)
        vb_store_event(c->store, "warn", NULL, "coordinator", "sending %s to %s: %s", vb_wire_body_name(env), p->id,
                       err.message);
    c->last_sent_ns = vb_now_ns();
}

static void send_ack(campaign *c, peer *p, const char *result_key) {
    Vbench__Ack ack = VBENCH__ACK__INIT;
    ack.result_key = (char *)result_key;
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_ACK;
    env.ack = &ack;
    send_to(c, p, &env);
}

static void send_simple(campaign *c, peer *p, Vbench__Envelope__BodyCase which, const char *item, const char *why) {
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    Vbench__Abort ab = VBENCH__ABORT__INIT;
    Vbench__Bye bye = VBENCH__BYE__INIT;
    Vbench__Heartbeat hb = VBENCH__HEARTBEAT__INIT;
    env.body_case = which;
    if (which == VBENCH__ENVELOPE__BODY_ABORT) {
        ab.item_key = (char *)item;
        ab.reason = (char *)why;
        env.abort = &ab;
    } else if (which == VBENCH__ENVELOPE__BODY_BYE) {
        bye.reason = (char *)why;
        env.bye = &bye;
    } else {
        env.heartbeat = &hb;
    }
    send_to(c, p, &env);
}

static int assign(campaign *c, peer *p, int i) {
    const vb_plan_item *it = &c->plan->items[i];
    const vb_profile_engine *e = &c->profile->engines[it->engine];
    const vb_profile_dataset *d = &c->profile->datasets[it->dataset];
    const vb_profile_phase *ph = vb_profile_phase_find(c->profile, vb_phase_name(it->kind));
    vb_error err;
    if (vb_store_item_start(c->store, it->key, p->id, &err)) {
        say(c, "vbench: %s", err.message);
        return VB_ERROR;
    }
    /* Churn continues from its committed checkpoint (or, with on_resume: restart, from the beginning). */
    vb_kv point[VB_PLAN_MAX_POINT + 2];
    size_t n_point = it->n_point;
    memcpy(point, it->point, n_point * sizeof *point);
    char resume_rows[32];
    if (it->kind == VB_PHASE_CHURN) {
        long rows = -1;
        const char *mode = vb_kv_get(it->point, it->n_point, "on_resume", "continue");
        if (vb_store_churn_checkpoint(c->store, it->key, &rows, &err)) say(c, "vbench: %s", err.message);
        if (rows >= 0 && strcmp(mode, "restart") == 0) {
            vb_store_churn_reset(c->store, it->key, NULL);
            point[n_point++] = (vb_kv){"restart", "1"};
        } else if (rows >= 0) {
            snprintf(resume_rows, sizeof resume_rows, "%ld", rows);
            point[n_point++] = (vb_kv){"resume_rows", resume_rows};
            say(c, "%s: continuing the reinsert from its checkpoint, %ld rows already in", it->key, rows);
        }
        c->limit_s = atol(vb_kv_get(it->point, it->n_point, "limit_s", "7200"));
    }
    c->limit_deadline_ns = c->limit_aborted_ns = 0;
    Vbench__Assign a = VBENCH__ASSIGN__INIT;
    a.item_key = (char *)it->key;
    a.phase = (char *)vb_phase_name(it->kind);
    a.engine = e->name;
    a.n_engine_params = e->n_params;
    a.engine_params = vb_wire_kv_make(e->params, e->n_params);
    a.dataset = d->name;
    a.n_dataset_params = d->n_params;
    a.dataset_params = vb_wire_kv_make(d->params, d->n_params);
    a.n_point = n_point;
    a.point = vb_wire_kv_make(point, n_point);
    a.n_phase_params = ph ? ph->n_params : 0;
    a.phase_params = vb_wire_kv_make(ph ? ph->params : NULL, a.n_phase_params);
    a.k = (uint32_t)c->profile->k;
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_ASSIGN;
    env.assign = &a;
    send_to(c, p, &env);
    vb_wire_kv_free(a.engine_params, a.n_engine_params);
    vb_wire_kv_free(a.dataset_params, a.n_dataset_params);
    vb_wire_kv_free(a.point, a.n_point);
    vb_wire_kv_free(a.phase_params, a.n_phase_params);
    c->items[i] = ITEM_RUNNING;
    c->running = i;
    p->state = AGENT_BUSY;
    p->item = i;
    p->item_started_ns = vb_now_ns();
    c->progress_stage[0] = '\0';
    c->progress_rate = 0;
    c->progress_done = c->progress_total = 0;
    print_progress(c, 1);
    return VB_OK;
}

/* ---- results ---------------------------------------------------------------------------------------------- */

static void print_result(campaign *c, const Vbench__Result *r) {
    if (r->body_case == VBENCH__RESULT__BODY_BUILD) {
        const Vbench__BuildResult *b = r->build;
        say(c, "%s: %llu rows, load %.2fs, build %.2fs, first query after %.2fs, %.0f rows/s, index %.1f MiB",
            r->item_key, (unsigned long long)b->rows, b->load_s, b->build_s, b->first_query_s, b->rows_per_s,
            b->index_bytes >= 0 ? (double)b->index_bytes / 1048576.0 : -1.0);
    } else if (r->body_case == VBENCH__RESULT__BODY_SWEEP) {
        const Vbench__SweepResult *w = r->sweep;
        say(c, "%s: recall %.4f, %.0f QPS, %llu short answers, %llu errors", r->item_key, w->recall, w->qps,
            (unsigned long long)w->short_answers, (unsigned long long)w->errors);
    } else if (r->body_case == VBENCH__RESULT__BODY_WINDOW) {
        const Vbench__WindowResult *w = r->window;
        say(c, "%s: %.0f QPS, in flight %.2f of %u clients, %llu errors, client CPU %.2fs", r->item_key, w->qps,
            w->window_s > 0 ? w->in_call_s / w->window_s : 0, w->clients, (unsigned long long)w->errors, w->client_cpu_s);
    } else if (r->body_case == VBENCH__RESULT__BODY_FILTERED) {
        const Vbench__FilteredResult *f = r->filtered;
        say(c, "%s: %s (%llu rows pass), recall %.4f, %.0f QPS, %llu short answers of %llu", r->item_key, f->filter,
            (unsigned long long)f->passing_rows, f->recall, f->qps, (unsigned long long)f->short_answers,
            (unsigned long long)f->queries);
    } else if (r->body_case == VBENCH__RESULT__BODY_CHURN && strcmp(r->churn->stage, "checkpoint") != 0) {
        const Vbench__ChurnResult *ch = r->churn;
        if (strcmp(ch->stage, "before") == 0 || strcmp(ch->stage, "after") == 0)
            say(c, "%s %s: recall %.4f, %.0f QPS", r->item_key, ch->stage, ch->recall, ch->qps);
        else
            say(c, "%s %s: %llu of %llu rows in %.2fs (%.0f rows/s)", r->item_key, ch->stage,
                (unsigned long long)ch->rows_done, (unsigned long long)ch->rows_planned, ch->seconds, ch->rows_per_s);
    }
}

static void on_result(campaign *c, peer *p, const Vbench__Result *r) {
    int i = item_index(c, r->item_key);
    if (i < 0) {
        vb_store_event(c->store, "warn", r->item_key, p->id, "result %s for an item not in the plan: ignored", r->result_key);
        send_ack(c, p, r->result_key);
        return;
    }
    int dup = 0;
    vb_error err;
    if (vb_store_commit_result(c->store, r, item_engine(c, i), item_dataset(c, i), p->id, &dup, &err) != VB_OK) {
        /* Not acknowledged: the agent keeps it and sends it again. */
        say(c, "vbench: could not record result %s: %s", r->result_key, err.message);
        return;
    }
    send_ack(c, p, r->result_key);
    if (dup) return;
    if (r->body_case == VBENCH__RESULT__BODY_BUILD) {
        char key[256];
        snprintf(key, sizeof key, "engine.%s.version", item_engine(c, i));
        vb_store_manifest_set(c->store, key, r->build->engine_version, NULL);
        snprintf(key, sizeof key, "dataset.%s.content_hash", item_dataset(c, i));
        vb_store_manifest_set(c->store, key, r->build->dataset_hash, NULL);
    }
    print_result(c, r);
    if (r->completes_item && c->items[i] != ITEM_DONE) {
        c->items[i] = ITEM_DONE;
        if (c->running == i) c->running = -1;
    }
}

/* ---- the agent state machine ------------------------------------------------------------------------------ */

static peer *find_peer(campaign *c, const char *id) {
    for (size_t i = 0; i < c->n_peers; i++)
        if (strcmp(c->peers[i].id, id) == 0) return &c->peers[i];
    return NULL;
}

/* Handles one message from an agent. The transitions:
 *   any   --hello-->              idle   (an agent that was busy restarted: its item goes back to the plan)
 *   idle|busy --heartbeat/log/progress--> same
 *   busy  --result-->             busy   (commit, then ack)
 *   busy  --done/failed-->        idle
 *   lost  --any but hello-->      idle   (it came back; its old item was already handed back)
 *   idle|busy --silence-->        lost   (see check_liveness) */
static void agent_on(campaign *c, zframe_t *routing, Vbench__Envelope *env) {
    char *id = zframe_strdup(routing);
    peer *p = find_peer(c, id);
    if (env->body_case == VBENCH__ENVELOPE__BODY_HELLO) {
        const Vbench__Hello *h = env->hello;
        if (h->protocol != VB_PROTOCOL_VERSION) {
            vb_store_event(c->store, "error", NULL, "coordinator", "agent %s speaks protocol %u, this coordinator %d: refused",
                           id, h->protocol, VB_PROTOCOL_VERSION);
            free(id);
            return;
        }
        if (!p) {
            c->peers = realloc(c->peers, (c->n_peers + 1) * sizeof *c->peers);
            p = &c->peers[c->n_peers++];
            memset(p, 0, sizeof *p);
            snprintf(p->id, sizeof p->id, "%s", id);
            p->item = -1;
        }
        zframe_destroy(&p->routing);
        p->routing = zframe_dup(routing);
        if (p->state == AGENT_BUSY) interrupt_item(c, p->item, "the agent restarted during the item");
        p->roles[0] = '\0';
        for (size_t i = 0; i < h->n_roles; i++)
            snprintf(p->roles + strlen(p->roles), sizeof p->roles - strlen(p->roles), "%s%s", i ? "," : "", h->roles[i]);
        p->state = AGENT_IDLE;
        p->item = -1;
        p->last_heard_ns = vb_now_ns();
        vb_store_agent_seen(c->store, h, NULL);
        vb_store_event(c->store, "info", NULL, "coordinator", "agent %s (%s, pid %llu, roles %s) joined", p->id, h->host,
                       (unsigned long long)h->pid, p->roles);
        Vbench__Welcome w = VBENCH__WELCOME__INIT;
        w.campaign = c->profile->name;
        w.heartbeat_ms = HEARTBEAT_MS;
        Vbench__Envelope out = VBENCH__ENVELOPE__INIT;
        out.body_case = VBENCH__ENVELOPE__BODY_WELCOME;
        out.welcome = &w;
        send_to(c, p, &out);
        free(id);
        return;
    }
    free(id);
    if (!p) return; /* not welcomed: it says hello again on its own */
    p->last_heard_ns = vb_now_ns();
    if (p->state == AGENT_LOST) {
        vb_store_event(c->store, "info", NULL, "coordinator", "agent %s is back", p->id);
        p->state = AGENT_IDLE;
        p->item = -1;
    }
    switch (env->body_case) {
    case VBENCH__ENVELOPE__BODY_HEARTBEAT: break;
    case VBENCH__ENVELOPE__BODY_PROGRESS: {
        const Vbench__Progress *pr = env->progress;
        if (c->running >= 0 && strcmp(pr->item_key, c->plan->items[c->running].key) == 0) {
            if (c->plan->items[c->running].kind == VB_PHASE_CHURN && strcmp(pr->stage, "reinsert") == 0 &&
                c->limit_deadline_ns == 0) {
                c->limit_deadline_ns = vb_now_ns() + (uint64_t)c->limit_s * 1000000000ull;
                vb_store_event(c->store, "info", pr->item_key, "coordinator", "reinsert started; limit %ld s", c->limit_s);
            }
            snprintf(c->progress_stage, sizeof c->progress_stage, "%s", pr->stage);
            c->progress_done = pr->done;
            c->progress_total = pr->total;
            c->progress_rate = pr->rate;
            print_progress(c, 0);
        }
        break;
    }
    case VBENCH__ENVELOPE__BODY_LOG:
        vb_store_event(c->store, strcmp(env->log->level, "error") == 0 ? "error"
                                 : strcmp(env->log->level, "warn") == 0 ? "warn" : "info",
                       env->log->item_key[0] ? env->log->item_key : NULL, p->id, "%s", env->log->message);
        say(c, "%s: %s", p->id, env->log->message);
        break;
    case VBENCH__ENVELOPE__BODY_RESULT: on_result(c, p, env->result); break;
    case VBENCH__ENVELOPE__BODY_DONE: {
        int i = item_index(c, env->done->item_key);
        if (i >= 0 && c->items[i] == ITEM_RUNNING) {
            /* Done without a completing result: the phase produced nothing to record. */
            c->items[i] = ITEM_DONE;
            vb_store_item_finish(c->store, env->done->item_key, "done", NULL, NULL);
        }
        if (c->running == i) c->running = -1;
        p->state = AGENT_IDLE;
        p->item = -1;
        break;
    }
    case VBENCH__ENVELOPE__BODY_FAILED: {
        int i = item_index(c, env->failed->item_key);
        if (i >= 0 && c->items[i] == ITEM_RUNNING) fail_item(c, i, env->failed->domain, env->failed->message);
        if (c->running == i) c->running = -1;
        p->state = AGENT_IDLE;
        p->item = -1;
        break;
    }
    default:
        vb_store_event(c->store, "warn", NULL, "coordinator", "unexpected %s from agent %s", vb_wire_body_name(env), p->id);
    }
}

static void check_liveness(campaign *c) {
    uint64_t now = vb_now_ns();
    for (size_t i = 0; i < c->n_peers; i++) {
        peer *p = &c->peers[i];
        if (p->state == AGENT_LOST || now - p->last_heard_ns < SILENT_AFTER_NS) continue;
        vb_store_event(c->store, "error", NULL, "coordinator", "agent %s silent for %.0f s: marked lost (was %s)", p->id,
                       (double)(now - p->last_heard_ns) / 1e9, agent_state_name[p->state]);
        if (p->state == AGENT_BUSY) interrupt_item(c, p->item, "the agent went silent");
        p->state = AGENT_LOST;
        p->item = -1;
    }
    /* The churn reinsert's limit: abort at the deadline; the agent stops between two insert calls and reports
     * the rows done. If it does not answer within 30 s, the item is expired here. */
    if (c->running >= 0 && c->limit_deadline_ns && now >= c->limit_deadline_ns) {
        for (size_t i = 0; i < c->n_peers; i++) {
            peer *p = &c->peers[i];
            if (p->state != AGENT_BUSY || p->item != c->running) continue;
            if (!c->limit_aborted_ns) {
                c->limit_aborted_ns = now;
                send_simple(c, p, VBENCH__ENVELOPE__BODY_ABORT, c->plan->items[c->running].key, "limit");
                vb_store_event(c->store, "warn", c->plan->items[c->running].key, "coordinator",
                               "reinsert limit of %ld s reached: stopping it", c->limit_s);
            } else if (now - c->limit_aborted_ns > 30000000000ull) {
                int item = c->running;
                expire_item(c, item, "the agent did not stop within 30 s of the limit");
                p->state = AGENT_LOST;
                p->item = -1;
            }
        }
    }
    /* The wall-clock limit of one item. */
    if (c->running >= 0) {
        for (size_t i = 0; i < c->n_peers; i++) {
            peer *p = &c->peers[i];
            if (p->state != AGENT_BUSY || p->item != c->running) continue;
            uint64_t limit_ns = (uint64_t)c->phase_timeout_s * 1000000000ull;
            if (c->plan->items[c->running].kind == VB_PHASE_CHURN) limit_ns += (uint64_t)c->limit_s * 1000000000ull;
            if (now - p->item_started_ns > limit_ns) {
                char why[128];
                snprintf(why, sizeof why, "exceeded limits.phase_timeout_s = %ld s", c->phase_timeout_s);
                send_simple(c, p, VBENCH__ENVELOPE__BODY_ABORT, c->plan->items[c->running].key, why);
                fail_item(c, c->running, "limit", why);
            }
        }
    }
}

/* ---- local agents ------------------------------------------------------------------------------------------ */

static int spawn_local_agent(campaign *c, vb_error *err) {
    const char *argv[16];
    int n = 0;
    argv[n++] = c->o->agent_bin;
    argv[n++] = "--connect";
    argv[n++] = c->endpoint;
    argv[n++] = "--id";
    argv[n++] = "local-client";
    argv[n++] = "--roles";
    argv[n++] = "client";
    argv[n++] = "--workdir";
    argv[n++] = c->work_dir;
    argv[n++] = "--exit-with-parent";
    if (c->o->cache_dir) {
        argv[n++] = "--cache-dir";
        argv[n++] = c->o->cache_dir;
    }
    if (c->o->agent_cpus) {
        argv[n++] = "--cpus";
        argv[n++] = c->o->agent_cpus;
    }
    argv[n] = NULL;
    int rc = posix_spawn(&c->local_pid, c->o->agent_bin, NULL, NULL, (char *const *)argv, environ);
    if (rc != 0)
        return vb_error_set(err, "coordinator", rc, "cannot start the local agent %s: %s", c->o->agent_bin, strerror(rc));
    return VB_OK;
}

static void watch_local_agent(campaign *c) {
    if (c->local_pid <= 0) return;
    int status;
    if (waitpid(c->local_pid, &status, WNOHANG) != c->local_pid) return;
    c->local_pid = 0;
    char how[64];
    if (WIFSIGNALED(status)) snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(status));
    else snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(status));
    vb_store_event(c->store, "error", NULL, "coordinator", "local agent %s", how);
    peer *p = find_peer(c, "local-client");
    if (p) {
        if (p->state == AGENT_BUSY) {
            char why[128];
            snprintf(why, sizeof why, "the local agent %s", how);
            interrupt_item(c, p->item, why);
        }
        p->state = AGENT_LOST;
    }
    if (c->respawns++ < MAX_LOCAL_RESPAWNS) {
        say(c, "local agent %s; starting it again", how);
        vb_error err;
        if (spawn_local_agent(c, &err)) say(c, "vbench: %s", err.message);
    }
}

static void stop_local_agent(campaign *c) {
    if (c->local_pid <= 0) return;
    for (int i = 0; i < 50; i++) {
        if (waitpid(c->local_pid, NULL, WNOHANG) == c->local_pid) {
            c->local_pid = 0;
            return;
        }
        vb_sleep_ns(100000000ull);
    }
    kill(c->local_pid, SIGTERM);
    waitpid(c->local_pid, NULL, 0);
    c->local_pid = 0;
}

/* ---- set-up ------------------------------------------------------------------------------------------------- */

static int make_parent_dir(const char *path, vb_error *err) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) return VB_OK;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        mkdir(dir, 0755);
        *p = '/';
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return vb_error_set(err, "coordinator", errno, "cannot create %s: %s", dir, strerror(errno));
    return VB_OK;
}

static int prepare(campaign *c, vb_error *err) {
    const vb_campaign_opts *o = c->o;
    if (!o->resume) {
        if (vb_profile_load(o->profile, &c->profile, err)) return VB_ERROR;
        if (o->engines && vb_profile_select_engines(c->profile, o->engines, err)) return VB_ERROR;
        if (vb_profile_check_engines(c->profile, err)) return VB_ERROR;
        if (vb_plan_build(c->profile, &c->plan, err)) return VB_ERROR;
        if (make_parent_dir(o->out, err) || vb_store_open(o->out, 1, &c->store, err)) return VB_ERROR;
        if (vb_store_init_campaign(c->store, c->profile, o->engines, c->plan, err) ||
            vb_manifest_record_host(c->store, err) ||
            vb_manifest_record_profile(c->store, c->profile, o->command_line, err))
            return VB_ERROR;
    } else {
        if (vb_store_open(o->out, 0, &c->store, err)) return VB_ERROR;
        char *yaml = NULL, *source = NULL, *engines = NULL, *status = NULL;
        int rc = vb_store_load_campaign(c->store, &yaml, &source, &engines, &status, err);
        if (rc == VB_OK) rc = vb_profile_parse(yaml, strlen(yaml), source, &c->profile, err);
        if (rc == VB_OK && engines) rc = vb_profile_select_engines(c->profile, engines, err);
        if (rc == VB_OK) rc = vb_profile_check_engines(c->profile, err);
        if (rc == VB_OK) rc = vb_plan_build(c->profile, &c->plan, err);
        if (rc == VB_OK) rc = vb_store_check_plan(c->store, c->plan, err);
        if (rc == VB_OK && strcmp(status, "finished") == 0 && !o->retry_failed)
            say(c, "campaign %s already finished; nothing to resume (use --retry-failed to run failed items again)",
                c->profile->name);
        free(yaml);
        free(source);
        free(engines);
        free(status);
        if (rc) return VB_ERROR;
        vb_store_event(c->store, "info", NULL, "coordinator", "resumed: %s", o->command_line);
    }
    if (vb_store_begin_run(c->store, o->retry_failed, err) || load_item_states(c, err)) return VB_ERROR;
    const char *t = vb_profile_setting(c->profile, "limits.phase_timeout_s", "3600");
    c->phase_timeout_s = atol(t) > 0 ? atol(t) : 3600;
    snprintf(c->work_dir, sizeof c->work_dir, "%s.d", o->out);
    mkdir(c->work_dir, 0755);
    snprintf(c->run_dir, sizeof c->run_dir, "/tmp/vbench-%d-XXXXXX", (int)getpid());
    if (!mkdtemp(c->run_dir))
        return vb_error_set(err, "coordinator", errno, "cannot create a run directory in /tmp: %s", strerror(errno));
    snprintf(c->endpoint, sizeof c->endpoint, "ipc://%s/coordinator.sock", c->run_dir);
    c->router = zsock_new(ZMQ_ROUTER);
    zsock_set_router_mandatory(c->router, 1);
    if (zsock_bind(c->router, "%s", c->endpoint) < 0)
        return vb_error_set(err, "coordinator", zmq_errno(), "cannot bind %s: %s", c->endpoint, zmq_strerror(zmq_errno()));
    return spawn_local_agent(c, err);
}

static int next_item(campaign *c) {
    for (size_t i = 0; i < c->plan->n_items; i++)
        if (c->items[i] == ITEM_PENDING) return (int)i;
    return -1;
}

static peer *idle_peer_with_role(campaign *c, const char *role) {
    for (size_t i = 0; i < c->n_peers; i++)
        if (c->peers[i].state == AGENT_IDLE && strstr(c->peers[i].roles, role)) return &c->peers[i];
    return NULL;
}

static void teardown(campaign *c) {
    for (size_t i = 0; i < c->n_peers; i++) {
        if (c->peers[i].state != AGENT_LOST) send_simple(c, &c->peers[i], VBENCH__ENVELOPE__BODY_BYE, NULL, "campaign over");
        zframe_destroy(&c->peers[i].routing);
    }
    stop_local_agent(c);
    zsock_destroy(&c->router);
    if (c->run_dir[0] && strstr(c->run_dir, "/tmp/vbench-")) {
        char sock[400];
        snprintf(sock, sizeof sock, "%s/coordinator.sock", c->run_dir);
        unlink(sock);
        rmdir(c->run_dir);
    }
    free(c->peers);
    free(c->items);
    vb_store_close(&c->store);
    vb_plan_destroy(&c->plan);
    vb_profile_destroy(&c->profile);
}

int vb_campaign_run(const vb_campaign_opts *o, vb_error *err) {
    campaign c = {.o = o, .running = -1, .tty = isatty(2)};
    zsys_init();
    zsys_set_linger(200);
    if (prepare(&c, err) != VB_OK) {
        if (c.store) vb_store_event(c.store, "error", NULL, "coordinator", "%s", err->message);
        teardown(&c);
        return -1;
    }
    size_t done0 = 0;
    for (size_t i = 0; i < c.plan->n_items; i++) done0 += c.items[i] != ITEM_PENDING;
    say(&c, "campaign %s: %zu items (%zu already complete), results in %s", c.profile->name, c.plan->n_items, done0, o->out);

    uint64_t started = vb_now_ns();
    int code = 0, interrupted = 0;
    zpoller_t *poller = zpoller_new(c.router, NULL);
    for (;;) {
        if (zsys_interrupted) {
            interrupted = 1;
            break;
        }
        int next = next_item(&c);
        if (next < 0 && c.running < 0) break;
        if (c.running < 0 && next >= 0) {
            peer *p = idle_peer_with_role(&c, c.plan->items[next].role);
            if (p) assign(&c, p, next);
            else if (c.n_peers == 0 && vb_now_ns() - started > HELLO_WAIT_NS) {
                vb_error_set(err, "coordinator", 1, "no agent with role %s said hello within %llu s",
                             c.plan->items[next].role, HELLO_WAIT_NS / 1000000000ull);
                interrupted = 1;
                break;
            }
        }
        void *which = zpoller_wait(poller, 100);
        if (which == c.router) {
            zframe_t *routing = NULL;
            vb_error rerr;
            Vbench__Envelope *env = vb_wire_recv(c.router, &routing, &rerr);
            if (env) {
                agent_on(&c, routing, env);
                vb_wire_free(env);
                zframe_destroy(&routing);
            } else if (!zsys_interrupted) {
                vb_store_event(c.store, "warn", NULL, "coordinator", "dropped a message: %s", rerr.message);
            }
        }
        if (vb_now_ns() - c.last_sent_ns > HEARTBEAT_MS * 1000000ull)
            for (size_t i = 0; i < c.n_peers; i++)
                if (c.peers[i].state != AGENT_LOST) send_simple(&c, &c.peers[i], VBENCH__ENVELOPE__BODY_HEARTBEAT, NULL, NULL);
        check_liveness(&c);
        watch_local_agent(&c);
        if (c.local_pid == 0 && c.respawns > MAX_LOCAL_RESPAWNS) {
            vb_error_set(err, "coordinator", 1, "the local agent keeps dying; see `vbench status --out %s`", o->out);
            interrupted = 1;
            break;
        }
        print_progress(&c, 0);
    }
    zpoller_destroy(&poller);
    clear_progress(&c);

    if (interrupted) {
        if (c.running >= 0) {
            for (size_t i = 0; i < c.n_peers; i++)
                if (c.peers[i].state == AGENT_BUSY)
                    send_simple(&c, &c.peers[i], VBENCH__ENVELOPE__BODY_ABORT, c.plan->items[c.running].key, "coordinator stopping");
            interrupt_item(&c, c.running, zsys_interrupted ? "the coordinator was interrupted" : err->message);
        }
        vb_store_set_status(c.store, "interrupted", NULL);
        vb_store_event(c.store, "warn", NULL, "coordinator", "campaign interrupted%s%s", zsys_interrupted ? "" : ": ",
                       zsys_interrupted ? "" : err->message);
        say(&c, "campaign interrupted; continue it with: vbench resume --out %s", o->out);
        code = 2;
    } else {
        size_t failed = 0, expired = 0;
        for (size_t i = 0; i < c.plan->n_items; i++) {
            failed += c.items[i] == ITEM_FAILED || c.items[i] == ITEM_SKIPPED;
            expired += c.items[i] == ITEM_EXPIRED;
        }
        vb_store_set_status(c.store, failed ? "failed" : expired ? "incomplete" : "finished", NULL);
        if (!o->quiet) {
            vb_error rerr;
            vb_report_show(vb_store_db(c.store), stdout, 0, &rerr);
            fflush(stdout);
        }
        if (failed) say(&c, "campaign %s finished with %zu failed or skipped items: see `vbench status --out %s`",
                        c.profile->name, failed, o->out);
        if (expired) say(&c, "campaign %s: %zu items stopped at their limit; continue them with `vbench resume --out %s`",
                         c.profile->name, expired, o->out);
        if (!failed && !expired) say(&c, "campaign %s finished: %s", c.profile->name, o->out);
        code = failed || expired ? 1 : 0;
    }
    teardown(&c);
    return code;
}
