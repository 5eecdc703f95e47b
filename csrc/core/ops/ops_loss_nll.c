/* ops_loss_nll.c - nll_loss and cross_entropy for class-index targets (input (N, C), (C) or
 * (N, C, d1, ...)) with torch's weight, ignore_index, weighted mean and label smoothing, and
 * cross_entropy with class-probability targets. cross_entropy is log_softmax (ops_softmax.c)
 * followed by the nll kernel here with a smoothing term. The class dim is moved last (rows.h),
 * so each sample is one row of C values; sums are in double. Class indices are int64 or, as
 * torch allows, uint8 (widened to int64 first). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../amp/autocast.h"
#include "../copy.h"
#include "../backend.h"
#include "../elementwise.h"
#include "loss.h"
#include "ops.h"
#include "../rows.h"
#include "../view.h"

typedef struct {
    int class_dim;          /* 1, or 0 for a (C) input */
    int64_t C;
} nll_shape;

static mp_status target_shape_error(mp_tensor *input, mp_tensor *target, int class_dim)
{
    int64_t want[MP_MAX_DIMS];
    int k = 0;
    char a[256], b[256];
    for (int d = 0; d < input->ndim; d++)
        if (d != class_dim)
            want[k++] = input->shape[d];
    mp_format_shape(a, sizeof a, want, k);
    mp_format_shape(b, sizeof b, target->shape, target->ndim);
    return mp_error(MP_ERR_SHAPE, "Expected target size %s, got %s", a, b);
}

static mp_status check_target_shape(mp_tensor *input, mp_tensor *target)
{
    if (input->ndim == 1) {
        if (target->ndim > 1 || mp_tensor_numel(target) != 1)
            return mp_error(MP_ERR_RUNTIME, "0D or 1D target tensor expected, multi-target "
                            "not supported");
        return MP_OK;
    }
    if (input->ndim == 2 && target->ndim != 1)
        return mp_error(MP_ERR_RUNTIME, "0D or 1D target tensor expected, multi-target not "
                        "supported");
    if (target->ndim >= 1 && target->shape[0] != input->shape[0])
        return mp_error(MP_ERR_VALUE, "Expected input batch_size (%lld) to match target "
                        "batch_size (%lld).", (long long)input->shape[0],
                        (long long)target->shape[0]);
    if (target->ndim != input->ndim - 1 ||
        memcmp(target->shape + 1, input->shape + 2,
               sizeof(int64_t) * (size_t)(input->ndim - 2)) != 0)
        return target_shape_error(input, target, 1);
    return MP_OK;
}

static mp_status check_weight(mp_tensor *weight, int64_t C)
{
    if (!weight)
        return MP_OK;
    if (weight->ndim != 1 || weight->shape[0] != C) {
        char a[256];
        mp_format_shape(a, sizeof a, weight->shape, weight->ndim);
        return mp_error(MP_ERR_RUNTIME, "weight tensor should be defined either for all %lld "
                        "classes or no classes but got weight tensor of shape: %s",
                        (long long)C, a);
    }
    if (!mp_dtype_is_float(weight->dtype))
        return mp_error(MP_ERR_TYPE, "nll_loss: weight must be a floating point tensor, got %s",
                        mp_dtype_torch_name(weight->dtype));
    if (weight->requires_grad && mp_grad_enabled())
        return mp_error(MP_ERR_RUNTIME, "The function 'nll_loss_forward' is not differentiable "
                        "with respect to argument 'weight'. This input cannot have "
                        "requires_grad True.");
    return MP_OK;
}

static mp_status nll_check(mp_tensor *input, mp_tensor *target, mp_tensor *weight,
                           int reduction, nll_shape *sh)
{
    mp_status st = mp_loss_check_reduction(reduction);
    if (st != MP_OK)
        return st;
    if (input->ndim == 0)
        return mp_error(MP_ERR_VALUE, "Expected 1 or more dimensions (got 0)");
    if (!mp_dtype_is_float(input->dtype))
        return mp_error(MP_ERR_RUNTIME, "\"nll_loss_out_frame\" not implemented for '%s'",
                        mp_dtype_torch_name(input->dtype));
    if (target->dtype != MP_DTYPE_INT64 && target->dtype != MP_DTYPE_UINT8)   /* torch: both */
        return mp_error(MP_ERR_RUNTIME, "expected target dtype to be Long, but got %s",
                        mp_dtype_torch_name(target->dtype));
    sh->class_dim = input->ndim == 1 ? 0 : 1;
    sh->C = input->shape[sh->class_dim];
    st = check_target_shape(input, target);
    return st == MP_OK ? check_weight(weight, sh->C) : st;
}

typedef struct {
    int64_t ignore, C, nrows;
    double ls;              /* label smoothing (0 for nll_loss) */
    mp_dtype dt;            /* the log-probability rows' dtype */
    int reduction;
} nll_args;

static mp_status out_of_bounds(int64_t t, mp_msg *msg)
{
    snprintf(msg->text, sizeof msg->text, "Target %lld is out of bounds.", (long long)t);
    return MP_ERR_INDEX;
}

/* The MP_KERNEL_NLL kernel. Buffers: the log-probability rows (nrows x C, dt), the int64
 * targets, the fp32 class weights (or absent), the per-row fp32 losses l, and one double:
 * the sum of w[t] over the counted rows (the 'mean' denominator, as torch), which stays on
 * the device for the reduction and the backward. l[r] = -(1 - ls) * w[t] * x[t]
 * - ls / C * sum_c w[c] * x[c] (0 for ignored rows). Targets are checked here, where they
 * are read. */
static mp_status run_nll(void *const *buf, const void *args, mp_msg *msg)
{
    const nll_args *a = args;
    const char *data = buf[0];
    const int64_t *tg = buf[1];
    const float *w = buf[2];
    float *l = buf[3];
    double *wsum = buf[4];
    size_t sz = mp_dtype_size(a->dt);
    float *row = NULL;
    if (a->ls > 0.0 && !(row = malloc(sizeof(float) * (size_t)(a->C + 1)))) {
        snprintf(msg->text, sizeof msg->text, "out of memory for a row buffer");
        return MP_ERR_NOMEM;
    }
    mp_status st = MP_OK;
    double total = 0.0;
    for (int64_t r = 0; r < a->nrows; r++) {
        int64_t t = tg[r];
        l[r] = 0.0f;
        if (t == a->ignore)
            continue;
        if (t < 0 || t >= a->C) {
            st = out_of_bounds(t, msg);
            break;
        }
        double wt = w ? w[t] : 1.0;
        double loss = -(1.0 - a->ls) * wt * mp_load_f64(a->dt, data + (size_t)(r * a->C + t) * sz);
        if (row) {
            const float *x = mp_row_load(a->dt, data, r, a->C, row);
            double sum = 0.0;
            for (int64_t c = 0; c < a->C; c++)
                sum += (w ? (double)w[c] : 1.0) * x[c];
            loss -= a->ls / (double)a->C * sum;
        }
        l[r] = (float)loss;
        total += wt;
    }
    *wsum = total;
    free(row);
    return st;
}

/* The MP_KERNEL_NLL_BACKWARD kernel. Buffers: targets, weights (or absent), the upstream
 * gradient as fp32 (nrows values for 'none', else one), the saved denominator (one double),
 * and grows (nrows x C fp32, zero-filled) = d loss / d x. */
static mp_status run_nll_grad(void *const *buf, const void *args, mp_msg *msg)
{
    const nll_args *a = args;
    const int64_t *tg = buf[0];
    const float *w = buf[1], *g = buf[2];
    const double *wsum = buf[3];
    float *grows = buf[4];
    float scale = 1.0f;
    if (a->reduction != MP_RED_NONE)   /* one number: g, divided by the sum for 'mean' */
        scale = (float)(a->reduction == MP_RED_MEAN ? (double)g[0] / *wsum : (double)g[0]);
    for (int64_t r = 0; r < a->nrows; r++) {
        int64_t t = tg[r];
        if (t == a->ignore)
            continue;
        if (t < 0 || t >= a->C)        /* the saved target was changed in place */
            return out_of_bounds(t, msg);
        float gr = a->reduction == MP_RED_NONE ? g[r] : scale, *row = grows + r * a->C;
        row[t] += (float)(-(1.0 - a->ls) * (w ? w[t] : 1.0f) * gr);
        if (a->ls > 0.0) {
            float k = (float)(-a->ls / (double)a->C) * gr;
            for (int64_t c = 0; c < a->C; c++)
                row[c] += w ? k * w[c] : k;
        }
    }
    return MP_OK;
}

static mp_status nll_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *tc = mp_node_saved(n, 0), *wf = mp_node_saved(n, 1);
    mp_tensor *wsum = mp_node_saved(n, 2), *gf = NULL, *gr = NULL;
    if (!tc || !wsum)
        return MP_ERR_RUNTIME;
    int nd, reduction = (int)n->iargs[1], cd = (int)n->iargs[2];
    const int64_t *ishape = mp_node_in_shape(n, 0, &nd);
    int64_t rshape[MP_MAX_DIMS];
    mp_rows_shape(ishape, nd, cd, rshape);
    mp_device dev = tc->storage->device;
    nll_args a = {n->iargs[0], ishape[cd], mp_tensor_numel(tc), n->fargs[1],
                  MP_DTYPE_FLOAT32, reduction};
    mp_status st = MP_OK;
    if (reduction != MP_RED_NONE && mp_tensor_numel(gout[0]) != 1)
        st = mp_error(MP_ERR_SHAPE, "loss backward: expected a one-element gradient");
    if (st == MP_OK)
        st = mp_tensor_cast(gout[0], MP_DTYPE_FLOAT32, &gf);
    if (st == MP_OK)
        st = mp_tensor_full_on(rshape, nd, MP_DTYPE_FLOAT32, 0.0, dev, &gr);
    if (st == MP_OK) {
        mp_tensor *ts[5] = {tc, wf, gf, wsum, gr};
        st = mp_check_same_device(ts, 5, dev, 0);
        if (st == MP_OK)
            st = mp_launch_tensors(dev, MP_KERNEL_NLL_BACKWARD, 5, ts, run_nll_grad, &a);
    }
    if (st == MP_OK)
        st = mp_rows_restore(gr, cd, &gin[0]);
    mp_tensor_decref(gf);
    mp_tensor_decref(gr);
    return st;
}

static mp_status nll_forward(mp_tensor *logp, mp_tensor *target, mp_tensor *weight,
                             int64_t ignore, int reduction, double ls, const nll_shape *sh,
                             mp_tensor **out)
{
    mp_tensor *rows = NULL, *tc = NULL, *wf = NULL, *l = NULL, *wsum = NULL;
    mp_device dev = logp->storage->device;
    mp_tensor *devs[3] = {logp, target, weight};
    mp_status st = mp_check_same_device(devs, 3, dev, 0);
    if (st == MP_OK)
        st = mp_rows_of(logp, sh->class_dim, &rows);
    if (st == MP_OK)        /* uint8 class indices widen to the int64 the rows read */
        st = target->dtype == MP_DTYPE_INT64 ? mp_tensor_contiguous(target, &tc)
                                             : mp_tensor_cast(target, MP_DTYPE_INT64, &tc);
    if (st == MP_OK && weight)
        st = mp_tensor_cast(weight, MP_DTYPE_FLOAT32, &wf);
    if (st == MP_OK)
        st = mp_tensor_empty(target->shape, target->ndim, MP_DTYPE_FLOAT32, dev, &l);
    if (st == MP_OK)     /* one double under an int64 header */
        st = mp_tensor_empty(NULL, 0, MP_DTYPE_INT64, dev, &wsum);
    if (st == MP_OK) {
        nll_args a = {ignore, sh->C, mp_tensor_numel(tc), ls, rows->dtype, reduction};
        mp_tensor *ts[5] = {rows, tc, wf, l, wsum};
        st = mp_launch_tensors(dev, MP_KERNEL_NLL, 5, ts, run_nll, &a);
    }
    if (st == MP_OK)
        st = mp_loss_reduce_by(l, reduction, wsum, logp->dtype, out);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record("NllLossBackward0", nll_backward, &logp, 1, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = ignore;
        node->iargs[1] = reduction;
        node->iargs[2] = sh->class_dim;
        node->fargs[1] = ls;
        if ((st = mp_node_save(node, 0, tc)) == MP_OK && (st = mp_node_save(node, 1, wf)) ==
            MP_OK)
            st = mp_node_save(node, 2, wsum);
    }
    mp_tensor_decref(rows);
    mp_tensor_decref(tc);
    mp_tensor_decref(wf);
    mp_tensor_decref(l);
    mp_tensor_decref(wsum);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

mp_status mp_op_nll_loss(mp_tensor *input, mp_tensor *target, mp_tensor *weight,
                         int64_t ignore_index, int reduction, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_NLL_LOSS,
                      mp_op_nll_loss(ac_[0], ac_[1], ac_[2], ignore_index, reduction, out),
                      input, target, weight);
    nll_shape sh;
    *out = NULL;
    mp_status st = nll_check(input, target, weight, reduction, &sh);
    return st == MP_OK ? nll_forward(input, target, weight, ignore_index, reduction, 0.0, &sh,
                                     out) : st;
}

/* ---- cross_entropy with class-probability targets (target shaped like input) ---- */

typedef struct {
    const float *w;         /* C class weights, or NULL */
    double ls;
    const float *g;         /* backward: per-row gradient, or NULL for `scale` */
    float scale;
    int wrt_target;
} prob_args;

/* l[r] = -sum_c w[c] * p'[c] * x[c] with p' = (1 - ls) * p + ls / C */
static mp_status prob_rows(mp_tensor *xrows, mp_tensor *prows, const prob_args *a, float *l)
{
    int64_t C = xrows->ndim ? xrows->shape[xrows->ndim - 1] : 1;
    int64_t nrows = C ? mp_tensor_numel(xrows) / C : 0;
    float *buf = malloc(sizeof(float) * 2 * (size_t)(C + 1));
    if (!buf)
        return mp_error(MP_ERR_NOMEM, "out of memory for a row buffer");
    for (int64_t r = 0; r < nrows; r++) {
        const float *x = mp_row_load(xrows->dtype, mp_tensor_data(xrows), r, C, buf);
        const float *p = mp_row_load(prows->dtype, mp_tensor_data(prows), r, C, buf + C + 1);
        double s = 0.0;
        for (int64_t c = 0; c < C; c++) {
            double pc = (1.0 - a->ls) * p[c] + a->ls / (double)C;
            s += (a->w ? (double)a->w[c] : 1.0) * pc * x[c];
        }
        l[r] = (float)-s;
    }
    free(buf);
    return MP_OK;
}

/* d/dx[c] = -g * w[c] * p'[c]; d/dp[c] = -g * w[c] * (1 - ls) * x[c] */
static void prob_grad_row(const float *const *in, float *out, int64_t C, int64_t row, void *vctx)
{
    const prob_args *a = vctx;
    const float *x = in[0], *p = in[1];
    float g = a->g ? a->g[row] : a->scale;
    for (int64_t c = 0; c < C; c++) {
        float w = a->w ? a->w[c] : 1.0f, d;
        if (a->wrt_target)
            d = (float)(1.0 - a->ls) * x[c];
        else
            d = (float)((1.0 - a->ls) * p[c] + a->ls / (double)C);
        out[c] = -g * w * d;
    }
}

static mp_status prob_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *x = mp_node_saved(n, 0), *p = mp_node_saved(n, 1), *wf = mp_node_saved(n, 2);
    mp_tensor *gf = NULL;
    if (!x || !p)
        return MP_ERR_RUNTIME;
    int reduction = (int)n->iargs[0], cd = (int)n->iargs[1];
    prob_args a = {wf ? mp_tensor_data(wf) : NULL, n->fargs[1], NULL, 1.0f, 0};
    mp_status st = mp_loss_grad_scale(gout[0], reduction, n->fargs[0], &a.scale);
    if (st == MP_OK && reduction == MP_RED_NONE)
        st = mp_tensor_cast(gout[0], MP_DTYPE_FLOAT32, &gf);
    a.g = gf ? mp_tensor_data(gf) : NULL;
    mp_tensor *ins[2] = {x, p};
    for (int i = 0; i < 2 && st == MP_OK; i++) {
        a.wrt_target = i;
        if (n->next[i].node)
            st = mp_rows_map(ins, 2, cd, MP_DTYPE_FLOAT32, prob_grad_row, &a, &gin[i]);
    }
    mp_tensor_decref(gf);
    return st;
}

static mp_status prob_forward(mp_tensor *logp, mp_tensor *target, mp_tensor *wf,
                              int reduction, double ls, int cd, mp_tensor **out)
{
    mp_tensor *xr = NULL, *pr = NULL, *l = NULL, *ins[2] = {logp, target};
    int64_t rshape[MP_MAX_DIMS], nrows;
    mp_rows_shape(logp->shape, logp->ndim, cd, rshape);
    mp_status st = mp_rows_of(logp, cd, &xr);
    if (st == MP_OK)
        st = mp_rows_of(target, cd, &pr);
    if (st == MP_OK)       /* the loss has the input's shape without the class dim */
        st = mp_tensor_empty(rshape, logp->ndim ? logp->ndim - 1 : 0, MP_DTYPE_FLOAT32,
                             MP_DEVICE_CPU, &l);
    prob_args a = {wf ? mp_tensor_data(wf) : NULL, ls, NULL, 1.0f, 0};
    if (st == MP_OK)
        st = prob_rows(xr, pr, &a, mp_tensor_data(l));
    nrows = l ? mp_tensor_numel(l) : 0;
    if (st == MP_OK)
        st = mp_loss_reduce(l, reduction, (double)nrows, mp_result_type(ins, 2), out);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record("CrossEntropyLossBackward0", prob_backward, ins, 2, out, 1,
                                &node);
    if (st == MP_OK && node) {
        node->iargs[0] = reduction;
        node->iargs[1] = cd;
        node->fargs[0] = (double)nrows;
        node->fargs[1] = ls;
        for (int i = 0; i < 3 && st == MP_OK; i++)
            st = mp_node_save(node, i, i == 0 ? logp : i == 1 ? target : wf);
    }
    mp_tensor_decref(xr);
    mp_tensor_decref(pr);
    mp_tensor_decref(l);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status cross_entropy_probs(mp_tensor *input, mp_tensor *target, mp_tensor *weight,
                                     int64_t ignore_index, int reduction, double ls,
                                     mp_tensor **out)
{
    MP_HOST_ONLY("cross_entropy (class probabilities)", input, target, weight);
    int cd = input->ndim == 1 ? 0 : 1;
    mp_status st = mp_loss_check_reduction(reduction);
    if (st == MP_OK && ignore_index >= 0)
        st = mp_error(MP_ERR_RUNTIME, "ignore_index is not supported for floating point "
                      "target");
    if (st == MP_OK && !mp_dtype_is_float(input->dtype))
        st = mp_error(MP_ERR_RUNTIME, "\"log_softmax_lastdim_kernel_impl\" not implemented "
                      "for '%s'", mp_dtype_torch_name(input->dtype));
    if (st == MP_OK)
        st = check_weight(weight, input->shape[cd]);
    mp_tensor *logp = NULL, *wf = NULL;
    if (st == MP_OK && weight)
        st = mp_tensor_cast(weight, MP_DTYPE_FLOAT32, &wf);
    if (st == MP_OK)
        st = mp_op_softmax(input, cd, 1, &logp);
    if (st == MP_OK)
        st = prob_forward(logp, target, wf, reduction, ls, cd, out);
    mp_tensor_decref(logp);
    mp_tensor_decref(wf);
    return st;
}

mp_status mp_op_cross_entropy(mp_tensor *input, mp_tensor *target, mp_tensor *weight,
                              int64_t ignore_index, int reduction, double label_smoothing,
                              mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_CROSS_ENTROPY,
                      mp_op_cross_entropy(ac_[0], ac_[1], ac_[2], ignore_index, reduction,
                                          label_smoothing, out),
                      input, target, weight);
    *out = NULL;
    if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0))
        return mp_error(MP_ERR_RUNTIME, "label_smoothing must be between 0.0 and 1.0. Got: %g",
                        label_smoothing);
    int same_shape = input->ndim == target->ndim && input->ndim > 0 &&
                     memcmp(input->shape, target->shape,
                            sizeof(int64_t) * (size_t)input->ndim) == 0;
    if (same_shape && target->dtype == MP_DTYPE_UINT8)  /* torch reads it as probabilities */
        return mp_error(MP_ERR_RUNTIME, "Expected floating point type for target with class "
                        "probabilities, got Byte");
    if (same_shape && mp_dtype_is_float(target->dtype))
        return cross_entropy_probs(input, target, weight, ignore_index, reduction,
                                   label_smoothing, out);
    nll_shape sh;
    mp_status st = nll_check(input, target, weight, reduction, &sh);
    if (st != MP_OK)
        return st;
    mp_tensor *logp = NULL;
    st = mp_op_softmax(input, sh.class_dim, 1, &logp);
    if (st == MP_OK)
        st = nll_forward(logp, target, weight, ignore_index, reduction, label_smoothing, &sh,
                         out);
    mp_tensor_decref(logp);
    return st;
}
