/* vbench-agent: the program that runs on every host of a campaign and does what the coordinator assigns.
 *
 * Roles: "client" runs the workload (embedded engines run inside it). The main thread owns the ZeroMQ DEALER
 * connection to the coordinator: it says hello, heartbeats, receives assignments and aborts, and forwards what
 * the work thread reports. One work thread runs one plan item at a time and reports through an inproc PUSH
 * socket, because ZeroMQ sockets must not be shared between threads.
 *
 * Nothing the coordinator must record is lost (docs/design.md §6): every Result, and the Done or Failed that ends an item,
 * goes into the on-disk outbox (agent/outbox.h, WORKDIR/outbox/ID/) before it is sent, leaves it when the
 * coordinator acknowledges it, and is sent again after every Welcome: after a reconnect, after the coordinator
 * restarted, and after this process restarted (the outbox is loaded at start). Each carries the attempt of the
 * Assign it answers, so the coordinator can tell a current result from a late one of an interrupted attempt.
 *
 * The connection, as a small state machine (main loop):
 *   connecting  --Welcome-->              welcomed   (resend the outbox)
 *   welcomed    --handshake on a reconnection, or Heartbeat.hello_again--> connecting (Hello again: the
 *                                          coordinator restarted, or lost track of us)
 *   any         --nothing heard for silent_ms (Welcome.silent_ms, default --silent-s)--> connecting on a new
 *                                          DEALER socket (a connection cut on the wire never reports itself)
 * Hello says which item this agent runs (or finished, its Done still unacknowledged), so a coordinator that
 * restarted can take the item over instead of running it again.
 *
 * Fault injection for the tests (VBENCH_AGENT_FAULT): "crash-after-final:N" / "crash-after-result:N" kill this
 * process with SIGKILL right after the N-th Done/Failed (resp. Result) was written to the outbox and before it
 * was sent: the worst moment for a crash, made reproducible. "stop-after-final:N" stops it (SIGSTOP) at the same
 * moment instead, until a SIGCONT: a test does something between two items that the agent cannot outrun
 * (tests/e2e/42-server-restart-wait.t kills the server there); "stop-after-result:N" likewise after the N-th
 * Result (a load checkpoint not counted) (tests/e2e/20-kill-resume.t kills the coordinator there, so that the next run takes the item over). VBENCH_AGENT_PROTOCOL=N says protocol N in Hello
 * instead of VB_PROTOCOL_VERSION, to play an agent of another version (tests/e2e/76-protocol-version.t). */
#include <czmq.h>
#include <ctype.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "orchestrator/orchestrate.h"
#include "agent/outbox.h"
#include "agent/phase.h"
#include "datasets/dataset.h"
#include "proto/transport.h"
#include "proto/wire.h"
#include "util/pidns.h"
#include "util/clock.h"
#include "util/watchdog.h"
#include "util/cpulist.h"
#include "util/versions.h"

#define MAX_CPUS 1024

#define HELLO_RETRY_NS 3000000000ull      /* not welcomed: say hello again this often */

typedef struct agent {
    char id[300], host[256], endpoint[1024], work_dir[1024], cache_dir[1024], roles[128];
    int cpus[MAX_CPUS], n_cpus;
    int heartbeat_ms;
    vb_transport_opts transport;
    zsock_t *coord;        /* DEALER to the coordinator (replaced on a reconnect) */
    vb_transport_monitor *mon;
    zpoller_t *poller;     /* coord, inbox and the monitor: rebuilt with the socket */
    zsock_t *inbox;        /* PULL from the work thread */
    char inbox_ep[64];
    int welcomed, ever_welcomed;
    int sent_away;   /* a Bye that was not the end of the campaign: exit 1 */
    int handshakes;        /* completed on the current socket: more than one means it reconnected */
    int send_failed;       /* a send on the current socket failed (said once) */
    int monitor_said;      /* the monitor's diagnosis was printed for the current socket */
    uint64_t silent_ns;    /* how long the coordinator may be silent before we reconnect */
    /* The running item. */
    int busy;
    pthread_t worker;
    Vbench__Envelope *assign_env;
    uint32_t attempt;      /* the running item's attempt */
    atomic_int stop;
    atomic_int limit_moot;   /* see vb_phase_ctx.limit_moot */
    vb_mailbox mail;         /* the running item's share messages (vb_phase_ctx.mail) */
    vb_session *session;
    uint64_t instance;     /* random per process (Hello.instance) */
    uint64_t hello_seq;    /* hellos said by this process */
    char last_key[512];    /* the last Assign taken (key, attempt): a copy of it is not run again */
    uint32_t last_attempt;
    /* The last item that finished, while its Done/Failed waits in the outbox for an Ack. */
    char finished_item[512];
    uint32_t finished_attempt;
    int finished_helper;   /* it ran as a helper lent to a capacity item (Hello.item_helper) */
    vb_outbox *outbox;
    char *notes[16];       /* outbox files set aside at start: told to the coordinator after the Welcome */
    int n_notes;
    char fault[32];        /* VBENCH_AGENT_FAULT: the kind, and after which occurrence */
    int fault_n, fault_seen, fault_stop;   /* fault_stop: SIGSTOP instead of SIGKILL (stop-after-final) */
    vb_orch *orch;         /* the orchestrator role, when this agent has it */
    const char *recipes_dir, *images_dir, *bus_address, *address;
    uint64_t last_sent_ns, last_heard_ns, last_hello_ns, socket_ns;
} agent;

static void usage(FILE *f) {
    fprintf(f,
            "usage: vbench-agent --connect ENDPOINT [options]\n"
            "\n"
            "Runs the work a vbench coordinator assigns (see `vbench --help`). Started by `vbench run` in local\n"
            "mode; on other hosts it runs under systemd (vbench-agent@.service).\n"
            "\n"
            "options:\n"
            "  --connect ENDPOINT   coordinator address, e.g. ipc:///tmp/vb/coord.sock or tcp://10.0.0.1:5555\n"
            "  --id ID              agent id (default HOST-client)\n"
            "  --roles LIST         roles, comma-separated (default client)\n"
            "  --cpus LIST          CPUs for worker threads, e.g. 64-79 (default: all allowed)\n"
            "  --workdir DIR        where engines keep files (default ./vbench-agent.d)\n"
            "  --cache-dir DIR      dataset and ground-truth cache (default $VBENCH_CACHE or ~/.cache/vbench)\n"
            "  --heartbeat-ms N     heartbeat period (default 1000)\n"
            "  --silent-s N         reconnect and say hello again when the coordinator is silent this long (default\n"
            "                       15; the coordinator's limits.agent_silent_s overrides it once it welcomed us)\n"
            "orchestrator role (--roles orchestrator):\n"
            "  --recipes DIR        engine recipes of this host (default $VBENCH_RECIPES, BINDIR/../deploy/engines,\n"
            "                       or /etc/vbench/engines)\n"
            "  --images DIR         engine images (default $VBENCH_IMAGES or /var/cache/vbench/images)\n"
            "  --bus ADDRESS        systemd's D-Bus address (default: the local systemd)\n"
            "  --address ADDR       where other hosts reach this one: the nodes of a server placed over several\n"
            "                       orchestrators listen there (default: this host's address on the route to the\n"
            "                       coordinator)\n"
            "  --exit-with-parent   exit when the process that started this one exits (local mode)\n"
            "  --cert FILE.key      this agent's key pair for CURVE (`vbench keys agent-NAME`; its .pub goes into\n"
            "                       the coordinator's --allow directory)\n"
            "  --server-key FILE    the coordinator's public key (coordinator.pub): only that coordinator is spoken to\n"
            "  --insecure           plain TCP, to a coordinator on a loopback address that runs with insecure: true\n"
            "  -h, --help           this text\n");
}

/* Sends without blocking: while the coordinator is away a DEALER queues up to its high-water mark and then
 * would block the main loop; what cannot be sent now is dropped (heartbeats, progress) or waits in the outbox. */
static int send_frame(agent *a, zframe_t **frame) {
    if (zframe_send(frame, a->coord, ZFRAME_DONTWAIT) != 0) {
        zframe_destroy(frame);
        if (!a->send_failed) fprintf(stderr, "vbench-agent: cannot send to the coordinator now (%s); results wait in "
                                             "the outbox\n", zmq_strerror(zmq_errno()));
        a->send_failed = 1;
        return VB_ERROR;
    }
    a->last_sent_ns = vb_now_ns();
    return VB_OK;
}

static zframe_t *encode(const Vbench__Envelope *env) {
    size_t len = vbench__envelope__get_packed_size(env);
    zframe_t *f = zframe_new(NULL, len);
    vbench__envelope__pack(env, zframe_data(f));
    return f;
}

static void send_env(agent *a, const Vbench__Envelope *env) {
    zframe_t *f = encode(env);
    send_frame(a, &f);
}

/* What this agent runs, or finished with its Done/Failed still unacknowledged (see Hello in vbench.proto). */
static void say_hello(agent *a) {
    vb_kv vers[16];
    size_t nv = vb_versions_collect(vers, 16);
    Vbench__KV **wv = vb_wire_kv_make(vers, nv);
    char *roles[8];
    size_t nr = 0;
    char rbuf[128];
    snprintf(rbuf, sizeof rbuf, "%s", a->roles);
    for (char *save, *t = strtok_r(rbuf, ",", &save); t && nr < 8; t = strtok_r(NULL, ",", &save)) roles[nr++] = t;
    Vbench__Hello h = VBENCH__HELLO__INIT;
    const char *proto = getenv("VBENCH_AGENT_PROTOCOL");
    h.protocol = proto && *proto ? (uint32_t)atoi(proto) : VB_PROTOCOL_VERSION;
    h.agent_id = a->id;
    h.host = a->host;
    h.n_roles = nr;
    h.roles = roles;
    h.cores = (uint32_t)sysconf(_SC_NPROCESSORS_ONLN);
    h.n_cpus = (size_t)a->n_cpus;
    h.cpus = a->cpus;
    h.memory_bytes = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
    h.n_versions = nv;
    h.versions = wv;
    h.pid = (uint64_t)getpid();
    char pidns[64];
    vb_pidns_of(0, pidns, sizeof pidns);
    h.pid_ns = pidns;
    if (a->busy) {
        h.item_key = a->assign_env->assign->item_key;
        h.item_attempt = a->attempt;
        h.item_helper = a->assign_env->assign->helper_of && a->assign_env->assign->helper_of[0];
    } else if (a->finished_item[0]) {
        h.item_key = a->finished_item;
        h.item_attempt = a->finished_attempt;
        h.item_finished = 1;
        h.item_helper = a->finished_helper;
    }
    h.outbox = (uint32_t)vb_outbox_count(a->outbox);
    h.instance = a->instance;
    h.seq = ++a->hello_seq;
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_HELLO;
    env.hello = &h;
    send_env(a, &env);
    vb_wire_kv_free(wv, nv);
    a->last_hello_ns = vb_now_ns();
}

/* ---- the outbox -------------------------------------------------------------------------------------------- */

/* Outbox keys are the acknowledged key and the attempt: an Ack names both, so a late Ack of an interrupted
 * attempt never removes the current attempt's message with the same result key. */
static void outbox_key(char *buf, size_t len, const char *ack_key, uint32_t attempt) {
    snprintf(buf, len, "%s@%u", ack_key, attempt);
}

static void on_outbox_report(void *arg, const char *path, const char *why) {
    agent *a = arg;
    fprintf(stderr, "vbench-agent: outbox file %s is damaged (%s): set aside; the coordinator runs its item again "
                    "if it needs it\n", path, why);
    if (a->n_notes < 16 && asprintf(&a->notes[a->n_notes], "outbox file %s is damaged (%s): set aside", path, why) > 0)
        a->n_notes++;
}

/* Kills the process at the moment VBENCH_AGENT_FAULT names (see the file comment). */
static void fault_point(agent *a, const char *kind) {
    if (!a->fault[0] || strcmp(a->fault, kind) != 0) return;
    if (++a->fault_seen == a->fault_n) {
        int stop = a->fault_stop;
        fprintf(stderr, "vbench-agent: VBENCH_AGENT_FAULT: %s after the outbox write of %s %d\n",
                stop ? "stopping (SIGSTOP, until a SIGCONT)" : "crashing", kind, a->fault_n);
        kill(getpid(), stop ? SIGSTOP : SIGKILL);
    }
}

/* Keeps env in the outbox (durably), then sends it if the coordinator knows us; otherwise the resend after
 * the next Welcome sends it. */
static void keep_and_send(agent *a, const char *ack_key, uint32_t attempt, const Vbench__Envelope *env,
                          const char *fault_kind) {
    char key[700];
    outbox_key(key, sizeof key, ack_key, attempt);
    zframe_t *f = encode(env);
    vb_error err;
    if (vb_outbox_put(a->outbox, key, zframe_data(f), zframe_size(f), &err) != VB_OK)
        fprintf(stderr, "vbench-agent: %s (the message is sent, but not kept for a resend)\n", err.message);
    fault_point(a, fault_kind);
    if (a->welcomed) send_frame(a, &f);
    else zframe_destroy(&f);
}

static void resend_outbox(agent *a) {
    size_t n = vb_outbox_count(a->outbox);
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const void *data = vb_outbox_data(a->outbox, i, &len);
        zframe_t *f = zframe_new(data, len);
        if (send_frame(a, &f) != VB_OK) break;
    }
    if (n) fprintf(stderr, "vbench-agent: sent the %zu unacknowledged message(s) of the outbox again\n", n);
}

/* At start: which item the outbox's newest messages belong to, and whether it finished (a Done or Failed, or
 * a result that completes it). An item whose completing result made it to the outbox but whose Done did not
 * (the process died between the two) gets its Done here, so "finished" always means "its end is in the
 * outbox". Entries that do not decode are set aside like damaged files. */
static void outbox_recover(agent *a) {
    char item[512] = "";
    uint32_t attempt = 0;
    int finished = 0, completed = 0;
    for (size_t i = 0; i < vb_outbox_count(a->outbox);) {
        size_t len;
        const uint8_t *data = vb_outbox_data(a->outbox, i, &len);
        vb_error err;
        Vbench__Envelope *env = vb_wire_decode(data, len, &err);
        const char *key = NULL;
        uint32_t att = 0;
        int fin = 0, comp = 0;
        if (env && env->body_case == VBENCH__ENVELOPE__BODY_RESULT) {
            key = env->result->item_key, att = env->result->attempt, comp = env->result->completes_item;
        } else if (env && env->body_case == VBENCH__ENVELOPE__BODY_DONE) {
            key = env->done->item_key, att = env->done->attempt, fin = 1;
        } else if (env && env->body_case == VBENCH__ENVELOPE__BODY_FAILED) {
            key = env->failed->item_key, att = env->failed->attempt, fin = 1;
        }
        if (!key) {
            char why[1100];
            snprintf(why, sizeof why, "%s", env ? "not a result, done or failed message" : err.message);
            vb_wire_free(env);
            vb_outbox_set_aside(a->outbox, vb_outbox_key(a->outbox, i), why);
            continue;
        }
        if (strcmp(key, item) != 0 || att != attempt) {
            snprintf(item, sizeof item, "%s", key);
            attempt = att;
            finished = completed = 0;
        }
        finished |= fin;
        completed |= comp;
        vb_wire_free(env);
        i++;
    }
    if (!item[0] || (!finished && !completed)) return;
    snprintf(a->finished_item, sizeof a->finished_item, "%s", item);
    a->finished_attempt = attempt;
    snprintf(a->last_key, sizeof a->last_key, "%s", item);
    a->last_attempt = attempt;
    if (!finished) {
        char ack_key[600];
        vb_wire_final_key(ack_key, sizeof ack_key, item);
        Vbench__Done done = VBENCH__DONE__INIT;
        done.item_key = item;
        done.attempt = attempt;
        done.key = ack_key;
        Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
        env.body_case = VBENCH__ENVELOPE__BODY_DONE;
        env.done = &done;
        keep_and_send(a, ack_key, attempt, &env, "");
    }
    fprintf(stderr, "vbench-agent: the outbox holds the end of %s (attempt %u): it is sent once the coordinator "
                    "welcomes us\n", item, attempt);
}

/* The work thread: runs one item and ends with Done or Failed on the inbox. */
static void *worker_main(void *arg) {
    agent *a = arg;
    const Vbench__Assign *as = a->assign_env->assign;
    zsock_t *out = zsock_new_push(a->inbox_ep);
    vb_phase_ctx ctx = {
        .assign = as,
        .engine_params = vb_wire_kv_view(as->engine_params, as->n_engine_params), .n_engine_params = as->n_engine_params,
        .dataset_params = vb_wire_kv_view(as->dataset_params, as->n_dataset_params), .n_dataset_params = as->n_dataset_params,
        .session = &a->session, .out = out, .stop = &a->stop, .limit_moot = &a->limit_moot, .agent_id = a->id, .mail = &a->mail,
        .work_dir = a->work_dir, .cache_dir = a->cache_dir, .cpus = a->cpus, .n_cpus = a->n_cpus,
    };
    vb_wire_point_read(as->point, &ctx.point);
    vb_error err;
    vb_error_clear(&err);
    vb_phase_fn fn = vb_phase_lookup(as->phase);
    int rc = fn ? fn(&ctx, &err)
                : vb_error_set(&err, "agent", 1, "this agent cannot run phase %d (not implemented in this version)",
                               (int)as->phase);
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    Vbench__Done done = VBENCH__DONE__INIT;
    Vbench__Failed failed = VBENCH__FAILED__INIT;
    char ack_key[600];
    vb_wire_final_key(ack_key, sizeof ack_key, as->item_key);
    if (rc == VB_OK) {
        done.item_key = as->item_key;
        done.attempt = as->attempt;
        done.key = ack_key;
        env.body_case = VBENCH__ENVELOPE__BODY_DONE;
        env.done = &done;
    } else {
        failed.item_key = as->item_key;
        failed.attempt = as->attempt;
        failed.key = ack_key;
        failed.domain = err.domain[0] ? err.domain : "agent";
        failed.message = err.message[0] ? err.message : "failed without a message";
        /* a phase stopped at its limit says so in its error's domain (agent/phase_churn.c) */
        failed.kind = strcmp(failed.domain, "limit") == 0 ? VBENCH__FAIL_KIND__FAIL_LIMIT : VBENCH__FAIL_KIND__FAIL_ERROR;
        env.body_case = VBENCH__ENVELOPE__BODY_FAILED;
        env.failed = &failed;
        /* A failed item may have left the engine half-built: the next item starts from a fresh session. Not so
         * when the engine answered and vbench refused the answer (domain "recall": an id outside the corpus,
         * more than k rows; a repeated id is scored, not refused): the index is whole, and reloading it would
         * cost the next item a full build. */
        if (strcmp(failed.domain, "recall") != 0) vb_session_close(&a->session);
    }
    vb_wire_send(out, NULL, &env, NULL);
    free(ctx.engine_params);
    free(ctx.dataset_params);
    zsock_destroy(&out);
    return NULL;
}

/* An Assign. A copy of the last one taken (the coordinator sends it again when our hello crossed it on the
 * wire) is dropped. One for another item while the work thread is busy means the coordinator has a wrong
 * picture of us: the answer is a hello, which says what we run. */
static void start_item(agent *a, Vbench__Envelope *env) {
    const Vbench__Assign *as = env->assign;
    if (strcmp(as->item_key, a->last_key) == 0 && as->attempt == a->last_attempt) {
        vb_wire_free(env);
        return;
    }
    if (a->busy) {
        fprintf(stderr, "vbench-agent: assigned %s while still running %s: telling the coordinator\n", as->item_key,
                a->assign_env->assign->item_key);
        vb_wire_free(env);
        say_hello(a);
        return;
    }
    snprintf(a->last_key, sizeof a->last_key, "%s", as->item_key);
    a->last_attempt = as->attempt;
    a->assign_env = env;
    a->attempt = env->assign->attempt;
    a->finished_item[0] = '\0';   /* a new item: the coordinator has dealt with the previous one */
    atomic_store(&a->stop, 0);
    atomic_store(&a->limit_moot, 0);
    vb_mailbox_clear(&a->mail);
    a->busy = 1;
    if (pthread_create(&a->worker, NULL, worker_main, a) != 0) {
        fprintf(stderr, "vbench-agent: cannot start the work thread\n");
        exit(1);
    }
}

static void finish_item(agent *a) {
    pthread_join(a->worker, NULL);
    vb_wire_free(a->assign_env);
    a->assign_env = NULL;
    a->busy = 0;
}

/* Forwards one message from the work thread to the coordinator. Results and the item's Done or Failed are
 * stamped with the attempt and kept in the outbox first. */
static void forward_from_worker(agent *a) {
    zmsg_t *msg = zmsg_recv(a->inbox);
    if (!msg) return;
    zframe_t *body = zmsg_first(msg);
    Vbench__Envelope *env = body ? vb_wire_decode(zframe_data(body), zframe_size(body), NULL) : NULL;
    zmsg_destroy(&msg);
    if (!env) return;
    switch (env->body_case) {
    case VBENCH__ENVELOPE__BODY_RESULT:
        env->result->attempt = a->attempt;
        /* a load checkpoint is not counted by the fault: how many a load sends depends on the host's speed (one a
         * second), so "the N-th result" would name another item on a loaded machine (20-kill-resume under load) */
        keep_and_send(a, env->result->result_key, a->attempt, env,
                      env->result->body_case == VBENCH__RESULT__BODY_BUILD && env->result->build->checkpoint
                          ? "" : "crash-after-result");
        break;
    case VBENCH__ENVELOPE__BODY_DONE:
    case VBENCH__ENVELOPE__BODY_FAILED: {
        int done = env->body_case == VBENCH__ENVELOPE__BODY_DONE;
        const char *item = done ? env->done->item_key : env->failed->item_key;
        const char *key = done ? env->done->key : env->failed->key;
        uint32_t attempt = done ? env->done->attempt : env->failed->attempt;
        if (a->busy && strcmp(item, a->assign_env->assign->item_key) == 0) {
            snprintf(a->finished_item, sizeof a->finished_item, "%s", item);
            a->finished_attempt = attempt;
            a->finished_helper = a->assign_env->assign->helper_of && a->assign_env->assign->helper_of[0];
        }
        keep_and_send(a, key, attempt, env, "crash-after-final");
        finish_item(a);
        break;
    }
    default:   /* progress, log, server reports: for now or never */
        if (a->welcomed) send_env(a, env);
    }
    vb_wire_free(env);
}

/* A new DEALER socket (and monitor): the only cure for a connection that died on the wire without telling
 * (a cable, a firewall, a coordinator host that vanished). Messages queued on the old socket are dropped:
 * everything that matters is in the outbox. */
static int open_socket(agent *a, vb_error *err) {
    if (a->coord) {
        zsock_set_linger(a->coord, 0);
        /* libzmq 4.3.4: a socket closed while a monitor watches it keeps its connecter alive, and connects again
         * (three live connections after a 10 s cut): stop the monitor first. */
        zmq_socket_monitor(zsock_resolve(a->coord), NULL, 0);
    }
    zpoller_destroy(&a->poller);
    vb_transport_monitor_destroy(&a->mon);
    zsock_destroy(&a->coord);
    a->coord = zsock_new(ZMQ_DEALER);
    zsock_set_identity(a->coord, a->id);
    zsock_set_sndtimeo(a->coord, 0);
    zsock_set_connect_timeout(a->coord, 2000);   /* a connect into a cut link: try again, do not wait for TCP */
    if (vb_transport_client_setup(a->coord, &a->transport, &a->mon, err) != VB_OK) return VB_ERROR;
    a->poller = zpoller_new(a->coord, a->inbox, vb_transport_monitor_sock(a->mon), NULL);
    a->welcomed = a->handshakes = a->send_failed = a->monitor_said = 0;
    a->socket_ns = vb_now_ns();
    return VB_OK;
}

static void handle_coordinator(agent *a, int *quit) {
    vb_error err;
    Vbench__Envelope *env = vb_wire_recv(a->coord, NULL, &err);
    if (!env) {
        fprintf(stderr, "vbench-agent: dropped a message from the coordinator: %s\n", err.message);
        return;
    }
    a->last_heard_ns = vb_now_ns();
    switch (env->body_case) {
    case VBENCH__ENVELOPE__BODY_WELCOME:
        if (a->ever_welcomed && !a->welcomed) fprintf(stderr, "vbench-agent: welcomed again by the coordinator\n");
        a->welcomed = a->ever_welcomed = 1;
        a->send_failed = 0;
        if (env->welcome->heartbeat_ms) a->heartbeat_ms = (int)env->welcome->heartbeat_ms;
        if (env->welcome->silent_ms) a->silent_ns = (uint64_t)env->welcome->silent_ms * 1000000ull;
        for (int i = 0; i < a->n_notes; i++) {
            Vbench__Log l = VBENCH__LOG__INIT;
            l.item_key = "";
            l.level = VBENCH__LOG_LEVEL__LOG_WARN;
            l.message = a->notes[i];
            Vbench__Envelope out = VBENCH__ENVELOPE__INIT;
            out.body_case = VBENCH__ENVELOPE__BODY_LOG;
            out.log = &l;
            send_env(a, &out);
            free(a->notes[i]);
        }
        a->n_notes = 0;
        resend_outbox(a);
        break;
    case VBENCH__ENVELOPE__BODY_ASSIGN:
        start_item(a, env);
        return; /* the work thread owns env now */
    case VBENCH__ENVELOPE__BODY_ACK: {
        char key[700];
        outbox_key(key, sizeof key, env->ack->result_key, env->ack->attempt);
        vb_outbox_ack(a->outbox, key);
        if (a->finished_item[0] && vb_wire_is_final_key(env->ack->result_key, a->finished_item) &&
            env->ack->attempt == a->finished_attempt)
            a->finished_item[0] = '\0';
        break;
    }
    case VBENCH__ENVELOPE__BODY_ABORT:
        if (a->busy && (!env->abort->item_key[0] || strcmp(env->abort->item_key, a->assign_env->assign->item_key) == 0))
        {
            /* A limit abort after the reinsert completed is moot: the churn phase sets limit_moot and then clears a
             * limit stop; here the stop is set and then cleared if moot was set meanwhile (seq_cst: one side sees
             * the other's write). */
            int limit = env->abort->reason == VBENCH__ABORT_REASON__ABORT_LIMIT;
            if (!limit || !atomic_load(&a->limit_moot)) atomic_store(&a->stop, limit ? VB_STOP_LIMIT : VB_STOP_ABORT);
            int expect = VB_STOP_LIMIT;
            if (limit && atomic_load(&a->limit_moot)) atomic_compare_exchange_strong(&a->stop, &expect, VB_STOP_NONE);
        }
        break;
    case VBENCH__ENVELOPE__BODY_SHARE_REQUEST:
    case VBENCH__ENVELOPE__BODY_SHARE_REPORT:
        /* a capacity item's share: for its work thread (agent/phase_capacity.c); none running, it is stale */
        if (a->busy) {
            vb_mailbox_put(&a->mail, env);
            return;
        }
        break;
    case VBENCH__ENVELOPE__BODY_SERVER_REQUEST:
        if (a->orch) {
            vb_orch_request(a->orch, env->server_request, a->coord);
            a->last_sent_ns = vb_now_ns();
        } else {
            fprintf(stderr, "vbench-agent: a server request, but this agent has no orchestrator role\n");
        }
        break;
    case VBENCH__ENVELOPE__BODY_BYE:
        /* The end of the campaign, or a refusal (e.g. this key is not the one of the id we speak as). */
        if (env->bye->code != VBENCH__BYE_CODE__BYE_CAMPAIGN_OVER) {
            fprintf(stderr, "vbench-agent: the coordinator sent this agent away: %s\n",
                    env->bye->reason && env->bye->reason[0] ? env->bye->reason : "(no reason given)");
            a->sent_away = 1;
        }
        *quit = 1;
        break;
    case VBENCH__ENVELOPE__BODY_HEARTBEAT:
        /* The coordinator does not know us (it restarted, or marked us lost): hello again, once a second at most. */
        if (env->heartbeat->hello_again && vb_now_ns() - a->last_hello_ns > 1000000000ull) {
            a->welcomed = 0;
            say_hello(a);
        }
        break;
    default:
        fprintf(stderr, "vbench-agent: unexpected %s from the coordinator\n", vb_wire_body_name(env));
    }
    vb_wire_free(env);
}

/* Reads one event of the handshake monitor. Before the first Welcome a diagnosis (refused key, wrong
 * coordinator key) is final: the agent stops with it. Afterwards the agent has worked with this coordinator, so
 * a failure is more likely a restart in progress than a wrong key: it is said once and the agent keeps trying.
 * A handshake completed on a socket that had one before means a reconnection: say hello again. */
static int handle_monitor(agent *a) {
    vb_transport_event ev;
    vb_error err;
    if (vb_transport_monitor_handle(a->mon, &ev, &err) != VB_OK) {
        if (!a->ever_welcomed) {
            fprintf(stderr, "vbench-agent: %s\n", err.message);
            return VB_ERROR;
        }
        if (!a->monitor_said) fprintf(stderr, "vbench-agent: %s (still trying)\n", err.message);
        a->monitor_said = 1;
        return VB_OK;
    }
    if (ev.event == ZMQ_EVENT_DISCONNECTED && a->welcomed)
        fprintf(stderr, "vbench-agent: disconnected from the coordinator; reconnecting\n");
    if (ev.event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED && ++a->handshakes > 1) {
        a->welcomed = 0;   /* possibly a new coordinator process: it does not know us */
        say_hello(a);
    }
    return VB_OK;
}

int main(int argc, char **argv) {
    agent a = {.heartbeat_ms = 1000, .silent_ns = 15000000000ull};
    vb_mailbox_init(&a.mail);
    snprintf(a.roles, sizeof a.roles, "client");
    snprintf(a.work_dir, sizeof a.work_dir, "vbench-agent.d");
    gethostname(a.host, sizeof a.host - 1);
    int exit_with_parent = 0, insecure = 0, code = 0;
    const char *cpus_arg = NULL, *cert = NULL, *server_key = NULL;
    static const struct option opts[] = {
        {"connect", required_argument, 0, 'c'}, {"id", required_argument, 0, 'i'},
        {"roles", required_argument, 0, 'r'},   {"cpus", required_argument, 0, 'p'},
        {"workdir", required_argument, 0, 'w'}, {"cache-dir", required_argument, 0, 'd'},
        {"heartbeat-ms", required_argument, 0, 'b'}, {"exit-with-parent", no_argument, 0, 'x'},
        {"recipes", required_argument, 0, 'R'}, {"images", required_argument, 0, 'M'},
        {"bus", required_argument, 0, 'B'},
        {"cert", required_argument, 0, 'C'},    {"server-key", required_argument, 0, 'S'},
        {"insecure", no_argument, 0, 'I'},      {"silent-s", required_argument, 0, 'L'},
        {"address", required_argument, 0, 'A'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (o) {
        case 'c': snprintf(a.endpoint, sizeof a.endpoint, "%s", optarg); break;
        case 'i': snprintf(a.id, sizeof a.id, "%s", optarg); break;
        case 'r': snprintf(a.roles, sizeof a.roles, "%s", optarg); break;
        case 'p': cpus_arg = optarg; break;
        case 'w': snprintf(a.work_dir, sizeof a.work_dir, "%s", optarg); break;
        case 'd': snprintf(a.cache_dir, sizeof a.cache_dir, "%s", optarg); break;
        case 'b': a.heartbeat_ms = atoi(optarg); break;
        case 'x': exit_with_parent = 1; break;
        case 'R': a.recipes_dir = optarg; break;
        case 'M': a.images_dir = optarg; break;
        case 'B': a.bus_address = optarg; break;
        case 'A': a.address = optarg; break;
        case 'C': cert = optarg; break;
        case 'S': server_key = optarg; break;
        case 'I': insecure = 1; break;
        case 'L':
            if (atof(optarg) <= 0) {
                fprintf(stderr, "vbench-agent: --silent-s needs a positive number of seconds\n");
                return 2;
            }
            a.silent_ns = (uint64_t)(atof(optarg) * 1e9);
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!a.endpoint[0]) {
        fprintf(stderr, "vbench-agent: --connect ENDPOINT is required (see --help)\n");
        return 2;
    }
    if (exit_with_parent) {
        pid_t parent = getppid();
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) return 0;
    }
    if (!a.id[0]) snprintf(a.id, sizeof a.id, "%s-client", a.host);
    const char *fault = getenv("VBENCH_AGENT_FAULT");
    if (fault && *fault) {
        const char *colon = strchr(fault, ':');
        a.fault_n = colon ? atoi(colon + 1) : 0;
        snprintf(a.fault, sizeof a.fault, "%.*s", colon ? (int)(colon - fault) : 0, fault);
        if (strncmp(a.fault, "stop-after-", 11) == 0) {
            a.fault_stop = 1;   /* the same moment as crash-after-..., another signal */
            const char *kind = fault + 11;   /* "final" or "result" (checked below) */
            snprintf(a.fault, sizeof a.fault, "crash-after-%.*s", (int)(colon ? colon - kind : 0), kind);
        }
        if ((strcmp(a.fault, "crash-after-final") != 0 && strcmp(a.fault, "crash-after-result") != 0) || a.fault_n < 1) {
            fprintf(stderr, "vbench-agent: VBENCH_AGENT_FAULT=%s: expected crash-after-final:N, crash-after-result:N, "
                    "stop-after-final:N or stop-after-result:N\n", fault);
            return 2;
        }
    }
    vb_error err;
    char cache[sizeof a.cache_dir];
    if (vb_dataset_cache_dir(a.cache_dir[0] ? a.cache_dir : NULL, cache, sizeof cache, &err) != VB_OK) {
        fprintf(stderr, "vbench-agent: %s\n", err.message);
        return 1;
    }
    snprintf(a.cache_dir, sizeof a.cache_dir, "%s", cache);
    if (cpus_arg) {
        a.n_cpus = vb_cpulist_parse(cpus_arg, a.cpus, MAX_CPUS, &err);
        if (a.n_cpus < 0) {
            fprintf(stderr, "vbench-agent: --cpus: %s\n", err.message);
            return 2;
        }
    } else {
        a.n_cpus = vb_cpulist_allowed(a.cpus, MAX_CPUS);
    }

    zsys_init();
    zsys_set_linger(1000);
    a.transport = (vb_transport_opts){.endpoint = a.endpoint, .cert = cert, .server_key = server_key, .insecure = insecure};
    snprintf(a.inbox_ep, sizeof a.inbox_ep, "inproc://agent-inbox");
    a.inbox = zsock_new_pull(a.inbox_ep);
    char outbox_dir[2048], safe_id[300];
    snprintf(safe_id, sizeof safe_id, "%s", a.id);
    for (char *c = safe_id; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '.' || *c == '_' || *c == '-')) *c = '_';
    snprintf(outbox_dir, sizeof outbox_dir, "%s/outbox/%s", a.work_dir, safe_id);
    a.outbox = vb_outbox_open(outbox_dir, 10000, on_outbox_report, &a, &err);
    if (!a.outbox) {
        fprintf(stderr, "vbench-agent: %s\n", err.message);
        zsock_destroy(&a.inbox);
        return 1;
    }
    outbox_recover(&a);
    {
        FILE *ur = fopen("/dev/urandom", "rb");
        if (!ur || fread(&a.instance, sizeof a.instance, 1, ur) != 1) a.instance = vb_now_ns() ^ ((uint64_t)getpid() << 40);
        if (ur) fclose(ur);
    }
    if (open_socket(&a, &err) != VB_OK) {
        fprintf(stderr, "vbench-agent: %s\n", err.message);
        code = 1;
        goto out;
    }
    if (strstr(a.roles, "orchestrator")) {
        vb_orch_opts oo = {.recipes_dir = a.recipes_dir, .images_dir = a.images_dir, .work_dir = a.work_dir,
                           .bus_address = a.bus_address, .inbox_ep = a.inbox_ep, .agent_id = a.id,
                           .address = a.address, .coordinator = a.endpoint};
        a.orch = vb_orch_new(&oo);
    }
    say_hello(&a);
    a.last_heard_ns = vb_now_ns();

    uint64_t started_ns = vb_now_ns();
    int quit = 0, warned = 0;
    vb_watchdog_ready("connecting to the coordinator");   /* Type=notify (util/watchdog.h) */
    while (!quit && !zsys_interrupted) {
        if (vb_watchdog_due()) {   /* WATCHDOG=1 from the main loop; the work runs on its own thread */
            char wd[700];
            snprintf(wd, sizeof wd, "%s; %s%s", a.welcomed ? "connected" : "waiting for the coordinator",
                     a.busy ? "running " : "idle", a.busy && a.assign_env ? a.assign_env->assign->item_key : "");
            vb_watchdog_tick(wd);
        }
        void *which = zpoller_wait(a.poller, 100);
        if (which == a.coord) handle_coordinator(&a, &quit);
        else if (which == a.inbox) forward_from_worker(&a);
        else if (which && which == vb_transport_monitor_sock(a.mon)) {
            if (handle_monitor(&a) != VB_OK) {   /* refused, or the wrong coordinator */
                code = 1;
                break;
            }
        } else if (zpoller_terminated(a.poller)) break;
        if (a.orch) vb_orch_tick(a.orch, a.coord);
        uint64_t now = vb_now_ns();
        if (now - a.last_sent_ns >= (uint64_t)a.heartbeat_ms * 1000000ull) {
            Vbench__Heartbeat hb = VBENCH__HEARTBEAT__INIT;
            Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
            env.body_case = VBENCH__ENVELOPE__BODY_HEARTBEAT;
            env.heartbeat = &hb;
            send_env(&a, &env);
            a.last_sent_ns = now;   /* also when it could not be sent: one attempt per period */
        }
        /* The coordinator went silent after it knew us: its host, the wire or the process is gone. A new
         * socket, and hello again (the coordinator's side of the same deadline marks us lost). */
        if (a.ever_welcomed && now - a.last_heard_ns > a.silent_ns && now - a.socket_ns > a.silent_ns) {
            fprintf(stderr, "vbench-agent: the coordinator has been silent for %.0f s; connecting again\n",
                    (double)(now - a.last_heard_ns) / 1e9);
            if (open_socket(&a, &err) != VB_OK) {
                fprintf(stderr, "vbench-agent: %s\n", err.message);
                code = 1;
                break;
            }
            say_hello(&a);
        }
        /* Not welcomed yet (the coordinator was not listening, or restarted): say hello again. */
        if (!a.welcomed && now - a.last_hello_ns > HELLO_RETRY_NS) say_hello(&a);
        if (!a.ever_welcomed && !warned && now - started_ns > 30000000000ull) {   /* keep waiting, but say why */
            vb_transport_handshake_error(&a.transport, a.mon, 30, &err);
            fprintf(stderr, "vbench-agent: still waiting: %s\n", err.message);
            warned = 1;
        }
    }
    if (a.sent_away) code = 1;
out:
    vb_outbox_close(&a.outbox);   /* first: a successor process with our id may be waiting for its lock */
    if (a.busy) {
        atomic_store(&a.stop, 1);
        /* Bounded: a work thread stuck in a call that never looks at the stop flag (an engine build, a server
         * that does not answer) must not keep this process alive after its coordinator said Bye or a signal
         * asked it to end. Its messages that matter are in the outbox already (closed above); after 10 s the
         * process ends without it. */
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += 10;
        if (pthread_timedjoin_np(a.worker, NULL, &deadline) != 0) {
            fprintf(stderr, "vbench-agent: the work thread did not stop within 10 s of being told to: exiting "
                            "without it\n");
            _exit(code ? code : 1);
        }
        vb_wire_free(a.assign_env);
    }
    vb_session_close(&a.session);
    vb_orch_destroy(&a.orch);
    for (int i = 0; i < a.n_notes; i++) free(a.notes[i]);
    zpoller_destroy(&a.poller);
    vb_transport_monitor_destroy(&a.mon);
    zsock_destroy(&a.inbox);
    zsock_destroy(&a.coord);
    return code;
}
