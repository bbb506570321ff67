/* Fuzz target: `perf script` text as the orchestrator reads it from perf (orchestrator/perf.h vb_perf_fold), the
 * bytes of another tool.
 *
 * Invariants checked beyond the sanitizers: the folded stacks' counts sum to the samples; no stack holds a newline
 * or a control byte, or more than VB_PERF_MAX_FRAMES frames; at most VB_PERF_MAX_STACKS stacks; the hottest
 * functions are at most VB_PERF_TOP, in descending order, their self samples summing to at most the samples; the
 * folded text has one line per stack. */
#include "orchestrator/perf.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vb_perf_profile p;
    vb_error err;
    if (vb_perf_fold((const char *)data, size, &p, &err) != VB_OK) return 0;   /* out of memory only */
    uint64_t sum = 0;
    FZ_CHECK(p.n_stacks <= VB_PERF_MAX_STACKS, "%zu stacks", p.n_stacks);
    for (size_t i = 0; i < p.n_stacks; i++) {
        sum += p.counts[i];
        size_t semis = 0;
        for (const char *q = p.stacks[i]; *q; q++) {
            FZ_CHECK((unsigned char)*q >= 0x20, "control byte 0x%02x in stack %zu", (unsigned char)*q, i);
            semis += *q == ';';
        }
        FZ_CHECK(semis <= VB_PERF_MAX_FRAMES, "stack %zu has %zu frames", i, semis);
    }
    FZ_CHECK(sum == p.samples, "counts sum to %llu, samples %llu", (unsigned long long)sum,
             (unsigned long long)p.samples);
    FZ_CHECK(p.n_top <= VB_PERF_TOP, "%zu top functions", p.n_top);
    uint64_t top = 0;
    for (size_t i = 0; i < p.n_top; i++) {
        top += p.top[i].samples;
        FZ_CHECK(i == 0 || p.top[i - 1].samples >= p.top[i].samples, "top functions out of order at %zu", i);
    }
    FZ_CHECK(top <= p.samples, "top functions' samples %llu over %llu", (unsigned long long)top,
             (unsigned long long)p.samples);
    char *folded = vb_perf_folded_text(&p);
    FZ_CHECK(folded != NULL, "no folded text");
    size_t lines = 0;
    for (const char *q = folded; *q; q++) lines += *q == '\n';
    FZ_CHECK(lines == p.n_stacks, "%zu lines for %zu stacks", lines, p.n_stacks);
    FZ_SAY("%llu samples, %zu stacks, %llu malformed lines", (unsigned long long)p.samples, p.n_stacks,
           (unsigned long long)p.malformed);
    free(folded);
    vb_perf_profile_free(&p);
    return 0;
}
