/* Fuzz target: big-ann .fbin base and query files (8-byte rows x dim header, mapped in place).
 * See fuzz_vecs.h for the input layout and the invariants. */
#include "tests/fuzz/fuzz_vecs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return vecs_one(".fbin", data, size); }
