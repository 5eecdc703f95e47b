/* alloc.c - caching CPU allocator behind mp_alloc/mp_free.
 * Sizes round up to a class (64-byte steps up to 512 B, then four classes per power of two,
 * so at most 25% waste); a freed block goes onto its class's free list, threaded through the
 * block itself, until the cache limit is reached. One mutex guards the lists. Blocks of 4 MiB
 * and more are advised to use transparent huge pages. The GEMM's packing buffers come
 * from here too (cpu/gemm.c asks through mp_gemm_set_allocator). A failed system allocation
 * releases the cache, then retries once. */
#define _DEFAULT_SOURCE        /* madvise / MADV_HUGEPAGE under -std=c11 */
#include "alloc.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#define MP_NCLASSES 256
#define MP_HUGE_MIN ((size_t)4 << 20)

static pthread_mutex_t mp_alloc_lock = PTHREAD_MUTEX_INITIALIZER;
static void *mp_free_lists[MP_NCLASSES];
static mp_alloc_stats mp_stats;
static size_t mp_cache_limit;
static int mp_cache_limit_set;


/* Class index and rounded size for n bytes; returns -1 when n is too large to represent. */
static int size_class(size_t n, size_t *rounded)
{
    if (n <= 512) {
        size_t r = n ? (n + 63) & ~(size_t)63 : 64;
        *rounded = r;
        return (int)(r / 64) - 1;                      /* 0..7 */
    }
    int p = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^p < n <= 2^(p+1) */
    if (p >= 60)
        return -1;
    size_t base = (size_t)1 << p;                      /* classes base + k * base/4 */
    size_t step = base / 4;
    size_t k = (n - base + step - 1) / step;           /* 1..4 */
    *rounded = base + k * step;
    return 8 + (p - 9) * 4 + (int)(k - 1);
}

static size_t cache_limit(void)
{
    if (!mp_cache_limit_set) {
        const char *env = getenv("MPAMP_CACHE_LIMIT_MB");
        mp_cache_limit = env ? (size_t)strtoull(env, NULL, 10) << 20 : (size_t)1 << 30;
        mp_cache_limit_set = 1;
    }
    return mp_cache_limit;
}

/* caller holds mp_alloc_lock */
static void count_in_use(size_t rounded)
{
    mp_stats.in_use_bytes += rounded;
    if (mp_stats.in_use_bytes > mp_stats.peak_in_use_bytes)
        mp_stats.peak_in_use_bytes = mp_stats.in_use_bytes;
}

/* As NumPy does for arrays of 4 MiB and more: with one TLB entry per 2 MiB instead of 512, a
 * single core streams through a large tensor faster (~10% on the 256 MiB casts of
 * benchmarks/bench_cast.py). Only advice: a no-op where THP is off or unsupported. */
static void advise_huge_pages(void *p, size_t n)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    long page = sysconf(_SC_PAGESIZE);
    if (n < MP_HUGE_MIN || page <= 0)
        return;
    uintptr_t mask = (uintptr_t)page - 1;
    uintptr_t lo = ((uintptr_t)p + mask) & ~mask, hi = ((uintptr_t)p + n) & ~mask;
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p, (void)n;
#endif
}

/* "1610612736 bytes (1.50 GiB)", or "512 bytes", for messages. */
static void format_bytes(char *buf, size_t cap, size_t n)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1024.0 && u < 6)
        v /= 1024.0, u++;
    if (u == 0)
        snprintf(buf, cap, "%zu bytes", n);
    else
        snprintf(buf, cap, "%zu bytes (%.2f %s)", n, v, units[u]);
}

/* The system refused `rounded` bytes: note what every cache holds, release them all, retry
 * once; on failure set a message naming the request and what was held. */
static void *alloc_under_pressure(size_t nbytes, size_t rounded)
{
    pthread_mutex_lock(&mp_alloc_lock);
    size_t own = mp_stats.cached_bytes, in_use = mp_stats.in_use_bytes;
    pthread_mutex_unlock(&mp_alloc_lock);
    mp_alloc_empty_cache();
    void *p = aligned_alloc(MP_ALIGNMENT, rounded);
    if (p)
        return p;
    char want[48], own_text[48], busy[48];
    format_bytes(want, sizeof want, nbytes);
    format_bytes(own_text, sizeof own_text, own);
    format_bytes(busy, sizeof busy, in_use);
    mp_error(MP_ERR_NOMEM, "out of memory: failed to allocate %s, even after releasing the "
             "cache and retrying; the cache held %s (tensors and GEMM packing buffers); in "
             "use: %s", want, own_text, busy);
    return NULL;
}

void *mp_alloc(size_t nbytes)
{
    size_t rounded;
    int cls = size_class(nbytes, &rounded);
    if (cls < 0 || cls >= MP_NCLASSES) {
        mp_error(MP_ERR_NOMEM, "cannot allocate %zu bytes: the size is too large", nbytes);
        return NULL;
    }
    void *p = NULL;
    pthread_mutex_lock(&mp_alloc_lock);
    mp_stats.allocs++;
    if (mp_free_lists[cls]) {
        p = mp_free_lists[cls];
        mp_free_lists[cls] = *(void **)p;
        mp_stats.cache_hits++;
        mp_stats.cached_bytes -= rounded;
        count_in_use(rounded);
    }
    pthread_mutex_unlock(&mp_alloc_lock);
    if (p)
        return p;
    p = aligned_alloc(MP_ALIGNMENT, rounded);
    if (!p)
        p = alloc_under_pressure(nbytes, rounded);
    if (!p)
        return NULL;
    advise_huge_pages(p, rounded);
    pthread_mutex_lock(&mp_alloc_lock);
    mp_stats.system_allocs++;
    count_in_use(rounded);
    pthread_mutex_unlock(&mp_alloc_lock);
    return p;
}

void mp_free(void *ptr, size_t nbytes)
{
    if (!ptr)
        return;
    size_t rounded = 0;
    int cls = size_class(nbytes, &rounded);      /* valid: mp_alloc accepted this size */
    pthread_mutex_lock(&mp_alloc_lock);
    mp_stats.in_use_bytes -= rounded;
    if (mp_stats.cached_bytes + rounded <= cache_limit()) {
        *(void **)ptr = mp_free_lists[cls];
        mp_free_lists[cls] = ptr;
        mp_stats.cached_bytes += rounded;
        ptr = NULL;
    }
    pthread_mutex_unlock(&mp_alloc_lock);
    free(ptr);
}

void mp_alloc_get_stats(mp_alloc_stats *out)
{
    pthread_mutex_lock(&mp_alloc_lock);
    *out = mp_stats;
    pthread_mutex_unlock(&mp_alloc_lock);
}

void mp_alloc_reset_peak(void)
{
    pthread_mutex_lock(&mp_alloc_lock);
    mp_stats.peak_in_use_bytes = mp_stats.in_use_bytes;
    pthread_mutex_unlock(&mp_alloc_lock);
}

void mp_alloc_empty_cache(void)
{
    pthread_mutex_lock(&mp_alloc_lock);
    for (int c = 0; c < MP_NCLASSES; c++) {
        void *p = mp_free_lists[c];
        while (p) {
            void *next = *(void **)p;
            free(p);
            p = next;
        }
        mp_free_lists[c] = NULL;
    }
    mp_stats.cached_bytes = 0;
    pthread_mutex_unlock(&mp_alloc_lock);
}

void mp_alloc_set_cache_limit(size_t bytes)
{
    pthread_mutex_lock(&mp_alloc_lock);
    cache_limit();
    mp_cache_limit = bytes;
    pthread_mutex_unlock(&mp_alloc_lock);
    if (mp_stats.cached_bytes > bytes)
        mp_alloc_empty_cache();
}
