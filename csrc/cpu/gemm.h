/* gemm.h - matrix products on raw row-major pointers, fp32 accumulation:
 *     C = act(alpha * op(A) @ op(B) + beta * C + bias_scale * bias[j])
 * op(X) = X or X^T by flag, leading dimensions in elements. A and B may be float32, float16 or
 * bfloat16 (each its own); C float32, float16 or bfloat16, written once with the result rounded
 * to C's dtype (round to nearest even, as the casts). beta == 0 never reads C (NaN in C does
 * not leak, as BLAS); beta != 0 needs a float32 C. bias (optional) holds N values of
 * bias_dtype, `bias_stride` elements apart, added to every row. Products large enough run on
 * mp_get_num_threads() threads (parallel.h). Shapes and strides are the caller's (core)
 * business: nothing here allocates tensors or sets error messages. */
#ifndef MP_CPU_GEMM_H
#define MP_CPU_GEMM_H

#include "../shared/mp_defs.h"
#include "dispatch.h"

typedef enum { MP_GEMM_ACT_NONE = 0, MP_GEMM_ACT_RELU, MP_GEMM_ACT_GELU } mp_gemm_act;

typedef struct {
    int trans_a, trans_b;
    int64_t m, n, k;
    mp_dtype a_dtype, b_dtype, c_dtype;
    const void *a;
    int64_t lda;
    const void *b;
    int64_t ldb;
    void *c;
    int64_t ldc;
    float alpha, beta;
    const void *bias;            /* NULL: none */
    mp_dtype bias_dtype;
    int64_t bias_stride;
    float bias_scale;
    mp_gemm_act act;
    /* FLOAT32 (the default): none. FLOAT16 / BFLOAT16 with an fp32 C: every result is rounded
     * to that dtype and stored widened back, exactly (the values a 16-bit C would hold, as
     * autograd delivers a 16-bit weight gradient into an fp32 .grad). */
    mp_dtype round_dtype;
} mp_gemm_args;

/* Fills the fields every product needs; the rest default to fp32, alpha 1, beta 0, no bias,
 * no activation. */
mp_gemm_args mp_gemm_plain(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                           const void *a, int64_t lda, const void *b, int64_t ldb, void *c,
                           int64_t ldc);

/* bfloat16 x bfloat16 at the AVX512_BF16 level runs vdpbf16ps, which treats values and partial
 * sums below 2^-126 in magnitude as zero (gemm_avx512bf16.c); the other kernels keep them. */
/* The product with the best kernels of the active ISA level (mp_cpu()->isa). Returns
 * MP_ERR_NOMEM (no message) when the packing buffers cannot be allocated and MP_ERR_TYPE
 * for dtypes outside the list above (or beta != 0 with a low-precision C). */
mp_status mp_gemm(const mp_gemm_args *g);
/* The same with the kernels of one level (tests compare levels); MP_ERR_VALUE when this
 * CPU or build cannot run it. threads: 0 for mp_get_num_threads(), else that many at most. */
mp_status mp_gemm_at(const mp_gemm_args *g, mp_isa isa, int threads);

/* Name of the micro-kernel mp_gemm_at would use ("avx2 fp32 6x16", ...), for reports. */
const char *mp_gemm_kernel_name(mp_isa isa, mp_dtype a_dtype, mp_dtype b_dtype);

/* Where packing buffers larger than a stack block come from: the core installs its caching
 * allocator (core/alloc.c) at import, so a repeated product reuses its blocks and memory
 * pressure releases them with every other cache; NULL restores aligned_alloc/free. alloc
 * returns NULL when no memory can be had (the product then fails with MP_ERR_NOMEM). */
void mp_gemm_set_allocator(void *(*alloc)(size_t nbytes), void (*release)(void *p, size_t nbytes));

/* Exact integer product with wrap-around (two's complement) arithmetic, as torch's int64 mm. */
void mp_gemm_i64(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, int64_t alpha,
                 const int64_t *a, int64_t lda, const int64_t *b, int64_t ldb, int64_t beta,
                 int64_t *c, int64_t ldc);

#endif
