/* copy.cu - strided copies with dtype conversion and fills over the core's iterator metadata
 * (shared/mp_backend.h: operand 0 the destination, row-major walk, strides in elements).
 * Float dtypes convert through fp32 with shared/mp_half.h's rounding; integer pairs are exact;
 * to bool is "!= 0". Grid-stride kernels sized by csrc/gpu/launch_shape.c. */
#include "cuda_common.cuh"
#include "cuda_common_dtype.cuh"

#include <cstring>

namespace {

__device__ inline int is_float(int dt)
{
    return dt == MP_DTYPE_FLOAT32 || dt == MP_DTYPE_FLOAT16 || dt == MP_DTYPE_BFLOAT16;
}

__device__ inline int64_t load_int(const char *p, int dt)
{
    if (dt == MP_DTYPE_INT64)
        return *reinterpret_cast<const int64_t *>(p);
    return *reinterpret_cast<const uint8_t *>(p);   /* bool and uint8 */
}

__device__ void convert(char *d, int ddt, const char *s, int sdt, size_t dsize)
{
    if (ddt == sdt) {
        for (size_t b = 0; b < dsize; b++)
            d[b] = s[b];
        return;
    }
    if (ddt == MP_DTYPE_BOOL) {
        int nz = is_float(sdt) ? mp_dev_load(s, sdt, 0) != 0.0f : load_int(s, sdt) != 0;
        *reinterpret_cast<uint8_t *>(d) = (uint8_t)nz;
        return;
    }
    if (is_float(ddt)) {
        float v = is_float(sdt) ? mp_dev_load(s, sdt, 0) : (float)load_int(s, sdt);
        mp_dev_store(d, ddt, 0, v);
        return;
    }
    int64_t v = is_float(sdt) ? (int64_t)mp_dev_load(s, sdt, 0) : load_int(s, sdt);
    if (ddt == MP_DTYPE_INT64)
        *reinterpret_cast<int64_t *>(d) = v;
    else
        *reinterpret_cast<uint8_t *>(d) = (uint8_t)v;
}

__global__ void copy_kernel(mp_iter it, int ddt, int sdt)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x, off[MP_ITER_MAX_OPS];
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < it.numel; i += stride) {
        mp_dev_iter_offsets(it, i, off);
        convert(it.base[0] + off[0] * (int64_t)it.itemsize[0], ddt,
                it.base[1] + off[1] * (int64_t)it.itemsize[1], sdt, it.itemsize[0]);
    }
}

struct Pattern {
    unsigned char bytes[8];
};

__global__ void fill_kernel(mp_iter it, Pattern pat, int size)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x, off[MP_ITER_MAX_OPS];
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < it.numel; i += stride) {
        mp_dev_iter_offsets(it, i, off);
        char *d = it.base[0] + off[0] * size;
        for (int b = 0; b < size; b++)
            d[b] = (char)pat.bytes[b];
    }
}

}  // namespace

extern "C" mp_status mp_cuda_copy(const mp_iter *it, mp_dtype dst, mp_dtype src, mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK || it->numel == 0)
        return st;
    mp_gpu_launch l = mp_gpu_launch_shape(it->numel, 1, mp_cuda_sm_count());
    copy_kernel<<<l.blocks, l.threads>>>(*it, (int)dst, (int)src);
    return mp_cuda_check(cudaGetLastError(), "copy kernel launch", msg);
}

extern "C" mp_status mp_cuda_fill(const mp_iter *it, const void *pattern, size_t itemsize,
                                  mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK || it->numel == 0)
        return st;
    if (itemsize == 0 || itemsize > 8)
        return mp_cuda_fail(msg, MP_ERR_VALUE, "fill: element size %zu is not 1..8", itemsize);
    Pattern p = {};
    memcpy(p.bytes, pattern, itemsize);
    mp_gpu_launch l = mp_gpu_launch_shape(it->numel, 1, mp_cuda_sm_count());
    fill_kernel<<<l.blocks, l.threads>>>(*it, p, (int)itemsize);
    return mp_cuda_check(cudaGetLastError(), "fill kernel launch", msg);
}
