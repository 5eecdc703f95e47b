/* random.h - counter-based random numbers (Philox4x32-10). A stream is (seed, offset): the
 * same seed and offset give the same numbers on every ISA, thread count and run. Each fill
 * reports how many 128-bit blocks it consumed so the caller can advance its offset. */
#ifndef MP_RANDOM_H
#define MP_RANDOM_H

#include "tensor.h"

void mp_philox(uint64_t seed, uint64_t counter, uint32_t out[4]);

/* t must be contiguous and on the CPU. Values are generated at the precision of t's dtype. */
mp_status mp_random_uniform_(mp_tensor *t, uint64_t seed, uint64_t offset, double lo,
                             double hi, uint64_t *blocks_used);
mp_status mp_random_normal_(mp_tensor *t, uint64_t seed, uint64_t offset, double mean,
                            double std, uint64_t *blocks_used);
/* Integers uniform in [low, high). */
mp_status mp_random_int_(mp_tensor *t, uint64_t seed, uint64_t offset, int64_t low,
                         int64_t high, uint64_t *blocks_used);

#endif
