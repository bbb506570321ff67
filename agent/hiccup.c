/* The client host's pauses (agent/hiccup.h). */
#include "agent/hiccup.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static uint64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void *hiccup_main(void *arg) {
    vb_hiccup *h = arg;
    uint64_t deadline = mono_ns();
    while (!atomic_load(&h->stop)) {
        deadline += h->period_ns;
        struct timespec ts = {(time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
        uint64_t now = mono_ns(), late = now > deadline ? now - deadline : 0;
        if (late > h->max_ns) h->max_ns = late;
        if (late > 1000000ull) h->over_1ms_ns += late;
        h->wakeups++;
        /* after a pause the next deadline is a period from now: one pause is counted once, not once per period
         * it covered */
        if (late > h->period_ns) deadline = now;
    }
    return NULL;
}

int vb_hiccup_start(vb_hiccup *h, uint64_t period_ns) {
    memset(h, 0, sizeof *h);
    h->period_ns = period_ns ? period_ns : VB_HICCUP_PERIOD_NS;
    atomic_init(&h->stop, 0);
    if (pthread_create(&h->thread, NULL, hiccup_main, h) != 0) return 0;
    h->started = 1;
    return 1;
}

void vb_hiccup_stop(vb_hiccup *h) {
    if (!h->started) return;
    atomic_store(&h->stop, 1);
    pthread_join(h->thread, NULL);
    h->started = 0;
}
