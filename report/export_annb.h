/* ann-benchmarks result files from a results database: results/DATASET/K/ALGO/NAME.hdf5 with the datasets and
 * attributes ann-benchmarks' plot.py and data_export.py read. Needs each query's answer (ids, distances, time),
 * which the recall sweep records in sweep_result.answers. */
#ifndef VB_REPORT_EXPORT_ANNB_H
#define VB_REPORT_EXPORT_ANNB_H

#include <sqlite3.h>

#include "util/error.h"

/* 1 when the sweep recorded answers, 0 when not (an older database, or answers turned off). */
int vb_export_annb_available(sqlite3 *db);
int vb_export_annb(sqlite3 *db, const char *dir, int quiet, vb_error *err);

#endif
