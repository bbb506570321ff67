/* CPU list parsing and formatting. */
#include "util/cpulist.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

int vb_cpulist_parse(const char *text, int *out, int cap, vb_error *err) {
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10);
        if (end == p || a < 0 || a >= CPU_SETSIZE) goto bad;
        long b = a;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1 || b < a || b >= CPU_SETSIZE) goto bad;
            p = end;
        }
        for (long c = a; c <= b; c++) {
            if (n >= cap) return vb_error_set(err, "config", 1, "CPU list \"%s\" names more than %d CPUs", text, cap), -1;
            out[n++] = (int)c;
        }
        if (*p == ',') p++;
        else if (*p) goto bad;
    }
    qsort(out, (size_t)n, sizeof *out, cmp_int);
    int u = 0;
    for (int i = 0; i < n; i++)
        if (u == 0 || out[u - 1] != out[i]) out[u++] = out[i];
    return u;
bad:
    vb_error_set(err, "config", 1, "bad CPU list \"%s\": expected e.g. 0-3,8", text);
    return -1;
}

void vb_cpulist_format(const int *cpus, int n, char *buf, size_t len) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < len;) {
        int j = i;
        while (j + 1 < n && cpus[j + 1] == cpus[j] + 1) j++;
        if (j == i) used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? "," : "", cpus[i]);
        else used += (size_t)snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", cpus[i], cpus[j]);
        i = j + 1;
    }
}

int vb_cpulist_allowed(int *out, int cap) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < cap; c++)
        if (CPU_ISSET(c, &set)) out[n++] = c;
    return n;
}
