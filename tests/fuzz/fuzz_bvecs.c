/* Fuzz target: TEXMEX .bvecs base and query files (per-row dimension word, uint8 elements converted once into a
 * float32 cache file). See fuzz_vecs.h for the input layout and the invariants. */
#include "tests/fuzz/fuzz_vecs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return vecs_one(".bvecs", data, size); }
