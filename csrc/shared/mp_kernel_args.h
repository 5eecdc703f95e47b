/* mp_kernel_args.h - the argument blocks of the buffer kernels (mp_buf_kernel.args) that a
 * GPU backend reads by kernel id: the core fills them, the CPU kernel and cuda/'s launchers
 * read the same struct, and the buffer list of each id is documented next to its block.
 * Pointers inside a block are host memory (dtype and size tables), never device addresses:
 * device addresses come only in mp_buf_kernel.ptr. C11 that is also valid C++. */
#ifndef MP_KERNEL_ARGS_H
#define MP_KERNEL_ARGS_H

#include "mp_defs.h"
#include "mp_optim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* MP_KERNEL_GEMM: buffers A, B, C, bias (NULL when none). C[batch] (+)= alpha * op(A) @ op(B)
 * over the nb broadcast batch dims bshape with element strides sa/sb/sc (0: broadcast; an sc
 * of 0 sums those products into one C). C is contiguous [m, n] per batch entry, of dtype wt.
 * pa/pb/pc/bias are the core's copies of the buffer addresses: kernels use the buffers. */
typedef struct {
    int nb, ta, tb, accumulate;
    int64_t bshape[MP_MAX_DIMS], sa[MP_MAX_DIMS], sb[MP_MAX_DIMS], sc[MP_MAX_DIMS];
    int64_t m, n, k, lda, ldb;
    char *pa, *pb, *pc;
    mp_dtype wt, adt, bdt;       /* wt: C's dtype */
    double alpha;
    const void *bias;            /* row-vector bias fused into the GEMM's store, or NULL */
    mp_dtype bias_dt;
    int64_t bias_stride;
    float bias_scale;
    mp_dtype round_dt;           /* FLOAT32: none; else an fp32 C of 16-bit values (gemm.h) */
} mp_gemm_batch;

/* MP_KERNEL_UNSCALE: buffers 0..n-1 the grads (contiguous, dtypes dt), n found_inf (fp32,
 * set to 1 when a value is not finite, never cleared), n + 1 inv_scale (fp32) or NULL
 * (check only). */
typedef struct {
    int n;
    const mp_dtype *dt;
    const int64_t *numel;
} mp_unscale_args;

/* MP_KERNEL_SCALE_UPDATE: buffers scale (fp32), growth tracker (int64), found_inf (fp32). */
typedef struct {
    double growth, backoff;
    int64_t interval;
} mp_scale_update_args;

/* MP_KERNEL_INV_SCALE: buffers out (fp32), scale (fp32); no argument block. */

/* MP_KERNEL_OPTIM: buffers, n per list, in this order: params, grads, fp32 masters, fp32
 * state 0..2, fp32 step counts (Adam with device steps), then found_inf and grad_scale
 * (absent entries NULL). A non-zero found_inf skips everything (step counts too); grads are
 * multiplied by 1 / grad_scale (reciprocal in double, stored as fp32). */
typedef enum {
    MP_OPTIM_SGD = 0,            /* hyper: mp_sgd_hyper; state 0 the momentum buffer */
    MP_OPTIM_ADAM,               /* hyper: mp_adam_hyper; state m, v, vmax (amsgrad) */
    MP_OPTIM_RMSPROP,            /* hyper: mp_rmsprop_hyper; state sq, grad_avg, buf */
    MP_OPTIM_ADAGRAD,            /* hyper: mp_adagrad_hyper; state sum */
    MP_OPTIM_ADADELTA            /* hyper: mp_adadelta_hyper; state sq, acc_delta */
} mp_optim_kind;

typedef struct {
    mp_optim_kind kind;
    int n;
    const mp_dtype *pdt, *gdt;   /* per tensor */
    const int64_t *numel;
    const void *hyper;
    int sgd_first;               /* SGD: momentum buffers hold no value yet */
    int stochastic;              /* bf16 params rounded stochastically */
    uint64_t seed;
    const uint64_t *ctr;         /* per tensor: its first Philox block (8 draws per block) */
    int device_steps;            /* Adam: step counts in buffers 6n..7n-1, bias corrections */
    double lr, beta1, beta2;     /* computed from them (in double) */
} mp_optim_launch;

#ifdef __cplusplus
}
#endif

#endif
