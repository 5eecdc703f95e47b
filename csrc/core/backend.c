/* backend.c - the backend registry (see backend.h): the CPU table, the choice of the CUDA
 * device's backend (the simulator when MPAMP_CUDA_SIM=1, else the real GPU when built and
 * present), and the device checks every op entry shares. The real GPU's table is
 * backend_gpu.c. */
#include "backend.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/sim.h"
#include "alloc.h"
#include "../shared/mp_cuda_api.h"

/* ---- CPU ---- */

static int cpu_count(void)
{
    return 1;
}

static mp_status cpu_properties(int index, mp_device_props *out, mp_msg *msg)
{
    (void)index, (void)msg;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "cpu");
    return MP_OK;
}

static mp_status cpu_alloc(size_t nbytes, void **out, mp_msg *msg)
{
    *out = mp_alloc(nbytes);
    if (*out)
        return MP_OK;
    snprintf(msg->text, sizeof msg->text, "%s", mp_error_message());
    return MP_ERR_NOMEM;
}

static mp_status cpu_memcpy(void *dst, const void *src, size_t n, mp_copy_kind kind,
                            mp_msg *msg)
{
    (void)kind, (void)msg;
    if (n)
        memmove(dst, src, n);
    return MP_OK;
}

static mp_status cpu_synchronize(mp_msg *msg)
{
    (void)msg;
    return MP_OK;
}

static void cpu_stats(mp_device_stats *out)
{
    mp_alloc_stats s;
    mp_alloc_get_stats(&s);
    memset(out, 0, sizeof *out);
    out->allocated = s.in_use_bytes;
    out->peak_allocated = s.peak_in_use_bytes;
    out->reserved = s.in_use_bytes + s.cached_bytes;
    out->alloc_calls = s.allocs;
    out->cache_hits = s.cache_hits;
}

static mp_status cpu_launch(const mp_buf_kernel *k, mp_msg *msg)
{
    return k->run(k->ptr, k->args, msg);
}

static mp_status cpu_iter(const mp_iter_kernel *k, mp_msg *msg)
{
    (void)msg;
    if (k->grain > 0 && k->split_outputs)
        mp_iter_run_split(k->it, k->fn, k->ctx, k->grain);
    else if (k->grain > 0)
        mp_iter_run_parallel(k->it, k->fn, k->ctx, k->grain);
    else
        mp_iter_run(k->it, k->fn, k->ctx);
    return MP_OK;
}

static const mp_backend cpu = {
    .name = "cpu",
    .device = MP_DEVICE_CPU,
    .device_count = cpu_count,
    .properties = cpu_properties,
    .alloc = cpu_alloc,
    .free = mp_free,
    .memcpy = cpu_memcpy,
    .synchronize = cpu_synchronize,
    .stats = cpu_stats,
    .reset_peak = mp_alloc_reset_peak,
    .empty_cache = mp_alloc_empty_cache,
    .map = mp_cpu_map_kernel,
    .copy = mp_cpu_copy_kernel,
    .fill = mp_cpu_fill_kernel,
    .launch = cpu_launch,
    .iter = cpu_iter,
};

const mp_backend *mp_backend_cpu(void)
{
    return &cpu;
}

/* ---- kernels ---- */

const char *mp_kernel_name(mp_kernel_id id)
{
    static const char *const names[MP_KERNEL_COUNT] = {
        [MP_KERNEL_GEMM] = "gemm", [MP_KERNEL_SCALE] = "scale", [MP_KERNEL_SUM] = "sum",
        [MP_KERNEL_SUM_STORE] = "sum_store", [MP_KERNEL_OPTIM] = "optimizer_step",
        [MP_KERNEL_UNSCALE] = "unscale", [MP_KERNEL_SCALE_UPDATE] = "update_scale",
        [MP_KERNEL_INV_SCALE] = "inv_scale",
        [MP_KERNEL_ROWS] = "rows", [MP_KERNEL_LOSS] = "pointwise_loss",
        [MP_KERNEL_LOSS_GRAD] = "pointwise_loss_backward",
        [MP_KERNEL_LOSS_REDUCE] = "loss_reduce", [MP_KERNEL_COMPARE] = "compare",
        [MP_KERNEL_CLASSIFY] = "classify", [MP_KERNEL_INT_POW] = "int_pow",
        [MP_KERNEL_MASK] = "mask", [MP_KERNEL_EMBEDDING] = "embedding",
        [MP_KERNEL_EMBEDDING_BACKWARD] = "embedding_backward",
        [MP_KERNEL_DROPOUT] = "dropout", [MP_KERNEL_NLL] = "nll_loss",
        [MP_KERNEL_NLL_BACKWARD] = "nll_loss_backward",
        [MP_KERNEL_NORM_PARAM_GRADS] = "norm_param_grads",
        [MP_KERNEL_COLUMN_SUM] = "column_sum", [MP_KERNEL_SUM_SQUARES] = "sum_squares",
        [MP_KERNEL_RELU_16] = "relu_16"};
    return (unsigned)id < MP_KERNEL_COUNT && names[id] ? names[id] : "unknown";
}

mp_status mp_launch(mp_device dev, const mp_buf_kernel *k)
{
    const mp_backend *b = mp_backend_get(dev);
    if (!b)
        return MP_ERR_NO_CUDA;
    mp_msg msg;
    msg.text[0] = 0;
    mp_status st = b->launch(k, &msg);
    if (st != MP_OK && msg.text[0])
        return mp_backend_error(st, &msg);
    return st;
}

mp_status mp_launch_iter(mp_device dev, const mp_iter_kernel *k)
{
    const mp_backend *b = mp_backend_get(dev);
    if (!b)
        return MP_ERR_NO_CUDA;
    mp_msg msg;
    msg.text[0] = 0;
    mp_status st = b->iter(k, &msg);
    return st == MP_OK ? MP_OK : mp_backend_error(st, &msg);
}

void mp_tensor_byte_extent(const mp_tensor *t, int64_t *lo, int64_t *hi)
{
    int64_t l = 0, h = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 0) {
            *lo = *hi = 0;
            return;
        }
        int64_t span = t->strides[d] * (t->shape[d] - 1);
        if (span < 0)
            l += span;
        else
            h += span;
    }
    int64_t es = (int64_t)mp_dtype_size(t->dtype);
    *lo = l * es;
    *hi = h * es;
}

mp_status mp_launch_tensors(mp_device dev, mp_kernel_id id, int n, mp_tensor *const *ts,
                            mp_status (*run)(void *const *ptr, const void *args, mp_msg *msg),
                            const void *args)
{
    void *ptr[MP_KERNEL_STACK_BUFS];
    int64_t lo[MP_KERNEL_STACK_BUFS], hi[MP_KERNEL_STACK_BUFS];
    if (n > MP_KERNEL_STACK_BUFS)
        return mp_error(MP_ERR_VALUE, "a kernel over %d tensors (at most %d)", n,
                        MP_KERNEL_STACK_BUFS);
    for (int i = 0; i < n; i++)
        ptr[i] = ts[i] ? mp_tensor_data(ts[i]) : NULL;
    if (dev == MP_DEVICE_CPU) {     /* the CPU checks no extents: no need to compute them */
        mp_buf_kernel k = {id, n, ptr, NULL, NULL, run, args};
        return mp_launch(dev, &k);
    }
    for (int i = 0; i < n; i++) {
        lo[i] = hi[i] = 0;
        if (ts[i])
            mp_tensor_byte_extent(ts[i], &lo[i], &hi[i]);
    }
    mp_buf_kernel k = {id, n, ptr, lo, hi, run, args};
    return mp_launch(dev, &k);
}

mp_status mp_launch_bufs(mp_device dev, mp_kernel_id id, int n, void *const *ptr,
                         const int64_t *nbytes,
                         mp_status (*run)(void *const *ptr, const void *args, mp_msg *msg),
                         const void *args)
{
    if (dev == MP_DEVICE_CPU) {     /* the CPU checks no extents */
        mp_buf_kernel k = {id, n, ptr, NULL, nbytes, run, args};
        return mp_launch(dev, &k);
    }
    int64_t zero[MP_KERNEL_STACK_BUFS] = {0};
    int64_t *lo = n <= MP_KERNEL_STACK_BUFS ? zero : calloc((size_t)n, sizeof(int64_t));
    if (!lo)
        return mp_error(MP_ERR_NOMEM, "out of memory for a kernel launch");
    mp_buf_kernel k = {id, n, ptr, lo, nbytes, run, args};
    mp_status st = mp_launch(dev, &k);
    if (lo != zero)
        free(lo);
    return st;
}

/* ---- registry ---- */

static int sim_flag = -1;

int mp_cuda_sim_enabled(void)
{
    int v = __atomic_load_n(&sim_flag, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *env = getenv("MPAMP_CUDA_SIM");
        v = env && strcmp(env, "1") == 0;
        __atomic_store_n(&sim_flag, v, __ATOMIC_RELAXED);
    }
    return v;
}

/* The simulator, or with MPAMP_SIM_AS_GPU=1 the simulator limited to the kernels the real
 * GPU's table has (backend_gpu.c): a run shows what a real GPU still lacks. */
static const mp_backend *sim_table(void)
{
    static int strict = -1;
    if (strict < 0) {
        const char *e = getenv("MPAMP_SIM_AS_GPU");
        strict = e && (e[0] == '1' || e[0] == '2') ? e[0] - '0' : 0;
    }
    return strict ? mp_backend_sim_as_gpu(mp_sim_backend(), strict == 2) : mp_sim_backend();
}

const mp_backend *mp_backend_get(mp_device d)
{
    if (d == MP_DEVICE_CPU)
        return &cpu;
    if (mp_cuda_sim_enabled()) {
        const mp_backend *b = sim_table();
        if (b->device_count() > 0)
            return b;
        mp_msg msg;
        void *p = NULL;
        b->alloc(1, &p, &msg);      /* fails, and says why the arena is missing */
        mp_error(MP_ERR_NO_CUDA, "CUDA not available: %s", msg.text);
        return NULL;
    }
    if (mp_cuda_is_built() && mp_cuda_device_count() > 0)
        return mp_backend_gpu();
    if (mp_cuda_is_built())
        mp_error(MP_ERR_NO_CUDA, "CUDA not available: no CUDA device was found");
    else
        mp_error(MP_ERR_NO_CUDA, "CUDA not available: mpamp was built without CUDA support "
                 "(nvcc was not found or MPAMP_CUDA=0); MPAMP_CUDA_SIM=1 simulates a GPU");
    return NULL;
}

const mp_backend *mp_backend_of_storage(const mp_storage *s)
{
    if (s->device == MP_DEVICE_CPU)
        return &cpu;
    return mp_cuda_sim_enabled() ? sim_table() : mp_backend_gpu();
}

const mp_backend *mp_backend_of(const mp_tensor *t)
{
    return mp_backend_of_storage(t->storage);
}

mp_status mp_backend_error(mp_status st, const mp_msg *msg)
{
    return mp_error(st, "%s", msg->text);
}

static const char *device_name(mp_device d)
{
    return d == MP_DEVICE_CPU ? "cpu" : "cuda:0";
}

mp_status mp_check_same_device(mp_tensor *const *ts, int n, mp_device dev, int allow_cpu_scalars)
{
    for (int i = 0; i < n; i++) {
        const mp_tensor *t = ts[i];
        if (!t || t->storage->device == dev)
            continue;
        if (allow_cpu_scalars && t->storage->device == MP_DEVICE_CPU &&
            (t->ndim == 0 || t->wrapped_number))
            continue;
        mp_device a = dev, b = t->storage->device;
        if (a != MP_DEVICE_CUDA) {      /* torch names the CUDA device first */
            a = b;
            b = dev;
        }
        return mp_error(MP_ERR_RUNTIME, "Expected all tensors to be on the same device, but "
                        "found at least two devices, %s and %s!", device_name(a),
                        device_name(b));
    }
    return MP_OK;
}

mp_status mp_require_host_(const char *op, const mp_tensor *const *ts, int n)
{
    if (mp_all_host(ts, n))
        return MP_OK;
    return mp_error(MP_ERR_NOT_IMPLEMENTED, "Could not run '%s' with arguments from the "
                    "'CUDA' backend: mpamp runs this op on the CPU only so far (move its "
                    "inputs with .cpu())", op);
}

mp_status mp_backend_copy_bytes(mp_device dst_dev, void *dst, mp_device src_dev,
                                const void *src, size_t nbytes)
{
    mp_copy_kind kind = dst_dev == MP_DEVICE_CPU
        ? (src_dev == MP_DEVICE_CPU ? MP_COPY_D2D : MP_COPY_D2H)
        : (src_dev == MP_DEVICE_CPU ? MP_COPY_H2D : MP_COPY_D2D);
    const mp_backend *b = mp_backend_get(dst_dev == MP_DEVICE_CPU ? src_dev : dst_dev);
    if (!b)
        return MP_ERR_NO_CUDA;
    mp_msg msg;
    mp_status st = b->memcpy(dst, src, nbytes, kind, &msg);
    return st == MP_OK ? MP_OK : mp_backend_error(st, &msg);
}
