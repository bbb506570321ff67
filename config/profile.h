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

/* An engine entry: name plus engine parameters (everything but "name"), checked against the engine's
 * param_names by vb_profile_check_engines (the loader itself does not link the engines). */
typedef struct vb_profile_engine {
    char *name;
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

typedef struct vb_profile {
    char *name;
    char *source;          /* file path, or "embedded:profiles/dev.yml" */
    int k;
    vb_profile_dataset *datasets;
    size_t n_datasets;
    vb_profile_engine *engines;
    size_t n_engines;
    vb_profile_phase *phases;   /* in execution order: build, recall_sweep, then later kinds */
    size_t n_phases;
    vb_kv *settings;            /* other top-level sections flattened: "limits.phase_timeout_s" -> "3600" */
    size_t n_settings;
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
 * deploy/engines/RECIPE.yml on its host) and `optional` (run only when --engines names it). */
const char *vb_profile_engine_recipe(const vb_profile_engine *e);   /* NULL: no server to start */
int vb_profile_engine_is_optional(const vb_profile_engine *e);
int vb_profile_engine_param_is_general(const char *key);

const vb_profile_phase *vb_profile_phase_find(const vb_profile *p, const char *kind); /* NULL when absent */
/* Parses a comma-separated integer list value into out (at most cap); returns count or -1 (err set). */
int vb_profile_phase_list(const vb_profile_phase *ph, const char *key, long *out, int cap, vb_error *err);
const char *vb_profile_setting(const vb_profile *p, const char *dotted_key, const char *def);
/* Same as vb_profile_phase_list for a list of numbers ("0.1,0.01"). */
int vb_profile_phase_list_double(const vb_profile_phase *ph, const char *key, double *out, int cap, vb_error *err);

/* Checks every engine entry against the engine registry (engines/engine.h): the name must be a registered
 * engine and every parameter one of its param_names. Errors name file, line and key like the loader's.
 * Kept apart from vb_profile_load (in config/profile_engines.c) so that code reading profiles does not have
 * to link the engines; the coordinator calls it right after loading. */
int vb_profile_check_engines(const vb_profile *p, vb_error *err);
/* The line of engine `engine`'s key `key` ("name" for the entry itself) in the profile text, 0 when unknown;
 * *index (may be NULL) gets the entry's position in the file's engines list (before any selection).
 * p must come from vb_profile_load / vb_profile_parse. */
int vb_profile_engine_line(const vb_profile *p, const char *engine, const char *key, size_t *index);

/* The resolved profile as a JSON object (malloc'd; caller frees). */
char *vb_profile_to_json(const vb_profile *p);
/* Names of the profiles compiled in ("dev", "smoke", "tuned-complete"); NULL-terminated, static. */
const char *const *vb_profile_builtin_names(void);

#endif
