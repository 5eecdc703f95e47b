/* optim_avx2.c - AVX2 drivers of the Adam/AdamW, RMSprop, Adagrad and Adadelta bodies
 * (shared/mp_optim.h), eight lanes at a time; Adam's also reads bf16 grads and writes bf16
 * weights in the same pass (fp32-master case). Same operations in the same order as the
 * bodies, no FMA, and the bf16 conversions of mp_half.h, so results are bit-identical to the
 * scalar loops (tests compare them); tails go through the scalar bodies. Flags are
 * loop-invariant. */
#include <immintrin.h>

#include "optim_kernels.h"

static __m256 sel(int flag, __m256 yes, __m256 no)
{
    return flag ? yes : no;
}

static __m256 load_bf16(const mp_bf16 *src)
{
    __m128i h = _mm_loadu_si128((const __m128i *)src);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* Round to nearest even, NaN quieted with its sign/payload kept (mp_f32_to_bf16). */
static void store_bf16(mp_bf16 *dst, __m256 x)
{
    __m256i u = _mm256_castps_si256(x);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
    __m256i nan_hi = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    __m256i mag = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
    __m256i is_nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000));
    r = _mm256_blendv_epi8(r, nan_hi, is_nan);
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128((__m128i *)dst, _mm256_castsi256_si128(packed));
}

typedef struct {
    int l2, dec, ams, maximize;
    __m256 inv, wd, decay, b2, w1, w2, bc2, eps, ss, sign;
} adam_consts;

static adam_consts consts(const mp_adam_hyper *h, float inv, int ams)
{
    adam_consts c;
    c.l2 = h->weight_decay != 0.0f && !h->decoupled;
    c.dec = h->weight_decay != 0.0f && h->decoupled;
    c.ams = ams;
    c.maximize = h->maximize;
    c.inv = _mm256_set1_ps(inv);
    c.wd = _mm256_set1_ps(h->weight_decay);
    c.decay = _mm256_set1_ps(h->decay);
    c.b2 = _mm256_set1_ps(h->beta2);
    c.w1 = _mm256_set1_ps(h->one_minus_beta1);
    c.w2 = _mm256_set1_ps(h->one_minus_beta2);
    c.bc2 = _mm256_set1_ps(h->bias_correction2_sqrt);
    c.eps = _mm256_set1_ps(h->eps);
    c.ss = _mm256_set1_ps(h->step_size);
    c.sign = _mm256_set1_ps(-0.0f);
    return c;
}

/* Eight lanes of mp_adam_update; returns the new parameters. */
static __m256 adam8(const adam_consts *c, __m256 pv, __m256 gv, float *m, float *v,
                    float *vmax)
{
    gv = _mm256_mul_ps(gv, c->inv);
    gv = sel(c->maximize, _mm256_xor_ps(gv, c->sign), gv);
    gv = sel(c->l2, _mm256_add_ps(gv, _mm256_mul_ps(c->wd, pv)), gv);
    pv = sel(c->dec, _mm256_mul_ps(pv, c->decay), pv);
    __m256 mv = _mm256_loadu_ps(m), vv = _mm256_loadu_ps(v);
    __m256 mn = _mm256_add_ps(mv, _mm256_mul_ps(_mm256_sub_ps(gv, mv), c->w1));
    __m256 vn = _mm256_add_ps(_mm256_mul_ps(vv, c->b2),
                              _mm256_mul_ps(_mm256_mul_ps(c->w2, gv), gv));
    _mm256_storeu_ps(m, mn);
    _mm256_storeu_ps(v, vn);
    __m256 vu = vn;
    if (c->ams) {
        __m256 old = _mm256_loadu_ps(vmax);
        vu = _mm256_blendv_ps(vn, old, _mm256_cmp_ps(old, vn, _CMP_GT_OQ));
        vu = _mm256_blendv_ps(vu, old, _mm256_cmp_ps(old, old, _CMP_UNORD_Q));
        _mm256_storeu_ps(vmax, vu);
    }
    __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vu), c->bc2), c->eps);
    return _mm256_sub_ps(pv, _mm256_mul_ps(c->ss, _mm256_div_ps(mn, denom)));
}

void mp_adam_span_avx2(float *p, const float *g, const mp_bf16 *g16, float *m, float *v,
                       float *vmax, mp_bf16 *out16, int64_t n, float inv,
                       const mp_adam_hyper *h)
{
    const int ams = h->amsgrad && vmax;
    const adam_consts c = consts(h, inv, ams);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 gv = g ? _mm256_loadu_ps(g + i) : load_bf16(g16 + i);
        __m256 pn = adam8(&c, _mm256_loadu_ps(p + i), gv, m + i, v + i,
                          ams ? vmax + i : NULL);
        _mm256_storeu_ps(p + i, pn);
        if (out16)
            store_bf16(out16 + i, pn);
    }
    mp_adam_hyper hs = *h;
    float scratch = 0.0f;
    hs.amsgrad = ams;
    for (; i < n; i++) {
        float gi = g ? g[i] : mp_bf16_to_f32(g16[i]);
        p[i] = mp_adam_update(p[i], gi * inv, &m[i], &v[i], ams ? &vmax[i] : &scratch, &hs);
        if (out16)
            out16[i] = mp_f32_to_bf16(p[i]);
    }
}

/* ---- RMSprop, Adagrad, Adadelta: fp32 spans (the drivers widen fp16/bf16 first). The
 * scalar loops over their bodies do not vectorise (sqrtf keeps errno), so these do it with
 * the same operations in the same order; the tail goes through the scalar body. ---- */

typedef struct {
    __m256 inv, wd, sign;
    int maximize, decay;
} grad_prep;

static grad_prep prep(float inv, float wd, int maximize)
{
    grad_prep c = {_mm256_set1_ps(inv), _mm256_set1_ps(wd), _mm256_set1_ps(-0.0f), maximize,
                   wd != 0.0f};
    return c;
}

/* g * inv, negated for maximize, plus wd * p: the bodies' first two lines */
static __m256 prep_grad(const grad_prep *c, const float *g, __m256 pv)
{
    __m256 gv = _mm256_mul_ps(_mm256_loadu_ps(g), c->inv);
    gv = sel(c->maximize, _mm256_xor_ps(gv, c->sign), gv);
    return sel(c->decay, _mm256_add_ps(gv, _mm256_mul_ps(c->wd, pv)), gv);
}

void mp_rmsprop_span_avx2(float *p, const float *g, float *sq, float *ga, float *buf, int64_t n,
                          float inv, const mp_rmsprop_hyper *h)
{
    const grad_prep c = prep(inv, h->weight_decay, h->maximize);
    const __m256 alpha = _mm256_set1_ps(h->alpha), oma = _mm256_set1_ps(h->one_minus_alpha);
    const __m256 omw = _mm256_set1_ps(1.0f - h->one_minus_alpha), eps = _mm256_set1_ps(h->eps);
    const __m256 mom = _mm256_set1_ps(h->momentum), nlr = _mm256_set1_ps(-h->lr);
    const int low_w = h->one_minus_alpha < 0.5f, centered = h->centered && ga;
    const int use_buf = h->momentum > 0.0f && buf;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 pv = _mm256_loadu_ps(p + i), gv = prep_grad(&c, g + i, pv);
        __m256 s = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(sq + i), alpha),
                                 _mm256_mul_ps(_mm256_mul_ps(oma, gv), gv));
        _mm256_storeu_ps(sq + i, s);
        if (centered) {
            __m256 a = _mm256_loadu_ps(ga + i), d = _mm256_sub_ps(gv, a);
            a = low_w ? _mm256_add_ps(a, _mm256_mul_ps(oma, d))
                      : _mm256_sub_ps(gv, _mm256_mul_ps(d, omw));
            _mm256_storeu_ps(ga + i, a);
            s = _mm256_sub_ps(s, _mm256_mul_ps(a, a));
        }
        __m256 q = _mm256_div_ps(gv, _mm256_add_ps(_mm256_sqrt_ps(s), eps));
        if (use_buf) {
            q = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(buf + i), mom), q);
            _mm256_storeu_ps(buf + i, q);
        }
        _mm256_storeu_ps(p + i, _mm256_add_ps(pv, _mm256_mul_ps(nlr, q)));
    }
    float s1 = 0.0f, s2 = 0.0f;
    for (; i < n; i++)
        p[i] = mp_rmsprop_update(p[i], g[i] * inv, &sq[i], centered ? &ga[i] : &s1,
                                 use_buf ? &buf[i] : &s2, h);
}

void mp_adagrad_span_avx2(float *p, const float *g, float *sum, int64_t n, float inv,
                          const mp_adagrad_hyper *h)
{
    const grad_prep c = prep(inv, h->weight_decay, h->maximize);
    const __m256 eps = _mm256_set1_ps(h->eps), nclr = _mm256_set1_ps(-h->clr);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 pv = _mm256_loadu_ps(p + i), gv = prep_grad(&c, g + i, pv);
        __m256 s = _mm256_add_ps(_mm256_loadu_ps(sum + i), _mm256_mul_ps(gv, gv));
        _mm256_storeu_ps(sum + i, s);
        __m256 q = _mm256_div_ps(gv, _mm256_add_ps(_mm256_sqrt_ps(s), eps));
        _mm256_storeu_ps(p + i, _mm256_add_ps(pv, _mm256_mul_ps(nclr, q)));
    }
    for (; i < n; i++)
        p[i] = mp_adagrad_update(p[i], g[i] * inv, &sum[i], h);
}

void mp_adadelta_span_avx2(float *p, const float *g, float *sq, float *acc, int64_t n,
                           float inv, const mp_adadelta_hyper *h)
{
    const grad_prep c = prep(inv, h->weight_decay, h->maximize);
    const __m256 rho = _mm256_set1_ps(h->rho), omr = _mm256_set1_ps(h->one_minus_rho);
    const __m256 eps = _mm256_set1_ps(h->eps), nlr = _mm256_set1_ps(-h->lr);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 pv = _mm256_loadu_ps(p + i), gv = prep_grad(&c, g + i, pv);
        __m256 s = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(sq + i), rho),
                                 _mm256_mul_ps(_mm256_mul_ps(omr, gv), gv));
        _mm256_storeu_ps(sq + i, s);
        __m256 a = _mm256_loadu_ps(acc + i);
        __m256 d = _mm256_mul_ps(_mm256_div_ps(_mm256_sqrt_ps(_mm256_add_ps(a, eps)),
                                               _mm256_sqrt_ps(_mm256_add_ps(s, eps))), gv);
        _mm256_storeu_ps(acc + i, _mm256_add_ps(_mm256_mul_ps(a, rho),
                                                _mm256_mul_ps(_mm256_mul_ps(omr, d), d)));
        _mm256_storeu_ps(p + i, _mm256_add_ps(pv, _mm256_mul_ps(nlr, d)));
    }
    for (; i < n; i++)
        p[i] = mp_adadelta_update(p[i], g[i] * inv, &sq[i], &acc[i], h);
}
