/* `vbench inventory FILE`: checks a deployment inventory and prints it resolved, for deploy/install.
 *
 * Why a subcommand and not a YAML reader in the install script: the inventory is real YAML (comments, quoting,
 * flow lists), Debian 12 has no YAML tool in its base system and pip is not an option, and the profile checker's
 * YAML tree (config/yaml_tree.c, libyaml) already gives every node its line, so a bad inventory is reported as
 * "FILE:LINE: key 'hosts[1].cores': ..." exactly like a bad profile. The install script needs bin/vbench anyway,
 * since it copies it to every host.
 *
 * Output, one KEY=VALUE per line (values never hold a newline; the checker refuses control characters):
 *   inventory keys listen connect profile out coordinator      once, in this order
 *   host=NAME                                                   per host, in inventory order, followed by
 *   NAME.line NAME.address NAME.user NAME.port NAME.roles       roles: comma-separated
 *   NAME.agents                                                 agent ids (NAME-client, NAME-orchestrator)
 *   NAME.cores NAME.memory NAME.recipes                         empty when not set; recipes "*": all */
#include "cli/cmd_inventory.h"

#include <getopt.h>
#include <stdio.h>

#include "config/inventory.h"

static const char *usage_inventory =
    "usage: vbench inventory FILE [--recipes DIR]\n"
    "\n"
    "Checks a deployment inventory (see deploy/inventory.example.yml) and prints it resolved, one KEY=VALUE per\n"
    "line: defaults filled in, the key directory made absolute, an agent id per role. deploy/install reads this.\n"
    "\n"
    "  --recipes DIR        also check that every recipe an orchestrator host names exists as DIR/NAME.yml\n"
    "\n"
    "exit code: 0 valid, 1 invalid (the message names file, line and key), 2 usage\n";

int vb_cmd_inventory(int argc, char **argv) {
    static const struct option opts[] = {{"recipes", required_argument, 0, 'r'}, {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *recipes = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'r': recipes = optarg; break;
        case 'h': fputs(usage_inventory, stdout); return 0;
        default: fputs(usage_inventory, stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fputs(usage_inventory, stderr);
        return 2;
    }
    vb_inventory *inv = NULL;
    vb_error err;
    if (vb_inventory_load(argv[optind], &inv, &err) != VB_OK ||
        (recipes && vb_inventory_check_recipes(inv, recipes, &err) != VB_OK)) {
        fprintf(stderr, "vbench: %s\n", err.message);
        vb_inventory_destroy(&inv);
        return 1;
    }
    vb_inventory_print(inv, stdout);
    vb_inventory_destroy(&inv);
    return fflush(stdout) == 0 ? 0 : 1;
}
