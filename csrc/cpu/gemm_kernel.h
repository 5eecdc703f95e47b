/* gemm_kernel.h - the body of the cache-blocked fp32 GEMM, compiled once per ISA file. The
 * including file defines GEMM_NAME, GEMM_MR, GEMM_NR and a static
 * micro_kernel(kc, a_panel, b_panel, tile) computing one MR x NR tile in fp32. Loops are
 * BLIS-ordered: NC columns of B, KC-deep slices packed once into zero-padded NR-wide panels,
 * MC rows of A packed into MR-high panels; each KC slice adds into C once. A file to
 * #include, not a header: it defines (static) functions. */
#include <stdlib.h>
#include <string.h>

#define GEMM_KC 256
#define GEMM_MC (GEMM_MR * 16)
#define GEMM_NC 1024
#define GEMM_STACK_FLOATS 8192      /* small products pack on the stack: no malloc */

#define GEMM_MIN(x, y) ((x) < (y) ? (x) : (y))
#define GEMM_ROUND_UP(x, r) (((x) + (r) - 1) / (r) * (r))

/* Panels of MR rows of op(A)[i0:i0+mc, p0:p0+kc], each stored k-major (MR values per k). */
static void pack_a(int trans, const float *a, int64_t lda, int64_t i0, int64_t p0,
                   int64_t mc, int64_t kc, float *restrict ap)
{
    for (int64_t r0 = 0; r0 < mc; r0 += GEMM_MR) {
        int64_t rows = GEMM_MIN(GEMM_MR, mc - r0);
        float *dst = ap + r0 * kc;
        for (int64_t p = 0; p < kc; p++) {
            for (int64_t r = 0; r < rows; r++) {
                int64_t i = i0 + r0 + r, q = p0 + p;
                dst[p * GEMM_MR + r] = trans ? a[q * lda + i] : a[i * lda + q];
            }
            for (int64_t r = rows; r < GEMM_MR; r++)
                dst[p * GEMM_MR + r] = 0.0f;
        }
    }
}

/* Panels of NR columns of op(B)[p0:p0+kc, j0:j0+nc], each stored k-major (NR values per k). */
static void pack_b(int trans, const float *b, int64_t ldb, int64_t p0, int64_t j0,
                   int64_t kc, int64_t nc, float *restrict bp)
{
    for (int64_t c0 = 0; c0 < nc; c0 += GEMM_NR) {
        int64_t cols = GEMM_MIN(GEMM_NR, nc - c0);
        float *dst = bp + c0 * kc;
        for (int64_t p = 0; p < kc; p++) {
            float *row = dst + p * GEMM_NR;
            if (!trans && cols == GEMM_NR) {
                memcpy(row, b + (p0 + p) * ldb + j0 + c0, sizeof(float) * GEMM_NR);
                continue;
            }
            for (int64_t j = 0; j < cols; j++) {
                int64_t q = p0 + p, col = j0 + c0 + j;
                row[j] = trans ? b[col * ldb + q] : b[q * ldb + col];
            }
            for (int64_t j = cols; j < GEMM_NR; j++)
                row[j] = 0.0f;
        }
    }
}

/* C[0:mr, 0:nr] = alpha * tile + (first ? beta * C : C); beta == 0 never reads C. */
static void store_tile(const float *tile, int64_t mr, int64_t nr, float alpha, float beta,
                       int first, float *c, int64_t ldc)
{
    for (int64_t i = 0; i < mr; i++) {
        float *ci = c + i * ldc;
        const float *t = tile + i * GEMM_NR;
        if (first && beta == 0.0f)
            for (int64_t j = 0; j < nr; j++)
                ci[j] = alpha * t[j];
        else if (first && beta != 1.0f)
            for (int64_t j = 0; j < nr; j++)
                ci[j] = alpha * t[j] + beta * ci[j];
        else
            for (int64_t j = 0; j < nr; j++)
                ci[j] += alpha * t[j];
    }
}

/* C = beta * C for the degenerate cases (k == 0 or alpha == 0). */
static void scale_c(int64_t m, int64_t n, float beta, float *c, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
}

/* One KC slice: pack B once, then every MC block of A against it. */
static void gemm_slice(int ta, int tb, int64_t m, int64_t k0, int64_t kc, int64_t j0,
                       int64_t nc, float alpha, const float *a, int64_t lda, const float *b,
                       int64_t ldb, float beta, float *c, int64_t ldc, float *ap, float *bp)
{
    float tile[GEMM_MR * GEMM_NR];
    pack_b(tb, b, ldb, k0, j0, kc, nc, bp);
    for (int64_t i0 = 0; i0 < m; i0 += GEMM_MC) {
        int64_t mc = GEMM_MIN(GEMM_MC, m - i0);
        pack_a(ta, a, lda, i0, k0, mc, kc, ap);
        for (int64_t jr = 0; jr < nc; jr += GEMM_NR) {
            for (int64_t ir = 0; ir < mc; ir += GEMM_MR) {
                micro_kernel(kc, ap + ir * kc, bp + jr * kc, tile);
                store_tile(tile, GEMM_MIN(GEMM_MR, mc - ir), GEMM_MIN(GEMM_NR, nc - jr),
                           alpha, beta, k0 == 0, c + (i0 + ir) * ldc + j0 + jr, ldc);
            }
        }
    }
}

mp_status GEMM_NAME(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                    float *c, int64_t ldc)
{
    if (m <= 0 || n <= 0)
        return MP_OK;
    if (k <= 0 || alpha == 0.0f) {
        scale_c(m, n, beta, c, ldc);
        return MP_OK;
    }
    int64_t kcap = GEMM_MIN(GEMM_KC, k);
    int64_t asize = GEMM_ROUND_UP(GEMM_MIN(GEMM_MC, m), GEMM_MR) * kcap;
    int64_t bsize = GEMM_ROUND_UP(GEMM_MIN(GEMM_NC, n), GEMM_NR) * kcap;
    _Alignas(64) float stack_buf[GEMM_STACK_FLOATS];
    float *buf = stack_buf;
    if (asize + bsize > GEMM_STACK_FLOATS) {
        size_t bytes = GEMM_ROUND_UP((size_t)(asize + bsize) * sizeof(float), 64);
        buf = aligned_alloc(64, bytes);
        if (!buf)
            return MP_ERR_NOMEM;
    }
    for (int64_t j0 = 0; j0 < n; j0 += GEMM_NC) {
        int64_t nc = GEMM_MIN(GEMM_NC, n - j0);
        for (int64_t k0 = 0; k0 < k; k0 += GEMM_KC)
            gemm_slice(trans_a, trans_b, m, k0, GEMM_MIN(GEMM_KC, k - k0), j0, nc, alpha, a,
                       lda, b, ldb, beta, c, ldc, buf, buf + asize);
    }
    if (buf != stack_buf)
        free(buf);
    return MP_OK;
}
