/* embedding.cu - embedding's row gather and its backward on the device (MP_KERNEL_EMBEDDING,
 * _EMBEDDING_BACKWARD of shared/mp_kernel_args.h). The backward gives each weight-gradient
 * column to one thread, which adds the gradient rows in index order: no atomics, the CPU's
 * order of additions, so the same bits. An index outside the weight stops the kernel with
 * __trap(), as torch's device-side assert: the error surfaces at the next synchronising call
 * and the CUDA context is lost. */
#include "cuda_common.cuh"

#include <cstdio>

namespace {

__device__ inline void check_index(int64_t ix, int64_t rows)
{
    if (ix < 0 || ix >= rows) {
        printf("mpamp: embedding index %lld out of range for %lld rows\n", (long long)ix,
               (long long)rows);
        __trap();
    }
}

/* One thread per 4-byte word of the output (rows are whole words for fp32 and for even d
 * in 16 bits), else per byte. */
__global__ void gather_kernel(const int64_t *ix, const char *w, char *out, mp_embedding_args a,
                              int word)
{
    int64_t per_row = word ? (int64_t)a.row_bytes / 4 : (int64_t)a.row_bytes;
    int64_t total = a.count * per_row, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
        int64_t i = e / per_row, j = e % per_row, r = ix[i];
        check_index(r, a.rows);
        if (word)
            reinterpret_cast<uint32_t *>(out)[e] =
                reinterpret_cast<const uint32_t *>(w)[r * per_row + j];
        else
            out[e] = w[r * per_row + j];
    }
}

__global__ void scatter_kernel(const int64_t *ix, const float *g, float *dw,
                               mp_embedding_args a)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < a.d; j += stride)
        for (int64_t i = 0; i < a.count; i++) {
            int64_t r = ix[i];
            check_index(r, a.rows);
            if (r != a.pad)
                dw[r * a.d + j] += g[i * a.d + j];
        }
}

}  // namespace

extern "C" mp_status mp_cuda_embedding(void *const *buf, const mp_embedding_args *a,
                                       mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK || a->count == 0 || a->row_bytes == 0)
        return st;
    int word = a->row_bytes % 4 == 0 && ((uintptr_t)buf[1] | (uintptr_t)buf[2]) % 4 == 0;
    int64_t total = a->count * (int64_t)(word ? a->row_bytes / 4 : a->row_bytes);
    mp_gpu_launch l = mp_gpu_launch_shape(total, 1, mp_cuda_sm_count());
    gather_kernel<<<l.blocks, l.threads>>>(static_cast<const int64_t *>(buf[0]),
                                           static_cast<const char *>(buf[1]),
                                           static_cast<char *>(buf[2]), *a, word);
    return mp_cuda_check(cudaGetLastError(), "embedding kernel launch", msg);
}

extern "C" mp_status mp_cuda_embedding_backward(void *const *buf, const mp_embedding_args *a,
                                                mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK || a->count == 0 || a->d == 0)
        return st;
    mp_gpu_launch l = mp_gpu_launch_shape(a->d, 1, mp_cuda_sm_count());
    scatter_kernel<<<l.blocks, l.threads>>>(static_cast<const int64_t *>(buf[0]),
                                            static_cast<const float *>(buf[1]),
                                            static_cast<float *>(buf[2]), *a);
    return mp_cuda_check(cudaGetLastError(), "embedding backward kernel launch", msg);
}
