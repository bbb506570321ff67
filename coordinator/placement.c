/* Placement of a topology's nodes over the orchestrators, and its parts' answers (see coordinator/placement.h). */
#include "coordinator/placement.h"

#include <string.h>

int vb_placement_plan(int n_nodes, int n_orch, vb_place_part *parts) {
    if (n_nodes < 1) n_nodes = 1;
    if (n_nodes > VB_PLACE_MAX_NODES) n_nodes = VB_PLACE_MAX_NODES;
    if (n_orch < 1) n_orch = 1;
    if (n_orch > VB_PLACE_MAX_PARTS) n_orch = VB_PLACE_MAX_PARTS;
    int n_parts = n_orch < n_nodes ? n_orch : n_nodes;   /* an orchestrator past the last node holds none */
    for (int p = 0; p < n_parts; p++) {
        memset(&parts[p], 0, sizeof parts[p]);
        parts[p].orch = p;
        parts[p].state = VB_PART_IDLE;
        for (int k = p; k < n_nodes; k += n_orch) parts[p].nodes[parts[p].n_nodes++] = k;
    }
    return n_parts;
}

int vb_placement_part_of(const vb_place_part *parts, int n_parts, int k) {
    for (int p = 0; p < n_parts; p++)
        for (int j = 0; j < parts[p].n_nodes; j++)
            if (parts[p].nodes[j] == k) return p;
    return -1;
}

int vb_placement_all(const vb_place_part *parts, int n_parts, vb_part_state st) {
    for (int p = 0; p < n_parts; p++)
        if (parts[p].state != st) return 0;
    return 1;
}

/* Whether a part other than p is still in state st. */
static int other_in(const vb_place_part *parts, int n_parts, int p, vb_part_state st) {
    for (int q = 0; q < n_parts; q++)
        if (q != p && parts[q].state == st) return 1;
    return 0;
}

/* One part failed or died while the others run: those up are stopped (CLEANUP), those waiting are not started. */
static void fail_others(vb_place_part *parts, int n_parts, int p, int *stop_others) {
    for (int q = 0; q < n_parts; q++) {
        if (q == p) continue;
        if (parts[q].state == VB_PART_STARTING || parts[q].state == VB_PART_READY) {
            parts[q].state = VB_PART_CLEANUP;
            *stop_others = 1;
        } else if (parts[q].state == VB_PART_WAITING) {
            parts[q].state = VB_PART_IDLE;
        }
    }
}

vb_place_heard vb_placement_answer(vb_place_part *parts, int n_parts, int p, vb_part_said said, int *stop_others,
                                   int *start_waiting) {
    *stop_others = *start_waiting = 0;
    if (p < 0 || p >= n_parts) return VB_PLACE_RECORDED;
    vb_place_part *me = &parts[p];
    if (me->state == VB_PART_CLEANUP) {
        /* stopped after another part's failure: a start that finished first says ready, then the stop answers */
        if (said != VB_PART_SAID_READY) me->state = VB_PART_IDLE;
        return VB_PLACE_RECORDED;
    }
    switch (said) {
    case VB_PART_SAID_READY:
        me->state = VB_PART_READY;
        if (p == 0 && other_in(parts, n_parts, p, VB_PART_WAITING)) *start_waiting = 1;
        return vb_placement_all(parts, n_parts, VB_PART_READY) ? VB_PLACE_SERVER : VB_PLACE_PENDING;
    case VB_PART_SAID_STOPPED:
        me->state = VB_PART_IDLE;
        return other_in(parts, n_parts, p, VB_PART_STOPPING) ? VB_PLACE_PENDING : VB_PLACE_SERVER;
    case VB_PART_SAID_FAILED:
        if (me->state == VB_PART_STOPPING) {   /* could not stop: as stopped for the others, said once all answered */
            me->state = VB_PART_IDLE;
            return other_in(parts, n_parts, p, VB_PART_STOPPING) ? VB_PLACE_RECORDED : VB_PLACE_SERVER;
        }
        me->state = VB_PART_FAILED;
        fail_others(parts, n_parts, p, stop_others);
        return VB_PLACE_SERVER;
    case VB_PART_SAID_DIED:
        /* found dead when its stop was asked: the stop's answer follows, the others are stopping already */
        if (me->state == VB_PART_STOPPING) return VB_PLACE_SERVER;
        me->state = VB_PART_FAILED;
        fail_others(parts, n_parts, p, stop_others);
        return VB_PLACE_SERVER;
    }
    return VB_PLACE_RECORDED;
}

const char *vb_part_state_name(vb_part_state s) {
    static const char *const names[] = {"idle", "waiting", "starting", "ready", "stopping", "failed", "cleanup"};
    _Static_assert(sizeof names / sizeof names[0] == VB_PART_N_STATES, "a name per state");
    return (unsigned)s < VB_PART_N_STATES ? names[s] : "?";
}
