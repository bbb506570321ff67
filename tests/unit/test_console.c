/* Unit tests of the progress line's rate (coordinator/console.c): it is the rate over the last minute of the
 * stage, not the agent's average since the stage began, so a load whose rate falls as the graph grows (MariaDB's
 * at a million rows: 393 rows/s over the first 200,000, 87 at 650,000, when the average still said 193) shows the
 * rate it runs at and an ETA made from it. Times are given, not read from the clock. */
#include <stdio.h>
#include <string.h>

#include "coordinator/console.h"
#include "tests/tap.h"

#define S 1000000000ull

int main(void) {
    vb_console k;
    FILE *sink = fopen("/dev/null", "w");
    vb_console_init(&k, sink, 0, 0);
    vb_console_item(&k, 0, 1, "t/mariadb/d/build");

    /* before 10 s of samples: the agent's rate */
    vb_console_progress_at(&k, "load", 0, 1000000, 0, 100 * S);
    vb_console_progress_at(&k, "load", 4000, 1000000, 400, 105 * S);
    is_double(vb_console_rate(&k), 400, 1e-9, "under 10 s of samples the line shows the agent's rate");

    /* 400 rows/s for 100 s, then 100 rows/s for 100 s: the agent's average says 260, the last minute 100 */
    uint64_t done = 4000;
    for (uint64_t t = 106; t <= 200; t++) done += 400, vb_console_progress_at(&k, "load", done, 1000000, 0, t * S);
    is_double(vb_console_rate(&k), 400, 1e-9, "a steady 400 rows/s reads 400");
    for (uint64_t t = 201; t <= 300; t++) {
        done += 100;
        double average = (double)done / (double)(t - 100);
        vb_console_progress_at(&k, "load", done, 1000000, average, t * S);
    }
    is_double(k.rate, 260, 1e-9, "the agent's average since the start: 52,000 rows in 200 s");
    is_double(vb_console_rate(&k), 100, 1e-9, "the line shows the last minute's 100 rows/s");

    /* samples more often than once a second are not all kept; the window still spans a minute */
    for (uint64_t ms = 300100; ms <= 310000; ms += 100) done += 10, vb_console_progress_at(&k, "load", done, 1000000, 0, ms * 1000000ull);
    is_double(vb_console_rate(&k), 100, 1e-9, "progress ten times a second at the same pace reads the same");

    /* another stage starts afresh: the agent's rate until it has 10 s of its own */
    vb_console_progress_at(&k, "build: building index", 10, 100, 3, 311 * S);
    is_double(vb_console_rate(&k), 3, 1e-9, "a new stage shows the agent's rate until it has 10 s of samples");
    for (uint64_t t = 312; t <= 330; t++) vb_console_progress_at(&k, "build: building index", 10 + 2 * (t - 311), 100, 3, t * S);
    is_double(vb_console_rate(&k), 2, 1e-9, "then its own: 2 a second");

    /* a new item forgets the last one's samples */
    vb_console_item(&k, 1, 2, "t/mariadb/d/recall_sweep");
    vb_console_progress_at(&k, "build: building index", 1, 100, 7, 331 * S);
    is_double(vb_console_rate(&k), 7, 1e-9, "a new item starts with no samples, even on a stage of the same name");

    /* nothing done for a minute: a rate of 0, and the line then shows neither rate nor ETA */
    vb_console_item(&k, 1, 2, "t/mariadb/d/churn");
    for (uint64_t t = 400; t <= 480; t++) vb_console_progress_at(&k, "reinsert", 500, 1000, 20, t * S);
    is_double(vb_console_rate(&k), 0, 1e-9, "a stage that did not move for a minute reads 0, not its old average");
    fclose(sink);
    return done_testing();
}
