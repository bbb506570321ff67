/* Clock helpers over clock_gettime(2). */
#include "util/clock.h"

#include <stdio.h>
#include <time.h>

static uint64_t read_clock(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t vb_now_ns(void) { return read_clock(CLOCK_MONOTONIC); }
uint64_t vb_thread_cpu_ns(void) { return read_clock(CLOCK_THREAD_CPUTIME_ID); }
uint64_t vb_process_cpu_ns(void) { return read_clock(CLOCK_PROCESS_CPUTIME_ID); }

double vb_wall_time(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void vb_sleep_ns(uint64_t ns) {
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

const char *vb_duration_approx(double s, char *buf, size_t len) {
    if (s < 90) snprintf(buf, len, "~%.0f s", s);
    else if (s < 90 * 60) snprintf(buf, len, "~%.0f min", s / 60);
    else snprintf(buf, len, "~%.1f h", s / 3600);
    return buf;
}
