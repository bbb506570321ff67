/* vb_mdc: the M/D/c queue's rate for a sojourn-time objective (tests/unit/mdc.h: Crommelin's method), for the
 * capacity phase's end-to-end check against queueing theory (tests/e2e/47-capacity.t).
 *
 *   vb_mdc SERVERS SERVICE_US P99_MS [QUANTILE]
 * prints the highest Poisson arrival rate (per second) at which the QUANTILE (default 0.99) of the sojourn time (wait
 * + service) of a FCFS queue of SERVERS servers with a fixed SERVICE_US service time is at most P99_MS, and the
 * capacity SERVERS / service: "rate 754.72 capacity 1000.00". */
#include <stdio.h>
#include <stdlib.h>

#include "tests/unit/mdc.h"

int main(int argc, char **argv) {
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: vb_mdc SERVERS SERVICE_US P99_MS [QUANTILE]\n");
        return 2;
    }
    int c = atoi(argv[1]);
    double d = atof(argv[2]) / 1e6, target = atof(argv[3]) / 1e3, q = argc == 5 ? atof(argv[4]) : 0.99;
    if (c < 1 || !(d > 0) || !(target > d) || !(q > 0 && q < 1)) {
        fprintf(stderr, "vb_mdc: SERVERS >= 1, SERVICE_US > 0, P99_MS above the service time, 0 < QUANTILE < 1\n");
        return 2;
    }
    printf("rate %.2f capacity %.2f\n", mdc_rate_for(d, c, target, q), c / d);
    return 0;
}
