/* gemm_avx2.c - the blocked fp32 GEMM of gemm_kernel.h for AVX2 + FMA (this file gets -mavx2
 * -mfma from setup.py). The micro-kernel keeps a 6 x 16 tile in 12 ymm accumulators and
 * broadcasts one A value per row per k; each multiply-add is fused (one rounding). Selected
 * by mp_gemm_f32 at run time; never compiled with -ffast-math. */
#include <immintrin.h>

#include "gemm.h"

#define GEMM_NAME mp_gemm_f32_avx2
#define GEMM_MR 6
#define GEMM_NR 16

#define ROW_FMA(r)                                                                           \
    do {                                                                                     \
        __m256 av = _mm256_broadcast_ss(ap + p * GEMM_MR + (r));                             \
        c##r##0 = _mm256_fmadd_ps(av, b0, c##r##0);                                          \
        c##r##1 = _mm256_fmadd_ps(av, b1, c##r##1);                                          \
    } while (0)

#define ROW_STORE(r)                                                                         \
    do {                                                                                     \
        _mm256_storeu_ps(tile + (r) * GEMM_NR, c##r##0);                                     \
        _mm256_storeu_ps(tile + (r) * GEMM_NR + 8, c##r##1);                                 \
    } while (0)

/* tile[6][16] = A panel (k-major, 6 per k) @ B panel (k-major, 16 per k) over kc. */
static void micro_kernel(int64_t kc, const float *restrict ap, const float *restrict bp,
                         float *restrict tile)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (int64_t p = 0; p < kc; p++) {
        __m256 b0 = _mm256_loadu_ps(bp + p * GEMM_NR);
        __m256 b1 = _mm256_loadu_ps(bp + p * GEMM_NR + 8);
        ROW_FMA(0);
        ROW_FMA(1);
        ROW_FMA(2);
        ROW_FMA(3);
        ROW_FMA(4);
        ROW_FMA(5);
    }
    ROW_STORE(0);
    ROW_STORE(1);
    ROW_STORE(2);
    ROW_STORE(3);
    ROW_STORE(4);
    ROW_STORE(5);
}

#include "gemm_kernel.h"
