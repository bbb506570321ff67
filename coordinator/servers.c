/* Servers of the engines that have a recipe: the requests to the orchestrator (start, stop, phase), the facts and
 * actions of the server machine (the table in coordinator/server_fsm.c), and the orchestrator's reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator/campaign_int.h"

/* ---- servers (engines with a recipe) ------------------------------------------------------------------------ */

const char *vb_campaign_engine_recipe(campaign *c, int e) { return vb_profile_engine_recipe(&c->profile->engines[e]); }

/* One server per engine entry, recipe and topology (its nodes, which the orchestrator starts as one server): the
 * configurations of an entry (a matrix such as `m: [6, 16]`) run on the server of the first of them, so it starts once for all of them and each configuration that shares a build
 * (config/profile.h build_of) finds the table its twin built. Each configuration's own table keeps them apart. */
int vb_campaign_servers_init(campaign *c) {
    size_t n = c->profile->n_engines;
    c->servers = calloc(n ? n : 1, sizeof *c->servers);
    c->server_of = calloc(n ? n : 1, sizeof *c->server_of);
    if (!c->servers || !c->server_of) return VB_ERROR;
    for (size_t e = 0; e < n; e++) {
        const vb_profile_engine *en = &c->profile->engines[e];
        const char *recipe = vb_campaign_engine_recipe(c, (int)e);
        c->need_orchestrator |= recipe != NULL;
        c->servers[e].phase_item = c->servers[e].last_item = -1;
        c->servers[e].cold_requested = c->servers[e].cold_item = -1;
        c->servers[e].perf_item = c->servers[e].perf_asked = -1;
        c->server_of[e] = (int)e;
        for (size_t j = 0; recipe && j < e; j++) {
            const char *rj = vb_campaign_engine_recipe(c, (int)j);
            /* and the same topology: `shards: [1, 2]` are two sets of servers (config/profile.h) */
            if (rj && strcmp(rj, recipe) == 0 && strcmp(c->profile->engines[j].entry, en->entry) == 0 &&
                vb_profile_engine_nodes(&c->profile->engines[j]) == vb_profile_engine_nodes(en)) {
                c->server_of[e] = c->server_of[j];
                break;
            }
        }
    }
    return VB_OK;
}

int vb_campaign_server_of(campaign *c, int e) { return c->server_of ? c->server_of[e] : e; }

/* The name of the server that configuration e owns: its entry's name ("pgvector" for all of pgvector[...]),
 * or its own label when an earlier configuration of the entry runs on another server (another recipe). It names
 * the unit, the data directory, the manifest's server.NAME.* keys and the server tables' engine column. */
const char *vb_campaign_server_name(campaign *c, int e) {
    const vb_profile_engine *en = &c->profile->engines[e];
    for (int j = 0; j < e; j++)
        if (strcmp(c->profile->engines[j].entry, en->entry) == 0) return en->name;
    return en->entry;
}

/* The server owner whose server is called name, -1 none. */
static int server_index(campaign *c, const char *name) {
    for (size_t i = 0; i < c->profile->n_engines; i++)
        if (vb_campaign_server_of(c, (int)i) == (int)i && vb_campaign_engine_recipe(c, (int)i) &&
            strcmp(vb_campaign_server_name(c, (int)i), name) == 0)
            return (int)i;
    return -1;
}

void vb_campaign_kvbuild_add(void *ctx, const char *key, const char *value) {
    kvbuild *b = ctx;
    if (b->n == 32) return;
    snprintf(b->vals[b->n], sizeof b->vals[b->n], "%s", value);
    b->kv[b->n] = (vb_kv){key, b->vals[b->n]};
    b->n++;
}

/* The parts of a request only some actions have: SERVER_PHASE's perf, SERVER_PROFILE's window; the start of a
 * placed server's part: the nodes it runs and node 0's connect parameters (placement.h). */
typedef struct request_extra {
    int perf;
    double profile_start, profile_end;
    const vb_place_part *place;
    const vb_kv *primary;
    size_t n_primary;
} request_extra;

static void send_server_request_x(campaign *c, peer *p, int e, Vbench__ServerAction action, const char *item_key,
                                  const kvbuild *budget, const request_extra *x) {
    Vbench__ServerRequest rq = VBENCH__SERVER_REQUEST__INIT;
    if (x) rq.perf = x->perf, rq.profile_start = x->profile_start, rq.profile_end = x->profile_end;
    rq.engine = (char *)vb_campaign_server_name(c, e);
    rq.recipe = (char *)vb_campaign_engine_recipe(c, e);
    rq.action = action;
    rq.item_key = (char *)(item_key ? item_key : "");
    rq.campaign = c->profile->name;
    rq.nodes = (uint32_t)vb_profile_engine_nodes(&c->profile->engines[e]);
    rq.replicas = (uint32_t)vb_profile_engine_replicas(&c->profile->engines[e]);
    if (budget) {
        rq.n_budget = budget->n;
        rq.budget = vb_wire_kv_make(budget->kv, budget->n);
    }
    uint32_t place[VB_PLACE_MAX_NODES];
    if (x && x->place) {
        for (int k = 0; k < x->place->n_nodes; k++) place[k] = (uint32_t)x->place->nodes[k];
        rq.n_place = (size_t)x->place->n_nodes;
        rq.place = place;
    }
    if (x && x->n_primary) {
        rq.n_primary = x->n_primary;
        rq.primary = vb_wire_kv_make(x->primary, x->n_primary);
    }
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_SERVER_REQUEST;
    env.server_request = &rq;
    vb_campaign_send_to(c, p, &env);
    vb_wire_kv_free(rq.budget, rq.n_budget);
    vb_wire_kv_free(rq.primary, rq.n_primary);
}

static void send_server_request(campaign *c, peer *p, int e, Vbench__ServerAction action, const char *item_key,
                                const kvbuild *budget) {
    send_server_request_x(c, p, e, action, item_key, budget, NULL);
}

/* ---- CPU profiles (phases.concurrency.profile: perf; docs/metrics.md "CPU profile") ------------------------- */

/* phases.concurrency.profile_clients of item i's configuration: the client count to profile (0: none named, the
 * first window whose efficiency falls below 0.5 is) */
static long profile_clients(campaign *c, int i) {
    const char *v = vb_profile_engine_phase_value(c->profile, c->plan->items[i].engine, "concurrency", "profile_clients");
    return v ? strtol(v, NULL, 10) : 0;
}

/* Whether item i runs under perf: a concurrency item of a configuration that asks for it and has no profile on
 * its dataset yet (the first window whose efficiency falls below 0.5 is profiled, the later ones run without
 * perf: a repeat of that point measures perf's overhead). */
static int perf_wanted(campaign *c, int i) {
    const vb_plan_item *it = &c->plan->items[i];
    if (it->kind != VB_PHASE_CONCURRENCY) return 0;
    const char *v = vb_profile_engine_phase_value(c->profile, it->engine, "concurrency", "profile");
    if (!v || strcmp(v, "perf") != 0) return 0;
    const server *sv = &c->servers[vb_campaign_server_of(c, (int)it->engine)];
    if (sv->perf_asked >= 0 && c->plan->items[sv->perf_asked].engine == it->engine &&
        c->plan->items[sv->perf_asked].dataset == it->dataset)
        return 0;   /* its profile is asked for and not answered yet */
    return !vb_store_has_server_profile(c->store, vb_campaign_item_engine(c, i), vb_campaign_item_dataset(c, i));
}

void vb_campaign_server_window_done(campaign *c, int i) {
    int e = vb_campaign_server_of(c, (int)c->plan->items[i].engine);
    if (!vb_campaign_engine_recipe(c, e)) return;
    server *sv = &c->servers[e];
    if (sv->perf_item != i) return;
    vb_store_profile_window w;
    long named = profile_clients(c, i);
    if (!vb_store_window_for_profile(c->store, c->plan->items[i].key, &w)) return;
    if (named > 0 ? c->plan->items[i].p.clients != named : !w.has_efficiency || w.efficiency >= 0.5)
        return;   /* not the window named, or it scales (or cannot say): the next request drops the recording */
    peer *orch = vb_campaign_orchestrator_peer(c, sv->orchestrator);
    if (!orch) return;
    sv->perf_item = -1;
    sv->perf_asked = i;
    sv->perf_window = w;
    send_server_request_x(c, orch, e, VBENCH__SERVER_ACTION__SERVER_PROFILE, c->plan->items[i].key, NULL,
                          &(request_extra){.profile_start = w.start, .profile_end = w.end});
}

/* The orchestrator's answer: the profile into the store, or its note (perf missing, refused, no sample) into the
 * manifest and the events; the campaign goes on either way. */
static void store_profile(campaign *c, int e, const Vbench__ServerProfile *pr) {
    server *sv = &c->servers[e];
    const char *name = vb_campaign_server_name(c, e);
    int i = vb_campaign_item_index(c, pr->item_key);
    char key[256], text[1400];
    snprintf(key, sizeof key, "server.%s.perf", name);
    if (i < 0 || pr->samples == 0) {
        if (sv->perf_asked == i) sv->perf_asked = -1;   /* the next window below 0.5 is tried */
        snprintf(text, sizeof text, "no CPU profile: %s", pr->note && *pr->note ? pr->note : "no samples");
        vb_store_manifest_set(c->store, key, text, NULL);
        vb_store_event(c->store, VB_EVENT_SERVER, "warn", pr->item_key, "coordinator", "%s server: %s", name, text);
        vb_console_say(&c->console, "the %s server: %s", name, text);
        return;
    }
    vb_store_profile_window w = sv->perf_asked == i ? sv->perf_window : (vb_store_profile_window){0};
    vb_error err;
    if (vb_store_server_profile(c->store, name, vb_campaign_item_engine(c, i), vb_campaign_item_dataset(c, i), &w, pr,
                                &err) != VB_OK) {
        vb_console_say(&c->console, "vbench: could not record the CPU profile of %s: %s", pr->item_key, err.message);
        return;
    }
    int o = snprintf(text, sizeof text, "profiled %s (%d clients, efficiency %.2f): %llu samples, hottest", pr->item_key,
                     w.clients, w.efficiency, (unsigned long long)pr->samples);
    for (size_t k = 0; k < pr->n_top && k < 3 && o < (int)sizeof text; k++)
        o += snprintf(text + o, sizeof text - (size_t)o, "%s %s %.0f %%", k ? "," : "", pr->top[k]->name,
                      100.0 * (double)pr->top[k]->samples / (double)pr->samples);
    vb_store_manifest_set(c->store, key, text, NULL);
    vb_console_say(&c->console, "the %s server: %s", name, text);
    sv->perf_asked = -1;
}

static void server_set_failure(server *sv, const char *message, const char *tail) {
    snprintf(sv->failure, sizeof sv->failure, "%s%s%.3000s", message, tail && *tail ? "\nlog tail:\n" : "",
             tail && *tail ? tail : "");
}

/* The parts of a report's body the actions read: ready has message, connect and facts; failed, died and stopped
 * a message, the log tail and facts; samples and sizes their item. Empty where a body has no such part. */
typedef struct report_view {
    const char *message, *log_tail, *item_key;
    Vbench__KV **facts, **connect;
    size_t n_facts, n_connect;
} report_view;

static report_view report_parts(const Vbench__ServerReport *r) {
    report_view v = {.message = "", .log_tail = "", .item_key = ""};
    const Vbench__ServerEnd *end = NULL;
    if (!r) return v;
    switch (r->body_case) {
    case VBENCH__SERVER_REPORT__BODY_READY:
        v.message = r->ready->message, v.facts = r->ready->facts, v.n_facts = r->ready->n_facts;
        v.connect = r->ready->connect, v.n_connect = r->ready->n_connect;
        break;
    case VBENCH__SERVER_REPORT__BODY_FAILED: end = r->failed; break;
    case VBENCH__SERVER_REPORT__BODY_DIED: end = r->died; break;
    case VBENCH__SERVER_REPORT__BODY_STOPPED: end = r->stopped; break;
    case VBENCH__SERVER_REPORT__BODY_SAMPLES: v.item_key = r->samples->item_key; break;
    case VBENCH__SERVER_REPORT__BODY_SIZES:
        v.item_key = r->sizes->item_key, v.facts = r->sizes->facts, v.n_facts = r->sizes->n_facts;
        break;
    default: break;
    }
    if (end) v.message = end->message, v.log_tail = end->log_tail, v.facts = end->facts, v.n_facts = end->n_facts;
    return v;
}

/* ---- placement (coordinator/placement.h): a server's parts on several orchestrators ------------------------- */

/* The orchestrator agents that are not lost, in the order they joined; at most max. */
static int live_orchestrators(campaign *c, peer **out, int max) {
    int n = 0;
    for (size_t i = 0; i < c->n_peers && n < max; i++)
        if (c->peers[i].state != VB_AGENT_LOST && strstr(c->peers[i].roles, "orchestrator")) out[n++] = &c->peers[i];
    return n;
}

/* resources.orchestrators: the orchestrator agents a server waits for before it starts (1 by default). */
static int orchestrators_wanted(campaign *c) {
    const char *v = vb_profile_setting(c->profile, "resources.orchestrators", NULL);
    return v ? atoi(v) : 1;
}

static void free_kv(vb_kv **kv, size_t *n) {
    for (size_t i = 0; i < *n; i++) free((char *)(*kv)[i].key), free((char *)(*kv)[i].value);
    free(*kv);
    *kv = NULL;
    *n = 0;
}

/* Places engine e's nodes over the live orchestrators (node K on orchestrator K mod H) and resolves each part's
 * budget for its own host. VB_ERROR with err when a budget cannot be resolved (the host is named). */
static int server_place(campaign *c, int e, peer *first, vb_error *err) {
    server *sv = &c->servers[e];
    peer *orch[VB_PLACE_MAX_PARTS];
    int h = live_orchestrators(c, orch, VB_PLACE_MAX_PARTS);
    int nodes = vb_profile_engine_nodes(&c->profile->engines[e]);
    if (h <= 1 || nodes <= 1) h = 1, orch[0] = first;   /* one orchestrator runs the whole server, as before */
    for (int p = 0; p < sv->n_parts; p++) free_kv(&sv->part[p].connect, &sv->part[p].n_connect);
    sv->n_parts = vb_placement_plan(nodes, h, sv->parts);
    for (int p = 0; p < sv->n_parts; p++) {
        peer *o = orch[sv->parts[p].orch];
        snprintf(sv->part[p].orchestrator, sizeof sv->part[p].orchestrator, "%s", o->id);
        sv->part[p].phase_ok = 0;
        if (vb_budget_resolve(c->profile, o->cores, o->memory_bytes, &sv->part[p].budget, err) != VB_OK)
            return sv->n_parts > 1 ? vb_error_prefix(err, "the budget on orchestrator %s (host %s)", o->id, o->host)
                                   : VB_ERROR;
    }
    return VB_OK;
}

/* The part whose orchestrator is agent id, -1 none. */
static int part_of_agent(const server *sv, const char *id) {
    for (int p = 0; p < sv->n_parts; p++)
        if (strcmp(sv->part[p].orchestrator, id) == 0) return p;
    return -1;
}

/* "node 0 on orch (orch-host), node 1 on orch2 (orch2-host)": where each node of engine e's server runs. */
static void placement_text(campaign *c, int e, char *buf, size_t len) {
    server *sv = &c->servers[e];
    int nodes = vb_profile_engine_nodes(&c->profile->engines[e]), o = 0;
    buf[0] = '\0';
    for (int k = 0; k < nodes && o < (int)len; k++) {
        int p = vb_placement_part_of(sv->parts, sv->n_parts, k);
        peer *q = p >= 0 ? vb_campaign_find_peer(c, sv->part[p].orchestrator) : NULL;
        o += snprintf(buf + o, len - (size_t)o, "%snode %d on %s (%s)", k ? ", " : "", k,
                      p >= 0 ? sv->part[p].orchestrator : "?", q ? q->host : "?");
    }
}

/* The manifest says where each node of part p ran: server.NAME[.node.K].agent and .host. */
static void record_where(campaign *c, int e, int p) {
    server *sv = &c->servers[e];
    peer *q = vb_campaign_find_peer(c, sv->part[p].orchestrator);
    const char *name = vb_campaign_server_name(c, e);
    for (int j = 0; j < sv->parts[p].n_nodes; j++) {
        int k = sv->parts[p].nodes[j];
        char key[256], node[32] = "";
        if (k > 0) snprintf(node, sizeof node, ".node.%d", k);
        snprintf(key, sizeof key, "server.%s%s.agent", name, node);
        vb_store_manifest_set(c->store, key, sv->part[p].orchestrator, NULL);
        snprintf(key, sizeof key, "server.%s%s.host", name, node);
        vb_store_manifest_set(c->store, key, q ? q->host : "", NULL);
    }
}

/* Sends part p its start (or cold start for cold_item), with its nodes and, for a part without node 0, node 0's
 * connect parameters (part 0's, unprefixed: its replicas copy node 0 over the network). */
static void part_start(campaign *c, int e, int p, int cold_item) {
    server *sv = &c->servers[e];
    peer *q = vb_campaign_orchestrator_peer(c, sv->part[p].orchestrator);
    if (!q || strcmp(q->id, sv->part[p].orchestrator) != 0) return;   /* gone: its start timer fails the server */
    kvbuild kb = {.n = 0};
    vb_budget_each(&sv->part[p].budget, vb_campaign_kvbuild_add, &kb);
    vb_kv primary[16];
    size_t n_primary = 0;
    for (size_t i = 0; p > 0 && i < sv->part[0].n_connect && n_primary < 16; i++)
        if (strncmp(sv->part[0].connect[i].key, "node.", 5) != 0) primary[n_primary++] = sv->part[0].connect[i];
    sv->parts[p].state = VB_PART_STARTING;
    send_server_request_x(c, q, e, cold_item >= 0 ? VBENCH__SERVER_ACTION__SERVER_COLD_START
                                                  : VBENCH__SERVER_ACTION__SERVER_START,
                          cold_item >= 0 ? c->plan->items[cold_item].key : NULL, &kb,
                          &(request_extra){.place = sv->n_parts > 1 ? &sv->parts[p] : NULL, .primary = primary,
                                           .n_primary = n_primary});
}

/* Asks orchestrator p to start engine e's server under budget b; cold_item >= 0: a cold start for that cold_start
 * item (the running unit stopped, the data directory evicted from the page cache, then started). A server placed
 * over several orchestrators starts part 0 (node 0) now, the others once it is ready (TAKE_PART). */
static void server_start(campaign *c, int e, peer *p, const vb_budget *b, int cold_item) {
    server *sv = &c->servers[e];
    kvbuild kb = {.n = 0};
    vb_budget_each(b, vb_campaign_kvbuild_add, &kb);
    for (size_t j = 0; j < c->profile->n_engines; j++) {   /* which server each configuration's facts are under */
        if (vb_campaign_server_of(c, (int)j) != e) continue;
        char key[256];
        snprintf(key, sizeof key, "engine.%s.server", c->profile->engines[j].name);
        vb_store_manifest_set(c->store, key, vb_campaign_server_name(c, e), NULL);
    }
    for (size_t i = 0; i < kb.n; i++) {
        char key[256];
        snprintf(key, sizeof key, "server.%s.budget.%s", vb_campaign_server_name(c, e), kb.kv[i].key);
        vb_store_manifest_set(c->store, key, kb.kv[i].value, NULL);
    }
    snprintf(sv->orchestrator, sizeof sv->orchestrator, "%s", p->id);
    sv->since_ns = vb_now_ns();
    sv->cold_requested = cold_item;
    vb_console_say(&c->console, "%s the %s server%s (recipe %s) on %s%s: CPUs %s, memory %.1f GiB, /dev/shm %.1f GiB",
        cold_item >= 0 ? "restarting" : "starting", vb_campaign_server_name(c, e), cold_item >= 0 ? " cold" : "",
        vb_campaign_engine_recipe(c, e), p->id, cold_item >= 0 ? ", its data directory evicted from the page cache" : "",
        b->server_cpus,
        (double)b->server_memory / 1073741824.0, (double)b->shm / 1073741824.0);
    if (sv->n_parts > 1) {
        char where[1024];
        placement_text(c, e, where, sizeof where);
        vb_console_say(&c->console, "the %s server's nodes over %d orchestrators: %s", vb_campaign_server_name(c, e),
                       sv->n_parts, where);
        char key[256];
        snprintf(key, sizeof key, "server.%s.placement", vb_campaign_server_name(c, e));
        vb_store_manifest_set(c->store, key, where, NULL);
        for (int q = 1; q < sv->n_parts; q++) sv->parts[q].state = VB_PART_WAITING;
        part_start(c, e, 0, cold_item);
        return;
    }
    sv->parts[0].state = VB_PART_STARTING;
    send_server_request(c, p, e, cold_item >= 0 ? VBENCH__SERVER_ACTION__SERVER_COLD_START
                                                : VBENCH__SERVER_ACTION__SERVER_START,
                        cold_item >= 0 ? c->plan->items[cold_item].key : NULL, &kb);
}

/* A ready report's answer to a cold start (its cold.* facts): the item it was for may run now, once. Any other
 * ready report (a start, a restart after a death) leaves no cold start done. */
static void take_cold_ready(campaign *c, int e, const report_view *v) {
    server *sv = &c->servers[e];
    const char *files = NULL, *bytes = NULL, *ready_s = NULL;
    for (size_t i = 0; i < v->n_facts; i++) {
        if (strcmp(v->facts[i]->key, "cold.evicted_files") == 0) files = v->facts[i]->value;
        if (strcmp(v->facts[i]->key, "cold.evicted_bytes") == 0) bytes = v->facts[i]->value;
        if (strcmp(v->facts[i]->key, "ready_s") == 0) ready_s = v->facts[i]->value;
    }
    sv->cold_item = sv->cold_requested >= 0 && files && bytes ? sv->cold_requested : -1;
    sv->cold_requested = -1;
    if (sv->cold_item < 0) return;
    sv->cold_attempt = 0;
    sv->cold_files = atoll(files);
    sv->cold_bytes = atoll(bytes);
    sv->cold_restart_s = ready_s ? atof(ready_s) : 0;
    vb_console_say(&c->console, "%s: the %s server was stopped, %lld files (%.1f MiB) of its data directory evicted from "
                   "the page cache, and started again in %.2f s", c->plan->items[sv->cold_item].key,
                   vb_campaign_server_name(c, e), sv->cold_files, (double)sv->cold_bytes / 1048576.0, sv->cold_restart_s);
}

int vb_campaign_server_cold(campaign *c, int i, int first, vb_point *p) {
    int e = vb_campaign_server_of(c, (int)c->plan->items[i].engine);
    server *sv = &c->servers[e];
    if (c->plan->items[i].kind != VB_PHASE_COLD_START || !vb_campaign_engine_recipe(c, e) || sv->cold_item != i)
        return 0;
    if (first && sv->cold_attempt == 0) sv->cold_attempt = c->runs[i].attempt;
    if (sv->cold_attempt != c->runs[i].attempt) return 0;
    p->cold = 1;
    p->evicted_files = sv->cold_files;
    p->evicted_bytes = sv->cold_bytes;
    p->restart_s = sv->cold_restart_s;
    return 1;
}

/* Asks orchestrator p to stop engine e's server. */
static void server_stop(campaign *c, int e, peer *p) {
    server *sv = &c->servers[e];
    sv->since_ns = vb_now_ns();
    vb_console_say(&c->console, "stopping the %s server", vb_campaign_server_name(c, e));
    if (sv->n_parts <= 1) {
        sv->parts[0].state = VB_PART_STOPPING;
        send_server_request(c, p, e, VBENCH__SERVER_ACTION__SERVER_STOP, NULL, NULL);
        return;
    }
    for (int q = 0; q < sv->n_parts; q++) {   /* every part that runs, or is asked to */
        peer *o = vb_campaign_orchestrator_peer(c, sv->part[q].orchestrator);
        if (sv->parts[q].state == VB_PART_WAITING) sv->parts[q].state = VB_PART_IDLE;
        if (sv->parts[q].state != VB_PART_READY && sv->parts[q].state != VB_PART_STARTING) continue;
        if (!o || strcmp(o->id, sv->part[q].orchestrator) != 0) {   /* its orchestrator is gone: nobody to ask */
            sv->parts[q].state = VB_PART_IDLE;
            continue;
        }
        sv->parts[q].state = VB_PART_STOPPING;
        send_server_request(c, o, e, VBENCH__SERVER_ACTION__SERVER_STOP, NULL, NULL);
    }
}

/* The parts a failure or death of another part left running (CLEANUP) are asked to stop. */
static void stop_cleanup_parts(campaign *c, int e) {
    server *sv = &c->servers[e];
    for (int q = 0; q < sv->n_parts; q++) {
        peer *o = vb_campaign_orchestrator_peer(c, sv->part[q].orchestrator);
        if (sv->parts[q].state != VB_PART_CLEANUP || !o || strcmp(o->id, sv->part[q].orchestrator) != 0) continue;
        vb_console_say(&c->console, "stopping the %s server's part on %s (another part of it failed)",
                       vb_campaign_server_name(c, e), o->id);
        send_server_request(c, o, e, VBENCH__SERVER_ACTION__SERVER_STOP, NULL, NULL);
        if (sv->n_cleanup < VB_PLACE_MAX_PARTS)
            snprintf(sv->cleanup[sv->n_cleanup++], sizeof sv->cleanup[0], "%s", o->id);
        sv->cleanup_since_ns = vb_now_ns();
    }
}

/* Whether agent id's stopped (or failed) report answers a cleanup stop (stop_cleanup_parts): taken off the list. */
static int cleanup_answered(server *sv, const char *id) {
    for (int i = 0; i < sv->n_cleanup; i++)
        if (strcmp(sv->cleanup[i], id) == 0) {
            memmove(sv->cleanup[i], sv->cleanup[i + 1], (size_t)(sv->n_cleanup - i - 1) * sizeof sv->cleanup[0]);
            sv->n_cleanup--;
            return 1;
        }
    return 0;
}

static int engine_has_pending(campaign *c, int e) {
    for (size_t i = 0; i < c->plan->n_items; i++)
        if (vb_campaign_server_of(c, (int)c->plan->items[i].engine) == e && (c->items[i] == ITEM_PENDING || c->items[i] == ITEM_RUNNING)) return 1;
    return 0;
}

/* Whether item i may be assigned now: 1 yes; 0 wait (its server is starting, or another server must stop
 * first: one server at a time, so no two databases share the budget); the item is failed here when its
 * server cannot run. */
int vb_campaign_server_ready_for(campaign *c, int i) {
    int e = vb_campaign_server_of(c, (int)c->plan->items[i].engine);
    if (!vb_campaign_engine_recipe(c, e)) return 1;
    int may = vb_campaign_server_fire(c, e, &(server_ev){.kind = VB_SERVER_EV_NEEDED, .item = i});
    server *sv = &c->servers[e];
    peer *live[VB_PLACE_MAX_PARTS];
    int n = live_orchestrators(c, live, VB_PLACE_MAX_PARTS), want = orchestrators_wanted(c);
    if (!may && n > 0 && n < want && (sv->state == VB_SERVER_NONE || sv->state == VB_SERVER_STOPPED) &&
        vb_now_ns() - sv->orch_wait_said_ns > 60000000000ull) {
        sv->orch_wait_said_ns = vb_now_ns();
        vb_console_say(&c->console, "the %s server waits for %d orchestrator agents (resources.orchestrators): %d "
                       "joined so far", vb_campaign_server_name(c, e), want, n);
    }
    return may;
}

/* For an item on a server: asks the orchestrator whether the server is alive (and to tag its samples with the
 * item from now on), and says yes once it answered. An orchestrator that does not answer within 30 s is not
 * waited for (logged). */
int vb_campaign_server_confirmed(campaign *c, int i) {
    int e = vb_campaign_server_of(c, (int)c->plan->items[i].engine);
    if (!vb_campaign_engine_recipe(c, e)) return 1;
    server *sv = &c->servers[e];
    if (sv->phase_item != i) {
        peer *orch = vb_campaign_orchestrator_peer(c, sv->orchestrator);
        if (!orch) return 1;
        sv->phase_item = i;
        sv->phase_ok = 0;
        sv->phase_sent_ns = vb_now_ns();
        /* a placed server: every part answers for its own nodes (its sizes), part 0 below */
        for (int q = 1; q < sv->n_parts; q++) {
            peer *o = vb_campaign_orchestrator_peer(c, sv->part[q].orchestrator);
            sv->part[q].phase_ok = 0;
            if (o && strcmp(o->id, sv->part[q].orchestrator) == 0)
                send_server_request(c, o, e, VBENCH__SERVER_ACTION__SERVER_PHASE, c->plan->items[i].key, NULL);
            else
                sv->part[q].phase_ok = 1;   /* gone: its death or the 30 s bound below decides */
        }
        sv->part[0].phase_ok = 0;
        int perf = perf_wanted(c, i);
        sv->perf_item = perf ? i : -1;
        if (perf && !vb_store_has_server_profile(c->store, vb_campaign_item_engine(c, i), vb_campaign_item_dataset(c, i))) {
            char key[256];
            snprintf(key, sizeof key, "server.%s.perf", vb_campaign_server_name(c, e));
            char had[64] = "";
            vb_store_manifest_get(c->store, key, had, sizeof had);
            char none[160];
            long named = profile_clients(c, i);
            if (named > 0)
                snprintf(none, sizeof none, "no CPU profile: no window at %ld clients (profile_clients) was measured "
                         "(perf recorded the concurrency items)", named);
            else
                snprintf(none, sizeof none, "no CPU profile: no window's efficiency fell below 0.5 (perf recorded the "
                         "concurrency items)");
            if (strncmp(had, "no CPU profile: perf", 20) != 0)   /* a refusal stays said */
                vb_store_manifest_set(c->store, key, none, NULL);
        }
        send_server_request_x(c, orch, e, VBENCH__SERVER_ACTION__SERVER_PHASE, c->plan->items[i].key, NULL,
                              &(request_extra){.perf = perf});
        return 0;
    }
    if (!sv->phase_ok && vb_now_ns() - sv->phase_sent_ns > 30000000000ull) {
        vb_store_event(c->store, VB_EVENT_SERVER_UNCONFIRMED, "warn", c->plan->items[i].key, "coordinator",
                       "the orchestrator did not confirm the %s server within 30 s; running the item anyway",
                       vb_campaign_server_name(c, e));
        sv->phase_ok = 1;
    }
    if (sv->phase_ok) sv->phase_item = -1;
    return sv->phase_ok;
}

/* Stops servers whose engine has nothing left to run; times out requests the orchestrator never answered.
 * Returns 1 while a server still needs attention (the campaign ends only after every server stopped). */
int vb_campaign_servers_housekeeping(campaign *c) {
    int busy = 0;
    uint64_t now = vb_now_ns();
    long start_timeout = c->profile->limits.server_start_timeout_s;
    for (size_t e = 0; e < c->profile->n_engines; e++) {
        server *sv = &c->servers[e];
        if (!vb_campaign_engine_recipe(c, (int)e) || vb_campaign_server_of(c, (int)e) != (int)e) continue;
        if (!engine_has_pending(c, (int)e)) vb_campaign_server_fire(c, (int)e, &(server_ev){.kind = VB_SERVER_EV_NO_PENDING});
        /* The table ignores a timer outside the state it belongs to (since_ns is that of the last request). */
        uint64_t waited = now > sv->since_ns ? now - sv->since_ns : 0;
        if (waited > (uint64_t)start_timeout * 1000000000ull)
            vb_campaign_server_fire(c, (int)e, &(server_ev){.kind = VB_SERVER_EV_START_TIMEOUT});
        if (waited > 900ull * 1000000000ull)
            vb_campaign_server_fire(c, (int)e, &(server_ev){.kind = VB_SERVER_EV_STOP_TIMEOUT});
        busy |= sv->state == VB_SERVER_STARTING || sv->state == VB_SERVER_STOPPING || sv->state == VB_SERVER_READY;
        /* a placed server's parts stopped after another part's failure: their answers (at_stop facts) are waited
         * for, as a stop's are */
        if (sv->n_cleanup > 0 && now - sv->cleanup_since_ns > 900ull * 1000000000ull) {
            vb_store_server_log(c->store, vb_campaign_server_name(c, (int)e), NULL, "failed",
                                "no answer to the stop request within 900 s (a part stopped after another part failed)",
                                NULL, NULL);
            sv->n_cleanup = 0;
        }
        busy |= sv->n_cleanup > 0;
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

/* Remembers the last item of each engine to finish (done, or failed with the agent's words `error`), so a server
 * death reported a moment later can be charged to the item that ran on the dying server (server_died, below,
 * is its only reader; coordinator/intake.c tells it when an item ends). */
void vb_campaign_note_finished(campaign *c, int i, const char *error) {
    if (i < 0 || !c->servers) return;
    server *sv = &c->servers[vb_campaign_server_of(c, (int)c->plan->items[i].engine)];
    sv->last_item = i;
    sv->last_finished = vb_wall_time();
    snprintf(sv->last_error, sizeof sv->last_error, "%s", error ? error : "");
}

/* The server died while it should have been serving: the item that ran on it fails (its numbers would be
 * about a dead server). What comes next (restart, fail the engine's items, stop) is the table's. Its agents are
 * told to stop by an ABORT posted for the agent machine (coordinator/agent_queue.h): fired when the loop drains,
 * after this report is handled, so the Abort goes out after the item's failure (or interruption) is written. */
static void server_died(campaign *c, int e, const Vbench__ServerReport *r) {
    server *sv = &c->servers[e];
    report_view v = report_parts(r);
    server_set_failure(sv, v.message, v.log_tail);
    vb_store_event(c->store, VB_EVENT_SERVER_DIED, "error", NULL, "coordinator", "%s", v.message);
    sv->cold_item = -1;   /* a restart after the death is not the cold start an item waits for */
    double died_at = 0;
    for (size_t i = 0; i < v.n_facts; i++)
        if (strcmp(v.facts[i]->key, "died_at") == 0) died_at = atof(v.facts[i]->value);
    int i = c->running >= 0 && vb_campaign_server_of(c, (int)c->plan->items[c->running].engine) == e ? c->running
                                                                                                     : -1;
    if (i >= 0 && died_at > 0 && c->runs[i].started_wall > 0 && died_at < c->runs[i].started_wall - 0.5) {
        /* Reported late (a loaded host): the server had died before this item was assigned, so the item never
         * measured a live server. It runs again once the server is back, and the death is charged by its time
         * to the item that was running when it happened (below). */
        vb_campaign_post_abort_item(c, i, VBENCH__ABORT_REASON__ABORT_SERVER_DIED, NULL);
        vb_campaign_interrupt_item(c, i, "its server had died before it started (the death was reported late)", 0);
        i = -1;
    }
    if (i >= 0) {
        vb_campaign_post_abort_item(c, i, VBENCH__ABORT_REASON__ABORT_SERVER_DIED, NULL);
        vb_campaign_fail_item(c, i, "server", sv->failure);
    } else if (sv->last_item >= 0 && c->items[sv->last_item] == ITEM_DONE && died_at > 0 &&
               died_at <= sv->last_finished + 0.5) {
        /* The item finished (its clients lost their connections and stopped) before the death was reported:
         * its numbers are about a dying server. Its results stay in the database, the item is failed. */
        vb_campaign_fail_item(c, sv->last_item, "server", sv->failure);
    } else if (sv->last_item >= 0 && c->items[sv->last_item] == ITEM_FAILED && sv->last_error[0] && died_at > 0 &&
               died_at <= sv->last_finished + 0.5) {
        /* The agent saw the dying server first (a lost connection) and failed the item with its own words: the
         * cause is the death, so the item's error names it, and keeps what the agent saw. Counted once, and printed
         * once: the terminal said FAILED with the agent's words; it now says the cause in a line of its own, not the
         * item's failure a second time (issue 36.9). */
        char text[4096 + 1100];
        snprintf(text, sizeof text, "%s (the agent saw: %s)", sv->failure, sv->last_error);
        vb_campaign_restate_failure(c, sv->last_item, "server", text);
        vb_console_say(&c->console, "  the cause: the %s server died (%s)", vb_campaign_server_name(c, e), v.message);
        sv->last_error[0] = 0;
    }
    sv->phase_item = -1;
}

/* The facts of the server table (coordinator/server_fsm.h) for an event of engine e. */
static unsigned server_facts(campaign *c, int e, server_ev *ev) {
    server *sv = &c->servers[e];
    vb_on_server_failure policy = c->profile->limits.on_server_failure;
    unsigned f = 0;
    if (policy == VB_ON_SERVER_FAILURE_RESTART) f |= VB_SERVER_F_POLICY_RESTART;
    if (policy == VB_ON_SERVER_FAILURE_STOP) f |= VB_SERVER_F_POLICY_STOP;
    if (sv->restarts < 2) f |= VB_SERVER_F_RESTARTS_LEFT;
    for (size_t j = 0; j < c->profile->n_engines; j++) {
        vb_server_state o = c->servers[j].state;
        if ((int)j != e && (o == VB_SERVER_READY || o == VB_SERVER_STARTING || o == VB_SERVER_STOPPING))
            f |= VB_SERVER_F_OTHER_UP;
    }
    ev->orch = vb_campaign_orchestrator_peer(c, sv->orchestrator);
    peer *live[VB_PLACE_MAX_PARTS];
    if (!ev->orch || (ev->kind == VB_SERVER_EV_NEEDED && live_orchestrators(c, live, VB_PLACE_MAX_PARTS) <
                                                          orchestrators_wanted(c)))
        f |= VB_SERVER_F_NO_ORCHESTRATOR;   /* none yet, or fewer than resources.orchestrators */
    if (ev->parts_pending) f |= VB_SERVER_F_PARTS_PENDING;
    /* A cold_start item needs a cold start of its own attempt: one done for it and not yet assigned lets it run. */
    if (ev->kind == VB_SERVER_EV_NEEDED && c->plan->items[ev->item].kind == VB_PHASE_COLD_START &&
        !(sv->cold_item == ev->item && sv->cold_attempt == 0))
        f |= VB_SERVER_F_COLD_PENDING;
    /* The budget only where a start may follow (it is resolved for the host that would run the server). */
    int may_start = sv->state == VB_SERVER_NONE || sv->state == VB_SERVER_STOPPED || (f & VB_SERVER_F_COLD_PENDING);
    /* A running server's cold start keeps its placement; any other start places the nodes anew. */
    if (ev->kind == VB_SERVER_EV_NEEDED && ev->orch && may_start && !(f & VB_SERVER_F_NO_ORCHESTRATOR)) {
        int placed = sv->state == VB_SERVER_READY && sv->n_parts > 0;
        if (placed) {
            for (int q = 0; q < sv->n_parts && !(f & VB_SERVER_F_BUDGET_FAILS); q++) {
                peer *o = vb_campaign_find_peer(c, sv->part[q].orchestrator);
                if (!o || vb_budget_resolve(c->profile, o->cores, o->memory_bytes, &sv->part[q].budget,
                                            &ev->budget_err) != VB_OK)
                    f |= VB_SERVER_F_BUDGET_FAILS;
            }
        } else if (server_place(c, e, ev->orch, &ev->budget_err) != VB_OK) {
            f |= VB_SERVER_F_BUDGET_FAILS;
        }
        if (!(f & VB_SERVER_F_BUDGET_FAILS)) {
            ev->budget = sv->part[0].budget;
            ev->orch = vb_campaign_find_peer(c, sv->part[0].orchestrator);
        }
    }
    return f;
}

/* TAKE_PART (and the part's share of TAKE_READY and RECORD_STOP): a ready part's connect parameters kept and its
 * facts recorded with where its nodes run; a stopped part's facts as at_stop.*. Returns the part, -1 none. */
static int take_part(campaign *c, int e, const server_ev *ev, const report_view *v) {
    server *sv = &c->servers[e];
    const char *name = vb_campaign_server_name(c, e);
    int p = ev->from ? part_of_agent(sv, ev->from->id) : -1;
    if (ev->kind == VB_SERVER_EV_REPORT_STOPPED) {
        record_facts(c, name, "at_stop.", v->facts, v->n_facts);
        return p;
    }
    record_facts(c, name, "", v->facts, v->n_facts);
    if (p < 0) {   /* a ready report nothing asked for (a late answer): the server as one orchestrator runs it */
        p = 0;
        if (sv->n_parts < 1) sv->n_parts = vb_placement_plan(vb_profile_engine_nodes(&c->profile->engines[e]), 1,
                                                             sv->parts);
        if (ev->from) snprintf(sv->part[0].orchestrator, sizeof sv->part[0].orchestrator, "%s", ev->from->id);
    }
    free_kv(&sv->part[p].connect, &sv->part[p].n_connect);
    sv->part[p].connect = calloc(v->n_connect ? v->n_connect : 1, sizeof *sv->part[p].connect);
    for (size_t i = 0; i < v->n_connect; i++)
        sv->part[p].connect[sv->part[p].n_connect++] = (vb_kv){strdup(v->connect[i]->key), strdup(v->connect[i]->value)};
    record_where(c, e, p);
    if (ev->kind == VB_SERVER_EV_REPORT_READY && ev->start_waiting)
        for (int q = 1; q < sv->n_parts; q++)
            if (sv->parts[q].state == VB_PART_WAITING) part_start(c, e, q, sv->cold_requested);
    /* a placed server's cold start: node 0's part says what it evicted (cold.*), the other parts started cold above */
    if (ev->kind == VB_SERVER_EV_REPORT_READY && p == 0 && sv->n_parts > 1) take_cold_ready(c, e, v);
    return p;
}

/* Drives engine e's server machine: the table's row for the event, its actions, its next state. Returns 1 when
 * the row says the item may run (NEEDED in READY). */
int vb_campaign_server_fire(campaign *c, int e, server_ev *ev) {
    server *sv = &c->servers[e];
    const char *name = vb_campaign_server_name(c, e);
    const Vbench__ServerReport *r = ev->report;
    report_view v = report_parts(r);
    unsigned facts = server_facts(c, e, ev);
    const vb_server_row *row = vb_server_fsm_step(sv->state, ev->kind, facts);
    int may_run = 0;
    for (int k = 0; k < VB_SERVER_FSM_MAX_ACTIONS && row->actions[k] != VB_SERVER_ACT_NONE; k++) {
        switch (row->actions[k]) {
        case VB_SERVER_ACT_NONE:
        case VB_SERVER_ACT_IGNORE:
        case VB_SERVER_ACT_WAIT:
        case VB_SERVER_N_ACTIONS: break;
        case VB_SERVER_ACT_REFUSE:
            vb_store_event(c->store, VB_EVENT_UNEXPECTED, "error", NULL, "coordinator",
                           "server %s: %s while %s is not expected (%s)", name,
                           vb_server_fsm_event_name(ev->kind), vb_server_state_name(sv->state), row->note);
            break;
        case VB_SERVER_ACT_MAY_RUN: may_run = 1; break;
        case VB_SERVER_ACT_FAIL_ITEM: vb_campaign_fail_item(c, ev->item, "server", sv->failure); break;
        case VB_SERVER_ACT_REQUEST_START: server_start(c, e, ev->orch, &ev->budget, -1); break;
        case VB_SERVER_ACT_REQUEST_COLD_START: server_start(c, e, ev->orch, &ev->budget, ev->item); break;
        case VB_SERVER_ACT_BUDGET_FAILED:
            server_set_failure(sv, ev->budget_err.message, NULL);
            vb_store_server_log(c->store, name, NULL, "failed", ev->budget_err.message, NULL, NULL);
            break;
        case VB_SERVER_ACT_LOG_REPORT: {
            /* A death reported while the coordinator waits for a stop was found by the orchestrator before it
             * stopped anything (it reports deaths of a ready server only, checked at the stop request): the server
             * was ready, serving the item whose failure asked for the stop, not stopping (issue 36.9). */
            const char *was = vb_server_state_name(sv->state);
            if (ev->kind == VB_SERVER_EV_REPORT_DIED && sv->state == VB_SERVER_STOPPING)
                was = "ready; found dead when its stop was asked";
            vb_store_server_log(c->store, name, r->unit, vb_wire_server_report_name(r), v.message, v.log_tail, NULL);
            vb_store_event(c->store, VB_EVENT_SERVER,
                           ev->kind == VB_SERVER_EV_REPORT_READY || ev->kind == VB_SERVER_EV_REPORT_STOPPED
                                         ? "info" : "error", NULL, ev->from->id, "server %s %s (was %s): %s", name,
                           vb_wire_server_report_name(r), was, v.message);
            break;
        }
        case VB_SERVER_ACT_TAKE_PART: take_part(c, e, ev, &v); break;
        case VB_SERVER_ACT_TAKE_READY: {
            int p = take_part(c, e, ev, &v);   /* this part's connect parameters and facts, where it runs */
            free_kv(&sv->connect, &sv->n_connect);
            size_t n = 0;
            for (int q = 0; q < sv->n_parts; q++) n += sv->part[q].n_connect;
            sv->connect = calloc(n ? n : 1, sizeof *sv->connect);
            for (int q = 0; q < sv->n_parts; q++)   /* every part's: node 0's keys and node.K.KEY */
                for (size_t i = 0; i < sv->part[q].n_connect; i++)
                    sv->connect[sv->n_connect++] = (vb_kv){strdup(sv->part[q].connect[i].key),
                                                           strdup(sv->part[q].connect[i].value)};
            const char *ready_s = "?";
            for (size_t i = 0; i < v.n_facts; i++)
                if (strcmp(v.facts[i]->key, "ready_s") == 0 || strstr(v.facts[i]->key, ".ready_s")) ready_s = v.facts[i]->value;
            if (sv->n_parts > 1) {
                char where[1024];
                placement_text(c, e, where, sizeof where);
                vb_console_say(&c->console, "the %s server is ready on %d orchestrators (%s; the last, %s, answered "
                               "after %s s)", name, sv->n_parts, where, p >= 0 ? sv->part[p].orchestrator : "?", ready_s);
            } else {
                vb_console_say(&c->console, "the %s server is ready (%s, unit %s, answered after %s s)", name, v.message,
                               r->unit, ready_s);
            }
            if (sv->n_parts <= 1) take_cold_ready(c, e, &v);   /* placed: node 0's part said it (take_part) */
            break;
        }
        case VB_SERVER_ACT_RECORD_FAILURE:
            server_set_failure(sv, v.message, v.log_tail);
            vb_console_say(&c->console, "FAILED the %s server: %s%s%s", name, v.message, v.log_tail[0] ? "\n" : "", v.log_tail);
            break;
        case VB_SERVER_ACT_SERVER_DIED: server_died(c, e, r); break;
        case VB_SERVER_ACT_COUNT_RESTART:
            sv->restarts++;
            vb_console_say(&c->console, "the %s server died (%s); starting it again for the next item (restart %d of 2)", name,
                            v.message, sv->restarts);
            break;
        case VB_SERVER_ACT_NO_RESTART:
            vb_console_say(&c->console, "the %s server died (%s); its remaining items fail (limits.on_server_failure: %s)", name,
                            v.message, vb_on_server_failure_name(c->profile->limits.on_server_failure));
            break;
        case VB_SERVER_ACT_STOP_CAMPAIGN:
            c->stop_reason = ev->kind == VB_SERVER_EV_REPORT_DIED
                                 ? "a server died and limits.on_server_failure is stop"
                                 : "a server failed to start and limits.on_server_failure is stop";
            break;
        case VB_SERVER_ACT_RECORD_STOP: take_part(c, e, ev, &v); break;
        case VB_SERVER_ACT_STORE_SAMPLES:
            vb_store_server_samples(c->store, name, v.item_key, r->samples->samples, r->samples->n_samples, NULL);
            break;
        case VB_SERVER_ACT_STORE_PROFILE: store_profile(c, e, r->profile); break;
        case VB_SERVER_ACT_STORE_SIZES:
            for (size_t i = 0; i < v.n_facts; i++)
                vb_store_server_size(c->store, name, v.item_key, v.facts[i]->key, atoll(v.facts[i]->value), NULL);
            if (sv->phase_item >= 0 && strcmp(v.item_key, c->plan->items[sv->phase_item].key) == 0) {
                int p = ev->from ? part_of_agent(sv, ev->from->id) : 0;
                if (p >= 0) sv->part[p].phase_ok = 1;
                sv->phase_ok = 1;   /* one orchestrator: its answer; placed: once every part answered for its nodes */
                for (int q = 0; sv->n_parts > 1 && q < sv->n_parts; q++) sv->phase_ok &= sv->part[q].phase_ok;
            }
            break;
        case VB_SERVER_ACT_START_TIMED_OUT: {
            char msg[256];
            snprintf(msg, sizeof msg, "the %s server did not become ready within limits.server_start_timeout_s = %ld s",
                     name, c->profile->limits.server_start_timeout_s);
            server_set_failure(sv, msg, NULL);
            vb_store_server_log(c->store, name, NULL, "failed", msg, NULL, NULL);
            vb_console_say(&c->console, "vbench: %s", msg);
            break;
        }
        case VB_SERVER_ACT_STOP_TIMED_OUT:
            vb_store_server_log(c->store, name, NULL, "failed", "no answer to the stop request within 900 s", NULL,
                                NULL);
            break;
        case VB_SERVER_ACT_REQUEST_STOP: server_stop(c, e, ev->orch); break;
        }
    }
    sv->state = row->next;
    return may_run;
}

void vb_campaign_on_server_report(campaign *c, peer *p, const Vbench__ServerReport *r) {
    int e = server_index(c, r->engine);
    if (e < 0) {
        vb_store_event(c->store, VB_EVENT_UNEXPECTED, "warn", NULL, p->id,
                       "server report for engine %s, not in this campaign", r->engine);
        return;
    }
    static const struct { Vbench__ServerReport__BodyCase body; vb_server_event kind; } kinds[] = {
        {VBENCH__SERVER_REPORT__BODY_READY, VB_SERVER_EV_REPORT_READY},
        {VBENCH__SERVER_REPORT__BODY_FAILED, VB_SERVER_EV_REPORT_FAILED},
        {VBENCH__SERVER_REPORT__BODY_DIED, VB_SERVER_EV_REPORT_DIED},
        {VBENCH__SERVER_REPORT__BODY_STOPPED, VB_SERVER_EV_REPORT_STOPPED},
        {VBENCH__SERVER_REPORT__BODY_SAMPLES, VB_SERVER_EV_REPORT_SAMPLES},
        {VBENCH__SERVER_REPORT__BODY_SIZES, VB_SERVER_EV_REPORT_SIZES},
        {VBENCH__SERVER_REPORT__BODY_PROFILE, VB_SERVER_EV_REPORT_PROFILE}};
    server_ev ev = {.kind = VB_SERVER_EV_REPORT_OTHER, .from = p, .report = r};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (r->body_case == kinds[i].body) ev.kind = kinds[i].kind;
    server *sv = &c->servers[e];
    int part = part_of_agent(sv, p->id);
    if ((ev.kind == VB_SERVER_EV_REPORT_STOPPED || ev.kind == VB_SERVER_EV_REPORT_FAILED) && cleanup_answered(sv, p->id)) {
        /* the answer to a stop after another part's failure: recorded, whatever the server does now */
        report_view v = report_parts(r);
        vb_store_server_log(c->store, r->engine, r->unit, vb_wire_server_report_name(r), v.message, v.log_tail, NULL);
        if (ev.kind == VB_SERVER_EV_REPORT_STOPPED) record_facts(c, r->engine, "at_stop.", v.facts, v.n_facts);
        if (part >= 0 && sv->parts[part].state == VB_PART_CLEANUP) sv->parts[part].state = VB_PART_IDLE;
        return;
    }
    if (sv->n_parts > 1 && part >= 0 && (ev.kind == VB_SERVER_EV_REPORT_READY || ev.kind == VB_SERVER_EV_REPORT_STOPPED ||
                                         ev.kind == VB_SERVER_EV_REPORT_FAILED || ev.kind == VB_SERVER_EV_REPORT_DIED)) {
        /* one part of a placed server answered: the machine hears the server's answer (placement.h) */
        vb_part_said said = ev.kind == VB_SERVER_EV_REPORT_READY     ? VB_PART_SAID_READY
                            : ev.kind == VB_SERVER_EV_REPORT_STOPPED ? VB_PART_SAID_STOPPED
                            : ev.kind == VB_SERVER_EV_REPORT_FAILED  ? VB_PART_SAID_FAILED
                                                                     : VB_PART_SAID_DIED;
        int stop_others = 0;
        vb_place_heard heard = vb_placement_answer(sv->parts, sv->n_parts, part, said, &stop_others, &ev.start_waiting);
        if (heard == VB_PLACE_PENDING && sv->state != VB_SERVER_STARTING && sv->state != VB_SERVER_STOPPING)
            heard = VB_PLACE_RECORDED;   /* not an answer the machine waits for (a late one) */
        if (heard == VB_PLACE_RECORDED) {
            report_view v = report_parts(r);
            vb_store_server_log(c->store, r->engine, r->unit, vb_wire_server_report_name(r), v.message, v.log_tail,
                                NULL);
            if (ev.kind == VB_SERVER_EV_REPORT_STOPPED) record_facts(c, r->engine, "at_stop.", v.facts, v.n_facts);
        } else {
            ev.parts_pending = heard == VB_PLACE_PENDING;
            vb_campaign_server_fire(c, e, &ev);
        }
        if (stop_others) stop_cleanup_parts(c, e);
        return;
    }
    vb_campaign_server_fire(c, e, &ev);
}
