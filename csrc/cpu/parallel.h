/* parallel.h - a small parallel-for over the available cores for large kernels. Work below
 * the grain runs inline on the calling thread; above it, [0, n) is cut into one contiguous
 * range per thread (the caller takes the first). Threads are started per call: only worth it
 * for work of milliseconds, which is what the callers pass. */
#ifndef MP_PARALLEL_H
#define MP_PARALLEL_H

#include <stdint.h>

typedef void (*mp_range_fn)(void *ctx, int64_t begin, int64_t end);

/* Splits [0, n) so that no piece is smaller than `grain` items. */
void mp_parallel_for(int64_t n, int64_t grain, mp_range_fn fn, void *ctx);

/* Threads used by mp_parallel_for: default min(cores this process may run on,
 * MPAMP_NUM_THREADS or else OMP_NUM_THREADS when set); set_num_threads(n < 1) means 1. */
int mp_get_num_threads(void);
void mp_set_num_threads(int n);

#endif
