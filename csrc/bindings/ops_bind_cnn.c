/* ops_bind_cnn.c - Python entry points of the CNN ops (csrc/core/ops/ops_cnn.h): _C._conv,
 * _C._max_pool, _C._avg_pool, _C._adaptive_avg_pool, _C._batch_norm, _C._group_norm, which
 * mpamp/nn/_functional_cnn.py wraps with torch's signatures. Here: int-or-tuple arguments
 * expanded to one value per spatial dim with torch's messages, padding strings, torch's
 * NotImplementedError for integer inputs, and the GIL released around large kernels (the
 * core entries apply autocast). */
#include "bindings.h"

#include "../core/ops/ops_cnn.h"
#include "../core/rows.h"

#define FN(f) (PyCFunction)(void (*)(void))(f)

#define RUN(big, st, call)                                                                   \
    do {                                                                                     \
        if (big) {                                                                           \
            Py_BEGIN_ALLOW_THREADS                                                           \
            st = (call);                                                                     \
            Py_END_ALLOW_THREADS                                                             \
        } else {                                                                             \
            st = (call);                                                                     \
        }                                                                                    \
    } while (0)

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
    *out = v > 0;
    return v < 0 ? -1 : 0;
}

static int double_arg(PyObject *o, const char *fname, const char *arg, double *out)
{
    if (!PyFloat_Check(o) && !PyLong_Check(o) && !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be float, not %.100s", fname,
                     arg, Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = PyFloat_AsDouble(o);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* o: an int, or a sequence of 1 or n ints (None elements -> MP_POOL_KEEP when allow_none).
 * Returns 0, -1 with an exception set, or -2 when the length is wrong (caller's message). */
static int int_list(PyObject *o, int n, const char *fname, const char *arg, int allow_none,
                    int64_t *out)
{
    if (PyLong_Check(o) || (PyIndex_Check(o) && !PyFloat_Check(o) && !PySequence_Check(o))) {
        if (mp_parse_int64(o, fname, arg, &out[0]) < 0)
            return -1;
        for (int i = 1; i < n; i++)
            out[i] = out[0];
        return 0;
    }
    PyObject *fast = PyList_Check(o) || PyTuple_Check(o) ? PySequence_Fast(o, "") : NULL;
    if (!fast) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be an int or a tuple of ints, "
                     "not %.100s", fname, arg, Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_ssize_t k = PySequence_Fast_GET_SIZE(fast);
    int rc = k == 1 || k == n ? 0 : -2;
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        PyObject *e = PySequence_Fast_GET_ITEM(fast, k == 1 ? 0 : i);
        if (allow_none && e == Py_None)
            out[i] = MP_POOL_KEEP;
        else if (mp_parse_int64(e, fname, arg, &out[i]) < 0)
            rc = -1;
    }
    Py_DECREF(fast);
    return rc;
}

/* "[1, 2, 3]" of a sequence of ints (best effort, for messages) */
static void seq_text(PyObject *o, char *buf, size_t cap)
{
    PyObject *l = PySequence_List(o);
    PyObject *r = l ? PyObject_Repr(l) : NULL;
    const char *t = r ? PyUnicode_AsUTF8(r) : NULL;
    snprintf(buf, cap, "%s", t ? t : "?");
    if (!t)
        PyErr_Clear();
    Py_XDECREF(r);
    Py_XDECREF(l);
}

static PyObject *not_implemented(const char *kernel, mp_tensor *x)
{
    PyErr_Format(PyExc_NotImplementedError, "\"%s\" not implemented for '%s'", kernel,
                 mp_dtype_torch_name(x->dtype));
    return NULL;
}

static int is_big(mp_tensor *a) { return mp_tensor_numel(a) >= MP_NOGIL_NUMEL / 4; }

/* ---- convolution ---- */

static int conv_list(PyObject *o, int nsp, const char *fname, const char *arg, int64_t *out)
{
    int rc = int_list(o, nsp, fname, arg, 0, out);
    if (rc == -2) {
        char s[256];
        seq_text(o, s, sizeof s);
        PyErr_Format(PyExc_RuntimeError, "expected %s to be a single integer value or a list "
                     "of %d values to match the convolution dimensions, but got %s=%s", arg,
                     nsp, arg, s);
    }
    return rc < 0 ? -1 : 0;
}

/* padding: an int/tuple, or "same" / "valid" */
static int conv_padding(PyObject *o, int nsp, const char *fname, int64_t *pad, int *same)
{
    *same = 0;
    if (!PyUnicode_Check(o))
        return conv_list(o, nsp, fname, "padding", pad);
    const char *t = PyUnicode_AsUTF8(o);
    if (!t)
        return -1;
    for (int i = 0; i < nsp; i++)
        pad[i] = 0;
    if (strcmp(t, "same") == 0)
        *same = 1;
    else if (strcmp(t, "valid") != 0) {
        PyErr_Format(PyExc_RuntimeError, "Invalid padding string: '%s'", t);
        return -1;
    }
    return 0;
}

static mp_status conv_call(mp_tensor **args, int nsp, const int64_t *st_, const int64_t *pad,
                           int same, const int64_t *dil, int64_t groups, int mode,
                           mp_tensor **out)
{
    return mp_op_conv(args[0], args[1], args[2], nsp, st_, pad, same, dil, groups, mode, out);
}

/* _conv(input, weight, bias, stride, padding, dilation, groups, nsp, padding_mode) */
static PyObject *f_conv(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_tensor *t[3], *out = NULL;
    int64_t stride[2], pad[2], dil[2], groups, nsp, mode;
    int same;
    if (nargs_is(nargs, 9, "_conv") < 0 || mp_parse_int64(args[7], "_conv", "nsp", &nsp) < 0)
        return NULL;
    const char *fname = nsp == 1 ? "conv1d" : "conv2d";
    if ((nsp != 1 && nsp != 2) || tensor_arg(s, args[0], fname, "input", 1, &t[0]) < 0 ||
        tensor_arg(s, args[1], fname, "weight", 2, &t[1]) < 0 ||
        opt_tensor_arg(s, args[2], fname, "bias", &t[2]) < 0 ||
        conv_list(args[3], (int)nsp, fname, "stride", stride) < 0 ||
        conv_padding(args[4], (int)nsp, fname, pad, &same) < 0 ||
        conv_list(args[5], (int)nsp, fname, "dilation", dil) < 0 ||
        mp_parse_int64(args[6], fname, "groups", &groups) < 0 ||
        mp_parse_int64(args[8], fname, "padding_mode", &mode) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "_conv: nsp must be 1 or 2");
        return NULL;
    }
    if (!mp_dtype_is_float(t[0]->dtype))
        return not_implemented("slow_conv2d_cpu", t[0]);
    mp_status st;
    RUN(is_big(t[0]), st, conv_call(t, (int)nsp, stride, pad, same, dil, groups, (int)mode,
                                    &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* ---- pooling ---- */

enum { STYLE_2D, STYLE_MAX1D, STYLE_1D };

/* An int or a tuple of 1 or nsp ints; None (and, for stride, an empty tuple) gives dflt. */
static int pool_list(PyObject *o, int nsp, const char *fname, const char *arg, int style,
                     const int64_t *dflt, int64_t *out)
{
    if (dflt && (o == Py_None || ((PyTuple_Check(o) || PyList_Check(o)) &&
                                  PySequence_Size(o) == 0))) {
        memcpy(out, dflt, sizeof(int64_t) * (size_t)nsp);
        return 0;
    }
    int rc = int_list(o, nsp, fname, arg, 0, out);
    if (rc != -2)
        return rc;
    Py_ssize_t n = PySequence_Size(o);
    if (style == STYLE_MAX1D)
        PyErr_Format(PyExc_RuntimeError, "%s() %s must be an int, list of ints or tuple of ints "
                     "of size 1 but got size %zd", fname, arg, n);
    else if (style == STYLE_1D)
        PyErr_Format(PyExc_RuntimeError, "%s() argument '%s' should contain one int (got %zd)",
                     fname, arg, n);
    else if (strcmp(arg, "stride") == 0)
        PyErr_Format(PyExc_RuntimeError, "%s: stride must either be omitted, a single int, or a "
                     "tuple of two ints", fname);
    else if (strcmp(arg, "dilation") == 0)
        PyErr_Format(PyExc_RuntimeError, "%s: dilation must be either a single int, or a tuple "
                     "of two ints", fname);
    else
        PyErr_Format(PyExc_RuntimeError, "%s: %s must either be a single int, or a tuple of two "
                     "ints", fname, arg);
    return -1;
}

static int nsp_arg(PyObject *o, const char *fname, int *nsp)
{
    int64_t v;
    if (mp_parse_int64(o, fname, "nsp", &v) < 0)
        return -1;
    if (v != 1 && v != 2) {
        PyErr_Format(PyExc_ValueError, "%s: nsp must be 1 or 2", fname);
        return -1;
    }
    *nsp = (int)v;
    return 0;
}

/* 2-d max pooling of uint8 through float32, which holds every byte exactly (a uint8 tensor
 * never requires grad, so nothing is recorded) */
static mp_status max_pool_bytes(mp_tensor *x, const int64_t *k, const int64_t *st_,
                                const int64_t *pad, const int64_t *dil, int ceil,
                                mp_tensor **out, mp_tensor **idx)
{
    mp_tensor *xf = NULL, *of = NULL;
    mp_status st = mp_tensor_cast(x, MP_DTYPE_FLOAT32, &xf);
    if (st == MP_OK)
        st = mp_op_max_pool(xf, 2, k, st_, pad, dil, ceil, &of, idx);
    if (st == MP_OK && (st = mp_tensor_cast(of, MP_DTYPE_UINT8, out)) != MP_OK) {
        mp_tensor_decref(*idx);
        *idx = NULL;
    }
    mp_tensor_decref(xf);
    mp_tensor_decref(of);
    return st;
}

/* _max_pool(input, nsp, kernel_size, stride, padding, dilation, ceil_mode, return_indices) */
static PyObject *f_max_pool(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_tensor *x, *out = NULL, *idx = NULL;
    int64_t k[2], st_[2], pad[2], dil[2];
    int nsp, ceil, want;
    if (nargs_is(nargs, 8, "_max_pool") < 0 || nsp_arg(args[1], "_max_pool", &nsp) < 0)
        return NULL;
    const char *fname = nsp == 1 ? "max_pool1d" : "max_pool2d";
    int style = nsp == 1 ? STYLE_MAX1D : STYLE_2D;
    if (tensor_arg(s, args[0], fname, "input", 1, &x) < 0 ||
        pool_list(args[2], nsp, fname, "kernel_size", style, NULL, k) < 0 ||
        pool_list(args[3], nsp, fname, "stride", style, k, st_) < 0 ||
        pool_list(args[4], nsp, fname, "padding", style, NULL, pad) < 0 ||
        pool_list(args[5], nsp, fname, "dilation", style, NULL, dil) < 0 ||
        flag_arg(args[6], &ceil) < 0 || flag_arg(args[7], &want) < 0)
        return NULL;
    int bytes = x->dtype == MP_DTYPE_UINT8 && nsp == 2;    /* torch's 2-d kernel has uint8 */
    if (!mp_dtype_is_float(x->dtype) && !bytes)
        return not_implemented(fname, x);
    mp_status st;
    RUN(is_big(x), st, bytes ? max_pool_bytes(x, k, st_, pad, dil, ceil, &out, &idx)
                             : mp_op_max_pool(x, nsp, k, st_, pad, dil, ceil, &out, &idx));
    if (st != MP_OK)
        return mp_raise(st);
    PyObject *y = mp_wrap(s, out);
    if (!want || !y) {
        mp_tensor_decref(idx);
        return y;
    }
    PyObject *i = mp_wrap(s, idx);
    return i ? Py_BuildValue("(NN)", y, i) : (Py_DECREF(y), NULL);
}

/* _avg_pool(input, nsp, kernel_size, stride, padding, ceil_mode, count_include_pad,
 *           divisor_override) */
static PyObject *f_avg_pool(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_tensor *x, *out = NULL;
    int64_t k[2], st_[2], pad[2], div = 0;
    int nsp, ceil, cip;
    if (nargs_is(nargs, 8, "_avg_pool") < 0 || nsp_arg(args[1], "_avg_pool", &nsp) < 0)
        return NULL;
    const char *fname = nsp == 1 ? "avg_pool1d" : "avg_pool2d";
    int style = nsp == 1 ? STYLE_1D : STYLE_2D;
    if (tensor_arg(s, args[0], fname, "input", 1, &x) < 0 ||
        pool_list(args[2], nsp, fname, "kernel_size", style, NULL, k) < 0 ||
        pool_list(args[3], nsp, fname, "stride", style, k, st_) < 0 ||
        pool_list(args[4], nsp, fname, "padding", style, NULL, pad) < 0 ||
        flag_arg(args[5], &ceil) < 0 || flag_arg(args[6], &cip) < 0 ||
        (args[7] != Py_None && mp_parse_int64(args[7], fname, "divisor_override", &div) < 0))
        return NULL;
    if (args[7] != Py_None && div == 0) {
        PyErr_SetString(PyExc_RuntimeError, "divisor must be not zero");
        return NULL;
    }
    if (!mp_dtype_is_float(x->dtype))
        return not_implemented(fname, x);
    mp_status st;
    RUN(is_big(x), st, mp_op_avg_pool(x, nsp, k, st_, pad, ceil, cip, div, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* _adaptive_avg_pool(input, nsp, output_size): None entries keep the input size */
static PyObject *f_adaptive_avg_pool(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_tensor *x, *out = NULL;
    int64_t os[2];
    int nsp;
    if (nargs_is(nargs, 3, "_adaptive_avg_pool") < 0 ||
        nsp_arg(args[1], "_adaptive_avg_pool", &nsp) < 0)
        return NULL;
    const char *fname = nsp == 1 ? "adaptive_avg_pool1d" : "adaptive_avg_pool2d";
    if (tensor_arg(s, args[0], fname, "input", 1, &x) < 0)
        return NULL;
    int rc = 0;
    if (args[2] == Py_None)
        os[0] = os[1] = MP_POOL_KEEP;
    else if ((rc = int_list(args[2], nsp, fname, "output_size", 1, os)) == 0 && nsp == 2 &&
             (PyTuple_Check(args[2]) || PyList_Check(args[2])) && PySequence_Size(args[2]) != 2)
        rc = -2;
    if (rc == -2 && nsp == 1)
        PyErr_Format(PyExc_RuntimeError, "adaptive_avg_pool1d() argument 'output_size' should "
                     "contain one int (got %zd)", PySequence_Size(args[2]));
    else if (rc == -2)
        PyErr_SetString(PyExc_RuntimeError, "adaptive_avg_pool2d: output_size must be 2");
    if (rc < 0)
        return NULL;
    if (!mp_dtype_is_float(x->dtype))
        return not_implemented(fname, x);
    mp_status st;
    RUN(is_big(x), st, mp_op_adaptive_avg_pool(x, nsp, os, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* ---- normalisation ---- */

/* _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps) */
static PyObject *f_batch_norm(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_tensor *x, *rm, *rv, *w, *b, *out = NULL;
    int training;
    double momentum, eps;
    const char *fn = "batch_norm";
    if (nargs_is(nargs, 8, "_batch_norm") < 0 ||
        tensor_arg(s, args[0], fn, "input", 1, &x) < 0 ||
        opt_tensor_arg(s, args[1], fn, "running_mean", &rm) < 0 ||
        opt_tensor_arg(s, args[2], fn, "running_var", &rv) < 0 ||
        opt_tensor_arg(s, args[3], fn, "weight", &w) < 0 ||
        opt_tensor_arg(s, args[4], fn, "bias", &b) < 0 || flag_arg(args[5], &training) < 0 ||
        double_arg(args[6], fn, "momentum", &momentum) < 0 ||
        double_arg(args[7], fn, "eps", &eps) < 0)
        return NULL;
    if (!mp_dtype_is_float(x->dtype))
        return not_implemented(fn, x);
    mp_status st;
    RUN(is_big(x), st, mp_op_batch_norm(x, w, b, rm, rv, training, momentum, eps, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

static mp_status group_norm_call(mp_tensor **args, int64_t groups, double eps, mp_tensor **out)
{
    return mp_op_group_norm(args[0], groups, args[1], args[2], eps, out);
}

/* _group_norm(input, num_groups, weight, bias, eps) */
static PyObject *f_group_norm(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_tensor *t[3], *out = NULL;
    int64_t groups;
    double eps;
    const char *fn = "group_norm";
    if (nargs_is(nargs, 5, "_group_norm") < 0 ||
        tensor_arg(s, args[0], fn, "input", 1, &t[0]) < 0 ||
        mp_parse_int64(args[1], fn, "num_groups", &groups) < 0 ||
        opt_tensor_arg(s, args[2], fn, "weight", &t[1]) < 0 ||
        opt_tensor_arg(s, args[3], fn, "bias", &t[2]) < 0 ||
        double_arg(args[4], fn, "eps", &eps) < 0)
        return NULL;
    if (!mp_dtype_is_float(t[0]->dtype))
        return not_implemented(fn, t[0]);
    mp_status st;
    RUN(is_big(t[0]), st, group_norm_call(t, groups, eps, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

PyMethodDef mp_cnn_functions[] = {
    {"_batch_norm", FN(f_batch_norm), METH_FASTCALL,
     "_batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)"},
    {"_group_norm", FN(f_group_norm), METH_FASTCALL,
     "_group_norm(input, num_groups, weight, bias, eps)"},
    {"_max_pool", FN(f_max_pool), METH_FASTCALL,
     "_max_pool(input, nsp, kernel_size, stride, padding, dilation, ceil_mode, return_indices)"},
    {"_avg_pool", FN(f_avg_pool), METH_FASTCALL,
     "_avg_pool(input, nsp, kernel_size, stride, padding, ceil_mode, count_include_pad, "
     "divisor_override)"},
    {"_adaptive_avg_pool", FN(f_adaptive_avg_pool), METH_FASTCALL,
     "_adaptive_avg_pool(input, nsp, output_size)"},
    {"_conv", FN(f_conv), METH_FASTCALL,
     "_conv(input, weight, bias, stride, padding, dilation, groups, nsp, padding_mode)"},
    {NULL, NULL, 0, NULL},
};
