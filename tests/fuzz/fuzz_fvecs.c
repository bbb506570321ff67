/* Fuzz target: TEXMEX .fvecs base and query files (per-row dimension word, converted once into a cache file).
 * See fuzz_vecs.h for the input layout and the invariants. */
#include "tests/fuzz/fuzz_vecs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return vecs_one(".fvecs", data, size); }
