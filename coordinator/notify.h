/* Notification of an unattended campaign: a command (profile `notify: {command: ...}`, or `--notify CMD`, which
 * wins) run by /bin/sh when the campaign finishes, fails, expires a limit, is interrupted, or loses an agent for
 * longer than notify.agent_lost_min minutes (10 by default; once per loss). Its stdin is a one-paragraph summary
 * (campaign, host, outcome, items done / failed / expired, elapsed, the last error, the results file); its
 * environment has VBENCH_EVENT (finished, failed, incomplete, interrupted, agent_lost), VBENCH_CAMPAIGN and
 * VBENCH_RESULTS. It runs for at most notify.timeout_s (60 s by default), then its process group is killed.
 * Whatever it does, the campaign goes on: a failure (exit status, signal, timeout, cannot start) is an event,
 * and so is a success. */
#ifndef VB_COORDINATOR_NOTIFY_H
#define VB_COORDINATOR_NOTIFY_H

#include <stdint.h>

#include "config/profile.h"
#include "store/store.h"

typedef struct vb_notify {
    char command[2048];        /* empty: no notification */
    double agent_lost_s, timeout_s;
    const char *out;           /* the results database */
    const vb_profile *profile;
    vb_store *store;
    char notified_lost[16][128];   /* agents already reported for their current loss */
    int n_lost;
    struct {                   /* commands still running: reaped by vb_notify_tick, killed at their deadline */
        int pid;
        uint64_t deadline_ns;
        char event[32];
    } running[8];
    int n_running;
} vb_notify;

/* cli_command: --notify, or NULL (then the profile's notify.command). */
void vb_notify_init(vb_notify *n, const char *cli_command, const vb_profile *p, vb_store *s, const char *out);
/* Starts the command for `event` with the summary built from the store (extra: one more sentence, or NULL) and
 * returns at once: the loop goes on while it runs. Returns -1 when it could not start (an event says why). */
int vb_notify_send(vb_notify *n, const char *event, const char *extra);
/* From the loop: records the commands that ended (an event each) and kills those past notify.timeout_s. */
void vb_notify_tick(vb_notify *n);
/* At the end: waits for every command still running, at most until its deadline. */
void vb_notify_finish(vb_notify *n);
/* Called for each lost agent from the loop: notifies once when it has been silent for agent_lost_s. */
void vb_notify_agent_lost(vb_notify *n, const char *agent, double silent_s);
/* Called when an agent is back: a later loss is notified again. */
void vb_notify_agent_back(vb_notify *n, const char *agent);

#endif
