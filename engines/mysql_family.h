/* The MySQL-protocol engines (engines/mysql_family.c): one adapter over MariaDB Connector/C with three dialects.
 *
 *   mariadb  MariaDB 11.8+ MHNSW (VECTOR(d) column, VECTOR INDEX ... M= DISTANCE=, mhnsw_ef_search). Verified
 *            against a real MariaDB 11.8 by tests/e2e/63-conformance.t.
 *   alisql   AliSQL 8.0 VIDX (same DDL shape as MariaDB, vidx_hnsw_ef_search, vidx_hnsw_cache_size). Statements
 *            written from its documentation only; not verified against a server here.
 *   doris    Apache Doris 4.0 ANN index (ARRAY<FLOAT> column, INDEX ... USING ANN PROPERTIES(...),
 *            l2_distance_approximate / inner_product_approximate, hnsw_ef_search). Statements written from its
 *            documentation only; not verified against a server here. Bulk data goes through multi-row INSERT
 *            (stream load is an HTTP PUT to the frontend and is not implemented).
 *
 * The statement builders below are pure functions (no server), so tests/unit/test_mysql_dialects.c compares the
 * SQL each dialect generates with the documentation's syntax. Each writes a NUL-terminated statement into buf
 * and returns VB_OK, or VB_ERROR when it does not fit or the dialect cannot express the request. */
#ifndef VB_ENGINES_MYSQL_FAMILY_H
#define VB_ENGINES_MYSQL_FAMILY_H

#include <stddef.h>

#include "engines/engine.h"

typedef enum { VB_MYSQL_MARIADB = 0, VB_MYSQL_ALISQL = 1, VB_MYSQL_DORIS = 2 } vb_mysql_dialect;

const char *vb_mysql_dialect_name(vb_mysql_dialect d);

/* CREATE TABLE with the vector index for spec (dim, metric, m, ef_construction where the dialect has it). */
int vb_mysql_sql_create(vb_mysql_dialect d, const char *table, const vb_table_spec *spec, char *buf, size_t len,
                        vb_error *err);
int vb_mysql_sql_drop(vb_mysql_dialect d, const char *table, char *buf, size_t len, vb_error *err);
/* The kNN query, filter NULL or VB_FILTER_NONE for none. MariaDB / AliSQL: prepared, the filter's bounds then
 * the vector as `?` (range WHERE tag < ?, equality WHERE label = ?, and WHERE tag < ? AND tag2 < ?); query is
 * ignored and may be NULL. Doris: the query vector and the filter are written into the statement as literals
 * (query required, dim floats). */
int vb_mysql_sql_search(vb_mysql_dialect d, const char *table, vb_metric metric, int k, const vb_filter *filter,
                        const float *query, size_t dim, char *buf, size_t len, vb_error *err);
/* The session setting for the search width. */
int vb_mysql_sql_set_ef(vb_mysql_dialect d, int ef, char *buf, size_t len, vb_error *err);
/* The global cache setting, bytes; VB_ERROR for a dialect without one (Doris). */
int vb_mysql_sql_set_cache(vb_mysql_dialect d, long long bytes, char *buf, size_t len, vb_error *err);
/* DELETE of n ids: placeholders for MariaDB / AliSQL (ids ignored), literals for Doris (ids required). */
int vb_mysql_sql_delete(vb_mysql_dialect d, const char *table, const int64_t *ids, size_t n, char *buf,
                        size_t len, vb_error *err);
/* Prepared multi-row upsert of n rows (id, tag, tag2, label, v) with `?` placeholders (MariaDB / AliSQL only). */
int vb_mysql_sql_insert(vb_mysql_dialect d, const char *table, size_t n, char *buf, size_t len, vb_error *err);

#endif
