/* ops_activation.c - the activations with a parameter: leaky_relu(negative_slope) and
 * softplus(beta, threshold), with backward. Elementwise through mp_map (fp32 math, output in
 * the input dtype); float inputs only, as torch's CPU kernels. The in-place leaky_relu_ goes
 * through mp_inplace_commit like every in-place op. */
#include <math.h>

#include "../amp/autocast.h"
#include "../elementwise.h"
#include "../backend.h"
#include "ops.h"
#include "../rows.h"

/* args: slope */
static void leaky_map(const float *const *in, float *out, int64_t n, const double *args)
{
    const float *in0_ = in[0];
    float s = (float)args[0];
    for (int64_t i = 0; i < n; i++)
        out[i] = in0_[i] > 0.0f ? in0_[i] : in0_[i] * s;
}

/* in: grad, x */
static void leaky_grad_map(const float *const *in, float *out, int64_t n, const double *args)
{
    const float *in0_ = in[0];
    const float *in1_ = in[1];
    float s = (float)args[0];
    for (int64_t i = 0; i < n; i++)
        out[i] = in1_[i] > 0.0f ? in0_[i] : in0_[i] * s;
}

/* torch: x * beta > threshold gives x, else log1p(exp(x * beta)) / beta */
static void softplus_map(const float *const *in, float *out, int64_t n, const double *args)
{
    const float *in0_ = in[0];
    float beta = (float)args[0], th = (float)args[1];
    for (int64_t i = 0; i < n; i++) {
        float bx = in0_[i] * beta;
        out[i] = bx > th ? in0_[i] : log1pf(expf(bx)) / beta;
    }
}

/* d/dx = sigmoid(beta * x) = z / (z + 1), z = exp(beta * x); 1 above the threshold */
static void softplus_grad_map(const float *const *in, float *out, int64_t n,
                              const double *args)
{
    const float *in0_ = in[0];
    const float *in1_ = in[1];
    float beta = (float)args[0], th = (float)args[1];
    for (int64_t i = 0; i < n; i++) {
        float bx = in1_[i] * beta, z = expf(bx);
        out[i] = bx > th ? in0_[i] : in0_[i] * z / (z + 1.0f);
    }
}

static mp_status act_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *x = mp_node_saved(n, 0);
    if (!x)
        return MP_ERR_RUNTIME;
    mp_tensor *ins[2] = {gout[0], x};
    mp_status st = mp_tensor_empty(x->shape, x->ndim, MP_DTYPE_FLOAT32, x->storage->device,
                                   &gin[0]);
    if (st != MP_OK)
        return st;
    return mp_map(gin[0], ins, 2, n->iargs[0] ? softplus_grad_map : leaky_grad_map, n->fargs);
}

/* kind 0: leaky_relu(args[0] = slope); kind 1: softplus(args = beta, threshold) */
static mp_status activation(int kind, mp_tensor *a, const double *args, mp_tensor **out)
{
    static const char *const kernels[2] = {"leaky_relu_cpu", "softplus_cpu"};
    *out = NULL;
    if (!mp_dtype_is_float(a->dtype))
        return mp_error(MP_ERR_TYPE, "\"%s\" not implemented for '%s'", kernels[kind],
                        mp_dtype_torch_name(a->dtype));
    mp_status st = mp_tensor_empty(a->shape, a->ndim, a->dtype, a->storage->device, out);
    if (st == MP_OK)
        st = mp_map(*out, &a, 1, kind ? softplus_map : leaky_map, args);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record(kind ? "SoftplusBackward0" : "LeakyReluBackward0",
                                act_backward, &a, 1, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = kind;
        node->fargs[0] = args[0];
        node->fargs[1] = kind ? args[1] : 0.0;
        st = mp_node_save(node, 0, a);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

mp_status mp_op_leaky_relu(mp_tensor *a, double negative_slope, mp_tensor **out)
{
    double args[1] = {negative_slope};
    return activation(0, a, args, out);
}

mp_status mp_op_softplus(mp_tensor *a, double beta, double threshold, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_SOFTPLUS, mp_op_softplus(ac_[0], beta, threshold, out), a);
    double args[2] = {beta, threshold};
    return activation(1, a, args, out);
}

mp_status mp_op_leaky_relu_(mp_tensor *a, double negative_slope)
{
    mp_tensor *res = NULL;
    mp_status st = mp_check_inplace(a, "leaky_relu_");
    if (st == MP_OK)
        st = mp_op_leaky_relu(a, negative_slope, &res);
    if (st == MP_OK)
        st = mp_inplace_commit(a, res, "leaky_relu_");
    mp_tensor_decref(res);
    return st;
}
