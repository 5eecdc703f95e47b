/* gemm_ref.c - the portable micro-kernel (baseline SSE2 on x86-64: a 4 x 8 tile, separate
 * multiply and add, so it rounds twice where the FMA kernels round once) and the int64
 * product. The portable kernel is the oracle the vector kernels are tested against. */
#include <string.h>

#include "gemm.h"
#include "gemm_ukr.h"

#define MR 4
#define NR 8

/* Fixed trip counts so the compiler unrolls and vectorises with the baseline ISA. */
static void kernel_4x8(int64_t kc, const void *ap, const void *bp, float *c, int64_t ldc,
                       int accumulate)
{
    const float *a = ap, *b = bp;
    float acc[MR][NR];
    memset(acc, 0, sizeof acc);
    for (int64_t p = 0; p < kc; p++, a += MR, b += NR)
        for (int i = 0; i < MR; i++)
            for (int j = 0; j < NR; j++)
                acc[i][j] += a[i] * b[j];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++)
            c[i * ldc + j] = accumulate ? c[i * ldc + j] + acc[i][j] : acc[i][j];
}

const mp_gemm_ukr mp_gemm_ukr_f32_scalar = {"scalar fp32 4x8", MR, NR, 256, 128, 2048,
                                            MP_PANEL_F32, kernel_4x8, NULL, 0,
                                            MP_PANEL_F32, NULL, NULL};

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
