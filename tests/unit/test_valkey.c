/* The valkey adapter without a server (engines/valkey_docs.c, engines/resp_common.c): every command it sends,
 * compared with valkey-search's documented syntax (valkey.io's FT.CREATE, FT.SEARCH and query pages: the pure
 * vector query "*=>[KNN <K> @<field> $<parameter> [EF_RUNTIME <ef-value>]]", the hybrid one with a filter before
 * "=>", numeric ranges "@field:[min max]" with "(" for an exclusive bound and -inf; PARAMS counted as twice the
 * pairs; vectors as little-endian IEEE 754 float32; attr_count the number of names and values after it), and
 * replies shaped like the documentation's (NOCONTENT: [total, key, ...]; FT.INFO: a flat name/value array) fed
 * to the parsers through hiredis' own reply reader. No Valkey with the search module runs here: these are the
 * checks, and the engine registry says so. */
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "engines/engine.h"
#include "engines/resp_common.h"
#include "engines/valkey_docs.h"
#include "tests/tap.h"
#include "tests/unit/resp_fixture.h"


/* The index of the first argument equal to s, or -1. */
static int find_arg(const vb_resp_argv *a, const char *s) {
    for (int i = 0; i < a->argc; i++)
        if (!a->binary[i] && a->len[i] == strlen(s) && memcmp(a->argv[i], s, a->len[i]) == 0) return i;
    return -1;
}

int main(void) {
    vb_resp_argv a;
    char key[64];

    /* ---- FT.CREATE: "FT.CREATE index-name [ON HASH] [PREFIX count prefix] SCHEMA field NUMERIC
     * field VECTOR HNSW attr_count TYPE FLOAT32 DIM value DISTANCE_METRIC L2|IP|COSINE [INITIAL_CAP value]
     * [M value] [EF_CONSTRUCTION value]" */
    vb_valkey_create_cmd(&a, "vbench_idx", "vbench:", 3, VB_METRIC_ANGULAR, 16, 200, 1000);
    is_str(text(&a), "FT.CREATE vbench_idx ON HASH PREFIX 1 vbench: SCHEMA tag NUMERIC tag2 NUMERIC label NUMERIC "
                     "class NUMERIC v VECTOR HNSW 12 TYPE FLOAT32 DIM 3 DISTANCE_METRIC COSINE M 16 EF_CONSTRUCTION 200 INITIAL_CAP 1000",
           "FT.CREATE: a HASH index over the prefix, NUMERIC tag, tag2, label and class, and an HNSW FLOAT32 vector "
           "field");
    int hnsw = find_arg(&a, "HNSW");
    ok(hnsw > 0 && atoi(a.argv[hnsw + 1]) == a.argc - hnsw - 2,
       "FT.CREATE: attr_count (%s) is the number of names and values after it (%d)", hnsw > 0 ? a.argv[hnsw + 1] : "?",
       a.argc - hnsw - 2);
    int pfx = find_arg(&a, "PREFIX");
    ok(pfx > 0 && strcmp(a.argv[pfx + 1], "1") == 0 && strcmp(a.argv[pfx + 2], "vbench:") == 0,
       "FT.CREATE: PREFIX count prefix (one prefix)");
    ok(find_arg(&a, "SCHEMA") < find_arg(&a, "tag") && find_arg(&a, "ON") < find_arg(&a, "SCHEMA"),
       "FT.CREATE: ON HASH and PREFIX come before SCHEMA, the fields after it");
    is_str(vb_valkey_metric(VB_METRIC_EUCLIDEAN), "L2", "DISTANCE_METRIC for euclidean: L2");
    is_str(vb_valkey_metric(VB_METRIC_ANGULAR), "COSINE", "DISTANCE_METRIC for angular: COSINE");
    is_str(vb_valkey_metric(VB_METRIC_DOT), "IP", "DISTANCE_METRIC for dot: IP");
    ok(VB_VALKEY_EF_MAX == 4096 && VB_VALKEY_M_MAX == 512 && VB_VALKEY_DIM_MAX == 32768,
       "limits as documented: EF_RUNTIME / EF_CONSTRUCTION at most 4096, M at most 512, DIM 1..32768");
    vb_valkey_drop_cmd(&a, "vbench_idx");
    is_str(text(&a), "FT.DROPINDEX vbench_idx", "FT.DROPINDEX index-name");
    vb_valkey_info_cmd(&a, "vbench_idx");
    is_str(text(&a), "FT.INFO vbench_idx", "FT.INFO index-name");

    /* ---- rows: HSET key field value [field value]; the vector as little-endian float32 */
    float v[3] = {1.0f, 2.0f, 3.0f};
    int32_t attrs[3] = {42, 17, 3};
    vb_valkey_key("vbench:", 7, key, sizeof key);
    is_str(key, "vbench:7", "a row's key is the prefix and its id");
    vb_valkey_hset_cmd(&a, key, v, 3, attrs, NULL);
    is_str(text(&a), "HSET vbench:7 v <12 bytes> tag 42 tag2 17 label 3",
           "HSET: the vector member and the three attribute members");
    static const unsigned char le[] = {0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x40, 0x40};
    ok(a.len[3] == sizeof le && memcmp(a.argv[3], le, sizeof le) == 0,
       "HSET: [1, 2, 3] is sent as the IEEE 754 little-endian bytes 0000803F 00000040 00004040");
    vb_valkey_hset_cmd(&a, key, v, 3, NULL, NULL);
    is_str(text(&a), "HSET vbench:7 v <12 bytes>", "HSET of a row without a tag: no tag member (never passes the filter)");
    int32_t cls = 5;
    vb_valkey_hset_cmd(&a, key, v, 3, attrs, &cls);
    is_str(text(&a), "HSET vbench:7 v <12 bytes> tag 42 tag2 17 label 3 class 5",
           "HSET of a row with a class: the class member after the three attribute members");
    vb_valkey_hset_cmd(&a, key, v, 3, NULL, &cls);
    is_str(text(&a), "HSET vbench:7 v <12 bytes> class 5", "HSET of a row with a class and no tag: the class alone");
    vb_valkey_untag_cmd(&a, key);
    is_str(text(&a), "HDEL vbench:7 tag tag2 label class",
           "an upsert without a tag or a class drops the old members: HDEL key field...");
    vb_valkey_del_cmd(&a, key);
    is_str(text(&a), "DEL vbench:7", "remove: DEL key (an absent key answers 0, no error)");

    /* ---- FT.SEARCH index query [NOCONTENT] [PARAMS count name value] [LIMIT offset count] DIALECT 2 */
    vb_error serr = {0};
    vb_valkey_search_cmd(&a, "vbench_idx", v, 3, 10, 40, NULL, &serr);
    is_str(text(&a), "FT.SEARCH vbench_idx '*=>[KNN 10 @v $q EF_RUNTIME 40]' PARAMS 2 q <12 bytes> NOCONTENT LIMIT 0 10 "
                     "DIALECT 2",
           "FT.SEARCH: a pure vector query with EF_RUNTIME, the vector as a PARAM, keys only, k of them");
    int params = find_arg(&a, "PARAMS");
    ok(params > 0 && atoi(a.argv[params + 1]) == 2 && a.binary[params + 3] && a.len[params + 3] == 12,
       "FT.SEARCH: PARAMS counts names and values (2 for one pair), the value is the 12-byte vector");
    int limit = find_arg(&a, "LIMIT");
    ok(limit > 0 && strcmp(a.argv[limit + 1], "0") == 0 && strcmp(a.argv[limit + 2], "10") == 0,
       "FT.SEARCH: LIMIT 0 k (the default LIMIT 0 10 would cut k > 10)");
    vb_valkey_search_cmd(&a, "vbench_idx", v, 3, 10, 0, NULL, &serr);
    is_str(a.argv[2], "*=>[KNN 10 @v $q]", "FT.SEARCH without ef_search: no EF_RUNTIME (the index's default)");
    vb_filter range = {.kind = VB_FILTER_TAG_BELOW, .tag_below = 1000};
    vb_valkey_search_cmd(&a, "vbench_idx", v, 3, 5, 100, &range, &serr);
    is_str(a.argv[2], "(@tag:[-inf (1000])=>[KNN 5 @v $q EF_RUNTIME 100]",
           "FT.SEARCH with the filter tag < 1000: a hybrid query, a numeric range open below with an exclusive bound");
    /* valkey.io "Search - Queries": a numeric range @field:[min max] (inclusive unless "("), terms separated by a
     * space intersect; the hybrid form "(<filter>)=>[KNN ...]" */
    vb_filter eq = {.kind = VB_FILTER_LABEL_EQ, .label = 3};
    vb_valkey_search_cmd(&a, "vbench_idx", v, 3, 5, 100, &eq, &serr);
    is_str(a.argv[2], "(@label:[3 3])=>[KNN 5 @v $q EF_RUNTIME 100]",
           "FT.SEARCH equality label = 3: the inclusive numeric range [3 3]");
    vb_filter both = {.kind = VB_FILTER_AND, .tag_below = 316, .tag2_below = 317};
    vb_valkey_search_cmd(&a, "vbench_idx", v, 3, 5, 100, &both, &serr);
    is_str(a.argv[2], "(@tag:[-inf (316] @tag2:[-inf (317])=>[KNN 5 @v $q EF_RUNTIME 100]",
           "FT.SEARCH and: two ranges separated by a space (an intersection) in one group");
    vb_filter own = {.kind = VB_FILTER_CLASS_EQ, .cls = 4};
    vb_valkey_search_cmd(&a, "vbench_idx", v, 3, 5, 100, &own, &serr);
    is_str(a.argv[2], "(@class:[4 4])=>[KNN 5 @v $q EF_RUNTIME 100]",
           "FT.SEARCH class = 4: the inclusive numeric range [4 4] on the class member");
    const vb_engine_ops *vk = vb_engine_find("valkey");
    ok(vk && (vk->flags & VB_ENGINE_FILTER_EQ) && (vk->flags & VB_ENGINE_FILTER_AND) &&
           (vk->flags & VB_ENGINE_FILTER_CLASS), "valkey runs equality, and, and the class filter");

    /* ---- replies */
    int64_t ids[10];
    int n = -1;
    vb_error err = {0};
    redisReply *r = reply("*4\r\n:3\r\n$9\r\nvbench:12\r\n$8\r\nvbench:3\r\n$7\r\nother:5\r\n");
    ok(r && vb_valkey_search_ids(r, "vbench:", 10, ids, &n, &err) == VB_OK && n == 2 && ids[0] == 12 && ids[1] == 3,
       "NOCONTENT reply [total, key, key, ...]: the ids in order, a key outside the prefix skipped (%d)", n);
    ok(r && vb_valkey_search_ids(r, "vbench:", 1, ids, &n, &err) == VB_OK && n == 1 && ids[0] == 12,
       "at most k ids");
    freeReplyObject(r);
    r = reply("*1\r\n:0\r\n");
    ok(r && vb_valkey_search_ids(r, "vbench:", 10, ids, &n, &err) == VB_OK && n == 0, "an empty answer: [0]");
    freeReplyObject(r);
    r = reply("+OK\r\n");
    ok(r && vb_valkey_search_ids(r, "vbench:", 10, ids, &n, &err) == VB_ERROR && strstr(err.message, "FT.SEARCH"),
       "a reply of another shape is an error naming FT.SEARCH (%s)", err.message);
    freeReplyObject(r);

    r = reply("*18\r\n$10\r\nindex_name\r\n$10\r\nvbench_idx\r\n$8\r\nnum_docs\r\n:4000\r\n"
              "$22\r\nhash_indexing_failures\r\n:0\r\n$5\r\nstate\r\n$5\r\nready\r\n"
              "$20\r\nbackfill_in_progress\r\n:0\r\n$25\r\nbackfill_complete_percent\r\n$8\r\n1.000000\r\n"
              "$19\r\nmutation_queue_size\r\n:0\r\n$10\r\nattributes\r\n*1\r\n*6\r\n$10\r\nidentifier\r\n$1\r\nv\r\n"
              "$4\r\ntype\r\n$6\r\nVECTOR\r\n$5\r\nindex\r\n*4\r\n$8\r\ncapacity\r\n:4000\r\n$10\r\ndimensions\r\n:48\r\n"
              "$7\r\nnum_ops\r\n:0\r\n");
    vb_valkey_index_status x;
    vb_valkey_index_status_parse(r, &x);
    ok(x.ready && x.num_docs == 4000 && x.failures == 0 && x.queue == 0 && x.percent == 1.0 && x.dims == 48,
       "FT.INFO of a finished index: ready, 4000 docs, no failures, empty queue, 48 dimensions");
    freeReplyObject(r);
    r = reply("*10\r\n$5\r\nstate\r\n$11\r\nbackfilling\r\n$20\r\nbackfill_in_progress\r\n:1\r\n"
              "$25\r\nbackfill_complete_percent\r\n$8\r\n0.250000\r\n$19\r\nmutation_queue_size\r\n:17\r\n"
              "$22\r\nhash_indexing_failures\r\n:2\r\n");
    vb_valkey_index_status_parse(r, &x);
    ok(!x.ready && x.percent == 0.25 && x.queue == 17 && x.failures == 2 && x.dims == -1,
       "FT.INFO during the backfill: not ready, 25 %%, the queue and failures read, no dimensions said");
    freeReplyObject(r);
    ok(vb_valkey_index_missing("Index with name 'vbench_idx' not found") && !vb_valkey_index_missing("ERR syntax"),
       "FT.INFO's 'not found' error means no index; another error is a failure");

    /* ---- the registry: what it says about itself */
    const vb_engine_ops *ops = vb_engine_find("valkey");
    contains(ops ? ops->description : NULL, "written from the documentation; no server with the search module on this machine",
             "vbench engines: valkey says it is written from the documentation");
    ok(ops && (ops->flags & VB_ENGINE_FILTER) && vb_engine_supports_metric(ops, VB_METRIC_EUCLIDEAN) &&
       vb_engine_supports_metric(ops, VB_METRIC_DOT), "valkey: filtered search, every metric");

    /* ---- the shared layer: errors as classes, INFO fields */
    redisReply *e = reply("-LOADING Redis is loading the dataset in memory\r\n");
    int st = vb_resp_fail("valkey", NULL, e, &err, "FT.SEARCH");
    ok(st == VB_RETRY && strstr(err.message, "LOADING") && strstr(err.message, "FT.SEARCH"),
       "LOADING is VB_RETRY with the server's words (%s)", err.message);
    freeReplyObject(e);
    e = reply("-OOM command not allowed when used memory > 'maxmemory'.\r\n");
    st = vb_resp_fail("valkey", NULL, e, &err, "HSET");
    ok(st == VB_ERROR && strstr(err.message, "maxmemory reached"), "OOM is VB_ERROR with a hint (%s)", err.message);
    freeReplyObject(e);
    st = vb_resp_fail("valkey", NULL, NULL, &err, "HSET");
    ok(st == VB_RETRY && strstr(err.message, "connection lost"), "no reply: the connection is lost, VB_RETRY");
    const char *info = "# Memory\r\nused_memory:1033016\r\nused_memory_human:1008.80K\r\n";
    int found = 0;
    is_int(vb_resp_info_field(info, "used_memory", &found), 1033016, "INFO: used_memory, not used_memory_human");
    ok(found, "INFO: the field is found");
    vb_resp_info_field(info, "used", &found);
    ok(!found, "INFO: a name is matched whole");
    return done_testing();
}
