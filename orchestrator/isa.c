/* Instruction-set levels and CPU flags (see orchestrator/isa.h). */
#include "orchestrator/isa.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The x86-64 micro-architecture levels of the psABI, cumulative, in /proc/cpuinfo's names (SSE3 is "pni",
 * LZCNT is "abm"). */
#define V1 "lm cmov cx8 fpu fxsr mmx syscall sse sse2"
#define V2 V1 " cx16 lahf_lm popcnt pni sse4_1 sse4_2 ssse3"
#define V3 V2 " avx avx2 bmi1 bmi2 f16c fma abm movbe xsave"
#define V4 V3 " avx512f avx512bw avx512cd avx512dq avx512vl"

const char *vb_isa_requires(const char *isa) {
    static const struct { const char *name, *flags; } levels[] = {
        {"x86-64", V1}, {"x86-64-v1", V1}, {"x86-64-v2", V2}, {"x86-64-v3", V3}, {"x86-64-v4", V4}};
    if (!isa) return NULL;
    if (strncmp(isa, "-march=", 7) == 0) isa += 7;
    size_t n = strcspn(isa, " ("); /* "x86-64 (the compiler's default)" names the level x86-64 */
    for (size_t i = 0; i < sizeof levels / sizeof *levels; i++)
        if (strlen(levels[i].name) == n && strncmp(isa, levels[i].name, n) == 0) return levels[i].flags;
    return NULL;
}

/* Whether the space-separated list holds the word. */
static int has_flag(const char *flags, const char *word) {
    size_t wl = strlen(word);
    for (const char *p = flags; p && (p = strstr(p, word)); p += wl)
        if ((p == flags || p[-1] == ' ') && (p[wl] == ' ' || p[wl] == '\0' || p[wl] == '\n')) return 1;
    return 0;
}

const char *vb_isa_widest_simd(const char *flags, int *bits) {
    static const struct { const char *flag, *name; int bits; } ladder[] = {
        {"avx512f", "AVX-512", 512}, {"avx2", "AVX2", 256}, {"avx", "AVX", 256}, {"sse2", "SSE2", 128}};
    for (size_t i = 0; flags && i < sizeof ladder / sizeof *ladder; i++)
        if (has_flag(flags, ladder[i].flag)) {
            if (bits) *bits = ladder[i].bits;
            return ladder[i].name;
        }
    if (bits) *bits = 0;
    return "none";
}

void vb_isa_missing(const char *required, const char *host, char *out, size_t len) {
    size_t off = 0;
    out[0] = '\0';
    char word[64];
    for (const char *p = required; p && *p;) {
        p += strspn(p, " ");
        size_t n = strcspn(p, " ");
        if (n == 0) break;
        snprintf(word, sizeof word, "%.*s", (int)n, p);
        if (!has_flag(host, word) && off < len)
            off += (size_t)snprintf(out + off, len - off, "%s%s", off ? " " : "", word);
        p += n;
    }
}

void vb_isa_host_flags(char *out, size_t len) {
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        if (strncmp(line, "flags", 5) != 0) continue;
        char *colon = strchr(line, ':');
        if (!colon) continue;
        colon += 1 + strspn(colon + 1, " \t");
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(out, len, "%s", colon);
        break;
    }
    free(line);
    fclose(f);
}
