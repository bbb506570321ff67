/* vbench-agent: the program that runs on every host of a campaign and does what the coordinator assigns.
 *
 * Roles: "client" runs the workload (embedded engines run inside it). The main thread owns the ZeroMQ DEALER
 * connection to the coordinator: it says hello, heartbeats, receives assignments and aborts, and forwards what
 * the work thread reports. One work thread runs one plan item at a time and reports through an inproc PUSH
 * socket, because ZeroMQ sockets must not be shared between threads. Results stay in memory until the
 * coordinator acknowledges that it committed them. */
#include <czmq.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "agent/orchestrate.h"
#include "agent/phase.h"
#include "datasets/dataset.h"
#include "proto/transport.h"
#include "proto/wire.h"
#include "util/clock.h"
#include "util/cpulist.h"
#include "util/versions.h"

#define MAX_CPUS 1024

typedef struct agent {
    char id[300], host[256], endpoint[1024], work_dir[1024], cache_dir[1024], roles[128];
    int cpus[MAX_CPUS], n_cpus;
    int heartbeat_ms;
    zsock_t *coord;        /* DEALER to the coordinator */
    zsock_t *inbox;        /* PULL from the work thread */
    char inbox_ep[64];
    int welcomed;
    /* The running item. */
    int busy;
    pthread_t worker;
    Vbench__Envelope *assign_env;
    atomic_int stop;
    vb_session *session;
    zhash_t *unacked;      /* result_key -> zframe_t* (encoded envelope) */
    vb_orch *orch;         /* the orchestrator role, when this agent has it */
    const char *recipes_dir, *images_dir, *bus_address;
    uint64_t last_sent_ns, last_heard_ns;
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
            "orchestrator role (--roles orchestrator):\n"
            "  --recipes DIR        engine recipes of this host (default $VBENCH_RECIPES, BINDIR/../deploy/engines,\n"
            "                       or /etc/vbench/engines)\n"
            "  --images DIR         engine images (default $VBENCH_IMAGES or /var/cache/vbench/images)\n"
            "  --bus ADDRESS        systemd's D-Bus address (default: the local systemd)\n"
            "  --exit-with-parent   exit when the process that started this one exits (local mode)\n"
            "  --cert FILE.key      this agent's key pair for CURVE (`vbench keys agent-NAME`; its .pub goes into\n"
            "                       the coordinator's --allow directory)\n"
            "  --server-key FILE    the coordinator's public key (coordinator.pub): only that coordinator is spoken to\n"
            "  --insecure           plain TCP, to a coordinator on a loopback address that runs with insecure: true\n"
            "  -h, --help           this text\n");
}

static void send_env(agent *a, const Vbench__Envelope *env) {
    vb_error err;
    if (vb_wire_send(a->coord, NULL, env, &err) != VB_OK) fprintf(stderr, "vbench-agent: %s\n", err.message);
    a->last_sent_ns = vb_now_ns();
}

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
    h.protocol = VB_PROTOCOL_VERSION;
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
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_HELLO;
    env.hello = &h;
    send_env(a, &env);
    vb_wire_kv_free(wv, nv);
}

/* The work thread: runs one item and ends with Done or Failed on the inbox. */
static void *worker_main(void *arg) {
    agent *a = arg;
    const Vbench__Assign *as = a->assign_env->assign;
    zsock_t *out = zsock_new_push(a->inbox_ep);
    vb_phase_ctx ctx = {
        .assign = as,
        .point = vb_wire_kv_view(as->point, as->n_point), .n_point = as->n_point,
        .phase_params = vb_wire_kv_view(as->phase_params, as->n_phase_params), .n_phase_params = as->n_phase_params,
        .engine_params = vb_wire_kv_view(as->engine_params, as->n_engine_params), .n_engine_params = as->n_engine_params,
        .dataset_params = vb_wire_kv_view(as->dataset_params, as->n_dataset_params), .n_dataset_params = as->n_dataset_params,
        .session = &a->session, .out = out, .stop = &a->stop, .agent_id = a->id,
        .work_dir = a->work_dir, .cache_dir = a->cache_dir, .cpus = a->cpus, .n_cpus = a->n_cpus,
    };
    vb_error err;
    vb_error_clear(&err);
    vb_phase_fn fn = vb_phase_lookup(as->phase);
    int rc = fn ? fn(&ctx, &err)
                : vb_error_set(&err, "agent", 1, "this agent cannot run phase \"%s\" (not implemented in this "
                                                 "version)", as->phase);
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    Vbench__Done done = VBENCH__DONE__INIT;
    Vbench__Failed failed = VBENCH__FAILED__INIT;
    if (rc == VB_OK) {
        done.item_key = as->item_key;
        env.body_case = VBENCH__ENVELOPE__BODY_DONE;
        env.done = &done;
    } else {
        failed.item_key = as->item_key;
        failed.domain = err.domain[0] ? err.domain : "agent";
        failed.message = err.message[0] ? err.message : "failed without a message";
        env.body_case = VBENCH__ENVELOPE__BODY_FAILED;
        env.failed = &failed;
        /* A failed item may have left the engine half-built: the next item starts from a fresh session. */
        vb_session_close(&a->session);
    }
    vb_wire_send(out, NULL, &env, NULL);
    free(ctx.point);
    free(ctx.phase_params);
    free(ctx.engine_params);
    free(ctx.dataset_params);
    zsock_destroy(&out);
    return NULL;
}

static void start_item(agent *a, Vbench__Envelope *env) {
    if (a->busy) {
        Vbench__Failed f = VBENCH__FAILED__INIT;
        f.item_key = env->assign->item_key;
        f.domain = "agent";
        f.message = "agent is busy with another item";
        Vbench__Envelope out = VBENCH__ENVELOPE__INIT;
        out.body_case = VBENCH__ENVELOPE__BODY_FAILED;
        out.failed = &f;
        send_env(a, &out);
        vb_wire_free(env);
        return;
    }
    a->assign_env = env;
    atomic_store(&a->stop, 0);
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

/* Forwards one message from the work thread to the coordinator, keeping results until acknowledged. */
static void forward_from_worker(agent *a) {
    zmsg_t *msg = zmsg_recv(a->inbox);
    if (!msg) return;
    zframe_t *body = zmsg_first(msg);
    Vbench__Envelope *env = body ? vb_wire_decode(zframe_data(body), zframe_size(body), NULL) : NULL;
    if (env) {
        if (env->body_case == VBENCH__ENVELOPE__BODY_RESULT)
            zhash_insert(a->unacked, env->result->result_key, zframe_dup(body));
        zmsg_send(&msg, a->coord);
        a->last_sent_ns = vb_now_ns();
        if (env->body_case == VBENCH__ENVELOPE__BODY_DONE || env->body_case == VBENCH__ENVELOPE__BODY_FAILED)
            finish_item(a);
        vb_wire_free(env);
    }
    zmsg_destroy(&msg);
}

static void resend_unacked(agent *a) {
    for (zframe_t *f = zhash_first(a->unacked); f; f = zhash_next(a->unacked)) {
        zframe_t *copy = zframe_dup(f);
        zframe_send(&copy, a->coord, 0);
    }
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
        a->welcomed = 1;
        if (env->welcome->heartbeat_ms) a->heartbeat_ms = (int)env->welcome->heartbeat_ms;
        resend_unacked(a);
        break;
    case VBENCH__ENVELOPE__BODY_ASSIGN:
        start_item(a, env);
        return; /* the work thread owns env now */
    case VBENCH__ENVELOPE__BODY_ACK: {
        zframe_t *f = zhash_lookup(a->unacked, env->ack->result_key);
        if (f) {
            zhash_delete(a->unacked, env->ack->result_key);
            zframe_destroy(&f);
        }
        break;
    }
    case VBENCH__ENVELOPE__BODY_ABORT:
        if (a->busy) atomic_store(&a->stop, strcmp(env->abort->reason, "limit") == 0 ? VB_STOP_LIMIT : VB_STOP_ABORT);
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
        *quit = 1;
        break;
    case VBENCH__ENVELOPE__BODY_HEARTBEAT:
        break;
    default:
        fprintf(stderr, "vbench-agent: unexpected %s from the coordinator\n", vb_wire_body_name(env));
    }
    vb_wire_free(env);
}

int main(int argc, char **argv) {
    agent a = {.heartbeat_ms = 1000};
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
        {"insecure", no_argument, 0, 'I'},      {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
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
        case 'C': cert = optarg; break;
        case 'S': server_key = optarg; break;
        case 'I': insecure = 1; break;
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
    a.coord = zsock_new(ZMQ_DEALER);
    zsock_set_identity(a.coord, a.id);
    vb_transport_opts t = {.endpoint = a.endpoint, .cert = cert, .server_key = server_key, .insecure = insecure};
    vb_transport_monitor *mon = NULL;
    if (vb_transport_client_setup(a.coord, &t, &mon, &err) != VB_OK) {
        fprintf(stderr, "vbench-agent: %s\n", err.message);
        zsock_destroy(&a.coord);
        return 1;
    }
    snprintf(a.inbox_ep, sizeof a.inbox_ep, "inproc://agent-inbox");
    a.inbox = zsock_new_pull(a.inbox_ep);
    a.unacked = zhash_new();
    if (strstr(a.roles, "orchestrator")) {
        vb_orch_opts oo = {.recipes_dir = a.recipes_dir, .images_dir = a.images_dir, .work_dir = a.work_dir,
                           .bus_address = a.bus_address, .inbox_ep = a.inbox_ep, .agent_id = a.id};
        a.orch = vb_orch_new(&oo);
    }
    say_hello(&a);
    a.last_heard_ns = vb_now_ns();

    zpoller_t *poller = zpoller_new(a.coord, a.inbox, vb_transport_monitor_sock(mon), NULL);
    uint64_t started_ns = vb_now_ns();
    int quit = 0, warned = 0;
    while (!quit && !zsys_interrupted) {
        void *which = zpoller_wait(poller, 100);
        if (which == a.coord) handle_coordinator(&a, &quit);
        else if (which == a.inbox) forward_from_worker(&a);
        else if (which && which == vb_transport_monitor_sock(mon)) {
            if (vb_transport_monitor_handle(mon, NULL, &err) != VB_OK) {   /* refused, or the wrong coordinator */
                fprintf(stderr, "vbench-agent: %s\n", err.message);
                code = 1;
                break;
            }
        } else if (zpoller_terminated(poller)) break;
        if (a.orch) vb_orch_tick(a.orch, a.coord);
        uint64_t now = vb_now_ns();
        if (now - a.last_sent_ns >= (uint64_t)a.heartbeat_ms * 1000000ull) {
            Vbench__Heartbeat hb = VBENCH__HEARTBEAT__INIT;
            Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
            env.body_case = VBENCH__ENVELOPE__BODY_HEARTBEAT;
            env.heartbeat = &hb;
            send_env(&a, &env);
        }
        /* Not welcomed yet (the coordinator was not listening, or restarted): say hello again. */
        if (!a.welcomed && now - a.last_heard_ns > 3000000000ull) {
            say_hello(&a);
            a.last_heard_ns = now;
        }
        if (!a.welcomed && !warned && now - started_ns > 30000000000ull) {   /* keep waiting, but say why */
            vb_transport_handshake_error(&t, mon, 30, &err);
            fprintf(stderr, "vbench-agent: still waiting: %s\n", err.message);
            warned = 1;
        }
    }
    if (a.busy) {
        atomic_store(&a.stop, 1);
        pthread_join(a.worker, NULL);
        vb_wire_free(a.assign_env);
    }
    vb_session_close(&a.session);
    vb_orch_destroy(&a.orch);
    for (zframe_t *f = zhash_first(a.unacked); f; f = zhash_next(a.unacked)) zframe_destroy(&f);
    zhash_destroy(&a.unacked);
    zpoller_destroy(&poller);
    vb_transport_monitor_destroy(&mon);
    zsock_destroy(&a.inbox);
    zsock_destroy(&a.coord);
    return code;
}
