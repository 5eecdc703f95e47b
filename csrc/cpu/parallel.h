/* parallel.h - a parallel-for over the available cores for large kernels, on a persistent
 * pool of worker threads shared by every kernel (GEMM, pointwise, rows, optimizers). Work
 * below the grain runs inline on the calling thread; above it, [0, n) is cut into one
 * contiguous range per thread (the caller takes the first). A call made inside a region (from
 * a range function) or while another thread's region runs is done inline on its thread: one
 * region at a time, never a deadlock. A forked child gets a pool of its own on first use. */
#ifndef MP_PARALLEL_H
#define MP_PARALLEL_H

#include <stdint.h>

typedef void (*mp_range_fn)(void *ctx, int64_t begin, int64_t end);

/* Splits [0, n) so that no piece is smaller than `grain` items. */
void mp_parallel_for(int64_t n, int64_t grain, mp_range_fn fn, void *ctx);

/* Threads used by mp_parallel_for: default min(cores this process may run on divided by the
 * MPI ranks on this machine, MPAMP_NUM_THREADS or else OMP_NUM_THREADS when set);
 * set_num_threads(n < 1) means 1. The pool grows to n - 1 workers when a region needs them;
 * after a shrink the extra workers sleep. */
int mp_get_num_threads(void);
void mp_set_num_threads(int n);

/* Worker threads started so far (tests). */
int mp_parallel_workers(void);

#endif
