/* Clocks. Latency and windows use the monotonic clock only; wall time is for records people read. */
#ifndef VB_UTIL_CLOCK_H
#define VB_UTIL_CLOCK_H

#include <stddef.h>
#include <stdint.h>

uint64_t vb_now_ns(void);            /* CLOCK_MONOTONIC, nanoseconds */
double vb_wall_time(void);           /* CLOCK_REALTIME, seconds since the epoch */
uint64_t vb_thread_cpu_ns(void);     /* CPU time of the calling thread */
uint64_t vb_process_cpu_ns(void);    /* CPU time of the whole process (user + system) */
void vb_sleep_ns(uint64_t ns);
/* A duration as people read an estimate: "~45 s", "~12 min", "~3.4 h". Returns buf. */
const char *vb_duration_approx(double seconds, char *buf, size_t len);

#endif
