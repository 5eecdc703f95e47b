/* map.cu - the elementwise map kernel: the op ids of shared/mp_pointwise.h (add, mul, div,
 * the unary ops and their gradients) over the core's iterator metadata (operand 0 the
 * output, inputs broadcast by their strides), math in fp32 as the CPU's maps, any float
 * output dtype; integer and bool inputs are read as fp32 (the CPU map reads them so too). */
#include "cuda_common.cuh"
#include "cuda_common_dtype.cuh"
#include "shared/mp_pointwise.h"

namespace {

struct MapDesc {
    int n_in, op;
    int out_dt, in_dt[MP_MAP_MAX_IN];
    float arg[MP_MAP_OP_ARGS];
};

__device__ inline float load_any(const char *p, int dt)
{
    if (dt == MP_DTYPE_INT64)
        return (float)*reinterpret_cast<const int64_t *>(p);
    if (dt == MP_DTYPE_BOOL || dt == MP_DTYPE_UINT8)
        return (float)*reinterpret_cast<const uint8_t *>(p);
    return mp_dev_load(p, dt, 0);
}

__global__ void map_kernel(mp_iter it, MapDesc d)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < it.numel; i += stride) {
        int64_t off[MP_ITER_MAX_OPS];
        mp_dev_iter_offsets(it, i, off);
        float x[MP_MAP_MAX_IN] = {0.0f, 0.0f, 0.0f};
        for (int k = 0; k < d.n_in; k++)
            x[k] = load_any(it.base[k + 1] + off[k + 1] * (int64_t)it.itemsize[k + 1],
                            d.in_dt[k]);
        float r = mp_map_apply(d.op, x, d.arg);
        mp_dev_store(it.base[0] + off[0] * (int64_t)it.itemsize[0], d.out_dt, 0, r);
    }
}

}  // namespace

extern "C" mp_status mp_cuda_map(const mp_map_kernel *k, mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK || k->it->numel == 0)
        return st;
    if (k->op == MP_MAP_OP_NONE || k->fn64 || !mp_dtype_is_float(k->out_dt))
        return mp_cuda_fail(msg, MP_ERR_NOT_IMPLEMENTED, "Could not run 'elementwise map' "
                            "with arguments from the 'CUDA' backend: mpamp's CUDA backend "
                            "has no kernel for this op yet (run it on the CPU, or under the "
                            "simulated GPU with MPAMP_CUDA_SIM=1)");
    MapDesc d = {k->n_in, k->op, (int)k->out_dt, {0, 0, 0}, {0.0f, 0.0f, 0.0f, 0.0f}};
    int nargs = k->op == MP_MAP_OP_CLAMP ? 4 : 1;
    for (int i = 0; i < nargs && k->args; i++)
        d.arg[i] = (float)k->args[i];
    for (int i = 0; i < k->n_in; i++)
        d.in_dt[i] = (int)k->in_dt[i];
    mp_gpu_launch l = mp_gpu_launch_shape(k->it->numel, 1, mp_cuda_sm_count());
    map_kernel<<<l.blocks, l.threads>>>(*k->it, d);
    return mp_cuda_check(cudaGetLastError(), "map kernel launch", msg);
}

namespace {

/* ReLU and its backward on fp16/bf16 bits (MP_KERNEL_RELU_16, as ops_unary.c's host loop):
 * +0 where x (forward) or the saved output (backward) is negative or zero, NaNs quieted. */
__global__ void relu16_kernel(uint16_t *out, const uint16_t *x, const uint16_t *v,
                              mp_relu16_args a)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += stride) {
        if (!a.backward) {
            uint16_t h = x[i], mag = h & 0x7fffu;
            int neg = (h & 0x8000u) && mag != 0 && mag <= a.inf;
            out[i] = neg ? 0 : mag > a.inf ? (uint16_t)(h | a.quiet) : h;
        } else {
            uint16_t s = v[i], smag = s & 0x7fffu, g = x[i];
            int off = smag == 0 || ((s & 0x8000u) && smag <= a.inf);
            out[i] = off ? 0 : (g & 0x7fffu) > a.inf ? (uint16_t)(g | a.quiet) : g;
        }
    }
}

}  // namespace

extern "C" mp_status mp_cuda_relu16(void *const *buf, const mp_relu16_args *a, mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK || a->n == 0)
        return st;
    mp_gpu_launch l = mp_gpu_launch_shape(a->n, 1, mp_cuda_sm_count());
    relu16_kernel<<<l.blocks, l.threads>>>(static_cast<uint16_t *>(buf[0]),
                                           static_cast<const uint16_t *>(buf[1]),
                                           static_cast<const uint16_t *>(buf[2]), *a);
    return mp_cuda_check(cudaGetLastError(), "relu16 kernel launch", msg);
}
