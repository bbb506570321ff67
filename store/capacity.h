/* The capacity phase's reads of the results store (issue 37; docs/metrics.md "Capacity"). */
#ifndef VB_STORE_CAPACITY_H
#define VB_STORE_CAPACITY_H

#include "store/store.h"

/* A configuration's operating point from its committed one-client recall sweep (v_recall_sweep). */
typedef struct vb_capacity_op {
    int points;              /* the sweep's points committed (0: no sweep, the agent probes) */
    long ef_search;          /* the smallest ef_search whose recall meets the target (0: none does) */
    double recall;           /* its recall */
    long best_ef;            /* the sweep's best recall and its ef_search (the smallest with it) */
    double best_recall;
} vb_capacity_op;

/* Reads config's (the configuration's label) sweep on dataset against recall_target into out. VB_STORE_OK, or the
 * store's class with err set. */
int vb_store_capacity_op(vb_store *s, const char *config, const char *dataset, double recall_target,
                         vb_capacity_op *out, vb_error *err);

#endif
