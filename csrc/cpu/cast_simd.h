/* cast_simd.h - what the vector cast kernels (cast_avx2.c, cast_avx512.c) share: when to
 * switch to non-temporal stores, how many leading elements to convert before the destination
 * is aligned for them, and how far ahead to prefetch. Plain C with no intrinsics, so every
 * ISA file can include it; the kernels and their bit-exactness rules live in the ISA files. */
#ifndef MP_CPU_CAST_SIMD_H
#define MP_CPU_CAST_SIMD_H

#include <stddef.h>
#include <stdint.h>

/* Destination size from which stores bypass the cache. Below it the output is likely to be
 * read again soon (a weight cast feeding a GEMM) and fits in the last-level cache; above it
 * streaming saves the read-for-ownership of every destination line (up-casts at 256 MiB went
 * from ~0.7x to ~1.1x memcpy bandwidth on Zen 3; see benchmarks/RESULTS.md). */
#define MP_CAST_STREAM_BYTES ((size_t)8 << 20)

/* How far ahead of the loads the main loops prefetch the source. One core reading a single
 * stream is latency-bound (a few dozen lines in flight); asking for lines 2 KiB early lifted
 * the 256 MiB casts by 10-20% on Zen 3. */
#define MP_CAST_PREFETCH_BYTES 2048

/* Returns 1 and sets *head to the number of leading elements to convert with ordinary stores
 * so that dst + *head is `align`-byte aligned, when n elements of `esize` bytes are worth
 * streaming; returns 0 (plain stores throughout) otherwise, including for a destination
 * that is not even element-aligned. */
static inline int mp_cast_stream_head(const void *dst, size_t n, size_t esize, size_t align,
                                      size_t *head)
{
    uintptr_t a = (uintptr_t)dst;
    if (n * esize < MP_CAST_STREAM_BYTES || a % esize != 0)
        return 0;
    *head = ((align - (size_t)(a % align)) % align) / esize;
    return 1;
}

/* Element index below which the main loop may prefetch MP_CAST_PREFETCH_BYTES ahead without
 * forming a pointer past the end of the source. */
static inline size_t mp_cast_prefetch_end(size_t n, size_t esize)
{
    size_t ahead = MP_CAST_PREFETCH_BYTES / esize;
    return n > ahead ? n - ahead : 0;
}

#endif
