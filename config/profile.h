/* Profiles: the YAML file a campaign is described by, validated and resolved.
 *
 * A profile names datasets, engines, and phase sections. Every value is checked against a schema: an unknown
 * key, a wrong type or an out-of-range value is an error naming file, line and key ("profiles/x.yml:12: key
 * 'phases.recall_sweep.ef_search': expected a list of integers"). Profiles are looked up as a file path first,
 * then as a name among the ones compiled into the binary (profiles/NAME.yml). The resolved profile (every
 * default filled in) is rendered as JSON for the manifest. */
#ifndef VB_CONFIG_PROFILE_H
#define VB_CONFIG_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"
#include "util/kv.h"

#define VB_MAX_LIST 64

/* A dataset entry; params holds every key of the entry as strings (name, source, path, rows, dim, ...), in the
 * file's order, in the form datasets/dataset_spec.h reads (its defaults apply there: the loader checks the key
 * names against vb_dataset_spec_keys, that rows/queries/dim/clusters/seed are non-negative integers, and that the
 * source and the extensions of path, queries_path and groundtruth_path fit together: vb_dataset_spec_check). */
typedef struct vb_profile_dataset {
    char *name;
    vb_kv *params;
    size_t n_params;
    int line;
} vb_profile_dataset;

/* A configuration of an engine: name plus engine parameters (everything but "name" and "engine"), checked
 * against the adapter's param_names by vb_profile_check_engines (the loader itself does not link the engines).
 * An entry of the file gives one configuration, or several when some of its values are lists (a matrix:
 * `m: [8, 16]`); name is the configuration's label ("hnswlib", "hnswlib[m=8]"): it is what plan keys, result
 * rows and reports name. adapter is the registered engine that runs it (the entry's `engine`, default its
 * name); entry is the entry's name (--engines accepts it for all of its configurations). */
typedef struct vb_profile_engine {
    char *name;
    char *entry;
    char *adapter;
    size_t build_of;      /* the configuration whose build (index, table) it uses: itself, or an earlier one of its
                           * entry that differs only in search-time parameters (pgvector iterative_scan), once
                           * vb_profile_check_engines has said which those are (vb_profile_share_builds) */
    vb_kv *overrides;     /* the engine's own phase settings: "recall_sweep.ef_search" -> "10,20,40" (canonical) */
    size_t n_overrides;
    vb_kv *params;
    size_t n_params;
    int line;
} vb_profile_engine;

/* A phase section: its kind name ("build", "recall_sweep", ...) and its values, defaults filled in. Lists are
 * stored as their comma-separated form ("10,20,40"); vb_profile_phase_list parses them. */
typedef struct vb_profile_phase {
    char *kind;
    vb_kv *params;
    size_t n_params;
    int line;
} vb_profile_phase;

/* The profile's `limits:` section, typed, every value filled once when the profile is parsed: the profile's value
 * or the default of config/profile.c's limits table (docs/profiles.md "Limits"). The run reads these fields; no
 * part of it repeats a default. */
typedef enum {
    VB_ON_SERVER_FAILURE_RESTART,
    VB_ON_SERVER_FAILURE_SKIP,
    VB_ON_SERVER_FAILURE_STOP
} vb_on_server_failure;
typedef struct vb_limits {
    long phase_timeout_s;                  /* the wall-clock limit of one item */
    int stop_on_item_failure;              /* on_item_failure: stop (else continue) */
    vb_on_server_failure on_server_failure;
    long server_start_timeout_s;
    double agent_silent_s;                 /* an agent silent this long is lost */
    uint64_t agent_silent_ns;              /* the same in ns, for the clocks */
    int fail_on_agent_lost;                /* on_agent_lost: fail (else rerun) */
    unsigned max_attempts;                 /* attempts of one item in all, every start counted */
    double abort_unanswered_s;             /* an Abort unanswered this long: the agent is stuck */
    uint64_t abort_unanswered_ns;
    double backup_every_s;                 /* FILE.bak; 0: only at the end */
    double footprint_every_s;              /* the coordinator's memory as an event; 0: never */
} vb_limits;

/* The word of on_server_failure ("restart", "skip", "stop"), as the profile writes it. */
const char *vb_on_server_failure_name(vb_on_server_failure v);

typedef struct vb_profile {
    char *name;
    char *source;          /* file path, or "embedded:profiles/dev.yml" */
    int k;
    vb_profile_dataset *datasets;
    size_t n_datasets;
    vb_profile_engine *engines;
    size_t n_engines;
    vb_profile_phase *phases;   /* in execution order (config/plan.h vb_phase_order) */
    size_t n_phases;
    vb_kv *settings;            /* other top-level sections flattened: "limits.phase_timeout_s" -> "3600" */
    size_t n_settings;
    vb_limits limits;           /* the limits.* settings, typed, defaults applied */
    char *yaml;            /* the original text */
} vb_profile;

/* Loads a profile by path or embedded name. On error returns VB_ERROR with "FILE:LINE: ..." in err. */
int vb_profile_load(const char *name_or_path, vb_profile **out, vb_error *err);
/* Same, from text in memory; source is used in messages. */
int vb_profile_parse(const char *text, size_t len, const char *source, vb_profile **out, vb_error *err);
void vb_profile_destroy(vb_profile **p);

/* Keeps only the named engines (comma-separated, in the profile's order). Error for a name not in the profile.
 * csv NULL or empty: every engine not marked `optional: true`. */
int vb_profile_select_engines(vb_profile *p, const char *csv, vb_error *err);

/* General engine keys, not passed to the adapter: `recipe` (the orchestrator starts the server from
 * deploy/engines/RECIPE.yml on its host), `optional` (run only when --engines names it), `engine` (the
 * adapter, when the entry's name is not one) and `build_repeats` (vb_profile_engine_build_repeats). */
const char *vb_profile_engine_recipe(const vb_profile_engine *e);   /* NULL: no server to start */
int vb_profile_engine_is_optional(const vb_profile_engine *e);
int vb_profile_engine_param_is_general(const char *key);
/* How many times the configuration's index is built (`build_repeats: N`, 1 to VB_PROFILE_MAX_BUILD_REPEATS,
 * default 1): HNSW builds are not deterministic, so the recall sweep runs on each build (config/plan.h). */
#define VB_PROFILE_MAX_BUILD_REPEATS 20
int vb_profile_engine_build_repeats(const vb_profile_engine *e);
/* Topology (issue 39): `shards: N` (1 to VB_PROFILE_MAX_NODES) and `replicas: R` (0 to VB_PROFILE_MAX_NODES - 1) on
 * an engine entry, matrix axes like any engine key. They are the adapter's parameters (it spreads the rows or the
 * reads), declared by the engines that take them (engines/engine.h VB_ENGINE_SHARDS, VB_ENGINE_REPLICAS:
 * vb_profile_check_engines refuses them elsewhere, naming the line). The servers it takes: one without either;
 * with shards N > 1 a router (node 0) and N shard servers (nodes 1 .. N); with replicas R the primary (node 0) and
 * R replicas (nodes 1 .. R). Both at once are refused by the loader. vb_profile_engine_nodes says how many servers
 * the orchestrator starts for the configuration. */
#define VB_PROFILE_MAX_NODES 8
int vb_profile_engine_param_is_topology(const char *key);
int vb_profile_engine_shards(const vb_profile_engine *e);     /* 1 when absent */
int vb_profile_engine_replicas(const vb_profile_engine *e);   /* 0 when absent */
int vb_profile_engine_nodes(const vb_profile_engine *e);

const vb_profile_phase *vb_profile_phase_find(const vb_profile *p, const char *kind); /* NULL when absent */
/* The canonical value of phases.KIND.KEY: the profile's, or the field's default when the profile has no such
 * section (NULL: no value and no default). The plan uses it for values an item needs from another phase's section
 * (a sweep item rebuilds an index with the build phase's load settings). */
const char *vb_profile_phase_value(const vb_profile *p, const char *kind, const char *key);
/* Same, as engine configuration e runs it: its own setting (engines[].phases.KIND.KEY) when it has one. */
const char *vb_profile_engine_phase_value(const vb_profile *p, size_t e, const char *kind, const char *key);
/* Parses a comma-separated integer list value into out (at most cap); returns count or -1 (err set). */
int vb_profile_phase_list(const vb_profile_phase *ph, const char *key, long *out, int cap, vb_error *err);
const char *vb_profile_setting(const vb_profile *p, const char *dotted_key, const char *def);
/* Sets a parameter of a dataset entry (replacing its value, or appending it): how `vbench run` gives a registry
 * dataset the paths of its files in the cache (coordinator/fetch_datasets.c). VB_OK, or VB_ERROR out of memory. */
int vb_profile_dataset_set(vb_profile_dataset *d, const char *key, const char *value);
/* Same as vb_profile_phase_list for a list of numbers ("0.1,0.01"). */
int vb_profile_phase_list_double(const vb_profile_phase *ph, const char *key, double *out, int cap, vb_error *err);

/* Checks every engine entry against the engine registry (engines/engine.h): the name must be a registered
 * engine and every parameter one of its param_names. Errors name file, line and key like the loader's. Then
 * settles which configurations share a build, by the adapters' search_params (vb_profile_share_builds).
 * Kept apart from vb_profile_load (in config/profile_engines.c) so that code reading profiles does not have
 * to link the engines; the coordinator calls it right after loading. */
int vb_profile_check_engines(vb_profile *p, vb_error *err);
/* Whether parameter key of adapter changes only how queries run (a session setting per query), not the index. */
typedef int (*vb_profile_search_time_fn)(const char *adapter, const char *key);
/* Settles each configuration's build_of with search_time's answer (NULL: no parameter is search-time, each
 * configuration builds its own, what the loader leaves), and keeps it for vb_profile_select_engines' next settling.
 * vb_profile_check_engines calls it with the engine registry's answer (the adapters' search_params). */
void vb_profile_share_builds(vb_profile *p, vb_profile_search_time_fn search_time);
/* Every dataset whose metric is known now (its `metric`, or an HDF5 file's attribute) against every engine's metrics
 * (engines/engine.h): an engine that cannot compare by it (Redis vector sets: cosine only) refuses the campaign
 * before anything is created, naming the engine, the dataset and the metric. */
int vb_profile_check_metrics(const vb_profile *p, vb_error *err);
/* The table a configuration gets in its server when it is one of several (its name is not its adapter's), its
 * adapter takes a `table` parameter and the profile sets none: "vb_" and the label made a plain identifier
 * ("vb_pgvector_variant_halfvec"), at most 48 bytes. NULL: the adapter's own default applies. buf: >= 64. */
const char *vb_profile_engine_table(const vb_profile_engine *e, char *buf, size_t len);
/* The same for configuration e of p: the table of the configuration whose build it uses (build_of). */
const char *vb_profile_config_table(const vb_profile *p, size_t e, char *buf, size_t len);
/* The line of engine `engine`'s key `key` ("name" for the entry itself) in the profile text, 0 when unknown;
 * *index (may be NULL) gets the entry's position in the file's engines list (before any selection).
 * p must come from vb_profile_load / vb_profile_parse. */
int vb_profile_engine_line(const vb_profile *p, const char *engine, const char *key, size_t *index);

/* The resolved profile as a JSON object (malloc'd; caller frees). */
char *vb_profile_to_json(const vb_profile *p);
/* Names of the profiles compiled in ("dev", "smoke", "tuned-complete"); NULL-terminated, static. */
const char *const *vb_profile_builtin_names(void);

/* One numeric key of the profile's schema with the bounds the loader holds it to (a value outside them is refused
 * at its line, naming the key, before anything is created): path as a profile writes it ("k",
 * "limits.max_attempts", "phases.filtered.selectivity", "datasets[].rows"); list: the key takes a list of such
 * numbers (one alone is accepted too); integer: whole numbers only. The schema is config/profile.c's tables and
 * datasets/dataset_spec.h's vb_dataset_spec_ints; this lists them for the tests that walk every bound. */
typedef struct vb_profile_numeric_key {
    char path[64];
    int list, integer;
    double min, max;
} vb_profile_numeric_key;
/* Writes up to cap keys into out; returns how many the schema has (more than cap: call again with more room). */
size_t vb_profile_numeric_keys(vb_profile_numeric_key *out, size_t cap);

#endif
