/* The deployment inventory: which hosts take part in a campaign, what each one runs, and where the keys are.
 *
 * deploy/install reads it through `vbench inventory FILE` (cli/cmd_inventory.c), so the inventory is
 * real YAML checked by the same YAML tree as the profiles, and every error says "FILE:LINE: key 'hosts[1].cores':
 * ...". An inventory names one coordinator host and any number of agent hosts; each agent host runs one agent
 * per role, with the id NAME-client or NAME-orchestrator (systemd instance vbench-agent@ID.service), so the
 * client's CPU and memory limits and its stricter sandbox never apply to the orchestrator. See
 * deploy/inventory.example.yml for the format. */
#ifndef VB_CONFIG_INVENTORY_H
#define VB_CONFIG_INVENTORY_H

#include <stddef.h>
#include <stdio.h>

#include "util/error.h"

enum { VB_ROLE_COORDINATOR = 1, VB_ROLE_CLIENT = 2, VB_ROLE_ORCHESTRATOR = 4 };

typedef struct vb_inventory_host {
    char *name;            /* [A-Za-z0-9][A-Za-z0-9._-]*, at most 48 characters, unique */
    char *address;         /* ssh target, and what agents connect to on the coordinator's host */
    char *user;            /* ssh user (default root; others need passwordless sudo there) */
    int port;              /* ssh port (default 22) */
    unsigned roles;        /* VB_ROLE_* bits */
    char *cores;           /* client: CPU list in compact form ("64-79"), NULL for all CPUs */
    char *memory;          /* client: a MemoryMax= value ("16G", "50%"), NULL for no limit */
    char **recipes;        /* orchestrator: engine recipe names, NULL-terminated; NULL means all of them */
    int line;              /* where the host's entry starts */
    int recipes_line;      /* where its recipes are written (0: not written) */
} vb_inventory_host;

typedef struct vb_inventory {
    char *source;          /* the file as named by the caller */
    char *keys_dir;        /* key directory on the installing machine; relative to the file's directory */
    char *listen;          /* coordinator --listen, e.g. tcp://0.0.0.0:5555 */
    char *connect;         /* agents' --connect; default tcp://ADDRESS:PORT of the coordinator's host */
    char *profile;         /* the profile vbench-coordinator.service runs (default smoke) */
    char *out;             /* its results database on the coordinator's host */
    vb_inventory_host *hosts;
    size_t n_hosts;
    size_t coordinator;    /* index of the coordinator's host */
} vb_inventory;

/* Reads and checks an inventory file. *out is owned by the caller (vb_inventory_destroy). Errors: domain
 * "inventory", message "PATH:LINE: key 'FIELD': problem". */
int vb_inventory_load(const char *path, vb_inventory **out, vb_error *err);
/* The same from text; source names it in messages and keys_dir stays relative as written. */
int vb_inventory_parse(const char *text, size_t len, const char *source, vb_inventory **out, vb_error *err);
void vb_inventory_destroy(vb_inventory **inv);   /* NULL-safe; nulls the caller's pointer */

/* Checks that every recipe an orchestrator host names exists as DIR/NAME.yml; the error names the line. */
int vb_inventory_check_recipes(const vb_inventory *inv, const char *dir, vb_error *err);

/* The agent id of a host's role ("NAME-client"), into buf. role is one VB_ROLE_CLIENT / VB_ROLE_ORCHESTRATOR. */
const char *vb_inventory_agent_id(const vb_inventory_host *h, unsigned role, char *buf, size_t len);

/* Writes the checked inventory as KEY=VALUE lines for deploy/install (documented in cmd_inventory.c). Values
 * never contain a newline: the parser refuses control characters in every field. */
void vb_inventory_print(const vb_inventory *inv, FILE *f);

#endif
