/* peak.c - runs the peak loops of peak_<isa>.c (see peak.h) on N threads for a fixed time.
 * Every thread warms up (clocks ramp, pages of the stack are touched), waits for a common
 * start, then calls its loop in short chunks and reads the clock between chunks. The result is
 * the flops of all threads over the wall time from that start to the last thread's finish.
 * Plain pthreads, not mp_parallel_for: the thread count is the caller's, not the pool's. */
#define _GNU_SOURCE
#include "peak.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "../cpu/dispatch.h"

#define PEAK_CHUNK 2048     /* loop iterations between clock reads: tens of microseconds */
#define PEAK_WARMUP 0.1     /* fraction of the run spent warming up before the start */

typedef double (*peak_loop)(int64_t iters, float *sink);

typedef struct {
    peak_loop loop;
    double seconds;
    double t0;              /* common start; valid once `go` is set */
    int ready;              /* workers that finished warming up (atomic) */
    int go;                 /* atomic */
} peak_shared;

typedef struct {
    peak_shared *sh;
    double flops, end;
    float sink;
} peak_job;

static const char *const kind_names[MP_PEAK_KIND_COUNT] = {"fp32_fma", "bf16_dot"};

int mp_peak_kind_from_name(const char *name)
{
    for (int i = 0; i < MP_PEAK_KIND_COUNT; i++)
        if (strcmp(name, kind_names[i]) == 0)
            return i;
    return -1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void warm_up(peak_job *j)
{
    double until = now() + PEAK_WARMUP * j->sh->seconds;
    do
        j->sh->loop(PEAK_CHUNK, &j->sink);
    while (now() < until);
}

static void timed(peak_job *j)
{
    double deadline = j->sh->t0 + j->sh->seconds, t, flops = 0.0;
    do {
        flops += j->sh->loop(PEAK_CHUNK, &j->sink);
        t = now();
    } while (t < deadline);
    j->flops = flops;
    j->end = t;
}

static void *worker(void *p)
{
    peak_job *j = p;
    warm_up(j);
    __atomic_add_fetch(&j->sh->ready, 1, __ATOMIC_ACQ_REL);
    while (!__atomic_load_n(&j->sh->go, __ATOMIC_ACQUIRE))
        sched_yield();      /* yield: with more threads than cores the others need the core */
    timed(j);
    return NULL;
}

static peak_loop pick(mp_peak_kind kind)
{
#if defined(__x86_64__) && defined(__GNUC__)
    mp_isa isa = mp_cpu()->isa;
    if (kind == MP_PEAK_FP32_FMA && isa >= MP_ISA_AVX512)
        return mp_peak_fma_avx512;
    if (kind == MP_PEAK_FP32_FMA && isa >= MP_ISA_AVX2)
        return mp_peak_fma_avx2;
    if (kind == MP_PEAK_BF16_DOT && isa >= MP_ISA_AVX512BF16)
        return mp_peak_dot_avx512bf16;
#endif
    (void)kind;
    return NULL;
}

static void start(peak_shared *sh)
{
    sh->t0 = now();
    __atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
}

int mp_cpu_peak_gflops(mp_peak_kind kind, int threads, double seconds, double *gflops)
{
    *gflops = 0.0;
    peak_loop loop = pick(kind);
    if (!loop)
        return 0;
    peak_shared sh = {loop, seconds, 0.0, 0, 0};
    peak_job jobs[MP_PEAK_MAX_THREADS];
    pthread_t tids[MP_PEAK_MAX_THREADS];
    int started = 1;
    for (int t = 0; t < threads; t++)
        jobs[t] = (peak_job){&sh, 0.0, 0.0, 0.0f};
    for (; started < threads; started++)
        if (pthread_create(&tids[started], NULL, worker, &jobs[started]) != 0)
            break;
    if (started < threads) {    /* let the started ones finish, then report the failure */
        start(&sh);
        for (int t = 1; t < started; t++)
            pthread_join(tids[t], NULL);
        return -1;
    }
    warm_up(&jobs[0]);
    while (__atomic_load_n(&sh.ready, __ATOMIC_ACQUIRE) < threads - 1)
        sched_yield();
    start(&sh);
    timed(&jobs[0]);
    double flops = jobs[0].flops, end = jobs[0].end;
    for (int t = 1; t < threads; t++) {
        pthread_join(tids[t], NULL);
        flops += jobs[t].flops;
        end = jobs[t].end > end ? jobs[t].end : end;
    }
    *gflops = flops / (end - sh.t0) / 1e9;
    return 1;
}
