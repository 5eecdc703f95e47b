/* reduce.cu - the reduction kernels the core's sums run on the device: column sums of a
 * (rows, cols) matrix into a double accumulator (MP_KERNEL_COLUMN_SUM: a thread per column,
 * its rows in order as the CPU adds them, so the double sums are the CPU's) and the store of
 * an accumulator into the output dtype (MP_KERNEL_SUM_STORE, as mp_store_scalar: double to
 * fp32, then to fp16/bf16). */
#include "cuda_common.cuh"
#include "cuda_common_dtype.cuh"

namespace {

__global__ void colsum_kernel(double *acc, const char *x, mp_colsum_args a)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < a.cols; c += stride) {
        double s = acc[c];
        for (int64_t r = 0; r < a.rows; r++)
            s += mp_dev_load(x, a.dt, r * a.ld + c);
        acc[c] = s;
    }
}

__global__ void store_kernel(const double *acc, char *dst, mp_sum_store_args a)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += stride) {
        int64_t iv = a.int_acc ? reinterpret_cast<const int64_t *>(acc)[i] : (int64_t)acc[i];
        double f = a.int_acc ? (double)iv : acc[i];
        if (mp_dtype_is_float(a.dt))
            mp_dev_store(dst, a.dt, i, (float)f);
        else if (a.dt == MP_DTYPE_INT64)
            reinterpret_cast<int64_t *>(dst)[i] = iv;
        else if (a.dt == MP_DTYPE_BOOL)
            reinterpret_cast<uint8_t *>(dst)[i] = (uint8_t)(a.int_acc ? iv != 0 : f != 0.0);
        else
            reinterpret_cast<uint8_t *>(dst)[i] = (uint8_t)((uint64_t)iv & 0xFFu);
    }
}

}  // namespace

extern "C" mp_status mp_cuda_column_sum(void *const *buf, const mp_colsum_args *a,
                                        mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK || a->cols == 0)
        return st;
    mp_gpu_launch l = mp_gpu_launch_shape(a->cols, 1, mp_cuda_sm_count());
    colsum_kernel<<<l.blocks, l.threads>>>(static_cast<double *>(buf[0]),
                                           static_cast<const char *>(buf[1]), *a);
    return mp_cuda_check(cudaGetLastError(), "column-sum kernel launch", msg);
}

extern "C" mp_status mp_cuda_sum_store(void *const *buf, const mp_sum_store_args *a,
                                       mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK || a->n == 0)
        return st;
    mp_gpu_launch l = mp_gpu_launch_shape(a->n, 1, mp_cuda_sm_count());
    store_kernel<<<l.blocks, l.threads>>>(static_cast<const double *>(buf[0]),
                                          static_cast<char *>(buf[1]), *a);
    return mp_cuda_check(cudaGetLastError(), "sum-store kernel launch", msg);
}

namespace {

constexpr int kSumThreads = 128;

/* The output dims (accumulator moves) and the summed dims (it does not) of an iterator. */
struct SumDims {
    int nout, nred;
    int64_t oshape[MP_MAX_DIMS], os0[MP_MAX_DIMS], os1[MP_MAX_DIMS];
    int64_t rshape[MP_MAX_DIMS], rs1[MP_MAX_DIMS];
    int64_t outputs, per_output;
};

__device__ inline int64_t offset_of(int64_t idx, int n, const int64_t *shape, const int64_t *st)
{
    int64_t off = 0;
    for (int d = n - 1; d >= 0; d--) {
        off += (idx % shape[d]) * st[d];
        idx /= shape[d];
    }
    return off;
}

/* A block per output: its threads stride over the summed elements, then a tree in shared
 * memory (doubles, or wrapping int64), and thread 0 adds the total into the accumulator. */
__global__ void sum_kernel(char *acc, const char *x, SumDims s, mp_sum_iter_args a)
{
    __shared__ double pd[kSumThreads];
    __shared__ int64_t pi[kSumThreads];
    size_t isz = mp_dtype_size(a.dt);
    for (int64_t o = blockIdx.x; o < s.outputs; o += gridDim.x) {
        int64_t ob = offset_of(o, s.nout, s.oshape, s.os1);
        double d = 0.0;
        uint64_t iv = 0;
        for (int64_t r = threadIdx.x; r < s.per_output; r += blockDim.x) {
            const char *p = x + (ob + offset_of(r, s.nred, s.rshape, s.rs1)) * (int64_t)isz;
            if (mp_dtype_is_float(a.dt))
                d += mp_dev_load(p, a.dt, 0);
            else if (a.dt == MP_DTYPE_INT64)
                iv += (uint64_t)*reinterpret_cast<const int64_t *>(p), d += (double)*reinterpret_cast<const int64_t *>(p);
            else
                iv += *reinterpret_cast<const uint8_t *>(p), d += *reinterpret_cast<const uint8_t *>(p);
        }
        pd[threadIdx.x] = d;
        pi[threadIdx.x] = (int64_t)iv;
        __syncthreads();
        for (int w = blockDim.x / 2; w > 0; w /= 2) {
            if ((int)threadIdx.x < w) {
                pd[threadIdx.x] += pd[threadIdx.x + w];
                pi[threadIdx.x] = (int64_t)((uint64_t)pi[threadIdx.x] + (uint64_t)pi[threadIdx.x + w]);
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            char *dst = acc + offset_of(o, s.nout, s.oshape, s.os0) * 8;
            if (a.int_acc)
                *reinterpret_cast<int64_t *>(dst) = (int64_t)((uint64_t)*reinterpret_cast<int64_t *>(dst) + (uint64_t)pi[0]);
            else
                *reinterpret_cast<double *>(dst) += pd[0];
        }
        __syncthreads();
    }
}

}  // namespace

extern "C" mp_status mp_cuda_sum(const mp_iter *it, const mp_sum_iter_args *a, mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK || it->numel == 0)
        return st;
    SumDims s = {};
    s.outputs = s.per_output = 1;
    for (int d = 0; d < it->ndim; d++) {
        if (it->strides[0][d] != 0) {
            s.oshape[s.nout] = it->shape[d];
            s.os0[s.nout] = it->strides[0][d];
            s.os1[s.nout++] = it->strides[1][d];
            s.outputs *= it->shape[d];
        } else {
            s.rshape[s.nred] = it->shape[d];
            s.rs1[s.nred++] = it->strides[1][d];
            s.per_output *= it->shape[d];
        }
    }
    int64_t cap = (int64_t)mp_cuda_sm_count() * MP_GPU_BLOCKS_PER_SM * 4;
    unsigned blocks = (unsigned)(s.outputs < cap ? s.outputs : cap);
    sum_kernel<<<blocks, kSumThreads>>>(it->base[0], it->base[1], s, *a);
    return mp_cuda_check(cudaGetLastError(), "sum kernel launch", msg);
}
