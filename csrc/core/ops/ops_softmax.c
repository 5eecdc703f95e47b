/* ops_softmax.c - softmax and log_softmax along one dim, and their backward. Each row along
 * the dim (rows.h) is processed in fp32 with the CPU's vector kernels (cpu/vmath.h): the row
 * max, exponentiate and sum (in double) in one pass, then scale or subtract; the results are
 * the same on every ISA level. A NaN anywhere in a row makes the whole row NaN, as torch; the
 * output has the input dtype. */
#include <math.h>

#include "../amp/autocast.h"
#include "../../cpu/dispatch.h"
#include "../backend.h"
#include "ops.h"
#include "../rows.h"
#include "../view.h"

typedef struct {
    int log_form;
    const mp_vmath *vm;
} softmax_ctx;

static void softmax_row(const float *const *in, float *out, int64_t len, int64_t row,
                        void *vctx)
{
    (void)row;
    const softmax_ctx *c = vctx;
    const float *x = in[0];
    float m = c->vm->max(x, (size_t)len);
    /* a NaN is passed over by max but makes e^(NaN - m), hence the sum, NaN */
    double s = c->vm->exp_sum(x, m, out, (size_t)len);
    if (c->log_form) {
        float ls = (float)log(s);
        for (int64_t i = 0; i < len; i++)
            out[i] = (x[i] - m) - ls;
    } else {
        float inv = (float)(1.0 / s);
        for (int64_t i = 0; i < len; i++)
            out[i] *= inv;
    }
}

/* softmax: dx = y * (g - sum(g * y)); log_softmax: dx = g - exp(y) * sum(g) */
static void softmax_grad_row(const float *const *in, float *out, int64_t len, int64_t row,
                             void *vctx)
{
    (void)row;
    const softmax_ctx *c = vctx;
    const float *g = in[0], *y = in[1];
    if (c->log_form) {
        float s = (float)c->vm->sum(g, (size_t)len);
        c->vm->map[MP_VM_EXP](y, out, (size_t)len);
        for (int64_t i = 0; i < len; i++)
            out[i] = g[i] - out[i] * s;
    } else {
        float s = (float)c->vm->dot(g, y, (size_t)len);
        for (int64_t i = 0; i < len; i++)
            out[i] = y[i] * (g[i] - s);
    }
}

static mp_status softmax_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *y = mp_node_saved(n, 0);
    if (!y)
        return MP_ERR_RUNTIME;
    softmax_ctx c = {(int)n->iargs[1], &mp_cpu()->vm};
    mp_tensor *ins[2] = {gout[0], y};
    mp_dtype dt = mp_dtype_is_float(gout[0]->dtype) ? gout[0]->dtype : MP_DTYPE_FLOAT32;
    return mp_rows_map(ins, 2, (int)n->iargs[0], dt, softmax_grad_row, &c, &gin[0]);
}

mp_status mp_op_softmax(mp_tensor *a, int64_t dim, int log, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(log ? MP_OP_LOG_SOFTMAX : MP_OP_SOFTMAX,
                      mp_op_softmax(ac_[0], dim, log, out), a);
    *out = NULL;
    int d, log_form = log != 0;
    if (!mp_dtype_is_float(a->dtype))
        return mp_error(MP_ERR_RUNTIME, "\"%s\" not implemented for '%s'", log_form ?
                        "log_softmax_lastdim_kernel_impl" : "softmax_lastdim_kernel_impl",
                        mp_dtype_torch_name(a->dtype));
    mp_status st = mp_wrap_dim(dim, a->ndim, &d);
    if (st != MP_OK)
        return st;
    if (a->ndim == 0)
        d = 0;
    softmax_ctx c = {log_form, &mp_cpu()->vm};
    st = mp_rows_map(&a, 1, d, a->dtype, softmax_row, &c, out);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record(log_form ? "LogSoftmaxBackward0" : "SoftmaxBackward0",
                                softmax_backward, &a, 1, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = d;
        node->iargs[1] = log_form;
        st = mp_node_save(node, 0, *out);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
