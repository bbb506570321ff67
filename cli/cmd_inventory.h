/* `vbench inventory`: the deployment inventory checked and printed for deploy/install (cmd_inventory.c). */
#ifndef VB_CLI_CMD_INVENTORY_H
#define VB_CLI_CMD_INVENTORY_H

/* argv[0] is "inventory". Returns the exit code: 0 valid, 1 invalid inventory, 2 usage. */
int vb_cmd_inventory(int argc, char **argv);

#endif
