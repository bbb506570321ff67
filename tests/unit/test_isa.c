/* Self-test of the instruction-set levels (orchestrator/isa.c): what each x86-64 level needs, the widest SIMD of
 * a flag list, the features a host lacks; the cases behind the validity findings of issue 17. */
#include <string.h>

#include "orchestrator/isa.h"
#include "tests/tap.h"

int main(void) {
    /* A host like this project's: AVX-512 (an AMD EPYC with avx512f/bw/cd/dq/vl). */
    const char *epyc = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse "
                       "sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm rep_good nopl cpuid extd_apicid pni "
                       "pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand "
                       "hypervisor lahf_lm cmp_legacy cr8_legacy abm sse4a misalignsse 3dnowprefetch bmi1 avx2 smep "
                       "bmi2 erms invpcid avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni "
                       "avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx512_bf16";
    /* A host without AVX-512 (a Haswell-class server). */
    const char *haswell = "fpu cx8 cmov mmx fxsr sse sse2 syscall lm pni ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt "
                          "xsave avx f16c lahf_lm abm bmi1 avx2 bmi2";
    char missing[512];
    int bits = -1;

    ok(vb_isa_requires("x86-64-v3") && strstr(vb_isa_requires("x86-64-v3"), "avx2"), "x86-64-v3 needs avx2");
    ok(!strstr(vb_isa_requires("x86-64-v3"), "avx512f"), "and not avx512f");
    ok(strstr(vb_isa_requires("-march=x86-64-v4"), "avx512f") != NULL, "-march=x86-64-v4 needs avx512f");
    ok(strstr(vb_isa_requires("x86-64 (the compiler's default: no -march)"), "sse2") != NULL,
       "a level with a remark in parentheses is read");
    ok(vb_isa_requires("native") == NULL && vb_isa_requires("skylake") == NULL && vb_isa_requires(NULL) == NULL,
       "native, CPU names and nothing are not levels");

    is_str(vb_isa_widest_simd(epyc, &bits), "AVX-512", "the EPYC host's widest SIMD");
    is_int(bits, 512, "512 bits");
    is_str(vb_isa_widest_simd(vb_isa_requires("x86-64-v3"), &bits), "AVX2", "an x86-64-v3 build's widest SIMD");
    is_int(bits, 256, "256 bits");
    is_str(vb_isa_widest_simd(vb_isa_requires("x86-64"), &bits), "SSE2", "a baseline build's");
    is_str(vb_isa_widest_simd("sse avx512vl", &bits), "none", "avx512vl alone is not avx512f: words, not substrings");
    is_int(bits, 0, "0 bits");

    vb_isa_missing(vb_isa_requires("x86-64-v3"), epyc, missing, sizeof missing);
    is_str(missing, "", "the EPYC host has everything x86-64-v3 needs");
    vb_isa_missing(vb_isa_requires("x86-64-v4"), haswell, missing, sizeof missing);
    is_str(missing, "avx512f avx512bw avx512cd avx512dq avx512vl", "a Haswell lacks what x86-64-v4 needs");
    vb_isa_missing("avx2 fma", "avx2x fmax", missing, sizeof missing);
    is_str(missing, "avx2 fma", "flags match as whole words");

    char host[4096];
    vb_isa_host_flags(host, sizeof host);
    ok(host[0] != '\0' && strstr(host, "sse2"), "this machine's flags are read from /proc/cpuinfo");
    return done_testing();
}
