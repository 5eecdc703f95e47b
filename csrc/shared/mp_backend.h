/* mp_backend.h - the ABI between the core and a device backend (csrc/cpu's host kernels, the
 * simulated GPU in csrc/sim/, the CUDA code in cuda/): iterator metadata, kernel descriptors
 * and the struct of function pointers the core calls for memory, copies and kernels of one
 * device type. Backends see pointers, counts, strides and this metadata, never tensors, and
 * report a failure as a status plus text in the caller's mp_msg; they include only
 * csrc/shared/. The core's side (which backend runs a tensor, launch helpers) is
 * csrc/core/backend.h. C11 that is also valid C++. */
#ifndef MP_BACKEND_ABI_H
#define MP_BACKEND_ABI_H

#include "mp_defs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- iterator metadata: up to MP_ITER_MAX_OPS equally-shaped strided operands, walked
 * together (csrc/core/iter.h builds and walks it). Strides are in elements. ---- */
#define MP_ITER_MAX_OPS 4

typedef struct {
    int nops;
    int ndim;                                   /* after coalescing; >= 1 */
    int64_t shape[MP_MAX_DIMS];
    int64_t strides[MP_ITER_MAX_OPS][MP_MAX_DIMS];
    char *base[MP_ITER_MAX_OPS];                /* address of element 0 of each operand */
    size_t itemsize[MP_ITER_MAX_OPS];
    int64_t numel;
} mp_iter;

/* fn(ptrs, inner_strides_in_elements, inner_count, ctx), once per innermost run. */
typedef void (*mp_iter_fn)(char **ptrs, const int64_t *strides, int64_t n, void *ctx);

/* ---- elementwise maps (csrc/core/elementwise.h runs them) ---- */
#define MP_MAP_MAX_IN 3
#define MP_MAP_CHUNK 256

/* in[k][0..n) are the inputs as fp32, out[0..n) receives the result; args are op constants.
 * fn must treat each element on its own: large maps run on several threads. Read in[k] and
 * args[k] into locals before the loop: the build has -fno-strict-aliasing, so each store to
 * out[i] could alias them and the compiler would reload them per element (no vectors). */
typedef void (*mp_map_fn)(const float *const *in, float *out, int64_t n, const double *args);

/* Same in double precision (used for int64 results so integers stay exact). */
typedef void (*mp_map_f64_fn)(const double *const *in, double *out, int64_t n,
                              const double *args);

/* ---- devices, kernels, backends ---- */
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
    int op;                 /* mp_map_op (shared/mp_pointwise.h): what a GPU runs; 0 none */
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
    MP_KERNEL_NORM_PARAM_GRADS, /* ops_norm.c: layer_norm's weight and bias gradient sums */
    MP_KERNEL_COLUMN_SUM,      /* reduce.c: fp32/fp16/bf16 (rows, cols) summed over rows into doubles */
    MP_KERNEL_SUM_SQUARES,     /* ops_grad_norm.c: sum of squares of a list of tensors */
    MP_KERNEL_RELU_16,         /* ops_unary.c: ReLU / its backward on fp16 or bf16 bits */
    MP_KERNEL_COUNT
} mp_kernel_id;

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
 * simulator rewrites them, as for maps). grain > 0 runs it in parallel (mp_iter_run_parallel,
 * or with split_outputs mp_iter_run_split: fn may accumulate into operand 0). ctx must not
 * hold device addresses: only the iterator's operands are translated. */
typedef struct {
    mp_kernel_id id;
    const mp_iter *it;
    mp_iter_fn fn;
    void *ctx;
    int64_t grain;
    int split_outputs;
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

/* The host (CPU) backend: always there; a simulator delegates its kernels to it. */
const mp_backend *mp_backend_cpu(void);

#ifdef __cplusplus
}
#endif

#endif
