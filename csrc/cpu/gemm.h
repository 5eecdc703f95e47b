/* gemm.h - matrix products on raw row-major pointers: C = alpha * op(A) @ op(B) + beta * C,
 * op(X) = X or X^T by flag, leading dimensions in elements. mp_gemm_f32 picks the variant for
 * the active ISA level (mp_cpu()->isa); the per-ISA variants are exported for tests. beta == 0
 * overwrites C without reading it (NaN in C does not leak), as BLAS. Shapes and strides are
 * the caller's (core) business: nothing here allocates tensors or sets error messages. */
#ifndef MP_CPU_GEMM_H
#define MP_CPU_GEMM_H

#include "../shared/mp_defs.h"

/* Returns MP_ERR_NOMEM (no message) when the packing buffers cannot be allocated. */
mp_status mp_gemm_f32(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                      float *c, int64_t ldc);
mp_status mp_gemm_f32_scalar(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                             float alpha, const float *a, int64_t lda, const float *b,
                             int64_t ldb, float beta, float *c, int64_t ldc);
mp_status mp_gemm_f32_avx2(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                           float alpha, const float *a, int64_t lda, const float *b,
                           int64_t ldb, float beta, float *c, int64_t ldc);

/* Exact integer product with wrap-around (two's complement) arithmetic, as torch's int64 mm. */
void mp_gemm_i64(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, int64_t alpha,
                 const int64_t *a, int64_t lda, const int64_t *b, int64_t ldb, int64_t beta,
                 int64_t *c, int64_t ldc);

#endif
