/* Fuzz target: big-ann .ibin given neighbours (uint32 queries, uint32 k, the ids, optionally the distances) read
 * into a small dataset. See fuzz_gt.h for the input layout and the invariants. */
#include "tests/fuzz/fuzz_gt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return gt_one(".ibin", data, size); }
