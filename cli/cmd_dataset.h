/* `vbench dataset fetch | list | convert`: the dataset registry on the command line (cmd_dataset.c). */
#ifndef VB_CLI_CMD_DATASET_H
#define VB_CLI_CMD_DATASET_H

/* argv[0] is "dataset". Returns the exit code: 0 done, 1 failed or refused, 2 usage, 3 a download broke off
 * (its .part is kept: the same command resumes it). */
int vb_cmd_dataset(int argc, char **argv);

#endif
