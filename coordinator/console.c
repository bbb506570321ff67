/* The coordinator's terminal output (coordinator/console.h). */
#include "coordinator/console.h"

#include <stdarg.h>
#include <string.h>

#include "util/clock.h"

void vb_console_init(vb_console *k, FILE *out, int quiet, int tty) {
    memset(k, 0, sizeof *k);
    k->out = out;
    k->quiet = quiet;
    k->tty = tty;
}

void vb_console_clear(vb_console *k) {
    if (k->tty && !k->quiet) fputs("\r\033[K", k->out);
}

void vb_console_say(vb_console *k, const char *fmt, ...) {
    if (k->quiet) return;
    vb_console_clear(k);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(k->out, fmt, ap);
    va_end(ap);
    fputc('\n', k->out);
}

void vb_console_item(vb_console *k, int seq, size_t n, const char *key) {
    snprintf(k->item, sizeof k->item, "[%d/%zu] %s", seq + 1, n, key);
    k->stage[0] = '\0';
    k->done = k->total = 0;
    k->rate = 0;
    k->n_recent = k->first_recent = 0;
    k->active = 1;
    vb_console_print_progress(k, 1);
}

#define RECENT_N ((int)(sizeof ((vb_console *)0)->recent / sizeof ((vb_console *)0)->recent[0]))
#define RECENT_WINDOW_NS 60000000000ull
#define RECENT_MIN_NS 10000000000ull

void vb_console_progress_at(vb_console *k, const char *stage, uint64_t done, uint64_t total, double rate,
                            uint64_t now_ns) {
    /* another stage, or counts that went back: the samples are of something else */
    if (strcmp(k->stage, stage) != 0 || done < k->done) k->n_recent = k->first_recent = 0;
    snprintf(k->stage, sizeof k->stage, "%s", stage);
    k->done = done;
    k->total = total;
    k->rate = rate;
    int last = (k->first_recent + k->n_recent - 1) % RECENT_N;
    if (k->n_recent == 0 || now_ns - k->recent[last].t_ns >= 1000000000ull) {
        if (k->n_recent == RECENT_N) k->first_recent = (k->first_recent + 1) % RECENT_N, k->n_recent--;
        k->recent[(k->first_recent + k->n_recent) % RECENT_N].t_ns = now_ns;
        k->recent[(k->first_recent + k->n_recent) % RECENT_N].done = done;
        k->n_recent++;
    }
    /* the samples older than the window go, but one stays before it so the window is spanned */
    while (k->n_recent > 2 && now_ns - k->recent[(k->first_recent + 1) % RECENT_N].t_ns > RECENT_WINDOW_NS)
        k->first_recent = (k->first_recent + 1) % RECENT_N, k->n_recent--;
}

void vb_console_progress(vb_console *k, const char *stage, uint64_t done, uint64_t total, double rate) {
    vb_console_progress_at(k, stage, done, total, rate, vb_now_ns());
    vb_console_print_progress(k, 0);
}

double vb_console_rate(const vb_console *k) {
    if (k->n_recent < 2) return k->rate;
    const int a = k->first_recent, b = (k->first_recent + k->n_recent - 1) % RECENT_N;
    uint64_t span = k->recent[b].t_ns - k->recent[a].t_ns;
    if (span < RECENT_MIN_NS) return k->rate;
    return (double)(k->recent[b].done - k->recent[a].done) / ((double)span / 1e9);
}

void vb_console_idle(vb_console *k) { k->active = 0; }

void vb_console_print_progress(vb_console *k, int force) {
    if (k->quiet || !k->active) return;
    uint64_t now = vb_now_ns();
    uint64_t every = k->tty ? 200000000ull : 10000000000ull;
    if (!force && now - k->last_print_ns < every) return;
    k->last_print_ns = now;
    char line[512];
    int n = snprintf(line, sizeof line, "%s", k->item);
    if (k->stage[0]) {
        n += snprintf(line + n, sizeof line - (size_t)n, " | %s", k->stage);
        if (k->total > 0) {
            double pct = 100.0 * (double)k->done / (double)k->total;
            n += snprintf(line + n, sizeof line - (size_t)n, " %.1f%% (%llu/%llu)", pct, (unsigned long long)k->done,
                          (unsigned long long)k->total);
        }
        double rate = vb_console_rate(k);
        if (rate > 0) {
            n += snprintf(line + n, sizeof line - (size_t)n, " %.0f/s", rate);
            if (k->total > k->done)
                snprintf(line + n, sizeof line - (size_t)n, " ETA %.0fs", (double)(k->total - k->done) / rate);
        }
    }
    if (k->tty) fprintf(k->out, "\r\033[K%s", line);
    else fprintf(k->out, "%s\n", line);
}
