/* backend.h - the seam between the core and a device: a struct of function pointers the core
 * calls for memory, copies and kernels of one device type. The CPU's is filled in backend.c
 * from the CPU kernels, the simulated GPU's by sim/ (MPAMP_CUDA_SIM=1), the real GPU's by
 * cuda/ when it grows kernels. Backends see pointers, counts, strides and iterator metadata,
 * never tensors, and report failures as a status plus a caller-provided mp_msg.
 * An op whose kernels do not go through this table yet refuses device tensors at its entry
 * (mp_require_host), so no host code ever dereferences device memory. */
#ifndef MP_BACKEND_H
#define MP_BACKEND_H

#include "elementwise.h"
#include "iter.h"
#include "tensor.h"

typedef enum { MP_COPY_H2D = 0, MP_COPY_D2H = 1, MP_COPY_D2D = 2 } mp_copy_kind;

typedef struct {
    char name[96];
    int major, minor;
    size_t total_memory;
    int multi_processor_count;
} mp_device_props;

/* Counters of one device (torch.cuda.memory_stats' core; the copy and sync counts are read by
 * tests through mpamp.cuda.sim_stats()). */
typedef struct {
    size_t allocated, peak_allocated, reserved, peak_reserved;
    uint64_t alloc_calls, cache_hits, h2d, d2h, d2d, syncs;
} mp_device_stats;

/* One elementwise map over iterator metadata whose operand 0 is the output. Exactly one of
 * fn (fp32 chunks) and fn64 (double chunks) is set: CPU kernels that the CPU and the
 * simulator run; a GPU backend will select its kernel by op instead. */
typedef struct {
    const mp_iter *it;
    int n_in;
    mp_dtype out_dt, in_dt[MP_MAP_MAX_IN];
    mp_map_fn fn;
    mp_map_f64_fn fn64;
    const double *args;
    int64_t grain;
} mp_map_kernel;

/* Kernels that are not maps, copies or fills, by name: a GPU backend selects its kernel by id
 * (and reads the id's argument block), the CPU and the simulator run the CPU function the
 * descriptor carries. */
typedef enum {
    MP_KERNEL_GEMM = 0,        /* matmul_core.c: mp_gemm_plan */
    MP_KERNEL_SCALE,           /* matmul_core.c: c *= beta over a contiguous span */
    MP_KERNEL_SUM,             /* reduce.c: accumulate an input into a double/int64 buffer */
    MP_KERNEL_SUM_STORE,       /* reduce.c: round the accumulator into the output dtype */
    MP_KERNEL_OPTIM,           /* optim.c: one fused multi-tensor optimizer step */
    MP_KERNEL_UNSCALE,         /* scaler.c: multi-tensor unscale + inf/NaN check */
    MP_KERNEL_SCALE_UPDATE,    /* scaler.c: torch's _amp_update_scale_ */
    MP_KERNEL_INV_SCALE,       /* scaler.c: 1 / scale in double, stored as fp32 */
    MP_KERNEL_ROWS,            /* rows.c: a row function over rows of a contiguous buffer */
    MP_KERNEL_LOSS,            /* ops_loss.c: pointwise loss values */
    MP_KERNEL_LOSS_GRAD,       /* ops_loss.c: their gradient */
    MP_KERNEL_LOSS_REDUCE,     /* ops_loss.c: sum or mean of fp32 losses into one element */
    MP_KERNEL_COMPARE,         /* ops_compare.c: eq/ne/lt/le/gt/ge into bool */
    MP_KERNEL_CLASSIFY,        /* ops_compare.c: isnan/isinf/isfinite/isposinf/isneginf */
    MP_KERNEL_INT_POW,         /* ops_pow.c: integer pow */
    MP_KERNEL_MASK,            /* ops_mask.c: masked_fill / tril / triu rows */
    MP_KERNEL_EMBEDDING,       /* ops_shape.c: row gather (indices checked in the kernel) */
    MP_KERNEL_EMBEDDING_BACKWARD, /* ops_shape.c: rows scatter-added in index order */
    MP_KERNEL_DROPOUT,         /* ops_shape.c: Philox mask times 1/(1-p) */
    MP_KERNEL_NLL,             /* ops_loss_nll.c: per-row nll/cross_entropy + weight sum */
    MP_KERNEL_NLL_BACKWARD,    /* ops_loss_nll.c: its gradient rows */
    MP_KERNEL_COUNT
} mp_kernel_id;

/* Name of a kernel id for messages ("gemm", ...). */
const char *mp_kernel_name(mp_kernel_id id);

/* A kernel over raw buffers. ptr[i] is a device address whose bytes [lo[i], hi[i]) the kernel
 * may touch; the simulator checks each extent and hands `run` its read-write alias, the CPU
 * hands the pointers over as they are. args holds everything else (sizes, strides, dtypes,
 * hyper-parameters) and is the same for every backend. */
#define MP_KERNEL_STACK_BUFS 8
typedef struct {
    mp_kernel_id id;
    int nbuf;
    void *const *ptr;
    const int64_t *lo, *hi;
    mp_status (*run)(void *const *ptr, const void *args, mp_msg *msg);
    const void *args;
} mp_buf_kernel;

/* A CPU iterator function over iterator metadata (operand bases are device addresses; the
 * simulator rewrites them, as for maps). grain > 0 runs it in parallel (mp_iter_run_parallel).
 * ctx must not hold device addresses: only the iterator's operands are translated. */
typedef struct {
    mp_kernel_id id;
    const mp_iter *it;
    mp_iter_fn fn;
    void *ctx;
    int64_t grain;
} mp_iter_kernel;

typedef struct mp_backend {
    const char *name;               /* "cpu", "cuda", "cuda-sim" */
    mp_device device;
    int (*device_count)(void);
    mp_status (*properties)(int index, mp_device_props *out, mp_msg *msg);
    /* memory: alloc gives nbytes (>= 1) of 64-byte aligned memory or MP_ERR_NOMEM */
    mp_status (*alloc)(size_t nbytes, void **out, mp_msg *msg);
    void (*free)(void *ptr, size_t nbytes);
    mp_status (*memcpy)(void *dst, const void *src, size_t nbytes, mp_copy_kind kind,
                        mp_msg *msg);
    mp_status (*synchronize)(mp_msg *msg);
    void (*stats)(mp_device_stats *out);
    void (*reset_peak)(void);
    void (*empty_cache)(void);
    /* kernels: operands of each call live on this backend's device */
    mp_status (*map)(const mp_map_kernel *k, mp_msg *msg);
    /* it: operand 0 the destination, 1 the source, equal shapes; dtype conversion */
    mp_status (*copy)(const mp_iter *it, mp_dtype dst, mp_dtype src, mp_msg *msg);
    /* it: one operand; pattern holds one element of dt */
    mp_status (*fill)(const mp_iter *it, mp_dtype dt, const void *pattern, mp_msg *msg);
    mp_status (*launch)(const mp_buf_kernel *k, mp_msg *msg);
    mp_status (*iter)(const mp_iter_kernel *k, mp_msg *msg);
} mp_backend;

/* Runs k on the backend of device dev (the core's error state set on failure). */
mp_status mp_launch(mp_device dev, const mp_buf_kernel *k);
mp_status mp_launch_iter(mp_device dev, const mp_iter_kernel *k);
/* The bytes [lo, hi) around t's data pointer that t's elements occupy (strides of any sign;
 * an empty tensor gives [0, 0)). */
void mp_tensor_byte_extent(const mp_tensor *t, int64_t *lo, int64_t *hi);
/* A buffer kernel over n tensors (NULL entries allowed: absent buffers), each buffer its
 * tensor's data pointer with the extent of its elements. */
mp_status mp_launch_tensors(mp_device dev, mp_kernel_id id, int n, mp_tensor *const *ts,
                            mp_status (*run)(void *const *ptr, const void *args, mp_msg *msg),
                            const void *args);
/* An iterator kernel over tensors: ops[0] the output, whose device runs it; a host scalar input
 * (a 0-d CPU tensor or a Python number, broadcast) is moved there first, any other operand
 * elsewhere is torch's mixed-device error. elementwise.c. */
mp_status mp_run_iter(mp_kernel_id id, mp_tensor *const *ops, int n, mp_iter_fn fn, void *ctx,
                      int64_t grain);
/* The usual launch of a kernel over n buffers with extents [0, nbytes[i]) each. */
mp_status mp_launch_bufs(mp_device dev, mp_kernel_id id, int n, void *const *ptr,
                         const int64_t *nbytes,
                         mp_status (*run)(void *const *ptr, const void *args, mp_msg *msg),
                         const void *args);

/* The CPU kernels behind the CPU backend's map, copy and fill (elementwise.c, copy.c). */
mp_status mp_cpu_map_kernel(const mp_map_kernel *k, mp_msg *msg);
mp_status mp_cpu_copy_kernel(const mp_iter *it, mp_dtype dst, mp_dtype src, mp_msg *msg);
mp_status mp_cpu_fill_kernel(const mp_iter *it, mp_dtype dt, const void *pattern, mp_msg *msg);

/* The CPU backend (always there). */
const mp_backend *mp_backend_cpu(void);
/* The backend for device type d, or NULL (with an MP_ERR_NO_CUDA message) when there is no
 * such device in this process: MPAMP_CUDA_SIM=1 selects the simulated GPU, otherwise a real
 * one when built and present. */
const mp_backend *mp_backend_get(mp_device d);
/* The backend that owns a storage's or tensor t's memory (never NULL when it exists). */
const mp_backend *mp_backend_of_storage(const mp_storage *s);
const mp_backend *mp_backend_of(const mp_tensor *t);
/* 1 when the simulated GPU is the CUDA device of this process. */
int mp_cuda_sim_enabled(void);

/* Copies a backend's message into the core's error state and returns st. */
mp_status mp_backend_error(mp_status st, const mp_msg *msg);

/* "Expected all tensors to be on the same device, ..." unless every tensor given is on
 * `dev` (NULL entries and 0-d CPU tensors excepted when allow_cpu_scalars, as torch). */
mp_status mp_check_same_device(mp_tensor *const *ts, int n, mp_device dev,
                               int allow_cpu_scalars);

/* The guard at the entry of an op whose kernels are host code: fails with torch's
 * NotImplementedError wording ("Could not run '<op>' with arguments from the 'CUDA'
 * backend") when any of the n tensors (NULL allowed) is not on the CPU. */
mp_status mp_require_host_(const char *op, const mp_tensor *const *ts, int n);
#define mp_require_host(op, ...)                                                          \
    mp_require_host_(op, (const mp_tensor *const[]){__VA_ARGS__},                        \
                     (int)(sizeof((const mp_tensor *const[]){__VA_ARGS__}) / sizeof(mp_tensor *)))
/* Returns the guard's failure from the enclosing function (an mp_status one). */
#define MP_HOST_ONLY(op, ...)                                                             \
    do {                                                                                  \
        const mp_tensor *const mp_ho_[] = {__VA_ARGS__};                                        \
        if (!mp_all_host(mp_ho_, (int)(sizeof mp_ho_ / sizeof mp_ho_[0])))                \
            return mp_require_host_(op, mp_ho_, (int)(sizeof mp_ho_ / sizeof mp_ho_[0])); \
    } while (0)
/* True when every given tensor is on the CPU (the fast check before mp_require_host_). */
static inline int mp_all_host(const mp_tensor *const *ts, int n)
{
    for (int i = 0; i < n; i++)
        if (ts[i] && ts[i]->storage->device != MP_DEVICE_CPU)
            return 0;
    return 1;
}

/* CUDA when any of the n tensors (NULL allowed) is not on the CPU, else the CPU: where an op's
 * result goes (mp_map then checks that the operands agree, host scalars excepted). */
static inline mp_device mp_any_device(mp_tensor *const *ts, int n)
{
    for (int i = 0; i < n; i++)
        if (ts[i] && ts[i]->storage->device != MP_DEVICE_CPU)
            return ts[i]->storage->device;
    return MP_DEVICE_CPU;
}

/* Device-aware copies (copy.c uses these for every cross-device copy_). */
mp_status mp_backend_copy_bytes(mp_device dst_dev, void *dst, mp_device src_dev,
                                const void *src, size_t nbytes);

#endif
