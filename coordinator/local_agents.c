/* Local mode's agents: the coordinator starts a client agent (and an orchestrator agent when an engine has a
 * recipe) as child processes, kills and restarts one that is lost or died, and stops them at the end. */
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coordinator/campaign_int.h"

extern char **environ;

/* ---- local agents ------------------------------------------------------------------------------------------ */

/* Local mode: a client agent always, and an orchestrator agent when a selected engine has a recipe. Separate
 * processes, like agents on other hosts; each restarted up to MAX_LOCAL_RESPAWNS times if it dies. */
int vb_campaign_spawn_local_agent(campaign *c, int which, vb_error *err) {
    local_agent *la = &c->local[which];
    const char *argv[24];
    int n = 0;
    argv[n++] = c->o->agent_bin;
    argv[n++] = "--connect";
    argv[n++] = c->endpoint;
    argv[n++] = "--id";
    argv[n++] = la->id;
    argv[n++] = "--roles";
    argv[n++] = la->roles;
    argv[n++] = "--workdir";
    argv[n++] = c->agent_dir;
    argv[n++] = "--exit-with-parent";
    if (c->o->cache_dir) {
        argv[n++] = "--cache-dir";
        argv[n++] = c->o->cache_dir;
    }
    if (la->cpus[0]) {
        argv[n++] = "--cpus";
        argv[n++] = la->cpus;
    }
    if (strcmp(la->roles, "orchestrator") == 0) {
        if (c->o->recipes_dir) argv[n++] = "--recipes", argv[n++] = c->o->recipes_dir;
        if (c->o->images_dir) argv[n++] = "--images", argv[n++] = c->o->images_dir;
        if (c->o->bus_address) argv[n++] = "--bus", argv[n++] = c->o->bus_address;
    }
    if (c->zap && !la->cert[0] &&
        vb_transport_zap_local_agent(c->zap, c->run_dir, la->id, la->cert, sizeof la->cert, c->agent_server_key,
                                     sizeof c->agent_server_key, err) != VB_OK)
        return VB_ERROR;
    if (la->cert[0]) {
        argv[n++] = "--cert";
        argv[n++] = la->cert;
        argv[n++] = "--server-key";
        argv[n++] = c->agent_server_key;
    }
    argv[n] = NULL;
    la->spawned_ns = vb_now_ns();
    int rc = posix_spawn(&la->pid, c->o->agent_bin, NULL, NULL, (char *const *)argv, environ);
    if (rc != 0)
        return vb_error_set(err, "coordinator", rc, "cannot start the local agent %s: %s", c->o->agent_bin, strerror(rc));
    return VB_OK;
}

/* A local agent found stuck (an Abort unanswered: ABORT_UNANSWERED): SIGKILLed now; the reaping of
 * vb_campaign_watch_local_agents starts another within the respawn budget. Returns its pid, 0 when id is not a
 * local agent of ours (a remote one: nobody here can kill it). */
pid_t vb_campaign_kill_local_agent(campaign *c, const char *id) {
    for (int k = 0; k < c->n_local; k++) {
        local_agent *la = &c->local[k];
        if (la->pid <= 0 || strcmp(la->id, id) != 0) continue;
        kill(la->pid, SIGKILL);
        la->spawned_ns = vb_now_ns();
        return la->pid;
    }
    return 0;
}

void vb_campaign_watch_local_agents(campaign *c) {
    for (int k = 0; k < c->n_local; k++) {
        local_agent *la = &c->local[k];
        /* Our own child marked lost (silent past limits.agent_silent_s: stopped, or stuck in a call): it will not
         * come back by itself, and waiting for it would hold the campaign forever. SIGKILL it; the reaping below
         * starts another within the respawn budget. Measured from its spawn too, so a new process is not killed
         * for its predecessor's silence. */
        peer *lp = la->pid > 0 ? vb_campaign_find_peer(c, la->id) : NULL;
        uint64_t now = vb_now_ns(), since = lp && lp->last_heard_ns > la->spawned_ns ? lp->last_heard_ns : la->spawned_ns;
        if (lp && lp->state == VB_AGENT_LOST && now - since > c->profile->limits.agent_silent_ns) {
            vb_store_event(c->store, VB_EVENT_LOCAL_AGENT_KILLED, "error", NULL, "coordinator",
                           "local agent %s (pid %d) is lost: killed (SIGKILL)",
                           la->id, (int)la->pid);
            vb_console_say(&c->console, "local agent %s (pid %d) is lost: killing it", la->id, (int)la->pid);
            kill(la->pid, SIGKILL);
            la->spawned_ns = now;   /* once: reaped at the next turn */
        }
        int status;
        if (la->pid <= 0 || waitpid(la->pid, &status, WNOHANG) != la->pid) continue;
        la->pid = 0;
        char how[64];
        if (WIFSIGNALED(status)) snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(status));
        else snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(status));
        vb_store_event(c->store, VB_EVENT_LOCAL_AGENT_EXITED, "error", NULL, "coordinator", "local agent %s %s",
                       la->id, how);
        peer *p = vb_campaign_find_peer(c, la->id);
        if (p) {
            char why[128];
            snprintf(why, sizeof why, "the local agent %s", how);
            vb_campaign_post(c, VB_AGENT_EV_PROCESS_DIED, p, -1, 0, why);   /* the machine marks it lost */
        }
        if (la->respawns++ < MAX_LOCAL_RESPAWNS) {
            vb_console_say(&c->console, "local agent %s %s; starting it again", la->id, how);
            vb_error err;
            if (vb_campaign_spawn_local_agent(c, k, &err)) vb_console_say(&c->console, "vbench: %s", err.message);
        }
    }
}

/* Each local agent was told Bye: up to 5 s to leave by itself, then SIGTERM and 5 s more, then SIGKILL (a process
 * that is stopped, or stuck in a call that outlives SIGTERM), and up to 5 s for the kernel to reap it. Never
 * waits without a bound. */
void vb_campaign_stop_local_agents(campaign *c) {
    for (int stage = 0; stage < 3; stage++) {
        for (int t = 0; t < 50; t++) {
            int left = 0;
            for (int k = 0; k < c->n_local; k++) {
                local_agent *la = &c->local[k];
                if (la->pid > 0 && waitpid(la->pid, NULL, WNOHANG) == la->pid) la->pid = 0;
                left += la->pid > 0;
            }
            if (!left) return;
            vb_sleep_ns(100000000ull);
        }
        for (int k = 0; k < c->n_local; k++) {
            local_agent *la = &c->local[k];
            if (la->pid <= 0 || stage == 2) continue;
            if (stage == 1) fprintf(stderr, "vbench: local agent %s (pid %d) did not stop after SIGTERM: SIGKILL\n",
                                    la->id, (int)la->pid);
            kill(la->pid, stage == 0 ? SIGTERM : SIGKILL);
        }
    }
    for (int k = 0; k < c->n_local; k++)
        if (c->local[k].pid > 0)
            fprintf(stderr, "vbench: local agent %s (pid %d) could not be reaped (uninterruptible?): left behind\n",
                    c->local[k].id, (int)c->local[k].pid);
}
