/* The preflight: what a campaign needs from this host, checked before its first item runs (and by
 * `vbench run --check`, which prints the checks and creates nothing).
 *
 *  - disk: the dataset cache (a registry file still to fetch, the synthetic corpus, a float32 conversion), each
 *    server's data directory (OUT.d/servers/ENGINE: rows x bytes per row, measured on this host by an earlier
 *    campaign (coordinator/history.h) else the engine's default (its ops' estimate, engines/engine.h), times
 *    1 + the churn fraction for the rows that are deleted and written again, plus a fixed part for the server's
 *    own files), and the
 *    results database (with its .bak copy); summed per file system, against what it has free;
 *  - memory: the budget (server + client) against the host's memory; the embedded engines' corpus and graph
 *    against it too;
 *  - the servers' data directory (--data-dir, else on a resume the one the campaign was run with, else OUT.d):
 *    writable by this process (or, where it does not exist yet, its nearest existing parent), its free space
 *    said, and the needs of the servers' data directories counted there;
 *  - CPUs: --cpus and the budget's lists against the CPUs that are online;
 *  - servers: each recipe loads, its image is built.
 * Every failure says what to do, with the numbers. Local mode only for the server checks: with
 * --no-local-agents the orchestrators on the other hosts check their own. */
#ifndef VB_COORDINATOR_PREFLIGHT_H
#define VB_COORDINATOR_PREFLIGHT_H

#include <stdio.h>

#include "config/plan.h"
#include "config/profile.h"
#include "util/error.h"

typedef struct vb_preflight_opts {
    const vb_profile *profile;
    const vb_plan *plan;
    const char *out;           /* the results database; server data goes to OUT.d */
    const char *data_dir;      /* --data-dir: server data goes there instead; NULL: OUT.d */
    const char *stored_data_dir; /* a resume without --data-dir: the campaign's own (manifest campaign.data_dir,
                                  * from the run that made it with --data-dir); NULL: OUT.d */
    const char *cache_dir;     /* --cache-dir or NULL */
    const char *agent_cpus;    /* --cpus or NULL */
    const char *recipes_dir, *images_dir;   /* NULL: the defaults */
    int remote_agents;         /* --no-local-agents: no server runs here */
    int resume;                /* the servers' data directories that exist already are not counted again */
    double estimate_s;         /* the runtime estimate (server samples grow the results), 0 unknown */
    FILE *print;               /* each check's line goes here, or NULL */
    int problems_only;         /* print only the warn lines (the FAIL lines are in the error) */
    /* A recipe that does not load or an image that is not built fails only that engine's items (the campaign goes
     * on with the others, as it does for a dataset that cannot be read): refused by --check (1), a warning before
     * a run (0), so that the run's own failure of those items says it again in the database. */
    int engines_strict;
} vb_preflight_opts;

/* VB_OK when every check passes; else VB_ERROR with every failure in err's message (one per line). */
int vb_preflight_run(const vb_preflight_opts *o, vb_error *err);

/* campaign.c's hook, in prepare() before the results database is made: the checks for the campaign o runs (the
 * runtime estimate sizes its results), quiet unless one fails (a resume also says which servers' data directory it
 * checked). stored_data_dir: what the campaign's manifest records (campaign.data_dir) on a resume, else NULL. */
struct vb_campaign_opts;
int vb_preflight_campaign(const struct vb_campaign_opts *o, const vb_profile *p, const vb_plan *plan,
                          const char *stored_data_dir, vb_error *err);
/* `vbench run --check`: loads the profile and prints every check and the runtime estimate; creates nothing.
 * Returns the exit code: 0 every check passed, 1 one failed, 2 the profile could not be read. */
int vb_preflight_check_command(const struct vb_campaign_opts *o);

#endif
