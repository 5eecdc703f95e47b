/* gemm_ref.c - the portable instantiation of gemm_kernel.h (baseline SSE2 on x86-64: a
 * 4 x 8 micro-tile, separate multiply and add), the int64 product, and mp_gemm_f32, which
 * picks the variant for the active ISA level. The portable GEMM is the oracle the vector
 * variants are tested against (to rounding: FMA rounds once, mul+add twice). */
#include "dispatch.h"
#include "gemm.h"

#define GEMM_NAME mp_gemm_f32_scalar
#define GEMM_MR 4
#define GEMM_NR 8
#include <string.h>

/* tile[MR][NR] = A panel (k-major) @ B panel (k-major) over kc: fixed trip counts so the
 * compiler unrolls and vectorises with the baseline ISA. */
static void micro_kernel(int64_t kc, const float *restrict ap, const float *restrict bp,
                         float *restrict tile)
{
    float acc[GEMM_MR][GEMM_NR];
    memset(acc, 0, sizeof acc);
    for (int64_t p = 0; p < kc; p++) {
        const float *bk = bp + p * GEMM_NR;
        for (int i = 0; i < GEMM_MR; i++) {
            const float av = ap[p * GEMM_MR + i];
            for (int j = 0; j < GEMM_NR; j++)
                acc[i][j] += av * bk[j];
        }
    }
    memcpy(tile, acc, sizeof acc);
}

#include "gemm_kernel.h"

mp_status mp_gemm_f32(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                      float *c, int64_t ldc)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (mp_cpu()->isa >= MP_ISA_AVX2)
        return mp_gemm_f32_avx2(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
                                ldc);
#endif
    return mp_gemm_f32_scalar(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void mp_gemm_i64(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, int64_t alpha,
                 const int64_t *a, int64_t lda, const int64_t *b, int64_t ldb, int64_t beta,
                 int64_t *c, int64_t ldc)
{
    /* unsigned arithmetic: overflow wraps (defined) exactly as two's complement int64 */
    for (int64_t i = 0; i < m; i++) {
        uint64_t *ci = (uint64_t *)(c + i * ldc);
        for (int64_t j = 0; j < n; j++)
            ci[j] = beta == 0 ? 0 : (uint64_t)beta * ci[j];
        for (int64_t p = 0; p < k; p++) {
            uint64_t av = (uint64_t)alpha * (uint64_t)(trans_a ? a[p * lda + i] : a[i * lda + p]);
            for (int64_t j = 0; j < n; j++)
                ci[j] += av * (uint64_t)(trans_b ? b[j * ldb + p] : b[p * ldb + j]);
        }
    }
}
