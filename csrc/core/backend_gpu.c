/* backend_gpu.c - the real GPU's backend table (backend.h): memory from csrc/gpu's caching
 * allocator, copies and synchronisation counted for memory_stats, and the kernels cuda/ has
 * (strided copies and fills; GEMM through cuBLASLt over csrc/gpu's batch and layout plans;
 * unscale, scale update and fused optimizers reading their scalars on the device). Kernel
 * ids cuda/ does not implement yet fail with torch's NotImplementedError wording, naming the
 * kernel, so a model learns which op is missing instead of getting wrong numbers. */
#include "backend.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../gpu/mp_gpu_cache.h"
#include "../shared/mp_cuda_api.h"
#include "../shared/mp_pointwise.h"

int mp_cuda_allow_tf32 = 0;     /* torch.backends.cuda.matmul.allow_tf32 (device_bind.c) */

static mp_status gpu_memcpy(void *dst, const void *src, size_t n, mp_copy_kind kind,
                            mp_msg *msg)
{
    mp_gpu_cache_count((int)kind);
    return mp_cuda_memcpy(dst, src, n, (int)kind, msg);
}

static mp_status gpu_synchronize(mp_msg *msg)
{
    mp_gpu_cache_count(3);
    return mp_cuda_synchronize(msg);
}

static mp_status no_kernel(mp_msg *msg, const char *what)
{
    snprintf(msg->text, sizeof msg->text, "Could not run '%s' with arguments from the 'CUDA' "
             "backend: mpamp's CUDA backend has no kernel for it yet (run it on the CPU, or "
             "under the simulated GPU with MPAMP_CUDA_SIM=1)", what);
    return MP_ERR_NOT_IMPLEMENTED;
}

static mp_status gpu_copy(const mp_iter *it, mp_dtype dst, mp_dtype src, mp_msg *msg)
{
    if (it->ndim == 1 && it->strides[0][0] == 1 && it->strides[1][0] == 1 &&
        mp_dtype_is_float(dst) && mp_dtype_is_float(src))
        return mp_cuda_cast(it->base[1], src, it->base[0], dst, (size_t)it->numel, msg);
    return mp_cuda_copy(it, dst, src, msg);
}

static mp_status gpu_fill(const mp_iter *it, mp_dtype dt, const void *pattern, mp_msg *msg)
{
    return mp_cuda_fill(it, pattern, mp_dtype_size(dt), msg);
}

/* cuBLASLt's workspace: one block for the process, sized for the device on first use. */
static mp_status workspace(void **ws, size_t *bytes, mp_msg *msg)
{
    static void *block;
    static size_t size;
    if (!block) {
        mp_device_props p;
        mp_status st = mp_cuda_properties(0, &p, msg);
        if (st != MP_OK)
            return st;
        size = mp_gpu_gemm_workspace_bytes(p.major, p.minor);
        if (size && (st = mp_gpu_cache_alloc(size, &block, msg)) != MP_OK)
            return st;
    }
    *ws = block, *bytes = size;
    return MP_OK;
}

static mp_status gpu_gemm(void *const *buf, const mp_gemm_batch *p, mp_msg *msg)
{
    if (p->wt == MP_DTYPE_INT64)
        return no_kernel(msg, "matmul (int64)");
    void *ws = NULL;
    size_t ws_bytes = 0;
    mp_status st = workspace(&ws, &ws_bytes, msg);
    size_t ea = mp_dtype_size(p->adt), eb = mp_dtype_size(p->bdt), ec = mp_dtype_size(p->wt);
    int64_t outer = mp_gpu_gemm_outer_count(p);
    for (int64_t o = 0; o < outer && st == MP_OK; o++) {
        mp_gpu_gemm_rm rm;
        mp_gpu_gemm_cm cm;
        int64_t oa, ob, oc;
        mp_gpu_gemm_call(p, o, &rm, &oa, &ob, &oc);
        if ((st = mp_gpu_gemm_to_colmajor(&rm, &cm, msg)) != MP_OK)
            break;
        if (cm.epilogue == MP_GPU_EPI_SEPARATE)
            return no_kernel(msg, "matmul with a strided, scaled or mixed-dtype bias");
        char *c = (char *)buf[2] + (size_t)oc * ec;
        st = mp_cuda_gemm(&cm, (const char *)buf[1] + (size_t)ob * eb,
                          (const char *)buf[0] + (size_t)oa * ea, c, buf[3], ws, ws_bytes,
                          mp_cuda_allow_tf32, msg);
        if (st == MP_OK && rm.round_dtype != MP_DTYPE_FLOAT32)   /* beta is 0 here */
            st = mp_cuda_round_f32(c, (size_t)(p->m * p->n * cm.batch), rm.round_dtype, msg);
    }
    return st;
}

int mp_gpu_has_kernel(mp_kernel_id id)
{
    switch (id) {
    case MP_KERNEL_GEMM: case MP_KERNEL_UNSCALE: case MP_KERNEL_SCALE_UPDATE:
    case MP_KERNEL_INV_SCALE: case MP_KERNEL_OPTIM: case MP_KERNEL_RELU_16:
    case MP_KERNEL_COLUMN_SUM: case MP_KERNEL_SUM_STORE: case MP_KERNEL_LOSS:
    case MP_KERNEL_LOSS_GRAD: case MP_KERNEL_LOSS_REDUCE: case MP_KERNEL_SUM_SQUARES:
    case MP_KERNEL_EMBEDDING: case MP_KERNEL_EMBEDDING_BACKWARD:
        return 1;
    default:
        return 0;
    }
}

int mp_gpu_has_map(const mp_map_kernel *k)
{
    return k->op != MP_MAP_OP_NONE && !k->fn64 && mp_dtype_is_float(k->out_dt);
}

static mp_status gpu_launch(const mp_buf_kernel *k, mp_msg *msg)
{
    switch (k->id) {
    case MP_KERNEL_GEMM: return gpu_gemm(k->ptr, k->args, msg);
    case MP_KERNEL_UNSCALE: return mp_cuda_unscale(k->ptr, k->args, msg);
    case MP_KERNEL_SCALE_UPDATE: return mp_cuda_scale_update(k->ptr, k->args, msg);
    case MP_KERNEL_INV_SCALE: return mp_cuda_inv_scale(k->ptr, msg);
    case MP_KERNEL_OPTIM: return mp_cuda_optim(k->ptr, k->args, msg);
    case MP_KERNEL_RELU_16: return mp_cuda_relu16(k->ptr, k->args, msg);
    case MP_KERNEL_SUM_SQUARES: return mp_cuda_sum_squares(k->ptr, k->args, msg);
    case MP_KERNEL_EMBEDDING: return mp_cuda_embedding(k->ptr, k->args, msg);
    case MP_KERNEL_EMBEDDING_BACKWARD:
        return mp_cuda_embedding_backward(k->ptr, k->args, msg);
    case MP_KERNEL_COLUMN_SUM: return mp_cuda_column_sum(k->ptr, k->args, msg);
    case MP_KERNEL_SUM_STORE: return mp_cuda_sum_store(k->ptr, k->args, msg);
    case MP_KERNEL_LOSS: return mp_cuda_loss(k->ptr, k->args, msg);
    case MP_KERNEL_LOSS_GRAD: return mp_cuda_loss_grad(k->ptr, k->args, msg);
    case MP_KERNEL_LOSS_REDUCE: return mp_cuda_loss_reduce(k->ptr, k->args, msg);
    default: return no_kernel(msg, mp_kernel_name(k->id));
    }
}

int mp_gpu_has_iter(mp_kernel_id id)
{
    return id == MP_KERNEL_SUM;
}

static mp_status gpu_iter(const mp_iter_kernel *k, mp_msg *msg)
{
    if (k->id == MP_KERNEL_SUM)
        return mp_cuda_sum(k->it, k->ctx, msg);
    return no_kernel(msg, mp_kernel_name(k->id));
}

static const mp_backend gpu = {
    .name = "cuda",
    .device = MP_DEVICE_CUDA,
    .device_count = mp_cuda_device_count,
    .properties = mp_cuda_properties,
    .alloc = mp_gpu_cache_alloc,
    .free = mp_gpu_cache_free,
    .memcpy = gpu_memcpy,
    .synchronize = gpu_synchronize,
    .stats = mp_gpu_cache_stats,
    .reset_peak = mp_gpu_cache_reset_peak,
    .empty_cache = mp_gpu_cache_empty,
    .map = mp_cuda_map,
    .copy = gpu_copy,
    .fill = gpu_fill,
    .launch = gpu_launch,
    .iter = gpu_iter,
};

const mp_backend *mp_backend_gpu(void)
{
    return &gpu;
}

/* ---- the simulator restricted to what this table runs (MPAMP_SIM_AS_GPU=1) ---- */

static const mp_backend *sim_base;
static mp_backend strict_table;
static int strict_log_only;     /* MPAMP_SIM_AS_GPU=2: name each missing kernel on stderr, run it */

/* MP_OK when the real table has the kernel (or in log-only mode, after naming it on
 * stderr); else the real table's refusal. */
static mp_status check(int has, const char *what, mp_msg *msg)
{
    if (has)
        return MP_OK;
    if (!strict_log_only)
        return no_kernel(msg, what);
    fprintf(stderr, "mpamp: no CUDA kernel for '%s'\n", what);
    return MP_OK;
}

static mp_status strict_launch(const mp_buf_kernel *k, mp_msg *msg);
static mp_status strict_iter(const mp_iter_kernel *k, mp_msg *msg);
static mp_status strict_map(const mp_map_kernel *k, mp_msg *msg);

static void init_strict(void)
{
    strict_table = *sim_base;
    strict_table.launch = strict_launch;
    strict_table.iter = strict_iter;
    strict_table.map = strict_map;
}

static mp_status strict_launch(const mp_buf_kernel *k, mp_msg *msg)
{
    mp_status st = check(mp_gpu_has_kernel(k->id), mp_kernel_name(k->id), msg);
    return st != MP_OK ? st : sim_base->launch(k, msg);
}

static mp_status strict_iter(const mp_iter_kernel *k, mp_msg *msg)
{
    mp_status st = check(mp_gpu_has_iter(k->id), mp_kernel_name(k->id), msg);
    return st != MP_OK ? st : sim_base->iter(k, msg);
}

static mp_status strict_map(const mp_map_kernel *k, mp_msg *msg)
{
    mp_status st = check(mp_gpu_has_map(k), "elementwise map", msg);
    return st != MP_OK ? st : sim_base->map(k, msg);
}

const mp_backend *mp_backend_sim_as_gpu(const mp_backend *sim, int log_only)
{
    strict_log_only = log_only;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    sim_base = sim;
    pthread_once(&once, init_strict);
    return &strict_table;
}
