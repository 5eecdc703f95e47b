/* cuda_common_dtype.cuh - loads and stores of one element of any float dtype as fp32 on the
 * device, through the bodies of csrc/shared/mp_half.h (the CPU oracle's rounding). Internal
 * to cuda/; C++ only. */
#ifndef MP_CUDA_COMMON_DTYPE_CUH
#define MP_CUDA_COMMON_DTYPE_CUH

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

#endif
