/* vmath_avx2.c - vmath_body.h on eight lanes (AVX2; no FMA on purpose: the scalar oracle
 * rounds every product, so the vector code must too), and the reductions with the partials of
 * vmath.h held as two vectors of 8 floats (max) or four of 4 doubles (sums). Tails use masked
 * loads and stores; the lanes past the end are filled with the operation's identity (-inf for
 * max, -0.0 for sums), so they change nothing. Results equal vmath_scalar.c bit for bit. */
#include <immintrin.h>
#include <math.h>

#include "vmath.h"

#define MP_INLINE static inline __attribute__((always_inline))

typedef __m256 vf;
typedef __m256i vi;
typedef __m256 vm;

MP_INLINE vf vf_set(float c) { return _mm256_set1_ps(c); }
MP_INLINE vi vi_set(int32_t c) { return _mm256_set1_epi32(c); }
MP_INLINE vf vf_add(vf a, vf b) { return _mm256_add_ps(a, b); }
MP_INLINE vf vf_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
MP_INLINE vf vf_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
MP_INLINE vf vf_div(vf a, vf b) { return _mm256_div_ps(a, b); }
MP_INLINE vf vf_min(vf a, vf b) { return _mm256_min_ps(a, b); }
MP_INLINE vf vf_max(vf a, vf b) { return _mm256_max_ps(a, b); }
MP_INLINE vm vm_lt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
MP_INLINE vm vm_gt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
MP_INLINE vm vm_eq(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
MP_INLINE vm vm_nan(vf a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
MP_INLINE int vm_all(vm m) { return _mm256_movemask_ps(m) == 0xff; }
MP_INLINE vf vf_sel(vm m, vf a, vf b) { return _mm256_blendv_ps(b, a, m); }
MP_INLINE vi vi_mask(vm m) { return _mm256_castps_si256(m); }
MP_INLINE vi vi_of(vf a) { return _mm256_castps_si256(a); }
MP_INLINE vf vf_of(vi a) { return _mm256_castsi256_ps(a); }
MP_INLINE vi vi_add(vi a, vi b) { return _mm256_add_epi32(a, b); }
MP_INLINE vi vi_sub(vi a, vi b) { return _mm256_sub_epi32(a, b); }
MP_INLINE vi vi_and(vi a, vi b) { return _mm256_and_si256(a, b); }
MP_INLINE vi vi_or(vi a, vi b) { return _mm256_or_si256(a, b); }
#define vi_sra(a, n) _mm256_srai_epi32((a), (n))
#define vi_sll(a, n) _mm256_slli_epi32((a), (n))
MP_INLINE vf vf_and(vf a, vf b) { return _mm256_and_ps(a, b); }
MP_INLINE vf vf_or(vf a, vf b) { return _mm256_or_ps(a, b); }
MP_INLINE vf vf_cvt(vi a) { return _mm256_cvtepi32_ps(a); }

#include "vmath_body.h"

/* All-ones in the first `left` lanes (left may exceed 8). */
MP_INLINE __m256i first_lanes(size_t left)
{
    int k = left > 8 ? 8 : (int)left;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

#define MAP_AVX2(name, body)                                                    \
    static void name##_avx2(const float *x, float *y, size_t n)                 \
    {                                                                           \
        size_t i = 0;                                                           \
        for (; i + 8 <= n; i += 8)                                              \
            _mm256_storeu_ps(y + i, body(_mm256_loadu_ps(x + i)));              \
        if (i < n) {                                                            \
            __m256i m = first_lanes(n - i);                                     \
            _mm256_maskstore_ps(y + i, m, body(_mm256_maskload_ps(x + i, m)));  \
        }                                                                       \
    }

MAP_AVX2(exp, vm_exp)
MAP_AVX2(log, vm_log)
MAP_AVX2(sigmoid, vm_sigmoid)
MAP_AVX2(tanh, vm_tanh)
MAP_AVX2(silu, vm_silu)
MAP_AVX2(gelu, vm_gelu)
MAP_AVX2(gelu_tanh, vm_gelu_tanh)
MAP_AVX2(silu_grad, vm_silu_grad)
MAP_AVX2(gelu_grad, vm_gelu_grad)
MAP_AVX2(gelu_tanh_grad, vm_gelu_tanh_grad)

/* The elements at x + i + off .. (8 lanes) that lie before x + n, the rest zero; *m gets the
 * lanes that do. Never forms a pointer past the end. */
MP_INLINE __m256 load_part(const float *x, size_t i, size_t off, size_t n, __m256i *m)
{
    size_t at = i + off;
    *m = first_lanes(at < n ? n - at : 0);
    return at < n ? _mm256_maskload_ps(x + at, *m) : _mm256_setzero_ps();
}

/* Elements i .. i+15 (fewer at the end) as two vectors; lanes past n hold `pad`. */
MP_INLINE void load16(const float *x, size_t i, size_t n, float pad, __m256 *lo, __m256 *hi)
{
    if (i + 16 <= n) {
        *lo = _mm256_loadu_ps(x + i);
        *hi = _mm256_loadu_ps(x + i + 8);
        return;
    }
    __m256i m0, m1;
    __m256 p = _mm256_set1_ps(pad);
    __m256 a = load_part(x, i, 0, n, &m0), b = load_part(x, i, 8, n, &m1);
    *lo = _mm256_blendv_ps(p, a, _mm256_castsi256_ps(m0));
    *hi = _mm256_blendv_ps(p, b, _mm256_castsi256_ps(m1));
}

static float max_avx2(const float *x, size_t n)
{
    __m256 p0 = _mm256_set1_ps(-INFINITY), p1 = p0, a, b;
    for (size_t i = 0; i < n; i += 16) {
        load16(x, i, n, -INFINITY, &a, &b);
        p0 = _mm256_max_ps(a, p0);
        p1 = _mm256_max_ps(b, p1);
    }
    __m256 m8 = _mm256_max_ps(p0, p1);                               /* p[j], p[j + 8] */
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));
    __m128 m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    __m128 m1 = _mm_max_ss(m2, _mm_shuffle_ps(m2, m2, 1));
    return _mm_cvtss_f32(m1);
}

/* The sixteen double partials, lanes 0-3, 4-7, 8-11, 12-15. */
typedef struct {
    __m256d p[4];
} partials;

MP_INLINE void partials_init(partials *s)
{
    for (int k = 0; k < 4; k++)
        s->p[k] = _mm256_setzero_pd();
}

MP_INLINE void partials_add(partials *s, __m256 lo, __m256 hi)
{
    s->p[0] = _mm256_add_pd(s->p[0], _mm256_cvtps_pd(_mm256_castps256_ps128(lo)));
    s->p[1] = _mm256_add_pd(s->p[1], _mm256_cvtps_pd(_mm256_extractf128_ps(lo, 1)));
    s->p[2] = _mm256_add_pd(s->p[2], _mm256_cvtps_pd(_mm256_castps256_ps128(hi)));
    s->p[3] = _mm256_add_pd(s->p[3], _mm256_cvtps_pd(_mm256_extractf128_ps(hi, 1)));
}

MP_INLINE double partials_combine(const partials *s)
{
    __m256d a = _mm256_add_pd(s->p[0], s->p[2]), b = _mm256_add_pd(s->p[1], s->p[3]);
    __m256d c = _mm256_add_pd(a, b);                                 /* w = 4 */
    __m128d d = _mm_add_pd(_mm256_castpd256_pd128(c), _mm256_extractf128_pd(c, 1));
    __m128d e = _mm_add_sd(d, _mm_unpackhi_pd(d, d));
    return _mm_cvtsd_f64(e);
}

static double sum_avx2(const float *x, size_t n)
{
    partials s;
    partials_init(&s);
    __m256 a, b;
    for (size_t i = 0; i < n; i += 16) {
        load16(x, i, n, -0.0f, &a, &b);
        partials_add(&s, a, b);
    }
    return partials_combine(&s);
}

MP_INLINE void dot_add(__m256d *p, __m128 x, __m128 y)
{
    *p = _mm256_add_pd(*p, _mm256_mul_pd(_mm256_cvtps_pd(x), _mm256_cvtps_pd(y)));
}

static double dot_avx2(const float *x, const float *y, size_t n)
{
    partials s;
    partials_init(&s);
    __m256 a, b, c, d;
    for (size_t i = 0; i < n; i += 16) {
        /* past the end: (-0) * 1 = -0, which leaves every partial as it is */
        load16(x, i, n, -0.0f, &a, &b);
        load16(y, i, n, 1.0f, &c, &d);
        dot_add(&s.p[0], _mm256_castps256_ps128(a), _mm256_castps256_ps128(c));
        dot_add(&s.p[1], _mm256_extractf128_ps(a, 1), _mm256_extractf128_ps(c, 1));
        dot_add(&s.p[2], _mm256_castps256_ps128(b), _mm256_castps256_ps128(d));
        dot_add(&s.p[3], _mm256_extractf128_ps(b, 1), _mm256_extractf128_ps(d, 1));
    }
    return partials_combine(&s);
}

static void acc_avx2(double *acc, const float *x, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
        __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
        _mm256_storeu_pd(acc + i, _mm256_add_pd(_mm256_loadu_pd(acc + i), lo));
        _mm256_storeu_pd(acc + i + 4, _mm256_add_pd(_mm256_loadu_pd(acc + i + 4), hi));
    }
    for (; i < n; i++)
        acc[i] += (double)x[i];
}

static void acc_mul_avx2(double *acc, const float *x, const float *y, size_t n)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d p = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)),
                                  _mm256_cvtps_pd(_mm_loadu_ps(y + i)));
        _mm256_storeu_pd(acc + i, _mm256_add_pd(_mm256_loadu_pd(acc + i), p));
    }
    for (; i < n; i++)
        acc[i] += (double)x[i] * (double)y[i];
}

/* 32 floats per step in four independent vectors; the tail by masked loads and stores */
static int unscale_avx2(float *x, size_t n, float inv)
{
    const __m256i em = _mm256_set1_epi32(0x7f800000);
    const __m256 s = _mm256_set1_ps(inv);
    const int write = inv != 1.0f;
    __m256i f0 = _mm256_setzero_si256(), f1 = f0, f2 = f0, f3 = f0;
    size_t i = 0;
#define UNSCALE8(f, o)                                                                       \
    do {                                                                                     \
        __m256 v = _mm256_loadu_ps(x + i + (o));                                             \
        f = _mm256_or_si256(f, _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(v),  \
                                                                   em), em));               \
        if (write)                                                                           \
            _mm256_storeu_ps(x + i + (o), _mm256_mul_ps(v, s));                              \
    } while (0)
    for (; i + 32 <= n; i += 32) {
        UNSCALE8(f0, 0);
        UNSCALE8(f1, 8);
        UNSCALE8(f2, 16);
        UNSCALE8(f3, 24);
    }
    for (; i + 8 <= n; i += 8)
        UNSCALE8(f0, 0);
#undef UNSCALE8
    if (i < n) {
        __m256i m = first_lanes(n - i);
        __m256 v = _mm256_maskload_ps(x + i, m);      /* masked-off lanes read as 0 */
        f0 = _mm256_or_si256(f0, _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(v),
                                                                     em), em));
        if (write)
            _mm256_maskstore_ps(x + i, m, _mm256_mul_ps(v, s));
    }
    __m256i f = _mm256_or_si256(_mm256_or_si256(f0, f1), _mm256_or_si256(f2, f3));
    return !_mm256_testz_si256(f, f);
}

/* 32 columns (eight chains of double adds, so the adds' latency overlaps) down all the rows,
 * then 4 at a time, then one */
static void colsum_avx2(double *acc, const float *x, size_t rows, size_t cols, size_t ld)
{
    size_t j = 0;
    for (; j + 32 <= cols; j += 32) {
        __m256d s[8];
        for (int q = 0; q < 8; q++)
            s[q] = _mm256_loadu_pd(acc + j + 4 * q);
        for (size_t r = 0; r < rows; r++) {
            const float *row = x + r * ld + j;
            for (int q = 0; q < 8; q++)
                s[q] = _mm256_add_pd(s[q], _mm256_cvtps_pd(_mm_loadu_ps(row + 4 * q)));
        }
        for (int q = 0; q < 8; q++)
            _mm256_storeu_pd(acc + j + 4 * q, s[q]);
    }
    for (; j + 4 <= cols; j += 4) {
        __m256d s = _mm256_loadu_pd(acc + j);
        for (size_t r = 0; r < rows; r++)
            s = _mm256_add_pd(s, _mm256_cvtps_pd(_mm_loadu_ps(x + r * ld + j)));
        _mm256_storeu_pd(acc + j, s);
    }
    for (; j < cols; j++) {
        double s = acc[j];
        for (size_t r = 0; r < rows; r++)
            s += (double)x[r * ld + j];
        acc[j] = s;
    }
}

static double exp_sum_avx2(const float *x, float shift, float *y, size_t n)
{
    partials s;
    partials_init(&s);
    __m256 sh = _mm256_set1_ps(shift), zero = _mm256_set1_ps(-0.0f);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 a = vm_exp(_mm256_sub_ps(_mm256_loadu_ps(x + i), sh));
        __m256 b = vm_exp(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), sh));
        _mm256_storeu_ps(y + i, a);
        _mm256_storeu_ps(y + i + 8, b);
        partials_add(&s, a, b);
    }
    if (i < n) {            /* the second half only when a lane of it is in: the other
                               adds -0 to its partials, which leaves them as they are */
        __m256i m0, m1;
        __m256 a = vm_exp(_mm256_sub_ps(load_part(x, i, 0, n, &m0), sh)), b = zero;
        _mm256_maskstore_ps(y + i, m0, a);
        if (i + 8 < n) {
            b = vm_exp(_mm256_sub_ps(load_part(x, i, 8, n, &m1), sh));
            _mm256_maskstore_ps(y + i + 8, m1, b);
            b = _mm256_blendv_ps(zero, b, _mm256_castsi256_ps(m1));
        }
        partials_add(&s, _mm256_blendv_ps(zero, a, _mm256_castsi256_ps(m0)), b);
    }
    return partials_combine(&s);
}

void mp_vmath_fill_avx2(mp_vmath *v)
{
    v->map[MP_VM_EXP] = exp_avx2;
    v->map[MP_VM_LOG] = log_avx2;
    v->map[MP_VM_SIGMOID] = sigmoid_avx2;
    v->map[MP_VM_TANH] = tanh_avx2;
    v->map[MP_VM_SILU] = silu_avx2;
    v->map[MP_VM_GELU] = gelu_avx2;
    v->map[MP_VM_GELU_TANH] = gelu_tanh_avx2;
    v->map[MP_VM_SILU_GRAD] = silu_grad_avx2;
    v->map[MP_VM_GELU_GRAD] = gelu_grad_avx2;
    v->map[MP_VM_GELU_TANH_GRAD] = gelu_tanh_grad_avx2;
    v->max = max_avx2;
    v->sum = sum_avx2;
    v->dot = dot_avx2;
    v->acc = acc_avx2;
    v->acc_mul = acc_mul_avx2;
    v->colsum = colsum_avx2;
    v->unscale = unscale_avx2;
    v->exp_sum = exp_sum_avx2;
}
