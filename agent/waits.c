/* The wait sampler thread (see waits.h). */
#include "agent/waits.h"

#include <stdio.h>
#include <string.h>

#include "util/clock.h"

static void *sample_loop(void *arg) {
    vb_wait_sampler *s = arg;
    while (!atomic_load(&s->stop)) {
        vb_error err = {0};
        if (vb_engine_wait_sample(s->engine, &s->profile, &err) != VB_OK) {
            snprintf(s->error, sizeof s->error, "%s", err.message);
            break;
        }
        vb_sleep_ns(s->period_ns);
    }
    return NULL;
}

int vb_wait_sampler_start(vb_wait_sampler *s, vb_engine *e, uint64_t period_ns) {
    memset(s, 0, sizeof *s);
    atomic_init(&s->stop, 0);
    if (!e || !vb_engine_ops_of(e)->wait_sample) return 0;
    vb_error err = {0};
    if (vb_engine_wait_sample(e, NULL, &err) != VB_OK) {
        snprintf(s->off, sizeof s->off, "%s", err.message);
        return 0;
    }
    s->engine = e;
    s->period_ns = period_ns ? period_ns : VB_WAIT_PERIOD_NS;
    if (pthread_create(&s->thread, NULL, sample_loop, s) != 0) {
        snprintf(s->error, sizeof s->error, "could not start the wait sampler thread");
        return 0;
    }
    s->started = 1;
    return 1;
}

void vb_wait_sampler_stop(vb_wait_sampler *s) {
    if (!s->started) return;
    atomic_store(&s->stop, 1);
    pthread_join(s->thread, NULL);
    s->started = 0;
    /* One reading more, now that the workload has ended: a profile of deltas (MariaDB's timed waits, Redis's latency
     * histogram) then covers the run's last calls too, up to 50 ms of them otherwise. */
    vb_error err = {0};
    if (!s->error[0] && vb_engine_wait_sample(s->engine, &s->profile, &err) != VB_OK)
        snprintf(s->error, sizeof s->error, "%s", err.message);
}
