/* random.h - counter-based random numbers (Philox4x32-10). A stream is (seed, offset): the
 * same seed and offset give the same numbers on every ISA, thread count and run. Each fill
 * reports how many 128-bit blocks it consumed so the caller can advance its offset. */
#ifndef MP_RANDOM_H
#define MP_RANDOM_H

#include "tensor.h"

void mp_philox(uint64_t seed, uint64_t counter, uint32_t out[4]);

/* MP_OK when t can be filled in place (contiguous, on the CPU). */
mp_status mp_random_check_target(const mp_tensor *t);

/* t must be contiguous and on the CPU. Values are generated at the precision of t's dtype. */
mp_status mp_random_uniform_(mp_tensor *t, uint64_t seed, uint64_t offset, double lo,
                             double hi, uint64_t *blocks_used);
mp_status mp_random_normal_(mp_tensor *t, uint64_t seed, uint64_t offset, double mean,
                            double std, uint64_t *blocks_used);
/* Integers uniform in [low, high). */
mp_status mp_random_int_(mp_tensor *t, uint64_t seed, uint64_t offset, int64_t low,
                         int64_t high, uint64_t *blocks_used);

/* random_dist.c. Fills: t contiguous on the CPU. Exponential(lambd) needs a float t;
 * bernoulli writes 0/1 in any dtype, from one p in [0, 1] or from p (a float tensor that
 * broadcasts to t's shape, every element in [0, 1]). */
mp_status mp_random_exponential_(mp_tensor *t, uint64_t seed, uint64_t offset, double lambd,
                                 uint64_t *blocks_used);
mp_status mp_random_bernoulli_(mp_tensor *t, double p, uint64_t seed, uint64_t offset,
                               uint64_t *blocks_used);
mp_status mp_random_bernoulli_tensor_(mp_tensor *t, mp_tensor *p, uint64_t seed,
                                      uint64_t offset, uint64_t *blocks_used);
/* int64 indices (num_samples,) or (rows, num_samples) drawn from the rows of probs (1-D or
 * 2-D, float, unnormalised), with torch's checks and messages. */
mp_status mp_random_multinomial(mp_tensor *probs, int64_t num_samples, int replacement,
                                uint64_t seed, uint64_t offset, mp_tensor **out,
                                uint64_t *blocks_used);
/* A random permutation of 0..n-1 in dtype (the caller checks the dtype can hold n - 1). */
mp_status mp_random_randperm(int64_t n, mp_dtype dtype, uint64_t seed, uint64_t offset,
                             mp_tensor **out, uint64_t *blocks_used);

#endif
