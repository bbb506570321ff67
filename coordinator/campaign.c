/* The coordinator's event loop and the per-agent state machine.
 *
 * Faults (issue 6). Every agent is watched by heartbeats both ways: one that is silent for
 * limits.agent_silent_s is marked lost and its item interrupted; an agent that restarted (it says hello without
 * the item it ran) interrupts its item too. An interrupted item runs again on the next agent with its role
 * (limits.on_agent_lost: rerun), at most limits.max_attempts attempts in all, or fails (on_agent_lost: fail).
 * Each attempt has a number (plan.attempts): Assign carries it, and every Result, Done and Failed carries it
 * back. Only the current attempt of an item is recorded: a message of an attempt that was interrupted (it
 * arrives late, from the agent's outbox, after a cut link heals) is acknowledged, so the agent forgets it, and
 * recorded as an event, never as a result: no window is counted twice and none silently dropped.
 * A coordinator that restarts (`vbench resume`) finds the item that was running as an orphan: its attempt is
 * still current, and when its agent comes back saying it runs (or finished) it, the coordinator takes it over
 * instead of running it again; nothing else is assigned meanwhile (no two measurements overlap), for at most
 * limits.agent_silent_s. Every transition is written to the event table. */
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

#include "config/budget.h"
#include "config/plan.h"
#include "config/profile.h"
#include "coordinator/manifest.h"
#include "coordinator/report.h"
#include "coordinator/store.h"
#include "proto/transport.h"
#include "proto/wire.h"
#include "util/clock.h"

extern char **environ;

#define HEARTBEAT_MS 1000
#define HELLO_WAIT_NS (60ull * 1000000000ull)     /* how long to wait for the first agent */
#define MAX_LOCAL_RESPAWNS 3

/* ITEM_EXPIRED: stopped at its wall-clock limit with partial results; the next resume continues it. */
typedef enum { ITEM_PENDING, ITEM_RUNNING, ITEM_DONE, ITEM_FAILED, ITEM_SKIPPED, ITEM_EXPIRED } item_state;

/* Agent states. IDLE: welcomed, no item. BUSY: runs `item` (its current attempt). DRAINING: runs an item
 * whose attempt is no longer current (it said so in its hello, after a restart of ours or a cut link); it was
 * told to abort and gets nothing new until its Done or Failed for it arrives. LOST: silent past
 * limits.agent_silent_s; its item was interrupted. Events and what they do are in agent_on(). */
typedef enum { AGENT_IDLE, AGENT_BUSY, AGENT_DRAINING, AGENT_LOST } agent_state;
static const char *agent_state_name[] = {"idle", "busy", "draining", "lost"};

typedef struct peer {
    char id[128];
    zframe_t *routing;
    char roles[128];
    int cores;
    uint64_t memory_bytes;
    agent_state state;
    int item;             /* plan index while BUSY, else -1 */
    char drain_key[512];  /* DRAINING: the item key it runs, and the attempt */
    unsigned drain_attempt;
    int send_failed;      /* the last send to it failed (said once until one succeeds) */
    uint64_t instance;    /* Hello.instance of its process: another value in a hello means it restarted */
    uint64_t hello_seq;   /* the newest Hello.seq of that process: an older hello is stale */
    uint64_t last_sent_ns;   /* heartbeats go to each agent that heard nothing from us for HEARTBEAT_MS */
    uint64_t last_heard_ns, item_started_ns;
} peer;

/* An item's attempts: `attempt` is the latest started (plan.attempts); `live` says whether messages of that
 * attempt are still recorded (0 once it was interrupted, or before the item first ran). */
typedef struct item_run {
    unsigned attempt;
    int live;
} item_run;

/* The server of an engine that has a recipe, as the coordinator sees it. NONE: not started (or stopped and
 * wanted again); STARTING / STOPPING: a request is out to the orchestrator; READY: the engine's items may run,
 * with `connect` merged into their engine parameters; FAILED: could not start, or died and may not restart
 * (limits.on_server_failure), so the engine's remaining items fail with `failure`. */
typedef enum { SRV_NONE, SRV_STARTING, SRV_READY, SRV_STOPPING, SRV_STOPPED, SRV_FAILED } server_state;
static const char *server_state_name[] = {"none", "starting", "ready", "stopping", "stopped", "failed"};

typedef struct server {
    server_state state;
    char orchestrator[128];    /* the agent that runs it */
    vb_kv *connect;            /* owned strings */
    size_t n_connect;
    char failure[4096];
    int restarts;
    uint64_t since_ns;         /* when the current request went out */
    /* Before each item the orchestrator confirms the server is alive (its answer to "phase"): the item is
     * assigned only then. */
    int phase_item, phase_ok;
    uint64_t phase_sent_ns;
    int last_item;             /* the engine's most recently finished item, -1 none */
    double last_finished;      /* its wall time */
} server;

typedef struct local_agent {
    const char *id, *roles;
    char cpus[256];
    char cert[400];   /* its own throw-away key pair under CURVE, named by its id (the id is bound to the key) */
    pid_t pid;
    int respawns;
} local_agent;

typedef struct campaign {
    const vb_campaign_opts *o;
    vb_profile *profile;
    vb_plan *plan;
    vb_store *store;
    item_state *items;
    item_run *runs;            /* per plan item */
    zsock_t *router;
    vb_transport_zap *zap;          /* ZAP handler when listening with CURVE, else NULL */
    char run_dir[256], endpoint[300], work_dir[1100];
    char agent_server_key[400];    /* the coordinator's public key for the local agents under CURVE */
    char refused_senders[8][200];  /* the last "id key" pairs reported as refused (once each, not per heartbeat) */
    unsigned refused_total;        /* pairs ever reported; the newest is at (refused_total - 1) % 8 */
    peer *peers;
    size_t n_peers;
    local_agent local[2];      /* [0] client, [1] orchestrator when needed */
    int n_local;
    server *servers;           /* one per profile engine */
    int need_orchestrator;     /* a selected engine has a recipe */
    vb_budget local_budget;    /* resolved against this host (local mode) */
    int running;          /* plan index of the running item, or -1 */
    long phase_timeout_s;
    uint64_t silent_ns;        /* limits.agent_silent_s */
    unsigned max_attempts;     /* limits.max_attempts */
    int rerun_lost;            /* limits.on_agent_lost is rerun (else fail) */
    /* The item that was running when a previous coordinator process stopped (resume), -1 none: its agent may
     * still run it. Nothing is assigned until that agent said hello or orphan_deadline_ns passed. */
    int orphan;
    char orphan_agent[128];
    uint64_t orphan_deadline_ns;
    uint64_t waiting_said_ns;  /* when we last said that an item waits for an agent */
    int failures, expired;
    const char *stop_reason;   /* set when the campaign must stop (limits.on_server_failure: stop) */
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

/* The item a killed coordinator left running, and its agent (see `orphan`). */
static int find_orphan(campaign *c, vb_error *err) {
    char key[512];
    c->orphan = -1;
    if (vb_store_item_orphan(c->store, key, sizeof key, c->orphan_agent, sizeof c->orphan_agent, err)) return VB_ERROR;
    if (key[0]) c->orphan = item_index(c, key);
    return VB_OK;
}

static int load_item_states(campaign *c, vb_error *err) {
    c->items = calloc(c->plan->n_items, sizeof *c->items);
    c->runs = calloc(c->plan->n_items, sizeof *c->runs);
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
static int attempt_current(campaign *c, int i, unsigned attempt) {
    return i >= 0 && attempt == c->runs[i].attempt && c->runs[i].live;
}

static void fail_item(campaign *c, int i, const char *domain, const char *message);

/* The item's current attempt stopped before it finished: the item goes back to the plan and runs again from
 * its start (a churn reinsert from its checkpoint). agent_fault: its agent went silent, restarted or died; then
 * limits.on_agent_lost and limits.max_attempts decide whether it runs again or fails. Otherwise (the coordinator
 * stops) it simply waits for the next run. */
static void interrupt_item(campaign *c, int i, const char *why, int agent_fault) {
    if (i < 0 || c->items[i] != ITEM_RUNNING) return;
    const vb_plan_item *it = &c->plan->items[i];
    unsigned n = c->runs[i].attempt;
    c->runs[i].live = 0;
    if (c->running == i) c->running = -1;
    if (agent_fault && (!c->rerun_lost || n >= c->max_attempts)) {
        char msg[1024];
        if (!c->rerun_lost) snprintf(msg, sizeof msg, "attempt %u interrupted: %s (limits.on_agent_lost: fail)", n, why);
        else snprintf(msg, sizeof msg, "attempt %u interrupted: %s; that was the last of limits.max_attempts = %u", n,
                      why, c->max_attempts);
        fail_item(c, i, "agent", msg);
        return;
    }
    c->items[i] = ITEM_PENDING;
    vb_store_item_finish(c->store, it->key, "interrupted", why, NULL);
    if (agent_fault)
        vb_store_event(c->store, "warn", it->key, "coordinator",
                       "interrupted (attempt %u of at most %u): %s; it runs again on the next agent with role %s", n,
                       c->max_attempts, why, it->role);
    else
        vb_store_event(c->store, "warn", it->key, "coordinator", "interrupted (attempt %u): %s", n, why);
    say(c, "interrupted %s (attempt %u): %s", it->key, n, why);
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
    if (strcmp(vb_profile_setting(c->profile, "limits.on_item_failure", "continue"), "stop") == 0)
        c->stop_reason = "an item failed and limits.on_item_failure is stop (fix the cause, then `vbench resume "
                         "--retry-failed`)";
}

/* Remembers the last item of each engine to finish, so a server death reported a moment later can be
 * charged to the item that ran on the dying server. */
static void note_finished(campaign *c, int i) {
    if (i < 0 || !c->servers) return;
    server *sv = &c->servers[c->plan->items[i].engine];
    sv->last_item = i;
    sv->last_finished = vb_wall_time();
}

/* ---- messages out ---------------------------------------------------------------------------------------- */

/* A failed send (the agent's connection is gone: ROUTER_MANDATORY says so) is recorded once until a send to
 * that agent works again; the heartbeat deadline decides what the silence means. */
static void send_to(campaign *c, peer *p, Vbench__Envelope *env) {
    vb_error err;
    if (vb_wire_send(c->router, p->routing, env, &err) != VB_OK) {
        if (!p->send_failed)
            vb_store_event(c->store, "warn", NULL, "coordinator", "sending %s to %s: %s (further failures to it are "
                           "not recorded until a send works again)", vb_wire_body_name(env), p->id, err.message);
        p->send_failed = 1;
    } else {
        p->send_failed = 0;
    }
    p->last_sent_ns = vb_now_ns();
}

static void send_ack(campaign *c, peer *p, const char *key, unsigned attempt) {
    Vbench__Ack ack = VBENCH__ACK__INIT;
    ack.result_key = (char *)key;
    ack.attempt = attempt;
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

/* The churn reinsert's limit clock for item i: it starts with the first "reinsert" progress of the attempt
 * (also of an attempt taken over after a restart: the clock then starts again, the limit is per coordinator). */
static void item_limit_reset(campaign *c, int i) {
    const vb_plan_item *it = &c->plan->items[i];
    if (it->kind == VB_PHASE_CHURN) c->limit_s = atol(vb_kv_get(it->point, it->n_point, "limit_s", "7200"));
    c->limit_deadline_ns = c->limit_aborted_ns = 0;
}

/* Sends item i's Assign, for its current attempt, to p. first: the attempt starts now (a churn reinsert
 * restarts or continues from its checkpoint, said once); otherwise the same Assign again, to an agent whose
 * hello shows it never got it (the agent ignores a copy of what it already runs). */
static void send_assign(campaign *c, peer *p, int i, int first) {
    const vb_plan_item *it = &c->plan->items[i];
    const vb_profile_engine *e = &c->profile->engines[it->engine];
    const vb_profile_dataset *d = &c->profile->datasets[it->dataset];
    const vb_profile_phase *ph = vb_profile_phase_find(c->profile, vb_phase_name(it->kind));
    vb_error err;
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
            if (first) vb_store_churn_reset(c->store, it->key, NULL);
            point[n_point++] = (vb_kv){"restart", "1"};
        } else if (rows >= 0) {
            snprintf(resume_rows, sizeof resume_rows, "%ld", rows);
            point[n_point++] = (vb_kv){"resume_rows", resume_rows};
            if (first) say(c, "%s: continuing the reinsert from its checkpoint, %ld rows already in", it->key, rows);
        }
    }
    Vbench__Assign a = VBENCH__ASSIGN__INIT;
    a.item_key = (char *)it->key;
    a.attempt = c->runs[i].attempt;
    a.phase = (char *)vb_phase_name(it->kind);
    a.engine = e->name;
    /* The adapter gets the profile's engine parameters without the general keys (recipe, optional), and the
     * parameters of its server (socket, password, ...) from the orchestrator, which win. */
    const server *sv = &c->servers[it->engine];
    vb_kv eparams[128];
    size_t n_ep = 0;
    for (size_t j = 0; j < e->n_params && n_ep < 96; j++) {
        if (vb_profile_engine_param_is_general(e->params[j].key) ||
            vb_kv_get(sv->connect, sv->n_connect, e->params[j].key, NULL))
            continue;
        eparams[n_ep++] = e->params[j];
    }
    for (size_t j = 0; j < sv->n_connect && n_ep < 128; j++) eparams[n_ep++] = sv->connect[j];
    a.n_engine_params = n_ep;
    a.engine_params = vb_wire_kv_make(eparams, n_ep);
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
}

static int assign(campaign *c, peer *p, int i) {
    const vb_plan_item *it = &c->plan->items[i];
    vb_error err;
    if (vb_store_item_start(c->store, it->key, p->id, &err)) {
        say(c, "vbench: %s", err.message);
        return VB_ERROR;
    }
    item_limit_reset(c, i);
    c->runs[i].attempt++;   /* as vb_store_item_start counted it */
    c->runs[i].live = 1;
    if (c->runs[i].attempt > 1)
        vb_store_event(c->store, "info", it->key, "coordinator", "attempt %u on agent %s", c->runs[i].attempt, p->id);
    send_assign(c, p, i, 1);
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

/* An engine that returned the same id twice in an answer: scored with the repeats as misses and kept as a
 * validity finding (v_validity), said here so the terminal shows it as it happens. */
static void say_duplicates(campaign *c, const char *item, uint64_t answers, uint64_t queries, const char *example) {
    if (answers == 0) return;
    say(c, "%s: %llu of %llu answers repeated an id (first: %s); the repeats count as misses", item,
        (unsigned long long)answers, (unsigned long long)queries, example && *example ? example : "not recorded");
}

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
        say_duplicates(c, r->item_key, w->duplicate_answers, w->queries, w->duplicate_example);
    } else if (r->body_case == VBENCH__RESULT__BODY_WINDOW) {
        const Vbench__WindowResult *w = r->window;
        say(c, "%s: %.0f QPS, in flight %.2f of %u clients, %llu errors, client CPU %.2fs", r->item_key, w->qps,
            w->window_s > 0 ? w->in_call_s / w->window_s : 0, w->clients, (unsigned long long)w->errors, w->client_cpu_s);
    } else if (r->body_case == VBENCH__RESULT__BODY_FILTERED) {
        const Vbench__FilteredResult *f = r->filtered;
        say(c, "%s: %s (%llu rows pass), recall %.4f, %.0f QPS, %llu short answers of %llu", r->item_key, f->filter,
            (unsigned long long)f->passing_rows, f->recall, f->qps, (unsigned long long)f->short_answers,
            (unsigned long long)f->queries);
        say_duplicates(c, r->item_key, f->duplicate_answers, f->queries, f->duplicate_example);
    } else if (r->body_case == VBENCH__RESULT__BODY_CHURN && strcmp(r->churn->stage, "checkpoint") != 0) {
        const Vbench__ChurnResult *ch = r->churn;
        if (strcmp(ch->stage, "before") == 0 || strcmp(ch->stage, "after") == 0) {
            say(c, "%s %s: recall %.4f, %.0f QPS", r->item_key, ch->stage, ch->recall, ch->qps);
            say_duplicates(c, r->item_key, ch->duplicate_answers, ch->queries, ch->duplicate_example);
        } else
            say(c, "%s %s: %llu of %llu rows in %.2fs (%.0f rows/s)", r->item_key, ch->stage,
                (unsigned long long)ch->rows_done, (unsigned long long)ch->rows_planned, ch->seconds, ch->rows_per_s);
    }
}

static void on_result(campaign *c, peer *p, const Vbench__Result *r) {
    int i = item_index(c, r->item_key);
    if (i < 0) {
        vb_store_event(c->store, "warn", r->item_key, p->id, "result %s for an item not in the plan: ignored", r->result_key);
        send_ack(c, p, r->result_key, r->attempt);
        return;
    }
    if (!attempt_current(c, i, r->attempt)) {
        /* A late copy from an interrupted attempt: the item runs (or ran) again; recording this one as well
         * would count the measurement twice. The agent may forget it. */
        vb_store_event(c->store, "warn", r->item_key, p->id,
                       "result %s of attempt %u arrived after that attempt was interrupted: not recorded (the item's "
                       "attempt is now %u, %s)", r->result_key, r->attempt, c->runs[i].attempt,
                       c->items[i] == ITEM_DONE ? "done" : c->items[i] == ITEM_RUNNING ? "running" : "to run again");
        send_ack(c, p, r->result_key, r->attempt);
        return;
    }
    int dup = 0;
    vb_error err;
    if (vb_store_commit_result(c->store, r, item_engine(c, i), item_dataset(c, i), p->id, &dup, &err) != VB_OK) {
        /* A result that can never be stored (a NaN where the schema wants a number, an inconsistent histogram:
         * SQLite's constraint / mismatch / too big / range codes, or the store's own 9) is acknowledged, so the
         * agent stops resending it, and fails its item with the reason; anything else (disk full, a lock) is
         * not acknowledged: the agent keeps it and sends it again. */
        int poison = err.code == 9 || err.code == 18 || err.code == 19 || err.code == 20 || err.code == 25;
        say(c, "vbench: could not record result %s: %s", r->result_key, err.message);
        if (!poison) return;
        send_ack(c, p, r->result_key, r->attempt);
        if (c->items[i] == ITEM_RUNNING || c->items[i] == ITEM_DONE) {
            char why[1200];
            snprintf(why, sizeof why, "its result %s could not be recorded: %.1000s", r->result_key, err.message);
            fail_item(c, i, "results", why);
        }
        return;
    }
    send_ack(c, p, r->result_key, r->attempt);
    if (dup) return;
    if (r->body_case == VBENCH__RESULT__BODY_BUILD) {
        char key[256];
        snprintf(key, sizeof key, "engine.%s.version", item_engine(c, i));
        vb_store_manifest_set(c->store, key, r->build->engine_version, NULL);
        snprintf(key, sizeof key, "dataset.%s.content_hash", item_dataset(c, i));
        vb_store_manifest_set(c->store, key, r->build->dataset_hash, NULL);
    }
    print_result(c, r);
    if (r->completes_item && c->items[i] == ITEM_FAILED) {
        /* Kept for the record, but the item failed before this arrived (its server died): it stays failed. */
        vb_store_item_finish(c->store, r->item_key, "failed", "the item's server died while it ran", NULL);
        return;
    }
    if (r->completes_item && c->items[i] != ITEM_DONE) {
        c->items[i] = ITEM_DONE;
        note_finished(c, i);
        if (c->running == i) c->running = -1;
    }
}

/* ---- servers (engines with a recipe) ------------------------------------------------------------------------ */

static int engine_index(campaign *c, const char *name) {
    for (size_t i = 0; i < c->profile->n_engines; i++)
        if (strcmp(c->profile->engines[i].name, name) == 0) return (int)i;
    return -1;
}

static const char *engine_recipe(campaign *c, int e) { return vb_profile_engine_recipe(&c->profile->engines[e]); }

static peer *orchestrator_peer(campaign *c, const char *prefer) {
    peer *any = NULL;
    for (size_t i = 0; i < c->n_peers; i++) {
        peer *p = &c->peers[i];
        if (p->state == AGENT_LOST || !strstr(p->roles, "orchestrator")) continue;
        if (prefer && prefer[0] && strcmp(p->id, prefer) == 0) return p;
        if (!any) any = p;
    }
    return any;
}

typedef struct kvbuild {
    vb_kv kv[32];
    char vals[32][96];
    size_t n;
} kvbuild;

static void kvbuild_add(void *ctx, const char *key, const char *value) {
    kvbuild *b = ctx;
    if (b->n == 32) return;
    snprintf(b->vals[b->n], sizeof b->vals[b->n], "%s", value);
    b->kv[b->n] = (vb_kv){key, b->vals[b->n]};
    b->n++;
}

static void send_server_request(campaign *c, peer *p, int e, const char *action, const char *item_key,
                                const kvbuild *budget) {
    Vbench__ServerRequest rq = VBENCH__SERVER_REQUEST__INIT;
    rq.engine = c->profile->engines[e].name;
    rq.recipe = (char *)engine_recipe(c, e);
    rq.action = (char *)action;
    rq.item_key = (char *)(item_key ? item_key : "");
    rq.campaign = c->profile->name;
    if (budget) {
        rq.n_budget = budget->n;
        rq.budget = vb_wire_kv_make(budget->kv, budget->n);
    }
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_SERVER_REQUEST;
    env.server_request = &rq;
    send_to(c, p, &env);
    vb_wire_kv_free(rq.budget, rq.n_budget);
}

static void server_set_failure(server *sv, const char *message, const char *tail) {
    snprintf(sv->failure, sizeof sv->failure, "%s%s%.3000s", message, tail && *tail ? "\nlog tail:\n" : "",
             tail && *tail ? tail : "");
}

/* Asks the orchestrator to start engine e's server under the budget resolved for the orchestrator's host. */
static void server_start(campaign *c, int e) {
    server *sv = &c->servers[e];
    peer *p = orchestrator_peer(c, sv->orchestrator);
    if (!p) return; /* not joined yet: the main loop waits (HELLO_WAIT_NS) */
    vb_budget b;
    vb_error err;
    if (vb_budget_resolve(c->profile, p->cores, p->memory_bytes, &b, &err) != VB_OK) {
        sv->state = SRV_FAILED;
        server_set_failure(sv, err.message, NULL);
        vb_store_server_log(c->store, c->profile->engines[e].name, NULL, "failed", err.message, NULL, NULL);
        return;
    }
    kvbuild kb = {.n = 0};
    vb_budget_each(&b, kvbuild_add, &kb);
    for (size_t i = 0; i < kb.n; i++) {
        char key[256];
        snprintf(key, sizeof key, "server.%s.budget.%s", c->profile->engines[e].name, kb.kv[i].key);
        vb_store_manifest_set(c->store, key, kb.kv[i].value, NULL);
    }
    snprintf(sv->orchestrator, sizeof sv->orchestrator, "%s", p->id);
    sv->state = SRV_STARTING;
    sv->since_ns = vb_now_ns();
    say(c, "starting the %s server (recipe %s) on %s: CPUs %s, memory %.1f GiB, /dev/shm %.1f GiB",
        c->profile->engines[e].name, engine_recipe(c, e), p->id, b.server_cpus, (double)b.server_memory / 1073741824.0,
        (double)b.shm / 1073741824.0);
    send_server_request(c, p, e, "start", NULL, &kb);
}

static void server_stop(campaign *c, int e) {
    server *sv = &c->servers[e];
    peer *p = orchestrator_peer(c, sv->orchestrator);
    if (!p) {
        sv->state = SRV_STOPPED;
        return;
    }
    sv->state = SRV_STOPPING;
    sv->since_ns = vb_now_ns();
    say(c, "stopping the %s server", c->profile->engines[e].name);
    send_server_request(c, p, e, "stop", NULL, NULL);
}

static int engine_has_pending(campaign *c, int e) {
    for (size_t i = 0; i < c->plan->n_items; i++)
        if ((int)c->plan->items[i].engine == e && (c->items[i] == ITEM_PENDING || c->items[i] == ITEM_RUNNING)) return 1;
    return 0;
}

/* Whether item i may be assigned now: 1 yes; 0 wait (its server is starting, or another server must stop
 * first: one server at a time, so no two databases share the budget); the item is failed here when its
 * server cannot run. */
static int server_ready_for(campaign *c, int i) {
    int e = (int)c->plan->items[i].engine;
    if (!engine_recipe(c, e)) return 1;
    server *sv = &c->servers[e];
    switch (sv->state) {
    case SRV_READY: return 1;
    case SRV_STARTING:
    case SRV_STOPPING: return 0;
    case SRV_FAILED: fail_item(c, i, "server", sv->failure); return 0;
    case SRV_NONE:
    case SRV_STOPPED:
        for (size_t j = 0; j < c->profile->n_engines; j++)
            if ((int)j != e && (c->servers[j].state == SRV_READY || c->servers[j].state == SRV_STARTING ||
                                c->servers[j].state == SRV_STOPPING))
                return 0;
        server_start(c, e);
        return 0;
    }
    return 0;
}

/* For an item on a server: asks the orchestrator whether the server is alive (and to tag its samples with the
 * item from now on), and says yes once it answered. An orchestrator that does not answer within 30 s is not
 * waited for (logged). */
static int server_confirmed(campaign *c, int i) {
    int e = (int)c->plan->items[i].engine;
    if (!engine_recipe(c, e)) return 1;
    server *sv = &c->servers[e];
    if (sv->phase_item != i) {
        peer *orch = orchestrator_peer(c, sv->orchestrator);
        if (!orch) return 1;
        sv->phase_item = i;
        sv->phase_ok = 0;
        sv->phase_sent_ns = vb_now_ns();
        send_server_request(c, orch, e, "phase", c->plan->items[i].key, NULL);
        return 0;
    }
    if (!sv->phase_ok && vb_now_ns() - sv->phase_sent_ns > 30000000000ull) {
        vb_store_event(c->store, "warn", c->plan->items[i].key, "coordinator",
                       "the orchestrator did not confirm the %s server within 30 s; running the item anyway",
                       c->profile->engines[e].name);
        sv->phase_ok = 1;
    }
    if (sv->phase_ok) sv->phase_item = -1;
    return sv->phase_ok;
}

/* Stops servers whose engine has nothing left to run; times out requests the orchestrator never answered.
 * Returns 1 while a server still needs attention (the campaign ends only after every server stopped). */
static int servers_housekeeping(campaign *c) {
    int busy = 0;
    uint64_t now = vb_now_ns();
    long start_timeout = atol(vb_profile_setting(c->profile, "limits.server_start_timeout_s", "300"));
    for (size_t e = 0; e < c->profile->n_engines; e++) {
        server *sv = &c->servers[e];
        const char *name = c->profile->engines[e].name;
        if (sv->state == SRV_READY && !engine_has_pending(c, (int)e)) server_stop(c, (int)e);
        uint64_t waited = now > sv->since_ns ? now - sv->since_ns : 0;
        if (sv->state == SRV_STARTING && waited > (uint64_t)start_timeout * 1000000000ull) {
            char msg[256];
            snprintf(msg, sizeof msg, "the %s server did not become ready within limits.server_start_timeout_s = %ld s",
                     name, start_timeout);
            sv->state = SRV_FAILED;
            server_set_failure(sv, msg, NULL);
            vb_store_server_log(c->store, name, NULL, "failed", msg, NULL, NULL);
            say(c, "vbench: %s", msg);
        }
        if (sv->state == SRV_STOPPING && waited > 900ull * 1000000000ull) {
            vb_store_server_log(c->store, name, NULL, "failed", "no answer to the stop request within 900 s", NULL, NULL);
            sv->state = SRV_STOPPED;
        }
        busy |= sv->state == SRV_STARTING || sv->state == SRV_STOPPING || sv->state == SRV_READY;
    }
    return busy;
}

static void record_facts(campaign *c, const char *engine, const char *prefix, Vbench__KV **kv, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char key[512];
        snprintf(key, sizeof key, "server.%s.%s%s", engine, prefix, kv[i]->key);
        vb_store_manifest_set(c->store, key, kv[i]->value, NULL);
    }
}

/* The server died while it should have been serving: the item that ran on it fails (its numbers would be
 * about a dead server), and limits.on_server_failure decides what comes next. */
static void server_died(campaign *c, int e, const char *message, double died_at) {
    server *sv = &c->servers[e];
    const char *policy = vb_profile_setting(c->profile, "limits.on_server_failure", "restart");
    if (c->running >= 0 && (int)c->plan->items[c->running].engine == e) {
        int i = c->running;
        for (size_t j = 0; j < c->n_peers; j++)
            if (c->peers[j].state == AGENT_BUSY && c->peers[j].item == i)
                send_simple(c, &c->peers[j], VBENCH__ENVELOPE__BODY_ABORT, c->plan->items[i].key, "server died");
        fail_item(c, i, "server", sv->failure);
    } else if (sv->last_item >= 0 && c->items[sv->last_item] == ITEM_DONE && died_at > 0 &&
               died_at <= sv->last_finished + 0.5) {
        /* The item finished (its clients lost their connections and stopped) before the death was reported:
         * its numbers are about a dying server. Its results stay in the database, the item is failed. */
        fail_item(c, sv->last_item, "server", sv->failure);
    }
    sv->phase_item = -1;
    if (strcmp(policy, "restart") == 0 && sv->restarts < 2) {
        sv->restarts++;
        sv->state = SRV_NONE;
        say(c, "the %s server died (%s); starting it again for the next item (restart %d of 2)",
            c->profile->engines[e].name, message, sv->restarts);
    } else {
        sv->state = SRV_FAILED;
        say(c, "the %s server died (%s); its remaining items fail (limits.on_server_failure: %s)",
            c->profile->engines[e].name, message, policy);
    }
    if (strcmp(policy, "stop") == 0) c->stop_reason = "a server died and limits.on_server_failure is stop";
}

static void on_server_report(campaign *c, peer *p, const Vbench__ServerReport *r) {
    int e = engine_index(c, r->engine);
    if (e < 0) {
        vb_store_event(c->store, "warn", NULL, p->id, "server report for engine %s, not in this campaign", r->engine);
        return;
    }
    server *sv = &c->servers[e];
    const char *name = c->profile->engines[e].name;
    if (strcmp(r->state, "samples") == 0) {
        vb_store_server_samples(c->store, name, r->item_key, r->samples, r->n_samples, NULL);
        return;
    }
    if (strcmp(r->state, "sizes") == 0) {
        for (size_t i = 0; i < r->n_facts; i++)
            vb_store_server_size(c->store, name, r->item_key, r->facts[i]->key, atoll(r->facts[i]->value), NULL);
        if (sv->phase_item >= 0 && strcmp(r->item_key, c->plan->items[sv->phase_item].key) == 0) sv->phase_ok = 1;
        return;
    }
    vb_store_server_log(c->store, name, r->unit, r->state, r->message, r->log_tail, NULL);
    vb_store_event(c->store, strcmp(r->state, "ready") == 0 || strcmp(r->state, "stopped") == 0 ? "info" : "error",
                   NULL, p->id, "server %s %s (was %s): %s", name, r->state, server_state_name[sv->state], r->message);
    if (strcmp(r->state, "ready") == 0) {
        for (size_t i = 0; i < sv->n_connect; i++) free((char *)sv->connect[i].key), free((char *)sv->connect[i].value);
        free(sv->connect);
        sv->connect = calloc(r->n_connect ? r->n_connect : 1, sizeof *sv->connect);
        sv->n_connect = r->n_connect;
        for (size_t i = 0; i < r->n_connect; i++)
            sv->connect[i] = (vb_kv){strdup(r->connect[i]->key), strdup(r->connect[i]->value)};
        record_facts(c, name, "", r->facts, r->n_facts);
        sv->state = SRV_READY;
        const char *ready_s = "?";
        for (size_t i = 0; i < r->n_facts; i++)
            if (strcmp(r->facts[i]->key, "ready_s") == 0) ready_s = r->facts[i]->value;
        say(c, "the %s server is ready (%s, unit %s, answered after %s s)", name, r->message, r->unit, ready_s);
    } else if (strcmp(r->state, "failed") == 0) {
        server_set_failure(sv, r->message, r->log_tail);
        say(c, "FAILED the %s server: %s%s%s", name, r->message, r->log_tail[0] ? "\n" : "", r->log_tail);
        sv->state = sv->state == SRV_STOPPING ? SRV_STOPPED : SRV_FAILED;
        if (sv->state == SRV_FAILED && strcmp(vb_profile_setting(c->profile, "limits.on_server_failure", "restart"), "stop") == 0)
            c->stop_reason = "a server failed to start and limits.on_server_failure is stop";
    } else if (strcmp(r->state, "died") == 0) {
        server_set_failure(sv, r->message, r->log_tail);
        vb_store_event(c->store, "error", NULL, p->id, "%s", r->message);
        double died_at = 0;
        for (size_t i = 0; i < r->n_facts; i++)
            if (strcmp(r->facts[i]->key, "died_at") == 0) died_at = atof(r->facts[i]->value);
        server_died(c, e, r->message, died_at);
    } else if (strcmp(r->state, "stopped") == 0) {
        record_facts(c, name, "at_stop.", r->facts, r->n_facts);
        sv->state = SRV_STOPPED;
    }
}

/* ---- the agent state machine ------------------------------------------------------------------------------ */

static peer *find_peer(campaign *c, const char *id) {
    for (size_t i = 0; i < c->n_peers; i++)
        if (strcmp(c->peers[i].id, id) == 0) return &c->peers[i];
    return NULL;
}

static void set_idle(peer *p) {
    p->state = AGENT_IDLE;
    p->item = -1;
    p->drain_key[0] = '\0';
}

/* "Say hello": to the sender of a message we cannot place (we restarted, or marked it lost). */
static void ask_hello(campaign *c, zframe_t *routing) {
    Vbench__Heartbeat hb = VBENCH__HEARTBEAT__INIT;
    hb.hello_again = 1;
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    vb_wire_send(c->router, routing, &env, NULL);
}

/* The orphan's attempt is gone (its agent came back without it, or did not come back in time): the item runs
 * again. Written with a reason, so that the next coordinator process does not wait for it either. */
static void orphan_gone(campaign *c, const char *why) {
    int i = c->orphan;
    c->orphan = -1;
    if (i < 0 || c->items[i] != ITEM_PENDING) return;
    c->runs[i].live = 0;
    char text[600];
    snprintf(text, sizeof text, "attempt %u ran when the coordinator stopped; %s", c->runs[i].attempt, why);
    vb_store_item_finish(c->store, c->plan->items[i].key, "interrupted", text, NULL);
    vb_store_event(c->store, "warn", c->plan->items[i].key, "coordinator", "%s: the item runs again", text);
}

/* Where the agent's hello leaves the item it says it runs (or finished) and the item we had it run:
 *   we had it run X, and it runs or finished X under the same attempt  -> it reconnected: still busy with X
 *   we had it run X, another process says otherwise                   -> it restarted: X interrupted
 *   we had it run X, the same process runs nothing or finished another -> our Assign and its hello crossed (or
 *                                                                        the Assign was lost): send it again
 *   we had it run X, the same process runs another item                -> X did not take: back to the plan
 *   it runs Y, Y is the orphan of our previous process, same attempt    -> taken over: busy with Y
 *   it runs Y otherwise                                                 -> abort Y: draining until its end
 *   it finished Y otherwise (its end is in its outbox)                  -> idle (the end comes in as stale)
 * Returns a word for the event. */
static const char *hello_item(campaign *c, peer *p, const Vbench__Hello *h, int same_process) {
    int y = h->item_key[0] ? item_index(c, h->item_key) : -1;
    unsigned att = h->item_attempt;
    if (p->state == AGENT_BUSY && p->item >= 0) {
        int x = p->item;
        if (y == x && att == c->runs[x].attempt) return h->item_finished ? "reconnected, item finished" : "reconnected, item running";
        if (!same_process) {
            interrupt_item(c, x, "the agent restarted during the item", 1);
        } else if (!h->item_key[0] || h->item_finished) {
            if (c->items[x] == ITEM_RUNNING) {
                send_assign(c, p, x, 0);
                vb_store_event(c->store, "info", c->plan->items[x].key, "coordinator",
                               "agent %s had not received attempt %u: its Assign sent again", p->id, c->runs[x].attempt);
                return "busy: the Assign it had not received sent again";
            }
        } else {
            char why[700];
            snprintf(why, sizeof why, "agent %s was still running %s when it was assigned", p->id, h->item_key);
            interrupt_item(c, x, why, 0);
        }
    }
    if (p->state == AGENT_DRAINING && !h->item_finished && strcmp(h->item_key, p->drain_key) == 0 && att == p->drain_attempt)
        return "reconnected, still stopping a stale item";
    set_idle(p);
    if (y >= 0 && !h->item_finished && att == c->runs[y].attempt && c->runs[y].live && c->items[y] == ITEM_RUNNING &&
        c->running == y) {
        /* It runs the current attempt of the running item: our view of it was behind (an end of an older
         * attempt made it idle here). It is busy with it. */
        p->state = AGENT_BUSY;
        p->item = y;
        return "reconnected, item running";
    }
    if (y >= 0 && y == c->orphan) {
        if (att == c->runs[y].attempt && c->items[y] == ITEM_PENDING && c->running < 0 &&
            !engine_recipe(c, (int)c->plan->items[y].engine)) {
            c->items[y] = ITEM_RUNNING;
            c->running = y;
            item_limit_reset(c, y);
            p->state = AGENT_BUSY;
            p->item = y;
            p->item_started_ns = vb_now_ns();
            vb_store_item_adopt(c->store, h->item_key, p->id, NULL);
            vb_store_event(c->store, "info", h->item_key, "coordinator",
                           "agent %s still %s attempt %u after the coordinator restarted: taken over, not run again",
                           p->id, h->item_finished ? "has the results of" : "runs", att);
            say(c, "%s: agent %s %s attempt %u: taken over", h->item_key, p->id,
                h->item_finished ? "has the results of" : "still runs", att);
            c->orphan = -1;
            return "took over its item";
        }
    }
    if (h->item_key[0] && !h->item_finished) {
        /* Its attempt is no longer current: stop it, and give the agent nothing until it has. */
        Vbench__Abort ab = VBENCH__ABORT__INIT;
        ab.item_key = h->item_key;
        ab.reason = "this attempt is no longer current";
        Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
        env.body_case = VBENCH__ENVELOPE__BODY_ABORT;
        env.abort = &ab;
        send_to(c, p, &env);
        p->state = AGENT_DRAINING;
        snprintf(p->drain_key, sizeof p->drain_key, "%s", h->item_key);
        p->drain_attempt = att;
        vb_store_event(c->store, "warn", h->item_key, "coordinator",
                       "agent %s runs attempt %u, which is no longer current (the item's attempt is %u): told to stop it",
                       p->id, att, y >= 0 ? c->runs[y].attempt : 0);
        return "draining a stale item";
    }
    return h->item_key[0] ? "idle, a stale item finished" : "idle";
}

static void on_hello(campaign *c, peer *p, zframe_t *routing, const char *id, const Vbench__Hello *h) {
    if (h->protocol != VB_PROTOCOL_VERSION) {
        vb_store_event(c->store, "error", NULL, "coordinator", "agent %s speaks protocol %u, this coordinator %d: refused",
                       id, h->protocol, VB_PROTOCOL_VERSION);
        return;
    }
    int known = p != NULL;
    const char *was = p ? agent_state_name[p->state] : "new";
    int same_process = p && h->instance && p->instance == h->instance;
    if (same_process && h->seq && h->seq <= p->hello_seq) return;   /* an older hello, overtaken on another connection */
    if (!p) {
        c->peers = realloc(c->peers, (c->n_peers + 1) * sizeof *c->peers);
        p = &c->peers[c->n_peers++];
        memset(p, 0, sizeof *p);
        snprintf(p->id, sizeof p->id, "%s", id);
        set_idle(p);
    }
    zframe_destroy(&p->routing);
    p->routing = zframe_dup(routing);
    p->send_failed = 0;
    p->roles[0] = '\0';
    for (size_t i = 0; i < h->n_roles; i++)
        snprintf(p->roles + strlen(p->roles), sizeof p->roles - strlen(p->roles), "%s%s", i ? "," : "", h->roles[i]);
    p->cores = (int)h->cores;
    p->memory_bytes = h->memory_bytes;
    p->last_heard_ns = vb_now_ns();
    p->instance = h->instance;
    p->hello_seq = h->seq;
    const char *now = hello_item(c, p, h, same_process);
    /* The orphan's agent came back without it: that attempt is gone with the agent's previous process. */
    if (c->orphan >= 0 && strcmp(c->orphan_agent, p->id) == 0) {
        orphan_gone(c, "its agent came back without it");
    }
    vb_store_agent_seen(c->store, h, NULL);
    if (!known)
        vb_store_event(c->store, "info", NULL, "coordinator", "agent %s (%s, pid %llu, roles %s) joined%s%s; outbox %u",
                       p->id, h->host, (unsigned long long)h->pid, p->roles, strcmp(now, "idle") ? ": " : "",
                       strcmp(now, "idle") ? now : "", h->outbox);
    else
        vb_store_event(c->store, strcmp(was, "lost") == 0 ? "warn" : "info", NULL, "coordinator",
                       "agent %s (%s, pid %llu) said hello again (was %s): %s; outbox %u", p->id, h->host,
                       (unsigned long long)h->pid, was, now, h->outbox);
    if (known) say(c, "agent %s is back (was %s): %s", p->id, was, now);
    Vbench__Welcome w = VBENCH__WELCOME__INIT;
    w.campaign = c->profile->name;
    w.heartbeat_ms = HEARTBEAT_MS;
    w.silent_ms = (uint32_t)(c->silent_ns / 1000000ull);
    Vbench__Envelope out = VBENCH__ENVELOPE__INIT;
    out.body_case = VBENCH__ENVELOPE__BODY_WELCOME;
    out.welcome = &w;
    send_to(c, p, &out);
}

/* The end of an attempt (Done or Failed). Only the current attempt moves the item; the agent becomes idle
 * when it is the end of what it ran (or drained). */
static void on_item_end(campaign *c, peer *p, const char *item_key, unsigned attempt, const char *ack_key,
                        const Vbench__Failed *failed) {
    int i = item_index(c, item_key);
    if (ack_key && ack_key[0]) send_ack(c, p, ack_key, attempt);
    int ran_it = (p->state == AGENT_BUSY && p->item == i && i >= 0 && attempt == c->runs[i].attempt) ||
                 (p->state == AGENT_DRAINING && strcmp(p->drain_key, item_key) == 0 && p->drain_attempt == attempt);
    if (attempt_current(c, i, attempt)) {
        if (failed && c->items[i] == ITEM_RUNNING) {
            fail_item(c, i, failed->domain, failed->message);
        } else if (!failed && c->items[i] == ITEM_RUNNING) {
            /* Done without a completing result: the phase produced nothing to record. */
            c->items[i] = ITEM_DONE;
            vb_store_item_finish(c->store, item_key, "done", NULL, NULL);
            note_finished(c, i);
        }
        if (c->running == i) c->running = -1;
    } else {
        vb_store_event(c->store, p->state == AGENT_DRAINING ? "info" : "warn", item_key, p->id,
                       "%s of attempt %u%s%s arrived after that attempt was interrupted: not recorded",
                       failed ? "failure" : "end", attempt, failed ? ": " : "", failed ? failed->message : "");
    }
    if (ran_it) set_idle(p);
}

/* Handles one message from an agent. The transitions (states: see agent_state):
 *   any        --hello-->                 idle, busy or draining: see hello_item()
 *   idle|busy|draining --heartbeat/log/progress--> same
 *   busy       --result-->                busy   (commit if its attempt is current, then ack)
 *   busy       --done/failed-->           idle
 *   draining   --done/failed of the stale item--> idle
 *   lost, or not known --anything but hello--> same; asked to say hello (Heartbeat.hello_again)
 *   idle|busy|draining --silence (limits.agent_silent_s)--> lost (see check_liveness; busy: item interrupted)
 *   busy       --its local process died--> lost (see watch_local_agents; item interrupted) */
static void agent_on(campaign *c, zframe_t *routing, Vbench__Envelope *env) {
    char *id = zframe_strdup(routing);
    peer *p = find_peer(c, id);
    if (env->body_case == VBENCH__ENVELOPE__BODY_HELLO) {
        on_hello(c, p, routing, id, env->hello);
        free(id);
        return;
    }
    free(id);
    if (!p || p->state == AGENT_LOST) {
        /* Not welcomed by this process, or marked lost: anything it sends waits in its outbox until it said
         * hello again and was welcomed. */
        if (p && p->last_heard_ns + c->silent_ns < vb_now_ns())
            vb_store_event(c->store, "info", NULL, "coordinator", "agent %s (lost) is heard again: asked to say hello",
                           p->id);
        if (p) p->last_heard_ns = vb_now_ns();
        ask_hello(c, routing);
        return;
    }
    p->last_heard_ns = vb_now_ns();
    switch (env->body_case) {
    case VBENCH__ENVELOPE__BODY_HEARTBEAT: break;
    case VBENCH__ENVELOPE__BODY_PROGRESS: {
        const Vbench__Progress *pr = env->progress;
        if (c->running >= 0 && strcmp(pr->item_key, c->plan->items[c->running].key) == 0 && p->state == AGENT_BUSY &&
            p->item == c->running) {
            if (c->plan->items[c->running].kind == VB_PHASE_CHURN && strcmp(pr->stage, "reinsert") == 0 &&
                c->limit_deadline_ns == 0) {
                c->limit_deadline_ns = vb_now_ns() + (uint64_t)c->limit_s * 1000000000ull;
                vb_store_event(c->store, "info", pr->item_key, "coordinator", "reinsert started; limit %ld s", c->limit_s);
            }
            /* The limit is the reinsert's (SPEC 1): once the agent moved on to maintenance and the after
             * measurement, the clock stops, so a deadline that falls just after the last row cannot abort them. */
            if (c->plan->items[c->running].kind == VB_PHASE_CHURN && strcmp(pr->stage, "maintain") == 0)
                c->limit_deadline_ns = c->limit_aborted_ns = 0; /* the agent ignores a late limit abort too */
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
    case VBENCH__ENVELOPE__BODY_SERVER_REPORT: on_server_report(c, p, env->server_report); break;
    case VBENCH__ENVELOPE__BODY_DONE:
        on_item_end(c, p, env->done->item_key, env->done->attempt, env->done->key, NULL);
        break;
    case VBENCH__ENVELOPE__BODY_FAILED:
        on_item_end(c, p, env->failed->item_key, env->failed->attempt, env->failed->key, env->failed);
        break;
    default:
        vb_store_event(c->store, "warn", NULL, "coordinator", "unexpected %s from agent %s", vb_wire_body_name(env), p->id);
    }
}

static void check_liveness(campaign *c) {
    uint64_t now = vb_now_ns();
    for (size_t i = 0; i < c->n_peers; i++) {
        peer *p = &c->peers[i];
        if (p->state == AGENT_LOST || now - p->last_heard_ns < c->silent_ns) continue;
        vb_store_event(c->store, "error", NULL, "coordinator",
                       "agent %s silent for %.1f s (limits.agent_silent_s = %.0f): marked lost (was %s)", p->id,
                       (double)(now - p->last_heard_ns) / 1e9, (double)c->silent_ns / 1e9, agent_state_name[p->state]);
        say(c, "agent %s silent for %.1f s: marked lost", p->id, (double)(now - p->last_heard_ns) / 1e9);
        if (p->state == AGENT_BUSY) {
            char why[300];
            snprintf(why, sizeof why, "its agent %s went silent", p->id);
            interrupt_item(c, p->item, why, 1);
        }
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

/* Local mode: a client agent always, and an orchestrator agent when a selected engine has a recipe. Separate
 * processes, like agents on other hosts; each restarted up to MAX_LOCAL_RESPAWNS times if it dies. */
static int spawn_local_agent(campaign *c, int which, vb_error *err) {
    local_agent *la = &c->local[which];
    const char *argv[24];
    int n = 0;
    argv[n++] = c->o->agent_bin;
    argv[n++] = "--connect";
    argv[n++] = c->endpoint;
    argv[n++] = "--id";
    argv[n++] = la->id;
    argv[n++] = "--roles";
    argv[n++] = la->roles;
    argv[n++] = "--workdir";
    argv[n++] = c->work_dir;
    argv[n++] = "--exit-with-parent";
    if (c->o->cache_dir) {
        argv[n++] = "--cache-dir";
        argv[n++] = c->o->cache_dir;
    }
    if (la->cpus[0]) {
        argv[n++] = "--cpus";
        argv[n++] = la->cpus;
    }
    if (strcmp(la->roles, "orchestrator") == 0) {
        if (c->o->recipes_dir) argv[n++] = "--recipes", argv[n++] = c->o->recipes_dir;
        if (c->o->images_dir) argv[n++] = "--images", argv[n++] = c->o->images_dir;
        if (c->o->bus_address) argv[n++] = "--bus", argv[n++] = c->o->bus_address;
    }
    if (c->zap && !la->cert[0] &&
        vb_transport_zap_local_agent(c->zap, c->run_dir, la->id, la->cert, sizeof la->cert, c->agent_server_key,
                                     sizeof c->agent_server_key, err) != VB_OK)
        return VB_ERROR;
    if (la->cert[0]) {
        argv[n++] = "--cert";
        argv[n++] = la->cert;
        argv[n++] = "--server-key";
        argv[n++] = c->agent_server_key;
    }
    argv[n] = NULL;
    int rc = posix_spawn(&la->pid, c->o->agent_bin, NULL, NULL, (char *const *)argv, environ);
    if (rc != 0)
        return vb_error_set(err, "coordinator", rc, "cannot start the local agent %s: %s", c->o->agent_bin, strerror(rc));
    return VB_OK;
}

static void watch_local_agents(campaign *c) {
    for (int k = 0; k < c->n_local; k++) {
        local_agent *la = &c->local[k];
        int status;
        if (la->pid <= 0 || waitpid(la->pid, &status, WNOHANG) != la->pid) continue;
        la->pid = 0;
        char how[64];
        if (WIFSIGNALED(status)) snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(status));
        else snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(status));
        vb_store_event(c->store, "error", NULL, "coordinator", "local agent %s %s", la->id, how);
        peer *p = find_peer(c, la->id);
        if (p) {
            if (p->state == AGENT_BUSY) {
                char why[128];
                snprintf(why, sizeof why, "the local agent %s", how);
                interrupt_item(c, p->item, why, 1);
            }
            p->state = AGENT_LOST;
            p->item = -1;
        }
        if (la->respawns++ < MAX_LOCAL_RESPAWNS) {
            say(c, "local agent %s %s; starting it again", la->id, how);
            vb_error err;
            if (spawn_local_agent(c, k, &err)) say(c, "vbench: %s", err.message);
        }
    }
}

static void stop_local_agents(campaign *c) {
    for (int k = 0; k < c->n_local; k++) {
        local_agent *la = &c->local[k];
        if (la->pid <= 0) continue;
        for (int i = 0; i < 50 && la->pid > 0; i++) {
            if (waitpid(la->pid, NULL, WNOHANG) == la->pid) la->pid = 0;
            else vb_sleep_ns(100000000ull);
        }
        if (la->pid <= 0) continue;
        kill(la->pid, SIGTERM);
        waitpid(la->pid, NULL, 0);
        la->pid = 0;
    }
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

/* Decisions of the ZAP handler and failed handshakes: refusals go to the events table and the terminal. */
static void on_peer(void *arg, const vb_transport_peer *p) {
    campaign *c = arg;
    char line[1024];
    vb_transport_peer_describe(p, line, sizeof line);
    vb_store_event(c->store, p->verdict == VB_TRANSPORT_ALLOWED ? "info" : "warn", NULL, "transport", "%s", line);
    if (p->verdict != VB_TRANSPORT_ALLOWED) say(c, "vbench: %s", line);
}

static int prepare(campaign *c, vb_error *err) {
    const vb_campaign_opts *o = c->o;
    if (!o->resume) {
        if (vb_profile_load(o->profile, &c->profile, err)) return VB_ERROR;
        if (vb_profile_select_engines(c->profile, o->engines, err)) return VB_ERROR;
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
        if (rc == VB_OK) rc = vb_profile_select_engines(c->profile, engines, err);
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
    c->orphan = -1;
    if (vb_store_begin_run(c->store, o->retry_failed, err) || (o->resume && find_orphan(c, err)) ||
        load_item_states(c, err))
        return VB_ERROR;
    const char *t = vb_profile_setting(c->profile, "limits.phase_timeout_s", "3600");
    c->phase_timeout_s = atol(t) > 0 ? atol(t) : 3600;
    double silent = atof(vb_profile_setting(c->profile, "limits.agent_silent_s", "15"));
    c->silent_ns = (uint64_t)((silent >= 1 ? silent : 15) * 1e9);
    long attempts = atol(vb_profile_setting(c->profile, "limits.max_attempts", "3"));
    c->max_attempts = attempts >= 1 ? (unsigned)attempts : 3;
    c->rerun_lost = strcmp(vb_profile_setting(c->profile, "limits.on_agent_lost", "rerun"), "fail") != 0;
    if (c->orphan >= 0) {
        c->orphan_deadline_ns = vb_now_ns() + c->silent_ns;
        say(c, "%s was running on agent %s when the coordinator stopped: waiting up to %.0f s for that agent",
            c->plan->items[c->orphan].key, c->orphan_agent, (double)c->silent_ns / 1e9);
    }
    snprintf(c->work_dir, sizeof c->work_dir, "%s.d", o->out);
    mkdir(c->work_dir, 0755);
    snprintf(c->run_dir, sizeof c->run_dir, "/tmp/vbench-%d-XXXXXX", (int)getpid());
    if (!mkdtemp(c->run_dir))
        return vb_error_set(err, "coordinator", errno, "cannot create a run directory in /tmp: %s", strerror(errno));
    snprintf(c->endpoint, sizeof c->endpoint, "ipc://%s/coordinator.sock", c->run_dir);
    c->router = zsock_new(ZMQ_ROUTER);
    zsock_set_router_mandatory(c->router, 1);
    /* An agent that reconnects on a new socket (after a cut link) while its old connection still looks open
     * here takes over its routing id, instead of being refused as a duplicate. */
    zsock_set_router_handover(c->router, 1);
    /* Agents on other hosts: the rules, keys and allow-list are proto/transport's. Under CURVE the local agent
     * (same ROUTER, over ipc) gets throw-away keys in the run directory. */
    if (o->listen || o->cert || o->allow_dir) {
        const char *insecure = vb_profile_setting(c->profile, "transport.insecure", "false");
        vb_transport_opts t = {.endpoint = o->listen, .cert = o->cert, .allow_dir = o->allow_dir,
                               .insecure = strcmp(insecure, "true") == 0, .on_peer = on_peer, .on_peer_arg = c};
        if (!o->listen) return vb_error_set(err, "coordinator", 1, "--cert and --allow go with --listen tcp://ADDR:PORT");
        if (vb_transport_server_setup(c->router, &t, &c->zap, err) != VB_OK) return VB_ERROR;
        say(c, "listening for agents on %s (%s)", zsock_endpoint(c->router),
            c->zap ? "CURVE" : "plain TCP on loopback: insecure");
        /* In the manifest: which coordinator (key) the agents talked to, so a published run names its keys. */
        vb_store_manifest_set(c->store, "transport.listen", o->listen, NULL);
        vb_store_manifest_set(c->store, "transport.security", c->zap ? "curve" : "insecure", NULL);
        if (c->zap) vb_store_manifest_set(c->store, "transport.coordinator_key", vb_transport_zap_server_key(c->zap), NULL);
    }
    if (zsock_bind(c->router, "%s", c->endpoint) < 0)
        return vb_error_set(err, "coordinator", zmq_errno(), "cannot bind %s: %s", c->endpoint, zmq_strerror(zmq_errno()));
    c->servers = calloc(c->profile->n_engines ? c->profile->n_engines : 1, sizeof *c->servers);
    for (size_t e = 0; e < c->profile->n_engines; e++) {
        c->need_orchestrator |= engine_recipe(c, (int)e) != NULL;
        c->servers[e].phase_item = c->servers[e].last_item = -1;
    }
    c->local[0] = (local_agent){.id = "local-client", .roles = "client"};
    c->n_local = o->no_local_agents ? 0 : 1;
    if (o->agent_cpus) snprintf(c->local[0].cpus, sizeof c->local[0].cpus, "%s", o->agent_cpus);
    if (c->need_orchestrator) {
        /* A server on this host: the client keeps to the budget's client CPUs so it does not take the server's. */
        int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
        uint64_t mem = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
        if (vb_budget_resolve(c->profile, cores, mem, &c->local_budget, err)) return VB_ERROR;
        kvbuild kb = {.n = 0};
        vb_budget_each(&c->local_budget, kvbuild_add, &kb);
        for (size_t i = 0; i < kb.n; i++) {
            char key[128];
            snprintf(key, sizeof key, "budget.%s", kb.kv[i].key);
            vb_store_manifest_set(c->store, key, kb.kv[i].value, NULL);
        }
        if (!o->agent_cpus) snprintf(c->local[0].cpus, sizeof c->local[0].cpus, "%s", c->local_budget.client_cpus);
        vb_store_manifest_set(c->store, "budget.client_cpus_applied", c->local[0].cpus, NULL);
        c->local[1] = (local_agent){.id = "local-orchestrator", .roles = "orchestrator"};
        c->n_local = o->no_local_agents ? 0 : 2;
    }
    if (o->no_local_agents && !o->listen)
        return vb_error_set(err, "coordinator", 1, "--no-local-agents needs --listen: the agents come from other hosts");
    for (int k = 0; k < c->n_local; k++)
        if (spawn_local_agent(c, k, err)) return VB_ERROR;
    return VB_OK;
}

static int next_item(campaign *c) {
    for (size_t i = 0; i < c->plan->n_items; i++)
        if (c->items[i] == ITEM_PENDING) return (int)i;
    return -1;
}

/* 1 while nothing may be assigned: the orphan's agent may still run it (until it said hello, or until
 * limits.agent_silent_s after the start), or an agent is stopping a stale item. No two measurements overlap. */
static int hold_assignments(campaign *c) {
    if (c->orphan >= 0 && c->items[c->orphan] != ITEM_PENDING) c->orphan = -1;
    if (c->orphan >= 0 && vb_now_ns() > c->orphan_deadline_ns) {
        char why[300];
        snprintf(why, sizeof why, "its agent did not come back within limits.agent_silent_s = %.0f s",
                 (double)c->silent_ns / 1e9);
        orphan_gone(c, why);
    }
    if (c->orphan >= 0) return 1;
    for (size_t i = 0; i < c->n_peers; i++)
        if (c->peers[i].state == AGENT_DRAINING) return 1;
    return 0;
}

/* Says (every 60 s, terminal and events) that item i waits for an agent with its role. */
static void note_waiting(campaign *c, int i) {
    uint64_t now = vb_now_ns();
    if (c->waiting_said_ns == 0) c->waiting_said_ns = now;   /* quiet for the first minute */
    if (now - c->waiting_said_ns < 60000000000ull) return;
    c->waiting_said_ns = now;
    char lost[512] = "";
    for (size_t k = 0; k < c->n_peers; k++)
        if (c->peers[k].state == AGENT_LOST && strstr(c->peers[k].roles, c->plan->items[i].role))
            snprintf(lost + strlen(lost), sizeof lost - strlen(lost), "%s%s", lost[0] ? ", " : "", c->peers[k].id);
    vb_store_event(c->store, "warn", c->plan->items[i].key, "coordinator", "waiting for an agent with role %s%s%s",
                   c->plan->items[i].role, lost[0] ? " (lost: " : "", lost[0] ? lost : "");
    say(c, "%s waits for an agent with role %s%s%s%s", c->plan->items[i].key, c->plan->items[i].role,
        lost[0] ? " (lost: " : "", lost, lost[0] ? ")" : "");
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
    stop_local_agents(c);
    zsock_destroy(&c->router);
    vb_transport_zap_destroy(&c->zap);   /* after the router: see proto/transport.h */
    if (c->run_dir[0] && strstr(c->run_dir, "/tmp/vbench-")) {
        char sock[400];
        snprintf(sock, sizeof sock, "%s/coordinator.sock", c->run_dir);
        unlink(sock);
        static const char *const keys[] = {"local-client.key", "local-client.pub", "coordinator.pub"};
        for (size_t i = 0; i < 3; i++) {
            snprintf(sock, sizeof sock, "%s/%s", c->run_dir, keys[i]);
            unlink(sock);
        }
        rmdir(c->run_dir);
    }
    free(c->peers);
    free(c->items);
    free(c->runs);
    for (size_t e = 0; c->servers && e < c->profile->n_engines; e++) {
        for (size_t i = 0; i < c->servers[e].n_connect; i++)
            free((char *)c->servers[e].connect[i].key), free((char *)c->servers[e].connect[i].value);
        free(c->servers[e].connect);
    }
    free(c->servers);
    vb_store_close(&c->store);
    vb_plan_destroy(&c->plan);
    vb_profile_destroy(&c->profile);
}

/* Under CURVE an agent's id is bound to its key: the allow-list name of the key that authenticated the connection
 * (libzmq's "User-Id" of every message) must be the id the agent speaks as (its routing id). Otherwise the holder
 * of one allowed key could speak for another agent: take its routing id, its items, its results. Such a message
 * is dropped and answered with a Bye that says why; the refusal is an event, once per id and key. A key taken off
 * the allow-list (SIGHUP) is refused the same way from its next message on. */
static int sender_allowed(campaign *c, zframe_t *routing, const char *key) {
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
        vb_store_event(c->store, "error", NULL, "transport", "refused messages of agent %s: %s", id, why);
        say(c, "refused messages of agent %s: %s", id, why);
    }
    Vbench__Bye bye = VBENCH__BYE__INIT;
    bye.reason = why;
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_BYE;
    env.bye = &bye;
    vb_wire_send(c->router, routing, &env, NULL);
    return 0;
}

/* SIGHUP asks for the allow-list to be read again (systemctl reload); the loop does it, not the handler. */
static volatile sig_atomic_t reload_requested;

static void on_sighup(int sig) {
    (void)sig;
    reload_requested = 1;
}

/* Reads the --allow directory again: keys added there are accepted from the next handshake on; an agent whose key
 * was taken away is sent away at its next message (sender_allowed). A broken list keeps the old one. */
static void reload_allow_list(campaign *c) {
    reload_requested = 0;
    vb_error rerr;
    vb_error_clear(&rerr);
    if (vb_transport_zap_reload(c->zap, &rerr) != VB_OK) {
        vb_store_event(c->store, "error", NULL, "transport", "allow-list not reloaded, the previous one stays: %s",
                       rerr.message);
        say(c, "allow-list not reloaded, the previous one stays: %s", rerr.message);
        return;
    }
    vb_store_event(c->store, "info", NULL, "transport", "allow-list reloaded from %s: %zu keys", c->o->allow_dir,
                   vb_transport_zap_count(c->zap));
    say(c, "allow-list reloaded from %s: %zu keys", c->o->allow_dir, vb_transport_zap_count(c->zap));
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

    if (c.zap) {   /* only with an allow-list: otherwise SIGHUP keeps its default (a closed terminal ends us) */
        struct sigaction hup = {.sa_handler = on_sighup};
        sigemptyset(&hup.sa_mask);
        sigaction(SIGHUP, &hup, NULL);
    }
    uint64_t started = vb_now_ns(), end_wait_ns = 0;
    int code = 0, interrupted = 0;
    zpoller_t *poller = zpoller_new(c.router, NULL);
    vb_transport_zap_poll_add(c.zap, poller);
    for (;;) {
        if (zsys_interrupted) {
            interrupted = 1;
            break;
        }
        if (reload_requested) reload_allow_list(&c);
        if (c.stop_reason) {
            vb_error_set(err, "coordinator", 1, "%s", c.stop_reason);
            interrupted = 1;
            break;
        }
        int next = next_item(&c);
        int servers_busy = servers_housekeeping(&c);
        if (next < 0 && c.running < 0 && !servers_busy) {
            /* All done: wait (a little) for the agents' Done of the last item, so that their outboxes end empty. */
            int ending = 0;
            for (size_t i = 0; i < c.n_peers; i++)
                ending |= c.peers[i].state == AGENT_BUSY || c.peers[i].state == AGENT_DRAINING;
            if (!ending) break;
            if (!end_wait_ns) end_wait_ns = vb_now_ns() + 30000000000ull;
            if (vb_now_ns() > end_wait_ns) break;
        }
        int hold = hold_assignments(&c);
        if (c.running < 0 && next >= 0 && !hold && server_ready_for(&c, next)) {
            peer *p = idle_peer_with_role(&c, c.plan->items[next].role);
            if (p && server_confirmed(&c, next)) {
                assign(&c, p, next);
                c.waiting_said_ns = 0;
            } else if (p) {
                /* waiting for the orchestrator's go */
            } else if (c.n_peers == 0 && vb_now_ns() - started > HELLO_WAIT_NS) {
                vb_error_set(err, "coordinator", 1, "no agent with role %s said hello within %llu s",
                             c.plan->items[next].role, HELLO_WAIT_NS / 1000000000ull);
                interrupted = 1;
                break;
            } else if (!p && c.n_peers > 0) {
                note_waiting(&c, next);
            }
        } else if (c.running < 0 && next >= 0 && engine_recipe(&c, (int)c.plan->items[next].engine) &&
                   !orchestrator_peer(&c, NULL) && vb_now_ns() - started > HELLO_WAIT_NS) {
            vb_error_set(err, "coordinator", 1, "engine %s needs a server, but no agent with role orchestrator said "
                         "hello within %llu s", item_engine(&c, next), HELLO_WAIT_NS / 1000000000ull);
            interrupted = 1;
            break;
        }
        void *which = zpoller_wait(poller, 100);
        if (vb_transport_zap_handle(c.zap, which)) {
            /* a ZAP request answered or a failed handshake reported (on_peer) */
        } else if (which == c.router) {
            zframe_t *routing = NULL;
            vb_error rerr;
            char user_id[64];
            Vbench__Envelope *env = vb_wire_recv_from(c.router, &routing, user_id, sizeof user_id, &rerr);
            if (env) {
                if (sender_allowed(&c, routing, user_id)) agent_on(&c, routing, env);
                vb_wire_free(env);
                zframe_destroy(&routing);
            } else if (!zsys_interrupted) {
                vb_store_event(c.store, "warn", NULL, "coordinator", "dropped a message: %s", rerr.message);
            }
        }
        for (size_t i = 0; i < c.n_peers; i++)
            if (c.peers[i].state != AGENT_LOST && vb_now_ns() - c.peers[i].last_sent_ns > HEARTBEAT_MS * 1000000ull)
                send_simple(&c, &c.peers[i], VBENCH__ENVELOPE__BODY_HEARTBEAT, NULL, NULL);
        check_liveness(&c);
        watch_local_agents(&c);
        int dead = 0;
        for (int k = 0; k < c.n_local; k++) dead |= c.local[k].pid == 0 && c.local[k].respawns > MAX_LOCAL_RESPAWNS;
        if (dead) {
            vb_error_set(err, "coordinator", 1, "the local agent keeps dying; see `vbench status --out %s`", o->out);
            interrupted = 1;
            break;
        }
        print_progress(&c, 0);
    }
    /* Servers still up: stop them (an interrupted campaign's servers too; resume starts them again and reuses
     * their data directories). Up to 120 s, answering the orchestrator's messages meanwhile. */
    uint64_t stop_deadline = vb_now_ns() + 120ull * 1000000000ull;
    for (;;) {
        int waiting = 0;
        for (size_t e = 0; e < c.profile->n_engines; e++) {
            if (c.servers[e].state == SRV_READY) server_stop(&c, (int)e);
            waiting |= c.servers[e].state == SRV_STOPPING || c.servers[e].state == SRV_STARTING;
        }
        if (!waiting || vb_now_ns() > stop_deadline) break;
        if (zpoller_wait(poller, 200) == c.router) {
            zframe_t *routing = NULL;
            Vbench__Envelope *env = vb_wire_recv(c.router, &routing, NULL);
            if (env) agent_on(&c, routing, env);
            vb_wire_free(env);
            zframe_destroy(&routing);
        }
        watch_local_agents(&c);
    }
    zpoller_destroy(&poller);
    clear_progress(&c);

    if (interrupted) {
        if (c.running >= 0) {
            for (size_t i = 0; i < c.n_peers; i++)
                if (c.peers[i].state == AGENT_BUSY)
                    send_simple(&c, &c.peers[i], VBENCH__ENVELOPE__BODY_ABORT, c.plan->items[c.running].key, "coordinator stopping");
            interrupt_item(&c, c.running, zsys_interrupted ? "the coordinator was interrupted" : err->message, 0);
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
