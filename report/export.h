/* `vbench export`: the results database in forms other tools read. csv (one file per result view, RFC 4180),
 * json (one document: manifest, profile, every result row), annb (ann-benchmarks' HDF5 result layout) and
 * bundle (a .tar.gz with the database, the report, the exports, the profile and a README). */
#ifndef VB_REPORT_EXPORT_H
#define VB_REPORT_EXPORT_H

#include "util/error.h"

/* FORMAT one of csv, json, annb, bundle; writes into DIR (made when missing). */
int vb_export(const char *db_path, const char *format, const char *dir, int quiet, vb_error *err);

#endif
