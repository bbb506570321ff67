/* The coordinator's own memory as an event (coordinator/footprint.h). */
#include "coordinator/footprint.h"

#include <malloc.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/clock.h"

void vb_footprint_init(vb_footprint *f, double every_s) {
    f->every_s = every_s > 0 ? every_s : 0;
    f->next_s = 0;
}

static long rss_kb(void) {
    FILE *fp = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (fp && fgets(line, sizeof line, fp))
        if (strncmp(line, "VmRSS:", 6) == 0) {
            sscanf(line + 6, "%ld", &kb);
            break;
        }
    if (fp) fclose(fp);
    return kb;
}

/* A PRAGMA's integer (cache_size: pages, or KiB when negative; page_size; page_count). */
static long long pragma(sqlite3 *db, const char *sql) {
    sqlite3_stmt *q = NULL;
    long long v = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

void vb_footprint_tick(vb_footprint *f, vb_store *s) {
    if (f->every_s <= 0 || !s) return;
    double now = (double)vb_now_ns() / 1e9;
    if (now < f->next_s) return;
    f->next_s = now + f->every_s;
    struct mallinfo2 mi = mallinfo2();
    sqlite3 *db = vb_store_db(s);
    long long page = pragma(db, "PRAGMA page_size"), cache = pragma(db, "PRAGMA cache_size");
    long long cache_kb = cache < 0 ? -cache : cache * page / 1024;
    long long db_kb = pragma(db, "PRAGMA page_count") * page / 1024;
    /* key=value words after the sentence, so that tools read them without parsing English */
    vb_store_event(s, VB_EVENT_FOOTPRINT, "info", NULL, "coordinator",
                   "coordinator memory: pid=%d rss_kb=%ld heap_kb=%zu sqlite_kb=%lld sqlite_cache_max_kb=%lld "
                   "db_kb=%lld", (int)getpid(), rss_kb(), (size_t)(mi.uordblks + mi.hblkhd) / 1024,
                   (long long)sqlite3_memory_used() / 1024, cache_kb, db_kb);
}
