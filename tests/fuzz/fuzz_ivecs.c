/* Fuzz target: TEXMEX .ivecs given neighbours (per-row k word, then k int32 ids) read into a small dataset.
 * See fuzz_gt.h for the input layout and the invariants. */
#include "tests/fuzz/fuzz_gt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return gt_one(".ivecs", data, size); }
