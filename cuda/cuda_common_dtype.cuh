/* cuda_common_dtype.cuh - device helpers the kernels share: loads and stores of one element
 * of any float dtype as fp32 through the bodies of csrc/shared/mp_half.h (the CPU oracle's
 * rounding), element offsets of an iterator index, and a block's sum of one double per
 * thread. Internal to cuda/; C++ only. */
#ifndef MP_CUDA_COMMON_DTYPE_CUH
#define MP_CUDA_COMMON_DTYPE_CUH

#include "shared/mp_backend.h"
#include "shared/mp_half.h"

__device__ inline float mp_dev_load(const void *base, int dt, int64_t i)
{
    if (dt == MP_DTYPE_FLOAT16)
        return mp_half_to_f32(static_cast<const mp_half *>(base)[i]);
    if (dt == MP_DTYPE_BFLOAT16)
        return mp_bf16_to_f32(static_cast<const mp_bf16 *>(base)[i]);
    return static_cast<const float *>(base)[i];
}

__device__ inline void mp_dev_store(void *base, int dt, int64_t i, float v)
{
    if (dt == MP_DTYPE_FLOAT16)
        static_cast<mp_half *>(base)[i] = mp_f32_to_half(v);
    else if (dt == MP_DTYPE_BFLOAT16)
        static_cast<mp_bf16 *>(base)[i] = mp_f32_to_bf16(v);
    else
        static_cast<float *>(base)[i] = v;
}

/* Element offsets of each operand of it at linear index idx (row-major: last dim fastest). */
__device__ inline void mp_dev_iter_offsets(const mp_iter &it, int64_t idx, int64_t *off)
{
    for (int k = 0; k < it.nops; k++)
        off[k] = 0;
    for (int d = it.ndim - 1; d >= 0; d--) {
        int64_t i = idx % it.shape[d];
        idx /= it.shape[d];
        for (int k = 0; k < it.nops; k++)
            off[k] += i * it.strides[k][d];
    }
}

/* The sum over the block of each thread's v (a tree in part, blockDim.x doubles of shared
 * memory, blockDim.x a power of two); every thread returns it. */
__device__ inline double mp_dev_block_sum(double *part, double v)
{
    part[threadIdx.x] = v;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w)
            part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    double total = part[0];
    __syncthreads();            /* part may be reused by the caller's next round */
    return total;
}

#endif
