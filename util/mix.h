/* splitmix64 (Steele, Lea, Flood): the one integer mixer and small generator vbench uses wherever a value must be
 * the same on every host (dataset tags, the synthetic generator's seeds, churn's row choice, open-loop arrival
 * schedules, hash tables). Changing it changes recorded data: the tests pin its outputs. */
#ifndef VB_UTIL_MIX_H
#define VB_UTIL_MIX_H

#include <stdint.h>

#define VB_MIX_GOLDEN 0x9e3779b97f4a7c15ull

/* The splitmix64 finaliser: a bijective, well-mixed 64-bit hash. */
static inline uint64_t vb_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The next value of a splitmix64 generator whose state is *state. */
static inline uint64_t vb_splitmix64(uint64_t *state) { return vb_mix64(*state += VB_MIX_GOLDEN); }

#endif
