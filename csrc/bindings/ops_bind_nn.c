/* ops_bind_nn.c - Python entry points of the nn.functional ops of the lossoptim part
 * (smooth_l1/huber, binary_cross_entropy, kl_div, pad, one_hot, normalize, leaky_relu,
 * softplus; see csrc/core/ops/ops.h): positional-only _C functions that mpamp/nn/_functional_extra.py
 * wraps with torch's signatures. Here: argument conversion (autocast: in the core entries) and the
 * GIL released around kernels on large inputs. */
#include "bindings.h"

#include "../core/elementwise.h"
#include "../core/ops/ops.h"

#define FN(f) (PyCFunction)(void (*)(void))(f)
#define STATE(m) mp_state_of_module(m)

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

static int nargs_is(Py_ssize_t nargs, Py_ssize_t want, const char *fname)
{
    if (nargs == want)
        return 0;
    PyErr_Format(PyExc_TypeError, "%s() takes %zd positional arguments (%zd given)", fname,
                 want, nargs);
    return -1;
}

/* opt: None -> NULL; pos: the argument's position in torch's signature */
static int tensor_arg(mp_state *s, PyObject *o, const char *fname, const char *arg, int pos,
                      int opt, mp_tensor **t)
{
    *t = NULL;
    if (opt && o == Py_None)
        return 0;
    if (!mp_is_tensor(s, o)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' (position %d) must be Tensor%s, not "
                     "%.100s", fname, arg, pos, opt ? " or None" : "", Py_TYPE(o)->tp_name);
        return -1;
    }
    *t = MP_T(o);
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

static int float_arg(PyObject *o, double *out)
{
    *out = PyFloat_AsDouble(o);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

static PyObject *finish(mp_state *s, mp_status st, mp_tensor *out)
{
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* _smooth_loss(op, input, target, reduction, param): op the id of smooth_l1_loss (param: beta)
 * or huber_loss (delta) */
static PyObject *f_smooth_loss(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *ts[2], *out = NULL;
    int kind, red;
    double b;
    if (nargs_is(nargs, 5, "_smooth_loss") < 0 ||
        (kind = mp_op_choice(args[0], "_smooth_loss", MP_OP_SMOOTH_L1_LOSS, MP_OP_HUBER_LOSS)) < 0)
        return NULL;
    const char *fname = kind ? "huber_loss" : "smooth_l1_loss";
    if (tensor_arg(s, args[1], fname, "input", 1, 0, &ts[0]) < 0 ||
        tensor_arg(s, args[2], fname, "target", 2, 0, &ts[1]) < 0 ||
        int_arg(args[3], fname, "reduction", &red) < 0 || float_arg(args[4], &b) < 0)
        return NULL;
    mp_status st;
    RUN(mp_tensor_numel(ts[0]), st, kind ? mp_op_huber_loss(ts[0], ts[1], red, b, &out)
                                         : mp_op_smooth_l1_loss(ts[0], ts[1], red, b, &out));
    return finish(s, st, out);
}

/* _binary_cross_entropy(input, target, weight, reduction) */
static PyObject *f_bce(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *ts[3], *out = NULL;
    const char *fname = "binary_cross_entropy";
    int red;
    if (nargs_is(nargs, 4, "_binary_cross_entropy") < 0 ||
        tensor_arg(s, args[0], fname, "input", 1, 0, &ts[0]) < 0 ||
        tensor_arg(s, args[1], fname, "target", 2, 0, &ts[1]) < 0 ||
        tensor_arg(s, args[2], fname, "weight", 3, 1, &ts[2]) < 0 ||
        int_arg(args[3], fname, "reduction", &red) < 0)
        return NULL;
    mp_status st;
    RUN(mp_tensor_numel(ts[0]), st,
        mp_op_binary_cross_entropy(ts[0], ts[1], ts[2], red, &out));
    return finish(s, st, out);
}

/* _kl_div(input, target, reduction, log_target): reduction 3 is batchmean */
static PyObject *f_kl_div(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *ts[2], *out = NULL;
    int red, log_target;
    if (nargs_is(nargs, 4, "_kl_div") < 0 ||
        tensor_arg(s, args[0], "kl_div", "input", 1, 0, &ts[0]) < 0 ||
        tensor_arg(s, args[1], "kl_div", "target", 2, 0, &ts[1]) < 0 ||
        int_arg(args[2], "kl_div", "reduction", &red) < 0 ||
        (log_target = PyObject_IsTrue(args[3])) < 0)
        return NULL;
    mp_status st;
    RUN(mp_tensor_numel(ts[0]), st, mp_op_kl_div(ts[0], ts[1], red, log_target, &out));
    return finish(s, st, out);
}

/* _pad(input, pad (sequence of ints), mode (0-3), value (number)) */
static PyObject *f_pad(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *a, *out = NULL;
    int64_t pad[2 * MP_MAX_DIMS + 2];
    int mode;
    mp_scalar value;
    if (nargs_is(nargs, 4, "_pad") < 0 || tensor_arg(s, args[0], "pad", "input", 1, 0, &a) < 0 ||
        int_arg(args[2], "pad", "mode", &mode) < 0 || mp_parse_scalar(args[3], "pad", &value) < 0)
        return NULL;
    PyObject *seq = PySequence_Fast(args[1], "pad(): argument 'pad' must be a tuple of ints");
    if (!seq)
        return NULL;
    /* a longer pad than any tensor allows only needs its length (the core's message) */
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    n = n > 4 * MP_MAX_DIMS ? 4 * MP_MAX_DIMS : n;
    for (Py_ssize_t i = 0; i < n && i < 2 * MP_MAX_DIMS + 2; i++)
        if (mp_parse_int64(PySequence_Fast_GET_ITEM(seq, i), "pad", "pad", &pad[i]) < 0) {
            Py_DECREF(seq);
            return NULL;
        }
    Py_DECREF(seq);
    mp_status st;
    RUN(mp_tensor_numel(a), st, mp_op_pad(a, pad, (int)n, mode, value, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* _one_hot(input, num_classes) */
static PyObject *f_one_hot(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *a, *out = NULL;
    int64_t c;
    if (nargs_is(nargs, 2, "_one_hot") < 0 ||
        tensor_arg(s, args[0], "one_hot", "input", 1, 0, &a) < 0 ||
        mp_parse_int64(args[1], "one_hot", "num_classes", &c) < 0)
        return NULL;
    mp_status st;
    RUN(mp_tensor_numel(a), st, mp_op_one_hot(a, c, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* _normalize(input, p, dim, eps) */
static PyObject *f_normalize(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *ts[1], *out = NULL;
    double p, eps;
    int64_t dim;
    if (nargs_is(nargs, 4, "_normalize") < 0 ||
        tensor_arg(s, args[0], "normalize", "input", 1, 0, &ts[0]) < 0 ||
        float_arg(args[1], &p) < 0 || mp_parse_int64(args[2], "normalize", "dim", &dim) < 0 ||
        float_arg(args[3], &eps) < 0)
        return NULL;
    mp_status st;
    RUN(mp_tensor_numel(ts[0]), st, mp_op_normalize(ts[0], p, dim, eps, &out));
    return finish(s, st, out);
}

/* _leaky_relu(input, negative_slope, inplace) */
static PyObject *f_leaky_relu(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *a, *out = NULL;
    double slope;
    int inplace;
    if (nargs_is(nargs, 3, "_leaky_relu") < 0 ||
        tensor_arg(s, args[0], "leaky_relu", "input", 1, 0, &a) < 0 ||
        float_arg(args[1], &slope) < 0 || (inplace = PyObject_IsTrue(args[2])) < 0)
        return NULL;
    mp_status st;
    if (inplace) {
        RUN(mp_tensor_numel(a), st, mp_op_leaky_relu_(a, slope));
        return st == MP_OK ? Py_NewRef(args[0]) : mp_raise(st);
    }
    RUN(mp_tensor_numel(a), st, mp_op_leaky_relu(a, slope, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* _softplus(input, beta, threshold) */
static PyObject *f_softplus(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *ts[1], *out = NULL;
    double beta, th;
    if (nargs_is(nargs, 3, "_softplus") < 0 ||
        tensor_arg(s, args[0], "softplus", "input", 1, 0, &ts[0]) < 0 ||
        float_arg(args[1], &beta) < 0 || float_arg(args[2], &th) < 0)
        return NULL;
    mp_status st;
    RUN(mp_tensor_numel(ts[0]), st, mp_op_softplus(ts[0], beta, th, &out));
    return finish(s, st, out);
}

PyMethodDef mp_nn_functions[] = {
    {"_smooth_loss", FN(f_smooth_loss), METH_FASTCALL,
     "_smooth_loss(op, input, target, reduction, param): op the id (_C.op_ids) of "
     "smooth_l1_loss (beta) or huber_loss (delta)"},
    {"_binary_cross_entropy", FN(f_bce), METH_FASTCALL,
     "_binary_cross_entropy(input, target, weight, reduction)"},
    {"_kl_div", FN(f_kl_div), METH_FASTCALL,
     "_kl_div(input, target, reduction, log_target): reduction 3 is batchmean"},
    {"_pad", FN(f_pad), METH_FASTCALL,
     "_pad(input, pad, mode, value): mode 0 constant, 1 reflect, 2 replicate, 3 circular"},
    {"_one_hot", FN(f_one_hot), METH_FASTCALL, "_one_hot(input, num_classes)"},
    {"_normalize", FN(f_normalize), METH_FASTCALL, "_normalize(input, p, dim, eps)"},
    {"_leaky_relu", FN(f_leaky_relu), METH_FASTCALL,
     "_leaky_relu(input, negative_slope, inplace)"},
    {"_softplus", FN(f_softplus), METH_FASTCALL, "_softplus(input, beta, threshold)"},
    {NULL, NULL, 0, NULL},
};
