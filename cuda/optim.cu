/* optim.cu - fused multi-tensor optimizer steps on the device (SGD, Adam/AdamW, RMSprop,
 * Adagrad, Adadelta) over the one-element bodies of shared/mp_optim.h, with fp32 masters for
 * fp16/bf16 params and Philox stochastic rounding (shared/mp_philox.h, the CPU's draws).
 * found_inf and the grad scale are read in the kernels, so a skipped step costs no host
 * synchronisation. Chunking is csrc/gpu/multi_tensor.c's; the buffer order and argument
 * block are MP_KERNEL_OPTIM's (shared/mp_kernel_args.h). */
#include "cuda_common.cuh"
#include "cuda_common_dtype.cuh"
#include "shared/mp_optim.h"
#include "shared/mp_philox.h"

namespace {

constexpr int kDepth = 7;   /* params, grads, masters, 3 states, step counts */
constexpr int kMaxT = 20;   /* mp_mt_max_tensors(kDepth) */

union Hyper {
    mp_sgd_hyper sgd;
    mp_adam_hyper adam;
    mp_rmsprop_hyper rmsprop;
    mp_adagrad_hyper adagrad;
    mp_adadelta_hyper adadelta;
};

struct OptimParams {
    void *p[kMaxT];
    void *g[kMaxT];
    float *master[kMaxT];
    float *st[3][kMaxT];
    float *steps[kMaxT];
    int64_t numel[kMaxT];
    uint64_t ctr[kMaxT];
    unsigned char pdt[kMaxT], gdt[kMaxT];
    unsigned char block_tensor[MP_MT_MAX_BLOCKS];
    int block_chunk[MP_MT_MAX_BLOCKS];
};

struct Scalars {              /* what every block reads besides the tensors */
    const float *found_inf, *grad_scale;
    int kind, sgd_first, stochastic, device_steps;
    uint64_t seed;
    double lr, beta1, beta2;
};
static_assert(sizeof(OptimParams) + sizeof(Scalars) + sizeof(Hyper) <= 4096, "parameters");

__device__ float step_one(const Scalars &s, const Hyper &h, float p, float g, float **st,
                          int64_t i)
{
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;   /* scratch for absent state (always written) */
    float *a = st[0] ? &st[0][i] : &s0, *b = st[1] ? &st[1][i] : &s1,
          *c = st[2] ? &st[2][i] : &s2;
    switch (s.kind) {
    case MP_OPTIM_SGD: {
        mp_sgd_hyper hs = h.sgd;
        if (!st[0] || hs.momentum == 0.0f) {
            hs.momentum = 0.0f;
            return mp_sgd_update(p, g, a, 1, &hs);
        }
        return mp_sgd_update(p, g, a, s.sgd_first, &hs);
    }
    case MP_OPTIM_ADAM: {
        mp_adam_hyper ha = h.adam;
        if (!(ha.amsgrad && st[2]))
            ha.amsgrad = 0;
        return mp_adam_update(p, g, a, b, c, &ha);
    }
    case MP_OPTIM_RMSPROP:
        return mp_rmsprop_update(p, g, a, b, c, &h.rmsprop);
    case MP_OPTIM_ADAGRAD:
        return mp_adagrad_update(p, g, a, &h.adagrad);
    default:
        return mp_adadelta_update(p, g, a, b, &h.adadelta);
    }
}

__device__ void store_param(const OptimParams &q, const Scalars &s, int slot, int64_t i,
                            float v)
{
    if (s.stochastic && q.pdt[slot] == MP_DTYPE_BFLOAT16) {
        uint32_t r[4];
        mp_philox4x32(s.seed, q.ctr[slot] + (uint64_t)(i / 8), r);
        int k = (int)(i % 8);
        uint32_t bits = (k & 1) ? r[k / 2] >> 16 : r[k / 2];
        static_cast<mp_bf16 *>(q.p[slot])[i] = mp_f32_to_bf16_stochastic(v, bits);
        return;
    }
    mp_dev_store(q.p[slot], q.pdt[slot], i, v);
}

/* Adam's bias corrections from the (already incremented) step count, in double as the
 * CPU kernel computes them. */
__device__ void adam_from_step(Hyper &h, const Scalars &s, double step)
{
    h.adam.step_size = (float)(s.lr / (1.0 - pow(s.beta1, step)));
    h.adam.bias_correction2_sqrt = (float)sqrt(1.0 - pow(s.beta2, step));
}

__global__ void optim_kernel(OptimParams q, Scalars s, Hyper h)
{
    if (s.found_inf && *s.found_inf != 0.0f)
        return;
    int slot = q.block_tensor[blockIdx.x];
    int64_t n = q.numel[slot], begin = (int64_t)q.block_chunk[blockIdx.x] * MP_MT_CHUNK;
    int64_t end = n - begin < MP_MT_CHUNK ? n : begin + MP_MT_CHUNK;
    float inv = s.grad_scale ? (float)(1.0 / (double)*s.grad_scale) : 1.0f;
    if (s.device_steps)
        adam_from_step(h, s, (double)*q.steps[slot]);
    float *st[3] = {q.st[0][slot], q.st[1][slot], q.st[2][slot]};
    float *master = q.master[slot];
    int pdt = q.pdt[slot], gdt = q.gdt[slot];
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
        float p = master ? master[i] : mp_dev_load(q.p[slot], pdt, i);
        float g = mp_dev_load(q.g[slot], gdt, i) * inv;
        float v = step_one(s, h, p, g, st, i);
        if (master)
            master[i] = v;
        if (master || pdt != MP_DTYPE_FLOAT32)
            store_param(q, s, slot, i, v);
        else
            static_cast<float *>(q.p[slot])[i] = v;
    }
}

/* Step counts of the tensors that start in this launch, before its update reads them (a
 * tensor continued from the previous launch was counted there). */
struct StepParams {
    float *steps[kMaxT];
    int count;
};

__global__ void steps_kernel(StepParams sp, const float *found_inf)
{
    int i = threadIdx.x;
    if (i < sp.count && sp.steps[i] && !(found_inf && *found_inf != 0.0f))
        *sp.steps[i] += 1.0f;
}

Hyper hyper_of(const mp_optim_launch *a)
{
    Hyper h;
    switch (a->kind) {
    case MP_OPTIM_SGD: h.sgd = *static_cast<const mp_sgd_hyper *>(a->hyper); break;
    case MP_OPTIM_ADAM: h.adam = *static_cast<const mp_adam_hyper *>(a->hyper); break;
    case MP_OPTIM_RMSPROP: h.rmsprop = *static_cast<const mp_rmsprop_hyper *>(a->hyper); break;
    case MP_OPTIM_ADAGRAD: h.adagrad = *static_cast<const mp_adagrad_hyper *>(a->hyper); break;
    default: h.adadelta = *static_cast<const mp_adadelta_hyper *>(a->hyper); break;
    }
    return h;
}

/* One launch's parameter block from the plan and the MP_KERNEL_OPTIM buffer list. */
void fill_params(OptimParams &q, StepParams &sp, const mp_mt_launch &l, void *const *buf,
                 const mp_optim_launch *a)
{
    int n = a->n;
    sp.count = 0;
    for (int i = 0; i < l.ntensors; i++) {
        int t = l.tensor[i];
        q.p[i] = buf[t];
        q.g[i] = buf[n + t];
        q.master[i] = static_cast<float *>(buf[2 * n + t]);
        for (int k = 0; k < 3; k++)
            q.st[k][i] = static_cast<float *>(buf[(3 + k) * n + t]);
        q.steps[i] = a->device_steps ? static_cast<float *>(buf[6 * n + t]) : nullptr;
        q.numel[i] = a->numel[t];
        q.ctr[i] = a->ctr[t];
        q.pdt[i] = (unsigned char)a->pdt[t];
        q.gdt[i] = (unsigned char)a->gdt[t];
        sp.steps[i] = nullptr;
    }
    for (int b = 0; b < l.nblocks; b++) {
        q.block_tensor[b] = l.block_tensor[b];
        q.block_chunk[b] = l.block_chunk[b];
        int slot = l.block_tensor[b];
        if (l.block_chunk[b] == 0 && q.steps[slot])
            sp.steps[slot] = q.steps[slot];
    }
    sp.count = l.ntensors;
}

}  // namespace

extern "C" mp_status mp_cuda_optim(void *const *buf, const mp_optim_launch *a, mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK)
        return st;
    int n = a->n;
    Scalars s = {static_cast<const float *>(buf[7 * n]),
                 static_cast<const float *>(buf[7 * n + 1]),
                 (int)a->kind, a->sgd_first, a->stochastic, a->device_steps, a->seed,
                 a->lr, a->beta1, a->beta2};
    Hyper h = hyper_of(a);
    mp_mt_cursor cur = {0, 0};
    mp_mt_launch l;
    while (mp_mt_next(a->numel, n, kDepth, &cur, &l)) {
        OptimParams q;
        StepParams sp;
        fill_params(q, sp, l, buf, a);
        if (a->device_steps) {
            steps_kernel<<<1, kMaxT>>>(sp, s.found_inf);
            if ((st = mp_cuda_check(cudaGetLastError(), "optimizer step-count kernel launch",
                                    msg)) != MP_OK)
                return st;
        }
        optim_kernel<<<l.nblocks, MP_GPU_THREADS>>>(q, s, h);
        if ((st = mp_cuda_check(cudaGetLastError(), "optimizer kernel launch", msg)) != MP_OK)
            return st;
    }
    return MP_OK;
}
