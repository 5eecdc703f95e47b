/* optim.c - fused multi-tensor optimizer steps (SGD; Adam/AdamW with a decay-mode flag;
 * RMSprop, Adagrad, Adadelta). One call walks every tensor of a param group in chunks:
 * fp16/bf16 weights and grads are widened into small fp32 buffers, fp32 ones are used in
 * place, the shared one-element body runs on fp32, and the result is rounded back (to nearest
 * even, or stochastically for bf16). Does not own the step counters or hyper-parameter
 * bookkeeping (mpamp/optim does). */

#include "optim.h"

#include <stdlib.h>
#include <string.h>

#include "matmul_core.h"
#include "random.h"
#include "../cpu/dispatch.h"
#include "../cpu/optim_kernels.h"
#include "../cpu/parallel.h"

#define CHUNK 1024   /* multiple of 8: a Philox block gives eight 16-bit draws */

typedef void (*span_fn)(float *p, const float *g, float **st, int64_t n, float inv,
                        const void *hyper);

struct job;
/* A fused vector path for one chunk; returns 0 when it does not cover the case. */
typedef int (*fast_fn)(const struct job *j, int i, int64_t s, int64_t len);

/* Everything one step needs, shared read-only by the worker threads. */
typedef struct job {
    const mp_optim_group *g;
    mp_tensor **const *st;      /* up to 3 lists of fp32 state tensors (NULL entries allowed) */
    int nst;
    span_fn fn;
    fast_fn fast;
    const void *hyper;
    float inv;
    uint64_t *ctr;              /* Philox block base per tensor */
    int64_t *units;             /* prefix sums of CHUNK-sized units per tensor (n + 1) */
} job;

static float *f32_at(mp_tensor *t, int64_t i)
{
    return t ? (float *)mp_tensor_data(t) + i : NULL;
}

static void load_f32(const mp_tensor *t, int64_t start, int64_t n, float *dst)
{
    const mp_cpu_kernels *k = mp_cpu();
    const void *src = mp_tensor_data(t);
    if (t->dtype == MP_DTYPE_FLOAT16)
        k->f16_to_f32((const mp_half *)src + start, dst, (size_t)n);
    else
        k->bf16_to_f32((const mp_bf16 *)src + start, dst, (size_t)n);
}

/* Rounds src[0..n) into t[start..start+n); stochastic draws come from Philox block
 * ctr + (start + j) / 8. start is a multiple of 8. */
static void store_rounded(mp_tensor *t, int64_t start, int64_t n, const float *src,
                          const mp_optim_group *g, uint64_t ctr)
{
    void *dst = mp_tensor_data(t);
    if (t->dtype == MP_DTYPE_FLOAT32) {
        float *d = (float *)dst + start;
        for (int64_t j = 0; j < n; j++)
            d[j] = src[j];
    } else if (t->dtype == MP_DTYPE_FLOAT16) {
        mp_cpu()->f32_to_f16(src, (mp_half *)dst + start, (size_t)n);
    } else if (!g->stochastic) {
        mp_cpu()->f32_to_bf16(src, (mp_bf16 *)dst + start, (size_t)n);
    } else {
        mp_bf16 *d = (mp_bf16 *)dst + start;
        for (int64_t j = 0; j < n; j += 8) {
            uint32_t r[4];
            mp_philox(g->seed, ctr + (uint64_t)((start + j) / 8), r);
            for (int k = 0; k < 8 && j + k < n; k++) {
                uint32_t bits = (k & 1) ? r[k / 2] >> 16 : r[k / 2];
                d[j + k] = mp_f32_to_bf16_stochastic(src[j + k], bits);
            }
        }
    }
}

/* One chunk [s, s + len) of tensor i: widen, update in fp32, round back. */
static void walk_chunk(const job *j, int i, int64_t s, int64_t len)
{
    const mp_optim_group *g = j->g;
    mp_tensor *p = g->params[i], *gr = g->grads[i];
    mp_tensor *master = g->masters ? g->masters[i] : NULL;
    float pbuf[CHUNK], gbuf[CHUNK];
    if (j->fast && j->fast(j, i, s, len))
        return;
    float *pp;
    if (master)
        pp = f32_at(master, s);
    else if (p->dtype == MP_DTYPE_FLOAT32)
        pp = f32_at(p, s);
    else
        load_f32(p, s, len, pp = pbuf);
    const float *gp = gbuf;
    if (gr->dtype == MP_DTYPE_FLOAT32)
        gp = f32_at(gr, s);
    else
        load_f32(gr, s, len, gbuf);
    float *sp[3] = {NULL, NULL, NULL};
    for (int k = 0; k < j->nst; k++)
        sp[k] = j->st[k] ? f32_at(j->st[k][i], s) : NULL;
    j->fn(pp, gp, sp, len, j->inv, j->hyper);
    if (master || p->dtype != MP_DTYPE_FLOAT32)
        store_rounded(p, s, len, pp, g, j->ctr[i]);
}

/* Units [u0, u1) of the flattened group (a unit is one chunk of one tensor). */
static void walk_units(const job *j, int64_t u0, int64_t u1)
{
    for (int i = 0; i < j->g->n && u0 < u1; i++) {
        if (j->units[i + 1] <= u0)
            continue;
        int64_t n = mp_tensor_numel(j->g->params[i]);
        for (; u0 < u1 && u0 < j->units[i + 1]; u0++) {
            int64_t s = (u0 - j->units[i]) * CHUNK;
            walk_chunk(j, i, s, n - s < CHUNK ? n - s : CHUNK);
        }
    }
}

static void walk_range(void *ctx, int64_t u0, int64_t u1)
{
    walk_units((const job *)ctx, u0, u1);
}

/* The group's units over the cores, each thread at least ~1M elements (thread start-up
 * would dominate below); results do not depend on the split. */
static void run_parallel(const job *j)
{
    mp_parallel_for(j->units[j->g->n], (1 << 20) / CHUNK, walk_range, (void *)j);
}

static mp_status check_scalar(const mp_tensor *t, const char *name)
{
    if (t->storage->device != MP_DEVICE_CPU)
        return mp_error(MP_ERR_RUNTIME, "%s must be a CPU tensor.", name);
    if (mp_tensor_numel(t) != 1)
        return mp_error(MP_ERR_RUNTIME, "%s must be a 1-element tensor.", name);
    if (t->dtype != MP_DTYPE_FLOAT32)
        return mp_error(MP_ERR_RUNTIME, "%s must be a float tensor.", name);
    return MP_OK;
}

static mp_status check_member(const mp_tensor *t, int64_t numel, int f32_only,
                              const char *what, int i)
{
    if (t->storage->device != MP_DEVICE_CPU)
        return mp_error(MP_ERR_RUNTIME, "fused optimizer step: %s %d is not a CPU tensor", what,
                        i);
    if (!mp_tensor_is_contiguous(t))
        return mp_error(MP_ERR_RUNTIME, "fused optimizer step: %s %d is not contiguous", what,
                        i);
    if (f32_only ? t->dtype != MP_DTYPE_FLOAT32 : !mp_dtype_is_float(t->dtype))
        return mp_error(MP_ERR_TYPE, "fused optimizer step: %s %d has an unsupported dtype "
                        "(%s; expected %s)", what, i, mp_dtype_label(t->dtype),
                        f32_only ? "float32" : "float32, float16 or bfloat16");
    if (mp_tensor_numel(t) != numel)
        return mp_error(MP_ERR_SHAPE, "fused optimizer step: %s %d has %lld elements, the "
                        "parameter has %lld", what, i, (long long)mp_tensor_numel(t),
                        (long long)numel);
    return MP_OK;
}

static mp_status check_group(const mp_optim_group *g, mp_tensor **const st[3], int nst)
{
    mp_status s;
    if (g->grad_scale && (s = check_scalar(g->grad_scale, "grad_scale")) != MP_OK)
        return s;
    if (g->found_inf && (s = check_scalar(g->found_inf, "found_inf")) != MP_OK)
        return s;
    for (int i = 0; i < g->n; i++) {
        int64_t n = mp_tensor_numel(g->params[i]);
        if ((s = check_member(g->params[i], n, 0, "param", i)) != MP_OK ||
            (s = check_member(g->grads[i], n, 0, "grad", i)) != MP_OK)
            return s;
        if (g->masters && (s = check_member(g->masters[i], n, 1, "master", i)) != MP_OK)
            return s;
        for (int k = 0; k < nst; k++)
            if (st[k] && (s = check_member(st[k][i], n, 1, "state", i)) != MP_OK)
                return s;
    }
    return MP_OK;
}

/* Validates, honours found_inf, and walks every tensor (threads for large groups). */
static mp_status run_group(const mp_optim_group *g, mp_tensor **const st[3], int nst,
                           span_fn fn, fast_fn fast, const void *hyper, uint64_t *blocks_used)
{
    mp_status s = check_group(g, st, nst);
    *blocks_used = 0;
    if (s != MP_OK)
        return s;
    if (g->n == 0 || (g->found_inf && *(const float *)mp_tensor_data(g->found_inf) != 0.0f))
        return MP_OK;
    job j = {g, st, nst, fn, fast, hyper, 1.0f, NULL, NULL};
    if (g->grad_scale)   /* reciprocal in double, stored as float32, as GradScaler does */
        j.inv = (float)(1.0 / (double)*(const float *)mp_tensor_data(g->grad_scale));
    j.ctr = malloc(sizeof(uint64_t) * (size_t)g->n);
    j.units = malloc(sizeof(int64_t) * (size_t)(g->n + 1));
    if (!j.ctr || !j.units) {
        free(j.ctr);
        free(j.units);
        return mp_error(MP_ERR_NOMEM, "fused optimizer step: out of memory");
    }
    uint64_t ctr = g->offset;
    j.units[0] = 0;
    for (int i = 0; i < g->n; i++) {
        int64_t n = mp_tensor_numel(g->params[i]);
        j.ctr[i] = ctr;
        j.units[i + 1] = j.units[i] + (n + CHUNK - 1) / CHUNK;
        if (g->stochastic && g->params[i]->dtype == MP_DTYPE_BFLOAT16) {
            ctr += ((uint64_t)n + 7) / 8;
            *blocks_used += ((uint64_t)n + 7) / 8;
        }
    }
    run_parallel(&j);
    free(j.ctr);
    free(j.units);
    return MP_OK;
}

/* ---- SGD ---- */

typedef struct {
    mp_sgd_hyper h;
    int first;
} sgd_ctx;

static void sgd_span(float *p, const float *g, float **st, int64_t n, float inv,
                     const void *hyper)
{
    const sgd_ctx *c = (const sgd_ctx *)hyper;
    mp_sgd_hyper h = c->h;
    float scratch[CHUNK];
    float *buf = st[0];
    if (!buf || h.momentum == 0.0f) {
        h.momentum = 0.0f;
        for (int64_t i = 0; i < n; i++)
            p[i] = mp_sgd_update(p[i], g[i] * inv, &scratch[i], 1, &h);
        return;
    }
    int first = c->first;
    for (int64_t i = 0; i < n; i++)
        p[i] = mp_sgd_update(p[i], g[i] * inv, &buf[i], first, &h);
}

mp_status mp_optim_sgd_step(const mp_optim_group *g, mp_tensor **bufs, int first,
                            const mp_sgd_hyper *h, uint64_t *blocks_used)
{
    sgd_ctx c = {*h, first};
    mp_tensor **const st[3] = {h->momentum != 0.0f ? bufs : NULL, NULL, NULL};
    return run_group(g, st, 1, sgd_span, NULL, &c, blocks_used);
}

/* ---- Adam / AdamW ---- */

static void adam_span(float *p, const float *g, float **st, int64_t n, float inv,
                      const void *hyper)
{
    mp_adam_hyper h = *(const mp_adam_hyper *)hyper;
    float scratch[CHUNK];
    float *m = st[0], *v = st[1], *vmax = st[2];
#if defined(__x86_64__) || defined(_M_X64)
    if (mp_cpu()->isa >= MP_ISA_AVX2) {
        mp_adam_span_avx2(p, g, NULL, m, v, h.amsgrad ? vmax : NULL, NULL, n, inv, &h);
        return;
    }
#endif
    if (!(h.amsgrad && vmax)) {   /* vmax is always written by the body: give it scratch */
        h.amsgrad = 0;
        vmax = scratch;
    }
    for (int64_t i = 0; i < n; i++)
        p[i] = mp_adam_update(p[i], g[i] * inv, &m[i], &v[i], &vmax[i], &h);
}

/* fp32 params, or fp32 masters of bf16 params (nearest-even rounding), with fp32 or bf16
 * grads: one AVX2 pass reads grads and state once and writes params, masters and state. */
static int adam_fast(const job *j, int i, int64_t s, int64_t len)
{
#if defined(__x86_64__) || defined(_M_X64)
    const mp_optim_group *g = j->g;
    mp_tensor *p = g->params[i], *gr = g->grads[i];
    mp_tensor *master = g->masters ? g->masters[i] : NULL;
    const mp_adam_hyper *h = (const mp_adam_hyper *)j->hyper;
    if (mp_cpu()->isa < MP_ISA_AVX2 || (gr->dtype == MP_DTYPE_FLOAT16))
        return 0;
    float *pp;
    mp_bf16 *out16 = NULL;
    if (master && p->dtype == MP_DTYPE_BFLOAT16 && !g->stochastic) {
        pp = f32_at(master, s);
        out16 = (mp_bf16 *)mp_tensor_data(p) + s;
    } else if (!master && p->dtype == MP_DTYPE_FLOAT32) {
        pp = f32_at(p, s);
    } else {
        return 0;
    }
    int g32 = gr->dtype == MP_DTYPE_FLOAT32;
    float *vmax = h->amsgrad && j->st[2] ? f32_at(j->st[2][i], s) : NULL;
    mp_adam_span_avx2(pp, g32 ? f32_at(gr, s) : NULL,
                      g32 ? NULL : (const mp_bf16 *)mp_tensor_data(gr) + s,
                      f32_at(j->st[0][i], s), f32_at(j->st[1][i], s), vmax, out16, len, j->inv,
                      h);
    return 1;
#else
    (void)j, (void)i, (void)s, (void)len;
    return 0;
#endif
}

mp_status mp_optim_adam_step(const mp_optim_group *g, mp_tensor **m, mp_tensor **v,
                             mp_tensor **vmax, const mp_adam_hyper *h, uint64_t *blocks_used)
{
    mp_tensor **const st[3] = {m, v, h->amsgrad ? vmax : NULL};
    if (h->amsgrad && !vmax)
        return mp_error(MP_ERR_VALUE, "fused adam step: amsgrad needs max_exp_avg_sq tensors");
    return run_group(g, st, 3, adam_span, adam_fast, h, blocks_used);
}

/* ---- RMSprop, Adagrad, Adadelta: scalar loops over the shared bodies (the oracle), or the
 * AVX2 spans of cpu/optim_avx2.c (the scalar loops do not vectorise: sqrtf keeps errno) ---- */

static void rmsprop_span(float *p, const float *g, float **st, int64_t n, float inv,
                         const void *hyper)
{
    const mp_rmsprop_hyper *h = (const mp_rmsprop_hyper *)hyper;
    float ga_scratch[CHUNK], buf_scratch[CHUNK];
    float *sq = st[0], *ga = st[1], *buf = st[2];
#if defined(__x86_64__) || defined(_M_X64)
    if (mp_cpu()->isa >= MP_ISA_AVX2) {
        mp_rmsprop_span_avx2(p, g, sq, ga, buf, n, inv, h);
        return;
    }
#endif
    if (!ga) {                      /* the body always writes both: give it zeroed scratch */
        memset(ga_scratch, 0, sizeof(float) * (size_t)n);
        ga = ga_scratch;
    }
    if (!buf) {
        memset(buf_scratch, 0, sizeof(float) * (size_t)n);
        buf = buf_scratch;
    }
    for (int64_t i = 0; i < n; i++)
        p[i] = mp_rmsprop_update(p[i], g[i] * inv, &sq[i], &ga[i], &buf[i], h);
}

mp_status mp_optim_rmsprop_step(const mp_optim_group *g, mp_tensor **sq, mp_tensor **ga,
                                mp_tensor **bufs, const mp_rmsprop_hyper *h,
                                uint64_t *blocks_used)
{
    if (!sq || (h->centered && !ga) || (h->momentum > 0.0f && !bufs))
        return mp_error(MP_ERR_VALUE, "fused rmsprop step: missing state tensors (square_avg, "
                        "grad_avg when centered, momentum_buffer when momentum > 0)");
    mp_tensor **const st[3] = {sq, h->centered ? ga : NULL, h->momentum > 0.0f ? bufs : NULL};
    return run_group(g, st, 3, rmsprop_span, NULL, h, blocks_used);
}

static void adagrad_span(float *p, const float *g, float **st, int64_t n, float inv,
                         const void *hyper)
{
    const mp_adagrad_hyper *h = (const mp_adagrad_hyper *)hyper;
    float *sum = st[0];
#if defined(__x86_64__) || defined(_M_X64)
    if (mp_cpu()->isa >= MP_ISA_AVX2) {
        mp_adagrad_span_avx2(p, g, sum, n, inv, h);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++)
        p[i] = mp_adagrad_update(p[i], g[i] * inv, &sum[i], h);
}

mp_status mp_optim_adagrad_step(const mp_optim_group *g, mp_tensor **sums,
                                const mp_adagrad_hyper *h, uint64_t *blocks_used)
{
    mp_tensor **const st[3] = {sums, NULL, NULL};
    if (!sums)
        return mp_error(MP_ERR_VALUE, "fused adagrad step: missing state tensors (sum)");
    return run_group(g, st, 1, adagrad_span, NULL, h, blocks_used);
}

static void adadelta_span(float *p, const float *g, float **st, int64_t n, float inv,
                          const void *hyper)
{
    const mp_adadelta_hyper *h = (const mp_adadelta_hyper *)hyper;
    float *sq = st[0], *acc = st[1];
#if defined(__x86_64__) || defined(_M_X64)
    if (mp_cpu()->isa >= MP_ISA_AVX2) {
        mp_adadelta_span_avx2(p, g, sq, acc, n, inv, h);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++)
        p[i] = mp_adadelta_update(p[i], g[i] * inv, &sq[i], &acc[i], h);
}

mp_status mp_optim_adadelta_step(const mp_optim_group *g, mp_tensor **sq, mp_tensor **acc,
                                 const mp_adadelta_hyper *h, uint64_t *blocks_used)
{
    mp_tensor **const st[3] = {sq, acc, NULL};
    if (!sq || !acc)
        return mp_error(MP_ERR_VALUE, "fused adadelta step: missing state tensors "
                        "(square_avg, acc_delta)");
    return run_group(g, st, 2, adadelta_span, NULL, h, blocks_used);
}
