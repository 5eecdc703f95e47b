/* sim_arena.c - the simulated GPU's memory (see sim.h): one memfd mapped twice, the device
 * view PROT_NONE and the kernels' alias read-write, at a constant distance. Blocks come from a
 * bump pointer and are cached by size class (the CPU allocator's classes: 64-byte steps to
 * 512 B, then four per power of two) for reuse; empty_cache gives the pages of cached blocks
 * back to the kernel (the address ranges stay cached). Bookkeeping lives on the host side,
 * never inside device memory. One mutex guards it all. */
#define _GNU_SOURCE            /* memfd_create, fallocate */
#include "sim.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NCLASSES 256
#define ALIGN 256              /* cudaMalloc's alignment */

typedef struct {
    size_t *offs;
    size_t n, cap;
    size_t rounded;
} free_list;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char *dev_base;         /* PROT_NONE view: what tensors hold */
static char *rw_base;          /* the alias kernels use: dev_base + arena_size */
static size_t arena_size;
static size_t bump;            /* bytes handed out from the top so far */
static free_list lists[NCLASSES];
static mp_device_stats stats;
static int forked;
static int map_failed;
static char map_error[160];

static void on_fork_child(void)
{
    forked = 1;
}

static void map_arena(void)
{
    const char *env = getenv("MPAMP_CUDA_SIM_MB");
    size_t mb = env && *env ? (size_t)strtoull(env, NULL, 10) : 16384;
    if (mb < 1)
        mb = 1;
    arena_size = mb << 20;
    int fd = memfd_create("mpamp-sim-gpu", MFD_CLOEXEC);
    void *region = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, (off_t)arena_size) == 0)
        region = mmap(NULL, 2 * arena_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
                      MAP_NORESERVE, -1, 0);
    if (region != MAP_FAILED &&
        mmap(region, arena_size, PROT_NONE, MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED &&
        mmap((char *)region + arena_size, arena_size, PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED) {
        dev_base = region;
        rw_base = (char *)region + arena_size;
        pthread_atfork(NULL, NULL, on_fork_child);
    } else {
        map_failed = 1;
        snprintf(map_error, sizeof map_error, "the simulated GPU could not map %zu MiB of "
                 "memory (MPAMP_CUDA_SIM_MB)", mb);
    }
    if (fd >= 0)
        close(fd);   /* the mappings keep the memfd alive */
}

static int ready(mp_msg *msg)
{
    pthread_once(&once, map_arena);
    if (map_failed) {
        snprintf(msg->text, sizeof msg->text, "%s", map_error);
        return 0;
    }
    if (forked) {
        snprintf(msg->text, sizeof msg->text, "Cannot re-initialize CUDA in forked subprocess. "
                 "To use CUDA with multiprocessing, you must use the 'spawn' start method");
        return 0;
    }
    return 1;
}

int mp_sim_forked(void)
{
    return forked;
}

size_t mp_sim_arena_size(void)
{
    pthread_once(&once, map_arena);
    return map_failed ? 0 : arena_size;
}

static int size_class(size_t n, size_t *rounded)
{
    if (n <= 512) {
        size_t r = n ? (n + 63) & ~(size_t)63 : 64;
        *rounded = r < ALIGN ? ALIGN : r;
        return (int)(r / 64) - 1;
    }
    int p = 63 - __builtin_clzll((unsigned long long)(n - 1));
    if (p >= 60)
        return -1;
    size_t base = (size_t)1 << p, step = base / 4;
    size_t k = (n - base + step - 1) / step;
    *rounded = base + k * step;
    return 8 + (p - 9) * 4 + (int)(k - 1);
}

static void note_alloc(size_t rounded)
{
    stats.allocated += rounded;
    if (stats.allocated > stats.peak_allocated)
        stats.peak_allocated = stats.allocated;
}

static void note_reserved(size_t add)
{
    stats.reserved += add;
    if (stats.reserved > stats.peak_reserved)
        stats.peak_reserved = stats.reserved;
}

static void oom_message(mp_msg *msg, size_t nbytes)
{
    double gib = 1024.0 * 1024.0 * 1024.0;
    snprintf(msg->text, sizeof msg->text, "CUDA out of memory. Tried to allocate %.2f MiB. GPU 0 "
             "has a total capacity of %.2f GiB of which %.2f GiB is free. %.2f GiB is "
             "allocated by mpamp, and %.2f GiB is reserved by mpamp but unallocated",
             (double)nbytes / (1024.0 * 1024.0), (double)arena_size / gib,
             (double)(arena_size - bump) / gib, (double)stats.allocated / gib,
             (double)(stats.reserved - stats.allocated) / gib);
}

mp_status mp_sim_arena_alloc(size_t nbytes, void **out, mp_msg *msg)
{
    *out = NULL;
    if (!ready(msg))
        return MP_ERR_CUDA;
    size_t rounded = 0;
    int c = size_class(nbytes, &rounded);
    pthread_mutex_lock(&lock);
    stats.alloc_calls++;
    if (c >= 0 && c < NCLASSES && lists[c].n > 0) {
        size_t off = lists[c].offs[--lists[c].n];
        stats.cache_hits++;
        note_alloc(rounded);
        if (off & 1) {                 /* pages given back by empty_cache: reserved again */
            off &= ~(size_t)1;
            note_reserved(rounded);
        }
        pthread_mutex_unlock(&lock);
        *out = dev_base + off;
        return MP_OK;
    }
    if (c < 0 || c >= NCLASSES || rounded > arena_size - bump) {
        oom_message(msg, nbytes);
        pthread_mutex_unlock(&lock);
        return MP_ERR_NOMEM;
    }
    size_t off = bump;
    bump += (rounded + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    note_alloc(rounded);
    note_reserved(rounded);
    pthread_mutex_unlock(&lock);
    *out = dev_base + off;
    return MP_OK;
}

void mp_sim_arena_free(void *ptr, size_t nbytes)
{
    if (!ptr || forked)
        return;           /* a forked child must not touch the parent's (shared) arena */
    size_t rounded = 0;
    int c = size_class(nbytes, &rounded);
    pthread_mutex_lock(&lock);
    free_list *l = &lists[c];
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        size_t *p = realloc(l->offs, cap * sizeof *p);
        if (!p) {         /* cannot cache it: the range is lost, the memory stays counted */
            pthread_mutex_unlock(&lock);
            return;
        }
        l->offs = p;
        l->cap = cap;
    }
    l->offs[l->n++] = (size_t)((char *)ptr - dev_base);
    l->rounded = rounded;
    stats.allocated -= rounded;
    pthread_mutex_unlock(&lock);
}

void mp_sim_arena_empty_cache(void)
{
    if (forked || !dev_base)
        return;
    pthread_mutex_lock(&lock);
    for (int c = 0; c < NCLASSES; c++) {
        for (size_t i = 0; i < lists[c].n; i++) {
            size_t off = lists[c].offs[i];
            if (off & 1)
                continue;
            /* MADV_REMOVE frees a shared mapping's pages (reads see zeros again) */
            madvise(rw_base + off, lists[c].rounded, MADV_REMOVE);
            lists[c].offs[i] = off | 1;
            stats.reserved -= lists[c].rounded;
        }
    }
    pthread_mutex_unlock(&lock);
}

void mp_sim_arena_stats(mp_device_stats *out)
{
    pthread_mutex_lock(&lock);
    *out = stats;
    pthread_mutex_unlock(&lock);
}

void mp_sim_arena_reset_peak(void)
{
    pthread_mutex_lock(&lock);
    stats.peak_allocated = stats.allocated;
    stats.peak_reserved = stats.reserved;
    pthread_mutex_unlock(&lock);
}

void mp_sim_count(mp_copy_kind kind)
{
    pthread_mutex_lock(&lock);
    if (kind == MP_COPY_H2D)
        stats.h2d++;
    else if (kind == MP_COPY_D2H)
        stats.d2h++;
    else
        stats.d2d++;
    pthread_mutex_unlock(&lock);
}

void mp_sim_count_sync(void)
{
    pthread_mutex_lock(&lock);
    stats.syncs++;
    pthread_mutex_unlock(&lock);
}

char *mp_sim_translate(const void *p, int64_t lo, int64_t hi)
{
    if (!dev_base)
        return NULL;
    const char *c = p;
    if (c < dev_base || c >= dev_base + arena_size)
        return NULL;
    int64_t off = c - dev_base;
    if (off + lo < 0 || off + hi > (int64_t)arena_size || lo > hi)
        return NULL;
    return rw_base + off;
}
