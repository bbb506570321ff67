/* Where a running campaign stands in time, for `vbench status` (and its --watch): elapsed time (whole campaign and
 * this coordinator run), time since the last result, the running item's progress, and the ETA: the runtime
 * estimate of the items not done yet (manifest estimate.items, coordinator/estimate.h), scaled by how the items
 * done in this run compared with their estimate. At the end: the estimate against the truth.
 *
 * The running item's progress lives in the coordinator's memory; it writes it to OUT.d/progress (a few lines,
 * at most once a second, replaced atomically) so that `status` in another process can show it without the
 * results database being written per progress message. */
#ifndef VB_REPORT_STATUS_ETA_H
#define VB_REPORT_STATUS_ETA_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

/* work_dir: OUT.d. Writes at most once a second unless force. */
void vb_status_progress_write(const char *work_dir, const char *item, const char *stage, uint64_t done,
                              uint64_t total, double rate, int force);
/* The time lines of `status` for the campaign database db at path; live: a coordinator holds it. */
void vb_status_eta_print(sqlite3 *db, const char *path, int live, FILE *out);

#endif
