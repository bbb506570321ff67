/* What the RESP adapters' unit tests share (test_redis.c, test_valkey.c): a server reply made from its RESP bytes
 * by hiredis' own reader, and the text of a built command. Header-only: each test is one program. */
#ifndef VB_TESTS_RESP_FIXTURE_H
#define VB_TESTS_RESP_FIXTURE_H

#include <hiredis/hiredis.h>
#include <string.h>

#include "engines/resp_common.h"

/* A reply from its RESP bytes, as the server would send it (freeReplyObject by the caller); NULL if malformed. */
static inline redisReply *reply(const char *resp) {
    redisReader *r = redisReaderCreate();
    void *out = NULL;
    redisReaderFeed(r, resp, strlen(resp));
    if (redisReaderGetReply(r, &out) != REDIS_OK) out = NULL;
    redisReaderFree(r);
    return out;
}

/* The command as text, in a static buffer (the next call overwrites it). */
static inline const char *text(const vb_resp_argv *a) {
    static char buf[1024];
    return vb_resp_argv_text(a, buf, sizeof buf);
}

#endif
