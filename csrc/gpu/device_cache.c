/* device_cache.c - the real GPU's caching allocator (mp_gpu_cache.h): blocks from cudaMalloc
 * rounded to 512 bytes (small) or 2 MiB (large), kept on free lists by rounded size when
 * freed, so a steady training loop makes no cudaMalloc (torch's caching allocator on one
 * stream: a block freed on the default stream is safe to hand out again in stream order).
 * Counters feed torch.cuda.memory_stats. Plain C over mp_cuda_api.h; one mutex. */
#include "mp_gpu_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SMALL_MAX (1u << 20)
#define SMALL_STEP 512u
#define LARGE_STEP (2u << 20)
#define NSMALL (SMALL_MAX / SMALL_STEP)

typedef struct {
    void **ptr;
    size_t *size;                 /* large list only: each block's rounded size */
    size_t n, cap;
} block_list;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static block_list small[NSMALL + 1], large;
static mp_device_stats stats;
static size_t cached;

size_t mp_gpu_cache_round(size_t nbytes)
{
    if (nbytes <= SMALL_MAX)
        return (nbytes + SMALL_STEP - 1) / SMALL_STEP * SMALL_STEP;
    return (nbytes + LARGE_STEP - 1) / LARGE_STEP * LARGE_STEP;
}

static int push(block_list *l, void *p, size_t size)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        void **np = realloc(l->ptr, cap * sizeof *np);
        if (!np)
            return 0;
        l->ptr = np;
        size_t *ns = realloc(l->size, cap * sizeof *ns);
        if (!ns)
            return 0;
        l->size = ns;
        l->cap = cap;
    }
    l->ptr[l->n] = p;
    l->size[l->n] = size;
    l->n++;
    return 1;
}

/* A cached block of exactly `size` bytes, or NULL. */
static void *pop(size_t size)
{
    block_list *l = size <= SMALL_MAX ? &small[size / SMALL_STEP] : &large;
    for (size_t i = l->n; i-- > 0;) {
        if (l->size[i] != size)
            continue;
        void *p = l->ptr[i];
        l->ptr[i] = l->ptr[l->n - 1];
        l->size[i] = l->size[l->n - 1];
        l->n--;
        return p;
    }
    return NULL;
}

static void account(size_t size)
{
    stats.allocated += size;
    if (stats.allocated > stats.peak_allocated)
        stats.peak_allocated = stats.allocated;
    if (stats.allocated + cached > stats.peak_reserved)
        stats.peak_reserved = stats.allocated + cached;
    stats.reserved = stats.allocated + cached;
}

mp_status mp_gpu_cache_alloc(size_t nbytes, void **out, mp_msg *msg)
{
    size_t size = mp_gpu_cache_round(nbytes ? nbytes : 1);
    pthread_mutex_lock(&lock);
    void *p = pop(size);
    if (p) {
        cached -= size;
        stats.cache_hits++;
        account(size);
        pthread_mutex_unlock(&lock);
        *out = p;
        return MP_OK;
    }
    pthread_mutex_unlock(&lock);
    mp_status st = mp_cuda_malloc(&p, size, msg);
    if (st != MP_OK && st != MP_ERR_NO_CUDA) {   /* out of memory: give the cache back, retry */
        mp_gpu_cache_empty();
        st = mp_cuda_malloc(&p, size, msg);
    }
    if (st != MP_OK)
        return st == MP_ERR_CUDA ? MP_ERR_NOMEM : st;
    pthread_mutex_lock(&lock);
    stats.alloc_calls++;
    account(size);
    pthread_mutex_unlock(&lock);
    *out = p;
    return MP_OK;
}

void mp_gpu_cache_free(void *p, size_t nbytes)
{
    if (!p)
        return;
    size_t size = mp_gpu_cache_round(nbytes ? nbytes : 1);
    pthread_mutex_lock(&lock);
    stats.allocated -= size;
    block_list *l = size <= SMALL_MAX ? &small[size / SMALL_STEP] : &large;
    int kept = push(l, p, size);
    if (kept)
        cached += size;
    stats.reserved = stats.allocated + cached;
    pthread_mutex_unlock(&lock);
    if (!kept) {
        mp_msg msg;
        (void)mp_cuda_free(p, &msg);     /* no room to cache it: give it back */
    }
}

void mp_gpu_cache_empty(void)
{
    pthread_mutex_lock(&lock);
    for (size_t c = 0; c <= NSMALL + 1; c++) {
        block_list *l = c <= NSMALL ? &small[c] : &large;
        for (size_t i = 0; i < l->n; i++) {
            mp_msg msg;
            (void)mp_cuda_free(l->ptr[i], &msg);
        }
        l->n = 0;
    }
    cached = 0;
    stats.reserved = stats.allocated;
    pthread_mutex_unlock(&lock);
}

void mp_gpu_cache_stats(mp_device_stats *out)
{
    pthread_mutex_lock(&lock);
    *out = stats;
    pthread_mutex_unlock(&lock);
}

void mp_gpu_cache_count(int what)
{
    pthread_mutex_lock(&lock);
    if (what == 0)
        stats.h2d++;
    else if (what == 1)
        stats.d2h++;
    else if (what == 2)
        stats.d2d++;
    else
        stats.syncs++;
    pthread_mutex_unlock(&lock);
}

void mp_gpu_cache_reset_peak(void)
{
    pthread_mutex_lock(&lock);
    stats.peak_allocated = stats.allocated;
    stats.peak_reserved = stats.reserved;
    pthread_mutex_unlock(&lock);
}
