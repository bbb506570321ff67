/* Fuzz target: big-ann .u8bin base and query files (8-byte rows x dim header, uint8 elements converted once into
 * a float32 cache file). See fuzz_vecs.h for the input layout and the invariants. */
#include "tests/fuzz/fuzz_vecs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return vecs_one(".u8bin", data, size); }
