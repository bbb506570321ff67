/* Charts through gnuplot (charts.h): script and data kept in memory, then written and drawn by a child gnuplot. */
#include "report/charts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;

struct vb_chart {
    char name[96];
    char *title, *caption;
    sbuf cmds, data, plots;
    int blocks;
    size_t clauses;
};

static void sb_vadd(sbuf *b, const char *fmt, va_list ap) {
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n < 0) return;
    if (b->len + (size_t)n + 2 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + (size_t)n + 2) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) abort(); /* out of memory while drawing a chart: nothing sensible to do */
        b->p = p, b->cap = cap;
    }
    vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    b->len += (size_t)n;
}

static void sb_add(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sb_vadd(b, fmt, ap);
    va_end(ap);
}

vb_chart *vb_chart_new(const char *name, const char *title, const char *caption) {
    vb_chart *c = calloc(1, sizeof *c);
    if (!c) abort();
    snprintf(c->name, sizeof c->name, "%s", name);
    c->title = strdup(title ? title : "");
    c->caption = strdup(caption ? caption : "");
    return c;
}

void vb_chart_free(vb_chart *c) {
    if (!c) return;
    free(c->title), free(c->caption), free(c->cmds.p), free(c->data.p), free(c->plots.p);
    free(c);
}

void vb_chart_cmd(vb_chart *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sb_vadd(&c->cmds, fmt, ap);
    va_end(ap);
    sb_add(&c->cmds, "\n");
}

int vb_chart_block(vb_chart *c) {
    /* gnuplot separates data blocks (`index N`) by two blank lines */
    if (c->blocks) sb_add(&c->data, "\n\n");
    sb_add(&c->data, "# block %d\n", c->blocks);
    return c->blocks++;
}

void vb_chart_row(vb_chart *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sb_vadd(&c->data, fmt, ap);
    va_end(ap);
    sb_add(&c->data, "\n");
}

void vb_chart_plot(vb_chart *c, const char *fmt, ...) {
    if (c->clauses) sb_add(&c->plots, ", \\\n     ");
    va_list ap;
    va_start(ap, fmt);
    sb_vadd(&c->plots, fmt, ap);
    va_end(ap);
    c->clauses++;
}

size_t vb_chart_clauses(const vb_chart *c) { return c->clauses; }
const char *vb_chart_name(const vb_chart *c) { return c->name; }
const char *vb_chart_title(const vb_chart *c) { return c->title; }
const char *vb_chart_caption(const vb_chart *c) { return c->caption; }

char *vb_chart_quote(const char *s, char *out, size_t len) {
    size_t o = 0;
    for (; *s && o + 3 < len; s++) {
        if (*s == '\'') out[o++] = '\'';
        out[o++] = *s == '\n' ? ' ' : *s;
    }
    out[o] = '\0';
    return out;
}

/* A gnuplot double-quoted string body (backslash escapes apply there, so \\n in the title is a new line),
 * broken into lines of at most `width` characters at spaces, so that a long title or caption fits the 900 px
 * image instead of being cut at its edges (a word longer than the width stays whole). */
#define TITLE_WIDTH 96
static char *dquote(const char *s, char *out, size_t len, size_t width) {
    size_t o = 0, col = 0;
    for (; *s && o + 4 < len; s++) {
        char ch = *s == '\n' ? ' ' : *s;
        if (ch == ' ') { /* break here when the next word would pass the width */
            size_t w = 0;
            while (s[1 + w] && s[1 + w] != ' ' && s[1 + w] != '\n') w++;
            if (col > 0 && col + 1 + w > width) {
                out[o++] = '\\', out[o++] = 'n', col = 0;
                continue;
            }
        }
        if (ch == '"' || ch == '\\') out[o++] = '\\';
        out[o++] = ch, col++;
    }
    out[o] = '\0';
    return out;
}

static int write_file(const char *path, const char *text, size_t len, vb_error *err) {
    FILE *f = fopen(path, "w");
    if (!f) return vb_error_set(err, "report", errno, "cannot write %s: %s", path, strerror(errno));
    int bad = len && fwrite(text, 1, len, f) != len;
    if (fclose(f) != 0 || bad)
        return vb_error_set(err, "report", errno, "cannot write %s: %s (disk full?)", path, strerror(errno));
    return VB_OK;
}

/* The body is loaded twice, once per terminal, so the SVG and the PNG are the same chart. */
int vb_chart_render(const vb_chart *c, const char *dir, vb_error *err) {
    char path[4096], qt[1200], qc[1600];
    sbuf body = {0}, script = {0};
    sb_add(&body, "# %s: drawn by vbench report through gnuplot; redraw with: gnuplot %s.gp\n", c->name, c->name);
    sb_add(&body, "data = '%s.dat'\n", c->name);
    sb_add(&body, "set title \"%s\\n%s\" noenhanced\n", dquote(c->title, qt, sizeof qt, TITLE_WIDTH),
           dquote(c->caption, qc, sizeof qc, TITLE_WIDTH));
    /* The key to the right of the plot, one entry a line: below it, four series' entries ran into the x axis's
     * label (the report of four series seen in Chromium, issue 36.15). */
    sb_add(&body, "set key outside right top vertical Left reverse noenhanced\nset grid\nset border 3\nset tics nomirror\n");
    sb_add(&body, "%s", c->cmds.p ? c->cmds.p : "");
    sb_add(&body, "plot %s\n", c->plots.p ? c->plots.p : "NaN notitle");
    snprintf(path, sizeof path, "%s/%s.body.gp", dir, c->name);
    int rc = write_file(path, body.p, body.len, err);
    sb_add(&script, "# %s: both images from %s.body.gp (the chart) and %s.dat (its data)\n", c->name, c->name, c->name);
    sb_add(&script, "set terminal svg size 900,560 dynamic noenhanced font 'sans,12' background '#ffffff'\n"
                    "set output '%s.svg'\nload '%s.body.gp'\nunset output\n", c->name, c->name);
    sb_add(&script, "set terminal pngcairo size 900,560 noenhanced font 'sans,10' background '#ffffff'\n"
                    "set output '%s.png'\nload '%s.body.gp'\nunset output\n", c->name, c->name);
    snprintf(path, sizeof path, "%s/%s.gp", dir, c->name);
    if (rc == VB_OK) rc = write_file(path, script.p, script.len, err);
    snprintf(path, sizeof path, "%s/%s.dat", dir, c->name);
    if (rc == VB_OK) rc = write_file(path, c->data.p ? c->data.p : "", c->data.len, err);
    free(body.p), free(script.p);
    if (rc != VB_OK) return rc;

    char gp[160], log[4096];
    snprintf(gp, sizeof gp, "%s.gp", c->name);
    snprintf(log, sizeof log, "%s/%s.log", dir, c->name);
    pid_t pid = fork();
    if (pid < 0) return vb_error_set(err, "report", errno, "cannot start gnuplot: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) dup2(fd, 2), dup2(fd, 1);
        if (chdir(dir) != 0) _exit(126);
        execlp("gnuplot", "gnuplot", gp, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return vb_error_set(err, "report", 127, "gnuplot is not installed: install Debian's gnuplot-nox "
                                                "(bash deploy/install-deps) and run the report again");
    char msg[600] = "";
    FILE *f = fopen(log, "r");
    if (f) {
        size_t n = fread(msg, 1, sizeof msg - 1, f);
        msg[n] = '\0';
        fclose(f);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return vb_error_set(err, "report", 1, "gnuplot failed on %s/%s: %s", dir, gp, msg[0] ? msg : "(no output)");
    unlink(log);
    return VB_OK;
}
