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

/* MP_KERNEL_SUM_SQUARES: buffers 0..n-1 the tensors (contiguous, float dtypes dt), n the total
 * (one double, zeroed by the caller): the sum of every element's square, in double. first[i]
 * is tensor i's first CPU segment (segs in all): the CPU kernel's split, not a GPU's. */
typedef struct {
    int n;
    const mp_dtype *dt;
    const int64_t *numel, *first;
    int64_t segs;
} mp_sum_squares_args;

/* MP_KERNEL_EMBEDDING: buffers the indices (count int64), the contiguous weight (rows x d,
 * row_bytes a row), the output (count x d). MP_KERNEL_EMBEDDING_BACKWARD: the indices, the
 * fp32 gradient (count x d), the zeroed fp32 weight gradient (rows x d): rows added in index
 * order (deterministic), the padding row (pad; -1 none) skipped. An index outside [0, rows)
 * fails the call (the CPU) or stops the device as torch's device-side assert (a GPU). */
typedef struct {
    int64_t count, rows, d, pad;
    size_t row_bytes;
} mp_embedding_args;

/* MP_KERNEL_COLUMN_SUM: buffer 0 the accumulator (cols doubles, added to), buffer 1 a
 * (rows, cols) matrix of fp32, fp16 or bf16 with row stride ld; each column's rows in order. */
typedef struct {
    int64_t rows, cols, ld;
    mp_dtype dt;
} mp_colsum_args;

/* MP_KERNEL_SUM (an iterator kernel): operand 0 the accumulator (doubles, or int64 when
 * int_acc; stride 0 along the summed dims), operand 1 the input of dtype dt, added in. The
 * iterator kernel's ctx starts with this block. */
typedef struct {
    mp_dtype dt;
    int int_acc;
} mp_sum_iter_args;

/* MP_KERNEL_SUM_STORE: buffer 0 the accumulator (n doubles, or int64 when int_acc), buffer
 * 1 the contiguous output of dtype dt (floats: the double rounded to fp32, then to dt). */
typedef struct {
    int64_t n;
    mp_dtype dt;
    int int_acc;
} mp_sum_store_args;

/* MP_KERNEL_RELU_16: buffers out, x (forward) or out, grad, saved output (backward); n
 * fp16/bf16 elements handled as bits (inf: the dtype's infinity, quiet: its quiet-NaN bit). */
typedef struct {
    int64_t n;
    uint16_t inf, quiet;        /* fp16 0x7c00, 0x0200; bf16 0x7f80, 0x0040 */
    int backward;
} mp_relu16_args;

/* MP_KERNEL_LOSS: buffers x, t, the n fp32 losses (mp_loss_value of kind, b). */
typedef struct {
    int64_t n;
    int kind;
    float b;
} mp_loss_args;

/* MP_KERNEL_LOSS_GRAD: buffers x, t (n fp32 each), g (n fp32 when dense, else the
 * one-element upstream gradient of dtype gdt, divided by denom for a mean), the n fp32
 * results sgn * g * mp_loss_deriv(kind, x - t, b). */
typedef struct {
    int64_t n;
    int kind, dense, mean;
    float b, sgn;
    double denom;
    mp_dtype gdt;
} mp_loss_grad_args;

/* MP_KERNEL_LOSS_REDUCE: buffer 0 n fp32 losses, buffer 1 one element of dt receiving their
 * sum in double (divided by denom for a mean), buffer 2 (optional) a double read as the
 * denominator instead. */
typedef struct {
    int64_t n;
    int mean;
    double denom;
    mp_dtype dt;
} mp_loss_reduce_args;

#ifdef __cplusplus
}
#endif

#endif
