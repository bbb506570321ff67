/* The result views (results.db/views.sql, compiled in), installed into a database connection. */
#ifndef VB_COORDINATOR_VIEWS_H
#define VB_COORDINATOR_VIEWS_H

#include <sqlite3.h>

#include "util/error.h"

/* temp = 0: drops and recreates the views in the file (writable connection).
 * temp = 1: creates them as TEMP views, which shadow whatever an older file holds (read-only connection). */
int vb_views_install(sqlite3 *db, int temp, vb_error *err);

#endif
