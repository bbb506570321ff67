/* CPU lists in the kernel's notation ("0-3,8,10-11"), as used by taskset, cgroups and systemd. */
#ifndef VB_UTIL_CPULIST_H
#define VB_UTIL_CPULIST_H

#include <stddef.h>

#include "util/error.h"

/* Parses into out (sorted, unique, at most cap entries); returns the count, or -1 with err naming the text. */
int vb_cpulist_parse(const char *text, int *out, int cap, vb_error *err);
/* Formats cpus back into the compact notation. */
void vb_cpulist_format(const int *cpus, int n, char *buf, size_t len);
/* The CPUs this process may run on (sched_getaffinity). */
int vb_cpulist_allowed(int *out, int cap);

#endif
