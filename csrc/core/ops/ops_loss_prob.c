/* ops_loss_prob.c - the losses on probabilities: binary_cross_entropy (input and target in
 * [0, 1], optional weight, each log clamped to >= -100 as torch) and kl_div (log-probability
 * input, probability or log-probability target), with backward for input and target.
 * Operands are broadcast and made dense fp32 (loss.h); per-element losses stay fp32 and the
 * 'mean'/'sum' is one double sum rounded once to the output dtype. */
#include <math.h>
#include <string.h>

#include "../amp/autocast.h"
#include "../copy.h"
#include "../backend.h"
#include "../elementwise.h"
#include "loss.h"
#include "ops.h"
#include "../rows.h"
#include "../view.h"

/* ---- binary_cross_entropy ---- */

/* torch's per-element form: (t - 1) * max(log1p(-x), -100) - t * max(log(x), -100) */
static float bce_value(float x, float t)
{
    float l0 = fmaxf(log1pf(-x), -100.0f), l1 = fmaxf(logf(x), -100.0f);
    return (t - 1.0f) * l0 - t * l1;
}

/* Computes the weighted per-element losses; fails on the first element (in order) whose
 * input or target lies outside [0, 1] (NaN included), as torch's CPU kernel. */
static mp_status bce_forward(const float *x, const float *t, const float *w, float *l,
                             int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (!(x[i] >= 0.0f && x[i] <= 1.0f))
            return mp_error(MP_ERR_RUNTIME, "all elements of input should be between 0 and 1");
        if (!(t[i] >= 0.0f && t[i] <= 1.0f))
            return mp_error(MP_ERR_RUNTIME, "all elements of target should be between 0 and 1");
        float v = bce_value(x[i], t[i]);
        l[i] = w ? v * w[i] : v;
    }
    return MP_OK;
}

/* d/dx = w * (x - t) / max((1 - x) * x, 1e-12); d/dt = w * (log1p(-x) - log(x)) */
static void bce_grad(const float *x, const float *t, const float *w, const float *g,
                     float scale, int wrt_target, float *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float gi = (g ? g[i] : scale) * (w ? w[i] : 1.0f), d;
        if (wrt_target)
            d = log1pf(-x[i]) - logf(x[i]);
        else
            d = (x[i] - t[i]) / fmaxf((1.0f - x[i]) * x[i], 1e-12f);
        out[i] = gi * d;
    }
}

/* dense fp32 copies of the operands (any may be NULL), decref'd by dense_free */
typedef struct {
    mp_tensor *t[4];
} dense4;

static void dense_free(dense4 *d)
{
    for (int i = 0; i < 4; i++)
        mp_tensor_decref(d->t[i]);
}

static mp_status dense_all(mp_tensor *const *src, int n, const int64_t *shape, int nd,
                           dense4 *d)
{
    mp_status st = MP_OK;
    memset(d, 0, sizeof *d);
    for (int i = 0; i < n && st == MP_OK; i++)
        if (src[i])
            st = mp_loss_dense(src[i], shape, nd, &d->t[i]);
    return st;
}

static const float *fdata(mp_tensor *t)
{
    return t ? (const float *)mp_tensor_data(t) : NULL;
}

static mp_status bce_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *x = mp_node_saved(n, 0);
    if (!x)
        return MP_ERR_RUNTIME;
    int reduction = (int)n->iargs[0];
    mp_tensor *src[4] = {x, mp_node_saved(n, 1), mp_node_saved(n, 2),
                         reduction == MP_RED_NONE ? gout[0] : NULL};
    dense4 d = {{NULL, NULL, NULL, NULL}};
    float scale;
    mp_status st = mp_loss_grad_scale(gout[0], reduction, n->fargs[0], &scale);
    if (st == MP_OK)
        st = dense_all(src, 4, x->shape, x->ndim, &d);
    for (int i = 0; i < 2 && st == MP_OK; i++) {
        if (!n->next[i].node)
            continue;
        st = mp_tensor_empty(x->shape, x->ndim, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &gin[i]);
        if (st == MP_OK)
            bce_grad(fdata(d.t[0]), fdata(d.t[1]), fdata(d.t[2]), fdata(d.t[3]), scale, i,
                     mp_tensor_data(gin[i]), mp_tensor_numel(x));
    }
    dense_free(&d);
    return st;
}

static mp_status bce_check(mp_tensor *input, mp_tensor *target, mp_tensor *weight)
{
    char a[256], b[256];
    if (target->dtype != input->dtype)
        return mp_error(MP_ERR_RUNTIME, "Found dtype %s but expected %s",
                        mp_dtype_torch_name(target->dtype), mp_dtype_torch_name(input->dtype));
    if (!mp_dtype_is_float(input->dtype))
        return mp_error(MP_ERR_TYPE, "\"binary_cross_entropy\" not implemented for '%s'",
                        mp_dtype_torch_name(input->dtype));
    mp_tensor *ts[2] = {target, weight};
    for (int i = 0; i < 2; i++) {
        if (!ts[i] || (ts[i]->ndim == input->ndim &&
                       memcmp(ts[i]->shape, input->shape,
                              sizeof(int64_t) * (size_t)input->ndim) == 0))
            continue;
        mp_format_shape(a, sizeof a, ts[i]->shape, ts[i]->ndim);
        mp_format_shape(b, sizeof b, input->shape, input->ndim);
        return mp_error(MP_ERR_VALUE, "binary_cross_entropy: %s size %s must be the same as "
                        "input size %s", i ? "weight" : "target", a, b);
    }
    if (weight && weight->requires_grad && mp_grad_enabled())
        return mp_error(MP_ERR_RUNTIME, "The function 'binary_cross_entropy' is not "
                        "differentiable with respect to argument 'weight'. This input cannot "
                        "have requires_grad True.");
    return MP_OK;
}

static mp_status bce_record(mp_tensor *input, mp_tensor *target, mp_tensor *weight,
                            int reduction, mp_tensor **out)
{
    mp_tensor *ins[2] = {input, target};
    mp_node *node = NULL;
    mp_status st = mp_autograd_record("BinaryCrossEntropyBackward0", bce_backward, ins, 2, out,
                                      1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = reduction;
        node->fargs[0] = (double)mp_tensor_numel(input);
        mp_tensor *save[3] = {input, target, weight};
        for (int i = 0; i < 3 && st == MP_OK; i++)
            st = mp_node_save(node, i, save[i]);
    }
    return st;
}

mp_status mp_op_binary_cross_entropy(mp_tensor *input, mp_tensor *target, mp_tensor *weight,
                                     int reduction, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_BCE,
                      mp_op_binary_cross_entropy(ac_[0], ac_[1], ac_[2], reduction, out), input,
                      target, weight);
    MP_HOST_ONLY("binary_cross_entropy", input, target, weight);
    *out = NULL;
    mp_status st = mp_loss_check_reduction(reduction);
    if (st == MP_OK)
        st = bce_check(input, target, weight);
    if (st != MP_OK)
        return st;
    mp_tensor *src[3] = {input, target, weight}, *l = NULL;
    int64_t numel = mp_tensor_numel(input);
    dense4 d = {{NULL, NULL, NULL, NULL}};
    st = dense_all(src, 3, input->shape, input->ndim, &d);
    if (st == MP_OK)
        st = mp_tensor_empty(input->shape, input->ndim, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &l);
    if (st == MP_OK)
        st = bce_forward(fdata(d.t[0]), fdata(d.t[1]), fdata(d.t[2]), mp_tensor_data(l), numel);
    if (st == MP_OK)
        st = mp_loss_reduce(l, reduction, (double)numel, input->dtype, out);
    dense_free(&d);
    mp_tensor_decref(l);
    if (st == MP_OK)
        st = bce_record(input, target, weight, reduction, out);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* ---- kl_div ---- */

/* log_target: exp(t) * (t - x); else xlogy(t, t) - t * x (0 where t == 0, as torch) */
static void kl_forward(const float *x, const float *t, int log_target, float *l, int64_t n)
{
    if (log_target) {
        for (int64_t i = 0; i < n; i++)
            l[i] = expf(t[i]) * (t[i] - x[i]);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        float xlogy = t[i] == 0.0f ? 0.0f : t[i] * logf(t[i]);
        l[i] = xlogy - t[i] * x[i];
    }
}

/* d/dx = -t (or -exp(t)); d/dt = log(t) (0 where t == 0) + t / t - x, the terms of torch's
 * composite xlogy(t, t) - t * x, so t == 0 gives NaN as torch; with log_target
 * exp(t) * (t - x + 1). */
static void kl_grad(const float *x, const float *t, const float *g, float scale,
                    int log_target, int wrt_target, float *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float gi = g ? g[i] : scale, ti = t[i], d;
        if (log_target)
            d = wrt_target ? expf(ti) * (ti - x[i] + 1.0f) : -expf(ti);
        else if (wrt_target)
            d = (ti != 0.0f ? logf(ti) : 0.0f) + ti / ti - x[i];
        else
            d = -ti;
        out[i] = gi * d;
    }
}

static mp_status kl_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *x = mp_node_saved(n, 0), *t = mp_node_saved(n, 1);
    if (!x || !t)
        return MP_ERR_RUNTIME;
    int reduction = (int)n->iargs[0], log_target = (int)n->iargs[1], nd;
    int64_t shape[MP_MAX_DIMS];
    float scale;
    dense4 d = {{NULL, NULL, NULL, NULL}};
    mp_status st = mp_broadcast_shapes(x->shape, x->ndim, t->shape, t->ndim, shape, &nd);
    if (st == MP_OK)
        st = mp_loss_grad_scale(gout[0], reduction, n->fargs[0], &scale);
    mp_tensor *src[3] = {x, t, reduction == MP_RED_NONE ? gout[0] : NULL};
    if (st == MP_OK)
        st = dense_all(src, 3, shape, nd, &d);
    for (int i = 0; i < 2 && st == MP_OK; i++) {
        if (!n->next[i].node)
            continue;
        mp_tensor *full = NULL;
        st = mp_tensor_empty(shape, nd, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &full);
        if (st != MP_OK)
            break;
        kl_grad(fdata(d.t[0]), fdata(d.t[1]), fdata(d.t[2]), scale, log_target, i,
                mp_tensor_data(full), mp_tensor_numel(full));
        int ind;
        const int64_t *ishape = mp_node_in_shape(n, i, &ind);
        st = mp_sum_to_shape(full, ishape, ind, &gin[i]);
        mp_tensor_decref(full);
    }
    dense_free(&d);
    return st;
}

/* kl_div: reduction MP_RED_NONE/MEAN/SUM, or MP_RED_BATCHMEAN (the sum divided by the input's
 * first size; a 0-d input gives the sum), as torch.nn.functional.kl_div. */
mp_status mp_op_kl_div(mp_tensor *input, mp_tensor *target, int reduction, int log_target,
                       mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_KL_DIV, mp_op_kl_div(ac_[0], ac_[1], reduction, log_target, out),
                      input, target);
    MP_HOST_ONLY("kl_div", input, target);
    mp_tensor *ins[2] = {input, target}, *l = NULL;
    int64_t shape[MP_MAX_DIMS], numel = 1;
    int nd;
    dense4 d = {{NULL, NULL, NULL, NULL}};
    *out = NULL;
    int red = reduction == MP_RED_BATCHMEAN ? MP_RED_MEAN : reduction;
    mp_status st = mp_loss_check_reduction(red);
    if (st != MP_OK)
        return st;
    if (!mp_dtype_is_float(input->dtype) || !mp_dtype_is_float(target->dtype))
        return mp_error(MP_ERR_RUNTIME, "kl_div: Integral inputs not supported.");
    if ((st = mp_broadcast_shapes(input->shape, input->ndim, target->shape, target->ndim,
                                  shape, &nd)) != MP_OK)
        return st;
    for (int i = 0; i < nd; i++)
        numel *= shape[i];
    double denom = (double)numel;
    if (reduction == MP_RED_BATCHMEAN)
        denom = input->ndim ? (double)input->shape[0] : 1.0;
    st = dense_all(ins, 2, shape, nd, &d);
    if (st == MP_OK)
        st = mp_tensor_empty(shape, nd, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &l);
    if (st == MP_OK) {
        kl_forward(fdata(d.t[0]), fdata(d.t[1]), log_target, mp_tensor_data(l), numel);
        st = mp_loss_reduce(l, red, denom, mp_result_type(ins, 2), out);
    }
    dense_free(&d);
    mp_tensor_decref(l);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record("KlDivBackward0", kl_backward, ins, 2, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = red;
        node->iargs[1] = log_target;
        node->fargs[0] = denom;
        if ((st = mp_node_save(node, 0, input)) == MP_OK)
            st = mp_node_save(node, 1, target);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
