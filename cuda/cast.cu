/* cast.cu - elementwise dtype conversion of contiguous device buffers (mp_cuda_cast).
 * The per-element bodies are csrc/shared/mp_half.h, the same ones the CPU scalar kernels
 * use, so the GPU rounds bit-identically to the CPU oracle. Every pair goes through fp32
 * (exact for fp16 and bf16). Launches are asynchronous on the legacy default stream; only
 * launch errors are reported here, not faults found later by the device. */
#include "cuda_common.cuh"
#include "shared/mp_half.h"

namespace {

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 4096;   /* grid-stride beyond this: enough to fill any GPU */

__device__ inline float load_f32(float x) { return x; }
__device__ inline float load_f32(mp_half h) { return mp_half_to_f32(h); }
__device__ inline float load_f32(mp_bf16 h) { return mp_bf16_to_f32(h); }

template <typename T> __device__ inline T store_f32(float x);
template <> __device__ inline float store_f32<float>(float x) { return x; }
template <> __device__ inline mp_half store_f32<mp_half>(float x) { return mp_f32_to_half(x); }
template <> __device__ inline mp_bf16 store_f32<mp_bf16>(float x) { return mp_f32_to_bf16(x); }

template <typename Src, typename Dst>
__global__ void cast_kernel(const Src *__restrict__ src, Dst *__restrict__ dst, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = store_f32<Dst>(load_f32(src[i]));
}

template <typename Src, typename Dst>
mp_status launch_cast(const void *src, void *dst, size_t n, mp_msg *msg)
{
    size_t blocks = (n + kThreads - 1) / kThreads;
    if (blocks > kMaxBlocks)
        blocks = kMaxBlocks;
    cast_kernel<Src, Dst><<<(unsigned)blocks, kThreads>>>(static_cast<const Src *>(src),
                                                          static_cast<Dst *>(dst), n);
    return mp_cuda_check(cudaGetLastError(), "cast kernel launch", msg);
}

const char *dtype_name(mp_dtype dt)
{
    switch (dt) {
    case MP_DTYPE_FLOAT32: return "float32";
    case MP_DTYPE_FLOAT16: return "float16";
    case MP_DTYPE_BFLOAT16: return "bfloat16";
    case MP_DTYPE_INT64: return "int64";
    case MP_DTYPE_BOOL: return "bool";
    case MP_DTYPE_UINT8: return "uint8";
    default: return "unknown dtype";
    }
}

__global__ void round_kernel(float *data, size_t n, int bf16)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        data[i] = bf16 ? mp_bf16_to_f32(mp_f32_to_bf16(data[i]))
                       : mp_half_to_f32(mp_f32_to_half(data[i]));
}

}  // namespace

extern "C" mp_status mp_cuda_round_f32(void *data, size_t n, mp_dtype dtype, mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK || n == 0)
        return st;
    if (dtype != MP_DTYPE_FLOAT16 && dtype != MP_DTYPE_BFLOAT16)
        return mp_cuda_fail(msg, MP_ERR_TYPE, "round_f32: %s is not a 16-bit float dtype",
                            dtype_name(dtype));
    size_t blocks = (n + kThreads - 1) / kThreads;
    if (blocks > kMaxBlocks)
        blocks = kMaxBlocks;
    round_kernel<<<(unsigned)blocks, kThreads>>>(static_cast<float *>(data), n,
                                                 dtype == MP_DTYPE_BFLOAT16);
    return mp_cuda_check(cudaGetLastError(), "round kernel launch", msg);
}

extern "C" mp_status mp_cuda_cast(const void *src, mp_dtype src_dtype, void *dst,
                                  mp_dtype dst_dtype, size_t n, mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK)
        return st;
    if (src_dtype == dst_dtype && mp_dtype_size(src_dtype) > 0) {
        if (n == 0)
            return MP_OK;
        return mp_cuda_check(cudaMemcpy(dst, src, n * mp_dtype_size(src_dtype),
                                        cudaMemcpyDeviceToDevice), "cudaMemcpy in cast", msg);
    }
    if (!mp_dtype_is_float(src_dtype) || !mp_dtype_is_float(dst_dtype))
        return mp_cuda_fail(msg, MP_ERR_TYPE, "CUDA cast from %s to %s is not supported "
                            "(float32, float16 and bfloat16 only)", dtype_name(src_dtype),
                            dtype_name(dst_dtype));
    if (n == 0)
        return MP_OK;
    switch (src_dtype * MP_DTYPE_COUNT + dst_dtype) {
    case MP_DTYPE_FLOAT32 * MP_DTYPE_COUNT + MP_DTYPE_FLOAT16:
        return launch_cast<float, mp_half>(src, dst, n, msg);
    case MP_DTYPE_FLOAT32 * MP_DTYPE_COUNT + MP_DTYPE_BFLOAT16:
        return launch_cast<float, mp_bf16>(src, dst, n, msg);
    case MP_DTYPE_FLOAT16 * MP_DTYPE_COUNT + MP_DTYPE_FLOAT32:
        return launch_cast<mp_half, float>(src, dst, n, msg);
    case MP_DTYPE_FLOAT16 * MP_DTYPE_COUNT + MP_DTYPE_BFLOAT16:
        return launch_cast<mp_half, mp_bf16>(src, dst, n, msg);
    case MP_DTYPE_BFLOAT16 * MP_DTYPE_COUNT + MP_DTYPE_FLOAT32:
        return launch_cast<mp_bf16, float>(src, dst, n, msg);
    case MP_DTYPE_BFLOAT16 * MP_DTYPE_COUNT + MP_DTYPE_FLOAT16:
        return launch_cast<mp_bf16, mp_half>(src, dst, n, msg);
    default:
        return mp_cuda_fail(msg, MP_ERR_TYPE, "CUDA cast from %s to %s is not supported",
                            dtype_name(src_dtype), dtype_name(dst_dtype));
    }
}
