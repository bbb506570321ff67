/* The SQL each MySQL-family dialect generates (engines/mysql_family.c), compared with the syntax of each
 * product's documentation; no server needed. Sources (see docs/mysql-family.md):
 *   MariaDB: Vector Overview (CREATE TABLE ... VECTOR(d) NOT NULL, VECTOR INDEX (v) M=8 DISTANCE=cosine;
 *            VEC_DISTANCE_EUCLIDEAN / VEC_DISTANCE_COSINE; ORDER BY ... LIMIT) and Vector System Variables
 *            (mhnsw_ef_search session, mhnsw_max_cache_size global).
 *   AliSQL:  VIDX documentation (VECTOR INDEX vi(v) M=6 DISTANCE=cosine, EF_CONSTRUCTION=N,
 *            SET SESSION vidx_hnsw_ef_search = N, vidx_hnsw_cache_size global, READ COMMITTED).
 *   Doris:   vector search documentation (ARRAY<FLOAT> NOT NULL, INDEX ... USING ANN PROPERTIES("index_type"="hnsw",
 *            "metric_type"="l2_distance", "dim"=...), DUPLICATE KEY, l2_distance_approximate, hnsw_ef_search). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "engines/engine.h"
#include "engines/filter.h"
#include "engines/mysql_family.h"
#include "tests/tap.h"

static char buf[4096];
static vb_error err;

static void test_create(void) {
    vb_table_spec eu = {.dim = 96, .metric = VB_METRIC_EUCLIDEAN, .capacity = 1000, .m = 16, .ef_construction = 128};
    vb_table_spec an = {.dim = 3, .metric = VB_METRIC_ANGULAR, .capacity = 1000, .m = 8, .ef_construction = 64};
    ok(vb_mysql_sql_create(VB_MYSQL_MARIADB, "t", &eu, buf, sizeof buf, &err) == VB_OK, "mariadb CREATE builds");
    is_str(buf, "CREATE TABLE `t` (id BIGINT NOT NULL PRIMARY KEY, tag INT NOT NULL, tag2 INT NOT NULL, label INT NOT NULL, "
                "class INT NOT NULL, v VECTOR(96) NOT NULL, "
                "VECTOR INDEX (v) M=16 DISTANCE=euclidean) ENGINE=InnoDB",
           "mariadb CREATE TABLE euclidean");
    vb_mysql_sql_create(VB_MYSQL_MARIADB, "t", &an, buf, sizeof buf, &err);
    is_str(buf, "CREATE TABLE `t` (id BIGINT NOT NULL PRIMARY KEY, tag INT NOT NULL, tag2 INT NOT NULL, label INT NOT NULL, "
                "class INT NOT NULL, v VECTOR(3) NOT NULL, "
                "VECTOR INDEX (v) M=8 DISTANCE=cosine) ENGINE=InnoDB",
           "mariadb CREATE TABLE angular -> DISTANCE=cosine");
    vb_mysql_sql_create(VB_MYSQL_ALISQL, "t", &an, buf, sizeof buf, &err);
    is_str(buf, "CREATE TABLE `t` (id BIGINT NOT NULL PRIMARY KEY, tag INT NOT NULL, tag2 INT NOT NULL, label INT NOT NULL, "
                "class INT NOT NULL, v VECTOR(3) NOT NULL, "
                "VECTOR INDEX vi(v) M=8 DISTANCE=cosine EF_CONSTRUCTION=64) ENGINE=InnoDB",
           "alisql CREATE TABLE with a named VECTOR INDEX");
    vb_mysql_sql_create(VB_MYSQL_DORIS, "t", &eu, buf, sizeof buf, &err);
    is_str(buf, "CREATE TABLE `t` (id BIGINT NOT NULL, tag INT NOT NULL, tag2 INT NOT NULL, label INT NOT NULL, "
                "class INT NOT NULL, v ARRAY<FLOAT> NOT NULL, "
                "INDEX idx_v (v) USING ANN PROPERTIES(\"index_type\"=\"hnsw\", \"metric_type\"=\"l2_distance\", "
                "\"dim\"=\"96\", \"max_degree\"=\"16\", \"ef_construction\"=\"128\")) ENGINE=OLAP "
                "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1 PROPERTIES (\"replication_num\"=\"1\")",
           "doris CREATE TABLE with an ANN index");
    vb_mysql_sql_create(VB_MYSQL_DORIS, "t", &an, buf, sizeof buf, &err);
    contains(buf, "\"metric_type\"=\"inner_product\"", "doris angular: inner product over normalised vectors");

    vb_table_spec dot = eu;
    dot.metric = VB_METRIC_DOT;
    ok(vb_mysql_sql_create(VB_MYSQL_MARIADB, "t", &dot, buf, sizeof buf, &err) == VB_ERROR,
       "mariadb refuses the dot metric");
    contains(err.message, "metric dot is not supported", "naming the metric");
    ok(vb_mysql_sql_create(VB_MYSQL_ALISQL, "t", &dot, buf, sizeof buf, &err) == VB_ERROR, "alisql too");
    char small[32];
    ok(vb_mysql_sql_create(VB_MYSQL_MARIADB, "t", &eu, small, sizeof small, &err) == VB_ERROR,
       "a buffer too small is an error, not a truncated statement");
    vb_mysql_sql_drop(VB_MYSQL_MARIADB, "t", buf, sizeof buf, &err);
    is_str(buf, "DROP TABLE IF EXISTS `t`", "DROP TABLE");
}

static void test_search(void) {
    vb_filter range = {.kind = VB_FILTER_TAG_BELOW, .tag_below = 100};
    vb_filter eq = {.kind = VB_FILTER_LABEL_EQ, .label = 3};
    vb_filter both = {.kind = VB_FILTER_AND, .tag_below = 316, .tag2_below = 316};
    vb_filter none = {.kind = VB_FILTER_NONE};
    vb_filter cls = {.kind = VB_FILTER_CLASS_EQ, .cls = 7};
    vb_mysql_sql_search(VB_MYSQL_MARIADB, "t", VB_METRIC_EUCLIDEAN, 10, &cls, NULL, 3, buf, sizeof buf, &err);
    is_str(buf, "SELECT id FROM `t` WHERE class = ? ORDER BY VEC_DISTANCE_EUCLIDEAN(v, ?) LIMIT 10",
           "mariadb class filter: class = ? before the vector");
    vb_mysql_sql_search(VB_MYSQL_MARIADB, "t", VB_METRIC_EUCLIDEAN, 10, NULL, NULL, 3, buf, sizeof buf, &err);
    is_str(buf, "SELECT id FROM `t` ORDER BY VEC_DISTANCE_EUCLIDEAN(v, ?) LIMIT 10", "mariadb search");
    vb_mysql_sql_search(VB_MYSQL_MARIADB, "t", VB_METRIC_EUCLIDEAN, 10, &none, NULL, 3, buf, sizeof buf, &err);
    is_str(buf, "SELECT id FROM `t` ORDER BY VEC_DISTANCE_EUCLIDEAN(v, ?) LIMIT 10", "a filter of kind none is none");
    /* MariaDB's Vector Overview: WHERE on other columns with ORDER BY VEC_DISTANCE_...(v, ?) LIMIT k */
    vb_mysql_sql_search(VB_MYSQL_MARIADB, "t", VB_METRIC_EUCLIDEAN, 10, &eq, NULL, 3, buf, sizeof buf, &err);
    is_str(buf, "SELECT id FROM `t` WHERE label = ? ORDER BY VEC_DISTANCE_EUCLIDEAN(v, ?) LIMIT 10",
           "mariadb equality: label = ? before the vector");
    vb_mysql_sql_search(VB_MYSQL_MARIADB, "t", VB_METRIC_EUCLIDEAN, 10, &both, NULL, 3, buf, sizeof buf, &err);
    is_str(buf, "SELECT id FROM `t` WHERE tag < ? AND tag2 < ? ORDER BY VEC_DISTANCE_EUCLIDEAN(v, ?) LIMIT 10",
           "mariadb and: two bounds before the vector");
    vb_mysql_sql_search(VB_MYSQL_MARIADB, "t", VB_METRIC_ANGULAR, 10, &range, NULL, 3, buf, sizeof buf, &err);
    is_str(buf, "SELECT id FROM `t` WHERE tag < ? ORDER BY VEC_DISTANCE_COSINE(v, ?) LIMIT 10",
           "mariadb filtered search, cosine");
    vb_mysql_sql_search(VB_MYSQL_ALISQL, "t", VB_METRIC_EUCLIDEAN, 100, &range, NULL, 3, buf, sizeof buf, &err);
    is_str(buf, "SELECT id FROM `t` WHERE tag < ? ORDER BY VEC_DISTANCE_EUCLIDEAN(v, ?) LIMIT 100",
           "alisql filtered search");
    float q[3] = {1.0f, 0.5f, -2.0f};
    ok(vb_mysql_sql_search(VB_MYSQL_DORIS, "t", VB_METRIC_EUCLIDEAN, 10, NULL, NULL, 3, buf, sizeof buf, &err) ==
           VB_ERROR, "doris search needs the query vector");
    vb_mysql_sql_search(VB_MYSQL_DORIS, "t", VB_METRIC_EUCLIDEAN, 10, NULL, q, 3, buf, sizeof buf, &err);
    is_str(buf, "SELECT id FROM `t` ORDER BY l2_distance_approximate(v, [1,0.5,-2]) LIMIT 10", "doris search");
    vb_mysql_sql_search(VB_MYSQL_DORIS, "t", VB_METRIC_EUCLIDEAN, 10, &range, q, 3, buf, sizeof buf, &err);
    is_str(buf, "SELECT id FROM `t` WHERE tag < 100 ORDER BY l2_distance_approximate(v, [1,0.5,-2]) LIMIT 10",
           "doris filtered search");
    vb_mysql_sql_search(VB_MYSQL_DORIS, "t", VB_METRIC_EUCLIDEAN, 10, &eq, q, 3, buf, sizeof buf, &err);
    is_str(buf, "SELECT id FROM `t` WHERE label = 3 ORDER BY l2_distance_approximate(v, [1,0.5,-2]) LIMIT 10",
           "doris equality as a literal WHERE");
    vb_mysql_sql_search(VB_MYSQL_DORIS, "t", VB_METRIC_EUCLIDEAN, 10, &both, q, 3, buf, sizeof buf, &err);
    is_str(buf, "SELECT id FROM `t` WHERE tag < 316 AND tag2 < 316 ORDER BY l2_distance_approximate(v, [1,0.5,-2]) "
                "LIMIT 10",
           "doris and as a literal WHERE");
    vb_mysql_sql_search(VB_MYSQL_DORIS, "t", VB_METRIC_EUCLIDEAN, 10, &cls, q, 3, buf, sizeof buf, &err);
    is_str(buf, "SELECT id FROM `t` WHERE class = 7 ORDER BY l2_distance_approximate(v, [1,0.5,-2]) LIMIT 10",
           "doris class filter as a literal WHERE");
    float u[2] = {3.0f, 4.0f};
    vb_mysql_sql_search(VB_MYSQL_DORIS, "t", VB_METRIC_ANGULAR, 5, NULL, u, 2, buf, sizeof buf, &err);
    is_str(buf, "SELECT id FROM `t` ORDER BY inner_product_approximate(v, [0.600000024,0.800000012]) DESC LIMIT 5",
           "doris angular: normalised query, inner product descending");
}

static void test_settings(void) {
    vb_mysql_sql_set_ef(VB_MYSQL_MARIADB, 40, buf, sizeof buf, &err);
    is_str(buf, "SET SESSION mhnsw_ef_search = 40", "mariadb ef_search");
    vb_mysql_sql_set_ef(VB_MYSQL_ALISQL, 40, buf, sizeof buf, &err);
    is_str(buf, "SET SESSION vidx_hnsw_ef_search = 40", "alisql ef_search");
    vb_mysql_sql_set_ef(VB_MYSQL_DORIS, 40, buf, sizeof buf, &err);
    is_str(buf, "SET SESSION hnsw_ef_search = 40", "doris ef_search");
    vb_mysql_sql_set_cache(VB_MYSQL_MARIADB, 1LL << 30, buf, sizeof buf, &err);
    is_str(buf, "SET GLOBAL mhnsw_max_cache_size = 1073741824", "mariadb cache");
    vb_mysql_sql_set_cache(VB_MYSQL_ALISQL, 1LL << 30, buf, sizeof buf, &err);
    is_str(buf, "SET GLOBAL vidx_hnsw_cache_size = 1073741824", "alisql cache");
    ok(vb_mysql_sql_set_cache(VB_MYSQL_DORIS, 1, buf, sizeof buf, &err) == VB_ERROR, "doris has no cache setting");
}

static void test_rows(void) {
    int64_t ids[3] = {7, 8, 9};
    vb_mysql_sql_delete(VB_MYSQL_MARIADB, "t", ids, 3, buf, sizeof buf, &err);
    is_str(buf, "DELETE FROM `t` WHERE id IN (?, ?, ?)", "mariadb delete, prepared");
    vb_mysql_sql_delete(VB_MYSQL_ALISQL, "t", NULL, 2, buf, sizeof buf, &err);
    is_str(buf, "DELETE FROM `t` WHERE id IN (?, ?)", "alisql delete, prepared");
    vb_mysql_sql_delete(VB_MYSQL_DORIS, "t", ids, 3, buf, sizeof buf, &err);
    is_str(buf, "DELETE FROM `t` WHERE id IN (7, 8, 9)", "doris delete, literals");
    vb_mysql_sql_insert(VB_MYSQL_MARIADB, "t", 2, buf, sizeof buf, &err);
    is_str(buf, "INSERT INTO `t` (id, tag, tag2, label, class, v) VALUES (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?) ON "
                "DUPLICATE KEY UPDATE tag = VALUES(tag), tag2 = VALUES(tag2), label = VALUES(label), "
                "class = VALUES(class), v = VALUES(v)",
           "mariadb multi-row upsert of the four attribute columns (class too) with binary vector parameters");
    ok(vb_mysql_sql_insert(VB_MYSQL_DORIS, "t", 2, buf, sizeof buf, &err) == VB_ERROR,
       "doris rows go as literals, not prepared");
}

static void test_registry(void) {
    const vb_engine_ops *m = vb_engine_find("mariadb"), *a = vb_engine_find("alisql"), *d = vb_engine_find("doris");
    ok(m && a && d, "mariadb, alisql and doris are registered");
    if (!m || !a || !d) return;
    ok(m->flags & VB_ENGINE_BUILD_ON_INSERT, "mariadb: the graph grows on insert");
    ok(a->flags & VB_ENGINE_BUILD_ON_INSERT, "alisql: the graph grows on insert");
    unsigned all = VB_ENGINE_FILTER | VB_ENGINE_FILTER_EQ | VB_ENGINE_FILTER_AND | VB_ENGINE_FILTER_CLASS;
    ok((m->flags & all) == all && (a->flags & all) == all && (d->flags & all) == all,
       "the family runs range, equality, and and the class filter");
    ok(!strstr(m->description, "not verified"), "mariadb is not marked unverified");
    contains(a->description, "not verified against a server here", "alisql is marked unverified");
    contains(d->description, "not verified against a server here", "doris is marked unverified");
    vb_kv bad[] = {{"mhnsw_max_cache_size", "1"}};
    vb_engine_config cfg = {bad, 1, NULL, 0};
    vb_engine *e = NULL;
    ok(vb_engine_open("doris", &cfg, &e, &err) == VB_ERROR, "doris refuses a MariaDB-only parameter");
    contains(err.message, "unknown parameter \"mhnsw_max_cache_size\"", "naming it");
}

int main(void) {
    test_create();
    test_search();
    test_settings();
    test_rows();
    test_registry();
    return done_testing();
}
