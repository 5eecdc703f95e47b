/* vmath_avx512.c - vmath_body.h on sixteen lanes (AVX-512F; no FMA on purpose, as
 * vmath_avx2.c: the scalar oracle rounds every product), lane masks in k registers, and the
 * reductions with vmath.h's sixteen partials held as one vector of 16 floats (max) or two of 8
 * doubles (sums), combined in the documented order (w = 8, 4, 2, 1). Tails use masked loads
 * and stores, the lanes past the end holding the operation's identity (-inf for max, -0.0 for
 * sums). Results equal vmath_scalar.c bit for bit (vmath_check.c; under emulation
 * tests/test_vmath_avx512_emulated.py). Only AVX512F is used (and/or through the integer
 * forms: the float ones need AVX512DQ). */
#include <immintrin.h>
#include <math.h>

#include "vmath.h"

#define MP_INLINE static inline __attribute__((always_inline))

typedef __m512 vf;
typedef __m512i vi;
typedef __mmask16 vm;

MP_INLINE vf vf_set(float c) { return _mm512_set1_ps(c); }
MP_INLINE vi vi_set(int32_t c) { return _mm512_set1_epi32(c); }
MP_INLINE vf vf_add(vf a, vf b) { return _mm512_add_ps(a, b); }
MP_INLINE vf vf_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
MP_INLINE vf vf_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
MP_INLINE vf vf_div(vf a, vf b) { return _mm512_div_ps(a, b); }
MP_INLINE vf vf_min(vf a, vf b) { return _mm512_min_ps(a, b); }
MP_INLINE vf vf_max(vf a, vf b) { return _mm512_max_ps(a, b); }
MP_INLINE vm vm_lt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
MP_INLINE vm vm_gt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
MP_INLINE vm vm_eq(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
MP_INLINE vm vm_nan(vf a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
MP_INLINE int vm_all(vm m) { return m == 0xffff; }
MP_INLINE vf vf_sel(vm m, vf a, vf b) { return _mm512_mask_blend_ps(m, b, a); }
MP_INLINE vi vi_mask(vm m) { return _mm512_maskz_mov_epi32(m, _mm512_set1_epi32(-1)); }
MP_INLINE vi vi_of(vf a) { return _mm512_castps_si512(a); }
MP_INLINE vf vf_of(vi a) { return _mm512_castsi512_ps(a); }
MP_INLINE vi vi_add(vi a, vi b) { return _mm512_add_epi32(a, b); }
MP_INLINE vi vi_sub(vi a, vi b) { return _mm512_sub_epi32(a, b); }
MP_INLINE vi vi_and(vi a, vi b) { return _mm512_and_si512(a, b); }
MP_INLINE vi vi_or(vi a, vi b) { return _mm512_or_si512(a, b); }
#define vi_sra(a, n) _mm512_srai_epi32((a), (n))
#define vi_sll(a, n) _mm512_slli_epi32((a), (n))
MP_INLINE vf vf_and(vf a, vf b) { return vf_of(vi_and(vi_of(a), vi_of(b))); }
MP_INLINE vf vf_or(vf a, vf b) { return vf_of(vi_or(vi_of(a), vi_of(b))); }
MP_INLINE vf vf_cvt(vi a) { return _mm512_cvtepi32_ps(a); }

#include "vmath_body.h"

/* The first `left` lanes (left < 16). */
MP_INLINE __mmask16 first_lanes(size_t left)
{
    return (__mmask16)((1u << left) - 1u);
}

#define MAP_AVX512(name, body)                                                    \
    static void name##_avx512(const float *x, float *y, size_t n)                 \
    {                                                                             \
        size_t i = 0;                                                             \
        for (; i + 16 <= n; i += 16)                                              \
            _mm512_storeu_ps(y + i, body(_mm512_loadu_ps(x + i)));                \
        if (i < n) {                                                              \
            __mmask16 m = first_lanes(n - i);                                     \
            _mm512_mask_storeu_ps(y + i, m, body(_mm512_maskz_loadu_ps(m, x + i))); \
        }                                                                         \
    }

MAP_AVX512(exp, vm_exp)
MAP_AVX512(log, vm_log)
MAP_AVX512(sigmoid, vm_sigmoid)
MAP_AVX512(tanh, vm_tanh)
MAP_AVX512(silu, vm_silu)
MAP_AVX512(gelu, vm_gelu)
MAP_AVX512(gelu_tanh, vm_gelu_tanh)
MAP_AVX512(silu_grad, vm_silu_grad)
MAP_AVX512(gelu_grad, vm_gelu_grad)
MAP_AVX512(gelu_tanh_grad, vm_gelu_tanh_grad)

/* Elements i .. i+15 (fewer at the end); lanes past n hold `pad`. */
MP_INLINE __m512 load16(const float *x, size_t i, size_t n, float pad)
{
    if (i + 16 <= n)
        return _mm512_loadu_ps(x + i);
    return _mm512_mask_loadu_ps(_mm512_set1_ps(pad), first_lanes(n - i), x + i);
}

MP_INLINE __m256 lo8(__m512 v) { return _mm512_castps512_ps256(v); }
MP_INLINE __m256 hi8(__m512 v)
{
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

static float max_avx512(const float *x, size_t n)
{
    __m512 p = _mm512_set1_ps(-INFINITY);
    for (size_t i = 0; i < n; i += 16)
        p = _mm512_max_ps(load16(x, i, n, -INFINITY), p);
    __m256 m8 = _mm256_max_ps(lo8(p), hi8(p));                       /* p[j], p[j + 8] */
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));
    __m128 m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    __m128 m1 = _mm_max_ss(m2, _mm_shuffle_ps(m2, m2, 1));
    return _mm_cvtss_f32(m1);
}

/* The sixteen double partials: lanes 0-7 and 8-15. */
typedef struct {
    __m512d lo, hi;
} partials;

MP_INLINE void partials_add(partials *s, __m512 v)
{
    s->lo = _mm512_add_pd(s->lo, _mm512_cvtps_pd(lo8(v)));
    s->hi = _mm512_add_pd(s->hi, _mm512_cvtps_pd(hi8(v)));
}

MP_INLINE double partials_combine(const partials *s)
{
    __m512d a = _mm512_add_pd(s->lo, s->hi);                         /* w = 8 */
    __m256d c = _mm256_add_pd(_mm512_castpd512_pd256(a), _mm512_extractf64x4_pd(a, 1));
    __m128d d = _mm_add_pd(_mm256_castpd256_pd128(c), _mm256_extractf128_pd(c, 1));
    __m128d e = _mm_add_sd(d, _mm_unpackhi_pd(d, d));
    return _mm_cvtsd_f64(e);
}

static double sum_avx512(const float *x, size_t n)
{
    partials s = {_mm512_setzero_pd(), _mm512_setzero_pd()};
    for (size_t i = 0; i < n; i += 16)
        partials_add(&s, load16(x, i, n, -0.0f));
    return partials_combine(&s);
}

static double dot_avx512(const float *x, const float *y, size_t n)
{
    partials s = {_mm512_setzero_pd(), _mm512_setzero_pd()};
    for (size_t i = 0; i < n; i += 16) {
        /* past the end: (-0) * 1 = -0, which leaves every partial as it is */
        __m512 a = load16(x, i, n, -0.0f), b = load16(y, i, n, 1.0f);
        s.lo = _mm512_add_pd(s.lo, _mm512_mul_pd(_mm512_cvtps_pd(lo8(a)),
                                                 _mm512_cvtps_pd(lo8(b))));
        s.hi = _mm512_add_pd(s.hi, _mm512_mul_pd(_mm512_cvtps_pd(hi8(a)),
                                                 _mm512_cvtps_pd(hi8(b))));
    }
    return partials_combine(&s);
}

static void acc_avx512(double *acc, const float *x, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
        __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
        _mm512_storeu_pd(acc + i, _mm512_add_pd(_mm512_loadu_pd(acc + i), lo));
        _mm512_storeu_pd(acc + i + 8, _mm512_add_pd(_mm512_loadu_pd(acc + i + 8), hi));
    }
    for (; i < n; i++)
        acc[i] += (double)x[i];
}

static void acc_mul_avx512(double *acc, const float *x, const float *y, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d p = _mm512_mul_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i)),
                                  _mm512_cvtps_pd(_mm256_loadu_ps(y + i)));
        _mm512_storeu_pd(acc + i, _mm512_add_pd(_mm512_loadu_pd(acc + i), p));
    }
    for (; i < n; i++)
        acc[i] += (double)x[i] * (double)y[i];
}

/* 64 floats per step in four independent vectors; the tail by masked loads and stores */
static int unscale_avx512(float *x, size_t n, float inv)
{
    const __m512i em = _mm512_set1_epi32(0x7f800000);
    const __m512 s = _mm512_set1_ps(inv);
    const int write = inv != 1.0f;
    __mmask16 f0 = 0, f1 = 0, f2 = 0, f3 = 0;
    size_t i = 0;
#define UNSCALE16(f, o)                                                                      \
    do {                                                                                     \
        __m512 v = _mm512_loadu_ps(x + i + (o));                                             \
        f |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(v), em), em);     \
        if (write)                                                                           \
            _mm512_storeu_ps(x + i + (o), _mm512_mul_ps(v, s));                              \
    } while (0)
    for (; i + 64 <= n; i += 64) {
        UNSCALE16(f0, 0);
        UNSCALE16(f1, 16);
        UNSCALE16(f2, 32);
        UNSCALE16(f3, 48);
    }
    for (; i + 16 <= n; i += 16)
        UNSCALE16(f0, 0);
#undef UNSCALE16
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        f0 |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(v), em), em);
        if (write)
            _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(v, s));
    }
    return (f0 | f1 | f2 | f3) != 0;
}

/* 64 columns (eight chains of double adds) down all the rows, then 8 at a time, then one */
static void colsum_avx512(double *acc, const float *x, size_t rows, size_t cols, size_t ld)
{
    size_t j = 0;
    for (; j + 64 <= cols; j += 64) {
        __m512d s[8];
        for (int q = 0; q < 8; q++)
            s[q] = _mm512_loadu_pd(acc + j + 8 * q);
        for (size_t r = 0; r < rows; r++) {
            const float *row = x + r * ld + j;
            for (int q = 0; q < 8; q++)
                s[q] = _mm512_add_pd(s[q], _mm512_cvtps_pd(_mm256_loadu_ps(row + 8 * q)));
        }
        for (int q = 0; q < 8; q++)
            _mm512_storeu_pd(acc + j + 8 * q, s[q]);
    }
    for (; j + 8 <= cols; j += 8) {
        __m512d s = _mm512_loadu_pd(acc + j);
        for (size_t r = 0; r < rows; r++)
            s = _mm512_add_pd(s, _mm512_cvtps_pd(_mm256_loadu_ps(x + r * ld + j)));
        _mm512_storeu_pd(acc + j, s);
    }
    for (; j < cols; j++) {
        double s = acc[j];
        for (size_t r = 0; r < rows; r++)
            s += (double)x[r * ld + j];
        acc[j] = s;
    }
}

static double exp_sum_avx512(const float *x, float shift, float *y, size_t n)
{
    partials s = {_mm512_setzero_pd(), _mm512_setzero_pd()};
    __m512 sh = _mm512_set1_ps(shift);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 a = vm_exp(_mm512_sub_ps(_mm512_loadu_ps(x + i), sh));
        _mm512_storeu_ps(y + i, a);
        partials_add(&s, a);
    }
    if (i < n) {
        __mmask16 m = first_lanes(n - i);
        __m512 a = vm_exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), sh));
        _mm512_mask_storeu_ps(y + i, m, a);
        partials_add(&s, _mm512_mask_blend_ps(m, _mm512_set1_ps(-0.0f), a));
    }
    return partials_combine(&s);
}

void mp_vmath_fill_avx512(mp_vmath *v)
{
    v->map[MP_VM_EXP] = exp_avx512;
    v->map[MP_VM_LOG] = log_avx512;
    v->map[MP_VM_SIGMOID] = sigmoid_avx512;
    v->map[MP_VM_TANH] = tanh_avx512;
    v->map[MP_VM_SILU] = silu_avx512;
    v->map[MP_VM_GELU] = gelu_avx512;
    v->map[MP_VM_GELU_TANH] = gelu_tanh_avx512;
    v->map[MP_VM_SILU_GRAD] = silu_grad_avx512;
    v->map[MP_VM_GELU_GRAD] = gelu_grad_avx512;
    v->map[MP_VM_GELU_TANH_GRAD] = gelu_tanh_grad_avx512;
    v->max = max_avx512;
    v->sum = sum_avx512;
    v->dot = dot_avx512;
    v->acc = acc_avx512;
    v->acc_mul = acc_mul_avx512;
    v->colsum = colsum_avx512;
    v->unscale = unscale_avx512;
    v->exp_sum = exp_sum_avx512;
}
