/* The coordinator's event loop, its set-up and teardown (what it says on the terminal: coordinator/console.h). The agent and server
 * machines are tables (coordinator/agent_fsm.c, coordinator/server_fsm.c), driven by vb_campaign_agent_fire()
 * (coordinator/agents.c) and vb_campaign_server_fire() (coordinator/servers.c); the parts of the coordinator are listed in
 * coordinator/campaign_int.h.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coordinator/campaign_int.h"
#include "coordinator/calibrate.h"
#include "coordinator/estimate.h"
#include "coordinator/fetch_datasets.h"
#include "coordinator/footprint.h"
#include "coordinator/preflight.h"
#include "coordinator/server_pass.h"
#include "util/watchdog.h"
#include "coordinator/manifest.h"
#include "report/show.h"

/* ---- set-up ------------------------------------------------------------------------------------------------- */

/* Decisions of the ZAP handler and failed handshakes: refusals go to the events table and the terminal. */
static void on_peer(void *arg, const vb_transport_peer *p) {
    campaign *c = arg;
    char line[1024];
    vb_transport_peer_describe(p, line, sizeof line);
    vb_store_event(c->store, VB_EVENT_TRANSPORT, p->verdict == VB_TRANSPORT_ALLOWED ? "info" : "warn", NULL,
                   "transport", "%s", line);
    if (p->verdict != VB_TRANSPORT_ALLOWED) vb_console_say(&c->console, "vbench: %s", line);
}

/* Every check that can refuse the command comes before the results database is created (profile, engines, plan,
 * transport and keys, the server budget), so a refused command leaves nothing behind and the corrected one is not
 * refused as "already exists"; a creation that fails half-way removes what it made (vb_store_discard). */
static int prepare(campaign *c, vb_error *err) {
    const vb_campaign_opts *o = c->o;
    char listening[320] = "";
    if (!o->resume) {
        if (vb_profile_load(o->profile, &c->profile, err)) return VB_ERROR;
        if (vb_profile_select_engines(c->profile, o->engines, err)) return VB_ERROR;
        if (vb_profile_check_engines(c->profile, err)) return VB_ERROR;
        vb_server_pass_apply(c->profile);   /* server_pass: in each recipe reference (coordinator/server_pass.h) */
        if (vb_plan_build(c->profile, &c->plan, err)) return VB_ERROR;
    } else {
        /* the writer lock first (vb_store_open): a second coordinator is refused before it reads anything */
        if (vb_store_open(o->out, 0, &c->store, err)) return VB_ERROR;
        char *yaml = NULL, *source = NULL, *engines = NULL, *status = NULL;
        int rc = vb_store_load_campaign(c->store, &yaml, &source, &engines, &status, err);
        if (rc == VB_OK) rc = vb_profile_parse(yaml, strlen(yaml), source, &c->profile, err);
        if (rc == VB_OK) rc = vb_profile_select_engines(c->profile, engines, err);
        if (rc == VB_OK) rc = vb_profile_check_engines(c->profile, err);
        if (rc == VB_OK) vb_server_pass_apply(c->profile);
        if (rc == VB_OK) rc = vb_plan_build(c->profile, &c->plan, err);
        if (rc == VB_OK) rc = vb_store_check_plan(c->store, c->plan, err);
        size_t n_done = 0, n_failed = 0, n_expired = 0, n_rest = 0;
        /* Done is what the plan rows say, not the campaign's status word: a campaign is finished only when every
         * plan item is done. Then nothing runs (no coordinator run is counted). */
        if (rc == VB_OK) rc = vb_store_plan_tally(c->store, &n_done, &n_failed, &n_expired, &n_rest, NULL, 0, err);
        if (rc == VB_OK && n_done == c->plan->n_items && !o->retry_failed) {
            vb_console_say(&c->console, "campaign %s: all %zu plan items are done; nothing to resume", c->profile->name, n_done);
            c->nothing_to_resume = 1;
        } else if (rc == VB_OK && strcmp(status, "finished") == 0) {
            vb_console_say(&c->console, "campaign %s was marked finished, but %zu of its %zu plan items are not done: running them",
                c->profile->name, c->plan->n_items - n_done, c->plan->n_items);
        }
        free(yaml);
        free(source);
        free(engines);
        free(status);
        if (rc) return VB_ERROR;
        if (c->nothing_to_resume) return VB_OK;
    }
    if (o->no_local_agents && !o->listen)
        return vb_error_set(err, "coordinator", 1, "--no-local-agents needs --listen: the agents come from other hosts");
    if (!o->listen && (o->cert || o->allow_dir))
        return vb_error_set(err, "coordinator", 1, "--cert and --allow go with --listen tcp://ADDR:PORT");
    snprintf(c->run_dir, sizeof c->run_dir, "/tmp/vbench-%d-XXXXXX", (int)getpid());
    if (!mkdtemp(c->run_dir))
        return vb_error_set(err, "coordinator", errno, "cannot create a run directory in /tmp: %s", strerror(errno));
    snprintf(c->endpoint, sizeof c->endpoint, "ipc://%s/coordinator.sock", c->run_dir);
    c->router = zsock_new(ZMQ_ROUTER);
    zsock_set_router_mandatory(c->router, 1);
    vb_transport_socket_limits(c->router, 1);   /* ZMQ_MAXMSGSIZE and ZMTP heartbeats (proto/transport.h) */
    /* Handover: an agent that reconnects on a new socket while its old connection still looks open here takes over
     * its routing id. Under CURVE it is off: libzmq hands the id over before any message (and so before
     * vb_campaign_sender_allowed can check the key), and the ZAP request does not carry the peer's routing id (libzmq 4.3.4
     * sends the ROUTER's own), so an allowed key could take another running agent's id and cut it off. Without
     * handover a second connection under a live id is ignored by libzmq, and the heartbeats close a connection
     * that died on the wire within VB_TRANSPORT_HEARTBEAT_TIMEOUT_MS, so an agent coming back after a cut link
     * gets in: at once, or at its next new socket (limits.agent_silent_s later). */
    zsock_set_router_handover(c->router, o->cert == NULL);
    /* Agents on other hosts: the rules, keys and allow-list are proto/transport's. Under CURVE the local agent
     * (same ROUTER, over ipc) gets throw-away keys in the run directory. */
    if (o->listen) {
        const char *insecure = vb_profile_setting(c->profile, "transport.insecure", "false");
        vb_transport_opts t = {.endpoint = o->listen, .cert = o->cert, .allow_dir = o->allow_dir,
                               .insecure = strcmp(insecure, "true") == 0, .on_peer = on_peer, .on_peer_arg = c};
        if (vb_transport_server_setup(c->router, &t, &c->zap, err) != VB_OK) return VB_ERROR;
        snprintf(listening, sizeof listening, "%s", zsock_endpoint(c->router));
    }
    if (zsock_bind(c->router, "%s", c->endpoint) < 0)
        return vb_error_set(err, "coordinator", zmq_errno(), "cannot bind %s: %s", c->endpoint, zmq_strerror(zmq_errno()));
    if (vb_campaign_servers_init(c) != VB_OK) return vb_error_set(err, "coordinator", 1, "out of memory");
    if (c->need_orchestrator) {
        int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
        uint64_t mem = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
        if (vb_budget_resolve(c->profile, cores, mem, &c->local_budget, err)) return VB_ERROR;
    }
    /* --data-dir before anything is made: a directory (made here when missing) that this process may write */
    struct stat dd;
    if (o->data_dir && !o->check_only && mkdir(o->data_dir, 0700) != 0 && errno != EEXIST)
        return vb_error_set(err, "config", 1, "--data-dir %s: cannot create it: %s", o->data_dir, strerror(errno));
    if (o->data_dir && !o->check_only && (stat(o->data_dir, &dd) != 0 || !S_ISDIR(dd.st_mode) || access(o->data_dir, W_OK | X_OK) != 0))
        return vb_error_set(err, "config", 1, "--data-dir %s: not a directory this process can write", o->data_dir);
    /* disk, memory, CPUs, recipes and images, before anything is made (coordinator/preflight.h); a resume's servers'
     * data directory is the one its run recorded, unless --data-dir moves it */
    char stored_dd[1100];
    int had_dd = o->resume && c->store && vb_store_manifest_get(c->store, "campaign.data_dir", stored_dd, sizeof stored_dd);
    if (vb_preflight_campaign(o, c->profile, c->plan, had_dd ? stored_dd : NULL, err)) return VB_ERROR;
    /* registry datasets: their files in the cache, fetched when missing (coordinator/fetch_datasets.h) */
    vb_fetch_datasets_opts fo = {.cache_dir = o->cache_dir, .mirror = o->mirror, .no_fetch = o->no_fetch,
                                 .quiet = o->quiet};
    if (vb_fetch_profile_datasets(c->profile, &fo, err)) return VB_ERROR;
    /* a dataset an engine cannot compare by (config/profile.h), now that every file is in the cache */
    if (vb_profile_check_metrics(c->profile, err)) return VB_ERROR;

    /* Rates measured on this host before a long campaign is estimated (coordinator/calibrate.h) */
    char probed[2048] = "";
    if (!o->resume) vb_calibrate_before_run(o, c->profile, c->plan, (vb_probe_mode)o->probe_mode,
                                            o->quiet ? NULL : stderr, probed, sizeof probed);

    /* Every check passed: the database. */
    if (!o->resume) {
        vb_store_opts so = {.access = VB_STORE_CREATE, .mode = o->mode, .campaign = c->profile->name};
        if (vb_store_open_with(o->out, &so, &c->store, err)) return VB_ERROR;
        if (vb_store_init_campaign(c->store, c->profile, o->engines, c->plan, err) ||
            vb_manifest_record_host(c->store, err) ||
            vb_manifest_record_profile(c->store, c->profile, o->command_line, err)) {
            vb_store_discard(&c->store);   /* no half-made campaign file: the same command works once fixed */
            return vb_error_prefix(err, "%s was not created (nothing is left behind: fix this and run the same "
                                        "command again)", o->out);
        }
    }
    vb_store_backup_every(c->store, c->profile->limits.backup_every_s);
    c->orphan = -1;
    unsigned *retried = vb_campaign_attempt_bases(c, o->retry_failed, err);
    if (!retried ||
        vb_store_begin_run(c->store, o->retry_failed, o->resume ? o->command_line : NULL, err) ||
        (o->resume && vb_campaign_find_orphan(c, err)) ||
        vb_campaign_load_item_states(c, retried, err)) {
        free(retried);
        return VB_ERROR;
    }
    free(retried);
    if (probed[0]) vb_store_manifest_set(c->store, "estimate.probe", probed, NULL);
    vb_estimate_campaign_start(c->store, c->profile, c->plan, o->cache_dir, o->quiet ? NULL : stderr);
    vb_notify_init(&c->notify, o->notify, c->profile, c->store, o->out);
    vb_server_pass_record(c->profile, c->store);
    if (c->orphan >= 0) {
        c->orphan_deadline_ns = vb_now_ns() + c->profile->limits.agent_silent_ns;
        vb_console_say(&c->console, "%s was running on agent %s when the coordinator stopped: waiting up to %.0f s for that agent",
            c->plan->items[c->orphan].key, c->orphan_agent, c->profile->limits.agent_silent_s);
    }
    snprintf(c->work_dir, sizeof c->work_dir, "%s.d", o->out);
    struct stat db_st;
    mkdir(c->work_dir, stat(o->out, &db_st) == 0 ? (db_st.st_mode & 0777) | ((db_st.st_mode & 0444) >> 2) : 0700);
    /* The servers' data directories (and the local agents' other files) apart from the results: --data-dir, kept
     * in the manifest so that a resume finds them where the run put them. */
    char stored[1100];
    int had = vb_store_manifest_get(c->store, "campaign.data_dir", stored, sizeof stored);
    snprintf(c->agent_dir, sizeof c->agent_dir, "%s", o->data_dir ? o->data_dir : had ? stored : c->work_dir);
    if (o->data_dir || had) {
        if (mkdir(c->agent_dir, 0700) != 0 && errno != EEXIST) {
            vb_error_set(err, "config", 1, "the servers' data directory %s (campaign.data_dir): cannot create it: %s",
                         c->agent_dir, strerror(errno));
            return VB_ERROR;
        }
        if (o->data_dir && had && strcmp(stored, o->data_dir) != 0)
            vb_console_say(&c->console, "the servers' data directory moves from %s to %s (--data-dir): servers started "
                           "before find none of their data there", stored, o->data_dir);
        if (!had || strcmp(stored, c->agent_dir) != 0) vb_store_manifest_set(c->store, "campaign.data_dir", c->agent_dir, NULL);
    }
    if (o->listen) {
        vb_console_say(&c->console, "listening for agents on %s (%s)", listening,
                        c->zap ? "CURVE" : "plain TCP on loopback: insecure");
        /* In the manifest: which coordinator (key) the agents talked to, so a published run names its keys. */
        vb_store_manifest_set(c->store, "transport.listen", o->listen, NULL);
        vb_store_manifest_set(c->store, "transport.security", c->zap ? "curve" : "insecure", NULL);
        if (c->zap) vb_store_manifest_set(c->store, "transport.coordinator_key", vb_transport_zap_server_key(c->zap), NULL);
    }
    c->local[0] = (local_agent){.id = "local-client", .roles = "client"};
    c->n_local = o->no_local_agents ? 0 : 1;
    if (o->agent_cpus) snprintf(c->local[0].cpus, sizeof c->local[0].cpus, "%s", o->agent_cpus);
    if (c->need_orchestrator) {
        /* A server on this host: the client keeps to the budget's client CPUs so it does not take the server's. */
        kvbuild kb = {.n = 0};
        vb_budget_each(&c->local_budget, vb_campaign_kvbuild_add, &kb);
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
    for (int k = 0; k < c->n_local; k++)
        if (vb_campaign_spawn_local_agent(c, k, err)) return VB_ERROR;
    return VB_OK;
}

/* What a campaign holds in memory, freed (the sockets and local agents are teardown's): teardown's last step and
 * the unit tests' fixture's (tests/unit/campaign_fixture.h). */
void vb_campaign_free_state(campaign *c) {
    free(c->peers);
    vb_agent_queue_clear(&c->agent_events);
    free(c->items);
    free(c->runs);
    for (size_t e = 0; c->servers && e < c->profile->n_engines; e++) {
        for (size_t i = 0; i < c->servers[e].n_connect; i++)
            free((char *)c->servers[e].connect[i].key), free((char *)c->servers[e].connect[i].value);
        free(c->servers[e].connect);
        for (int q = 0; q < VB_PLACE_MAX_PARTS; q++) {   /* a placed server's parts (servers.c) */
            for (size_t i = 0; i < c->servers[e].part[q].n_connect; i++)
                free((char *)c->servers[e].part[q].connect[i].key), free((char *)c->servers[e].part[q].connect[i].value);
            free(c->servers[e].part[q].connect);
        }
    }
    free(c->servers);
    free(c->server_of);
    vb_store_close(&c->store);
    vb_plan_destroy(&c->plan);
    vb_profile_destroy(&c->profile);
}

static void teardown(campaign *c) {
    for (size_t i = 0; i < c->n_peers; i++) {
        vb_campaign_agent_fire(c, &(agent_ev){.kind = VB_AGENT_EV_CAMPAIGN_END, .p = &c->peers[i], .item = -1});
        zframe_destroy(&c->peers[i].routing);
    }
    vb_campaign_stop_local_agents(c);
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
    vb_campaign_free_state(c);
}

/* SIGHUP asks for the allow-list to be read again (systemctl reload); the loop does it, not the handler. */
static volatile sig_atomic_t reload_requested;

static void on_sighup(int sig) {
    (void)sig;
    reload_requested = 1;
}

/* Reads the --allow directory again: keys added there are accepted from the next handshake on; an agent whose key
 * was taken away is sent away at its next message (vb_campaign_sender_allowed). A broken list keeps the old one. */
static void reload_allow_list(campaign *c) {
    reload_requested = 0;
    vb_error rerr;
    vb_error_clear(&rerr);
    if (vb_transport_zap_reload(c->zap, &rerr) != VB_OK) {
        vb_store_event(c->store, VB_EVENT_ALLOW_LIST, "error", NULL, "transport",
                       "allow-list not reloaded, the previous one stays: %s",
                       rerr.message);
        vb_console_say(&c->console, "allow-list not reloaded, the previous one stays: %s", rerr.message);
        return;
    }
    vb_store_event(c->store, VB_EVENT_ALLOW_LIST, "info", NULL, "transport", "allow-list reloaded from %s: %zu keys",
                   c->o->allow_dir,
                   vb_transport_zap_count(c->zap));
    vb_console_say(&c->console, "allow-list reloaded from %s: %zu keys", c->o->allow_dir, vb_transport_zap_count(c->zap));
}

/* One turn of receiving, the coordinator's only one, used by the main loop and by the loop that waits for the servers
 * to stop: waits up to ms for the router or the ZAP handler, answers a ZAP request (a handshake under way), and hands
 * a message to the agent machine only when its key may speak for the id it uses (vb_campaign_sender_allowed). A
 * message that cannot be decoded is an event. */
static void receive_turn(campaign *c, zpoller_t *poller, int ms) {
    void *which = zpoller_wait(poller, ms);
    if (vb_transport_zap_handle(c->zap, which)) return;   /* a ZAP request answered or a failed handshake reported */
    if (which != c->router) return;
    zframe_t *routing = NULL;
    vb_error rerr;
    char user_id[64];
    Vbench__Envelope *env = vb_wire_recv_from(c->router, &routing, user_id, sizeof user_id, &rerr);
    if (env) {
        if (vb_campaign_sender_allowed(c, routing, user_id)) vb_campaign_agent_on(c, routing, env);
        vb_wire_free(env);
        zframe_destroy(&routing);
    } else if (!zsys_interrupted) {
        vb_store_event(c->store, VB_EVENT_MESSAGE_DROPPED, "warn", NULL, "coordinator", "dropped a message: %s",
                       rerr.message);
    }
}

/* Stopping: the running item's agents are told to abort, and the item goes back to pending as interrupted (its
 * attempt is no longer current, so nothing it sends after is recorded). Nothing when no item runs. */
static void abort_running(campaign *c, const vb_error *err) {
    if (c->running < 0) return;
    for (size_t i = 0; i < c->n_peers; i++)
        vb_campaign_agent_fire(c, &(agent_ev){.kind = VB_AGENT_EV_ABORT, .p = &c->peers[i], .item = c->running,
                                  .reason = VBENCH__ABORT_REASON__ABORT_COORDINATOR_STOPPING});
    vb_campaign_interrupt_item(c, c->running, zsys_interrupted ? "the coordinator was interrupted" : err->message, 0);
}

int vb_campaign_run(const vb_campaign_opts *o, vb_error *err) {
    campaign c = {.o = o, .running = -1};
    vb_console_init(&c.console, stderr, o->quiet, isatty(2));
    zsys_init();
    zsys_set_linger(200);
    if (prepare(&c, err) != VB_OK) {
        if (c.store) vb_store_event(c.store, VB_EVENT_CAMPAIGN_ERROR, "error", NULL, "coordinator", "%s", err->message);
        teardown(&c);
        return -1;
    }
    if (c.nothing_to_resume) {
        teardown(&c);
        return 0;
    }
    size_t done0 = 0;
    for (size_t i = 0; i < c.plan->n_items; i++) done0 += c.items[i] != ITEM_PENDING;
    vb_console_say(&c.console, "campaign %s: %zu items (%zu already complete), results in %s", c.profile->name,
                    c.plan->n_items, done0, o->out);
    char wd[600];
    snprintf(wd, sizeof wd, "campaign %s: %zu items (%zu already complete)", c.profile->name, c.plan->n_items, done0);
    vb_watchdog_ready(wd);   /* Type=notify: set up (util/watchdog.h) */

    if (c.zap) {   /* only with an allow-list: otherwise SIGHUP keeps its default (a closed terminal ends us) */
        struct sigaction hup = {.sa_handler = on_sighup};
        sigemptyset(&hup.sa_mask);
        sigaction(SIGHUP, &hup, NULL);
    }
    vb_footprint footprint;
    vb_footprint_init(&footprint, c.profile->limits.footprint_every_s);
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
        if (vb_store_failure(c.store)) {
            /* The store failed (disk full, I/O error, damaged file): nothing more can be recorded, and retrying
             * would only repeat the failure. Stop cleanly, once; see the end of this function. */
            vb_error_set(err, "results", 0, "%s", vb_store_failure(c.store));
            vb_console_clear(&c.console);
            fprintf(stderr, "vbench: the results database %s cannot be written (%s): stopping the campaign\n", o->out,
                    vb_store_failure(c.store));
            interrupted = 1;
            break;
        }
        if (c.stop_reason) {
            vb_error_set(err, "coordinator", 1, "%s", c.stop_reason);
            interrupted = 1;
            break;
        }
        int next = vb_campaign_next_item(&c);
        int servers_busy = vb_campaign_servers_housekeeping(&c);
        if (next < 0 && c.running < 0 && !servers_busy) {
            /* All done: wait (a little) for the agents' Done of the last item, so that their outboxes end empty. */
            int ending = 0;
            for (size_t i = 0; i < c.n_peers; i++)
                ending |= c.peers[i].state == VB_AGENT_BUSY || c.peers[i].state == VB_AGENT_DRAINING;
            if (!ending) break;
            if (!end_wait_ns) end_wait_ns = vb_now_ns() + 30000000000ull;
            if (vb_now_ns() > end_wait_ns) break;
        }
        vb_campaign_lend_release(&c);
        int hold = vb_campaign_hold_assignments(&c);
        if (c.running < 0 && next >= 0 && !hold && vb_campaign_server_ready_for(&c, next)) {
            peer *p = vb_campaign_idle_peer_with_role(&c, c.plan->items[next].role);
            /* asked once a turn: a yes is given once (the server's phase request is then done with), so a second
             * call in the same turn would send the request again and wait for it anew */
            int confirmed = p && vb_campaign_server_confirmed(&c, next);
            int lent = confirmed ? vb_campaign_lend_pick(&c, next, p) : 0;
            if (lent < 0) {
                /* capacity's client_agents: N waits until N client agents are idle (said by lend.c) */
            } else if (confirmed) {
                vb_campaign_agent_fire(&c, &(agent_ev){.kind = VB_AGENT_EV_ASSIGN, .p = p, .item = next});
                for (peer *q; lent && (q = vb_campaign_lend_next(&c, next));)
                    vb_campaign_agent_fire(&c, &(agent_ev){.kind = VB_AGENT_EV_LEND, .p = q, .id = q->id, .item = next});
                c.waiting_said_ns = 0;
            } else if (p) {
                /* waiting for the orchestrator's go */
            } else if (c.n_peers == 0 && vb_now_ns() - started > HELLO_WAIT_NS) {
                vb_error_set(err, "coordinator", 1, "no agent with role %s said hello within %llu s",
                             c.plan->items[next].role, HELLO_WAIT_NS / 1000000000ull);
                interrupted = 1;
                break;
            } else if (!p && c.n_peers > 0) {
                vb_campaign_note_waiting(&c, next);
            }
        } else if (c.running < 0 && next >= 0 && vb_campaign_engine_recipe(&c, (int)c.plan->items[next].engine) &&
                   !vb_campaign_orchestrator_peer(&c, NULL) && vb_now_ns() - started > HELLO_WAIT_NS) {
            vb_error_set(err, "coordinator", 1, "engine %s needs a server, but no agent with role orchestrator said "
                         "hello within %llu s", vb_campaign_item_engine(&c, next), HELLO_WAIT_NS / 1000000000ull);
            interrupted = 1;
            break;
        }
        vb_campaign_agent_drain(&c);   /* what the servers' housekeeping and the assignment posted (nothing today) */
        receive_turn(&c, poller, 100);
        for (size_t i = 0; i < c.n_peers; i++)
            if (c.peers[i].state != VB_AGENT_LOST && vb_now_ns() - c.peers[i].last_sent_ns > HEARTBEAT_MS * 1000000ull)
                vb_campaign_send_simple(&c, &c.peers[i], VBENCH__ENVELOPE__BODY_HEARTBEAT, 0, NULL, NULL);
        vb_campaign_agent_drain(&c);   /* what a message's handling posted (a server death stops its item) */
        static void (*const checks[])(campaign *) = {vb_campaign_check_silent, vb_campaign_check_reinsert_limit,
                                                      vb_campaign_check_unanswered, vb_campaign_check_phase_timeout};
        for (size_t k = 0; k < sizeof checks / sizeof checks[0]; k++) checks[k](&c), vb_campaign_agent_drain(&c);
        for (size_t i = 0; i < c.n_peers; i++)   /* notify.agent_lost_min */
            if (c.peers[i].state == VB_AGENT_LOST)
                vb_notify_agent_lost(&c.notify, c.peers[i].id, (double)(vb_now_ns() - c.peers[i].last_heard_ns) / 1e9);
            else
                vb_notify_agent_back(&c.notify, c.peers[i].id);
        vb_notify_tick(&c.notify);
        vb_campaign_watch_local_agents(&c);
        vb_campaign_agent_drain(&c);
        vb_store_backup_tick(c.store);   /* FILE.bak every limits.backup_every_s */
        vb_footprint_tick(&footprint, c.store);   /* its own memory, every limits.footprint_every_s */
        int dead = 0;
        for (int k = 0; k < c.n_local; k++) dead |= c.local[k].pid == 0 && c.local[k].respawns > MAX_LOCAL_RESPAWNS;
        if (dead) {
            vb_error_set(err, "coordinator", 1, "the local agent keeps dying; see `vbench status --out %s`", o->out);
            interrupted = 1;
            break;
        }
        vb_console_print_progress(&c.console, 0);
        if (vb_watchdog_due()) {   /* WATCHDOG=1 from the loop: a hung loop is restarted by systemd and resumes */
            size_t d = 0;
            for (size_t i = 0; i < c.plan->n_items; i++) d += c.items[i] != ITEM_PENDING && c.items[i] != ITEM_RUNNING;
            snprintf(wd, sizeof wd, "%zu/%zu items; %s %s", d, c.plan->n_items, c.running >= 0 ? "running" : "waiting",
                     c.running >= 0 ? c.plan->items[c.running].key : "");
            vb_watchdog_tick(wd);
        }
    }
    /* An interrupted campaign's running item is aborted and marked interrupted before its server is stopped: the
     * agent's work fails as the server goes away ("Lost connection"), and that failure, read while the servers
     * stop, was recorded as the item's own: a build failed for a Ctrl-C, the rest of its engine skipped, and
     * resume ran none of them. Now that failure belongs to an attempt that is no longer current: not recorded. */
    if (interrupted) abort_running(&c, err);
    /* Servers still up: stop them (an interrupted campaign's servers too; resume starts them again and reuses
     * their data directories). Up to 120 s, answering the orchestrator's messages meanwhile. */
    uint64_t stop_deadline = vb_now_ns() + 120ull * 1000000000ull;
    /* After SIGINT (zsys_interrupted) czmq's zpoller_wait returns at once without looking at the sockets: the
     * orchestrator's "stopped" would never be read and this loop would spin until the deadline. It has its own
     * deadline, so here the poller keeps polling. */
    zpoller_set_nonstop(poller, true);
    for (;;) {
        int waiting = 0;
        for (size_t e = 0; e < c.profile->n_engines; e++) {
            if (vb_campaign_engine_recipe(&c, (int)e) && vb_campaign_server_of(&c, (int)e) == (int)e)
                vb_campaign_server_fire(&c, (int)e, &(server_ev){.kind = VB_SERVER_EV_CAMPAIGN_END});
            waiting |= c.servers[e].state == VB_SERVER_STOPPING || c.servers[e].state == VB_SERVER_STARTING;
        }
        if (!waiting || vb_now_ns() > stop_deadline) break;
        vb_watchdog_tick("stopping the servers");
        receive_turn(&c, poller, 200);
        vb_campaign_agent_drain(&c);
        vb_campaign_watch_local_agents(&c);
        vb_campaign_agent_drain(&c);
    }
    zpoller_destroy(&poller);
    vb_console_clear(&c.console);

    size_t n_done = 0, failed = 0, expired = 0, rest = 0;
    char not_done[2048] = "";
    if (!interrupted) {
        /* The tally is the database's (plan rows), not this process's memory: "finished" and exit 0 only when
         * every plan item is recorded done. An item not done here (its result could not be committed, ...) keeps
         * the campaign resumable. */
        vb_error terr;
        if (vb_store_plan_tally(c.store, &n_done, &failed, &expired, &rest, not_done, sizeof not_done, &terr)) {
            vb_error_set(err, "results", terr.code, "%s", terr.message);
            interrupted = 1;
        } else if (rest) {
            vb_error_set(err, "coordinator", 1, "%zu of %zu plan items are not done: %s", rest, c.plan->n_items,
                         not_done);
            interrupted = 1;
        }
    }
    if (interrupted) {
        const char *store_failure = vb_store_failure(c.store);
        abort_running(&c, err);
        vb_store_set_status(c.store, "interrupted", NULL);
        vb_store_event(c.store, VB_EVENT_CAMPAIGN_INTERRUPTED, "warn", NULL, "coordinator",
                       "campaign interrupted%s%s", zsys_interrupted ? "" : ": ",
                       zsys_interrupted ? "" : err->message);
        if (store_failure) {
            /* Said even with --quiet: the operator must act before `resume` can work. */
            vb_console_clear(&c.console);
            fprintf(stderr, "vbench: campaign %s stopped: the results database %s cannot be written: %s\n"
                            "vbench: nothing recorded is lost; results not yet recorded stay in their agents' outboxes "
                            "and are sent again. Free space on its file system (or fix the cause), then continue "
                            "with: vbench resume --out %s\n", c.profile->name, o->out, store_failure, o->out);
        } else if (rest) {
            vb_console_clear(&c.console);
            fprintf(stderr, "vbench: campaign %s is not complete: %s; continue it with: vbench resume --out %s\n",
                    c.profile->name, err->message, o->out);
        } else {
            vb_console_say(&c.console, "campaign interrupted; continue it with: vbench resume --out %s", o->out);
        }
        code = 2;
    } else {
        vb_error serr;
        if (vb_store_set_status(c.store, failed ? "failed" : expired ? "incomplete" : "finished", &serr)) {
            fprintf(stderr, "vbench: campaign %s: every plan item is recorded, but its status could not be: %s; "
                            "`vbench resume --out %s` records it\n", c.profile->name, serr.message, o->out);
            teardown(&c);
            return 2;
        }
        vb_estimate_campaign_end(c.store, c.profile, o->cache_dir, (double)(vb_now_ns() - started) / 1e9,
                                 o->quiet ? NULL : stderr);
        if (!o->quiet) {
            vb_error rerr;
            vb_report_show(vb_store_db(c.store), stdout, 0, &rerr);
            fflush(stdout);
        }
        if (failed) vb_console_say(&c.console, "campaign %s finished with %zu failed or skipped items: see `vbench status --out %s`",
                        c.profile->name, failed, o->out);
        if (expired)
            vb_console_say(&c.console, "campaign %s: %zu items stopped at their limit; continue them with `vbench resume "
                            "--out %s`", c.profile->name, expired, o->out);
        if (!failed && !expired) vb_console_say(&c.console, "campaign %s finished: %s", c.profile->name, o->out);
        code = failed || expired ? 1 : 0;
    }
    vb_notify_send(&c.notify, code == 2 ? "interrupted" : failed ? "failed" : expired ? "incomplete" : "finished",
                   code == 2 && err->message[0] ? err->message : NULL);
    vb_notify_finish(&c.notify);
    teardown(&c);
    return code;
}
