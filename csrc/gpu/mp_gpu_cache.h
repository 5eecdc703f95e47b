/* mp_gpu_cache.h - the real GPU's caching allocator and its counters (device_cache.c), the
 * memory half of csrc/core/backend_gpu.c's table. */
#ifndef MP_GPU_CACHE_H
#define MP_GPU_CACHE_H

#include "../shared/mp_cuda_api.h"

/* Bytes a request of nbytes occupies (512-byte steps to 1 MiB, then 2 MiB steps). */
size_t mp_gpu_cache_round(size_t nbytes);
/* A block of at least nbytes: cached, else cudaMalloc (after emptying the cache once on
 * failure); MP_ERR_NOMEM with the driver's message when the device is full. */
mp_status mp_gpu_cache_alloc(size_t nbytes, void **out, mp_msg *msg);
void mp_gpu_cache_free(void *p, size_t nbytes);
void mp_gpu_cache_empty(void);
void mp_gpu_cache_stats(mp_device_stats *out);
void mp_gpu_cache_reset_peak(void);
/* Counts a copy (0 h2d, 1 d2h, 2 d2d) or, with 3, a host synchronisation. */
void mp_gpu_cache_count(int what);

#endif
