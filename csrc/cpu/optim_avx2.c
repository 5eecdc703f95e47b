/* optim_avx2.c - AVX2 driver of the Adam/AdamW body (shared/mp_optim.h), eight lanes at a time.
 * Same operations in the same order as mp_adam_update, no FMA, so results are bit-identical to
 * the scalar loop (tests compare them); the tail goes through the scalar body. Flags are
 * loop-invariant and resolved with blends so one loop serves every option. */
#include <immintrin.h>

#include "optim_kernels.h"

static __m256 sel(int flag, __m256 yes, __m256 no)
{
    return flag ? yes : no;
}

void mp_adam_span_avx2(float *p, const float *g, float *m, float *v, float *vmax, int64_t n,
                       float inv, const mp_adam_hyper *h)
{
    const int l2 = h->weight_decay != 0.0f && !h->decoupled;
    const int dec = h->weight_decay != 0.0f && h->decoupled;
    const int ams = h->amsgrad && vmax;
    const __m256 vinv = _mm256_set1_ps(inv), vwd = _mm256_set1_ps(h->weight_decay);
    const __m256 vdecay = _mm256_set1_ps(h->decay), vb2 = _mm256_set1_ps(h->beta2);
    const __m256 w1 = _mm256_set1_ps(h->one_minus_beta1), w2 = _mm256_set1_ps(h->one_minus_beta2);
    const __m256 bc2 = _mm256_set1_ps(h->bias_correction2_sqrt), eps = _mm256_set1_ps(h->eps);
    const __m256 ss = _mm256_set1_ps(h->step_size), sign = _mm256_set1_ps(-0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 pv = _mm256_loadu_ps(p + i);
        __m256 gv = _mm256_mul_ps(_mm256_loadu_ps(g + i), vinv);
        gv = sel(h->maximize, _mm256_xor_ps(gv, sign), gv);
        gv = sel(l2, _mm256_add_ps(gv, _mm256_mul_ps(vwd, pv)), gv);
        pv = sel(dec, _mm256_mul_ps(pv, vdecay), pv);
        __m256 mv = _mm256_loadu_ps(m + i), vv = _mm256_loadu_ps(v + i);
        __m256 mn = _mm256_add_ps(mv, _mm256_mul_ps(_mm256_sub_ps(gv, mv), w1));
        __m256 vn = _mm256_add_ps(_mm256_mul_ps(vv, vb2),
                                  _mm256_mul_ps(_mm256_mul_ps(w2, gv), gv));
        _mm256_storeu_ps(m + i, mn);
        _mm256_storeu_ps(v + i, vn);
        __m256 vu = vn;
        if (ams) {
            __m256 old = _mm256_loadu_ps(vmax + i);
            vu = _mm256_blendv_ps(vn, old, _mm256_cmp_ps(old, vn, _CMP_GT_OQ));
            vu = _mm256_blendv_ps(vu, old, _mm256_cmp_ps(old, old, _CMP_UNORD_Q));
            _mm256_storeu_ps(vmax + i, vu);
        }
        __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vu), bc2), eps);
        _mm256_storeu_ps(p + i, _mm256_sub_ps(pv, _mm256_mul_ps(ss, _mm256_div_ps(mn, denom))));
    }
    mp_adam_hyper hs = *h;
    float scratch = 0.0f;
    hs.amsgrad = ams;
    for (; i < n; i++)
        p[i] = mp_adam_update(p[i], g[i] * inv, &m[i], &v[i], ams ? &vmax[i] : &scratch, &hs);
}
