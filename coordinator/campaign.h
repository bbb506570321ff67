/* Running a campaign: plan -> agents -> results database, for `vbench run` and `vbench resume`.
 *
 * The coordinator binds a ZeroMQ ROUTER, starts the local agents as separate processes (local mode: the same
 * protocol as several hosts, over ipc://), and hands out the plan's items one at a time in plan order, so no two
 * measurements overlap. Each agent is tracked by an explicit state machine (campaign.c: agent_on). Every result
 * is committed before it is acknowledged; the plan table is the checkpoint that resume continues from. */
#ifndef VB_COORDINATOR_CAMPAIGN_H
#define VB_COORDINATOR_CAMPAIGN_H

#include "util/error.h"

typedef struct vb_campaign_opts {
    const char *profile;       /* run: profile name or path */
    const char *engines;       /* run: comma-separated subset of the profile's engines, or NULL */
    const char *out;           /* results database path */
    int resume;                /* continue the campaign in `out` */
    int retry_failed;          /* resume: run failed and skipped items again */
    const char *agent_bin;     /* vbench-agent executable for local agents */
    const char *agent_cpus;    /* CPU list for the local client agent, or NULL for all */
    const char *cache_dir;     /* dataset / ground-truth cache */
    const char *mirror;        /* where registry datasets are fetched from (--mirror), or NULL: the publishers */
    int no_fetch;              /* --no-fetch: a registry dataset missing from the cache is an error */
    const char *command_line;  /* for the manifest */
    int quiet;                 /* no progress line, no tables at the end */
    /* The local orchestrator agent (started when a selected engine has a recipe). NULL: its defaults. */
    const char *recipes_dir;   /* engine recipes (deploy/engines) */
    const char *images_dir;    /* engine images (/var/cache/vbench/images) */
    const char *bus_address;   /* systemd's D-Bus address */
    const char *listen;        /* also listen here for agents on other hosts (tcp://ADDR:PORT), or NULL */
    const char *cert;          /* the coordinator's secret certificate (vbench keys NAME -> NAME.key), or NULL */
    const char *allow_dir;     /* directory of the agents' .pub files (the allow-list), or NULL */
    int no_local_agents;       /* start no local agent: every agent comes from another host (needs listen) */
    const char *notify;        /* --notify CMD (else the profile's notify.command), or NULL */
    int check_only;            /* run --check: the preflight and the estimate, nothing created */
    unsigned mode;             /* run: the results database's mode (0: 0600; its new directory gets r -> x) */
    int probe_mode;            /* vb_probe_mode (coordinator/calibrate.h): --probe 1, --no-probe 2, else 0 (auto) */
    const char *data_dir;      /* --data-dir: the local agents' working directory (servers' data directories, engine
                                * files, outbox), on any file system; NULL: FILE.d, or on resume the stored one */
} vb_campaign_opts;

/* Returns the process exit code: 0 all items done, 1 some failed, 2 interrupted or incomplete.
 * Returns -1 with err set when the campaign could not start (bad profile, database exists, ...). */
int vb_campaign_run(const vb_campaign_opts *o, vb_error *err);

#endif
