/* A session: the dataset and the engine instance that a run of plan items works on, kept across items.
 *
 * The build item creates it; the items after it (recall sweep points, later concurrency, filtered, churn) reuse
 * it. An agent keeps one session at a time: an item for another engine or dataset closes the old one first, so
 * only one corpus and one index occupy memory. After a restart (resume), a later item finds no session and
 * reopens it: the engine attaches to what it persisted, or the index is rebuilt, untimed and said so. */
#ifndef VB_AGENT_SESSION_H
#define VB_AGENT_SESSION_H

#include "datasets/dataset.h"
#include "datasets/groundtruth.h"
#include "engines/engine.h"
#include "util/kv.h"

typedef struct vb_session {
    char engine_name[64];
    char config[256];          /* the configuration's label: two of one engine are two sessions, two indexes */
    char dataset_name[128];
    vb_dataset *ds;
    vb_engine *engine;
    vb_table_spec spec;
    int ready;                 /* the index holds the corpus and answers queries */
    /* Which build of the configuration (Point.build, profile build_repeats) the index is: set by the build item and
     * by a rebuild; 0 when the session attached to what a server or the agent's files kept over a restart, which
     * is the last build done (items run in plan order, each build's sweep before the next build). */
    long build;
    /* What churn did to this index since it was built, attached or rebuilt in this process. An embedded
     * engine reopened after a restart is back at its persisted build state: churn_deleted = 0, reinserted 0. */
    int churn_deleted;
    size_t churn_reinserted;
    /* The recall sweep warmed the engine on this session (issue 36.5): its first one-client point ran the queries once,
     * uncounted, before measuring; a new session (another engine, a restart) or a new build of the index warms again. */
    int sweep_warmed;
    vb_groundtruth gt;         /* unfiltered top-k, loaded on first use */
    int have_gt;
    int k;
    /* Opening the dataset (vb_session_get): its seconds and what it read and wrote (the float32 cache: the
     * synthetic corpus or a conversion), -1 where the kernel does not say; logged by the build. */
    double ds_open_s;
    long long ds_read_bytes, ds_written_bytes;
} vb_session;

/* Returns the session for (engine, config, dataset), opening dataset and engine when it is not the current one
 * (config: the configuration's label, "" or the engine's name for an engine's only configuration).
 * io_timeout_s bounds every driver call (vb_engine_config.io_timeout_s). data_dir is where the engine may keep files. *opened = 1 when a new session was made (its index is empty or
 * attached: check ->ready). VB_RETRY when the engine's server cannot be reached now (a restart). */
int vb_session_get(vb_session **cur, const char *engine, const char *config, const vb_kv *engine_params,
                   size_t n_engine_params, const char *dataset, const vb_kv *dataset_params, size_t n_dataset_params, int k,
                   long io_timeout_s, const char *work_dir, const char *cache_dir, int *opened, vb_error *err);
/* 1 when s is the session vb_session_get would return for these names without opening one (config "": engine). */
int vb_session_is(const vb_session *s, const char *engine, const char *config, const char *dataset, int k);
/* Loads (or computes and caches) the unfiltered ground truth for the session's k; opts (may be NULL) tune the
 * computation and carry its progress callback. */
int vb_session_groundtruth(vb_session *s, const char *cache_dir, const vb_gt_opts *opts, vb_error *err);
void vb_session_close(vb_session **s);

#endif
