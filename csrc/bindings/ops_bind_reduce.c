/* ops_bind_reduce.c - Python entry points of the reduce, softmax, layer_norm and loss ops (see
 * csrc/core/ops/ops.h): positional-only _C functions that mpamp/_ops_reduce.py wraps with torch's
 * signatures, keywords and Tensor methods. Here: argument conversion (dims, dtypes, optional
 * tensors) with torch-like messages, and the GIL released around kernels on large inputs. */
#include "bindings.h"

#include "../core/amp/autocast.h"
#include "../core/elementwise.h"
#include "../core/ops/ops.h"
#include "../core/view.h"

/* st = call, without the GIL when the input is large (core functions never touch Python). */
#define RUN(numel, st, call)                                                                 \
    do {                                                                                     \
        if ((numel) >= MP_NOGIL_NUMEL) {                                                     \
            Py_BEGIN_ALLOW_THREADS                                                           \
            st = (call);                                                                     \
            Py_END_ALLOW_THREADS                                                             \
        } else {                                                                             \
            st = (call);                                                                     \
        }                                                                                    \
    } while (0)

#define FN(f) (PyCFunction)(void (*)(void))(f)
#define STATE(m) mp_state_of_module(m)

static int nargs_is(Py_ssize_t nargs, Py_ssize_t want, const char *fname)
{
    if (nargs == want)
        return 0;
    PyErr_Format(PyExc_TypeError, "%s() takes %zd positional arguments (%zd given)", fname,
                 want, nargs);
    return -1;
}

static int tensor_arg(mp_state *s, PyObject *o, const char *fname, const char *arg, int pos,
                      mp_tensor **t)
{
    if (!mp_is_tensor(s, o)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' (position %d) must be Tensor, not "
                     "%.100s", fname, arg, pos, Py_TYPE(o)->tp_name);
        return -1;
    }
    *t = MP_T(o);
    return 0;
}

/* None -> NULL */
static int opt_tensor_arg(mp_state *s, PyObject *o, const char *fname, const char *arg,
                          mp_tensor **t)
{
    *t = NULL;
    if (o == Py_None)
        return 0;
    if (!mp_is_tensor(s, o)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be Tensor or None, not %.100s",
                     fname, arg, Py_TYPE(o)->tp_name);
        return -1;
    }
    *t = MP_T(o);
    return 0;
}

static int flag_arg(PyObject *o, int *out)
{
    int v = PyObject_IsTrue(o);
    if (v < 0)
        return -1;
    *out = v;
    return 0;
}

static int int_arg(PyObject *o, const char *fname, const char *arg, int *out)
{
    int64_t v;
    if (mp_parse_int64(o, fname, arg, &v) < 0)
        return -1;
    *out = (int)v;
    return 0;
}

/* None -> -1 (the op's default) */
static int dtype_arg(mp_state *s, PyObject *o, int *out)
{
    mp_dtype dt;
    *out = -1;
    if (o == Py_None)
        return 0;
    if (mp_parse_dtype(s, o, MP_DTYPE_FLOAT32, &dt) < 0)
        return -1;
    *out = (int)dt;
    return 0;
}

static int add_dim(PyObject *o, const char *fname, int ndim, uint32_t *mask)
{
    int64_t d;
    int w;
    if (PyBool_Check(o) || PyFloat_Check(o) || !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument 'dim' must be int or tuple of ints, "
                     "not %.100s", fname, Py_TYPE(o)->tp_name);
        return -1;
    }
    if (mp_parse_int64(o, fname, "dim", &d) < 0)
        return -1;
    mp_status st = mp_wrap_dim(d, ndim, &w);
    if (st != MP_OK)
        return mp_raise_int(st);
    if (*mask & (1u << w)) {
        PyErr_Format(PyExc_RuntimeError, "dim %d appears multiple times in the list of dims", w);
        return -1;
    }
    *mask |= 1u << w;
    return 0;
}

/* dim: None or an empty sequence (every dim), an int, or a sequence of ints -> bit mask */
static int dim_mask_arg(PyObject *dim, int ndim, const char *fname, uint32_t *mask)
{
    *mask = 0;
    if (dim == Py_None)
        goto all;
    if (PyTuple_Check(dim) || PyList_Check(dim)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(dim);
        if (n == 0)
            goto all;
        for (Py_ssize_t i = 0; i < n; i++)
            if (add_dim(PySequence_Fast_GET_ITEM(dim, i), fname, ndim, mask) < 0)
                return -1;
        return 0;
    }
    return add_dim(dim, fname, ndim, mask);
all:
    *mask = ndim >= 32 ? ~0u : (1u << ndim) - 1u;
    return 0;
}

/* ---- sum / mean ---- */

/* _reduce(kind, input, dim, keepdim, dtype): kind 0 sum, 1 mean */
static PyObject *f_reduce(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *a, *out = NULL;
    int kind, keepdim, dtype;
    uint32_t mask;
    if (nargs_is(nargs, 5, "_reduce") < 0 ||
        (kind = mp_op_choice(args[0], "_reduce", MP_OP_SUM, MP_OP_MEAN)) < 0)
        return NULL;
    const char *fname = kind ? "mean" : "sum";
    if (tensor_arg(s, args[1], fname, "input", 1, &a) < 0 ||
        dim_mask_arg(args[2], a->ndim, fname, &mask) < 0 || flag_arg(args[3], &keepdim) < 0 ||
        dtype_arg(s, args[4], &dtype) < 0)
        return NULL;
    mp_status st;
    if (kind)
        RUN(mp_tensor_numel(a), st, mp_op_mean(a, mask, keepdim, dtype, &out));
    else
        RUN(mp_tensor_numel(a), st, mp_op_sum(a, mask, keepdim, dtype, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* ---- max / argmax ---- */

/* _max(input, dim, keepdim): dim None -> the max of all elements; else (values, indices) */
static PyObject *f_max(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *a, *v = NULL, *i = NULL;
    int keepdim;
    int64_t dim;
    mp_status st;
    if (nargs_is(nargs, 3, "_max") < 0 || tensor_arg(s, args[0], "max", "input", 1, &a) < 0 ||
        flag_arg(args[2], &keepdim) < 0)
        return NULL;
    if (args[1] == Py_None) {
        RUN(mp_tensor_numel(a), st, mp_op_max_all(a, &v));
        return st == MP_OK ? mp_wrap(s, v) : mp_raise(st);
    }
    if (mp_parse_int64(args[1], "max", "dim", &dim) < 0)
        return NULL;
    RUN(mp_tensor_numel(a), st, mp_op_max_dim(a, dim, keepdim, &v, &i));
    if (st != MP_OK)
        return mp_raise(st);
    PyObject *pv = mp_wrap(s, v), *pi = pv ? mp_wrap(s, i) : NULL;
    if (!pv || !pi) {
        if (!pv)
            mp_tensor_decref(i);
        Py_XDECREF(pv);
        return NULL;
    }
    PyObject *tup = PyTuple_Pack(2, pv, pi);
    Py_DECREF(pv);
    Py_DECREF(pi);
    return tup;
}

/* _argmax(input, dim, keepdim) */
static PyObject *f_argmax(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *a, *out = NULL;
    int keepdim, has_dim;
    int64_t dim = 0;
    mp_status st;
    if (nargs_is(nargs, 3, "_argmax") < 0 ||
        tensor_arg(s, args[0], "argmax", "input", 1, &a) < 0 || flag_arg(args[2], &keepdim) < 0)
        return NULL;
    has_dim = args[1] != Py_None;
    if (has_dim && mp_parse_int64(args[1], "argmax", "dim", &dim) < 0)
        return NULL;
    RUN(mp_tensor_numel(a), st, mp_op_argmax(a, has_dim, dim, keepdim, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* ---- softmax / layer_norm ---- */

/* _softmax(input, dim, log, dtype): dtype casts the input first, as torch */
static PyObject *f_softmax(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *a, *src = NULL, *out = NULL;
    int log, dtype;
    int64_t dim;
    if (nargs_is(nargs, 4, "_softmax") < 0 || flag_arg(args[2], &log) < 0)
        return NULL;
    const char *fname = log ? "log_softmax" : "softmax";
    if (tensor_arg(s, args[0], fname, "input", 1, &a) < 0 ||
        mp_parse_int64(args[1], fname, "dim", &dim) < 0 || dtype_arg(s, args[3], &dtype) < 0)
        return NULL;
    mp_status st = MP_OK;
    if (dtype >= 0)         /* an explicit dtype= call is not autocast, as torch */
        RUN(mp_tensor_numel(a), st, mp_op_to_dtype(a, (mp_dtype)dtype, 0, &src));
    if (st == MP_OK && src) {
        mp_autocast_exclude();
        RUN(mp_tensor_numel(a), st, mp_op_softmax(src, dim, log, &out));
        mp_autocast_include();
    } else if (st == MP_OK) {
        RUN(mp_tensor_numel(a), st, mp_op_softmax(a, dim, log, &out));
    }
    mp_tensor_decref(src);
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* _layer_norm(input, normalized_shape, weight, bias, eps) */
static PyObject *f_layer_norm(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *a, *w, *b, *out = NULL;
    int64_t ns[MP_MAX_DIMS];
    int n;
    const char *fname = "layer_norm";
    if (nargs_is(nargs, 5, "_layer_norm") < 0 ||
        tensor_arg(s, args[0], fname, "input", 1, &a) < 0 ||
        opt_tensor_arg(s, args[2], fname, "weight", &w) < 0 ||
        opt_tensor_arg(s, args[3], fname, "bias", &b) < 0)
        return NULL;
    if (PyIndex_Check(args[1]) && !PyBool_Check(args[1])) {   /* an int, as nn.LayerNorm */
        n = 1;
        if (mp_parse_int64(args[1], fname, "normalized_shape", &ns[0]) < 0)
            return NULL;
    } else if (mp_parse_shape_obj(args[1], fname, ns, &n) < 0) {
        return NULL;
    }
    double eps = PyFloat_AsDouble(args[4]);
    if (eps == -1.0 && PyErr_Occurred())
        return NULL;
    mp_tensor *ts[3] = {a, w, b};
    mp_status st;
    RUN(mp_tensor_numel(a), st, mp_op_layer_norm(ts[0], ns, n, ts[1], ts[2], eps, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* ---- losses; reduction arrives as 0 none, 1 mean, 2 sum (parsed in Python) ---- */

/* _pointwise_loss(op, input, target, reduction): op the id of mse_loss or l1_loss */
static PyObject *f_pointwise_loss(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *x, *t, *out = NULL;
    int kind, red;
    if (nargs_is(nargs, 4, "_pointwise_loss") < 0 ||
        (kind = mp_op_choice(args[0], "_pointwise_loss", MP_OP_MSE_LOSS, MP_OP_L1_LOSS)) < 0)
        return NULL;
    const char *fname = kind ? "l1_loss" : "mse_loss";
    if (tensor_arg(s, args[1], fname, "input", 1, &x) < 0 ||
        tensor_arg(s, args[2], fname, "target", 2, &t) < 0 ||
        int_arg(args[3], fname, "reduction", &red) < 0)
        return NULL;
    mp_tensor *ts[2] = {x, t};
    mp_status st;
    RUN(mp_tensor_numel(x), st, kind ? mp_op_l1_loss(ts[0], ts[1], red, &out)
                                     : mp_op_mse_loss(ts[0], ts[1], red, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* _nll_loss(input, target, weight, ignore_index, reduction, label_smoothing, log_softmax):
 * with log_softmax true this is cross_entropy */
static PyObject *f_nll_loss(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *x, *t, *w, *out = NULL;
    int red, ce;
    int64_t ignore;
    if (nargs_is(nargs, 7, "_nll_loss") < 0 || flag_arg(args[6], &ce) < 0)
        return NULL;
    const char *fname = ce ? "cross_entropy" : "nll_loss";
    if (tensor_arg(s, args[0], fname, "input", 1, &x) < 0 ||
        tensor_arg(s, args[1], fname, "target", 2, &t) < 0 ||
        opt_tensor_arg(s, args[2], fname, "weight", &w) < 0 ||
        mp_parse_int64(args[3], fname, "ignore_index", &ignore) < 0 ||
        int_arg(args[4], fname, "reduction", &red) < 0)
        return NULL;
    double ls = PyFloat_AsDouble(args[5]);
    if (ls == -1.0 && PyErr_Occurred())
        return NULL;
    mp_tensor *ts[3] = {x, t, w};
    mp_status st;
    RUN(mp_tensor_numel(x), st, ce ? mp_op_cross_entropy(ts[0], ts[1], ts[2], ignore, red, ls,
                                                          &out)
                                   : mp_op_nll_loss(ts[0], ts[1], ts[2], ignore, red, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* _bce_with_logits(input, target, weight, pos_weight, reduction) */
static PyObject *f_bce_with_logits(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *x, *t, *w, *pw, *out = NULL;
    int red;
    const char *fname = "binary_cross_entropy_with_logits";
    if (nargs_is(nargs, 5, "_bce_with_logits") < 0 ||
        tensor_arg(s, args[0], fname, "input", 1, &x) < 0 ||
        tensor_arg(s, args[1], fname, "target", 2, &t) < 0 ||
        opt_tensor_arg(s, args[2], fname, "weight", &w) < 0 ||
        opt_tensor_arg(s, args[3], fname, "pos_weight", &pw) < 0 ||
        int_arg(args[4], fname, "reduction", &red) < 0)
        return NULL;
    mp_tensor *ts[4] = {x, t, w, pw};
    mp_status st;
    RUN(mp_tensor_numel(x), st, mp_op_bce_with_logits(ts[0], ts[1], ts[2], ts[3], red, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

PyMethodDef mp_reduce_functions[] = {
    {"_reduce", FN(f_reduce), METH_FASTCALL, "_reduce(op, input, dim, keepdim, dtype): op the id (_C.op_ids) of sum or mean"},
    {"_max", FN(f_max), METH_FASTCALL, "_max(input, dim, keepdim)"},
    {"_argmax", FN(f_argmax), METH_FASTCALL, "_argmax(input, dim, keepdim)"},
    {"_softmax", FN(f_softmax), METH_FASTCALL, "_softmax(input, dim, log, dtype)"},
    {"_layer_norm", FN(f_layer_norm), METH_FASTCALL,
     "_layer_norm(input, normalized_shape, weight, bias, eps)"},
    {"_pointwise_loss", FN(f_pointwise_loss), METH_FASTCALL,
     "_pointwise_loss(op, input, target, reduction): op the id (_C.op_ids) of mse_loss or l1_loss"},
    {"_nll_loss", FN(f_nll_loss), METH_FASTCALL,
     "_nll_loss(input, target, weight, ignore_index, reduction, label_smoothing, "
     "log_softmax)"},
    {"_bce_with_logits", FN(f_bce_with_logits), METH_FASTCALL,
     "_bce_with_logits(input, target, weight, pos_weight, reduction)"},
    {NULL, NULL, 0, NULL},
};

/* Tensor methods with keyword arguments are attached in mpamp/_ops_reduce.py. */
PyMethodDef mp_tensor_reduce_methods[] = {
    {NULL, NULL, 0, NULL},
};
