/* loss.cu - the pointwise losses on the device (MP_KERNEL_LOSS, _LOSS_GRAD, _LOSS_REDUCE of
 * shared/mp_kernel_args.h): per-element values and gradients through shared/mp_pointwise.h's
 * formulas, and the sum (or mean) of the fp32 losses in double by one block (the order of
 * the additions differs from the CPU's; the fp32 result almost always agrees). */
#include "cuda_common.cuh"
#include "cuda_common_dtype.cuh"
#include "shared/mp_pointwise.h"

namespace {

constexpr int kReduceThreads = 1024;

__global__ void loss_kernel(const float *x, const float *t, float *p, mp_loss_args a)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += stride)
        p[i] = mp_loss_value(a.kind, x[i] - t[i], a.b);
}

__global__ void loss_grad_kernel(const float *x, const float *t, const void *g, float *p,
                                 mp_loss_grad_args a)
{
    float scale = 1.0f;
    if (!a.dense) {
        double v = mp_dev_load(g, a.gdt, 0);
        scale = (float)(a.mean ? v / a.denom : v);
    }
    const float *gd = static_cast<const float *>(g);
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += stride) {
        float gi = a.dense ? gd[i] : scale;
        p[i] = a.sgn * gi * mp_loss_deriv(a.kind, x[i] - t[i], a.b);
    }
}

__global__ void loss_reduce_kernel(const float *l, void *out, const double *denom,
                                   mp_loss_reduce_args a)
{
    __shared__ double part[kReduceThreads];
    double s = 0.0;
    for (int64_t i = threadIdx.x; i < a.n; i += blockDim.x)
        s += l[i];
    s = mp_dev_block_sum(part, s);
    if (threadIdx.x != 0)
        return;
    if (a.mean)
        s /= denom ? *denom : a.denom;     /* 0/0: NaN for an empty mean, as torch */
    if (mp_dtype_is_float(a.dt))
        mp_dev_store(out, a.dt, 0, (float)s);
    else if (a.dt == MP_DTYPE_INT64)
        *static_cast<int64_t *>(out) = (int64_t)s;
    else
        *static_cast<uint8_t *>(out) = (uint8_t)(s != 0.0);
}

}  // namespace

extern "C" mp_status mp_cuda_loss(void *const *buf, const mp_loss_args *a, mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK || a->n == 0)
        return st;
    mp_gpu_launch l = mp_gpu_launch_shape(a->n, 1, mp_cuda_sm_count());
    loss_kernel<<<l.blocks, l.threads>>>(static_cast<const float *>(buf[0]),
                                         static_cast<const float *>(buf[1]),
                                         static_cast<float *>(buf[2]), *a);
    return mp_cuda_check(cudaGetLastError(), "loss kernel launch", msg);
}

extern "C" mp_status mp_cuda_loss_grad(void *const *buf, const mp_loss_grad_args *a,
                                       mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK || a->n == 0)
        return st;
    mp_gpu_launch l = mp_gpu_launch_shape(a->n, 1, mp_cuda_sm_count());
    loss_grad_kernel<<<l.blocks, l.threads>>>(static_cast<const float *>(buf[0]),
                                              static_cast<const float *>(buf[1]), buf[2],
                                              static_cast<float *>(buf[3]), *a);
    return mp_cuda_check(cudaGetLastError(), "loss backward kernel launch", msg);
}

extern "C" mp_status mp_cuda_loss_reduce(void *const *buf, const mp_loss_reduce_args *a,
                                         mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK)
        return st;
    loss_reduce_kernel<<<1, kReduceThreads>>>(static_cast<const float *>(buf[0]), buf[1],
                                              static_cast<const double *>(buf[2]), *a);
    return mp_cuda_check(cudaGetLastError(), "loss reduction kernel launch", msg);
}
