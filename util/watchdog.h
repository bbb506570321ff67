/* systemd's service notification (sd_notify from libsystemd) for the coordinator and the agents, so that their
 * units can be Type=notify with WatchdogSec=: READY=1 once set up, WATCHDOG=1 from the main loop (every quarter of
 * the watchdog interval systemd gives in $WATCHDOG_USEC; a loop that hangs stops them, and systemd kills and
 * restarts the service, which resumes), and STATUS= with the progress (systemctl status shows it).
 * Outside systemd ($NOTIFY_SOCKET unset) every call is a cheap no-op. A process started by a notified one (the
 * coordinator's local agents) inherits $NOTIFY_SOCKET but is not the unit's main process: the first process to
 * call vb_watchdog_init marks itself in $VBENCH_NOTIFY_OWNER, and its children stay silent. */
#ifndef VB_UTIL_WATCHDOG_H
#define VB_UTIL_WATCHDOG_H

void vb_watchdog_init(void);
void vb_watchdog_ready(const char *status);
/* 1 when a WATCHDOG=1 (or a STATUS= refresh, every 5 s) is due: the caller builds the status only then. */
int vb_watchdog_due(void);
void vb_watchdog_tick(const char *status);
void vb_watchdog_stopping(const char *status);

#endif
