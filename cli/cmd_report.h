/* The `report` and `export` commands: argument parsing and defaults; the work is in report_html.c and export.c. */
#ifndef VB_CLI_CMD_REPORT_H
#define VB_CLI_CMD_REPORT_H

int vb_cmd_report(int argc, char **argv);
int vb_cmd_export(int argc, char **argv);

#endif
