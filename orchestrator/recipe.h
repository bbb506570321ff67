/* Engine recipes (deploy/engines/NAME.yml): everything the orchestrator needs to run one database server from
 * its image, installed on the orchestrator's own host; the coordinator only names a recipe, it never sends a
 * command line (docs/design.md §1).
 *
 *   name: pgvector                      must equal the file name
 *   engine: pgvector                    the adapter that talks to it (engines/)
 *   image: db-trixie                    deploy/images/NAME.list, built by `vbench image build NAME`; without an
 *                                       image the commands are host paths (binaries built from a tag), the
 *                                       user a host user, and {data} is the data directory itself
 *   user: postgres                      the image's user the server runs as
 *   data_mount: /var/lib/vbench         where the data directory appears inside the image (default)
 *   packages: [postgresql-17, ...]      whose versions go into the manifest
 *   password_file: pwfile               optional: a generated password is written there before init
 *   init:                               once per data directory, when `creates` does not exist
 *     creates: data
 *     run: [[/usr/lib/postgresql/17/bin/initdb, -D, "{data}/data", ...]]
 *     template:                         optional: init.run's output is the same for every data directory of
 *       apply: [[/bin/sh, -c, "..."]]   an image and recipe, so it runs once into a template (the orchestrator's
 *                                       cache, keyed by vb_recipe_template_key) and each data directory is a
 *                                       copy of it; apply: what init bakes in that is each directory's own (the
 *                                       password), run in the copy before the start. `template: {}` when
 *                                       nothing is (docs/engines.md "Data templates")
 *   start: [/usr/lib/postgresql/17/bin/postgres, -D, "{data}/data", -c, "shared_buffers={shared_buffers}"]
 *   settings:                           derived from the budget (config/budget.h), or literal values
 *     shared_buffers: {of: memory, fraction: 0.25, unit: MiB, suffix: MB}
 *     max_parallel_maintenance_workers: {of: cpus, fraction: 0.125, min: 1}
 *   connect: {host: "{datadir}", user: postgres, password: "{password}"}   engine parameters for the clients
 *   sizes: [data]                       paths below the data directory measured for the on-disk size
 *   ready_timeout_s: 120, stop_timeout_s: 300, limit_nofile: 65536
 *   stop_signal: INT                    what stops the server cleanly (TERM by default; PostgreSQL's TERM waits for
 *                                       every client to leave, INT is its fast shutdown)
 *   build:                              how the image's own server was built, for the manifest's provenance (an
 *     package: postgresql-17-pgvector   image layer's vbench-layer.txt, see deploy/image-build, says it instead):
 *     target_isa: x86-64                the package whose version is the engine's, the ISA level its compiler
 *     flags: "..."                      targeted (x86-64, x86-64-v2/v3/v4), the flags as far as known, and
 *     runtime_dispatch: "..."           what the code picks at run time from the CPU it finds, and
 *     kernel_isa: x86-64-v4             the level its vector distance kernels reach that way (default: target_isa)
 *   port: 5432                          optional: the server's TCP port, {port}. A server whose nodes are placed
 *                                       over several orchestrator hosts (coordinator/placement.h) listens on TCP at
 *                                       the host's address, {listen} (empty otherwise), node K on port + K, and
 *                                       {host} is that address (else the data directory: a socket); one host keeps
 *                                       port for every node
 *   placed_args: [--bind-address={listen}]   optional: arguments added to start (after replica's) on a node
 *                                       placed over several orchestrator hosts, for a server whose start cannot
 *                                       say "sockets only" and "TCP at {listen}" in one template (MariaDB)
 *   replica:                            optional: how a read replica of the server is made (topology, issue 39:
 *     primary_mount: /var/lib/vbench-primary   the engine's `replicas: R`): where the primary's data directory
 *     run: [[.../pg_basebackup, ...]]    appears in the replica's units, and the commands that replace init
 *                                       for a replica node ({primary}, {primary_password}: the primary's;
 *                                       {primary_host}, {primary_port}: where the replica reaches it, the
 *                                       primary_mount socket on one host, node 0's address and port from another,
 *                                       where nothing is bound)
 *     primary_args: [--log-bin=binlog]   optional: arguments added to start on a primary that has replicas, and
 *     args: ["--server-id={server_id}"]  on each replica ({server_id}: the node's index + 1; {replication_port}:
 *                                       a free loopback TCP port kept for the primary, for engines whose
 *                                       replicas connect over TCP)
 *   shard:                              optional: for the engine's `shards: N` (issue 39), where node 0 (the router)
 *     nodes_mount: /var/lib/vbench-nodes   sees the work directory's servers/ (every node's data directory, read-only,
 *                                       so it reaches the shards' sockets); {peer_data} is a node's data directory
 *                                       as node 0 sees it (its connect key peer_host)
 *   parameters:                         choices a profile makes by naming the recipe as "NAME key=value ...":
 *     pgvector_version:                 each value may set the image, literal settings, the packages and the
 *       default: packaged               build: block (the default applies when not named)
 *       packaged: {image: db-trixie}
 *       0.8.7: {image: db-sid, settings: {pg_major: "18"}, packages: [postgresql-18, postgresql-18-pgvector],
 *               build: {package: postgresql-18-pgvector, target_isa: x86-64}}
 *
 * Templates: {data} (data_mount), {datadir} (the data directory on the host), {peer_data} (the data directory as
 * node 0 of a topology sees it: under shard.nodes_mount in an image, else {datadir}), {password}, {cpus} and
 * {memory_bytes} (the budget), {host}, {listen} and {port} (port: above), and every setting by name. An unknown name
 * in braces is an error. */
#ifndef VB_ORCHESTRATOR_RECIPE_H
#define VB_ORCHESTRATOR_RECIPE_H

#include <stddef.h>

#include "config/budget.h"
#include "util/error.h"
#include "util/kv.h"

typedef struct vb_recipe_setting {
    char *name;
    char *literal;          /* a fixed value, or NULL for a derived one */
    char of[8];             /* "memory", "shm" or "cpus" */
    double fraction, min, max;   /* max 0: no maximum */
    char unit[8];           /* memory: B, KiB, MiB, GiB (value rounded down); cpus: none */
    char suffix[8];         /* appended to the number, e.g. "MB" for PostgreSQL, "M" for MariaDB */
} vb_recipe_setting;

typedef struct vb_recipe {
    char *name, *path, *engine, *description, *image, *user, *data_mount, *password_file, *init_creates;
    char **packages;
    size_t n_packages;
    vb_recipe_setting *settings;
    size_t n_settings;
    char ***init;           /* argv lists, each NULL-terminated */
    size_t n_init;
    int init_template;      /* init.template: given: data directories are copies of a template */
    char ***template_apply; /* init.template.apply: argv lists, run in each copy */
    size_t n_template_apply;
    char **start;           /* NULL-terminated */
    vb_kv *connect;         /* templates */
    size_t n_connect;
    char **sizes;
    size_t n_sizes;
    long ready_timeout_s, stop_timeout_s, limit_nofile;
    long port;              /* the server's TCP port, 0 none (the recipe uses no {port}) */
    int stop_signal;
    char *build_package, *build_target_isa, *build_kernel_isa, *build_flags, *build_dispatch; /* build: or NULL */
    char *replica_mount;    /* replica.primary_mount, or NULL: the recipe makes no replicas */
    char ***replica_init;   /* replica.run: argv lists */
    size_t n_replica_init;
    char **replica_primary_args;   /* replica.primary_args: appended to start on a primary with replicas, or NULL */
    char **replica_args;           /* replica.args: appended to start on a replica, or NULL */
    char **placed_args;            /* placed_args: appended to start (after replica's) on a placed node, or NULL */
    char *nodes_mount;      /* shard.nodes_mount, or NULL: where node 0 sees the other nodes' data directories */
    vb_kv *params;          /* every declared parameter with the value in force ("pgvector_version" -> "0.8.7") */
    size_t n_params;
} vb_recipe;

/* Loads DIR/NAME.yml. Errors name the file and line ("deploy/engines/x.yml:7: key 'start': ..."); an unknown
 * NAME lists the recipes DIR has. NAME may be followed by parameters, "pgvector pgvector_version=0.8.7": each
 * must be declared under the recipe's `parameters:` with that value (the error lists what is). Release with
 * vb_recipe_destroy. */
int vb_recipe_load(const char *dir, const char *name, vb_recipe **out, vb_error *err);
void vb_recipe_destroy(vb_recipe **r);

/* The settings for budget b as name -> value text ("shared_buffers" -> "6144MB"), in the recipe's order.
 * Keys and values are malloc'ed; free with vb_recipe_kv_free. */
int vb_recipe_settings(const vb_recipe *r, const vb_budget *b, vb_kv **out, size_t *n, vb_error *err);
void vb_recipe_kv_free(vb_kv *kv, size_t n);

/* Replaces every {name} in tmpl with its value from vars. malloc'ed result in *out; VB_ERROR naming the
 * recipe and the unknown name. */
int vb_recipe_expand(const vb_recipe *r, const char *tmpl, const vb_kv *vars, size_t n, char **out, vb_error *err);

/* Every string of a NULL-terminated argv template (init steps, start) expanded: a NULL-terminated malloc'ed
 * array the caller frees with vb_recipe_argv_free, or NULL with err naming the unknown name. */
char **vb_recipe_expand_argv(const vb_recipe *r, char *const *tmpl, const vb_kv *vars, size_t n, vb_error *err);
void vb_recipe_argv_free(char **argv);

/* The key of the recipe's data template (init.template): 16 hex digits of the sha256 of what init.run's output
 * depends on: the recipe's name and parameters in force, image_id (the caller's words for the image: its path and
 * the key and date of its build), the user, data_mount, password_file, init.creates, and every init.run command
 * expanded with vars, in which the values each data directory has of its own ({data}, {datadir}, {password},
 * {primary}, {primary_password}) stay their names. So two campaigns of one image and recipe share a key, whatever
 * their budgets and passwords (unless init.run names a budget-derived setting), and a changed init command, user,
 * image or version makes another. VB_ERROR naming an unknown name in braces. */
int vb_recipe_template_key(const vb_recipe *r, const char *image_id, const vb_kv *vars, size_t n, char key[17],
                           vb_error *err);

/* The directory recipes are read from when none is given: $VBENCH_RECIPES, else deploy/engines beside the
 * binary's source tree (BINDIR/../deploy/engines), else /etc/vbench/engines. */
const char *vb_recipe_default_dir(char *buf, size_t len);

#endif
