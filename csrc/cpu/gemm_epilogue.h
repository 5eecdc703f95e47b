/* gemm_epilogue.h - what the GEMM driver (gemm.c) does to a finished block of fp32
 * accumulators: alpha, beta * C, the bias, the activation, and the store into C in its dtype
 * (gemm_epilogue.c). */
#ifndef MP_CPU_GEMM_EPILOGUE_H
#define MP_CPU_GEMM_EPILOGUE_H

#include "dispatch.h"
#include "gemm.h"

/* C[i.., j..] for rows x cols from the accumulators acc (row stride ldacc; NULL: the product
 * is 0), with g's alpha, beta, activation and C dtype; bias: g->n values (bias_scale applied)
 * or NULL; cvt: the level's casts for an fp16/bf16 C. */
void mp_gemm_epilogue(const mp_gemm_args *g, const float *bias, const mp_cpu_kernels *cvt,
                      const float *acc, int64_t ldacc, int64_t i, int64_t j, int64_t rows,
                      int64_t cols);

#endif
