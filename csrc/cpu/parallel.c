/* parallel.c - mp_parallel_for on a persistent pool of worker threads (see parallel.h).
 * A region is published by bumping a generation counter; workers spin on it for a while after
 * each region (a training step's regions come back to back), then sleep on a condition
 * variable. One region runs at a time: a caller that finds the pool busy (another Python
 * thread's region) or that is itself inside a region runs its work inline, so nothing can
 * deadlock. A forked child starts with no workers and creates its own on first use. A worker
 * that cannot be started leaves its range to the calling thread, so the work is always done. */
#define _GNU_SOURCE
#include "parallel.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define MP_MAX_THREADS 64
#define SPIN_ROUNDS 20000              /* ~50-100 us of pause loops before a worker sleeps */

static int mp_threads;      /* 0: not decided yet */

/* Ranks of an MPI job on this machine (Open MPI, MPICH/Intel MPI, torchrun's variable), so
 * ranks x threads does not exceed the cores by default. */
static int local_ranks(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                       "LOCAL_WORLD_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 1)
            return atoi(v);
    }
    return 1;
}

static int default_threads(void)
{
    int n = 1;
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
#endif
    n /= local_ranks();
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

/* ---- the pool ---- */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int busy;                       /* a region is being run (atomic) */
    int workers;                    /* started so far (only the busy caller changes it) */
    int sleepers;                   /* under lock */
    uint64_t gen;                   /* even: a region's fields are valid (atomic) */
    /* the current region: written before gen is bumped, read after */
    mp_range_fn fn;
    void *ctx;
    int64_t n, k;
    int done;                       /* workers finished with the region (atomic) */
    uint64_t birth_gen;             /* gen when the newest workers were started */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, NULL, NULL, 0, 0,
          0, 0};

static _Thread_local int in_region;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* The region fields are published like a seqlock: gen is odd while they are written and
 * even once they are valid; a reader that sees gen change under it reads again. */
#define LOAD(field) __atomic_load_n(&pool.field, __ATOMIC_RELAXED)
#define STORE(field, v) __atomic_store_n(&pool.field, (v), __ATOMIC_RELAXED)

static int published(uint64_t g, uint64_t seen)
{
    return g != seen && !(g & 1);
}

/* Blocks until gen holds a region other than `seen`; returns that gen. */
static uint64_t wait_region(uint64_t seen)
{
    uint64_t g;
    int spins = 0;
    while (!published(g = __atomic_load_n(&pool.gen, __ATOMIC_ACQUIRE), seen)) {
        if (++spins < SPIN_ROUNDS) {
            cpu_relax();
            continue;
        }
        pthread_mutex_lock(&pool.lock);
        pool.sleepers++;
        while (!published(__atomic_load_n(&pool.gen, __ATOMIC_ACQUIRE), seen))
            pthread_cond_wait(&pool.wake, &pool.lock);
        pool.sleepers--;
        pthread_mutex_unlock(&pool.lock);
        spins = 0;
    }
    return g;
}

/* Worker t (1-based: the caller is 0): runs its range of every region it takes part in. A
 * region starts only after every worker of the previous one has finished, so a worker that
 * takes part always reads its region's fields; one that sits a region out may meet the next
 * one being written, and then reads again. */
static void *worker_main(void *arg)
{
    int64_t t = (int64_t)(intptr_t)arg;
    uint64_t seen = pool.birth_gen;     /* the region it was started for is newer */
    in_region = 1;
    for (;;) {
        uint64_t g = wait_region(seen);
        mp_range_fn fn = LOAD(fn);
        void *ctx = LOAD(ctx);
        int64_t n = LOAD(n), k = LOAD(k);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&pool.gen, __ATOMIC_RELAXED) != g)
            continue;
        seen = g;
        if (t >= k)
            continue;
        fn(ctx, n * t / k, n * (t + 1) / k);
        __atomic_add_fetch(&pool.done, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* After fork only the forking thread exists: the child forgets the parent's workers. */
static void atfork_child(void)
{
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pool.busy = 0, pool.workers = 0, pool.sleepers = 0, pool.done = 0;
    in_region = 0;
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, atfork_child);
}

/* Starts workers up to k - 1; returns how many exist (fewer when a start failed). */
static int grow(int64_t k)
{
    pthread_once(&atfork_once, register_atfork);
    pool.birth_gen = LOAD(gen);     /* pthread_create orders this before the worker reads it */
    while (pool.workers < k - 1) {
        pthread_t tid;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&tid, &attr, worker_main, (void *)(intptr_t)(pool.workers + 1));
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
        pool.workers++;
    }
    return pool.workers;
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
    if (k <= 1 || in_region || __atomic_exchange_n(&pool.busy, 1, __ATOMIC_ACQUIRE)) {
        fn(ctx, 0, n);              /* small, nested, or another thread holds the pool */
        return;
    }
    int64_t have = grow(k) + 1;     /* threads that will take part, the caller included */
    if (have > k)                   /* more workers than this region needs: some sit out */
        have = k;
    uint64_t g = LOAD(gen);
    STORE(gen, g + 1);              /* odd: being written */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    STORE(fn, fn), STORE(ctx, ctx), STORE(n, n), STORE(k, k), STORE(done, 0);
    __atomic_store_n(&pool.gen, g + 2, __ATOMIC_RELEASE);
    pthread_mutex_lock(&pool.lock);
    if (pool.sleepers)
        pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    in_region = 1;
    fn(ctx, 0, n / k);
    for (int64_t t = have; t < k; t++)      /* ranges of workers that could not start */
        fn(ctx, n * t / k, n * (t + 1) / k);
    in_region = 0;
    int spins = 0;
    while (__atomic_load_n(&pool.done, __ATOMIC_ACQUIRE) < have - 1) {
        cpu_relax();
        if (++spins > 1000)         /* a worker may have lost its core: let it run */
            sched_yield(), spins = 0;
    }
    __atomic_store_n(&pool.busy, 0, __ATOMIC_RELEASE);
}

int mp_parallel_workers(void)
{
    return __atomic_load_n(&pool.workers, __ATOMIC_RELAXED);
}
