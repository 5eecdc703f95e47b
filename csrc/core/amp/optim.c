/* optim.c - fused multi-tensor optimizer steps (SGD; Adam/AdamW with a decay-mode flag;
 * RMSprop, Adagrad, Adadelta). One call walks every tensor of a param group in chunks:
 * fp16/bf16 weights and grads are widened into small fp32 buffers, fp32 ones are used in
 * place, the shared one-element body runs on fp32, and the result is rounded back (to nearest
 * even, or stochastically for bf16). Does not own the step counters or hyper-parameter
 * bookkeeping (mpamp/optim does). */

#include "optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../backend.h"
#include "../../shared/mp_kernel_args.h"
#include "../dtypes.h"
#include "../random.h"
#include "../../cpu/dispatch.h"
#include "../../cpu/parallel.h"

#define CHUNK 1024   /* multiple of 8: a Philox block gives eight 16-bit draws */

typedef void (*span_fn)(float *p, const float *g, float **st, int64_t n, float inv,
                        const void *hyper);

struct job;
/* A fused vector path for one chunk; returns 0 when it does not cover the case. */
typedef int (*fast_fn)(const struct job *j, int i, int64_t s, int64_t len);

/* One tensor of a group as the kernel sees it: addresses, dtypes, element count. */
typedef struct {
    void *p, *g;
    float *master;              /* NULL: none */
    float *st[3];               /* fp32 state (NULL entries allowed) */
    mp_dtype pdt, gdt;
    int64_t n;
    const void *hyper;          /* NULL: the job's; else this tensor's own (device steps) */
} member;

/* Everything one step needs, shared read-only by the worker threads. */
typedef struct job {
    mp_optim_launch pub;        /* first: the argument block a GPU backend reads */
    const mp_optim_group *g;    /* flags and the Philox stream; its tensors are not read */
    member *mem;
    int n, nst;
    span_fn fn;
    fast_fn fast;
    const void *hyper;
    float inv;
    uint64_t *ctr;              /* Philox block base per tensor */
    int64_t *units;             /* prefix sums of CHUNK-sized units per tensor (n + 1) */
    const mp_adam_steps *steps; /* Adam with step counts on the device, else NULL */
    mp_adam_hyper *own;         /* with steps: n hypers, filled in the kernel */
} job;

static void load_f32(const void *src, mp_dtype dt, int64_t start, int64_t n, float *dst)
{
    const mp_cpu_kernels *k = mp_cpu();
    if (dt == MP_DTYPE_FLOAT16)
        k->f16_to_f32((const mp_half *)src + start, dst, (size_t)n);
    else
        k->bf16_to_f32((const mp_bf16 *)src + start, dst, (size_t)n);
}

/* Rounds src[0..n) into dst[start..start+n) of dtype dt; stochastic draws come from Philox
 * block ctr + (start + j) / 8, so chunks and threads draw independently of the split. */
static void store_rounded(void *dst, mp_dtype dt, int64_t start, int64_t n, const float *src,
                          const mp_optim_group *g, uint64_t ctr)
{
    if (dt == MP_DTYPE_FLOAT32) {
        float *d = (float *)dst + start;
        for (int64_t j = 0; j < n; j++)
            d[j] = src[j];
    } else if (dt == MP_DTYPE_FLOAT16) {
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
    const member *m = &j->mem[i];
    float pbuf[CHUNK], gbuf[CHUNK];
    if (j->fast && j->fast(j, i, s, len))
        return;
    float *pp;
    if (m->master)
        pp = m->master + s;
    else if (m->pdt == MP_DTYPE_FLOAT32)
        pp = (float *)m->p + s;
    else
        load_f32(m->p, m->pdt, s, len, pp = pbuf);
    const float *gp = gbuf;
    if (m->gdt == MP_DTYPE_FLOAT32)
        gp = (const float *)m->g + s;
    else
        load_f32(m->g, m->gdt, s, len, gbuf);
    float *sp[3] = {NULL, NULL, NULL};
    for (int k = 0; k < j->nst; k++)
        sp[k] = m->st[k] ? m->st[k] + s : NULL;
    j->fn(pp, gp, sp, len, j->inv, m->hyper ? m->hyper : j->hyper);
    if (m->master || m->pdt != MP_DTYPE_FLOAT32)
        store_rounded(m->p, m->pdt, s, len, pp, j->g, j->ctr[i]);
}

/* Units [u0, u1) of the flattened group (a unit is one chunk of one tensor). */
static void walk_units(const job *j, int64_t u0, int64_t u1)
{
    for (int i = 0; i < j->n && u0 < u1; i++) {
        if (j->units[i + 1] <= u0)
            continue;
        int64_t n = j->mem[i].n;
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
    mp_parallel_for(j->units[j->n], (1 << 20) / CHUNK, walk_range, (void *)j);
}

static mp_status check_scalar(const mp_tensor *t, mp_device dev, const char *name)
{
    if (t->storage->device != dev)
        return mp_error(MP_ERR_RUNTIME, "%s must be on the same device as the parameters "
                        "(%s).", name, dev == MP_DEVICE_CPU ? "cpu" : "cuda:0");
    if (mp_tensor_numel(t) != 1)
        return mp_error(MP_ERR_RUNTIME, "%s must be a 1-element tensor.", name);
    if (t->dtype != MP_DTYPE_FLOAT32)
        return mp_error(MP_ERR_RUNTIME, "%s must be a float tensor.", name);
    return MP_OK;
}

static mp_status check_member(const mp_tensor *t, int64_t numel, int f32_only, mp_device dev,
                              const char *what, int i)
{
    if (t->storage->device != dev)
        return mp_error(MP_ERR_RUNTIME, "fused optimizer step: %s %d is on %s, the parameters "
                        "on %s", what, i, t->storage->device == MP_DEVICE_CPU ? "cpu" : "cuda:0",
                        dev == MP_DEVICE_CPU ? "cpu" : "cuda:0");
    if (!mp_tensor_is_contiguous(t))
        return mp_error(MP_ERR_RUNTIME, "fused optimizer step: %s %d is not contiguous", what,
                        i);
    if (f32_only ? t->dtype != MP_DTYPE_FLOAT32 : !mp_dtype_is_float(t->dtype))
        return mp_error(MP_ERR_TYPE, "fused optimizer step: %s %d has an unsupported dtype "
                        "(%s; expected %s)", what, i, mp_dtype_name(t->dtype),
                        f32_only ? "float32" : "float32, float16 or bfloat16");
    if (mp_tensor_numel(t) != numel)
        return mp_error(MP_ERR_SHAPE, "fused optimizer step: %s %d has %lld elements, the "
                        "parameter has %lld", what, i, (long long)mp_tensor_numel(t),
                        (long long)numel);
    return MP_OK;
}

static mp_status check_group(const mp_optim_group *g, mp_tensor **const st[3], int nst,
                             mp_device dev)
{
    mp_status s;
    if (g->grad_scale && (s = check_scalar(g->grad_scale, dev, "grad_scale")) != MP_OK)
        return s;
    if (g->found_inf && (s = check_scalar(g->found_inf, dev, "found_inf")) != MP_OK)
        return s;
    for (int i = 0; i < g->n; i++) {
        int64_t n = mp_tensor_numel(g->params[i]);
        if ((s = check_member(g->params[i], n, 0, dev, "param", i)) != MP_OK ||
            (s = check_member(g->grads[i], n, 0, dev, "grad", i)) != MP_OK)
            return s;
        if (g->masters && (s = check_member(g->masters[i], n, 1, dev, "master", i)) != MP_OK)
            return s;
        for (int k = 0; k < nst; k++)
            if (st[k] && (s = check_member(st[k][i], n, 1, dev, "state", i)) != MP_OK)
                return s;
    }
    return MP_OK;
}

/* The MP_KERNEL_OPTIM kernel. Buffers, n per list: params, grads, masters, state 0..2, Adam's
 * step counts, then found_inf and grad_scale (absent ones NULL); args the job, whose member addresses the
 * kernel fills from the buffers it is handed. found_inf and grad_scale are read here, on the
 * device, so a skipped step costs no device-to-host copy. */
/* Adam's per-tensor hyper-parameters from its step count, in double as mpamp/optim/adam.py
 * computes them for host step counts (so both give the same floats). */
static void adam_from_step(mp_adam_hyper *h, const mp_adam_steps *r, double step)
{
    h->step_size = (float)(r->lr / (1.0 - pow(r->beta1, step)));
    h->bias_correction2_sqrt = (float)sqrt(1.0 - pow(r->beta2, step));
}

static mp_status run_job(void *const *buf, const void *args, mp_msg *msg)
{
    job j = *(const job *)args;
    int n = j.n;
    (void)msg;
    const float *found = buf[7 * n], *scale = buf[7 * n + 1];
    if (found && *found != 0.0f)
        return MP_OK;   /* skipped: step counts too stay (torch adds and subtracts found_inf) */
    if (scale)   /* reciprocal in double, stored as float32, as GradScaler does */
        j.inv = (float)(1.0 / (double)*scale);
    for (int i = 0; i < n; i++) {
        member *m = &j.mem[i];
        m->p = buf[i];
        m->g = buf[n + i];
        m->master = buf[2 * n + i];
        for (int k = 0; k < 3; k++)
            m->st[k] = buf[(3 + k) * n + i];
        if (j.steps) {
            float *step = buf[6 * n + i];
            *step += 1.0f;
            j.own[i] = *(const mp_adam_hyper *)j.hyper;
            adam_from_step(&j.own[i], j.steps, (double)*step);
            m->hyper = &j.own[i];
        }
    }
    run_parallel(&j);
    return MP_OK;
}

/* Validates and launches the step on the parameters' device (threads for large groups). */
static mp_status run_group(mp_optim_kind kind, const mp_optim_group *g,
                           mp_tensor **const st[3], int nst, span_fn fn, fast_fn fast,
                           const void *hyper, const void *pub_hyper, int sgd_first,
                           const mp_adam_steps *steps, uint64_t *blocks_used)
{
    *blocks_used = 0;
    if (g->n == 0)
        return MP_OK;
    mp_device dev = g->params[0]->storage->device;
    mp_status s = check_group(g, st, nst, dev);
    if (s != MP_OK)
        return s;
    int n = g->n, nb = 7 * n + 2;
    if (steps)
        for (int i = 0; i < n; i++)
            if ((s = check_scalar(steps->t[i], dev, "state_steps")) != MP_OK)
                return s;
    job j = {{kind, n, NULL, NULL, NULL, pub_hyper, sgd_first, g->stochastic, g->seed, NULL,
              steps != NULL, steps ? steps->lr : 0.0, steps ? steps->beta1 : 0.0,
              steps ? steps->beta2 : 0.0},
             g, NULL, n, nst, fn, fast, hyper, 1.0f, NULL, NULL, steps, NULL};
    mp_dtype *dts = malloc(sizeof(mp_dtype) * 2 * (size_t)n);
    int64_t *numels = malloc(sizeof(int64_t) * (size_t)n);
    j.mem = calloc((size_t)n, sizeof(member));
    j.ctr = malloc(sizeof(uint64_t) * (size_t)n);
    j.units = malloc(sizeof(int64_t) * (size_t)(n + 1));
    void **buf = calloc((size_t)nb, sizeof(void *));
    int64_t *nbytes = calloc((size_t)nb, sizeof(int64_t));
    if (steps)
        j.own = malloc(sizeof(mp_adam_hyper) * (size_t)n);
    if (!dts || !numels || !j.mem || !j.ctr || !j.units || !buf || !nbytes ||
        (steps && !j.own)) {
        s = mp_error(MP_ERR_NOMEM, "fused optimizer step: out of memory");
        goto done;
    }
    uint64_t ctr = g->offset;
    j.units[0] = 0;
    for (int i = 0; i < n; i++) {
        mp_tensor *p = g->params[i], *gr = g->grads[i];
        int64_t numel = mp_tensor_numel(p);
        member *m = &j.mem[i];
        m->pdt = p->dtype, m->gdt = gr->dtype, m->n = numel;
        dts[i] = p->dtype, dts[n + i] = gr->dtype, numels[i] = numel;
        j.ctr[i] = ctr;
        j.units[i + 1] = j.units[i] + (numel + CHUNK - 1) / CHUNK;
        if (g->stochastic && p->dtype == MP_DTYPE_BFLOAT16) {
            ctr += ((uint64_t)numel + 7) / 8;
            *blocks_used += ((uint64_t)numel + 7) / 8;
        }
        buf[i] = mp_tensor_data(p);
        nbytes[i] = numel * (int64_t)mp_dtype_size(p->dtype);
        buf[n + i] = mp_tensor_data(gr);
        nbytes[n + i] = numel * (int64_t)mp_dtype_size(gr->dtype);
        if (g->masters) {
            buf[2 * n + i] = mp_tensor_data(g->masters[i]);
            nbytes[2 * n + i] = numel * 4;
        }
        for (int k = 0; k < nst; k++)
            if (st[k]) {
                buf[(3 + k) * n + i] = mp_tensor_data(st[k][i]);
                nbytes[(3 + k) * n + i] = numel * 4;
            }
        if (steps) {
            buf[6 * n + i] = mp_tensor_data(steps->t[i]);
            nbytes[6 * n + i] = 4;
        }
    }
    if (g->found_inf) {
        buf[7 * n] = mp_tensor_data(g->found_inf);
        nbytes[7 * n] = 4;
    }
    if (g->grad_scale) {
        buf[7 * n + 1] = mp_tensor_data(g->grad_scale);
        nbytes[7 * n + 1] = 4;
    }
    j.pub.pdt = dts, j.pub.gdt = dts + n, j.pub.numel = numels, j.pub.ctr = j.ctr;
    s = mp_launch_bufs(dev, MP_KERNEL_OPTIM, nb, buf, nbytes, run_job, &j);
done:
    free(dts);
    free(numels);
    free(j.mem);
    free(j.ctr);
    free(j.units);
    free(j.own);
    free(buf);
    free(nbytes);
    return s;
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
    return run_group(MP_OPTIM_SGD, g, st, 1, sgd_span, NULL, &c, &c.h, first, NULL,
                     blocks_used);
}

/* ---- Adam / AdamW ---- */

static void adam_span(float *p, const float *g, float **st, int64_t n, float inv,
                      const void *hyper)
{
    mp_adam_hyper h = *(const mp_adam_hyper *)hyper;
    float scratch[CHUNK];
    float *m = st[0], *v = st[1], *vmax = st[2];
    const mp_optim_spans *vec = &mp_cpu()->optim;
    if (vec->adam) {
        vec->adam(p, g, NULL, m, v, h.amsgrad ? vmax : NULL, NULL, n, inv, &h);
        return;
    }
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
    const member *m = &j->mem[i];
    const mp_adam_hyper *h = (const mp_adam_hyper *)(m->hyper ? m->hyper : j->hyper);
    void (*span)(float *, const float *, const mp_bf16 *, float *, float *, float *, mp_bf16 *,
                 int64_t, float, const mp_adam_hyper *) = mp_cpu()->optim.adam;
    if (!span || m->gdt == MP_DTYPE_FLOAT16)
        return 0;
    float *pp;
    mp_bf16 *out16 = NULL;
    if (m->master && m->pdt == MP_DTYPE_BFLOAT16 && !j->g->stochastic) {
        pp = m->master + s;
        out16 = (mp_bf16 *)m->p + s;
    } else if (!m->master && m->pdt == MP_DTYPE_FLOAT32) {
        pp = (float *)m->p + s;
    } else {
        return 0;
    }
    int g32 = m->gdt == MP_DTYPE_FLOAT32;
    float *vmax = h->amsgrad && m->st[2] ? m->st[2] + s : NULL;
    span(pp, g32 ? (const float *)m->g + s : NULL, g32 ? NULL : (const mp_bf16 *)m->g + s,
         m->st[0] + s, m->st[1] + s, vmax, out16, len, j->inv, h);
    return 1;
}

mp_status mp_optim_adam_step(const mp_optim_group *g, mp_tensor **m, mp_tensor **v,
                             mp_tensor **vmax, const mp_adam_hyper *h,
                             const mp_adam_steps *steps, uint64_t *blocks_used)
{
    mp_tensor **const st[3] = {m, v, h->amsgrad ? vmax : NULL};
    if (h->amsgrad && !vmax)
        return mp_error(MP_ERR_VALUE, "fused adam step: amsgrad needs max_exp_avg_sq tensors");
    return run_group(MP_OPTIM_ADAM, g, st, 3, adam_span, adam_fast, h, h, 0, steps,
                     blocks_used);
}

/* ---- RMSprop, Adagrad, Adadelta: scalar loops over the shared bodies (the oracle), or the
 * AVX2 spans of cpu/optim_avx2.c (the scalar loops do not vectorise: sqrtf keeps errno) ---- */

static void rmsprop_span(float *p, const float *g, float **st, int64_t n, float inv,
                         const void *hyper)
{
    const mp_rmsprop_hyper *h = (const mp_rmsprop_hyper *)hyper;
    float ga_scratch[CHUNK], buf_scratch[CHUNK];
    float *sq = st[0], *ga = st[1], *buf = st[2];
    if (mp_cpu()->optim.rmsprop) {
        mp_cpu()->optim.rmsprop(p, g, sq, ga, buf, n, inv, h);
        return;
    }
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
    return run_group(MP_OPTIM_RMSPROP, g, st, 3, rmsprop_span, NULL, h, h, 0, NULL,
                     blocks_used);
}

static void adagrad_span(float *p, const float *g, float **st, int64_t n, float inv,
                         const void *hyper)
{
    const mp_adagrad_hyper *h = (const mp_adagrad_hyper *)hyper;
    float *sum = st[0];
    if (mp_cpu()->optim.adagrad) {
        mp_cpu()->optim.adagrad(p, g, sum, n, inv, h);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        p[i] = mp_adagrad_update(p[i], g[i] * inv, &sum[i], h);
}

mp_status mp_optim_adagrad_step(const mp_optim_group *g, mp_tensor **sums,
                                const mp_adagrad_hyper *h, uint64_t *blocks_used)
{
    mp_tensor **const st[3] = {sums, NULL, NULL};
    if (!sums)
        return mp_error(MP_ERR_VALUE, "fused adagrad step: missing state tensors (sum)");
    return run_group(MP_OPTIM_ADAGRAD, g, st, 1, adagrad_span, NULL, h, h, 0, NULL,
                     blocks_used);
}

static void adadelta_span(float *p, const float *g, float **st, int64_t n, float inv,
                          const void *hyper)
{
    const mp_adadelta_hyper *h = (const mp_adadelta_hyper *)hyper;
    float *sq = st[0], *acc = st[1];
    if (mp_cpu()->optim.adadelta) {
        mp_cpu()->optim.adadelta(p, g, sq, acc, n, inv, h);
        return;
    }
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
    return run_group(MP_OPTIM_ADADELTA, g, st, 2, adadelta_span, NULL, h, h, 0, NULL,
                     blocks_used);
}
