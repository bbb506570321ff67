/* Clocks. Latency and windows use the monotonic clock only; wall time is for records people read. */
#ifndef VB_UTIL_CLOCK_H
#define VB_UTIL_CLOCK_H

#include <stdint.h>

uint64_t vb_now_ns(void);            /* CLOCK_MONOTONIC, nanoseconds */
double vb_wall_time(void);           /* CLOCK_REALTIME, seconds since the epoch */
uint64_t vb_thread_cpu_ns(void);     /* CPU time of the calling thread */
uint64_t vb_process_cpu_ns(void);    /* CPU time of the whole process (user + system) */
void vb_sleep_ns(uint64_t ns);

#endif
