/* The coordinator's private interface: the campaign's state (plan items, agents, servers, local agents) and the
 * functions its parts share. Only coordinator/ includes it; the public entry is coordinator/campaign.h.
 *   campaign.c      the event loop, set-up and teardown; it drains the agent events after each service call
 *   agents.c        the agent machine's facts and actions, the drain of the posted events, the sender check
 *   peers.c         the agents' records (made, found) and every message sent to one; posting agent events
 *   plan_state.c    items' states and attempts, what runs next, interrupt / fail / expire / skip, the orphan
 *   local_agents.c  local mode's agent processes: spawn, watch, stop
 *   servers.c       servers of engines with a recipe: the server machine's facts and actions, reports
 *   limits.c        silent agents, the churn reinsert's limit clock, the phase timeout
 *   intake.c        results and the ends of attempts (Done, Failed)
 * Who calls whom (docs/design.md §8, checked by tests/e2e/05-layout.t): campaign.c calls all; agents.c calls
 * the services (intake, limits, local_agents, servers, plan_state) and peers; the services call plan_state and
 * peers (intake also servers); plan_state and peers call none of them. A service that needs the agent machine
 * posts an event (vb_campaign_post) that campaign.c fires after the service returns (coordinator/agent_queue.h). */
#ifndef VB_COORDINATOR_CAMPAIGN_INT_H
#define VB_COORDINATOR_CAMPAIGN_INT_H

#include <czmq.h>
#include <stdint.h>

#include "config/budget.h"
#include "config/plan.h"
#include "config/profile.h"
#include "coordinator/agent_fsm.h"
#include "coordinator/agent_queue.h"
#include "coordinator/campaign.h"
#include "coordinator/console.h"
#include "coordinator/server_fsm.h"
#include "coordinator/notify.h"
#include "coordinator/placement.h"
#include "store/store.h"
#include "proto/transport.h"
#include "proto/wire.h"
#include "util/clock.h"

#define HEARTBEAT_MS 1000
#define HELLO_WAIT_NS (60ull * 1000000000ull)     /* how long to wait for the first agent */
#define MAX_LOCAL_RESPAWNS 3

/* ITEM_EXPIRED: stopped at its wall-clock limit with partial results; the next resume continues it. */
typedef enum { ITEM_PENDING, ITEM_RUNNING, ITEM_DONE, ITEM_FAILED, ITEM_SKIPPED, ITEM_EXPIRED } item_state;

/* An agent's record. Its states (IDLE, BUSY, DRAINING, LOST; NEW while it has none), events and transitions are
 * the table in coordinator/agent_fsm.c, driven by vb_campaign_agent_fire(); the records are peers.c's. */
typedef struct peer {
    char id[128];
    zframe_t *routing;
    char roles[128];
    char host[256];       /* Hello.host: the manifest says where each node of a placed server ran */
    int cores;
    uint64_t memory_bytes;
    vb_agent_state state;
    int item;             /* plan index while BUSY, else -1 */
    /* A helper lent to a capacity item another agent leads (docs/design.md §8): 1 + the item's plan index (set when
     * chosen, kept while BUSY with it), 0 none; the attempt it was lent for; its release was sent (coordinator/lend.c) */
    int lend_to;
    unsigned lent_attempt;
    int released;
    char drain_key[512];  /* DRAINING: the item key it runs, and the attempt */
    unsigned drain_attempt;
    int send_failed;      /* the last send to it failed (said once until one succeeds) */
    uint64_t instance;    /* Hello.instance of its process: another value in a hello means it restarted */
    uint64_t hello_seq;   /* the newest Hello.seq of that process: an older hello is stale */
    uint64_t last_sent_ns;   /* heartbeats go to each agent that heard nothing from us for HEARTBEAT_MS */
    uint64_t last_heard_ns, item_started_ns;
    /* The Abort outstanding (BUSY: its item's; DRAINING: the stale attempt's), when it went out; 0 none. Unanswered
     * for limits.abort_unanswered_s, the agent is stuck (ABORT_UNANSWERED). */
    uint64_t abort_sent_ns;
    char abort_why[160];
    /* The attempt it was found stuck in: its hellos naming it unfinished are heard, not welcomed (STUCK_ON_IT). */
    char stuck_key[512];
    unsigned stuck_attempt;
} peer;

/* An item's attempts: `attempt` is the latest started (plan.attempts); `live` says whether messages of that
 * attempt are still recorded (0 once it was interrupted, or before the item first ran). */
typedef struct item_run {
    unsigned attempt;
    unsigned base;         /* attempts before this run gave the item a new budget (it had expired at its limit, or
                            * --retry-failed): else 0.
                            * limits.max_attempts counts attempt - base, every start, resumes included */
    int live;
    double started_wall;   /* wall time of the current attempt's assignment (or take-over): a server death
                            * reported later is charged by its own time, not by what runs when it arrives */
} item_run;

/* The server of an engine that has a recipe, as the coordinator sees it. NONE: not started (or stopped and
 * wanted again); STARTING / STOPPING: a request is out to the orchestrator; READY: the engine's items may run,
 * with `connect` merged into their engine parameters; FAILED: could not start, or died and may not restart
 * (limits.on_server_failure), so the engine's remaining items fail with `failure`. The transitions are the table
 * in coordinator/server_fsm.c, driven by vb_campaign_server_fire(). */
typedef struct server {
    vb_server_state state;
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
    int last_item;             /* the engine's most recently finished item (done or failed), -1 none */
    double last_finished;      /* its wall time */
    char last_error[1024];     /* the agent's words when that item failed, "" when it was done */
    /* cold_start items (docs/metrics.md "Cold start"): the item a cold start is out for (-1 none); the item whose
     * cold start is done (-1 none), the attempt that took it (0: not assigned yet; a later attempt needs its own),
     * and what that start's ready report said (files and bytes evicted, seconds to ready). */
    int cold_requested, cold_item;
    unsigned cold_attempt;
    long long cold_files, cold_bytes;
    double cold_restart_s;
    /* CPU profiles (phases.concurrency.profile: perf): the item perf records (-1 none), the item whose window's
     * profile was asked for (-1 none) and that window. */
    int perf_item, perf_asked;
    vb_store_profile_window perf_window;
    /* Placement (coordinator/placement.h): what each orchestrator runs of the server, one part when the campaign has
     * one orchestrator (or the server one node). A part's orchestrator, budget (its host's), connect parameters
     * (merged into `connect` once every part is ready) and whether it confirmed the pending "phase". `orchestrator`
     * above is part 0's. */
    vb_place_part parts[VB_PLACE_MAX_PARTS];
    int n_parts;
    struct server_part {
        char orchestrator[128];
        vb_budget budget;
        vb_kv *connect;    /* owned strings */
        size_t n_connect;
        int phase_ok;
    } part[VB_PLACE_MAX_PARTS];
    /* The orchestrators asked to stop their part after another part failed or died, whose answer has not come: it
     * is recorded only, also when the server was placed anew (a restart) before it came. */
    char cleanup[VB_PLACE_MAX_PARTS][128];
    int n_cleanup;
    uint64_t cleanup_since_ns;   /* the latest cleanup stop: the campaign's end waits for the answers, 900 s at most */
    uint64_t orch_wait_said_ns;  /* when the wait for resources.orchestrators was last said (once a minute) */
} server;

typedef struct local_agent {
    const char *id, *roles;
    char cpus[256];
    char cert[400];   /* its own throw-away key pair under CURVE, named by its id (the id is bound to the key) */
    pid_t pid;
    int respawns;
    uint64_t spawned_ns;   /* when the current process started: a lost agent is killed only after limits.agent_silent_s of it */
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
    char agent_dir[1100];   /* the local agents' --workdir: --data-dir, the stored campaign.data_dir, or work_dir */
    char agent_server_key[400];    /* the coordinator's public key for the local agents under CURVE */
    char refused_senders[8][200];  /* the last "id key" pairs reported as refused (once each, not per heartbeat) */
    unsigned refused_total;        /* pairs ever reported; the newest is at (refused_total - 1) % 8 */
    peer *peers;
    size_t n_peers;
    local_agent local[2];      /* [0] client, [1] orchestrator when needed */
    int n_local;
    server *servers;           /* one slot per profile engine (configuration); only server owners' slots are used */
    int *server_of;            /* per configuration: the configuration whose server slot it runs on (servers.c) */
    int need_orchestrator;     /* a selected engine has a recipe */
    vb_budget local_budget;    /* resolved against this host (local mode) */
    int running;          /* plan index of the running item, or -1 */
    uint64_t lend_said_ns;   /* coordinator/lend.c: a capacity item's wait for its client_agents was last said */
    /* The limits (limits.*) are the profile's typed struct, profile->limits, filled once by config/profile.c. */
    /* The item that was running when a previous coordinator process stopped (resume), -1 none: its agent may
     * still run it. Nothing is assigned until that agent said hello or orphan_deadline_ns passed. */
    int orphan;
    char orphan_agent[128];
    uint64_t orphan_deadline_ns;
    uint64_t waiting_said_ns;  /* when we last said that an item waits for an agent */
    int failures, expired;
    int nothing_to_resume;     /* resume of a campaign whose every plan item is done: nothing runs */
    const char *stop_reason;   /* set when the campaign must stop (limits.on_server_failure: stop) */
    /* The churn reinsert's limit clock: started by the agent's first "reinsert" progress message. */
    uint64_t limit_deadline_ns, limit_aborted_ns;
    long limit_s;
    vb_console console;        /* the terminal: sentences and the progress line (coordinator/console.h) */
    vb_notify notify;          /* the notify command (coordinator/notify.h) */
    vb_agent_queue agent_events;   /* posted by the services, fired by vb_campaign_agent_drain (agent_queue.h) */
} campaign;

typedef struct kvbuild {
    vb_kv kv[32];
    char vals[32][96];
    size_t n;
} kvbuild;

/* One event of engine e's server machine (coordinator/server_fsm.h), and what its facts and actions need. */
typedef struct server_ev {
    vb_server_event kind;
    int item;                            /* NEEDED: the item that needs the server */
    peer *from;                          /* a report: its sender */
    const Vbench__ServerReport *report;  /* a report */
    peer *orch;                          /* set by server_facts: the orchestrator, NULL none */
    vb_budget budget;                    /* set by server_facts for NEEDED: resolved for the orchestrator's host */
    vb_error budget_err;
    int parts_pending;                   /* a placed server's part answered, another has not (PARTS_PENDING) */
    int start_waiting;                   /* part 0 is ready: TAKE_PART starts the parts that wait for it */
} server_ev;

/* One event of an agent's machine (coordinator/agent_fsm.h), and what its facts and actions need. */
typedef struct agent_ev {
    vb_agent_event kind;
    peer *p;                        /* its record; NULL while NEW (RECORD_HELLO makes one) */
    const char *id;                 /* a message: the sender's routing id */
    zframe_t *routing;              /* a message: the sender */
    const Vbench__Envelope *env;    /* a message */
    int item;                       /* ASSIGN, ABORT: the item */
    const char *why;                /* ABORT: its detail; INTERRUPT_ITEM: why the item stops */
    int reason;                     /* ABORT: the reason (Vbench__AbortReason) */
} agent_ev;

/* ---- campaign.c -------------------------------------------------------------------------------------------- */

void vb_campaign_free_state(campaign *c);

/* ---- plan_state.c ------------------------------------------------------------------------------------------ */

const char *vb_campaign_item_engine(campaign *c, int i);
const char *vb_campaign_item_dataset(campaign *c, int i);
int vb_campaign_item_index(campaign *c, const char *key);
int vb_campaign_find_orphan(campaign *c, vb_error *err);
int vb_campaign_load_item_states(campaign *c, const unsigned *retried_base, vb_error *err);
unsigned *vb_campaign_attempt_bases(campaign *c, int retry_failed, vb_error *err);
int vb_campaign_attempt_current(campaign *c, int i, unsigned attempt);
void vb_campaign_interrupt_item(campaign *c, int i, const char *why, int agent_fault);
void vb_campaign_expire_item(campaign *c, int i, const char *message);
void vb_campaign_fail_item(campaign *c, int i, const char *domain, const char *message);
void vb_campaign_record_failure(campaign *c, int i, const char *domain, const char *message);
/* An item that failed already gets a better reason (its server's death behind the agent's lost connection): the
 * database's error and an event say it; the terminal, which printed the failure once, is not told it again. */
void vb_campaign_restate_failure(campaign *c, int i, const char *domain, const char *message);
void vb_campaign_orphan_gone(campaign *c, const char *why);
int vb_campaign_next_item(campaign *c);
int vb_campaign_hold_assignments(campaign *c);
void vb_campaign_note_waiting(campaign *c, int i);

/* ---- peers.c ----------------------------------------------------------------------------------------------- */

peer *vb_campaign_find_peer(campaign *c, const char *id);
peer *vb_campaign_peer_add(campaign *c, const char *id);
peer *vb_campaign_idle_peer_with_role(campaign *c, const char *role);
/* An orchestrator that is not lost: prefer's when it is one, else the first; NULL none. */
peer *vb_campaign_orchestrator_peer(campaign *c, const char *prefer);
/* Posts an event of p's machine (coordinator/agent_queue.h): fired by the loop's next drain, not now. */
void vb_campaign_post(campaign *c, vb_agent_event kind, const peer *p, int item, int reason, const char *why);
void vb_campaign_post_abort_item(campaign *c, int i, int reason, const char *why);
void vb_campaign_send_to(campaign *c, peer *p, Vbench__Envelope *env);
void vb_campaign_send_ack(campaign *c, peer *p, const char *key, unsigned attempt);
void vb_campaign_send_simple(campaign *c, peer *p, Vbench__Envelope__BodyCase which, int reason, const char *item,
                             const char *why);
void vb_campaign_send_bye_to(campaign *c, zframe_t *routing, Vbench__ByeCode code, const char *why);
void vb_campaign_send_hello_again(campaign *c, zframe_t *routing);

/* ---- agents.c ---------------------------------------------------------------------------------------------- */

void vb_campaign_agent_fire(campaign *c, agent_ev *ev);

/* coordinator/lend.c: client agents lent to a capacity item as helpers (docs/design.md §8). */
#define VB_LEND_MAX 64
/* Marks the idle client agents other than leader that item i borrows (its client_agents: 0 all, N: N - 1); returns
 * how many, 0 for any other item, -1 when client_agents asks for more than are idle (the item waits). */
int vb_campaign_lend_pick(campaign *c, int i, const peer *leader);
/* After the leader's Assign: the next marked agent to lend to i (the caller fires LEND for it: this file does not call
 * the agent machine), NULL when none is left; when i does not run (its Assign did not go out) the marks are cleared. */
peer *vb_campaign_lend_next(campaign *c, int i);
const peer *vb_campaign_lend_leader(campaign *c, int i);
size_t vb_campaign_lend_helpers(campaign *c, int i, const peer *leader, const char **ids, size_t cap);
int vb_campaign_lend_index(campaign *c, const peer *p);
void vb_campaign_relay_share(campaign *c, peer *from, const Vbench__Envelope *env);
/* Each loop turn: a helper whose item no longer runs the attempt it was lent for is told to end its share session. */
void vb_campaign_lend_release(campaign *c);
void vb_campaign_agent_drain(campaign *c);
void vb_campaign_agent_on(campaign *c, zframe_t *routing, Vbench__Envelope *env);
int vb_campaign_sender_allowed(campaign *c, zframe_t *routing, const char *key);

/* ---- local_agents.c ---------------------------------------------------------------------------------------- */

int vb_campaign_spawn_local_agent(campaign *c, int which, vb_error *err);
void vb_campaign_watch_local_agents(campaign *c);
pid_t vb_campaign_kill_local_agent(campaign *c, const char *id);
void vb_campaign_stop_local_agents(campaign *c);

/* ---- servers.c --------------------------------------------------------------------------------------------- */

const char *vb_campaign_engine_recipe(campaign *c, int e);
int vb_campaign_servers_init(campaign *c);
int vb_campaign_server_of(campaign *c, int e);
const char *vb_campaign_server_name(campaign *c, int e);
void vb_campaign_kvbuild_add(void *ctx, const char *key, const char *value);
int vb_campaign_server_ready_for(campaign *c, int i);
int vb_campaign_server_confirmed(campaign *c, int i);
/* After a concurrency window's result is committed: the CPU profile of its window is asked for when perf recorded
 * it and its efficiency fell below 0.5 (the first such window of its configuration and dataset). */
void vb_campaign_server_window_done(campaign *c, int i);
int vb_campaign_servers_housekeeping(campaign *c);
int vb_campaign_server_fire(campaign *c, int e, server_ev *ev);
/* For the Assign of cold_start item i: when its server was restarted cold for this attempt (first: the attempt
 * starts now and takes the cold start done for it), sets p's cold facts and returns 1; else 0 (not applicable, or
 * no recipe: the agent records the item as not applicable). */
int vb_campaign_server_cold(campaign *c, int i, int first, vb_point *p);
void vb_campaign_on_server_report(campaign *c, peer *p, const Vbench__ServerReport *r);
/* Item i of an engine ended (error: the agent's words when it failed, NULL when done): a server death reported
 * a moment later is charged to it. */
void vb_campaign_note_finished(campaign *c, int i, const char *error);

/* ---- limits.c ---------------------------------------------------------------------------------------------- */

void vb_campaign_item_limit_reset(campaign *c, int i);
void vb_campaign_note_progress(campaign *c, const Vbench__Progress *pr);
/* The checks of each turn, in this order, each followed by a drain of the events it posted. */
void vb_campaign_check_silent(campaign *c);
void vb_campaign_check_reinsert_limit(campaign *c);
void vb_campaign_check_unanswered(campaign *c);
void vb_campaign_check_phase_timeout(campaign *c);

/* ---- intake.c ---------------------------------------------------------------------------------------------- */

void vb_campaign_result_not_recorded(campaign *c, peer *p, const Vbench__Result *r);
void vb_campaign_record_result(campaign *c, peer *p, const Vbench__Result *r);
void vb_campaign_on_item_end(campaign *c, peer *p, const Vbench__Envelope *env, vb_agent_action a);

#endif
