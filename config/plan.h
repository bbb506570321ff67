/* The plan: a profile expanded into an ordered list of work items with stable keys.
 *
 * Key format: "<campaign>/<engine>/<dataset>/<phase>[/<point>]", e.g.
 *   "dev/hnswlib/synth-angular-20k/build"
 *   "dev/hnswlib/synth-angular-20k/recall_sweep/ef_search=40"
 * Keys depend only on the profile's content, so a resumed campaign finds its items again. Order: for each
 * dataset, for each engine, the phases in profile order, points in list order. An item's point parameters
 * ("ef_search" -> "40") travel to the agent with the item. */
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
    VB_PHASE__COUNT
} vb_phase_kind;

const char *vb_phase_name(vb_phase_kind k);                 /* "build", "recall_sweep", ... */
int vb_phase_parse(const char *name, vb_phase_kind *out);   /* 0 or -1 */

#define VB_PLAN_MAX_POINT 8
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
    vb_kv point[VB_PLAN_MAX_POINT];   /* strings owned by the plan */
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
