/* The agent events the services raise: a small queue between the parts of the run and the agent machine.
 *
 * A service (coordinator/limits.c, servers.c, local_agents.c) that finds an agent must stop its item, went silent,
 * died or is stuck does not drive the agent machine itself: it posts the event here and returns. The event loop
 * (coordinator/campaign.c) drains the queue after each service call, firing each event into the agent machine
 * (vb_campaign_agent_drain, coordinator/agents.c) in the order they were posted. That is malamute's rule: an
 * action raises an event, it never calls another machine; so a service neither calls back into agents.c nor
 * finds the agent's state changed under it half-way through its own work, and its unit test reads what it posted.
 *
 * An event names its agent by id (the records may move when an agent joins), and owns a copy of its text. */
#ifndef VB_COORDINATOR_AGENT_QUEUE_H
#define VB_COORDINATOR_AGENT_QUEUE_H

#include <stddef.h>

#include "coordinator/agent_fsm.h"

typedef struct vb_agent_post {
    vb_agent_event kind;   /* ABORT, SILENT, PROCESS_DIED, LIMIT_UNANSWERED, ABORT_UNANSWERED */
    char agent[128];       /* the agent's id */
    int item;              /* ABORT, LIMIT_UNANSWERED, ABORT_UNANSWERED: the item (plan index); else -1 */
    int reason;            /* ABORT: Vbench__AbortReason */
    int has_why;           /* why was given (an Abort without one says its reason only) */
    char why[512];         /* ABORT: its detail; SILENT, PROCESS_DIED, ABORT_UNANSWERED: why the item stops */
} vb_agent_post;

typedef struct vb_agent_queue {
    vb_agent_post *posts;  /* owned; posts[next..n) are waiting */
    size_t n, next, cap;
} vb_agent_queue;

/* Appends an event for agent `agent`; why NULL: none. Returns 0, or -1 when out of memory: the event is lost
 * (vb_campaign_post writes that as an error event; the checks of limits.c post theirs again next turn). */
int vb_agent_queue_post(vb_agent_queue *q, vb_agent_event kind, const char *agent, int item, int reason,
                        const char *why);
/* The oldest waiting event into *out; 0 when none waits (the queue is then reset to empty). */
int vb_agent_queue_take(vb_agent_queue *q, vb_agent_post *out);
/* Events waiting. */
size_t vb_agent_queue_waiting(const vb_agent_queue *q);
/* Frees the queue's memory; it is empty and usable after. */
void vb_agent_queue_clear(vb_agent_queue *q);

#endif
