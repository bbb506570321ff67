/* The coordinator's footprint event (coordinator/footprint.c) on a real results database: the first tick records
 * one event of kind "footprint" with its key=value words (pid, RSS, heap, SQLite's part and its cache limit, the
 * database's size), a tick before every_s has passed records nothing, and every_s 0 records nothing ever. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coordinator/footprint.h"
#include "store/store.h"
#include "tests/tap.h"

static long long count(vb_store *s) {
    sqlite3_stmt *st = NULL;
    long long n = -1;
    if (sqlite3_prepare_v2(vb_store_db(s), "SELECT COUNT(*) FROM event WHERE kind = 'footprint'", -1, &st, NULL) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* The value of key=N in the newest footprint message, -1 when it is not there. */
static long long word(vb_store *s, const char *key) {
    sqlite3_stmt *st = NULL;
    long long v = -1;
    char pat[64];
    snprintf(pat, sizeof pat, " %s=", key);
    if (sqlite3_prepare_v2(vb_store_db(s), "SELECT message FROM event WHERE kind = 'footprint' ORDER BY id DESC LIMIT 1",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        const char *m = (const char *)sqlite3_column_text(st, 0), *at = m ? strstr(m, pat) : NULL;
        if (at) v = atoll(at + strlen(pat));
    }
    sqlite3_finalize(st);
    return v;
}

int main(void) {
    char dir[] = "/tmp/vb-test-footprint.XXXXXX", path[128];
    if (!mkdtemp(dir)) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    snprintf(path, sizeof path, "%s/r.sqlite", dir);
    vb_store *s = NULL;
    vb_error err;
    if (vb_store_open(path, 1, &s, &err) != VB_OK) {
        printf("Bail out! %s\n", err.message);
        return 1;
    }
    vb_footprint f;
    vb_footprint_init(&f, 3600);
    vb_footprint_tick(&f, s);
    is_int(count(s), 1, "the first tick records one footprint event");
    is_int(word(s, "pid"), getpid(), "with this process's pid");
    /* the heap is glibc's account (mallinfo2): under valgrind, whose allocator replaces glibc's, it says 0 here too */
    struct mallinfo2 mi = mallinfo2();
    int glibc = mi.uordblks + mi.hblkhd > 0;
    ok(word(s, "rss_kb") > 0 && (word(s, "heap_kb") > 0) == glibc, "its RSS and heap (%lld kB, %lld kB%s)",
       word(s, "rss_kb"), word(s, "heap_kb"), glibc ? "" : ": not glibc's allocator");
    ok(word(s, "sqlite_kb") > 0 && (!glibc || word(s, "sqlite_kb") <= word(s, "heap_kb")),
       "SQLite's part of the heap (%lld kB)", word(s, "sqlite_kb"));
    ok(word(s, "sqlite_cache_max_kb") > 0, "SQLite's page cache limit (%lld kB)", word(s, "sqlite_cache_max_kb"));
    ok(word(s, "db_kb") > 0, "and the results database's size (%lld kB)", word(s, "db_kb"));
    vb_footprint_tick(&f, s);
    is_int(count(s), 1, "a tick before every_s has passed records nothing");
    vb_footprint_init(&f, 0);
    vb_footprint_tick(&f, s);
    is_int(count(s), 1, "every_s 0: never");
    vb_store_close(&s);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("#   could not remove %s\n", dir);
    return done_testing();
}
