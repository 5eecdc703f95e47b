/* matmul_core.h - the batched matrix product behind every matmul-family op (ops_matmul.c) and
 * its backward: operands of any float dtype go to the GEMM (csrc/cpu/gemm.h) as they are when
 * a row or column has unit stride (otherwise they are copied once in their own dtype), batch
 * dims broadcast, the GEMM runs per batch and writes the output dtype directly (row-vector bias
 * fused) unless products are summed across the batch, in which case an fp32 result is rounded
 * once at the end. int64 operands take an exact int64 path. No autograd here. */
#ifndef MP_MATMUL_CORE_H
#define MP_MATMUL_CORE_H

#include "../dtypes.h"    /* mp_dtype_name, for messages */
#include "../tensor.h"

/* out = alpha * (a @ b) + beta * bias as a new tensor of dtype dt and shape oshape.
 * a: (..., M, K), b: (..., K, N), both ndim >= 2, float (or both int64); their batch dims
 * broadcast together. The product is laid out as pshape = (pbatch..., M, N) (same numel as
 * oshape): pbatch must broadcast to the operands' batch shape, and products of batch entries
 * that pshape does not keep are summed (in fp32) - this is how the backward reduces over
 * broadcast batch dims. bias (NULL = none) broadcasts to oshape; with beta == 0 its values
 * are ignored. op names the op in error messages. */
mp_status mp_matmul_product(mp_tensor *a, mp_tensor *b, mp_tensor *bias, double alpha,
                            double beta, const int64_t *oshape, int ond,
                            const int64_t *pshape, int pnd, mp_dtype dt, const char *op,
                            mp_tensor **out);

/* The same product (no bias, alpha 1) as an fp32 tensor holding each value rounded to
 * round_dt (fp16 or bf16): the bits of a round_dt product widened, made without the 16-bit
 * tensor when nothing is summed over a batch (the GEMM rounds in its store). For a weight
 * gradient that autograd would widen into an fp32 .grad anyway. */
mp_status mp_matmul_product_rounded(mp_tensor *a, mp_tensor *b, const int64_t *oshape,
                                    int ond, const int64_t *pshape, int pnd,
                                    mp_dtype round_dt, const char *op, mp_tensor **out);

/* Broadcast batch shape of a (..., M, K) and b (..., K, N); error names op and both shapes. */
mp_status mp_matmul_batch_shape(const mp_tensor *a, const mp_tensor *b, const char *op,
                                int64_t *bshape, int *nb);


#endif
