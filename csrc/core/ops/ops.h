/* ops.h - every differentiable op of the core: one entry point per op. Each entry checks
 * shapes and dtypes (errors name the op and both shapes), promotes dtypes as torch does,
 * allocates the output, runs the kernel and records an autograd node when an input requires
 * grad. Math is fp32 inside kernels whatever the storage dtype. Implementations live in
 * ops_<group>.c beside this file; the autocast policy of each op is in op_table.c. */
#ifndef MP_OPS_H
#define MP_OPS_H

#include "../autograd/autograd.h"
#include "../copy.h"
#include "../../shared/mp_pointwise.h"

/* ---- binary pointwise (ops_binary.c); b may be a wrapped-number 0-d tensor ---- */
mp_status mp_op_add(mp_tensor *a, mp_tensor *b, double alpha, mp_tensor **out);   /* a+alpha*b */
mp_status mp_op_sub(mp_tensor *a, mp_tensor *b, double alpha, mp_tensor **out);
mp_status mp_op_mul(mp_tensor *a, mp_tensor *b, mp_tensor **out);
mp_status mp_op_div(mp_tensor *a, mp_tensor *b, mp_tensor **out);
/* In place: a = a (op) b; b broadcasts to a's shape; the result is cast to a's dtype; through
 * mp_check_inplace / mp_inplace_commit (autograd as torch's). */
mp_status mp_op_binary_(int which, mp_tensor *a, mp_tensor *b, double alpha);
enum { MP_BIN_ADD, MP_BIN_SUB, MP_BIN_MUL, MP_BIN_DIV, MP_BIN_POW };

/* ---- unary pointwise (ops_unary.c) ---- */
/* mp_unary_op (MP_UN_*): shared/mp_pointwise.h, whose bodies the GPU runs too */
mp_status mp_op_unary(mp_unary_op op, mp_tensor *a, mp_tensor **out);
mp_status mp_op_pow(mp_tensor *a, mp_tensor *b, mp_tensor **out);   /* either may be wrapped */
/* has_min/has_max select the bounds, as torch.clamp(min=None, max=None) */
mp_status mp_op_clamp(mp_tensor *a, int has_min, double min, int has_max, double max,
                      mp_tensor **out);
mp_status mp_op_where(mp_tensor *cond, mp_tensor *a, mp_tensor *b, mp_tensor **out);

/* ---- reductions and normalisation (ops_reduce.c, ops_softmax.c, ops_norm.c) ---- */
/* dim_mask: bit d reduces dim d (all bits of ndim for a full reduction); dtype < 0: default */
mp_status mp_op_sum(mp_tensor *a, uint32_t dim_mask, int keepdim, int dtype, mp_tensor **out);
mp_status mp_op_mean(mp_tensor *a, uint32_t dim_mask, int keepdim, int dtype, mp_tensor **out);
/* max over one dim: values and int64 indices (first occurrence; NaN wins, as torch) */
mp_status mp_op_max_dim(mp_tensor *a, int64_t dim, int keepdim, mp_tensor **values,
                        mp_tensor **indices);
mp_status mp_op_max_all(mp_tensor *a, mp_tensor **out);
mp_status mp_op_argmax(mp_tensor *a, int has_dim, int64_t dim, int keepdim, mp_tensor **out);
mp_status mp_op_min_dim(mp_tensor *a, int64_t dim, int keepdim, mp_tensor **values,
                        mp_tensor **indices);
mp_status mp_op_min_all(mp_tensor *a, mp_tensor **out);
mp_status mp_op_argmin(mp_tensor *a, int has_dim, int64_t dim, int keepdim, mp_tensor **out);

/* ---- more reductions, scans and sorting (ops_minmax.c, ops_stats.c, ops_vnorm.c,
 * ops_scan.c, ops_sort.c); float math in double, one rounding to the output dtype ---- */
/* amax (is_min 0) / amin over dim_mask; the gradient is shared evenly among ties */
mp_status mp_op_amax(mp_tensor *a, uint32_t dim_mask, int keepdim, int is_min,
                     mp_tensor **out);
/* maximum/minimum (NaN propagates) and fmax/fmin (NaN ignored): broadcasting, torch's
 * promotion; the gradient of a tie is split evenly (maximum/minimum) as torch */
enum { MP_EXT_MAXIMUM, MP_EXT_MINIMUM, MP_EXT_FMAX, MP_EXT_FMIN };
mp_status mp_op_maximum(int which, mp_tensor *a, mp_tensor *b, mp_tensor **out);
/* prod over everything (has_dim 0) or one dim; dtype < 0: a's (int64 for integer inputs) */
mp_status mp_op_prod(mp_tensor *a, int has_dim, int64_t dim, int keepdim, int dtype,
                     mp_tensor **out);
/* var over dim_mask with divisor max(0, N - correction); take_sqrt gives std; mean_out (may
 * be NULL) also returns the mean, as var_mean/std_mean (one node with two outputs) */
mp_status mp_op_var(mp_tensor *a, uint32_t dim_mask, double correction, int keepdim,
                    int take_sqrt, mp_tensor **out, mp_tensor **mean_out);
/* log(sum(exp(a))) over dim_mask, stable and inf-safe; integer inputs give float32 */
mp_status mp_op_logsumexp(mp_tensor *a, uint32_t dim_mask, int keepdim, mp_tensor **out);
/* linalg.vector_norm: ord any number incl. +-inf and 0; dtype < 0: a's (else a is cast
 * to it first, which must not narrow) */
/* A 0-d fp32 tensor on the tensors' device: the sum of the squares of every element of the
 * n (>= 1) contiguous float tensors, in double, in an order fixed by their sizes alone
 * (ops_grad_norm.c; clip_grad_norm_'s 2-norm). */
mp_status mp_op_foreach_sum_squares(mp_tensor **ts, int n, mp_tensor **out);
mp_status mp_op_vector_norm(mp_tensor *a, double ord, uint32_t dim_mask, int keepdim,
                            int dtype, mp_tensor **out);
/* cumsum (prod 0) / cumprod (prod 1) along dim; dtype < 0: a's (int64 for integers) */
mp_status mp_op_cumsum(mp_tensor *a, int64_t dim, int dtype, int prod, mp_tensor **out);
/* sort along dim (stable: equal elements keep their order; NaN sorts as the largest) */
mp_status mp_op_sort(mp_tensor *a, int64_t dim, int descending, mp_tensor **values,
                     mp_tensor **indices);
/* the k largest (smallest) along dim, sorted; ties give the lower index first */
mp_status mp_op_topk(mp_tensor *a, int64_t k, int64_t dim, int largest, mp_tensor **values,
                     mp_tensor **indices);
mp_status mp_op_softmax(mp_tensor *a, int64_t dim, int log, mp_tensor **out);
/* normalized_shape = the last n dims of a; weight/bias may be NULL */
mp_status mp_op_layer_norm(mp_tensor *a, const int64_t *normalized_shape, int n,
                           mp_tensor *weight, mp_tensor *bias, double eps, mp_tensor **out);

/* ---- losses (ops_loss.c, ops_loss_nll.c, ops_loss_prob.c); reduction: 0 none, 1 mean, 2 sum ---- */
enum { MP_RED_NONE = 0, MP_RED_MEAN = 1, MP_RED_SUM = 2 };
mp_status mp_op_mse_loss(mp_tensor *input, mp_tensor *target, int reduction, mp_tensor **out);
mp_status mp_op_l1_loss(mp_tensor *input, mp_tensor *target, int reduction, mp_tensor **out);
/* input (N, C) or (N, C, d1...) or (C); target int64 class indices; weight may be NULL */
mp_status mp_op_nll_loss(mp_tensor *input, mp_tensor *target, mp_tensor *weight,
                         int64_t ignore_index, int reduction, mp_tensor **out);
/* target: int64 class indices, or class probabilities (a float tensor of input's shape) */
mp_status mp_op_cross_entropy(mp_tensor *input, mp_tensor *target, mp_tensor *weight,
                              int64_t ignore_index, int reduction, double label_smoothing,
                              mp_tensor **out);
mp_status mp_op_bce_with_logits(mp_tensor *input, mp_tensor *target, mp_tensor *weight,
                                mp_tensor *pos_weight, int reduction, mp_tensor **out);
/* beta == 0 is l1_loss; errors for beta < 0 / delta <= 0 (ops_loss.c) */
mp_status mp_op_smooth_l1_loss(mp_tensor *input, mp_tensor *target, int reduction,
                               double beta, mp_tensor **out);
mp_status mp_op_huber_loss(mp_tensor *input, mp_tensor *target, int reduction, double delta,
                           mp_tensor **out);
/* (ops_loss_prob.c) input, target (same dtype and shape) and weight (input's shape, or NULL) */
mp_status mp_op_binary_cross_entropy(mp_tensor *input, mp_tensor *target, mp_tensor *weight,
                                     int reduction, mp_tensor **out);
enum { MP_RED_BATCHMEAN = 3 };      /* kl_div only: the sum over input.size(0) */
mp_status mp_op_kl_div(mp_tensor *input, mp_tensor *target, int reduction, int log_target,
                       mp_tensor **out);

/* ---- padding, one_hot (ops_pad.c), normalize (ops_normalize.c), activations with a
 * parameter (ops_activation.c) ---- */
enum { MP_PAD_CONSTANT = 0, MP_PAD_REFLECT = 1, MP_PAD_REPLICATE = 2, MP_PAD_CIRCULAR = 3 };
/* pad[npad] in torch's order (last dim's left, right, then the dim before ...); negative
 * pads crop; value (constant mode) is stored in a's dtype */
mp_status mp_op_pad(mp_tensor *a, const int64_t *pad, int npad, int mode, mp_scalar value,
                    mp_tensor **out);
/* int64 result of shape a.shape + (num_classes,); num_classes -1 infers max + 1 */
mp_status mp_op_one_hot(mp_tensor *a, int64_t num_classes, mp_tensor **out);
/* a / max(||a||_p, eps) along dim (p may be 0, inf, -inf) */
mp_status mp_op_normalize(mp_tensor *a, double p, int64_t dim, double eps, mp_tensor **out);
mp_status mp_op_leaky_relu(mp_tensor *a, double negative_slope, mp_tensor **out);
mp_status mp_op_leaky_relu_(mp_tensor *a, double negative_slope);
mp_status mp_op_softplus(mp_tensor *a, double beta, double threshold, mp_tensor **out);

/* ---- matrix products (ops_matmul.c); fp32 accumulation ---- */
mp_status mp_op_mm(mp_tensor *a, mp_tensor *b, mp_tensor **out);
mp_status mp_op_bmm(mp_tensor *a, mp_tensor *b, mp_tensor **out);
mp_status mp_op_matmul(mp_tensor *a, mp_tensor *b, mp_tensor **out);
/* beta * bias + alpha * (a @ b) */
mp_status mp_op_addmm(mp_tensor *bias, mp_tensor *a, mp_tensor *b, double beta, double alpha,
                      mp_tensor **out);
/* beta * bias + alpha * (a @ b) for 3-D a (B, M, K) and b (B, K, N); bias broadcasts to
 * (B, M, N). */
mp_status mp_op_baddbmm(mp_tensor *bias, mp_tensor *a, mp_tensor *b, double beta,
                        double alpha, mp_tensor **out);
/* x @ w^T + bias (bias may be NULL) */
mp_status mp_op_linear(mp_tensor *x, mp_tensor *w, mp_tensor *bias, mp_tensor **out);

/* ---- joining, lookup, dropout (ops_shape.c) ---- */
mp_status mp_op_cat(mp_tensor *const *ts, int n, int64_t dim, mp_tensor **out);
mp_status mp_op_stack(mp_tensor *const *ts, int n, int64_t dim, mp_tensor **out);
/* padding_idx < 0: none */
mp_status mp_op_embedding(mp_tensor *weight, mp_tensor *indices, int64_t padding_idx,
                          mp_tensor **out);
/* seed/offset: a Philox stream (random.h); blocks_used advances the caller's generator */
mp_status mp_op_dropout(mp_tensor *a, double p, uint64_t seed, uint64_t offset,
                        mp_tensor **out, uint64_t *blocks_used);

/* ---- autograd-aware views and casts (ops_view.c): record the node for a view or cast the
 * bindings already made (out shares a's storage for views) ---- */
typedef enum {
    MP_VIEWOP_RESHAPE, MP_VIEWOP_PERMUTE, MP_VIEWOP_EXPAND, MP_VIEWOP_SLICE, MP_VIEWOP_SELECT,
    MP_VIEWOP_UNSQUEEZE, MP_VIEWOP_SQUEEZE
} mp_view_op;
/* args: RESHAPE/EXPAND/UNSQUEEZE/SQUEEZE none (input shape is recorded); PERMUTE the dims;
 * SLICE {dim, start, stop, step} (normalised); SELECT {dim, index} (normalised) */
mp_status mp_record_view(mp_view_op kind, mp_tensor *a, mp_tensor *out, const int64_t *args,
                         int nargs);
/* out = a converted to dtype (a new tensor); the gradient is converted back */
mp_status mp_op_to_dtype(mp_tensor *a, mp_dtype dtype, int copy, mp_tensor **out);
/* a on `device` (and in `dtype`): a copy unless already there (then mp_op_to_dtype). */
mp_status mp_op_to_device(mp_tensor *a, mp_device device, mp_dtype dtype, int copy,
                          mp_tensor **out);
/* ---- in-place ops (inplace.c) ---- */
/* The first step of every in-place op: torch's refusals (a leaf that requires grad, a view
 * of one, a view made under no_grad, a destination with overlapping elements), and the mark
 * from which nodes belong to this op (see mp_inplace_commit). */
mp_status mp_check_inplace(mp_tensor *a, const char *op_name);
/* The last step of every in-place op: res, computed out of place by ops that record autograd,
 * is written into a (cast to a's dtype; res must have a's shape, may share a's memory), a's
 * storage version is bumped, and a's history rebased on res's (a view's base gets a
 * CopySlices node). Tensors that the op's own nodes saved from a are copied before the write;
 * a saved res is pointed at a. This is the one place in-place writes meet autograd. */
mp_status mp_inplace_commit(mp_tensor *a, mp_tensor *res, const char *op_name);
/* a = value (fill_, zero_, t[i] = 3): check and commit in one; no allocation unless autograd
 * must record it. */
mp_status mp_inplace_fill(mp_tensor *a, mp_scalar value, const char *op_name);

#endif
