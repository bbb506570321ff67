/* Profile loading: YAML tree -> schema check -> vb_profile with every default filled in.
 *
 * The schema is data (the tables below): each section lists its keys with a type, a range and a default, and
 * one generic routine checks a section against its table. Values are stored in canonical text ("0.01", not
 * "1e-2"; "10,20,40" for lists) because plan keys are built from them and must not depend on how a number was
 * spelled. Every error names file, line and the dotted key, so a 40-hour campaign never dies on a typo an hour
 * in: everything that can be checked without the engines and datasets is checked here, at load time.
 *
 * Format (top level): name (required), description, k (1..1000, 10), datasets (list of maps, keys from
 * vb_dataset_spec_keys, name required and unique), engines (list of maps, name required and unique, every other
 * key an engine parameter kept as text), phases (map of build / recall_sweep / concurrency / capacity / filtered / cold_start /
 * churn / streaming; an empty section means all defaults; run in that fixed order, config/plan.h vb_phase_order), limits (phase_timeout_s, on_server_failure,
 * server_start_timeout_s, agent_silent_s, on_agent_lost, max_attempts), resources (config/budget.h; kept as "resources.KEY" settings), transport
 * (insecure). The phase keys, types, ranges and defaults are the tables below. */
#include "config/profile.h"
#include "datasets/dataset.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "config/budget.h"
#include "config/plan.h"
#include "config/yaml_tree.h"
#include "datasets/dataset_spec.h"
#include "util/cpulist.h"
#include "util/embedded.h"
#include "util/json.h"

/* Names become parts of plan keys and of file names: keep them to a safe alphabet. */
#define MAX_NAME 64
#define NAME_RULE "letters, digits, '.', '_', '-', not starting with '.' or '-', at most 64 characters"
#define MAX_PROFILE_BYTES (4u << 20)

/* ---------------------------------------------------------------------------------------------------------- */
/* Schema */

/* F_RATE_LIST: a list of numbers or the word max (streaming.insert_rate); F_ENUM_LIST: a list of choices
 * (filtered.predicate). Every list type takes one value alone too, as a list of one ("insert_rate: 2000"). */
/* F_IDS_LIST: a list of row choices, each uniform or zipf(S) (mixed.ids); F_MAP: a map checked by its phase's own
 * check (mixed.ops), skipped by check_section. */
typedef enum {
    F_INT, F_DOUBLE, F_STRING, F_ENUM, F_INT_LIST, F_DOUBLE_LIST, F_BOOL, F_RATE_LIST, F_ENUM_LIST, F_IDS_LIST, F_MAP,
    F_INT_AUTO,                   /* an integer or the word auto (capacity.ef_search) */
} field_type;

typedef struct field {
    const char *key;
    field_type type;
    double min, max;              /* F_INT / F_DOUBLE and list items */
    const char *def;              /* canonical default; NULL = optional without default */
    const char *const *choices;   /* F_ENUM */
} field;

static const char *const on_resume_choices[] = {"continue", "restart", NULL};
static const char *const loop_choices[] = {"closed", "open", NULL};
static const char *const cpu_profile_choices[] = {"off", "perf", NULL};

static const field build_fields[] = {
    {"load_batch", F_INT, 1, 1000000, "1000", NULL},
    {"load_connections", F_INT, 1, 1024, "2", NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};
/* queries: 0 = the whole query set. answers: record every query's answer ids, distances and time
 * (sweep_result.answers, 16 + queries x (4 + 8 k) bytes per point) for `vbench export --format annb`. */
static const field recall_sweep_fields[] = {
    {"ef_search", F_INT_LIST, 1, 1000000, "10,20,40,80,120,200,400,800", NULL},
    {"queries", F_INT, 0, 1e9, "0", NULL},
    {"answers", F_BOOL, 0, 0, "true", NULL},   /* keep every query's answer (the annb export needs them) */
    {"repeats", F_INT, 1, 100, NULL, NULL},    /* each point this many times; absent: once (keys as before) */
    /* clients: each (ef_search, clients) point a closed-loop window of that many clients (window_s after warmup_s;
     * the plan's defaults 10 and 2); absent: one client, every query once, as before (no defaults here, so that a
     * profile without them keeps its manifest) */
    {"clients", F_INT_LIST, 1, 4096, NULL, NULL},
    {"window_s", F_DOUBLE, 0.1, 86400, NULL, NULL},
    {"warmup_s", F_DOUBLE, 0, 3600, NULL, NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};
/* mode: closed (a client sends its next query when the last returns) or open (Poisson arrivals at target_rate
 * queries/s over all clients; required with open, refused with closed). */
static const field concurrency_fields[] = {
    {"ef_search", F_INT, 1, 1000000, "100", NULL},
    {"clients", F_INT_LIST, 1, 4096, "1,2,4,8,16,32", NULL},
    {"window_s", F_INT, 1, 86400, "60", NULL},
    {"repeats", F_INT, 1, 100, "3", NULL},
    {"warmup_s", F_DOUBLE, 0, 3600, "5", NULL},
    {"mode", F_ENUM, 0, 0, "closed", loop_choices},
    {"target_rate", F_DOUBLE, 0.001, 1e9, NULL, NULL},
    /* profile: perf records the server's cgroup during the concurrency items and keeps the CPU profile of the first
     * window whose efficiency falls below 0.5 (orchestrator/perf.h); absent or off: no perf */
    {"profile", F_ENUM, 0, 0, NULL, cpu_profile_choices},
    /* profile_clients: the client count whose first window is profiled, whatever its efficiency (with profile) */
    {"profile_clients", F_INT, 1, 4096, NULL, NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};
/* selectivity: the fraction of rows passing the filter; the tag column has a resolution of 1e-4. predicate: one or
 * a list of: range (tag < bound), equality (label = one label, whose share is the selectivity: engines/filter.h),
 * and (two independent range columns, sqrt(selectivity) each), and the class predicates over the dataset's real
 * classes, whose share is the data's, not a selectivity: label_own (each query's own class), label_other (another
 * class per query, chosen with class_seed), class (the fixed class `class: L`). Each predicate of the list is run
 * at every selectivity (the class ones once). */
static const char *const predicate_choices[] = {"range", "equality", "and", "label_own", "label_other", "class", NULL};
static const field filtered_fields[] = {
    {"selectivity", F_DOUBLE_LIST, 0.0001, 1, "0.1,0.01", NULL},
    {"predicate", F_ENUM_LIST, 0, 0, "range", predicate_choices},
    {"class", F_INT, 0, 1000000, NULL, NULL},       /* predicate class: the class L every query filters on */
    {"class_seed", F_INT, 0, 1e9, "1", NULL},       /* predicate label_other: each query's other class */
    {"queries", F_INT, 0, 1e9, "500", NULL},
    {"ef_search", F_INT, 1, 1000000, "100", NULL},
    {"repeats", F_INT, 1, 100, NULL, NULL},    /* each point this many times; absent: once (keys as before) */
    {NULL, 0, 0, 0, NULL, NULL},
};
/* limit_s: the wall-clock limit of one reinsert, enforced by the coordinator. */
static const field churn_fields[] = {
    {"fraction", F_DOUBLE, 0.0001, 1, "0.1", NULL},
    {"limit_s", F_INT, 1, 2592000, "7200", NULL},
    {"ef_search", F_INT, 1, 1000000, "100", NULL},
    {"on_resume", F_ENUM, 0, 0, "continue", on_resume_choices},
    {"queries", F_INT, 0, 1e9, "1000", NULL},        /* for the before / after measurements; 0 = all */
    {"insert_batch", F_INT, 1, 1000000, "100", NULL},/* rows per insert call: the limit is checked between calls */
    /* the before and after measurements, each this many times back to back (one delete and reinsert: README
     * "Repeats"); absent: once */
    {"repeats", F_INT, 1, 100, NULL, NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};
/* streaming (docs/profiles.md): the index is built of initial_fraction of the corpus, then rows are inserted in
 * order at insert_rate rows/s (one item per rate; max: as fast as the engine takes them) in batches of
 * insert_batch while `clients` search; a window of window_s at each stage (a fraction of the corpus, ascending,
 * the last 1) and one at rest after the last; limit_s bounds the item (what was measured is kept). */
static const field streaming_fields[] = {
    {"initial_fraction", F_DOUBLE, 0.0001, 0.9999, "0.5", NULL},
    {"insert_rate", F_RATE_LIST, 0.001, 1e9, "max", NULL},
    {"insert_batch", F_INT, 1, 1000000, "100", NULL},
    {"stages", F_DOUBLE_LIST, 0.0001, 1, "0.6,0.7,0.8,0.9,1", NULL},
    {"clients", F_INT, 1, 4096, "2", NULL},
    {"ef_search", F_INT, 1, 1000000, "100", NULL},
    {"mode", F_ENUM, 0, 0, "closed", loop_choices},
    {"target_rate", F_DOUBLE, 0.001, 1e9, NULL, NULL},
    {"window_s", F_DOUBLE, 0.1, 86400, "5", NULL},
    {"limit_s", F_INT, 1, 2592000, "7200", NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};
/* mixed (issue 38; docs/profiles.md): the index of the corpus (the dataset's rows but the last pool_fraction, the pool
 * updates and inserts take their vectors from), then searches, updates, deletes and inserts together at the shares of
 * ops (summing to 1), rows chosen by ids (one item per choice: uniform or zipf(S)), at rate operations/s in all
 * (open loop) or closed (each of `clients` clients runs the next operation when the last returns); `windows`
 * windows of window_s while writing, one at rest, one after the engine's maintenance; limit_s bounds the item. */
static const field mixed_fields[] = {
    {"ops", F_MAP, 0, 0, NULL, NULL},
    {"ids", F_IDS_LIST, 0, 0, "uniform", NULL},
    {"rate", F_STRING, 0, 0, "closed", NULL},
    {"clients", F_INT, 1, 4096, "2", NULL},
    {"ef_search", F_INT, 1, 1000000, "100", NULL},
    {"window_s", F_DOUBLE, 0.1, 86400, "5", NULL},
    {"windows", F_INT, 1, 1000, "3", NULL},
    {"pool_fraction", F_DOUBLE, 0.01, 0.5, "0.1", NULL},
    {"limit_s", F_INT, 1, 2592000, "7200", NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};
static const field mixed_ops_fields[] = {
    {"search", F_DOUBLE, 0, 1, "0.9", NULL},
    {"update", F_DOUBLE, 0, 1, "0.05", NULL},
    {"delete", F_DOUBLE, 0, 1, "0.025", NULL},
    {"insert", F_DOUBLE, 0, 1, "0.025", NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};
/* with ops given, a share it leaves out is 0 */
static const field mixed_ops_given_fields[] = {
    {"search", F_DOUBLE, 0, 1, "0", NULL},
    {"update", F_DOUBLE, 0, 1, "0", NULL},
    {"delete", F_DOUBLE, 0, 1, "0", NULL},
    {"insert", F_DOUBLE, 0, 1, "0", NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};
/* cold_start: after the server is restarted with its data directory evicted from the page cache, the first `queries`
 * queries one at a time, then the same queries warm (docs/metrics.md "Cold start"). At least 10: the rolling median
 * that says when the server is warm again is over 10 queries (metrics/coldstart.h VB_COLDSTART_WINDOW); at most
 * 10,000 (two latencies a query travel in one result). */
static const field cold_start_fields[] = {
    {"queries", F_INT, 10, 10000, "200", NULL},
    {"ef_search", F_INT, 1, 1000000, "100", NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};
/* capacity (docs/profiles.md "capacity"): the highest offered rate whose p99 from the intended start stays within each
 * target of p99_ms while recall meets `recall` (0: no recall objective), found by a search of open-loop windows of
 * window_s after warmup_s with `clients` clients, to `precision`, each found rate confirmed `repeats` times and shown
 * failing at 1.2 x. ef_search: auto (the smallest of the recall sweep's that meets `recall`, or a probe) or a value. */
static const field capacity_fields[] = {
    {"recall", F_DOUBLE, 0, 1, "0.95", NULL},
    {"p99_ms", F_DOUBLE_LIST, 0.001, 1e6, "10", NULL},
    {"ef_search", F_INT_AUTO, 1, 1000000, "auto", NULL},
    {"window_s", F_DOUBLE, 0.1, 86400, "10", NULL},
    {"warmup_s", F_DOUBLE, 0, 3600, "1", NULL},
    {"repeats", F_INT, 1, 20, "3", NULL},
    {"precision", F_DOUBLE, 0.005, 0.5, "0.05", NULL},
    {"clients", F_INT, 1, 4096, "32", NULL},
    /* the client agents a window's rate is split across (docs/design.md §8): 0 every client agent idle when the item
     * starts, N waits until N are idle */
    {"client_agents", F_INT, 0, 64, "0", NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};
static const char *const server_failure_choices[] = {"restart", "skip", "stop", NULL};
static const char *const agent_lost_choices[] = {"rerun", "fail", NULL};
/* on_server_failure: what happens after a server unit dies or fails to start. restart: the item that was running
 * is failed, the server is started again for the engine's next item (at most twice); skip: the engine's
 * remaining items are skipped; stop: the campaign stops (resume continues it).
 * agent_silent_s: an agent heard from for this long is lost, and an agent that hears nothing from its
 * coordinator for this long connects again. on_agent_lost: rerun (the item runs again on the next agent with
 * its role) or fail; max_attempts: attempts of one item in all (every start counts, resumes too) before an
 * item whose agent is lost fails instead. abort_unanswered_s: an agent that has not answered an Abort (any phase)
 * for this long is stuck: a local one is killed and started again, a remote one is marked lost. */
static const char *const item_failure_choices[] = {"continue", "stop", NULL};
/* on_item_failure: continue (the failed item is recorded and the plan goes on; a failed build skips its
 * engine's other items on that dataset) or stop (the campaign stops as interrupted; fix the cause and resume with
 * --retry-failed). */
static const field limits_fields[] = {
    {"phase_timeout_s", F_INT, 1, 2592000, "3600", NULL},
    {"on_item_failure", F_ENUM, 0, 0, "continue", item_failure_choices},
    {"on_server_failure", F_ENUM, 0, 0, "restart", server_failure_choices},
    {"server_start_timeout_s", F_INT, 1, 86400, "300", NULL},
    {"agent_silent_s", F_DOUBLE, 1, 86400, "15", NULL},
    {"on_agent_lost", F_ENUM, 0, 0, "rerun", agent_lost_choices},
    {"max_attempts", F_INT, 1, 1000, "3", NULL},
    /* an Abort unanswered this long: the agent is stuck in a call (a local one is killed, a remote one lost) */
    {"abort_unanswered_s", F_DOUBLE, 1, 86400, "30", NULL},
    {"backup_every_s", F_INT, 0, 2592000, "600", NULL},   /* FILE.bak; 0: only at the end */
    {"footprint_every_s", F_INT, 0, 2592000, NULL, NULL}, /* the coordinator's memory as an event (600); 0: never */
    {NULL, 0, 0, 0, NULL, NULL},
};
/* The footprint's period when the profile names none: not a default of the table above, so that a profile without
 * it keeps its manifest (the settings) as it was. */
#define FOOTPRINT_EVERY_S 600

/* vb_on_server_failure is indexed as server_failure_choices. */
const char *vb_on_server_failure_name(vb_on_server_failure v) {
    return (unsigned)v <= VB_ON_SERVER_FAILURE_STOP ? server_failure_choices[v] : "?";
}

/* limits.KEY as the profile has it (validated against its field), else the field's default: the one place the
 * defaults of limits_fields are read. */
static const char *limit_value(const vb_profile *p, const char *key) {
    char dotted[64];
    snprintf(dotted, sizeof dotted, "limits.%s", key);
    const char *v = vb_kv_get(p->settings, p->n_settings, dotted, NULL);
    if (v) return v;
    for (const field *f = limits_fields; f->key; f++)
        if (strcmp(f->key, key) == 0) return f->def;
    return NULL;
}

/* p->limits from the checked settings (each value in its field's range, or the field's default). */
static void fill_limits(vb_profile *p) {
    vb_limits *l = &p->limits;
    l->phase_timeout_s = atol(limit_value(p, "phase_timeout_s"));
    l->stop_on_item_failure = strcmp(limit_value(p, "on_item_failure"), "stop") == 0;
    const char *sf = limit_value(p, "on_server_failure");
    l->on_server_failure = VB_ON_SERVER_FAILURE_RESTART;
    for (int i = 0; server_failure_choices[i]; i++)
        if (strcmp(sf, server_failure_choices[i]) == 0) l->on_server_failure = (vb_on_server_failure)i;
    l->server_start_timeout_s = atol(limit_value(p, "server_start_timeout_s"));
    l->agent_silent_s = atof(limit_value(p, "agent_silent_s"));
    l->agent_silent_ns = (uint64_t)(l->agent_silent_s * 1e9);
    l->fail_on_agent_lost = strcmp(limit_value(p, "on_agent_lost"), "fail") == 0;
    l->max_attempts = (unsigned)atol(limit_value(p, "max_attempts"));
    l->abort_unanswered_s = atof(limit_value(p, "abort_unanswered_s"));
    l->abort_unanswered_ns = (uint64_t)(l->abort_unanswered_s * 1e9);
    l->backup_every_s = atof(limit_value(p, "backup_every_s"));
    const char *fp = limit_value(p, "footprint_every_s");
    l->footprint_every_s = fp ? atof(fp) : FOOTPRINT_EVERY_S;
}

/* insecure: plain TCP between coordinator and agents, honoured on a loopback address only (proto/transport.h).
 * No default, so that profiles without the section keep their manifest as it was. */
static const field transport_fields[] = {
    {"insecure", F_BOOL, 0, 0, NULL, NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};

/* notify: a command run when the campaign finishes, fails, expires a limit or loses an agent for longer than
 * agent_lost_min minutes, with a one-paragraph summary on stdin, for at most timeout_s (coordinator/notify.h).
 * No defaults here (notify.c has them), so that profiles without the section keep their manifest as it was. */
static const field notify_fields[] = {
    {"command", F_STRING, 0, 0, NULL, NULL},
    {"agent_lost_min", F_DOUBLE, 0.01, 10080, NULL, NULL},
    {"timeout_s", F_INT, 1, 3600, NULL, NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};
/* cost: the server host's price per hour and its currency (optional): queries per unit of money at each
 * concurrency point and the price of each build (store/views.sql v_cost_*). No defaults: absent, nothing is
 * recorded or printed. */
static const field cost_fields[] = {
    {"per_hour", F_DOUBLE, 1e-9, 1e9, NULL, NULL},
    {"currency", F_STRING, 0, 0, NULL, NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};
/* server_pass: the server settings pass the recipes apply (the `passes:` of each deploy/engines recipe): durable (the
 * engines' defaults) or relaxed (durability off for bulk loads, as the reference stand's tuned pass). */
static const char *const server_pass_choices[] = {"durable", "relaxed", NULL};

/* Indexed by vb_phase_kind (the execution order is vb_phase_order's). */
static const field *const phase_fields[VB_PHASE__COUNT] = {
    build_fields, recall_sweep_fields, concurrency_fields, filtered_fields, churn_fields, streaming_fields,
    cold_start_fields, capacity_fields, mixed_fields,
};

static const field k_field = {"k", F_INT, 1, 1000, "10", NULL};

static const char *const top_keys[] = {"name",   "description", "k",         "datasets",  "engines",
                                       "phases", "limits",      "resources", "transport", "notify",
                                       "server_pass", "cost", NULL};
/* "12", "-5": digits after an optional minus (a number out of range is refused as such, with the range). */
static int is_whole_number(const char *s) {
    s += *s == '-';
    return *s && s[strspn(s, "0123456789")] == '\0';
}

/* Dataset keys whose values are whole numbers in a range (the synthetic generator's): datasets/dataset_spec.h. */
static const vb_dataset_spec_int *dataset_int_key(const char *key) {
    for (const vb_dataset_spec_int *f = vb_dataset_spec_ints; f->key; f++)
        if (strcmp(f->key, key) == 0) return f;
    return NULL;
}

/* Whether the canonical list text "a,b,c" holds the word w. */
static int list_has(const char *list, const char *w) {
    size_t n = strlen(w);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, w, n) == 0 && (p[n] == ',' || p[n] == '\0')) return 1;
    return 0;
}

static const field *field_find(const field *fields, const char *key) {
    for (const field *f = fields; f->key; f++)
        if (strcmp(f->key, key) == 0) return f;
    return NULL;
}

static int in_list(const char *const *list, const char *s) {
    for (; list && *list; list++)
        if (strcmp(*list, s) == 0) return 1;
    return 0;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Private part of a profile: where each engine key was written, for vb_profile_check_engines' messages, and which
 * engine parameters are search-time (vb_profile_share_builds). */

typedef struct engine_line {
    char *engine;
    char *key;
    int line;
    size_t index;
} engine_line;

typedef struct profile_impl {
    vb_profile pub;   /* first: a vb_profile * is a profile_impl * */
    engine_line *lines;
    size_t n_lines;
    vb_profile_search_time_fn search_time;   /* NULL until vb_profile_share_builds is given one */
} profile_impl;

/* ---------------------------------------------------------------------------------------------------------- */
/* Small helpers: growing kv lists, string buffers, error messages */

typedef struct kvbuf {
    vb_kv *kv;
    size_t n, cap;
} kvbuf;

typedef struct sbuf {
    char *s;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_addn(sbuf *b, const char *s, size_t len) {
    if (b->oom) return;
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + len + 1) cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, len);
    b->n += len;
    b->s[b->n] = '\0';
}

static void sb_add(sbuf *b, const char *s) { sb_addn(b, s, strlen(s)); }

static void sb_addf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_addf(sbuf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        sb_addn(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->oom = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb_addn(b, big, (size_t)n);
    free(big);
}

/* Hands the buffer's string to the caller (NULL after an allocation failure). */
static char *sb_take(sbuf *b) {
    if (b->oom) {
        free(b->s);
        return NULL;
    }
    if (!b->s) return strdup("");
    return b->s;
}

static void kv_free(vb_kv *kv, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free((char *)kv[i].key);
        free((char *)kv[i].value);
    }
    free(kv);
}

/* Appends key -> value; takes ownership of value in every case. 0 or -1 (out of memory). */
static int kv_add(kvbuf *b, const char *key, char *value) {
    char *k = strdup(key);
    if (!k || !value) goto oom;
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 8;
        vb_kv *kv = realloc(b->kv, cap * sizeof *kv);
        if (!kv) goto oom;
        b->kv = kv;
        b->cap = cap;
    }
    b->kv[b->n].key = k;
    b->kv[b->n].value = value;
    b->n++;
    return 0;
oom:
    free(k);
    free(value);
    return -1;
}

int vb_profile_dataset_set(vb_profile_dataset *d, const char *key, const char *value) {
    char *v = strdup(value);
    if (!v) return VB_ERROR;
    for (size_t i = 0; i < d->n_params; i++)
        if (strcmp(d->params[i].key, key) == 0) {
            free((char *)d->params[i].value);
            d->params[i].value = v;
            return VB_OK;
        }
    char *k = strdup(key);
    vb_kv *kv = k ? realloc(d->params, (d->n_params + 1) * sizeof *kv) : NULL;
    if (!kv) {
        free(k);
        free(v);
        return VB_ERROR;
    }
    d->params = kv;
    d->params[d->n_params++] = (vb_kv){.key = k, .value = v};
    return VB_OK;
}

typedef struct ctx {
    const char *source;
    vb_error *err;
} ctx;

static int fail(const ctx *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(const ctx *c, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vb_error_vat(c->err, "profile", c->source, line, fmt, ap);
    va_end(ap);
    return VB_ERROR;
}

static int oom(const ctx *c) { return vb_error_set(c->err, "profile", 1, "%s: out of memory", c->source); }

/* "a, b, c" from a NULL-terminated list, into buf. */
static const char *join_names(const char *const *names, char *buf, size_t len) {
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; names && names[i] && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", names[i]);
    return buf;
}

static const char *join_fields(const field *fields, char *buf, size_t len) {
    const char *names[32];
    size_t n = 0;
    for (const field *f = fields; f->key && n < 31; f++) names[n++] = f->key;
    names[n] = NULL;
    return join_names(names, buf, len);
}

static int valid_name(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > MAX_NAME || s[0] == '.' || s[0] == '-') return 0;   /* no "..", no option-like names */
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
              *p == '_' || *p == '-'))
            return 0;
    return 1;
}

/* A recipe reference: a recipe name, then recipe parameters as key=value words, each side a valid name
 * ("pgvector pgvector_version=0.8.7"; orchestrator/recipe.h checks them against the recipe). */
static int valid_recipe_ref(const char *s) {
    char buf[512], *save = NULL;
    if (snprintf(buf, sizeof buf, "%s", s) >= (int)sizeof buf) return 0;
    int words = 0;
    for (char *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save), words++) {
        char *eq = words ? strchr(w, '=') : NULL;
        if (eq) *eq = '\0';
        if (!valid_name(w) || (words && (!eq || !valid_name(eq + 1)))) return 0;
    }
    return words > 0;
}

/* Shortest text that reads back as the same double, so 0.01 stays "0.01"; whole numbers below 1e15 are written
 * without an exponent ("2000", not "2e+03"), since they may become part of a plan key. */
static void fmt_double(double x, char *buf, size_t len) {
    if (x == floor(x) && fabs(x) < 1e15) {
        snprintf(buf, len, "%.0f", x);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, x);
        if (strtod(buf, NULL) == x) return;
    }
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Value conversion: a YAML node checked against a field, returned as malloc'd canonical text */

static const char *type_name(field_type t) {
    switch (t) {
    case F_INT: return "an integer";
    case F_DOUBLE: return "a number";
    case F_STRING: return "a string";
    case F_ENUM: return "one of";
    case F_INT_LIST: return "a list of integers";
    case F_DOUBLE_LIST: return "a list of numbers";
    case F_RATE_LIST: return "a list of numbers or max";
    case F_INT_AUTO: return "an integer or auto";
    case F_ENUM_LIST: return "a name or a list of names";
    case F_BOOL: return "true or false";
    case F_IDS_LIST: return "uniform, zipf(S) or a list of them";
    case F_MAP: return "a map";
    }
    return "?";
}

static int is_scalar_value(const vb_yaml_node *v) {
    return v && v->type == VB_YAML_SCALAR && !vb_yaml_is_null(v);
}

static char *conv_scalar(const ctx *c, const field *f, field_type t, const vb_yaml_node *v, const char *path) {
    char got[64], buf[64], names[256];
    if (t == F_INT_AUTO && is_scalar_value(v) && strcmp(v->text, "auto") == 0) return strdup("auto");
    const int or_auto = t == F_INT_AUTO;
    if (or_auto && is_scalar_value(v)) t = F_INT;
    if (!is_scalar_value(v)) {
        if (t == F_ENUM)
            fail(c, v ? v->line : 0, "key '%s': expected one of %s, got %s", path,
                 join_names(f->choices, names, sizeof names), vb_yaml_describe(v, got, sizeof got));
        else
            fail(c, v ? v->line : 0, "key '%s': expected %s, got %s", path, type_name(t),
                 vb_yaml_describe(v, got, sizeof got));
        return NULL;
    }
    const char *s = v->text;
    char *end;
    switch (t) {
    case F_INT: {
        errno = 0;
        long x = strtol(s, &end, 10);
        if ((errno && errno != ERANGE) || end == s || *end != '\0') {
            fail(c, v->line, "key '%s': expected an integer%s, got %s", path, or_auto ? " or auto" : "",
                 vb_yaml_describe(v, got, sizeof got));
            return NULL;
        }
        if (errno == ERANGE || (double)x < f->min || (double)x > f->max) {   /* beyond a long: outside too */
            fail(c, v->line, "key '%s': %s is outside [%ld, %ld]", path, s, (long)f->min, (long)f->max);
            return NULL;
        }
        snprintf(buf, sizeof buf, "%ld", x);
        break;
    }
    case F_DOUBLE: {
        errno = 0;
        double x = strtod(s, &end);
        if (end == s || *end != '\0' || isnan(x)) {
            fail(c, v->line, "key '%s': expected a number, got %s", path, vb_yaml_describe(v, got, sizeof got));
            return NULL;
        }
        if (isinf(x) || x < f->min || x > f->max) {   /* 1e400 too (inf; 1e-400 reads as 0, checked as 0) */
            char a[32], b[32];
            fmt_double(f->min, a, sizeof a);
            fmt_double(f->max, b, sizeof b);
            fail(c, v->line, "key '%s': %s is outside [%s, %s]", path, s, a, b);
            return NULL;
        }
        fmt_double(x, buf, sizeof buf);
        break;
    }
    case F_BOOL:
        if (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on"))
            snprintf(buf, sizeof buf, "true");
        else if (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off"))
            snprintf(buf, sizeof buf, "false");
        else {
            fail(c, v->line, "key '%s': expected true or false, got %s", path, vb_yaml_describe(v, got, sizeof got));
            return NULL;
        }
        break;
    case F_ENUM:
        if (!in_list(f->choices, s)) {
            fail(c, v->line, "key '%s': expected one of %s, got %s", path,
                 join_names(f->choices, names, sizeof names), vb_yaml_describe(v, got, sizeof got));
            return NULL;
        }
        return strdup(s);
    case F_IDS_LIST: {   /* one item of the list: uniform or zipf(S), S in (0, 10] */
        double x = 0;
        int used = 0;
        if (strcmp(s, "uniform") == 0) return strdup(s);
        if (sscanf(s, "zipf(%lf)%n", &x, &used) == 1 && s[used] == '\0' && x > 0 && x <= 10) {
            char num[32];
            fmt_double(x, num, sizeof num);
            snprintf(buf, sizeof buf, "zipf(%s)", num);
            break;
        }
        fail(c, v->line, "key '%s': expected uniform or zipf(S) with S in (0, 10] (the rows' choice: zipf(1.1) updates "
             "and deletes hot rows again and again), got %s", path, vb_yaml_describe(v, got, sizeof got));
        return NULL;
    }
    default:   /* F_STRING */
        return strdup(s);
    }
    return strdup(buf);
}

static char *conv_list(const ctx *c, const field *f, const vb_yaml_node *v, const char *path) {
    field_type item_type = f->type == F_INT_LIST    ? F_INT
                         : f->type == F_ENUM_LIST   ? F_ENUM
                         : f->type == F_IDS_LIST    ? F_IDS_LIST
                                                    : F_DOUBLE;
    if (f->type == F_RATE_LIST && v && v->type != VB_YAML_SEQ && v->type == VB_YAML_SCALAR && v->text &&
        strcmp(v->text, "max") == 0)
        return strdup("max");   /* insert_rate: max alone, not in a list */
    if (is_scalar_value(v)) return conv_scalar(c, f, item_type, v, path);   /* one value: a list of one */
    char got[64];
    if (!v || v->type != VB_YAML_SEQ || v->n == 0) {
        fail(c, v ? v->line : 0, "key '%s': expected %s, got %s", path, type_name(f->type),
             v && v->type == VB_YAML_SEQ ? "an empty list" : vb_yaml_describe(v, got, sizeof got));
        return NULL;
    }
    if (v->n > VB_MAX_LIST) {
        fail(c, v->line, "key '%s': at most %d items, got %zu", path, VB_MAX_LIST, v->n);
        return NULL;
    }
    char *vals[VB_MAX_LIST];
    size_t n = 0;
    int rc = VB_OK;
    while (n < v->n && rc == VB_OK) {
        char ipath[300];
        snprintf(ipath, sizeof ipath, "%s[%zu]", path, n);
        const vb_yaml_node *iv = v->items[n];
        char *val = f->type == F_RATE_LIST && iv && iv->type == VB_YAML_SCALAR && iv->text &&
                            strcmp(iv->text, "max") == 0
                        ? strdup("max")
                        : conv_scalar(c, f, item_type, iv, ipath);
        if (!val) {
            rc = VB_ERROR;
            break;
        }
        vals[n++] = val;
        for (size_t j = 0; j + 1 < n && rc == VB_OK; j++)
            if (strcmp(vals[j], val) == 0)
                rc = fail(c, v->items[n - 1]->line, "key '%s': %s is listed twice", path, val);
    }
    sbuf out = {0};
    for (size_t j = 0; j < n; j++) {
        if (rc == VB_OK) {
            sb_add(&out, j ? "," : "");
            sb_add(&out, vals[j]);
        }
        free(vals[j]);
    }
    if (rc != VB_OK) {
        free(out.s);
        return NULL;
    }
    char *s = sb_take(&out);
    if (!s) oom(c);
    return s;
}

static char *convert(const ctx *c, const field *f, const vb_yaml_node *v, const char *path) {
    int list = f->type == F_INT_LIST || f->type == F_DOUBLE_LIST || f->type == F_RATE_LIST || f->type == F_ENUM_LIST ||
               f->type == F_IDS_LIST;
    char *s = list ? conv_list(c, f, v, path) : conv_scalar(c, f, f->type, v, path);
    if (!s && c->err && c->err->message[0] == '\0') oom(c);
    return s;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Sections */

/* Checks a map against a field table and appends "prefix + key" -> canonical value for every field (given or
 * default), in table order. node may be NULL (section absent) or a null scalar (section with no keys). */
static int check_section(const ctx *c, const vb_yaml_node *node, const char *path, const field *fields,
                         const char *prefix, kvbuf *out) {
    char got[64], known[512];
    if (node && !vb_yaml_is_null(node)) {
        if (node->type != VB_YAML_MAP)
            return fail(c, node->line, "key '%s': expected a map, got %s", path,
                        vb_yaml_describe(node, got, sizeof got));
        for (size_t i = 0; i < node->n; i++)
            if (!field_find(fields, node->keys[i]))
                return fail(c, node->key_lines[i], "unknown key '%s.%s' (known in '%s': %s)", path, node->keys[i],
                            path, join_fields(fields, known, sizeof known));
    }
    const vb_yaml_node *map = node && node->type == VB_YAML_MAP ? node : NULL;
    for (const field *f = fields; f->key; f++) {
        if (f->type == F_MAP) continue;   /* its phase's own check */
        const vb_yaml_node *v = vb_yaml_map_get(map, f->key, NULL);
        char fpath[300], key[300];
        snprintf(fpath, sizeof fpath, "%s.%s", path, f->key);
        snprintf(key, sizeof key, "%s%s", prefix, f->key);
        char *val;
        if (v) {
            val = convert(c, f, v, fpath);
            if (!val) return VB_ERROR;
        } else if (f->def) {
            val = strdup(f->def);
        } else {
            continue;
        }
        if (kv_add(out, key, val) != 0) return oom(c);
    }
    return VB_OK;
}

/* A list of maps with a required unique "name": datasets and engines. Fills names/lines per entry. */
static int check_entry_list(const ctx *c, const vb_yaml_node *root, const char *key, const vb_yaml_node **list) {
    char got[64];
    size_t idx;
    const vb_yaml_node *v = vb_yaml_map_get(root, key, &idx);
    if (!v) return fail(c, root->line, "key '%s': required key missing", key);
    if (v->type != VB_YAML_SEQ || v->n == 0)
        return fail(c, v->type == VB_YAML_SEQ ? v->line : root->key_lines[idx],
                    "key '%s': expected a non-empty list of maps, got %s", key,
                    v->type == VB_YAML_SEQ ? "an empty list" : vb_yaml_describe(v, got, sizeof got));
    for (size_t i = 0; i < v->n; i++) {
        const vb_yaml_node *e = v->items[i];
        if (e->type != VB_YAML_MAP)
            return fail(c, e->line, "key '%s[%zu]': expected a map, got %s", key, i,
                        vb_yaml_describe(e, got, sizeof got));
        size_t ni;
        const vb_yaml_node *name = vb_yaml_map_get(e, "name", &ni);
        if (!name) return fail(c, e->line, "key '%s[%zu].name': required key missing", key, i);
        if (!is_scalar_value(name))
            return fail(c, e->key_lines[ni], "key '%s[%zu].name': expected a string, got %s", key, i,
                        vb_yaml_describe(name, got, sizeof got));
        if (!valid_name(name->text))
            return fail(c, name->line, "key '%s[%zu].name': '%s' is not a valid name (%s)", key, i, name->text,
                        NAME_RULE);
        for (size_t j = 0; j < i; j++) {
            const vb_yaml_node *other = vb_yaml_map_get(v->items[j], "name", NULL);
            if (strcmp(other->text, name->text) == 0)
                return fail(c, name->line, "key '%s[%zu].name': duplicate %s name '%s' (first at line %d)", key, i,
                            strcmp(key, "engines") == 0 ? "engine" : "dataset", name->text, other->line);
        }
    }
    *list = v;
    return VB_OK;
}

static int check_datasets(const ctx *c, const vb_yaml_node *root, vb_profile *p) {
    const vb_yaml_node *list;
    if (check_entry_list(c, root, "datasets", &list) != VB_OK) return VB_ERROR;
    p->datasets = calloc(list->n, sizeof *p->datasets);
    if (!p->datasets) return oom(c);
    char got[64], known[512];
    for (size_t i = 0; i < list->n; i++) {
        const vb_yaml_node *e = list->items[i];
        vb_profile_dataset *d = &p->datasets[p->n_datasets++];
        d->line = e->line;
        kvbuf kv = {0};
        int rc = VB_OK;
        for (size_t j = 0; j < e->n && rc == VB_OK; j++) {
            const char *k = e->keys[j];
            const vb_yaml_node *v = e->items[j];
            const vb_dataset_spec_int *fi = NULL;
            long x;
            if (!in_list(vb_dataset_spec_keys, k)) {
                rc = fail(c, e->key_lines[j], "unknown key 'datasets[%zu].%s' (known in 'datasets': %s)", i, k,
                          join_names(vb_dataset_spec_keys, known, sizeof known));
            } else if (!is_scalar_value(v)) {
                rc = fail(c, v->line, "key 'datasets[%zu].%s': expected a value, got %s", i, k,
                          vb_yaml_describe(v, got, sizeof got));
            } else if ((fi = dataset_int_key(k)) && !is_whole_number(v->text)) {
                rc = fail(c, v->line, "key 'datasets[%zu].%s': expected a non-negative integer (%ld to %ld), got %s",
                          i, k, fi->min, fi->max, vb_yaml_describe(v, got, sizeof got));
            } else if (fi && (errno = 0, x = strtol(v->text, NULL, 10), errno || x < fi->min || x > fi->max)) {
                rc = fail(c, v->line, "key 'datasets[%zu].%s': %s is outside [%ld, %ld]", i, k, v->text, fi->min,
                          fi->max);
            } else if (kv_add(&kv, k, strdup(v->text)) != 0) {
                rc = oom(c);
            }
        }
        d->params = kv.kv;
        d->n_params = kv.n;
        if (rc != VB_OK) return VB_ERROR;
        /* file names that cannot fit the source (path, queries_path, groundtruth_path) are refused here, with
         * their line; what needs the files themselves is checked when the dataset is opened */
        const char *bad = NULL;
        vb_error derr = {0};
        if (vb_dataset_spec_check(d->params, d->n_params, 0, &bad, &derr) != VB_OK) {
            int line = e->line;
            for (size_t j = 0; j < e->n; j++)
                if (strcmp(e->keys[j], bad) == 0) line = e->key_lines[j];
            return fail(c, line, "key 'datasets[%zu].%s': %s", i, bad, derr.message);
        }
        d->name = strdup(vb_kv_get(d->params, d->n_params, "name", ""));
        if (!d->name) return oom(c);
    }
    return VB_OK;
}

static int note_line(profile_impl *impl, const char *engine, const char *key, int line, size_t index) {
    engine_line *l = realloc(impl->lines, (impl->n_lines + 1) * sizeof *l);
    if (!l) return -1;
    impl->lines = l;
    l = &impl->lines[impl->n_lines];
    l->engine = strdup(engine);
    l->key = strdup(key);
    l->line = line;
    l->index = index;
    impl->n_lines++;
    return l->engine && l->key ? 0 : -1;
}

/* At most this many configurations may come out of one engine entry's matrix (the plan limit still applies). */
#define MAX_CONFIGS 64

/* A key of an engine entry that may not be a matrix axis: it names the entry or how it runs, not the index. */
static int engine_key_is_fixed(const char *k) {
    return strcmp(k, "name") == 0 || strcmp(k, "engine") == 0 || strcmp(k, "phases") == 0 ||
           vb_profile_engine_param_is_general(k);
}

/* An engine's own phase settings (`phases: {recall_sweep: {ef_search: [10, 20]}}`): each a key of a phase the
 * profile has, checked and made canonical like the profile's own, into out as "PHASE.KEY". The loop of the
 * concurrency phase (mode, target_rate) is the campaign's, not an engine's. */
static int engine_overrides(const ctx *c, const vb_yaml_node *root, const vb_yaml_node *node, size_t i, kvbuf *out) {
    char got[64], known[512], path[300];
    if (node->type != VB_YAML_MAP)
        return fail(c, node->line, "key 'engines[%zu].phases': expected a map of phases, got %s", i,
                    vb_yaml_describe(node, got, sizeof got));
    const vb_yaml_node *phases = vb_yaml_map_get(root, "phases", NULL);
    for (size_t j = 0; j < node->n; j++) {
        vb_phase_kind kind;
        const vb_yaml_node *sec = node->items[j];
        if (vb_phase_parse(node->keys[j], &kind) != 0 || !vb_yaml_map_get(phases, node->keys[j], NULL))
            return fail(c, node->key_lines[j], "key 'engines[%zu].phases.%s': the profile has no such phase", i,
                        node->keys[j]);
        if (sec->type != VB_YAML_MAP)
            return fail(c, sec->line, "key 'engines[%zu].phases.%s': expected a map, got %s", i, node->keys[j],
                        vb_yaml_describe(sec, got, sizeof got));
        for (size_t x = 0; x < sec->n; x++) {
            const field *f = field_find(phase_fields[kind], sec->keys[x]);
            snprintf(path, sizeof path, "engines[%zu].phases.%s.%s", i, node->keys[j], sec->keys[x]);
            if (!f || strcmp(f->key, "mode") == 0 || strcmp(f->key, "target_rate") == 0)
                return fail(c, sec->key_lines[x], "unknown key '%s' (an engine may set in '%s': %s but not mode, "
                            "target_rate)", path, node->keys[j], join_fields(phase_fields[kind], known, sizeof known));
            char *val = convert(c, f, sec->items[x], path);
            if (!val) return VB_ERROR;
            snprintf(path, sizeof path, "%s.%s", node->keys[j], sec->keys[x]);
            if (kv_add(out, path, val) != 0) return oom(c);
        }
    }
    return VB_OK;
}

/* build_repeats: a whole number of builds, 1 (one build, as without the key) to VB_PROFILE_MAX_BUILD_REPEATS. */
static int valid_build_repeats(const char *text) {
    char *end;
    long n = strtol(text, &end, 10);
    return text[0] >= '0' && text[0] <= '9' && *end == '\0' && n >= 1 && n <= VB_PROFILE_MAX_BUILD_REPEATS;
}

/* A value of shards (1 .. VB_PROFILE_MAX_NODES) or replicas (0 .. VB_PROFILE_MAX_NODES - 1): a whole number. */
static int valid_topology(const char *key, const char *text) {
    char *end;
    long n = strtol(text, &end, 10);
    long lo = strcmp(key, "shards") == 0 ? 1 : 0, hi = strcmp(key, "shards") == 0 ? VB_PROFILE_MAX_NODES
                                                                                  : VB_PROFILE_MAX_NODES - 1;
    return text[0] >= '0' && text[0] <= '9' && *end == '\0' && n >= lo && n <= hi;
}

/* shards and replicas (vb_profile_engine_nodes): each value, a list's too, in range; not both on one entry. */
static int check_topology(const ctx *c, const vb_yaml_node *e, size_t i) {
    int line_s = 0, line_r = 0;
    for (size_t j = 0; j < e->n; j++) {
        const char *k = e->keys[j];
        const vb_yaml_node *v = e->items[j];
        if (!vb_profile_engine_param_is_topology(k)) continue;
        *(strcmp(k, "shards") == 0 ? &line_s : &line_r) = e->key_lines[j];
        for (size_t x = 0; x < (v->type == VB_YAML_SEQ ? v->n : 1); x++) {
            const vb_yaml_node *item = v->type == VB_YAML_SEQ ? v->items[x] : v;
            if (item->type == VB_YAML_SEQ || item->type == VB_YAML_MAP || !valid_topology(k, item->text))
                return fail(c, item->line, "key 'engines[%zu].%s': expected a whole number from %d to %d (%s), got "
                            "'%s'", i, k, strcmp(k, "shards") == 0 ? 1 : 0,
                            strcmp(k, "shards") == 0 ? VB_PROFILE_MAX_NODES : VB_PROFILE_MAX_NODES - 1,
                            strcmp(k, "shards") == 0 ? "the servers the rows are split over"
                                                     : "the read replicas beside the primary",
                            item->type == VB_YAML_SEQ || item->type == VB_YAML_MAP ? "a collection" : item->text);
        }
    }
    if (line_s && line_r)
        return fail(c, line_r, "key 'engines[%zu].replicas': an entry has shards or replicas, not both (replicas of "
                    "each shard are not supported yet): split it into two entries", i);
    return VB_OK;
}

/* Checks one engine entry: scalars, or lists of values (matrix axes, each value a name-like token because it
 * becomes part of the label and of plan keys). Returns the number of configurations, 0 on error. */
static size_t check_engine_entry(const ctx *c, const vb_yaml_node *e, size_t i) {
    char got[64];
    size_t configs = 1;
    if (check_topology(c, e, i) != VB_OK) return 0;
    for (size_t j = 0; j < e->n; j++) {
        const char *k = e->keys[j];
        const vb_yaml_node *v = e->items[j];
        if (strcmp(k, "name") == 0 || strcmp(k, "phases") == 0) continue;   /* phases: engine_overrides */
        if (v->type == VB_YAML_SEQ && !engine_key_is_fixed(k)) {
            if (v->n == 0) return fail(c, v->line, "key 'engines[%zu].%s': an empty list (give one value or several)", i, k), 0;
            for (size_t x = 0; x < v->n; x++) {
                const vb_yaml_node *item = v->items[x];
                if (!is_scalar_value(item))
                    return fail(c, item->line, "key 'engines[%zu].%s[%zu]': expected a value, got %s", i, k, x,
                                vb_yaml_describe(item, got, sizeof got)), 0;
                if (!valid_name(item->text))
                    return fail(c, item->line, "key 'engines[%zu].%s[%zu]': '%s' cannot be part of a configuration "
                                "label (%s)", i, k, x, item->text, NAME_RULE), 0;
                for (size_t y = 0; y < x; y++)
                    if (strcmp(v->items[y]->text, item->text) == 0)
                        return fail(c, item->line, "key 'engines[%zu].%s': %s is listed twice", i, k, item->text), 0;
            }
            configs *= v->n;
            if (configs > MAX_CONFIGS)
                return fail(c, v->line, "key 'engines[%zu].%s': the matrix has more than %d configurations; split "
                            "the entry", i, k, MAX_CONFIGS), 0;
            continue;
        }
        if (!is_scalar_value(v))
            return fail(c, v->line, "key 'engines[%zu].%s': expected a value%s, got %s", i, k,
                        engine_key_is_fixed(k) ? "" : " or a list of values", vb_yaml_describe(v, got, sizeof got)), 0;
        if (strcmp(k, "recipe") == 0 && !valid_recipe_ref(v->text))
            return fail(c, v->line, "key 'engines[%zu].recipe': '%s' is not a valid recipe name (%s), optionally "
                        "followed by parameters key=value", i, v->text, NAME_RULE), 0;
        if (strcmp(k, "optional") == 0 && strcmp(v->text, "true") != 0 && strcmp(v->text, "false") != 0)
            return fail(c, v->line, "key 'engines[%zu].optional': expected true or false, got '%s'", i, v->text), 0;
        if (strcmp(k, "engine") == 0 && !valid_name(v->text))
            return fail(c, v->line, "key 'engines[%zu].engine': '%s' is not a valid engine name (%s)", i, v->text,
                        NAME_RULE), 0;
        if (strcmp(k, "build_repeats") == 0 && !valid_build_repeats(v->text))
            return fail(c, v->line, "key 'engines[%zu].build_repeats': expected an integer from 1 to %d (the index is "
                        "built that many times, the recall sweep run on each build), got '%s'", i,
                        VB_PROFILE_MAX_BUILD_REPEATS, v->text), 0;
    }
    return configs;
}

/* Every parameter of a that is not search-time is in b with the same value, and the other way round. */
static int same_build_params(const vb_profile_engine *a, const vb_profile_engine *b, vb_profile_search_time_fn st) {
    for (int pass = 0; pass < 2; pass++) {
        const vb_profile_engine *x = pass ? b : a, *y = pass ? a : b;
        for (size_t i = 0; i < x->n_params; i++) {
            if (st && st(x->adapter, x->params[i].key)) continue;
            const char *v = vb_kv_get(y->params, y->n_params, x->params[i].key, NULL);
            if (!v || strcmp(v, x->params[i].value) != 0) return 0;
        }
    }
    return 1;
}

/* Which configuration's build each one uses: an earlier one of the same entry whose index is the same (it differs
 * only in search-time parameters, and not in its own build settings), else itself. Not when the profile churns:
 * churn deletes and reinserts rows of the index, and the next configuration would search what churn left. Which
 * parameters are search-time is the engines' word (their ops' search_params), given by vb_profile_share_builds;
 * until then none is, and each configuration builds its own. */
static void share_builds(vb_profile *p) {
    vb_profile_search_time_fn st = ((profile_impl *)p)->search_time;
    int churns = vb_profile_phase_find(p, "churn") != NULL;
    for (size_t e = 0; e < p->n_engines; e++) {
        vb_profile_engine *en = &p->engines[e];
        en->build_of = e;
        /* a configuration built several times (build_repeats) sweeps each of its builds before the next one
         * replaces it: another configuration cannot search "its" index without its own builds */
        for (size_t j = 0; j < e && !churns && vb_profile_engine_build_repeats(en) == 1; j++) {
            const vb_profile_engine *o = &p->engines[j];
            if (vb_profile_engine_build_repeats(o) != 1) continue;
            if (o->build_of == j && strcmp(o->entry, en->entry) == 0 && strcmp(o->adapter, en->adapter) == 0 &&
                same_build_params(o, en, st)) {
                int same = 1;   /* the build phase's own settings, when an engine has them */
                for (size_t k = 0; k < en->n_overrides || k < o->n_overrides; k++) {
                    const vb_kv *kv = k < en->n_overrides ? &en->overrides[k] : &o->overrides[k];
                    const vb_profile_engine *other = k < en->n_overrides ? o : en;
                    const char *v = vb_kv_get(other->overrides, other->n_overrides, kv->key, NULL);
                    if (strncmp(kv->key, "build.", 6) == 0 && (!v || strcmp(v, kv->value) != 0)) same = 0;
                }
                if (same) {
                    en->build_of = j;
                    break;
                }
            }
        }
    }
}

void vb_profile_share_builds(vb_profile *p, vb_profile_search_time_fn search_time) {
    ((profile_impl *)p)->search_time = search_time;
    share_builds(p);
}

/* Engine entries, each expanded into its configurations: the cartesian product of its list values, the first
 * list varying slowest. A configuration's name is its label: the entry's name when the entry has no lists (so
 * existing profiles keep their plan keys), else "NAME[k=v,...]" with the entry's lists in the file's order. */
static int check_engines(const ctx *c, const vb_yaml_node *root, profile_impl *impl) {
    vb_profile *p = &impl->pub;
    const vb_yaml_node *list;
    if (check_entry_list(c, root, "engines", &list) != VB_OK) return VB_ERROR;
    size_t total = 0;
    for (size_t i = 0; i < list->n; i++) {
        size_t n = check_engine_entry(c, list->items[i], i);
        if (n == 0) return VB_ERROR;
        total += n;
    }
    p->engines = calloc(total, sizeof *p->engines);
    if (!p->engines) return oom(c);
    for (size_t i = 0; i < list->n; i++) {
        const vb_yaml_node *e = list->items[i];
        size_t ni;
        const char *name = vb_yaml_map_get(e, "name", &ni)->text;
        const vb_yaml_node *adapter = vb_yaml_map_get(e, "engine", NULL);
        size_t idx[64] = {0};   /* the odometer: one digit per key of the entry */
        if (e->n > 64) return fail(c, e->line, "key 'engines[%zu]': more than 64 keys", i);
        for (;;) {
            vb_profile_engine *en = &p->engines[p->n_engines++];
            en->line = e->line;
            sbuf label = {0};
            sb_addf(&label, "%s", name);
            int axes = 0;
            for (size_t j = 0; j < e->n; j++)
                if (e->items[j]->type == VB_YAML_SEQ)
                    sb_addf(&label, "%s%s=%s", axes++ ? "," : "[", e->keys[j], e->items[j]->items[idx[j]]->text);
            if (axes) sb_addf(&label, "]");
            en->name = sb_take(&label);
            en->entry = strdup(name);
            en->adapter = strdup(adapter ? adapter->text : name);
            if (!en->name || !en->entry || !en->adapter || note_line(impl, en->name, "name", e->key_lines[ni], i) != 0)
                return oom(c);
            kvbuf kv = {0};
            int rc = VB_OK;
            for (size_t j = 0; j < e->n && rc == VB_OK; j++) {
                const char *k = e->keys[j];
                const vb_yaml_node *v = e->items[j];
                if (strcmp(k, "name") == 0) continue;
                if (strcmp(k, "phases") == 0) {
                    kvbuf ov = {0};
                    rc = engine_overrides(c, root, v, i, &ov);
                    en->overrides = ov.kv;
                    en->n_overrides = ov.n;
                    continue;
                }
                if (strcmp(k, "engine") == 0) {
                    if (note_line(impl, en->name, k, e->key_lines[j], i) != 0) rc = oom(c);
                    continue;
                }
                const char *text = v->type == VB_YAML_SEQ ? v->items[idx[j]]->text : v->text;
                if (kv_add(&kv, k, strdup(text)) != 0 || note_line(impl, en->name, k, e->key_lines[j], i) != 0)
                    rc = oom(c);
            }
            en->params = kv.kv;
            en->n_params = kv.n;
            if (rc != VB_OK) return VB_ERROR;
            /* next combination: the last list varies fastest */
            size_t j = e->n;
            while (j-- > 0) {
                if (e->items[j]->type != VB_YAML_SEQ) continue;
                if (++idx[j] < e->items[j]->n) break;
                idx[j] = 0;
            }
            if (j == (size_t)-1) break;
        }
    }
    return VB_OK;
}

/* equality passes one label of the label column, whose shares are fixed (datasets/dataset.h vb_dataset_label):
 * a selectivity no label has is refused here, naming its line, before anything runs. predicate class needs its
 * class, and the class goes with predicate class only. */
static int check_predicate(const ctx *c, const vb_yaml_node *sec, const vb_profile_phase *ph) {
    int has_class = vb_kv_get(ph->params, ph->n_params, "class", NULL) != NULL;
    const vb_yaml_node *map = sec && sec->type == VB_YAML_MAP ? sec : NULL;
    if (list_has(vb_kv_get(ph->params, ph->n_params, "predicate", "range"), "class") && !has_class)
        return fail(c, ph->line, "key 'phases.filtered.class' is missing: predicate class filters every query on "
                    "one class, which `class: L` names (a class of the dataset, 0 .. its classes - 1)");
    if (!list_has(vb_kv_get(ph->params, ph->n_params, "predicate", "range"), "class") && has_class) {
        const vb_yaml_node *v = vb_yaml_map_get(map, "class", NULL);
        return fail(c, v ? v->line : ph->line, "key 'phases.filtered.class' goes with predicate class only (the "
                    "other predicates choose no fixed class): add class to the predicate list or remove the key");
    }
    if (!list_has(vb_kv_get(ph->params, ph->n_params, "predicate", "range"), "equality")) return VB_OK;
    const vb_yaml_node *sel = vb_yaml_map_get(sec, "selectivity", NULL);
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", vb_kv_get(ph->params, ph->n_params, "selectivity", ""));
    size_t i = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), i++)
        if (vb_dataset_label_for(strtod(tok, NULL)) < 0)
            return fail(c, sel && sel->type == VB_YAML_SEQ && i < sel->n ? sel->items[i]->line : ph->line,
                        "key 'phases.filtered.selectivity[%zu]': %s is no label's share, so predicate: equality "
                        "cannot pass it (the label column's shares: 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, "
                        "0.2, 0.5, 0.112)", i, tok);
    return VB_OK;
}

/* The concurrency loop: target_rate goes with mode open and only with it. */
static int check_loop(const ctx *c, const vb_yaml_node *sec, const vb_profile_phase *ph) {
    const char *mode = vb_kv_get(ph->params, ph->n_params, "mode", "closed");
    int has_rate = vb_kv_get(ph->params, ph->n_params, "target_rate", NULL) != NULL;
    const vb_yaml_node *map = sec && sec->type == VB_YAML_MAP ? sec : NULL;
    size_t at = 0;
    if (strcmp(mode, "open") == 0 && !has_rate) {
        int line = vb_yaml_map_get(map, "mode", &at) ? map->key_lines[at] : ph->line;
        return fail(c, line, "key 'phases.concurrency.target_rate': required with mode: open (queries per second "
                             "over all clients)");
    }
    if (strcmp(mode, "open") != 0 && has_rate) {
        int line = vb_yaml_map_get(map, "target_rate", &at) ? map->key_lines[at] : ph->line;
        return fail(c, line, "key 'phases.concurrency.target_rate': only used with mode: open (the closed loop "
                             "sends as fast as the engine answers)");
    }
    return VB_OK;
}

/* The streaming phase: target_rate with mode open only; stages ascending, above initial_fraction, the last 1 (the
 * whole corpus is inserted, so that the window at rest searches the full index). */
static int check_streaming(const ctx *c, const vb_yaml_node *sec, const vb_profile_phase *ph) {
    const char *mode = vb_kv_get(ph->params, ph->n_params, "mode", "closed");
    int has_rate = vb_kv_get(ph->params, ph->n_params, "target_rate", NULL) != NULL;
    const vb_yaml_node *map = sec && sec->type == VB_YAML_MAP ? sec : NULL;
    size_t at = 0;
    int line = vb_yaml_map_get(map, "mode", &at) ? map->key_lines[at] : ph->line;
    if (strcmp(mode, "open") == 0 && !has_rate)
        return fail(c, line, "key 'phases.streaming.target_rate': required with mode: open (search queries per "
                             "second over all clients)");
    if (strcmp(mode, "open") != 0 && has_rate)
        return fail(c, vb_yaml_map_get(map, "target_rate", &at) ? map->key_lines[at] : ph->line,
                    "key 'phases.streaming.target_rate': only used with mode: open");
    double initial = strtod(vb_kv_get(ph->params, ph->n_params, "initial_fraction", "0.5"), NULL), prev = initial;
    const char *s = vb_kv_get(ph->params, ph->n_params, "stages", "1");
    const vb_yaml_node *sv = vb_yaml_map_get(map, "stages", &at);
    int sline = sv ? sv->line : ph->line;
    size_t i = 0;
    for (; *s; i++) {
        char *end;
        double x = strtod(s, &end);
        if (!(x > prev))
            return fail(c, sline, "key 'phases.streaming.stages[%zu]': %g is not above %s %g (stages grow the corpus: "
                                  "ascending fractions above initial_fraction)", i, x, i ? "the stage before," :
                                  "initial_fraction", prev);
        prev = x;
        s = *end == ',' ? end + 1 : end;
    }
    if (prev != 1)
        return fail(c, sline, "key 'phases.streaming.stages': the last stage is %g, not 1 (the whole corpus is "
                              "inserted before the window at rest)", prev);
    if (i > VB_PLAN_MAX_STAGES)
        return fail(c, sline, "key 'phases.streaming.stages': at most %d stages, got %zu", VB_PLAN_MAX_STAGES, i);
    return VB_OK;
}

/* The mixed phase: ops a map of the four shares (search, update, delete, insert; without ops 0.9, 0.05, 0.025, 0.025;
 * with it, a share left out is 0), summing to 1, kept as
 * ops.search ...; rate a number of operations/s (the open loop) or closed. */
static int check_mixed(const ctx *c, const vb_yaml_node *sec, kvbuf *kv) {
    const vb_yaml_node *map = sec && sec->type == VB_YAML_MAP ? sec : NULL;
    size_t at = 0;
    const vb_yaml_node *ops = vb_yaml_map_get(map, "ops", &at);
    int line = ops ? map->key_lines[at] : sec ? sec->line : 0;
    size_t first = kv->n;
    if (check_section(c, ops, "phases.mixed.ops", ops ? mixed_ops_given_fields : mixed_ops_fields, "ops.", kv) != VB_OK)
        return VB_ERROR;
    double sum = 0;
    for (size_t i = first; i < kv->n; i++) sum += strtod(kv->kv[i].value, NULL);
    if (fabs(sum - 1) > 1e-9)
        return fail(c, line, "key 'phases.mixed.ops': the shares of search, update, delete and insert sum to %g, not 1 "
                             "(a share left out is 0)", sum);
    const char *rate = NULL;
    for (size_t i = 0; i < first; i++)
        if (strcmp(kv->kv[i].key, "rate") == 0) rate = kv->kv[i].value;
    if (rate && strcmp(rate, "closed") != 0) {
        char *end;
        double r = strtod(rate, &end);
        if (*end || !(r > 0) || r > 1e9)
            return fail(c, vb_yaml_map_get(map, "rate", &at) ? map->key_lines[at] : line,
                        "key 'phases.mixed.rate': expected operations per second in (0, 1e9] (the open loop, split by "
                        "the ops' shares) or closed, got %s", rate);
    }
    return VB_OK;
}

/* The sweep's window (window_s, warmup_s) goes with a clients list: without one, the sweep runs each query once. */
static int check_sweep_window(const ctx *c, const vb_yaml_node *sec, const vb_profile_phase *ph) {
    if (vb_kv_get(ph->params, ph->n_params, "clients", NULL)) return VB_OK;
    const vb_yaml_node *map = sec && sec->type == VB_YAML_MAP ? sec : NULL;
    static const char *const keys[] = {"window_s", "warmup_s"};
    for (size_t i = 0; i < 2; i++) {
        size_t at = 0;
        if (!vb_kv_get(ph->params, ph->n_params, keys[i], NULL)) continue;
        int line = vb_yaml_map_get(map, keys[i], &at) ? map->key_lines[at] : ph->line;
        return fail(c, line, "key 'phases.recall_sweep.%s': only used with a clients list (clients: [1, 2, 4] makes "
                             "each point a window of that many clients; without it every query runs once)", keys[i]);
    }
    return VB_OK;
}

static int check_phases(const ctx *c, const vb_yaml_node *root, vb_profile *p) {
    char got[64], known[256];
    const char *kinds[VB_PHASE__COUNT + 1];   /* in execution order */
    for (int i = 0; i < VB_PHASE__COUNT; i++) kinds[i] = vb_phase_name(vb_phase_order(i));
    kinds[VB_PHASE__COUNT] = NULL;
    join_names(kinds, known, sizeof known);

    size_t idx;
    const vb_yaml_node *v = vb_yaml_map_get(root, "phases", &idx);
    if (!v) return fail(c, root->line, "key 'phases': required key missing (known phases: %s)", known);
    if (v->type != VB_YAML_MAP || v->n == 0)
        return fail(c, v->type == VB_YAML_MAP ? v->line : root->key_lines[idx],
                    "key 'phases': expected a map of phases (%s), got %s", known,
                    v->type == VB_YAML_MAP ? "an empty map" : vb_yaml_describe(v, got, sizeof got));
    for (size_t i = 0; i < v->n; i++) {
        vb_phase_kind kind;
        if (vb_phase_parse(v->keys[i], &kind) != 0)
            return fail(c, v->key_lines[i], "unknown key 'phases.%s' (known in 'phases': %s)", v->keys[i], known);
    }
    p->phases = calloc(VB_PHASE__COUNT, sizeof *p->phases);
    if (!p->phases) return oom(c);
    for (int i = 0; i < VB_PHASE__COUNT; i++) {   /* fixed execution order, whatever the file's order */
        vb_phase_kind k = vb_phase_order(i);
        size_t at;
        const vb_yaml_node *sec = vb_yaml_map_get(v, kinds[i], &at);
        if (!sec) continue;
        vb_profile_phase *ph = &p->phases[p->n_phases++];
        ph->line = v->key_lines[at];
        ph->kind = strdup(kinds[i]);
        if (!ph->kind) return oom(c);
        char path[64];
        snprintf(path, sizeof path, "phases.%s", kinds[i]);
        kvbuf kv = {0};
        int rc = check_section(c, sec, path, phase_fields[k], "", &kv);
        if (rc == VB_OK && k == VB_PHASE_MIXED) rc = check_mixed(c, sec, &kv);
        ph->params = kv.kv;
        ph->n_params = kv.n;
        if (rc != VB_OK) return VB_ERROR;
        if (k == VB_PHASE_CONCURRENCY && check_loop(c, sec, ph) != VB_OK) return VB_ERROR;
        if (k == VB_PHASE_RECALL_SWEEP && check_sweep_window(c, sec, ph) != VB_OK) return VB_ERROR;
        if (k == VB_PHASE_FILTERED && check_predicate(c, sec, ph) != VB_OK) return VB_ERROR;
        if (k == VB_PHASE_STREAMING && check_streaming(c, sec, ph) != VB_OK) return VB_ERROR;
    }
    return VB_OK;
}

/* resources (config/budget.h): known keys, sizes and CPU lists checked here so a typo names its line; whether
 * the CPUs exist is known only on the server's host (vb_budget_resolve). */
static int check_resources(const ctx *c, const vb_yaml_node *res, kvbuf *out) {
    static const char *const keys[] = {"layout", "server_cpus", "server_memory", "shm", "client_cpus", "client_memory",
                                       "orchestrators", NULL};
    static const char *const layouts[] = {"auto", "reference", "small", NULL};
    char got[64], known[256], path[64];
    for (size_t i = 0; i < res->n; i++) {
        const char *k = res->keys[i];
        const vb_yaml_node *v = res->items[i];
        if (!in_list(keys, k))
            return fail(c, res->key_lines[i], "unknown key 'resources.%s' (known: %s)", k,
                        join_names(keys, known, sizeof known));
        if (!is_scalar_value(v))
            return fail(c, v->line, "key 'resources.%s': expected a value, got %s", k, vb_yaml_describe(v, got, sizeof got));
        vb_error e;
        uint64_t bytes;
        int cpus[1024];
        snprintf(path, sizeof path, "resources.%s", k);
        if (strcmp(k, "layout") == 0 && !in_list(layouts, v->text))
            return fail(c, v->line, "key 'resources.layout': '%s' is not one of %s", v->text,
                        join_names(layouts, known, sizeof known));
        if (strcmp(k, "orchestrators") == 0) {   /* placement (coordinator/placement.h): servers wait for this many */
            char *end = NULL;
            long n = strtol(v->text, &end, 10);
            if (!end || *end || n < 1 || n > 16)
                return fail(c, v->line, "key 'resources.orchestrators': '%s' is not a whole number from 1 to 16 (the "
                            "orchestrator agents a server of several nodes waits for and places its nodes on)", v->text);
        } else if (strstr(k, "memory") || strcmp(k, "shm") == 0) {
            if (vb_size_parse(v->text, path, &bytes, &e)) return fail(c, v->line, "key %s", e.message);
        } else if (strstr(k, "cpus") && vb_cpulist_parse(v->text, cpus, 1024, &e) <= 0) {
            return fail(c, v->line, "key 'resources.%s': '%s' is not a CPU list such as 0-63 or 0,2,4", k, v->text);
        }
        if (kv_add(out, path, strdup(v->text)) != 0) return oom(c);
    }
    return VB_OK;
}

static int check_profile(const ctx *c, const vb_yaml_node *root, profile_impl *impl) {
    vb_profile *p = &impl->pub;
    char got[64], known[512];
    if (!root) return fail(c, 1, "empty profile (expected a map with name, datasets, engines, phases)");
    if (root->type != VB_YAML_MAP)
        return fail(c, root->line, "expected a map with name, datasets, engines, phases at the top level, got %s",
                    vb_yaml_describe(root, got, sizeof got));
    for (size_t i = 0; i < root->n; i++)
        if (!in_list(top_keys, root->keys[i]))
            return fail(c, root->key_lines[i], "unknown key '%s' (known at the top level: %s)", root->keys[i],
                        join_names(top_keys, known, sizeof known));

    const vb_yaml_node *name = vb_yaml_map_get(root, "name", NULL);
    if (!name) return fail(c, root->line, "key 'name': required key missing");
    if (!is_scalar_value(name))
        return fail(c, name->line, "key 'name': expected a string, got %s", vb_yaml_describe(name, got, sizeof got));
    if (!valid_name(name->text))
        return fail(c, name->line, "key 'name': '%s' is not a valid name (%s)", name->text, NAME_RULE);
    if (!(p->name = strdup(name->text))) return oom(c);

    const vb_yaml_node *kv = vb_yaml_map_get(root, "k", NULL);
    char *ks = kv ? convert(c, &k_field, kv, "k") : strdup(k_field.def);
    if (!ks) return VB_ERROR;
    p->k = atoi(ks);
    free(ks);

    if (check_datasets(c, root, p) != VB_OK || check_engines(c, root, impl) != VB_OK ||
        check_phases(c, root, p) != VB_OK)
        return VB_ERROR;
    share_builds(p);

    kvbuf settings = {0};
    int rc = VB_OK;
    const vb_yaml_node *desc = vb_yaml_map_get(root, "description", NULL);
    if (desc) {
        static const field d_field = {"description", F_STRING, 0, 0, NULL, NULL};
        char *d = convert(c, &d_field, desc, "description");
        rc = !d ? VB_ERROR : kv_add(&settings, "description", d) == 0 ? VB_OK : oom(c);
    }
    if (rc == VB_OK)
        rc = check_section(c, vb_yaml_map_get(root, "limits", NULL), "limits", limits_fields, "limits.", &settings);
    if (rc == VB_OK)
        rc = check_section(c, vb_yaml_map_get(root, "transport", NULL), "transport", transport_fields, "transport.",
                           &settings);
    if (rc == VB_OK)
        rc = check_section(c, vb_yaml_map_get(root, "notify", NULL), "notify", notify_fields, "notify.", &settings);
    if (rc == VB_OK)
        rc = check_section(c, vb_yaml_map_get(root, "cost", NULL), "cost", cost_fields, "cost.", &settings);
    const vb_yaml_node *pass = vb_yaml_map_get(root, "server_pass", NULL);
    if (rc == VB_OK && pass) {
        static const field p_field = {"server_pass", F_ENUM, 0, 0, NULL, server_pass_choices};
        char *v = convert(c, &p_field, pass, "server_pass");
        rc = !v ? VB_ERROR : kv_add(&settings, "server_pass", v) == 0 ? VB_OK : oom(c);
    }
    const vb_yaml_node *res = vb_yaml_map_get(root, "resources", NULL);
    if (rc == VB_OK && res && !vb_yaml_is_null(res)) {
        if (res->type != VB_YAML_MAP)
            rc = fail(c, res->line, "key 'resources': expected a map, got %s", vb_yaml_describe(res, got, sizeof got));
        else
            rc = check_resources(c, res, &settings);
    }
    p->settings = settings.kv;
    p->n_settings = settings.n;
    if (rc == VB_OK) fill_limits(p);
    return rc;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Public API */

int vb_profile_parse(const char *text, size_t len, const char *source, vb_profile **out, vb_error *err) {
    *out = NULL;
    vb_error_clear(err);
    ctx c = {.source = source, .err = err};
    vb_yaml_node *root = NULL;
    if (vb_yaml_parse(text, len, source, &root, err) != VB_OK) return VB_ERROR;
    profile_impl *impl = calloc(1, sizeof *impl);
    if (!impl) {
        vb_yaml_free(root);
        return oom(&c);
    }
    vb_profile *p = &impl->pub;
    p->source = strdup(source);
    p->yaml = malloc(len + 1);
    int rc = p->source && p->yaml ? VB_OK : oom(&c);
    if (rc == VB_OK) {
        memcpy(p->yaml, text, len);
        p->yaml[len] = '\0';
        rc = check_profile(&c, root, impl);
    }
    vb_yaml_free(root);
    if (rc != VB_OK) {
        vb_profile_destroy(&p);
        return VB_ERROR;
    }
    *out = p;
    return VB_OK;
}

static void free_engine(vb_profile_engine *e) {
    free(e->name);
    free(e->entry);
    free(e->adapter);
    kv_free(e->overrides, e->n_overrides);
    kv_free(e->params, e->n_params);
}

void vb_profile_destroy(vb_profile **pp) {
    if (!pp || !*pp) return;
    profile_impl *impl = (profile_impl *)*pp;
    vb_profile *p = &impl->pub;
    for (size_t i = 0; i < p->n_datasets; i++) {
        free(p->datasets[i].name);
        kv_free(p->datasets[i].params, p->datasets[i].n_params);
    }
    free(p->datasets);
    for (size_t i = 0; i < p->n_engines; i++) free_engine(&p->engines[i]);
    free(p->engines);
    for (size_t i = 0; i < p->n_phases; i++) {
        free(p->phases[i].kind);
        kv_free(p->phases[i].params, p->phases[i].n_params);
    }
    free(p->phases);
    kv_free(p->settings, p->n_settings);
    free(p->name);
    free(p->source);
    free(p->yaml);
    for (size_t i = 0; i < impl->n_lines; i++) {
        free(impl->lines[i].engine);
        free(impl->lines[i].key);
    }
    free(impl->lines);
    free(impl);
    *pp = NULL;
}

/* Built-in names come from the embedded table, so a new profiles/NAME.yml needs no code change. */
static const char *builtin_names[33];
static char builtin_store[32][MAX_NAME + 1];
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

static void builtin_init(void) {
    size_t n = 0;
    for (const vb_embedded_file *f = vb_embedded_files; f->name && n < 32; f++) {
        size_t len = strlen(f->name);
        if (strncmp(f->name, "profiles/", 9) != 0 || len < 9 + 5 || strcmp(f->name + len - 4, ".yml") != 0) continue;
        snprintf(builtin_store[n], sizeof builtin_store[n], "%.*s", (int)(len - 13), f->name + 9);
        builtin_names[n] = builtin_store[n];
        n++;
    }
    builtin_names[n] = NULL;
}

static size_t numeric_add(vb_profile_numeric_key *out, size_t cap, size_t n, const char *path, int list,
                          int integer, double min, double max) {
    if (n < cap) {
        vb_profile_numeric_key *k = &out[n];
        snprintf(k->path, sizeof k->path, "%s", path);
        k->list = list;
        k->integer = integer;
        k->min = min;
        k->max = max;
    }
    return n + 1;
}

static size_t numeric_fields(vb_profile_numeric_key *out, size_t cap, size_t n, const char *section,
                             const field *fields) {
    char path[64];
    for (const field *f = fields; f->key; f++) {
        if (f->type == F_STRING || f->type == F_ENUM || f->type == F_BOOL || f->type == F_ENUM_LIST ||
            f->type == F_IDS_LIST || f->type == F_MAP)
            continue;
        snprintf(path, sizeof path, "%s.%s", section, f->key);
        n = numeric_add(out, cap, n, path, f->type == F_INT_LIST || f->type == F_DOUBLE_LIST || f->type == F_RATE_LIST,
                        f->type == F_INT || f->type == F_INT_LIST || f->type == F_INT_AUTO, f->min, f->max);
    }
    return n;
}

size_t vb_profile_numeric_keys(vb_profile_numeric_key *out, size_t cap) {
    static const struct {
        const char *section;
        const field *fields;
    } sections[] = {{"limits", limits_fields}, {"notify", notify_fields}, {"cost", cost_fields}};
    char path[64];
    size_t n = numeric_add(out, cap, 0, "k", 0, 1, k_field.min, k_field.max);
    for (const vb_dataset_spec_int *f = vb_dataset_spec_ints; f->key; f++) {
        snprintf(path, sizeof path, "datasets[].%s", f->key);
        n = numeric_add(out, cap, n, path, 0, 1, (double)f->min, (double)f->max);
    }
    for (int i = 0; i < VB_PHASE__COUNT; i++) {
        snprintf(path, sizeof path, "phases.%s", vb_phase_name((vb_phase_kind)i));
        n = numeric_fields(out, cap, n, path, phase_fields[i]);
    }
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        n = numeric_fields(out, cap, n, sections[i].section, sections[i].fields);
    return n;
}

const char *const *vb_profile_builtin_names(void) {
    pthread_once(&builtin_once, builtin_init);
    return builtin_names;
}

static int read_file(const char *path, char **text, size_t *len, vb_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return vb_error_set(err, "profile", 1, "%s: %s", path, strerror(errno));
    sbuf b = {0};
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.n <= MAX_PROFILE_BYTES) sb_addn(&b, chunk, n);
    int bad = ferror(f);
    fclose(f);
    if (bad || b.oom || b.n > MAX_PROFILE_BYTES) {
        free(b.s);
        return vb_error_set(err, "profile", 1, "%s: %s", path,
                            bad ? "read error" : b.oom ? "out of memory" : "larger than 4 MiB, not a profile");
    }
    *len = b.n;
    *text = sb_take(&b);
    return *text ? VB_OK : vb_error_set(err, "profile", 1, "%s: out of memory", path);
}

int vb_profile_load(const char *name_or_path, vb_profile **out, vb_error *err) {
    *out = NULL;
    struct stat st;
    if (stat(name_or_path, &st) == 0 && S_ISREG(st.st_mode)) {
        char *text = NULL;
        size_t len = 0;
        if (read_file(name_or_path, &text, &len, err) != VB_OK) return VB_ERROR;
        int rc = vb_profile_parse(text, len, name_or_path, out, err);
        free(text);
        return rc;
    }
    char embedded[256];
    size_t nl = strlen(name_or_path);
    if (strncmp(name_or_path, "profiles/", 9) == 0 && nl > 4 && strcmp(name_or_path + nl - 4, ".yml") == 0)
        snprintf(embedded, sizeof embedded, "%s", name_or_path);
    else
        snprintf(embedded, sizeof embedded, "profiles/%s.yml", name_or_path);
    const vb_embedded_file *f = vb_embedded_find(embedded);
    if (f) {
        char source[300];
        snprintf(source, sizeof source, "embedded:%s", embedded);
        return vb_profile_parse(f->data, f->size, source, out, err);
    }
    char names[512];
    return vb_error_set(err, "profile", 1,
                        "profile '%s': no such file, and no built-in profile of that name (built-in: %s)",
                        name_or_path, join_names(vb_profile_builtin_names(), names, sizeof names));
}

const char *vb_profile_engine_recipe(const vb_profile_engine *e) {
    return vb_kv_get(e->params, e->n_params, "recipe", NULL);
}

int vb_profile_engine_is_optional(const vb_profile_engine *e) {
    return strcmp(vb_kv_get(e->params, e->n_params, "optional", "false"), "true") == 0;
}

int vb_profile_engine_build_repeats(const vb_profile_engine *e) {
    return atoi(vb_kv_get(e->params, e->n_params, "build_repeats", "1"));   /* checked by the loader */
}

int vb_profile_engine_param_is_topology(const char *key) {
    return strcmp(key, "shards") == 0 || strcmp(key, "replicas") == 0;
}

int vb_profile_engine_shards(const vb_profile_engine *e) {
    return atoi(vb_kv_get(e->params, e->n_params, "shards", "1"));   /* checked by the loader */
}

int vb_profile_engine_replicas(const vb_profile_engine *e) {
    return atoi(vb_kv_get(e->params, e->n_params, "replicas", "0"));
}

int vb_profile_engine_nodes(const vb_profile_engine *e) {
    int s = vb_profile_engine_shards(e);
    return s > 1 ? 1 + s : 1 + vb_profile_engine_replicas(e);
}

int vb_profile_engine_param_is_general(const char *key) {
    return strcmp(key, "recipe") == 0 || strcmp(key, "optional") == 0 || strcmp(key, "engine") == 0 ||
           strcmp(key, "build_repeats") == 0;
}

int vb_profile_select_engines(vb_profile *p, const char *csv, vb_error *err) {
    if (!csv || !*csv) {
        /* No selection: every engine but the optional ones (those that need a server started by the
         * orchestrator in the dev profile), so the first run works without one. */
        size_t n = 0;
        for (size_t i = 0; i < p->n_engines; i++) {
            if (!vb_profile_engine_is_optional(&p->engines[i])) p->engines[n++] = p->engines[i];
            else free_engine(&p->engines[i]);
        }
        p->n_engines = n;
        share_builds(p);   /* the one it shared with may be gone */
        if (n == 0) return vb_error_set(err, "profile", 1, "every engine of profile '%s' is optional: name them with --engines", p->name);
        return VB_OK;
    }
    char *copy = strdup(csv);
    int *keep = calloc(p->n_engines ? p->n_engines : 1, sizeof *keep);
    if (!copy || !keep) {
        free(copy);
        free(keep);
        return vb_error_set(err, "profile", 1, "out of memory");
    }
    int rc = VB_OK, any = 0;
    /* commas inside a label's brackets ("hnswlib[m=8,ef_construction=64]") do not separate names */
    int depth = 0;
    for (char *s = copy; *s; s++) {
        depth += *s == '[' ? 1 : *s == ']' && depth > 0 ? -1 : 0;
        if (*s == ',' && depth == 0) *s = '\n';
    }
    char *save = NULL;
    for (char *tok = strtok_r(copy, "\n", &save); tok && rc == VB_OK; tok = strtok_r(NULL, "\n", &save)) {
        while (*tok == ' ' || *tok == '\t') tok++;
        char *end = tok + strlen(tok);
        while (end > tok && (end[-1] == ' ' || end[-1] == '\t')) *--end = '\0';
        if (!*tok) continue;
        /* a configuration's label, or an entry's name for all of its configurations */
        int found = 0;
        for (size_t i = 0; i < p->n_engines; i++)
            if (strcmp(p->engines[i].name, tok) == 0 || strcmp(p->engines[i].entry, tok) == 0) keep[i] = any = found = 1;
        if (!found) {
            sbuf names = {0};
            for (size_t j = 0; j < p->n_engines; j++) sb_addf(&names, "%s%s", j ? ", " : "", p->engines[j].name);
            rc = vb_error_set(err, "profile", 1, "engine '%s' is not in profile '%s' (it has: %s)", tok, p->name,
                              names.s ? names.s : "");
            free(names.s);
        }
    }
    if (rc == VB_OK && !any) rc = vb_error_set(err, "profile", 1, "no engine named in '%s'", csv);
    if (rc == VB_OK) {
        size_t n = 0;
        for (size_t i = 0; i < p->n_engines; i++) {
            if (keep[i])
                p->engines[n++] = p->engines[i];
            else
                free_engine(&p->engines[i]);
        }
        p->n_engines = n;
        share_builds(p);   /* the one it shared with may be gone */
    }
    free(copy);
    free(keep);
    return rc;
}

const vb_profile_phase *vb_profile_phase_find(const vb_profile *p, const char *kind) {
    for (size_t i = 0; i < p->n_phases; i++)
        if (strcmp(p->phases[i].kind, kind) == 0) return &p->phases[i];
    return NULL;
}

const char *vb_profile_phase_value(const vb_profile *p, const char *kind, const char *key) {
    const vb_profile_phase *ph = vb_profile_phase_find(p, kind);
    if (ph) return vb_kv_get(ph->params, ph->n_params, key, NULL);
    vb_phase_kind k;
    if (vb_phase_parse(kind, &k) != 0) return NULL;
    for (const field *f = phase_fields[k]; f->key; f++)
        if (strcmp(f->key, key) == 0) return f->def;
    return NULL;
}

const char *vb_profile_engine_phase_value(const vb_profile *p, size_t e, const char *kind, const char *key) {
    char k[128];
    snprintf(k, sizeof k, "%s.%s", kind, key);
    const char *v = e < p->n_engines ? vb_kv_get(p->engines[e].overrides, p->engines[e].n_overrides, k, NULL) : NULL;
    return v ? v : vb_profile_phase_value(p, kind, key);
}

/* Shared by the two list getters: splits the value and hands each item to parse (0 or -1). */
static int phase_list(const vb_profile_phase *ph, const char *key, void *out, int cap, int is_double, vb_error *err) {
    const char *v = vb_kv_get(ph->params, ph->n_params, key, NULL);
    if (!v) {
        vb_error_set(err, "profile", 1, "phase '%s' has no key '%s'", ph->kind, key);
        return -1;
    }
    int n = 0;
    const char *s = v;
    while (*s) {
        char *end;
        errno = 0;
        double d = 0;
        long l = 0;
        if (is_double)
            d = strtod(s, &end);
        else
            l = strtol(s, &end, 10);
        if (errno || end == s || (*end != ',' && *end != '\0')) {
            vb_error_set(err, "profile", 1, "phases.%s.%s: malformed list \"%s\"", ph->kind, key, v);
            return -1;
        }
        if (n == cap) {
            vb_error_set(err, "profile", 1, "phases.%s.%s: more than %d items", ph->kind, key, cap);
            return -1;
        }
        if (is_double)
            ((double *)out)[n++] = d;
        else
            ((long *)out)[n++] = l;
        s = *end ? end + 1 : end;
    }
    return n;
}

int vb_profile_phase_list(const vb_profile_phase *ph, const char *key, long *out, int cap, vb_error *err) {
    return phase_list(ph, key, out, cap, 0, err);
}

int vb_profile_phase_list_double(const vb_profile_phase *ph, const char *key, double *out, int cap, vb_error *err) {
    return phase_list(ph, key, out, cap, 1, err);
}

const char *vb_profile_setting(const vb_profile *p, const char *dotted_key, const char *def) {
    return vb_kv_get(p->settings, p->n_settings, dotted_key, def);
}

int vb_profile_engine_line(const vb_profile *p, const char *engine, const char *key, size_t *index) {
    const profile_impl *impl = (const profile_impl *)p;
    for (size_t i = 0; i < impl->n_lines; i++)
        if (strcmp(impl->lines[i].engine, engine) == 0 && strcmp(impl->lines[i].key, key) == 0) {
            if (index) *index = impl->lines[i].index;
            return impl->lines[i].line;
        }
    return 0;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* JSON for the manifest */

/* A value whose schema type is known goes out typed (numbers, lists, booleans); anything else as a string. Values
 * are canonical text (fmt_double, "%ld", true/false), so a typed one always converts; should one not, it goes
 * out as the string it is rather than being lost. */
static json_t *json_value(const field *f, const char *v) {
    json_t *out = NULL;
    if (!f || f->type == F_STRING || f->type == F_ENUM) {
        return vb_json_string(v);
    } else if (f->type == F_INT_LIST || f->type == F_DOUBLE_LIST) {
        out = json_array();
        char item[64];
        for (const char *s = v; out && *s;) {
            size_t n = strcspn(s, ",");
            snprintf(item, sizeof item, "%.*s", (int)(n < sizeof item ? n : sizeof item - 1), s);
            json_t *x = vb_json_number(item);
            if (!x) {
                json_decref(out);
                out = NULL;
                break;
            }
            json_array_append_new(out, x);
            s += n + (s[n] == ',');
        }
    } else if (f->type == F_BOOL) {
        out = strcmp(v, "true") == 0 ? json_true() : strcmp(v, "false") == 0 ? json_false() : NULL;
    } else if (f->type == F_ENUM_LIST) {   /* one name stays a string, a list an array of them */
        if (!strchr(v, ',')) return vb_json_string(v);
        out = json_array();
        for (const char *s = v; out && *s;) {
            size_t n = strcspn(s, ",");
            char item[64];
            snprintf(item, sizeof item, "%.*s", (int)(n < sizeof item ? n : sizeof item - 1), s);
            json_array_append_new(out, vb_json_string(item));
            s += n + (s[n] == ',');
        }
    } else {
        out = vb_json_number(v);
    }
    return out ? out : vb_json_string(v);
}

static json_t *json_kv_object(const vb_kv *kv, size_t n, const field *fields, const char *strip) {
    json_t *o = json_object();
    for (size_t i = 0; o && i < n; i++) {
        const char *key = kv[i].key;
        const field *f = NULL;
        if (fields) {
            size_t sl = strip ? strlen(strip) : 0;
            if (!strip || strncmp(key, strip, sl) == 0) f = field_find(fields, key + sl);
        }
        json_t *k = vb_json_string(key);   /* a key is a JSON string too: the same UTF-8 repair */
        if (k) json_object_set_new(o, json_string_value(k), json_value(f, kv[i].value));
        json_decref(k);
    }
    return o;
}

/* The resolved profile as one JSON document, built with jansson (util/json.h): keys in this order, separators
 * ", " and ": ", numbers written as their canonical text. */
char *vb_profile_to_json(const vb_profile *p) {
    json_t *doc = json_object(), *datasets = json_array(), *engines = json_array(), *phases = json_array();
    json_object_set_new(doc, "name", vb_json_string(p->name));
    json_object_set_new(doc, "source", vb_json_string(p->source));
    json_object_set_new(doc, "k", json_integer(p->k));
    for (size_t i = 0; i < p->n_datasets; i++)
        json_array_append_new(datasets, json_kv_object(p->datasets[i].params, p->datasets[i].n_params, NULL, NULL));
    json_object_set_new(doc, "datasets", datasets);
    for (size_t i = 0; i < p->n_engines; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "name", vb_json_string(p->engines[i].name));
        if (strcmp(p->engines[i].adapter, p->engines[i].name) != 0)   /* a configuration: its adapter and entry */
            json_object_set_new(e, "engine", vb_json_string(p->engines[i].adapter)),
            json_object_set_new(e, "entry", vb_json_string(p->engines[i].entry));
        if (p->engines[i].n_overrides)   /* "recall_sweep.ef_search": "10,20,40", as the phases' own values */
            json_object_set_new(e, "phases", json_kv_object(p->engines[i].overrides, p->engines[i].n_overrides, NULL, NULL));
        json_object_set_new(e, "params", json_kv_object(p->engines[i].params, p->engines[i].n_params, NULL, NULL));
        json_array_append_new(engines, e);
    }
    json_object_set_new(doc, "engines", engines);
    for (size_t i = 0; i < p->n_phases; i++) {
        vb_phase_kind kind;
        const field *fields = vb_phase_parse(p->phases[i].kind, &kind) == 0 ? phase_fields[kind] : NULL;
        json_t *ph = json_object();
        json_object_set_new(ph, "kind", vb_json_string(p->phases[i].kind));
        json_object_set_new(ph, "params", json_kv_object(p->phases[i].params, p->phases[i].n_params, fields, NULL));
        json_array_append_new(phases, ph);
    }
    json_object_set_new(doc, "phases", phases);
    json_object_set_new(doc, "settings", json_kv_object(p->settings, p->n_settings, limits_fields, "limits."));
    char *out = vb_json_dumps(doc, JSON_PRESERVE_ORDER);
    json_decref(doc);
    return out;
}
