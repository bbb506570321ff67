/* The agent events the services raise (coordinator/agent_queue.h). */
#include "coordinator/agent_queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int vb_agent_queue_post(vb_agent_queue *q, vb_agent_event kind, const char *agent, int item, int reason,
                        const char *why) {
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 8;
        vb_agent_post *p = realloc(q->posts, cap * sizeof *p);
        if (!p) return -1;
        q->posts = p;
        q->cap = cap;
    }
    vb_agent_post *e = &q->posts[q->n++];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    snprintf(e->agent, sizeof e->agent, "%s", agent ? agent : "");
    e->item = item;
    e->reason = reason;
    e->has_why = why != NULL;
    snprintf(e->why, sizeof e->why, "%s", why ? why : "");
    return 0;
}

int vb_agent_queue_take(vb_agent_queue *q, vb_agent_post *out) {
    if (q->next >= q->n) {
        q->n = q->next = 0;
        return 0;
    }
    *out = q->posts[q->next++];
    return 1;
}

size_t vb_agent_queue_waiting(const vb_agent_queue *q) { return q->n - q->next; }

void vb_agent_queue_clear(vb_agent_queue *q) {
    free(q->posts);
    memset(q, 0, sizeof *q);
}
