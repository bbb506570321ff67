/* Instruction-set levels: what a build's target ISA requires of the CPU and what it leaves unused.
 *
 * An engine compiled for x86-64-v3 executes AVX2 and FMA without asking: on a CPU without them it dies of
 * SIGILL (or, where it dispatches at run time, falls back to slower code); on a CPU with AVX-512 its kernels
 * stay 256 bits wide, and the numbers understate the hardware. The orchestrator compares the build's level
 * (recorded with the image) with the CPU flags of the host it runs the server on, and the validity section
 * shows what it found (store/views.sql). Flags are named as /proc/cpuinfo names them. */
#ifndef VB_ORCHESTRATOR_ISA_H
#define VB_ORCHESTRATOR_ISA_H

#include <stddef.h>

/* The CPU flags code built for `isa` may use unasked: "x86-64" (also "x86-64-v1"), "x86-64-v2", "x86-64-v3",
 * "x86-64-v4". A leading "-march=" is accepted. NULL for a level it does not know ("native", a CPU name). */
const char *vb_isa_requires(const char *isa);

/* The widest vector extension in a space-separated flag list: "AVX-512" (avx512f), "AVX2", "AVX", "SSE2" or
 * "none"; *bits (may be NULL) gets 512, 256, 256, 128 or 0. */
const char *vb_isa_widest_simd(const char *flags, int *bits);

/* The flags of `required` that `host` lacks, space-separated, into out ("" when none). */
void vb_isa_missing(const char *required, const char *host, char *out, size_t len);

/* This machine's CPU flags (the "flags" line of /proc/cpuinfo) into out; "" when unreadable. */
void vb_isa_host_flags(char *out, size_t len);

#endif
