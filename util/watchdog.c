/* sd_notify wrapper (util/watchdog.h). */
#include "util/watchdog.h"

#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "util/clock.h"

static int enabled = -1;           /* -1: not initialised */
static uint64_t every_ns, last_ns;

void vb_watchdog_init(void) {
    if (enabled >= 0) return;
    const char *owner = getenv("VBENCH_NOTIFY_OWNER");
    if (!getenv("NOTIFY_SOCKET") || (owner && atol(owner) != (long)getpid())) {
        enabled = 0;
        return;
    }
    char me[32];
    snprintf(me, sizeof me, "%ld", (long)getpid());
    setenv("VBENCH_NOTIFY_OWNER", me, 1);
    enabled = 1;
    uint64_t usec = 0;
    /* WATCHDOG=1 four times per interval; without a watchdog, STATUS= every 5 s */
    every_ns = sd_watchdog_enabled(0, &usec) > 0 && usec ? usec * 1000 / 4 : 5000000000ull;
}

void vb_watchdog_ready(const char *status) {
    vb_watchdog_init();
    if (!enabled) return;
    sd_notifyf(0, "READY=1\nSTATUS=%s", status ? status : "");
    last_ns = vb_now_ns();
}

int vb_watchdog_due(void) {
    if (enabled < 0) vb_watchdog_init();
    return enabled && vb_now_ns() - last_ns >= every_ns;
}

void vb_watchdog_tick(const char *status) {
    if (!vb_watchdog_due()) return;
    sd_notifyf(0, "WATCHDOG=1\nSTATUS=%s", status ? status : "");
    last_ns = vb_now_ns();
}

void vb_watchdog_stopping(const char *status) {
    if (enabled > 0) sd_notifyf(0, "STOPPING=1\nSTATUS=%s", status ? status : "");
}
