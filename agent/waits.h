/* The wait profile of a window: a thread of its own that asks the engine, every few milliseconds while the
 * workload runs, what the server's sessions running the kNN statement wait on (engines/engine.h wait_sample),
 * summed into one vb_wait_profile (docs/metrics.md "Wait profile"). */
#ifndef VB_AGENT_WAITS_H
#define VB_AGENT_WAITS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "engines/engine.h"

#define VB_WAIT_PERIOD_NS 50000000ull  /* 50 ms between samples */

typedef struct vb_wait_sampler {
    vb_engine *engine;
    uint64_t period_ns;
    pthread_t thread;
    int started;
    atomic_int stop;
    vb_wait_profile profile;   /* read only after vb_wait_sampler_stop */
    char off[1024];            /* why it did not start: the probe's message */
    char error[1024];          /* the first failed sample's message ("" none); sampling ends there */
} vb_wait_sampler;

/* Starts sampling e every period_ns (0: VB_WAIT_PERIOD_NS) when e has a wait_sample op and its probe says
 * sampling is on; returns 1 when it started, 0 when not (s->off then says why, "" for an engine without the op;
 * s is left stopped and stop is a no-op). */
int vb_wait_sampler_start(vb_wait_sampler *s, vb_engine *e, uint64_t period_ns);
/* Stops and joins the thread; s->profile then holds the sum. */
void vb_wait_sampler_stop(vb_wait_sampler *s);

#endif
