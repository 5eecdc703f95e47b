/* vmath_check.c - the vmath map kernels over the fp32 input space (see vmath_check.h). Each
 * chunk of 64Ki consecutive patterns is computed once by the scalar kernel and once by the
 * level's kernel, the latter in pieces of varying length at a varying offset so unaligned
 * starts and every tail length are exercised; the level's outputs are then compared with a
 * float64 reference built from libm's double functions. Chunks are shared out over a few
 * threads. No Python here. */
#include "vmath_check.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK ((size_t)1 << 16)
#define SLACK 32
#define MAX_THREADS 8

typedef struct {
    const mp_vmath *ref, *vec;
    int kind;
    uint64_t first_chunk, end_chunk, step;
    mp_vmath_check_result r;
    int failed;
} job;

static double phi(double x) { return 0.5 * erfc(-x * 0.70710678118654752440); }

static double sig(double x) { return 1.0 / (1.0 + exp(-x)); }

/* gelu-tanh's inner sqrt(2/pi) (x + 0.044715 x^3) in fp32, in the kernel's operation order:
 * its rounding (amplified ~2|u| times by the sigmoid) is part of the formula, as in torch and
 * mp_gelu_tanh, so the reference starts from the same value. */
static double gelu_inner(float x)
{
    volatile float c = 0.044715f * x * x * x;
    volatile float u = 0.79788456080286535588f * (x + c);
    return (double)u;
}

/* The function the kernel approximates, at the fp32 input x, in double. For the derivatives,
 * which are sums that cross zero, *scale is the magnitude of their largest term: errors are
 * measured in ulps of that, as a root of the sum cannot be found to a relative accuracy. */
static double reference(int kind, float xf, double *scale)
{
    const double c = 0.79788456080286535588, k = 0.044715;   /* sqrt(2/pi), gelu-tanh */
    double x = (double)xf, s, t, u;
    *scale = 0.0;
    switch (kind) {
    case MP_VM_EXP: return exp(x);
    case MP_VM_LOG: return log(x);
    case MP_VM_SIGMOID: return sig(x);
    case MP_VM_TANH: return tanh(x);
    case MP_VM_SILU: return x * sig(x);                 /* -inf * 0: NaN, as the kernel */
    case MP_VM_GELU: return x * phi(x);
    case MP_VM_GELU_TANH: return x * sig(2.0 * gelu_inner(xf));
    case MP_VM_SILU_GRAD:
        s = sig(x);
        t = s * x * sig(-x);
        break;
    case MP_VM_GELU_GRAD:
        s = phi(x);
        t = x * exp(-0.5 * x * x) * 0.39894228040143267794;
        break;
    default:      /* MP_VM_GELU_TANH_GRAD */
        u = gelu_inner(xf);
        s = sig(2.0 * u);
        t = 2.0 * x * s * sig(-2.0 * u) * c * (1.0 + 3.0 * k * x * x);
        break;
    }
    *scale = fmax(fabs(s), fabs(t));
    return s + t;
}

/* |y - ref| in fp32 ulps at max(|ref|, scale); *sub is set when that is below FLT_MIN. */
static double ulp_error(float y, double ref, double scale, int *sub)
{
    *sub = 0;
    if (isnan(ref) || isnan(y))
        return isnan(ref) && isnan(y) ? 0.0 : INFINITY;
    double yd = isinf(y) ? copysign(0x1p128, y) : (double)y;
    if (fabs(ref) >= 0x1p128)
        ref = copysign(0x1p128, ref);
    double a = fmax(fabs(ref), scale);
    if (a < 0x1p-126) {
        *sub = 1;
        return fabs(yd - ref) / 0x1p-149;
    }
    int e;
    frexp(a, &e);                                  /* a in [2^(e-1), 2^e) */
    return fabs(yd - ref) / ldexp(1.0, e - 1 - 23);
}

/* The level's kernel on a chunk in pieces: lengths 0..40 rotated by key, then the rest. */
static void run_pieces(const job *j, uint64_t key, const float *x, float *y)
{
    size_t done = 0;
    for (size_t m = 0; m < 41; m++) {
        size_t len = (size_t)((key + m) % 41);
        j->vec->map[j->kind](x + done, y + done, len);
        done += len;
    }
    j->vec->map[j->kind](x + done, y + done, CHUNK - done);
}

static void check_chunk(job *j, uint64_t c, float *x, float *want, float *got)
{
    size_t off = (size_t)(c % 13);
    float *xs = x + off, *gs = got + off;
    for (size_t i = 0; i < CHUNK; i++) {
        uint32_t u = (uint32_t)(c * CHUNK + i);
        memcpy(&xs[i], &u, sizeof u);
    }
    j->ref->map[j->kind](xs, want, CHUNK);
    run_pieces(j, c, xs, gs);
    for (size_t i = 0; i < CHUNK; i++) {
        uint32_t pattern = (uint32_t)(c * CHUNK + i);
        if (memcmp(&want[i], &gs[i], sizeof(float)) != 0 && j->r.mismatches++ == 0)
            j->r.first_bad = pattern;
        int sub;
        double scale, ref = reference(j->kind, xs[i], &scale);
        double e = ulp_error(gs[i], ref, scale, &sub);
        if (sub && e > j->r.max_ulp_subnormal) {
            j->r.max_ulp_subnormal = e;
            j->r.worst_subnormal = pattern;
        } else if (!sub && e > j->r.max_ulp) {
            j->r.max_ulp = e;
            j->r.worst = pattern;
        }
    }
    j->r.checked += CHUNK;
}

static void *run_job(void *arg)
{
    job *j = arg;
    float *x = aligned_alloc(64, (CHUNK + SLACK) * sizeof(float));
    float *want = aligned_alloc(64, (CHUNK + SLACK) * sizeof(float));
    float *got = aligned_alloc(64, (CHUNK + SLACK) * sizeof(float));
    if (!x || !want || !got) {
        j->failed = 1;
    } else {
        uint64_t c = (j->first_chunk + j->step - 1) / j->step * j->step;
        for (; c < j->end_chunk; c += j->step)
            check_chunk(j, c, x, want, got);
    }
    free(x);
    free(want);
    free(got);
    return NULL;
}

static int thread_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

static void merge(mp_vmath_check_result *into, const mp_vmath_check_result *r)
{
    if (r->mismatches && (!into->mismatches || r->first_bad < into->first_bad))
        into->first_bad = r->first_bad;
    into->mismatches += r->mismatches;
    into->checked += r->checked;
    if (r->max_ulp > into->max_ulp) {
        into->max_ulp = r->max_ulp;
        into->worst = r->worst;
    }
    if (r->max_ulp_subnormal > into->max_ulp_subnormal) {
        into->max_ulp_subnormal = r->max_ulp_subnormal;
        into->worst_subnormal = r->worst_subnormal;
    }
}

mp_status mp_vmath_check(mp_isa isa, int kind, uint32_t chunk_step,
                         mp_vmath_check_result *res)
{
    const mp_cpu_kernels *vec = mp_cpu_for_isa(isa), *ref = mp_cpu_for_isa(MP_ISA_SCALAR);
    if (!vec || !ref || kind < 0 || kind >= MP_VM_MAP_COUNT || chunk_step == 0)
        return MP_ERR_VALUE;
    uint64_t chunks = ((uint64_t)1 << 32) / CHUNK;
    int nt = chunks / chunk_step >= 2 * MAX_THREADS ? thread_count() : 1;
    job jobs[MAX_THREADS];
    pthread_t tids[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    memset(res, 0, sizeof *res);
    for (int t = 0; t < nt; t++) {
        memset(&jobs[t], 0, sizeof jobs[t]);
        jobs[t].ref = &ref->vm;
        jobs[t].vec = &vec->vm;
        jobs[t].kind = kind;
        jobs[t].first_chunk = chunks * (uint64_t)t / (uint64_t)nt;
        jobs[t].end_chunk = chunks * (uint64_t)(t + 1) / (uint64_t)nt;
        jobs[t].step = chunk_step;
        /* the calling thread takes the first share itself; a failed start does it inline */
        if (t > 0 && pthread_create(&tids[t], NULL, run_job, &jobs[t]) == 0)
            started[t] = 1;
    }
    for (int t = 0; t < nt; t++)
        if (!started[t])
            run_job(&jobs[t]);
    int failed = 0;
    for (int t = 0; t < nt; t++) {
        if (started[t])
            pthread_join(tids[t], NULL);
        failed |= jobs[t].failed;
        merge(res, &jobs[t].r);
    }
    return failed ? MP_ERR_NOMEM : MP_OK;
}
