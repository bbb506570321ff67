/* Unit tests of coordinator/local_agents.c, local mode's agent processes, on a campaign struct
 * (tests/unit/campaign_fixture.h) with real child processes: a small script stands in for bin/vbench-agent (it
 * exits at once, or sleeps). A local agent that died is reaped, a PROCESS_DIED posted for its record (the agent
 * machine is not driven from here: the drain marks it lost and interrupts its item), and it is started again up to
 * MAX_LOCAL_RESPAWNS times; one lost past limits.agent_silent_s is killed; a stuck one is killed on demand. The
 * loops wait for the children with a bound on turns, not on time. */
#include <sys/stat.h>

#include "tests/unit/campaign_fixture.h"

static const char *const PROFILE =
    "name: local\n"
    "datasets:\n"
    "  - {name: d1, source: synthetic, rows: 1000}\n"
    "engines:\n"
    "  - name: exact\n"
    "phases:\n"
    "  build: {}\n";

/* A stand-in for the agent program in the fixture's directory: body is its shell script. */
static void agent_script(fixture *f, char *path, size_t len, const char *name, const char *body) {
    snprintf(path, len, "%s/%s", f->dir, name);
    FILE *s = fopen(path, "w");
    fprintf(s, "#!/bin/sh\n%s\n", body);
    fclose(s);
    chmod(path, 0755);
}

static void died(void) {
    fixture f;
    if (!ok(fixture_open(&f, PROFILE) == 0, "died: a campaign")) return;
    campaign *c = &f.c;
    char bin[200];
    agent_script(&f, bin, sizeof bin, "exits", "exit 3");
    f.o.agent_bin = bin;
    c->local[0] = (local_agent){.id = "local-client", .roles = "client"};
    c->n_local = 1;
    vb_error err = {0};
    is_int(vb_campaign_spawn_local_agent(c, 0, &err), VB_OK, "spawn: the local agent starts");
    ok(c->local[0].pid > 0, "spawn: it has a pid");
    peer *a = fixture_agent(&f, "local-client", "client", VB_AGENT_IDLE, 0, NULL);
    fixture_run(&f, a, 0);
    /* reaped, restarted, ... until the respawn budget is used up (each start exits at once) */
    int posts = 0, lost_before_drain = 0;
    for (int turn = 0; turn < 2000 && !(c->local[0].pid == 0 && c->local[0].respawns > MAX_LOCAL_RESPAWNS); turn++) {
        vb_campaign_watch_local_agents(c);
        vb_agent_post e;
        while (fixture_posted(&f, &e)) {
            posts++;
            ok(e.kind == VB_AGENT_EV_PROCESS_DIED && strcmp(e.agent, "local-client") == 0 &&
                   strstr(e.why, "the local agent exited with status 3"),
               "died: PROCESS_DIED posted for its record, saying how it ended (%d)", posts);
            lost_before_drain |= vb_campaign_find_peer(c, "local-client")->state == VB_AGENT_LOST;
        }
        usleep(10000);
    }
    is_int(posts, MAX_LOCAL_RESPAWNS + 1, "died: one post per death, the first start and its %d restarts",
           MAX_LOCAL_RESPAWNS);
    ok(!lost_before_drain, "died: posted, not fired: the record stays busy until the drain");
    ok(c->local[0].pid == 0 && c->local[0].respawns == MAX_LOCAL_RESPAWNS + 1, "died: not started again past the budget");
    is_int(fixture_events(&f, VB_EVENT_LOCAL_AGENT_EXITED), MAX_LOCAL_RESPAWNS + 1, "died: a local_agent_exited event each");
    vb_campaign_post(c, VB_AGENT_EV_PROCESS_DIED, vb_campaign_find_peer(c, "local-client"), -1, 0, "the local agent exited");
    vb_campaign_agent_drain(c);
    a = vb_campaign_find_peer(c, "local-client");
    ok(a->state == VB_AGENT_LOST && c->items[0] == ITEM_PENDING, "died: drained, the agent is lost and its item runs again");
    fixture_close(&f);
}

static void lost_and_stuck(void) {
    fixture f;
    if (!ok(fixture_open(&f, PROFILE) == 0, "lost: a campaign")) return;
    campaign *c = &f.c;
    char bin[200];
    agent_script(&f, bin, sizeof bin, "sleeps", "exec sleep 60");
    f.o.agent_bin = bin;
    c->local[0] = (local_agent){.id = "local-client", .roles = "client"};
    c->n_local = 1;
    vb_error err = {0};
    vb_campaign_spawn_local_agent(c, 0, &err);
    pid_t first = c->local[0].pid;
    peer *a = fixture_agent(&f, "local-client", "client", VB_AGENT_LOST, 0, NULL);
    vb_campaign_watch_local_agents(c);
    ok(c->local[0].pid == first && fixture_events(&f, VB_EVENT_LOCAL_AGENT_KILLED) == 0,
       "lost: not killed within limits.agent_silent_s of its start");
    a->last_heard_ns = 1;
    c->local[0].spawned_ns = vb_now_ns() - 16000000000ull;   /* limits.agent_silent_s = 15 */
    vb_campaign_watch_local_agents(c);
    is_int(fixture_events(&f, VB_EVENT_LOCAL_AGENT_KILLED), 1, "lost past limits.agent_silent_s: killed");
    for (int turn = 0; turn < 500 && c->local[0].pid == first; turn++) vb_campaign_watch_local_agents(c), usleep(10000);
    ok(c->local[0].pid > 0 && c->local[0].pid != first, "lost: reaped and started again");
    vb_agent_post e;
    ok(fixture_posted(&f, &e) && e.kind == VB_AGENT_EV_PROCESS_DIED && strstr(e.why, "killed by signal 9"),
       "lost: its death posted (killed by signal 9)");
    /* stuck in a call (REPORT_STUCK asks for it): killed now, by id */
    pid_t second = c->local[0].pid;
    is_int(vb_campaign_kill_local_agent(c, "local-client"), second, "stuck: killed by id, its pid returned");
    is_int(vb_campaign_kill_local_agent(c, "remote-agent"), 0, "stuck: a remote agent is nobody's to kill here");
    vb_campaign_stop_local_agents(c);
    is_int(c->local[0].pid, 0, "stop: the local agent is reaped");
    fixture_close(&f);
}

int main(void) {
    died();
    lost_and_stuck();
    return done_testing();
}
