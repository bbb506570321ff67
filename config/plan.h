/* The plan: a profile expanded into an ordered list of work items with stable keys.
 *
 * Key format: "<campaign>/<engine>/<dataset>/<phase>[/<point>]", e.g.
 *   "dev/hnswlib/synth-angular-20k/build"
 *   "dev/hnswlib/synth-angular-20k/recall_sweep/ef_search=40"
 *   "dev/hnswlib/synth-angular-20k/build/build=2"                  (build_repeats: 3; the sweep's keys too:
 *   "dev/hnswlib/synth-angular-20k/recall_sweep/ef_search=40,build=2"  each build's sweep follows it)
 * Keys depend only on the profile's content, so a resumed campaign finds its items again. Order: for each
 * dataset, for each engine, the phases in profile order, points in list order. An item's parameters are parsed
 * and defaulted here, once, from the profile's validated values (vb_point): they travel to the agent as one
 * typed Point (proto/wire.h vb_wire_point_make), and neither the agent nor the coordinator defaults them again. */
#ifndef VB_CONFIG_PLAN_H
#define VB_CONFIG_PLAN_H

#include <stddef.h>

#include "config/profile.h"
#include "util/error.h"
#include "util/kv.h"

typedef enum {
    VB_PHASE_BUILD = 0,
    VB_PHASE_RECALL_SWEEP,
    VB_PHASE_CONCURRENCY,
    VB_PHASE_FILTERED,
    VB_PHASE_CHURN,
    VB_PHASE_STREAMING,
    VB_PHASE_COLD_START,            /* numbered after churn and streaming (the wire's Phase), run before churn: vb_phase_order */
    VB_PHASE_CAPACITY,              /* the wire's Phase 7, run after concurrency: vb_phase_order */
    VB_PHASE_MIXED,                 /* issue 38; the wire's PHASE_MIXED is 900 (coordinator/agents.c vb_phase_wire) */
    VB_PHASE__COUNT
} vb_phase_kind;

const char *vb_phase_name(vb_phase_kind k);                 /* "build", "recall_sweep", ... */
int vb_phase_parse(const char *name, vb_phase_kind *out);   /* 0 or -1 */
/* The phases in execution order, i from 0 to VB_PHASE__COUNT - 1: build, recall_sweep, concurrency, capacity, filtered,
 * cold_start, churn, streaming, mixed. cold_start comes before churn so that it restarts the index the other phases measured, not
 * one that churn has rewritten. */
vb_phase_kind vb_phase_order(int i);

/* What a churn attempt starts from: decided per attempt by the coordinator (the committed checkpoint and
 * on_resume), not by the plan; the values are the wire's ChurnStart. */
typedef enum { VB_CHURN_FRESH = 0, VB_CHURN_CONTINUE = 1, VB_CHURN_RESTART = 2 } vb_churn_start;
typedef enum { VB_POINT_CLOSED = 0, VB_POINT_OPEN = 1 } vb_point_loop;   /* the wire's LoopMode */
typedef enum { VB_RESUME_CONTINUE = 0, VB_RESUME_RESTART = 1 } vb_on_resume;

#define VB_PLAN_MAX_STAGES 16
#define VB_PLAN_MAX_TARGETS 8       /* capacity: p99 targets of one item */

/* capacity: where the operating point comes from (the wire's CapacityOpSource), set per attempt by the coordinator
 * from the committed recall sweep (the plan leaves PROBE, or GIVEN when the profile names ef_search) */
typedef enum { VB_OP_PROBE = 0, VB_OP_GIVEN = 1, VB_OP_SWEEP = 2, VB_OP_UNREACHABLE = 3 } vb_op_source;

/* An item's parameters, typed. A phase reads only its own fields (listed per phase); the others are 0. */
typedef struct vb_point {
    long ef_search;                 /* recall_sweep, concurrency, filtered, churn, cold_start */
    int answers;                    /* recall_sweep: keep every query's answer (profile `answers`, default true) */
    long queries;                   /* recall_sweep, filtered, churn: 0 = the whole query set; cold_start: N */
    long load_connections, load_batch;                      /* build */
    long clients;                                           /* concurrency */
    long repeat;                    /* concurrency, recall_sweep, filtered: 1..repeats */
    /* every item: the build of its configuration's index it runs on, 1..build_repeats (1 without the key). With
     * build_repeats: N (config/profile.h), the build item and the recall sweep's items are planned N times, keyed
     * ",build=B", each sweep after its build; the one table or index is created again by each build (the disk and
     * memory of one index, as the budget counts), and the phases after the sweep measure the last build. */
    long build;
    long repeats;                   /* churn: measurements before and after, each (1 when the profile has none) */
    double window_s, warmup_s, target_rate;                 /* target_rate: open loop only */
    vb_point_loop mode;
    double selectivity;                                     /* filtered */
    int predicate;                  /* filtered: vb_filter_predicate (engines/filter.h); 0 = range, as before */
    int filter_class;               /* filtered, predicate class: the class L */
    long class_seed;                /* filtered, predicate label_other: the seed of each query's other class */
    double fraction;                                        /* churn */
    long insert_batch, limit_s;
    vb_on_resume on_resume;
    vb_churn_start churn_start;     /* churn, per attempt (the coordinator sets it; the plan leaves FRESH) */
    long resume_rows;               /* VB_CHURN_CONTINUE: rows already reinserted */
    /* build, per attempt (the coordinator sets them from the load checkpoint; the plan leaves 0): the rows already
     * in at the start of each load connection's slice, the earlier attempts' load seconds and their count. */
    long load_resume_rows;
    double load_resume_s;
    long load_resume_attempts;
    /* streaming (also clients, ef_search, mode, target_rate, window_s, insert_batch, limit_s above; fraction is
     * initial_fraction): insert_rate in rows/s, 0 = as fast as the engine takes them (`max`); stages ascending
     * fractions of the corpus, the last 1 */
    double insert_rate;
    double stages[VB_PLAN_MAX_STAGES];
    int n_stages;
    /* cold_start, per attempt (the coordinator sets them; the plan leaves 0): the server was restarted cold for
     * this attempt (0: not applicable), the files and bytes evicted from the page cache, the restart's seconds */
    int cold;
    long long evicted_files, evicted_bytes;
    double restart_s;
    /* capacity (also clients, ef_search: 0 = auto, window_s, warmup_s, repeats above): the recall target (0 none), the
     * p99 targets ascending, the bisection's precision; per attempt (the coordinator sets them from the committed
     * sweep): the operating point's source, the sweep's recall at ef_search (or its best, and that best's ef_search,
     * when unreachable) */
    double recall_target;
    double p99_ms[VB_PLAN_MAX_TARGETS];
    int n_p99;
    double precision;
    long client_agents;       /* the client agents a window is split across; 0 all idle ones (not in the point's text) */
    vb_op_source op_source;
    double op_recall;
    long op_best_ef;
    /* mixed (issue 38; also clients, ef_search, mode, target_rate, window_s, limit_s above): the operations' shares
     * (search, update, delete, insert; they sum to 1), zipf_s the exponent of the rows' choice (0: uniform), the
     * windows while writing, the pool's fraction of the dataset's rows (the last ones, kept apart from the corpus:
     * updates and inserts take their vectors from it) */
    double mix[4];
    double zipf_s;
    long mix_windows;
    double pool_fraction;
} vb_point;

#define VB_PLAN_MAX_POINT 12
/* A plan has at most this many items (the full reference profile has 60): a few lines of profile can multiply
 * into hundreds of millions of items, gigabytes of memory before the first one runs. */
#define VB_PLAN_MAX_ITEMS 100000

typedef struct vb_plan_item {
    char key[256];
    int seq;                  /* 0-based position in the plan */
    vb_phase_kind kind;
    size_t engine;            /* index into profile->engines */
    size_t dataset;           /* index into profile->datasets */
    const char *role;         /* agent role that runs it: "client" */
    vb_point p;               /* the item's parameters, typed */
    vb_kv point[VB_PLAN_MAX_POINT];   /* the same as text, for the plan table's point column; owned by the plan */
    size_t n_point;
} vb_plan_item;

typedef struct vb_plan {
    const vb_profile *profile;   /* borrowed */
    vb_plan_item *items;
    size_t n_items;
} vb_plan;

int vb_plan_build(const vb_profile *p, vb_plan **out, vb_error *err);
void vb_plan_destroy(vb_plan **plan);
const vb_plan_item *vb_plan_find(const vb_plan *plan, const char *key);

#endif
