/* The redis adapter's commands and reply parsing without a server (engines/redis_vset.c, engines/resp_common.c):
 * the exact shape of VADD, VSETATTR, VREM, VSIM and VINFO as redis.io documents them
 *     VADD key [REDUCE dim] (FP32 | VALUES num) vector element [CAS] [NOQUANT | Q8 | BIN] [EF build-exploration-
 *          factor] [SETATTR attributes] [M numlinks]
 *     VSIM key (ELE | FP32 | VALUES num) (vector | element) [WITHSCORES] [COUNT num] [EF search-exploration-factor]
 *          [FILTER expression] [FILTER-EF max-filtering-effort] [TRUTH] [NOTHREAD]
 * (the options in any order after the element / the vector; trixie's redis-server 8.0.2 takes these exact bytes:
 * tests/e2e/63-conformance.t and 64-redis.t), replies as the server sends them fed through hiredis' own reader,
 * INFO commandstats as 8.0.2 writes it, the pipeline's reply accounting and the engine's parameters and metric. */
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "engines/engine.h"
#include "engines/redis_vset.h"
#include "engines/resp_common.h"
#include "tests/tap.h"
#include "tests/unit/resp_fixture.h"

/* A server that has gone (SHUTDOWN, a killed unit) while the client still holds its connection: a real Unix socket
 * whose listener accepts the connection and closes it at once. Writing to it must fail the call, not raise SIGPIPE
 * (whose default would kill the agent with every result it holds): engines/resp_common.c ignores the signal. The
 * test process keeps SIGPIPE's default, so without that the program dies here and the test fails. */
static void test_server_gone(void) {
    char dir[] = "/tmp/vb-test-redis.XXXXXX", path[64];
    if (!mkdtemp(dir)) {
        ok(0, "a scratch directory");
        return;
    }
    snprintf(path, sizeof path, "%s/gone.sock", dir);
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(l, 1) != 0) {
        ok(0, "a listening socket at %s", path);
        return;
    }
    signal(SIGPIPE, SIG_DFL);
    vb_kv kv[] = {{"socket", path}};
    vb_engine_config cfg = {kv, 1, NULL, 0};
    vb_resp_addr addr;
    vb_error err = {0};
    redisContext *rc = NULL;
    ok(vb_resp_addr_read(&addr, "redis", &cfg, &err) == VB_OK && vb_resp_dial(&addr, &rc, &err) == VB_OK,
       "connected to the socket (%s)", err.message);
    int c = accept(l, NULL, NULL);
    close(c);   /* the server goes */
    int st = VB_OK;
    for (int i = 0; rc && i < 3 && st == VB_OK; i++) {   /* the first write may land before the close is seen */
        vb_resp_argv a;
        vb_resp_argv_init(&a);
        vb_resp_arg(&a, "PING");
        st = vb_resp_do("redis", rc, &a, &err, "PING");
    }
    ok(rc && st != VB_OK, "a command to a server that has gone fails the call, the process lives on (%s)", err.message);
    if (rc) redisFree(rc);
    close(l);
    unlink(path);
    rmdir(dir);
}

int main(void) {
    test_server_gone();
    vb_resp_argv a;
    float v[2] = {1.0f, -2.0f};
    int32_t attrs[3] = {7, 42, 3};
    char el[24];
    vb_vset_element(123, el, sizeof el);
    is_str(el, "123", "an element is the row id in decimal");

    /* ---- VADD */
    vb_vset_add_opts o = {.quant = VB_VSET_Q8, .ef_construction = 200, .m = 16, .cas = 0};
    vb_vset_add_cmd(&a, "vb", v, 2, el, &o, attrs, NULL);
    is_str(text(&a), "VADD vb FP32 <8 bytes> 123 Q8 EF 200 M 16 SETATTR {\"tag\":7,\"tag2\":42,\"label\":3}",
           "VADD: FP32 blob, the element, the quantization, EF, M and tag, tag2 and label as top-level JSON attributes");
    static const unsigned char le[] = {0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0xC0};
    ok(a.binary[3] && a.len[3] == 8 && memcmp(a.argv[3], le, 8) == 0,
       "VADD: FP32 is the little-endian float32 bytes of [1, -2]");
    o.quant = VB_VSET_NOQUANT, o.cas = 1;
    vb_vset_add_cmd(&a, "vb", v, 2, el, &o, NULL, NULL);
    is_str(text(&a), "VADD vb FP32 <8 bytes> 123 CAS NOQUANT EF 200 M 16",
           "VADD with CAS and NOQUANT; a row without a tag gets no SETATTR");
    o = (vb_vset_add_opts){.quant = VB_VSET_BIN};
    vb_vset_add_cmd(&a, "vb", v, 2, el, &o, NULL, NULL);
    is_str(text(&a), "VADD vb FP32 <8 bytes> 123 BIN", "VADD BIN with the server's EF and M (0: not sent)");
    int32_t cls = 5;
    vb_vset_add_cmd(&a, "vb", v, 2, el, &o, attrs, &cls);
    is_str(text(&a), "VADD vb FP32 <8 bytes> 123 BIN SETATTR {\"tag\":7,\"tag2\":42,\"label\":3,\"class\":5}",
           "VADD of a row with a class: class joins the JSON attributes");
    vb_vset_add_cmd(&a, "vb", v, 2, el, &o, NULL, &cls);
    is_str(text(&a), "VADD vb FP32 <8 bytes> 123 BIN SETATTR {\"class\":5}",
           "VADD of a row with a class and no tag: the class alone");
    vb_vset_untag_cmd(&a, "vb", el);
    is_str(text(&a), "VSETATTR vb 123 ''", "an upsert without a tag: VSETATTR key element \"\" drops the attribute");
    vb_vset_rem_cmd(&a, "vb", el);
    is_str(text(&a), "VREM vb 123", "remove: VREM key element");

    /* ---- VSIM */
    vb_error serr = {0};
    vb_vset_sim_opts s = {.ef_search = 40};
    vb_vset_sim_cmd(&a, "vb", v, 2, 10, &s, &serr);
    is_str(text(&a), "VSIM vb FP32 <8 bytes> COUNT 10 EF 40", "VSIM: FP32 query, COUNT k, EF ef_search");
    vb_filter range = {.kind = VB_FILTER_TAG_BELOW, .tag_below = 1000}, r5 = {.kind = VB_FILTER_TAG_BELOW, .tag_below = 5};
    s = (vb_vset_sim_opts){.ef_search = 100, .filter = &range, .filter_ef = 5000, .nothread = 1};
    vb_vset_sim_cmd(&a, "vb", v, 2, 10, &s, &serr);
    is_str(text(&a), "VSIM vb FP32 <8 bytes> COUNT 10 EF 100 FILTER '.tag < 1000' FILTER-EF 5000 NOTHREAD",
           "VSIM with the tag filter as an expression, FILTER-EF and NOTHREAD");
    ok(a.len[9] == strlen(".tag < 1000") && !a.binary[9], "the filter expression is one argument");
    s = (vb_vset_sim_opts){.filter = &r5};
    vb_vset_sim_cmd(&a, "vb", v, 2, 3, &s, &serr);
    is_str(text(&a), "VSIM vb FP32 <8 bytes> COUNT 3 FILTER '.tag < 5'",
           "VSIM without ef_search or FILTER-EF: the server's defaults");
    /* redis.io "Filter expressions": comparison ==, logical and (or &&), dot notation for top-level fields */
    vb_filter eq = {.kind = VB_FILTER_LABEL_EQ, .label = 3};
    s = (vb_vset_sim_opts){.ef_search = 40, .filter = &eq};
    vb_vset_sim_cmd(&a, "vb", v, 2, 10, &s, &serr);
    is_str(text(&a), "VSIM vb FP32 <8 bytes> COUNT 10 EF 40 FILTER '.label == 3'", "VSIM equality: .label == L");
    vb_filter both = {.kind = VB_FILTER_AND, .tag_below = 316, .tag2_below = 317};
    s = (vb_vset_sim_opts){.ef_search = 40, .filter = &both};
    vb_vset_sim_cmd(&a, "vb", v, 2, 10, &s, &serr);
    is_str(text(&a), "VSIM vb FP32 <8 bytes> COUNT 10 EF 40 FILTER '.tag < 316 and .tag2 < 317'",
           "VSIM and: two comparisons joined by and, one argument");
    vb_filter own = {.kind = VB_FILTER_CLASS_EQ, .cls = 4};
    s = (vb_vset_sim_opts){.ef_search = 40, .filter = &own};
    vb_vset_sim_cmd(&a, "vb", v, 2, 10, &s, &serr);
    is_str(text(&a), "VSIM vb FP32 <8 bytes> COUNT 10 EF 40 FILTER '.class == 4'", "VSIM class: .class == C");
    vb_filter none = {.kind = VB_FILTER_NONE};
    s = (vb_vset_sim_opts){.ef_search = 40, .filter = &none};
    vb_vset_sim_cmd(&a, "vb", v, 2, 10, &s, &serr);
    is_str(text(&a), "VSIM vb FP32 <8 bytes> COUNT 10 EF 40", "a filter of kind none sends no FILTER");
    vb_vset_info_cmd(&a, "vb");
    is_str(text(&a), "VINFO vb", "VINFO key");
    vb_vset_members_cmd(&a, "vb", 2700);
    is_str(text(&a), "VRANDMEMBER vb 2700", "members: VRANDMEMBER key count (count = VCARD: every element once)");
    vb_vset_emb_cmd(&a, "vb", "123");
    is_str(text(&a), "VEMB vb 123", "vector: VEMB key element");

    /* ---- quantization words */
    vb_vset_quant q;
    vb_error err = {0};
    ok(vb_vset_quant_parse("noquant", &q, &err) == VB_OK && q == VB_VSET_NOQUANT, "quantization noquant");
    ok(vb_vset_quant_parse("bf16", &q, &err) == VB_ERROR && strstr(err.message, "q8, noquant or bin"),
       "an unknown quantization names the accepted ones (%s)", err.message);
    ok(strcmp(vb_vset_quant_type(VB_VSET_Q8), "int8") == 0 && strcmp(vb_vset_quant_type(VB_VSET_NOQUANT), "f32") == 0 &&
       strcmp(vb_vset_quant_type(VB_VSET_BIN), "bin") == 0, "VINFO's quant-type for q8 / noquant / bin: int8 / f32 / bin");

    /* ---- replies, as 8.0.2 sends them */
    int64_t ids[10];
    int n = -1;
    redisReply *r = reply("*3\r\n$2\r\n17\r\n$1\r\n3\r\n$4\r\n4096\r\n");
    ok(r && vb_vset_sim_ids(r, 10, ids, &n, &err) == VB_OK && n == 3 && ids[0] == 17 && ids[1] == 3 && ids[2] == 4096,
       "VSIM's reply: the elements, most similar first, as ids");
    ok(r && vb_vset_sim_ids(r, 2, ids, &n, &err) == VB_OK && n == 2, "at most k ids");
    freeReplyObject(r);
    r = reply("*0\r\n");
    ok(r && vb_vset_sim_ids(r, 10, ids, &n, &err) == VB_OK && n == 0, "VSIM of a missing key or no match: []");
    freeReplyObject(r);
    r = reply("*1\r\n$5\r\napple\r\n");
    ok(r && vb_vset_sim_ids(r, 10, ids, &n, &err) == VB_ERROR && strstr(err.message, "apple"),
       "an element that is not a row id is an error naming it (%s)", err.message);
    freeReplyObject(r);
    float emb[3];
    r = reply("*3\r\n$19\r\n0.18208661675453186\r\n$4\r\n-2.5\r\n$1\r\n0\r\n");
    ok(r && vb_vset_emb_parse(r, "7", emb, 3, &err) == VB_OK && emb[0] == 0.18208661675453186f && emb[1] == -2.5f &&
       emb[2] == 0.0f, "VEMB's reply: the vector's numbers as bulk strings");
    ok(r && vb_vset_emb_parse(r, "7", emb, 2, &err) == VB_ERROR && strstr(err.message, "VEMB 7") &&
       strstr(err.message, "3 values, want 2"), "VEMB: another length than the key's dimension is an error (%s)",
       err.message);
    freeReplyObject(r);
    r = reply("*2\r\n$3\r\n1.5\r\n$4\r\nnan-\r\n");
    ok(r && vb_vset_emb_parse(r, "9", emb, 2, &err) == VB_ERROR && strstr(err.message, "value 1"),
       "VEMB: a value that is not a number is an error naming it (%s)", err.message);
    freeReplyObject(r);
    r = reply("$-1\r\n");
    ok(r && vb_vset_emb_parse(r, "9", emb, 2, &err) == VB_ERROR && strstr(err.message, "not an array"),
       "VEMB of a missing element (nil) is an error (%s)", err.message);
    freeReplyObject(r);
    r = reply("*18\r\n$10\r\nquant-type\r\n$4\r\nint8\r\n$6\r\nhnsw-m\r\n:16\r\n$10\r\nvector-dim\r\n:3\r\n"
              "$20\r\nprojection-input-dim\r\n:0\r\n$4\r\nsize\r\n:2\r\n$9\r\nmax-level\r\n:0\r\n"
              "$16\r\nattributes-count\r\n:2\r\n$8\r\nvset-uid\r\n:0\r\n$17\r\nhnsw-max-node-uid\r\n:2\r\n");
    vb_vset_info x;
    vb_vset_info_parse(r, &x);
    ok(x.exists && strcmp(x.quant_type, "int8") == 0 && x.m == 16 && x.dim == 3 && x.size == 2,
       "VINFO: quant-type int8, hnsw-m 16, vector-dim 3, size 2");
    freeReplyObject(r);
    r = reply("$-1\r\n");
    vb_vset_info_parse(r, &x);
    ok(!x.exists && x.m == -1, "VINFO of a missing key: nil");
    freeReplyObject(r);
    const char *stats = "# Commandstats\r\ncmdstat_ping:calls=1,usec=10,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n"
                        "cmdstat_VADD:calls=2000,usec=81,usec_per_call=40.50,rejected_calls=0,failed_calls=0\r\n"
                        "cmdstat_VSIM:calls=312,usec=573,usec_per_call=286.50,rejected_calls=0,failed_calls=1\r\n"
                        "cmdstat_vsimx:calls=9\r\n";
    is_int(vb_resp_cmdstat_calls(stats, "vsim"), 312, "INFO commandstats: VSIM's calls (8.0.2 writes cmdstat_VSIM)");
    is_int(vb_resp_cmdstat_calls(stats, "vadd"), 2000, "INFO commandstats: VADD's calls");
    is_int(vb_resp_cmdstat_calls(stats, "vrem"), 0, "a command never called has no line: 0");
    is_int(vb_resp_cmdstat_field(stats, "vsim", "usec"), 573, "INFO commandstats: VSIM's usec");
    is_int(vb_resp_cmdstat_field(stats, "vsim", "failed_calls"), 1, "a field named as a whole (failed_calls, not calls)");
    is_int(vb_resp_cmdstat_field(stats, "vsim", "sec"), 0, "a field matched as a whole name: no 'sec' in usec");
    is_int(vb_resp_cmdstat_field(stats, "ping", "usec"), 10, "the field of the command's own line (ping's usec)");
    is_int(vb_resp_cmdstat_field(stats, "vsimx", "usec"), 0, "a line without the field: 0");
    char ver[32];
    ok(vb_resp_info_text("# Server\r\nredis_version:8.0.2\r\nredis_git_sha1:00000000\r\n", "redis_version", ver,
                         sizeof ver) && strcmp(ver, "8.0.2") == 0, "INFO server: redis_version 8.0.2");

    /* ---- the registry */
    const vb_engine_ops *ops = vb_engine_find("redis");
    ok(ops && (ops->flags & VB_ENGINE_FILTER_EQ) && (ops->flags & VB_ENGINE_FILTER_AND), "redis runs equality and and");
    ok(ops && (ops->flags & VB_ENGINE_FILTER) && (ops->flags & VB_ENGINE_BUILD_ON_INSERT) && ops->counters &&
       ops->insert && ops->remove && ops->rows, "redis: filtered search, the graph grows on VADD, server counters, churn, its rows listed");
    ok(ops && vb_engine_supports_metric(ops, VB_METRIC_ANGULAR) && !vb_engine_supports_metric(ops, VB_METRIC_EUCLIDEAN) &&
       !vb_engine_supports_metric(ops, VB_METRIC_DOT), "redis: cosine (angular) only");
    vb_kv bad[] = {{"quantization", "int4"}};
    vb_engine_config cfg = {bad, 1, NULL, 0};
    vb_engine *e = NULL;
    ok(vb_engine_open("redis", &cfg, &e, &err) == VB_ERROR && strstr(err.message, "int4"),
       "open refuses an unknown quantization (%s)", err.message);
    vb_kv good[] = {{"socket", "/nonexistent/redis.sock"}, {"quantization", "bin"}, {"m", "8"}, {"cas", "1"},
                    {"nothread", "1"}, {"table", "vb_redis_q_bin"}};
    cfg = (vb_engine_config){good, 6, NULL, 0};
    ok(vb_engine_open("redis", &cfg, &e, &err) == VB_OK, "open takes the configuration axes without a server");
    vb_table_spec spec = {.dim = 8, .metric = VB_METRIC_EUCLIDEAN, .capacity = 10, .m = 16, .ef_construction = 64};
    int rc = e ? vb_engine_create(e, &spec, &err) : VB_OK;
    ok(rc == VB_ERROR && strstr(err.message, "cosine") && strstr(err.message, "euclidean"),
       "create refuses a euclidean table before it connects, naming the metric (%s)", err.message);
    spec.metric = VB_METRIC_ANGULAR;
    rc = e ? vb_engine_create(e, &spec, &err) : VB_OK;
    ok(rc == VB_RETRY && strstr(err.message, "/nonexistent/redis.sock"),
       "no server at the socket: VB_RETRY naming it (%s)", err.message);
    vb_engine_close(&e);
    return done_testing();
}
