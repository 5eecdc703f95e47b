/* ops_loss.c - the elementwise losses: mse_loss, l1_loss, smooth_l1_loss, huber_loss,
 * binary_cross_entropy_with_logits, with backward. Operands are broadcast and made dense fp32; per-element losses are summed in
 * double for 'mean'/'sum' and the result rounded once to the output dtype (the promoted dtype
 * of input and target, as torch). Class-index losses (nll, cross_entropy) are in
 * ops_loss_nll.c; both share loss.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../amp/autocast.h"
#include "../copy.h"
#include "../backend.h"
#include "../../shared/mp_kernel_args.h"
#include "../elementwise.h"
#include "loss.h"
#include "ops.h"
#include "../rows.h"
#include "../view.h"

mp_status mp_loss_check_reduction(int reduction)
{
    if (reduction < MP_RED_NONE || reduction > MP_RED_SUM)
        return mp_error(MP_ERR_VALUE, "%d is not a valid value for reduction", reduction);
    return MP_OK;
}

mp_status mp_loss_dense(mp_tensor *t, const int64_t *shape, int nd, mp_tensor **out)
{
    mp_tensor *e = NULL;
    mp_status st = mp_view_expand(t, shape, nd, &e);
    if (st != MP_OK)
        return st;
    if (e->dtype == MP_DTYPE_FLOAT32 && mp_tensor_is_contiguous(e)) {
        *out = e;
        return MP_OK;
    }
    st = mp_tensor_cast(e, MP_DTYPE_FLOAT32, out);
    mp_tensor_decref(e);
    return st;
}

/* The MP_KERNEL_LOSS_REDUCE kernel: buffer 0 n fp32 losses, buffer 1 one element of dt
 * receiving their sum (divided by denom for a mean), buffer 2 (optional) a double read as
 * the denominator instead. */
typedef mp_loss_reduce_args reduce_args;   /* shared/mp_kernel_args.h */

static mp_status run_reduce(void *const *buf, const void *args, mp_msg *msg)
{
    const reduce_args *a = args;
    (void)msg;
    double s = mp_sum_f32(buf[0], a->n);
    if (a->mean)
        s /= buf[2] ? *(const double *)buf[2] : a->denom;      /* 0/0 gives NaN for an empty mean, as torch */
    int is_int = mp_dtype_is_integral(a->dt);
    mp_store_scalar(a->dt, buf[1], (mp_scalar){s, is_int ? (int64_t)s : 0, is_int});
    return MP_OK;
}

static mp_status reduce_with(mp_tensor *l, int reduction, double denom, mp_tensor *dt_denom,
                             mp_dtype dt, mp_tensor **out);

mp_status mp_loss_reduce(mp_tensor *l, int reduction, double denom, mp_dtype dt,
                         mp_tensor **out)
{
    return reduce_with(l, reduction, denom, NULL, dt, out);
}

mp_status mp_loss_reduce_by(mp_tensor *l, int reduction, mp_tensor *denom, mp_dtype dt,
                            mp_tensor **out)
{
    return reduce_with(l, reduction, 0.0, denom, dt, out);
}

static mp_status reduce_with(mp_tensor *l, int reduction, double denom, mp_tensor *dt_denom,
                             mp_dtype dt, mp_tensor **out)
{
    if (reduction == MP_RED_NONE) {
        if (l->dtype == dt) {
            mp_tensor_incref(l);
            *out = l;
            return MP_OK;
        }
        return mp_tensor_cast(l, dt, out);
    }
    mp_device dev = l->storage->device;
    mp_status st = mp_tensor_empty(NULL, 0, dt, dev, out);
    if (st != MP_OK)
        return st;
    reduce_args a = {mp_tensor_numel(l), reduction == MP_RED_MEAN, denom, dt};
    void *buf[3] = {mp_tensor_data(l), mp_tensor_data(*out),
                    dt_denom ? mp_tensor_data(dt_denom) : NULL};
    int64_t nbytes[3] = {a.n * 4, (int64_t)mp_dtype_size(dt), dt_denom ? 8 : 0};
    st = mp_launch_bufs(dev, MP_KERNEL_LOSS_REDUCE, 3, buf, nbytes, run_reduce, &a);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

mp_status mp_loss_grad_scale(mp_tensor *g, int reduction, double denom, float *scale)
{
    MP_HOST_ONLY("loss_grad_scale", g);
    *scale = 1.0f;
    if (reduction == MP_RED_NONE)
        return MP_OK;
    if (mp_tensor_numel(g) != 1)
        return mp_error(MP_ERR_SHAPE, "loss backward: expected a one-element gradient");
    double v = mp_load_f64(g->dtype, mp_tensor_data(g));
    *scale = (float)(reduction == MP_RED_MEAN ? v / denom : v);
    return MP_OK;
}

/* ---- mse_loss / l1_loss / smooth_l1_loss / huber_loss ---- */

enum { LOSS_MSE = MP_LOSS_MSE, LOSS_L1 = MP_LOSS_L1, LOSS_SMOOTH_L1 = MP_LOSS_SMOOTH_L1,
       LOSS_HUBER = MP_LOSS_HUBER };

/* the per-element formulas: shared/mp_pointwise.h (the GPU's too) */
#define loss_value mp_loss_value
#define loss_deriv mp_loss_deriv

/* The MP_KERNEL_LOSS_GRAD kernel: buffers x, t (n fp32 each), g (n fp32 when dense, else
 * the one-element upstream gradient of dtype gdt, divided by denom for a mean) and the n fp32
 * results: sgn * g * loss'(x - t). */
typedef mp_loss_grad_args grad_args;   /* shared/mp_kernel_args.h */

static mp_status run_grad(void *const *buf, const void *args, mp_msg *msg)
{
    const grad_args *a = args;
    const float *x = buf[0], *t = buf[1], *g = a->dense ? buf[2] : NULL;
    float *p = buf[3], scale = 1.0f;
    (void)msg;
    if (!a->dense) {
        double v = mp_load_f64(a->gdt, buf[2]);
        scale = (float)(a->mean ? v / a->denom : v);
    }
    for (int64_t i = 0; i < a->n; i++) {
        float diff = x[i] - t[i], gi = g ? g[i] : scale;
        p[i] = a->sgn * gi * loss_deriv(a->kind, diff, a->b);
    }
    return MP_OK;
}

/* Gradient wrt input (which 0) or target (which 1) summed to that operand's shape; gs the
 * dense upstream gradient or the one-element one. */
static mp_status pointwise_grad(mp_node *n, int which, mp_tensor *xf, mp_tensor *tf,
                                mp_tensor *gs, int dense, const int64_t *shape, int nd,
                                mp_tensor **out)
{
    mp_tensor *d = NULL;
    mp_device dev = xf->storage->device;
    mp_status st = mp_tensor_empty(shape, nd, MP_DTYPE_FLOAT32, dev, &d);
    if (st != MP_OK)
        return st;
    int reduction = (int)n->iargs[0];
    grad_args a = {mp_tensor_numel(d), (int)n->iargs[1], dense, reduction == MP_RED_MEAN,
                   (float)n->fargs[1], which == 0 ? 1.0f : -1.0f, n->fargs[0], gs->dtype};
    void *buf[4] = {mp_tensor_data(xf), mp_tensor_data(tf), mp_tensor_data(gs),
                    mp_tensor_data(d)};
    int64_t nb = a.n * 4;
    int64_t nbytes[4] = {nb, nb, dense ? nb : (int64_t)mp_dtype_size(gs->dtype), nb};
    st = mp_launch_bufs(dev, MP_KERNEL_LOSS_GRAD, 4, buf, nbytes, run_grad, &a);
    int ind;
    const int64_t *ishape = mp_node_in_shape(n, which, &ind);
    if (st == MP_OK)
        st = mp_sum_to_shape(d, ishape, ind, out);
    mp_tensor_decref(d);
    return st;
}

static mp_status pointwise_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *x = mp_node_saved(n, 0), *t = mp_node_saved(n, 1);
    mp_tensor *xf = NULL, *tf = NULL, *gf = NULL;
    if (!x || !t)
        return MP_ERR_RUNTIME;
    int reduction = (int)n->iargs[0], nd;
    int64_t shape[MP_MAX_DIMS];
    mp_tensor *const devs[3] = {gout[0], x, t};
    mp_status st = mp_check_same_device(devs, 3, x->storage->device, 0);
    if (st == MP_OK)
        st = mp_broadcast_shapes(x->shape, x->ndim, t->shape, t->ndim, shape, &nd);
    if (st == MP_OK && reduction != MP_RED_NONE && mp_tensor_numel(gout[0]) != 1)
        st = mp_error(MP_ERR_SHAPE, "loss backward: expected a one-element gradient");
    if (st == MP_OK && reduction == MP_RED_NONE)
        st = mp_loss_dense(gout[0], shape, nd, &gf);
    if (st == MP_OK)
        st = mp_loss_dense(x, shape, nd, &xf);
    if (st == MP_OK)
        st = mp_loss_dense(t, shape, nd, &tf);
    for (int i = 0; i < 2 && st == MP_OK; i++)
        if (n->next[i].node)
            st = pointwise_grad(n, i, xf, tf, gf ? gf : gout[0], gf != NULL, shape, nd,
                                &gin[i]);
    mp_tensor_decref(xf);
    mp_tensor_decref(tf);
    mp_tensor_decref(gf);
    return st;
}

/* The MP_KERNEL_LOSS kernel: buffers x, t and the n fp32 losses. */
typedef mp_loss_args loss_args;   /* shared/mp_kernel_args.h */

static mp_status run_loss(void *const *buf, const void *args, mp_msg *msg)
{
    const loss_args *a = args;
    const float *x = buf[0], *t = buf[1];
    float *p = buf[2], b = a->b;
    int64_t numel = a->n;
    (void)msg;
    switch (a->kind) {     /* one loop per kind, so each vectorises */
    case LOSS_MSE:
        for (int64_t i = 0; i < numel; i++)
            p[i] = loss_value(LOSS_MSE, x[i] - t[i], b);
        break;
    case LOSS_L1:
        for (int64_t i = 0; i < numel; i++)
            p[i] = loss_value(LOSS_L1, x[i] - t[i], b);
        break;
    default:
        for (int64_t i = 0; i < numel; i++)
            p[i] = loss_value(a->kind, x[i] - t[i], b);
        break;
    }
    return MP_OK;
}

static mp_status pointwise_forward(int kind, float b, mp_tensor *xf, mp_tensor *tf,
                                   int reduction, mp_dtype dt, mp_tensor **out)
{
    mp_tensor *l = NULL;
    mp_device dev = xf->storage->device;
    mp_status st = mp_tensor_empty(xf->shape, xf->ndim, MP_DTYPE_FLOAT32, dev, &l);
    if (st != MP_OK)
        return st;
    loss_args a = {mp_tensor_numel(l), kind, b};
    void *buf[3] = {mp_tensor_data(xf), mp_tensor_data(tf), mp_tensor_data(l)};
    int64_t nbytes[3] = {a.n * 4, a.n * 4, a.n * 4};
    st = mp_launch_bufs(dev, MP_KERNEL_LOSS, 3, buf, nbytes, run_loss, &a);
    if (st == MP_OK)
        st = mp_loss_reduce(l, reduction, (double)a.n, dt, out);
    mp_tensor_decref(l);
    return st;
}

static const char *const loss_names[4] = {"mse_loss", "l1_loss", "smooth_l1_loss",
                                          "huber_loss"};
static const char *const loss_nodes[4] = {"MseLossBackward0", "L1LossBackward0",
                                          "SmoothL1LossBackward0", "HuberLossBackward0"};

static mp_status pointwise_loss(int kind, mp_tensor *input, mp_tensor *target, int reduction,
                                double b, mp_tensor **out)
{
    const char *name = loss_names[kind];
    mp_tensor *ins[2] = {input, target}, *xf = NULL, *tf = NULL;
    mp_dtype dt = mp_result_type(ins, 2);
    int64_t shape[MP_MAX_DIMS];
    int nd;
    *out = NULL;
    mp_status st = mp_loss_check_reduction(reduction);
    if (st != MP_OK)
        return st;
    if (!mp_dtype_is_float(dt))
        return mp_error(MP_ERR_RUNTIME, "%s: expected floating point input and target, got %s "
                        "and %s", name, mp_dtype_torch_name(input->dtype),
                        mp_dtype_torch_name(target->dtype));
    if ((st = mp_check_same_device(ins, 2, input->storage->device, 0)) != MP_OK)
        return st;
    if ((st = mp_broadcast_shapes(input->shape, input->ndim, target->shape, target->ndim,
                                  shape, &nd)) != MP_OK)
        return st;
    if ((st = mp_loss_dense(input, shape, nd, &xf)) == MP_OK &&
        (st = mp_loss_dense(target, shape, nd, &tf)) == MP_OK)
        st = pointwise_forward(kind, (float)b, xf, tf, reduction, dt, out);
    mp_tensor_decref(xf);
    mp_tensor_decref(tf);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record(loss_nodes[kind], pointwise_backward, ins, 2, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = reduction;
        node->iargs[1] = kind;
        int64_t numel = 1;
        for (int d = 0; d < nd; d++)
            numel *= shape[d];
        node->fargs[0] = (double)numel;
        node->fargs[1] = b;
        if ((st = mp_node_save(node, 0, input)) == MP_OK)
            st = mp_node_save(node, 1, target);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

mp_status mp_op_mse_loss(mp_tensor *input, mp_tensor *target, int reduction, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_MSE_LOSS, mp_op_mse_loss(ac_[0], ac_[1], reduction, out), input,
                      target);
    return pointwise_loss(LOSS_MSE, input, target, reduction, 0.0, out);
}

mp_status mp_op_l1_loss(mp_tensor *input, mp_tensor *target, int reduction, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_L1_LOSS, mp_op_l1_loss(ac_[0], ac_[1], reduction, out), input,
                      target);
    return pointwise_loss(LOSS_L1, input, target, reduction, 0.0, out);
}

mp_status mp_op_smooth_l1_loss(mp_tensor *input, mp_tensor *target, int reduction,
                               double beta, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_SMOOTH_L1_LOSS,
                      mp_op_smooth_l1_loss(ac_[0], ac_[1], reduction, beta, out), input, target);
    *out = NULL;
    if (beta < 0.0)
        return mp_error(MP_ERR_RUNTIME, "smooth_l1_loss does not support negative values for "
                        "beta.");
    if (beta == 0.0)    /* torch: beta 0 is l1_loss (the quadratic piece is empty) */
        return pointwise_loss(LOSS_L1, input, target, reduction, 0.0, out);
    return pointwise_loss(LOSS_SMOOTH_L1, input, target, reduction, beta, out);
}

mp_status mp_op_huber_loss(mp_tensor *input, mp_tensor *target, int reduction, double delta,
                           mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_HUBER_LOSS,
                      mp_op_huber_loss(ac_[0], ac_[1], reduction, delta, out), input, target);
    *out = NULL;
    if (!(delta > 0.0))
        return mp_error(MP_ERR_RUNTIME, "huber_loss does not support non-positive values for "
                        "delta.");
    return pointwise_loss(LOSS_HUBER, input, target, reduction, delta, out);
}

/* ---- binary_cross_entropy_with_logits ---- */

/* log(sigmoid(x)) without overflow */
static float log_sigmoid(float x)
{
    return fminf(x, 0.0f) - log1pf(expf(-fabsf(x)));
}

typedef struct {
    const float *x, *t, *w, *pw;    /* dense fp32; w and pw may be NULL */
} bce_args;

/* loss = w * ((1 - t) * x - lw * log_sigmoid(x)), lw = 1 + (pw - 1) * t (torch's form) */
static void bce_loss(const bce_args *a, float *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float t = a->t[i], lw = a->pw ? 1.0f + (a->pw[i] - 1.0f) * t : 1.0f;
        float l = (1.0f - t) * a->x[i] - lw * log_sigmoid(a->x[i]);
        out[i] = a->w ? l * a->w[i] : l;
    }
}

/* d/dx = w * (lw * sigmoid(x) - pw * t) = w * ((1 - t) - lw * sigmoid(-x));
 * d/dt = w * (log_sigmoid(-x) - pw * log_sigmoid(x)) */
static void bce_grad(const bce_args *a, const float *g, float scale, int wrt_target, float *out,
                     int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float x = a->x[i], t = a->t[i], pw = a->pw ? a->pw[i] : 1.0f;
        float gi = (g ? g[i] : scale) * (a->w ? a->w[i] : 1.0f), d;
        if (wrt_target) {
            d = log_sigmoid(-x) - pw * log_sigmoid(x);
        } else {
            float lw = 1.0f + (pw - 1.0f) * t;
            d = (1.0f - t) - lw / (1.0f + expf(x));
        }
        out[i] = gi * d;
    }
}

typedef struct {
    mp_tensor *x, *t, *w, *pw, *g;
} bce_dense;

static void bce_dense_free(bce_dense *d)
{
    mp_tensor_decref(d->x);
    mp_tensor_decref(d->t);
    mp_tensor_decref(d->w);
    mp_tensor_decref(d->pw);
    mp_tensor_decref(d->g);
}

static mp_status bce_make_dense(mp_tensor *const *src, const int64_t *shape, int nd,
                                bce_dense *d, bce_args *a)
{
    mp_tensor **dst[5] = {&d->x, &d->t, &d->w, &d->pw, &d->g};
    mp_status st = MP_OK;
    for (int i = 0; i < 5 && st == MP_OK; i++)
        if (src[i])
            st = mp_loss_dense(src[i], shape, nd, dst[i]);
    if (st == MP_OK) {
        a->x = mp_tensor_data(d->x);
        a->t = mp_tensor_data(d->t);
        a->w = d->w ? mp_tensor_data(d->w) : NULL;
        a->pw = d->pw ? mp_tensor_data(d->pw) : NULL;
    }
    return st;
}

static mp_status bce_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *x = mp_node_saved(n, 0);
    if (!x)
        return MP_ERR_RUNTIME;
    int reduction = (int)n->iargs[0];
    mp_tensor *src[5] = {x, mp_node_saved(n, 1), mp_node_saved(n, 2), mp_node_saved(n, 3),
                         reduction == MP_RED_NONE ? gout[0] : NULL};
    bce_dense d = {NULL, NULL, NULL, NULL, NULL};
    bce_args a;
    float scale;
    mp_status st = mp_loss_grad_scale(gout[0], reduction, n->fargs[0], &scale);
    if (st == MP_OK)
        st = bce_make_dense(src, x->shape, x->ndim, &d, &a);
    for (int i = 0; i < 2 && st == MP_OK; i++) {
        if (!n->next[i].node)
            continue;
        st = mp_tensor_empty(x->shape, x->ndim, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &gin[i]);
        if (st == MP_OK)
            bce_grad(&a, d.g ? mp_tensor_data(d.g) : NULL, scale, i, mp_tensor_data(gin[i]),
                     mp_tensor_numel(x));
    }
    bce_dense_free(&d);
    return st;
}

static mp_status bce_check(mp_tensor *input, mp_tensor *target, mp_tensor *weight,
                           mp_tensor *pos_weight)
{
    char a[256], b[256];
    if (input->ndim != target->ndim ||
        memcmp(input->shape, target->shape, sizeof(int64_t) * (size_t)input->ndim) != 0) {
        mp_format_shape(a, sizeof a, target->shape, target->ndim);
        mp_format_shape(b, sizeof b, input->shape, input->ndim);
        return mp_error(MP_ERR_VALUE, "Target size (%s) must be the same as input size (%s)",
                        a, b);
    }
    mp_tensor *ins[2] = {input, target};
    if (!mp_dtype_is_float(mp_result_type(ins, 2)))
        return mp_error(MP_ERR_RUNTIME, "binary_cross_entropy_with_logits: expected floating "
                        "point input, got %s", mp_dtype_torch_name(input->dtype));
    mp_tensor *params[2] = {weight, pos_weight};
    static const char *const pnames[2] = {"weight", "pos_weight"};
    for (int i = 0; i < 2; i++) {
        if (!params[i])
            continue;
        if (params[i]->requires_grad && mp_grad_enabled())
            return mp_error(MP_ERR_RUNTIME, "The function 'binary_cross_entropy_with_logits' "
                            "is not differentiable with respect to argument '%s'. This input "
                            "cannot have requires_grad True.", pnames[i]);
        if (!mp_dtype_is_float(params[i]->dtype))
            return mp_error(MP_ERR_TYPE, "binary_cross_entropy_with_logits: %s must be a "
                            "floating point tensor, got %s", pnames[i],
                            mp_dtype_torch_name(params[i]->dtype));
        int64_t shape[MP_MAX_DIMS];
        int nd;
        mp_status st = mp_broadcast_shapes(input->shape, input->ndim, params[i]->shape,
                                           params[i]->ndim, shape, &nd);
        if (st == MP_OK && nd != input->ndim) {
            mp_format_shape(a, sizeof a, params[i]->shape, params[i]->ndim);
            mp_format_shape(b, sizeof b, input->shape, input->ndim);
            st = mp_error(MP_ERR_SHAPE, "binary_cross_entropy_with_logits: %s of shape %s "
                          "cannot be broadcast to the input size %s", pnames[i], a, b);
        }
        if (st != MP_OK)
            return st;
    }
    return MP_OK;
}

mp_status mp_op_bce_with_logits(mp_tensor *input, mp_tensor *target, mp_tensor *weight,
                                mp_tensor *pos_weight, int reduction, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_BCE_WITH_LOGITS,
                      mp_op_bce_with_logits(ac_[0], ac_[1], ac_[2], ac_[3], reduction, out),
                      input, target, weight, pos_weight);
    MP_HOST_ONLY("bce_with_logits", input, target, weight, pos_weight);
    *out = NULL;
    mp_status st = mp_loss_check_reduction(reduction);
    if (st == MP_OK)
        st = bce_check(input, target, weight, pos_weight);
    if (st != MP_OK)
        return st;
    mp_tensor *ins[2] = {input, target}, *src[5] = {input, target, weight, pos_weight, NULL};
    mp_tensor *l = NULL;
    bce_dense d = {NULL, NULL, NULL, NULL, NULL};
    bce_args a;
    int64_t numel = mp_tensor_numel(input);
    st = bce_make_dense(src, input->shape, input->ndim, &d, &a);
    if (st == MP_OK)
        st = mp_tensor_empty(input->shape, input->ndim, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &l);
    if (st == MP_OK) {
        bce_loss(&a, mp_tensor_data(l), numel);
        st = mp_loss_reduce(l, reduction, (double)numel, mp_result_type(ins, 2), out);
    }
    bce_dense_free(&d);
    mp_tensor_decref(l);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record("BinaryCrossEntropyWithLogitsBackward0", bce_backward, ins, 2,
                                out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = reduction;
        node->fargs[0] = (double)numel;
        for (int i = 0; i < 4 && st == MP_OK; i++)
            st = mp_node_save(node, i, src[i]);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
