/* gemm_avx2.c - the fp32 micro-kernel for AVX2 + FMA (this file gets -mavx2 -mfma from
 * setup.py): a 6 x 16 tile in 12 ymm accumulators; per k, two B vectors and one broadcast A
 * value per row, each multiply-add fused (one rounding). The tile is added to (or stored into)
 * C straight from the registers. Never compiled with -ffast-math. */
#include <immintrin.h>

#include "gemm_pack.h"
#include "gemm_ukr.h"

#define MR 6
#define NR 16

#define ROW_FMA(r)                                                                           \
    do {                                                                                     \
        __m256 av = _mm256_broadcast_ss(a##r + off);                                         \
        c##r##0 = _mm256_fmadd_ps(av, b0, c##r##0);                                          \
        c##r##1 = _mm256_fmadd_ps(av, b1, c##r##1);                                          \
    } while (0)

#define ROW_STORE(r)                                                                         \
    do {                                                                                     \
        float *cr = c + (r) * ldc;                                                           \
        if (accumulate) {                                                                    \
            c##r##0 = _mm256_add_ps(_mm256_loadu_ps(cr), c##r##0);                           \
            c##r##1 = _mm256_add_ps(_mm256_loadu_ps(cr + 8), c##r##1);                       \
        }                                                                                    \
        _mm256_storeu_ps(cr, c##r##0);                                                       \
        _mm256_storeu_ps(cr + 8, c##r##1);                                                   \
    } while (0)

/* The tile with A (i, k) at a[i * rs + k * ks] for the first `rows` rows (the others repeat
 * the last): one pointer per row, one offset along k. A packed panel is rs = 1, ks = MR,
 * rows = MR, constants the compiler folds into the plain panel walk. */
static inline __attribute__((always_inline)) void tile_6x16(int64_t kc, const float *a,
                                                            int64_t rs, int64_t ks, int rows,
                                                            const float *b, float *c,
                                                            int64_t ldc, int accumulate)
{
#define ROW_PTR(r) (a + ((r) < rows ? (r) : rows - 1) * rs)
    const float *a0 = a, *a1 = ROW_PTR(1), *a2 = ROW_PTR(2), *a3 = ROW_PTR(3);
    const float *a4 = ROW_PTR(4), *a5 = ROW_PTR(5);
#undef ROW_PTR
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (int r = 0; r < MR; r++) {
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + r * ldc + NR - 1), _MM_HINT_T0);
    }
    int64_t off = 0;
#pragma GCC unroll 4
    for (int64_t p = 0; p < kc; p++) {
        __m256 b0 = _mm256_loadu_ps(b);
        __m256 b1 = _mm256_loadu_ps(b + 8);
        ROW_FMA(0);
        ROW_FMA(1);
        ROW_FMA(2);
        ROW_FMA(3);
        ROW_FMA(4);
        ROW_FMA(5);
        off += ks;
        b += NR;
    }
    ROW_STORE(0);
    ROW_STORE(1);
    ROW_STORE(2);
    ROW_STORE(3);
    ROW_STORE(4);
    ROW_STORE(5);
}

static void kernel_6x16(int64_t kc, const void *ap, const void *bp, float *c, int64_t ldc,
                        int accumulate)
{
    tile_6x16(kc, ap, 1, MR, MR, bp, c, ldc, accumulate);
}

/* kernel_6x16 with A unpacked (gemm_ukr.h) */
static void kernel_6x16_sa(int64_t kc, const float *a, int64_t rs, int64_t ks, int rows,
                           const void *bp, float *c, int64_t ldc, int accumulate)
{
    tile_6x16(kc, a, rs, ks, rows, bp, c, ldc, accumulate);
}

/* KC 384: a B panel (24 KiB) stays in Zen 3's 32 KiB L1 (384 beat 256 by a few percent against
 * OpenBLAS at 2048^3); MC 144: an A block (216 KiB) in the 512 KiB L2; NC 4080: a packed B
 * slice (6 MiB) in L3. */
const mp_gemm_ukr mp_gemm_ukr_f32_avx2 = {"avx2 fp32 6x16", MR, NR, 384, 144, 4080,
                                          MP_PANEL_F32, kernel_6x16, mp_gemm_pack_avx2,
                                          0, MP_PANEL_F32, NULL, kernel_6x16_sa};
