/* alloc.h - the CPU caching allocator: 64-byte aligned blocks in size classes, freed blocks
 * kept for reuse so a steady training loop does no large malloc/munmap. Thread-safe.
 * The GEMM's packing buffers are allocated here as well, so one cache holds every reusable
 * host block; an allocation that fails releases it and is retried once before it gives up.
 * CUDA memory is not handled here (cuda/). */
#ifndef MP_ALLOC_H
#define MP_ALLOC_H

#include "status.h"

#define MP_ALIGNMENT 64

/* Returns NULL (and sets an MP_ERR_NOMEM message naming the size and what the cache held)
 * when the allocation is impossible even after emptying the cache. */
void *mp_alloc(size_t nbytes);
void mp_free(void *ptr, size_t nbytes);

typedef struct {
    uint64_t allocs;        /* mp_alloc calls */
    uint64_t cache_hits;    /* served from a cached block */
    uint64_t system_allocs; /* went to the system allocator */
    size_t cached_bytes;    /* held in the cache now */
    size_t in_use_bytes;    /* handed out and not yet freed (by class size) */
    size_t peak_in_use_bytes;
} mp_alloc_stats;

void mp_alloc_get_stats(mp_alloc_stats *out);
/* Starts a new peak: peak_in_use_bytes = in_use_bytes (torch's reset_peak_memory_stats). */
void mp_alloc_reset_peak(void);
/* Returns every cached block to the system. */
void mp_alloc_empty_cache(void);
/* Largest number of bytes the cache may hold (default 1 GiB, env MPAMP_CACHE_LIMIT_MB). */
void mp_alloc_set_cache_limit(size_t bytes);

#endif
