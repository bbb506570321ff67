/* Self-test of coordinator/placement: node K on orchestrator K mod H, one part per orchestrator that holds a node
 * (part 0 with node 0), and what the server's machine hears of the parts' answers: ready when the last part is,
 * stopped when the last part is, a failure or death of one part the server's, with the others stopped (CLEANUP) and
 * their answers recorded only; part 0 ready starts the parts that wait for it. */
#include <stdio.h>
#include <string.h>

#include "coordinator/placement.h"
#include "tests/tap.h"

/* "0,2|1" : the parts' nodes. */
static const char *nodes_str(const vb_place_part *parts, int n, char *buf, size_t len) {
    buf[0] = '\0';
    for (int p = 0; p < n; p++)
        for (int j = 0; j < parts[p].n_nodes; j++)
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%d", j ? "," : p ? "|" : "", parts[p].nodes[j]);
    return buf;
}

static void test_plan(void) {
    vb_place_part parts[VB_PLACE_MAX_PARTS];
    char buf[256];
    static const struct { int nodes, orch, n_parts; const char *want; } cases[] = {
        {1, 1, 1, "0"},         {1, 3, 1, "0"},          {2, 1, 1, "0,1"},       {2, 2, 2, "0|1"},
        {3, 2, 2, "0,2|1"},     {4, 2, 2, "0,2|1,3"},    {2, 3, 2, "0|1"},        {5, 3, 3, "0,3|1,4|2"},
        {0, 2, 1, "0"},         {3, 0, 1, "0,1,2"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n = vb_placement_plan(cases[i].nodes, cases[i].orch, parts);
        nodes_str(parts, n, buf, sizeof buf);
        ok(n == cases[i].n_parts && strcmp(buf, cases[i].want) == 0, "%d nodes over %d orchestrators: %s (got %s)",
           cases[i].nodes, cases[i].orch, cases[i].want, buf);
    }
    int n = vb_placement_plan(5, 3, parts);
    ok(parts[0].orch == 0 && parts[1].orch == 1 && parts[2].orch == 2 && vb_placement_all(parts, n, VB_PART_IDLE),
       "the parts follow the orchestrators' order, idle");
    ok(vb_placement_part_of(parts, n, 4) == 1 && vb_placement_part_of(parts, n, 0) == 0 &&
           vb_placement_part_of(parts, n, 5) == -1,
       "node 4 is part 1's, node 0 part 0's, node 5 nobody's");
    n = vb_placement_plan(40, 2, parts);
    ok(parts[0].n_nodes + parts[1].n_nodes == VB_PLACE_MAX_NODES, "at most %d nodes are placed", VB_PLACE_MAX_NODES);
}

static void test_answers(void) {
    vb_place_part parts[VB_PLACE_MAX_PARTS];
    int stop = 0, start = 0;
    int n = vb_placement_plan(3, 3, parts);

    /* start: part 0 first, the others once it is ready */
    parts[0].state = VB_PART_STARTING;
    parts[1].state = parts[2].state = VB_PART_WAITING;
    ok(vb_placement_answer(parts, n, 0, VB_PART_SAID_READY, &stop, &start) == VB_PLACE_PENDING && start && !stop,
       "part 0 ready: the others are still to come (pending), and they start now");
    parts[1].state = parts[2].state = VB_PART_STARTING;
    ok(vb_placement_answer(parts, n, 2, VB_PART_SAID_READY, &stop, &start) == VB_PLACE_PENDING && !start,
       "part 2 ready: part 1 is not (pending); nothing more to start");
    ok(vb_placement_answer(parts, n, 1, VB_PART_SAID_READY, &stop, &start) == VB_PLACE_SERVER &&
           vb_placement_all(parts, n, VB_PART_READY),
       "the last part ready: the server is");

    /* stop: every part, stopped when the last one is */
    for (int p = 0; p < n; p++) parts[p].state = VB_PART_STOPPING;
    ok(vb_placement_answer(parts, n, 1, VB_PART_SAID_STOPPED, &stop, &start) == VB_PLACE_PENDING, "one part stopped: pending");
    ok(vb_placement_answer(parts, n, 0, VB_PART_SAID_FAILED, &stop, &start) == VB_PLACE_RECORDED && !stop,
       "a part that could not stop while another still stops: recorded");
    ok(vb_placement_answer(parts, n, 2, VB_PART_SAID_STOPPED, &stop, &start) == VB_PLACE_SERVER &&
           vb_placement_all(parts, n, VB_PART_IDLE),
       "the last part stopped: the server is");

    /* a death while every part serves: the server's death, the others stopped, their answers recorded */
    for (int p = 0; p < n; p++) parts[p].state = VB_PART_READY;
    ok(vb_placement_answer(parts, n, 1, VB_PART_SAID_DIED, &stop, &start) == VB_PLACE_SERVER && stop &&
           parts[1].state == VB_PART_FAILED && parts[0].state == VB_PART_CLEANUP && parts[2].state == VB_PART_CLEANUP,
       "part 1 died: the server died; parts 0 and 2 are stopped (cleanup)");
    ok(vb_placement_answer(parts, n, 0, VB_PART_SAID_STOPPED, &stop, &start) == VB_PLACE_RECORDED &&
           parts[0].state == VB_PART_IDLE,
       "a cleaned-up part's stop is recorded, not the server's");
    ok(vb_placement_answer(parts, n, 2, VB_PART_SAID_READY, &stop, &start) == VB_PLACE_RECORDED &&
           parts[2].state == VB_PART_CLEANUP,
       "a cleaned-up part whose start finished first says ready: recorded, its stop still to come");

    /* a start that fails: the server's failure, the parts waiting for part 0 are never started */
    parts[0].state = VB_PART_STARTING;
    parts[1].state = parts[2].state = VB_PART_WAITING;
    ok(vb_placement_answer(parts, n, 0, VB_PART_SAID_FAILED, &stop, &start) == VB_PLACE_SERVER && !stop &&
           parts[1].state == VB_PART_IDLE && parts[2].state == VB_PART_IDLE,
       "part 0 failed to start: the server failed, the waiting parts stay idle (nothing to stop)");
    parts[0].state = parts[1].state = VB_PART_READY;
    parts[2].state = VB_PART_STARTING;
    ok(vb_placement_answer(parts, n, 2, VB_PART_SAID_FAILED, &stop, &start) == VB_PLACE_SERVER && stop &&
           parts[0].state == VB_PART_CLEANUP && parts[1].state == VB_PART_CLEANUP,
       "the last part failed to start: the server failed, the ready parts are stopped");

    /* a death found at the stop request: the server's (its item is charged), the stop's answer follows */
    for (int p = 0; p < n; p++) parts[p].state = VB_PART_STOPPING;
    ok(vb_placement_answer(parts, n, 2, VB_PART_SAID_DIED, &stop, &start) == VB_PLACE_SERVER && !stop &&
           parts[2].state == VB_PART_STOPPING,
       "died at the stop: the server hears it, the part still stops");
    ok(vb_placement_answer(parts, n, 7, VB_PART_SAID_READY, &stop, &start) == VB_PLACE_RECORDED,
       "an answer of no part is recorded only");
    ok(strcmp(vb_part_state_name(VB_PART_CLEANUP), "cleanup") == 0 && strcmp(vb_part_state_name(VB_PART_N_STATES), "?") == 0,
       "state names");
}

int main(void) {
    test_plan();
    test_answers();
    return done_testing();
}
