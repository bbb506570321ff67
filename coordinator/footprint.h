/* The coordinator's own memory, recorded as an event (kind "footprint") every limits.footprint_every_s (600 s
 * by default; 0: never): its RSS, the heap in use (glibc's mallinfo2), the part of it that is SQLite's
 * (sqlite3_memory_used: the page cache, up to the database's cache_size, plus schema and statements) and the
 * results database's size. A 40-hour campaign's coordinator grows as its database's page cache fills and must
 * stay flat after that: the soak test (tests/soak/soak.sh) reads these events to tell the two apart. heap_kb is
 * glibc's account: 0 under another allocator (valgrind's, a preloaded jemalloc). */
#ifndef VB_COORDINATOR_FOOTPRINT_H
#define VB_COORDINATOR_FOOTPRINT_H

#include "store/store.h"

typedef struct vb_footprint {
    double every_s;      /* 0: never */
    double next_s;       /* monotonic seconds of the next record */
} vb_footprint;

/* every_s from the profile; the first record is made at the first tick. */
void vb_footprint_init(vb_footprint *f, double every_s);
/* Records the event when it is due; cheap otherwise. */
void vb_footprint_tick(vb_footprint *f, vb_store *s);

#endif
