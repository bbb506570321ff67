/* The state of a database server (an engine with a recipe), one enum for both sides of the protocol: the
 * orchestrator (orchestrator/orchestrate.c) that runs the unit, and the coordinator (coordinator/server_fsm.*) that
 * asks for it. Each side uses the states it can be in:
 *   NONE      not started (orchestrator: nothing asked yet; coordinator: not started, or wanted again after a
 *             death it may restart)
 *   STARTING  a start is under way (coordinator: the request is out)
 *   READY     serving: its items may run
 *   STOPPING  a stop is under way (coordinator: the request is out)
 *   STOPPED   stopped on request
 *   FAILED    could not start or stop (coordinator: and may not run again; its remaining items fail)
 *   DIED      the unit ended while it was serving (orchestrator only: the coordinator decides from the report
 *             what comes next, NONE or FAILED)
 * The names are the words of the events and logs, and of the server reports on the wire ("ready", "failed",
 * "died", "stopped"). */
#ifndef VB_PROTO_SERVER_STATE_H
#define VB_PROTO_SERVER_STATE_H

#include <string.h>

typedef enum {
    VB_SERVER_NONE,
    VB_SERVER_STARTING,
    VB_SERVER_READY,
    VB_SERVER_STOPPING,
    VB_SERVER_STOPPED,
    VB_SERVER_FAILED,
    VB_SERVER_DIED,
    VB_SERVER_N_STATES
} vb_server_state;

/* The state's word ("none", "starting", ...); "?" for a value out of range. */
static inline const char *vb_server_state_name(vb_server_state s) {
    switch (s) {
    case VB_SERVER_NONE: return "none";
    case VB_SERVER_STARTING: return "starting";
    case VB_SERVER_READY: return "ready";
    case VB_SERVER_STOPPING: return "stopping";
    case VB_SERVER_STOPPED: return "stopped";
    case VB_SERVER_FAILED: return "failed";
    case VB_SERVER_DIED: return "died";
    case VB_SERVER_N_STATES: break;
    }
    return "?";
}

/* The state named `word`, or -1 when no state has that name. */
static inline int vb_server_state_parse(const char *word) {
    for (int s = 0; s < VB_SERVER_N_STATES; s++)
        if (word && strcmp(word, vb_server_state_name((vb_server_state)s)) == 0) return s;
    return -1;
}

#endif
