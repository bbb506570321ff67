/* The client host's own pauses (jHiccup's idea): a thread of its own that sleeps to an absolute deadline every
 * millisecond while a window runs and records how late it woke. A late wake-up is time the host took from the
 * client: another process on its CPUs, a virtual CPU taken away by the hypervisor (steal), a page fault stall. Every
 * query in flight then looks slower by that much, and the arrivals queue behind it, whatever the engine did. The
 * thread runs in the scheduling class of the process (SCHED_FIFO when the campaign runs under chrt), like the
 * client's own threads, so it sees what they see. The capacity search uses it to measure again a window that failed
 * its objective while the host paused (metrics/capacity.h, docs/metrics.md "Capacity"). */
#ifndef VB_AGENT_HICCUP_H
#define VB_AGENT_HICCUP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define VB_HICCUP_PERIOD_NS 1000000ull   /* 1 ms between wake-ups */

typedef struct vb_hiccup {
    uint64_t period_ns;
    pthread_t thread;
    int started;
    atomic_int stop;
    /* read only after vb_hiccup_stop */
    uint64_t max_ns;        /* the longest pause: the latest wake-up past its deadline */
    uint64_t over_1ms_ns;   /* the sum of the pauses longer than 1 ms */
    uint64_t wakeups;
} vb_hiccup;

/* Starts the thread (period_ns 0: VB_HICCUP_PERIOD_NS); returns 1 when it started, 0 when the thread could not be
 * made (h is then stopped: max_ns stays 0 and vb_hiccup_stop is a no-op). */
int vb_hiccup_start(vb_hiccup *h, uint64_t period_ns);
/* Stops and joins the thread; h's counts are then final. */
void vb_hiccup_stop(vb_hiccup *h);

#endif
