/* amp.cu - loss scaling on the device: the multi-tensor unscale + inf/NaN check writing
 * found_inf in device memory, torch's _amp_update_scale_ and the reciprocal of the scale, each
 * reading its scalars from device memory (no host synchronisation). Chunking is the host
 * plan of csrc/gpu/multi_tensor.c, the per-element body shared/mp_optim.h's. */
#include "cuda_common.cuh"
#include "cuda_common_dtype.cuh"
#include "shared/mp_optim.h"

namespace {

/* One launch of a one-list multi-tensor kernel (unscale, sum of squares): its tensors and
 * block table, passed by value (under 4 KiB). */
struct ChunkParams {
    void *addr[MP_MT_MAX_TENSORS];
    int64_t numel[MP_MT_MAX_TENSORS];
    unsigned char dt[MP_MT_MAX_TENSORS];
    unsigned char block_tensor[MP_MT_MAX_BLOCKS];
    int block_chunk[MP_MT_MAX_BLOCKS];
};
static_assert(sizeof(ChunkParams) + 2 * sizeof(void *) <= 4096, "kernel parameters");

/* The parameters of launch l over the tensors buf[0..n) of the plan. */
void fill_chunks(ChunkParams &p, const mp_mt_launch &l, void *const *buf, const int64_t *numel,
                 const mp_dtype *dt)
{
    for (int i = 0; i < l.ntensors; i++) {
        int t = l.tensor[i];
        p.addr[i] = buf[t];
        p.numel[i] = numel[t];
        p.dt[i] = (unsigned char)dt[t];
    }
    for (int b = 0; b < l.nblocks; b++) {
        p.block_tensor[b] = l.block_tensor[b];
        p.block_chunk[b] = l.block_chunk[b];
    }
}

/* This block's tensor slot and element range [*begin, *end). */
__device__ inline int block_chunk(const ChunkParams &p, int64_t *begin, int64_t *end)
{
    int slot = p.block_tensor[blockIdx.x];
    int64_t n = p.numel[slot];
    *begin = (int64_t)p.block_chunk[blockIdx.x] * MP_MT_CHUNK;
    *end = n - *begin < MP_MT_CHUNK ? n : *begin + MP_MT_CHUNK;
    return slot;
}

__global__ void unscale_kernel(ChunkParams p, float *found_inf, const float *inv_scale)
{
    int64_t begin, end;
    int slot = block_chunk(p, &begin, &end);
    float inv = inv_scale ? *inv_scale : 1.0f;
    int found = 0, dt = p.dt[slot];
    void *g = p.addr[slot];
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
        float v = mp_unscale_check(mp_dev_load(g, dt, i), inv, &found);
        if (inv_scale)
            mp_dev_store(g, dt, i, v);
    }
    if (found)          /* every writer stores the same 1.0f: no atomic needed */
        *found_inf = 1.0f;
}

__global__ void update_scale_kernel(float *scale, int64_t *tracker, const float *found_inf,
                                    double growth, double backoff, int64_t interval)
{
    if (*found_inf != 0.0f) {
        *scale = (float)((double)*scale * backoff);
        *tracker = 0;
        return;
    }
    int64_t successful = *tracker + 1;
    if (successful == interval) {
        float grown = (float)((double)*scale * growth);
        if (mp_f32_isfinite(grown))
            *scale = grown;
        *tracker = 0;
    } else {
        *tracker = successful;
    }
}

__global__ void inv_scale_kernel(float *out, const float *scale)
{
    *out = (float)(1.0 / (double)*scale);
}

}  // namespace

extern "C" mp_status mp_cuda_unscale(void *const *buf, const mp_unscale_args *a, mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK)
        return st;
    float *found = static_cast<float *>(buf[a->n]);
    const float *inv = static_cast<const float *>(buf[a->n + 1]);
    mp_mt_cursor cur = {0, 0};
    mp_mt_launch l;
    while (mp_mt_next(a->numel, a->n, 1, &cur, &l)) {
        ChunkParams p;
        fill_chunks(p, l, buf, a->numel, a->dt);
        unscale_kernel<<<l.nblocks, MP_GPU_THREADS>>>(p, found, inv);
        if ((st = mp_cuda_check(cudaGetLastError(), "unscale kernel launch", msg)) != MP_OK)
            return st;
    }
    return MP_OK;
}

extern "C" mp_status mp_cuda_scale_update(void *const *buf, const mp_scale_update_args *a,
                                          mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK)
        return st;
    update_scale_kernel<<<1, 1>>>(static_cast<float *>(buf[0]), static_cast<int64_t *>(buf[1]),
                                  static_cast<const float *>(buf[2]), a->growth, a->backoff,
                                  a->interval);
    return mp_cuda_check(cudaGetLastError(), "update_scale kernel launch", msg);
}

extern "C" mp_status mp_cuda_inv_scale(void *const *buf, mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK)
        return st;
    inv_scale_kernel<<<1, 1>>>(static_cast<float *>(buf[0]), static_cast<const float *>(buf[1]));
    return mp_cuda_check(cudaGetLastError(), "inv_scale kernel launch", msg);
}

namespace {

/* The sum of squares of a list of tensors (MP_KERNEL_SUM_SQUARES, clip_grad_norm_'s 2-norm):
 * a block per chunk of the multi-tensor plan sums its squares in double, a tree in shared
 * memory, and one atomicAdd per block into the total. The order of those adds varies from
 * run to run, so the double total may differ in its last bits (the fp32 norm almost never). */
__global__ void sum_squares_kernel(ChunkParams p, double *total)
{
    __shared__ double part[MP_GPU_THREADS];
    int64_t begin, end;
    int slot = block_chunk(p, &begin, &end);
    double s = 0.0;
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
        double v = mp_dev_load(p.addr[slot], p.dt[slot], i);
        s += v * v;
    }
    s = mp_dev_block_sum(part, s);
    if (threadIdx.x == 0)
        atomicAdd(total, s);
}

}  // namespace

extern "C" mp_status mp_cuda_sum_squares(void *const *buf, const mp_sum_squares_args *a,
                                         mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK)
        return st;
    mp_mt_cursor cur = {0, 0};
    mp_mt_launch l;
    while (mp_mt_next(a->numel, a->n, 1, &cur, &l)) {
        ChunkParams p;
        fill_chunks(p, l, buf, a->numel, a->dt);
        sum_squares_kernel<<<l.nblocks, MP_GPU_THREADS>>>(p, static_cast<double *>(buf[a->n]));
        if ((st = mp_cuda_check(cudaGetLastError(), "sum-of-squares kernel launch", msg)) !=
            MP_OK)
            return st;
    }
    return MP_OK;
}
