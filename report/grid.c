/* A table read into memory, and what a reader does not need of it (report/grid.h). */
#include "report/grid.h"

#include <stdlib.h>
#include <string.h>

#include "report/show.h"

void vb_grid_free(vb_grid *g) {
    for (int i = 0; g->cell && i < g->rows * g->cols; i++) free(g->cell[i]);
    for (int i = 0; g->name && i < g->cols; i++) free(g->name[i]);
    free(g->cell), free(g->num), free(g->name), free(g->keep), free(g->w);
    memset(g, 0, sizeof *g);
}

int vb_grid_begin(vb_grid *g, sqlite3_stmt *st, const char *lead) {
    memset(g, 0, sizeof *g);
    int lead_n = lead != NULL;
    g->cols = sqlite3_column_count(st) + lead_n;
    g->name = calloc((size_t)g->cols + 1, sizeof *g->name);
    g->keep = calloc((size_t)g->cols + 1, 1);
    g->w = calloc((size_t)g->cols + 1, sizeof *g->w);
    if (!g->name || !g->keep || !g->w) return -1;
    for (int i = 0; i < g->cols; i++) {
        if (!(g->name[i] = strdup(lead_n && i == 0 ? lead : sqlite3_column_name(st, i - lead_n)))) return -1;
        g->keep[i] = 1;
    }
    return 0;
}

int vb_grid_add_rows(vb_grid *g, sqlite3_stmt *st, const char *lead_value) {
    int lead_n = g->cols - sqlite3_column_count(st), rc;
    char cell[1024];
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if ((size_t)(g->rows + 1) * (size_t)g->cols > g->cap) {
            size_t cap = g->cap ? g->cap * 2 : (size_t)g->cols * 16;
            char **c = realloc(g->cell, cap * sizeof *c);
            if (c) g->cell = c;
            unsigned char *n = c ? realloc(g->num, cap) : NULL;
            if (!n) return -1;
            g->num = n, g->cap = cap;
        }
        for (int i = 0; i < g->cols; i++) {
            size_t at = (size_t)g->rows * (size_t)g->cols + (size_t)i;
            if (i < lead_n) {
                g->num[at] = 0;
                g->cell[at] = strdup(lead_value ? lead_value : "");
            } else {
                vb_report_cell(st, i - lead_n, cell, sizeof cell);
                int t = sqlite3_column_type(st, i - lead_n);
                g->num[at] = t == SQLITE_INTEGER || t == SQLITE_FLOAT;
                g->cell[at] = strdup(cell);
            }
            if (!g->cell[at]) {
                for (int j = 0; j < i; j++) free(g->cell[(size_t)g->rows * (size_t)g->cols + (size_t)j]);
                return -1;
            }
        }
        g->rows++;
    }
    return rc;
}

int vb_grid_read(vb_grid *g, sqlite3_stmt *st, const char *unused) {
    (void)unused;
    if (vb_grid_begin(g, st, NULL) != 0) return -1;
    return vb_grid_add_rows(g, st, NULL) == SQLITE_DONE ? 0 : -1;
}

const char *vb_grid_at(const vb_grid *g, int r, int c) { return g->cell[(size_t)r * (size_t)g->cols + (size_t)c]; }

static int column_of(const vb_grid *g, const char *name, size_t len) {
    for (int i = 0; i < g->cols; i++)
        if (strlen(g->name[i]) == len && strncmp(g->name[i], name, len) == 0) return i;
    return -1;
}

/* Every cell of column c is a, or equal to column base's cell in its row (base < 0: not that). */
static int column_all(const vb_grid *g, int c, const char *a, int base) {
    for (int r = 0; r < g->rows; r++) {
        const char *v = vb_grid_at(g, r, c);
        if (strcmp(v, a) != 0 && !(base >= 0 && strcmp(v, vb_grid_at(g, r, base)) == 0)) return 0;
    }
    return 1;
}

/* "what: name" into notes, or ", name" after the names of a note already there. */
static void note_add(char *notes, size_t len, const char *what, const char *name) {
    size_t n = strlen(notes);
    char *at = strstr(notes, what);
    if (!at) {
        snprintf(notes + n, len - n, "%s%s: %s", n ? "; " : "", what, name);
        return;
    }
    char *end = strchr(at, ';');
    size_t pos = end ? (size_t)(end - notes) : n, add = strlen(name) + 2;
    if (n + add + 1 > len) return;
    memmove(notes + pos + add, notes + pos, n - pos + 1);
    memcpy(notes + pos, ", ", 2);
    memcpy(notes + pos + 2, name, add - 2);
}

static const char *const short_names[][2] = {
    {"short_answers", "short"},        {"first_query_s", "first_q_s"},   {"engine_version", "version"},
    {"fraction_in_call", "in_call"},   {"passing_rows", "passing"},      {"actual_over_estimate", "actual/est"},
    {"estimated_s", "est_s"},          {"results_agreeing", "agreeing"}, {"client_cpu_s", "client_cpu"},
};

void vb_grid_fit(vb_grid *g, char *notes, size_t len, char *context, size_t clen) {
    static const char *const suffixes[] = {"_min", "_max", "_ci_lo", "_ci_hi"};
    static const char *const zeros[] = {"errors", "short_answers", "late_starts", "shortfall_rows", "fresh_never",
                                        "zero_share"};
    static const char *const shared[] = {"dataset", "clients", "ef_search", "queries", "predicate"};
    notes[0] = context[0] = '\0';
    for (int c = 0; c < g->cols && g->rows > 0; c++) {
        const char *nm = g->name[c];
        size_t l = strlen(nm);
        if (column_all(g, c, "-", -1)) {
            g->keep[c] = 0, note_add(notes, len, "no value", nm);
            continue;
        }
        for (size_t s = 0; s < sizeof suffixes / sizeof *suffixes && g->keep[c]; s++) {
            size_t sl = strlen(suffixes[s]);
            int base = l > sl && strcmp(nm + l - sl, suffixes[s]) == 0 ? column_of(g, nm, l - sl) : -1;
            if (base >= 0 && column_all(g, c, "-", base)) {
                char what[96];
                snprintf(what, sizeof what, "equal to %s (one repeat, no interval)", g->name[base]);
                g->keep[c] = 0, note_add(notes, len, what, nm);
            }
        }
        for (size_t z = 0; z < sizeof zeros / sizeof *zeros && g->keep[c]; z++)
            if (strcmp(nm, zeros[z]) == 0 && column_all(g, c, "0", -1))
                g->keep[c] = 0, note_add(notes, len, "0 in every row", nm);
        /* one repeat, one build (build_repeats): nothing to say */
        if (g->keep[c] && (strcmp(nm, "repeats") == 0 || strcmp(nm, "builds") == 0 || strcmp(nm, "build") == 0) &&
            column_all(g, c, "1", -1))
            g->keep[c] = 0, note_add(notes, len, "1 in every row", nm);
        for (size_t k = 0; k < sizeof shared / sizeof *shared && g->keep[c]; k++)
            if (strcmp(nm, shared[k]) == 0 && column_all(g, c, vb_grid_at(g, 0, c), -1)) {
                size_t n = strlen(context);
                snprintf(context + n, clen - n, "%s%s %s", n ? ", " : "", nm, vb_grid_at(g, 0, c));
                g->keep[c] = 0;
            }
    }
    for (int c = 0; c < g->cols; c++)
        for (size_t k = 0; k < sizeof short_names / sizeof *short_names; k++)
            if (strcmp(g->name[c], short_names[k][0]) == 0) {
                char *s = strdup(short_names[k][1]);
                if (s) free(g->name[c]), g->name[c] = s;
            }
}

int vb_grid_parts(const vb_grid *g, const int *w, int gap, int budget, void (*part)(const unsigned char *mask, void *arg),
                  void *arg) {
    static const char *const keys[] = {"run", "clients", "ef_search", "ef", "selectivity", "predicate", "insert_rate",
                                       "stage", "phase", "point", "part", "item", "target_rate", "repeat", "build",
                                       "dataset"};
    unsigned char *mask = calloc((size_t)g->cols + 1, 1), *key = calloc((size_t)g->cols + 1, 1);
    int key_w = 0, c = 0, n = 0, total = 0;
    if (!mask || !key) {
        free(mask), free(key);
        return 0;
    }
    for (int i = 0; i < g->cols; i++)
        if (g->keep[i]) total += w[i] + gap;
    if (total <= budget) {   /* it fits: one part, every shown column */
        memcpy(mask, g->keep, (size_t)g->cols);
        part(mask, arg);
        free(mask), free(key);
        return 1;
    }
    while (c < g->cols && !g->keep[c]) c++;
    for (int k0 = c; c < g->cols; c++) {
        if (!g->keep[c]) continue;
        int is_key = c == k0;
        for (size_t k = 0; k < sizeof keys / sizeof *keys && !is_key; k++) is_key = !strcmp(g->name[c], keys[k]);
        if (!is_key) break;
        key[c] = 1, key_w += w[c] + gap;
    }
    for (int next = c; next < g->cols;) {
        memcpy(mask, key, (size_t)g->cols);
        int used = key_w, added = 0;
        for (; next < g->cols; next++) {
            if (!g->keep[next] || key[next]) continue;
            if (added && used + w[next] > budget) break;
            mask[next] = 1, used += w[next] + gap, added++;
        }
        if (!added) break;
        part(mask, arg);
        n++;
    }
    free(mask), free(key);
    return n;
}
