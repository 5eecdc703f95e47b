/* parallel.c - mp_parallel_for with pthreads (see parallel.h). A thread that cannot be
 * started leaves its range to the calling thread, so the work is always done. */
#define _GNU_SOURCE
#include "parallel.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#define MP_MAX_THREADS 64

static int mp_threads;      /* 0: not decided yet */

static int default_threads(void)
{
    int n = 1;
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
#endif
    const char *env = getenv("MPAMP_NUM_THREADS");
    if (!env || !*env)
        env = getenv("OMP_NUM_THREADS");
    if (env && *env) {
        int k = atoi(env);
        if (k >= 1 && k < n)
            n = k;
    }
    return n < 1 ? 1 : n > MP_MAX_THREADS ? MP_MAX_THREADS : n;
}

int mp_get_num_threads(void)
{
    int n = __atomic_load_n(&mp_threads, __ATOMIC_RELAXED);
    if (!n) {
        n = default_threads();
        __atomic_store_n(&mp_threads, n, __ATOMIC_RELAXED);
    }
    return n;
}

void mp_set_num_threads(int n)
{
    __atomic_store_n(&mp_threads, n < 1 ? 1 : n > MP_MAX_THREADS ? MP_MAX_THREADS : n,
                     __ATOMIC_RELAXED);
}

typedef struct {
    mp_range_fn fn;
    void *ctx;
    int64_t begin, end;
} range_job;

static void *run_job(void *p)
{
    range_job *j = p;
    j->fn(j->ctx, j->begin, j->end);
    return NULL;
}

void mp_parallel_for(int64_t n, int64_t grain, mp_range_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    int64_t k = mp_get_num_threads();
    if (grain < 1)
        grain = 1;
    if (k > n / grain)
        k = n / grain;
    if (k <= 1) {
        fn(ctx, 0, n);
        return;
    }
    range_job jobs[MP_MAX_THREADS];
    pthread_t tids[MP_MAX_THREADS];
    int started[MP_MAX_THREADS] = {0};
    for (int64_t t = 0; t < k; t++) {
        jobs[t] = (range_job){fn, ctx, n * t / k, n * (t + 1) / k};
        if (t > 0)
            started[t] = pthread_create(&tids[t], NULL, run_job, &jobs[t]) == 0;
    }
    run_job(&jobs[0]);
    for (int64_t t = 1; t < k; t++) {
        if (started[t])
            pthread_join(tids[t], NULL);
        else
            run_job(&jobs[t]);        /* could not start a thread: do its share here */
    }
}
