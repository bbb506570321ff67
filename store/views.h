/* The result views (store/views.sql, compiled in), installed into a database connection. */
#ifndef VB_STORE_VIEWS_H
#define VB_STORE_VIEWS_H

#include <sqlite3.h>

#include "util/error.h"

/* temp = 0: drops and recreates the views in the file (writable connection).
 * temp = 1: creates them as TEMP views, which shadow whatever an older file holds (read-only connection). */
int vb_views_install(sqlite3 *db, int temp, vb_error *err);

/* Registers the SQL functions the views use on db (vb_views_install does it first): the aggregates
 * vb_median_ci_lo(x) / vb_median_ci_hi(x), the bootstrap 95 % interval of the median of x (metrics/bootstrap.h),
 * NULL below 5 values. */
int vb_views_functions(sqlite3 *db, vb_error *err);

#endif
