/* cast_check.c - exhaustive comparison of a vector cast kernel with the scalar oracle.
 * Inputs are generated in chunks of 64Ki patterns; each chunk is converted once by the scalar
 * kernel and once by the vector kernel, the latter in pieces of varying length at a varying
 * offset, so unaligned starts and every tail length get exercised on the way. The 2^32 fp32
 * patterns are shared out over a few threads. No Python here. */
#include "cast_check.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK ((size_t)1 << 16)
#define SLACK 64          /* extra elements so the vector call can start at an odd offset */
#define MAX_THREADS 8
#define UPCAST_PASSES 40  /* the 16-bit domain is converted this many times, split differently */

static const char *const kind_names[MP_CAST_KIND_COUNT] = {"f32_to_f16", "f16_to_f32",
                                                            "f32_to_bf16", "bf16_to_f32"};

int mp_cast_kind_from_name(const char *name)
{
    for (int i = 0; i < MP_CAST_KIND_COUNT; i++)
        if (strcmp(name, kind_names[i]) == 0)
            return i;
    return -1;
}

typedef struct {
    const mp_cpu_kernels *ref, *vec;
    int which;
    uint64_t first_chunk, end_chunk;   /* chunk c holds patterns c*CHUNK .. (c+1)*CHUNK-1 */
    uint64_t step;                     /* check the chunks that are multiples of step */
    uint64_t mismatches;
    uint32_t first_bad;                /* lowest mismatching pattern */
    uint8_t *seen;                     /* 16-bit inputs: patterns already counted */
    int failed;                        /* could not allocate its buffers */
} job;

/* One conversion of n elements with the kernel table k; src and dst are raw buffers. */
static void convert(const mp_cpu_kernels *k, int which, const void *src, void *dst, size_t n)
{
    switch (which) {
    case MP_CAST_F32_TO_F16: k->f32_to_f16(src, dst, n); break;
    case MP_CAST_F16_TO_F32: k->f16_to_f32(src, dst, n); break;
    case MP_CAST_F32_TO_BF16: k->f32_to_bf16(src, dst, n); break;
    default: k->bf16_to_f32(src, dst, n); break;
    }
}

static size_t src_size(int which)
{
    return which == MP_CAST_F32_TO_F16 || which == MP_CAST_F32_TO_BF16 ? 4 : 2;
}

/* Fills src (element size es) with the patterns base .. base+n-1. */
static void fill_patterns(char *src, size_t es, uint64_t base, size_t n)
{
    if (es == 4) {
        uint32_t *p = (uint32_t *)src;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint32_t)(base + i);
    } else {
        uint16_t *p = (uint16_t *)src;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint16_t)(base + i);
    }
}

/* The vector kernel converts a chunk in pieces, so that calls start at every alignment and
 * end in every tail length. Pass 0: lengths 0..70 rotated by `key`, back to back, then the
 * rest in one call. Pass p > 0 (the 16-bit domain, which is one chunk, gets UPCAST_PASSES):
 * pieces of p elements throughout, so every pattern also goes through the tail code. */
static void convert_pieces(const job *j, int pass, uint64_t key, const char *src, char *dst)
{
    size_t es = src_size(j->which), ds = 6 - es;     /* 4 <-> 2 bytes */
    size_t done = 0;
    for (size_t m = 0; pass == 0 && m < 71; m++) {
        size_t len = (size_t)((key + m) % 71);
        convert(j->vec, j->which, src + done * es, dst + done * ds, len);
        done += len;
    }
    size_t piece = pass == 0 ? CHUNK : (size_t)pass;
    for (; done < CHUNK; done += piece) {
        size_t len = CHUNK - done < piece ? CHUNK - done : piece;
        convert(j->vec, j->which, src + done * es, dst + done * ds, len);
    }
}

static void record_mismatch(job *j, uint32_t pattern)
{
    if (j->seen) {                                   /* count each pattern once over passes */
        if (j->seen[pattern])
            return;
        j->seen[pattern] = 1;
    }
    if (j->mismatches++ == 0 || pattern < j->first_bad)
        j->first_bad = pattern;
}

static void check_chunk(job *j, uint64_t c, int pass, char *src, char *want, char *got)
{
    size_t es = src_size(j->which), ds = 6 - es;
    uint64_t key = c + (uint64_t)pass;
    size_t off = (size_t)(key % 17);                 /* odd start offsets for both buffers */
    uint64_t base = c * CHUNK;
    fill_patterns(src + off * es, es, base, CHUNK);
    convert(j->ref, j->which, src + off * es, want, CHUNK);
    convert_pieces(j, pass, key, src + off * es, got + off * ds);
    if (memcmp(want, got + off * ds, CHUNK * ds) == 0)
        return;
    for (size_t i = 0; i < CHUNK; i++)
        if (memcmp(want + i * ds, got + (off + i) * ds, ds) != 0)
            record_mismatch(j, (uint32_t)(base + i));
}

static void *run_job(void *arg)
{
    job *j = arg;
    int passes = src_size(j->which) == 2 ? UPCAST_PASSES : 1;
    char *src = aligned_alloc(64, (CHUNK + SLACK) * 4);
    char *want = aligned_alloc(64, (CHUNK + SLACK) * 4);
    char *got = aligned_alloc(64, (CHUNK + SLACK) * 4);
    j->seen = passes > 1 ? calloc(CHUNK, 1) : NULL;
    if (!src || !want || !got || (passes > 1 && !j->seen)) {
        j->failed = 1;
    } else {
        uint64_t c = (j->first_chunk + j->step - 1) / j->step * j->step;
        for (; c < j->end_chunk; c += j->step)
            for (int pass = 0; pass < passes; pass++)
                check_chunk(j, c, pass, src, want, got);
    }
    free(src);
    free(want);
    free(got);
    free(j->seen);
    j->seen = NULL;
    return NULL;
}

static int thread_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

mp_status mp_cast_check_exhaustive(mp_isa isa, int which, uint64_t *mismatches,
                                   uint32_t *first_bad)
{
    const mp_cpu_kernels *vec = mp_cpu_for_isa(isa);
    if (!vec)
        return MP_ERR_VALUE;
    return mp_cast_check_tables(mp_cpu_for_isa(MP_ISA_SCALAR), vec, which, 1, mismatches,
                                first_bad);
}

mp_status mp_cast_check_tables(const mp_cpu_kernels *ref, const mp_cpu_kernels *vec, int which,
                               uint32_t chunk_step, uint64_t *mismatches, uint32_t *first_bad)
{
    if (which < 0 || which >= MP_CAST_KIND_COUNT || chunk_step == 0)
        return MP_ERR_VALUE;
    uint64_t chunks = ((uint64_t)1 << (8 * src_size(which))) / CHUNK;
    int nt = chunks / chunk_step >= 2 * MAX_THREADS ? thread_count() : 1;
    job jobs[MAX_THREADS];
    pthread_t tids[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int t = 0; t < nt; t++) {
        job j = {ref, vec, which, chunks * (uint64_t)t / (uint64_t)nt,
                 chunks * (uint64_t)(t + 1) / (uint64_t)nt, chunk_step, 0, 0, NULL, 0};
        jobs[t] = j;
        /* the calling thread takes the first share itself; a failed start does it inline */
        if (t > 0 && pthread_create(&tids[t], NULL, run_job, &jobs[t]) == 0)
            started[t] = 1;
    }
    for (int t = 0; t < nt; t++)
        if (!started[t])
            run_job(&jobs[t]);
    uint64_t total = 0;
    int failed = 0, found = 0;
    for (int t = 0; t < nt; t++) {
        if (started[t])
            pthread_join(tids[t], NULL);
        failed |= jobs[t].failed;
        total += jobs[t].mismatches;
        if (jobs[t].mismatches && !found) {   /* shares are in ascending pattern order */
            *first_bad = jobs[t].first_bad;
            found = 1;
        }
    }
    if (failed)
        return MP_ERR_NOMEM;
    *mismatches = total;
    return MP_OK;
}
