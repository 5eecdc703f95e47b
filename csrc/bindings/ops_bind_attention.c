/* ops_bind_attention.c - Python entry points of the attention-and-masking ops
 * (csrc/core/ops/ops_attention.h): Tensor methods masked_fill/_ and tril/triu/_ with torch's
 * keywords, and the module functions _masked_fill, _triangle, _sdpa and _rms_norm that
 * mpamp/_ops_attention.py and mpamp/nn/_functional_attention.py wrap. (Autocast: in the core
 * entries.) In-place forms go through mp_check_inplace + mp_inplace_commit;
 * kernels on large inputs run without the GIL. */
#include "bindings.h"

#include "../core/elementwise.h"
#include "../core/ops/ops_attention.h"

#define FAST (METH_FASTCALL | METH_KEYWORDS)
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

static int big(mp_tensor *t)
{
    return t && mp_tensor_numel(t) >= MP_NOGIL_NUMEL;
}

/* Positional then keyword arguments into out[0..n) by name (NULL: not given); TypeError for
 * unknown, repeated or surplus ones. */
static int parse_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kw, const char *fname,
                      const char *const *names, int n, PyObject **out)
{
    for (int i = 0; i < n; i++)
        out[i] = i < nargs ? args[i] : NULL;
    if (nargs > n) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d arguments (%zd given)", fname, n,
                     nargs);
        return -1;
    }
    Py_ssize_t nkw = kw ? PyTuple_GET_SIZE(kw) : 0;
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *key = PyTuple_GET_ITEM(kw, j);
        int i = 0;
        while (i < n && PyUnicode_CompareWithASCIIString(key, names[i]) != 0)
            i++;
        if (i == n || out[i]) {
            PyErr_Format(PyExc_TypeError, i == n ? "%s() got an unexpected keyword argument "
                         "'%U'" : "%s() got multiple values for argument '%U'", fname, key);
            return -1;
        }
        out[i] = args[nargs + j];
    }
    return 0;
}

static mp_tensor *tensor_arg(mp_state *s, PyObject *o, const char *fname, const char *arg)
{
    if (o && mp_is_tensor(s, o))
        return MP_T(o);
    if (!o)
        PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", fname, arg);
    else
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be Tensor, not %.100s", fname,
                     arg, Py_TYPE(o)->tp_name);
    return NULL;
}

/* ---- masked_fill ---- */

/* value: a 0-d tensor (*vt) or a Python number (*v) */
static int fill_value(mp_state *s, PyObject *o, const char *fname, mp_scalar *v,
                      mp_tensor **vt)
{
    *vt = NULL;
    if (!o) {
        PyErr_Format(PyExc_TypeError, "%s() missing required argument 'value'", fname);
        return -1;
    }
    if (mp_is_tensor(s, o)) {
        *vt = MP_T(o);
        return 0;
    }
    PyNumberMethods *nm = Py_TYPE(o)->tp_as_number;
    if (PyComplex_Check(o) || !(PyLong_Check(o) || PyIndex_Check(o) || (nm && nm->nb_float))) {
        PyErr_Format(PyExc_TypeError, "%s(): argument 'value' must be Number or Tensor, not "
                     "%.100s", fname, Py_TYPE(o)->tp_name);
        return -1;
    }
    return mp_parse_scalar(o, fname, v);
}

static PyObject *masked_fill_call(mp_state *s, PyObject *self, PyObject *const *args,
                                  Py_ssize_t nargs, PyObject *kw, int inplace)
{
    static const char *const names[] = {"mask", "value"};
    const char *fname = inplace ? "masked_fill_" : "masked_fill";
    PyObject *a[2];
    mp_tensor *t = MP_T(self), *mask, *vt, *out = NULL;
    mp_scalar v = {0.0, 0, 0};
    if (parse_args(args, nargs, kw, fname, names, 2, a) < 0 ||
        !(mask = tensor_arg(s, a[0], fname, "mask")) || fill_value(s, a[1], fname, &v, &vt) < 0)
        return NULL;
    mp_status st = inplace ? mp_check_inplace(t, fname) : MP_OK;
    if (st == MP_OK)
        RUN(big(t), st, mp_op_masked_fill(t, mask, v, vt, &out));
    if (!inplace || st != MP_OK)
        return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
    RUN(big(t), st, mp_inplace_commit(t, out, fname));
    mp_tensor_decref(out);
    return st == MP_OK ? Py_NewRef(self) : mp_raise(st);
}

static PyObject *m_masked_fill(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kw)
{
    return masked_fill_call(mp_state_of_type(Py_TYPE(self)), self, args, nargs, kw, 0);
}

static PyObject *m_masked_fill_(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kw)
{
    return masked_fill_call(mp_state_of_type(Py_TYPE(self)), self, args, nargs, kw, 1);
}

/* _masked_fill(input, mask, value) */
static PyObject *f_masked_fill(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "_masked_fill(input, mask, value) takes 3 arguments "
                     "(%zd given)", nargs);
        return NULL;
    }
    if (!tensor_arg(s, args[0], "masked_fill", "input"))
        return NULL;
    return masked_fill_call(s, args[0], args + 1, 2, NULL, 0);
}

/* ---- tril / triu ---- */

static int diagonal_arg(PyObject *o, const char *fname, int pos, int64_t *k)
{
    *k = 0;
    if (!o)
        return 0;
    if (PyBool_Check(o) || !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument 'diagonal' (position %d) must be int, "
                     "not %.100s", fname, pos, Py_TYPE(o)->tp_name);
        return -1;
    }
    return mp_parse_int64(o, fname, "diagonal", k);
}

static PyObject *triangle_call(mp_state *s, PyObject *self, PyObject *const *args,
                               Py_ssize_t nargs, PyObject *kw, int upper, int inplace, int pos)
{
    static const char *const names[] = {"diagonal"};
    static const char *const fnames[2][2] = {{"tril", "tril_"}, {"triu", "triu_"}};
    const char *fname = fnames[upper][inplace];
    PyObject *d;
    int64_t k;
    mp_tensor *t = MP_T(self), *out = NULL;
    if (parse_args(args, nargs, kw, fname, names, 1, &d) < 0 ||
        diagonal_arg(d, fname, pos, &k) < 0)
        return NULL;
    mp_status st = inplace ? mp_check_inplace(t, fname) : MP_OK;
    if (st == MP_OK)
        RUN(big(t), st, mp_op_triangle(t, upper, k, &out));
    if (!inplace || st != MP_OK)
        return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
    RUN(big(t), st, mp_inplace_commit(t, out, fname));
    mp_tensor_decref(out);
    return st == MP_OK ? Py_NewRef(self) : mp_raise(st);
}

#define TRIANGLE_METHOD(name, upper, inplace)                                                \
    static PyObject *m_##name(PyObject *self, PyObject *const *args, Py_ssize_t nargs,       \
                              PyObject *kw)                                                  \
    {                                                                                        \
        return triangle_call(mp_state_of_type(Py_TYPE(self)), self, args, nargs, kw, upper,  \
                             inplace, 1);                                                    \
    }

TRIANGLE_METHOD(tril, 0, 0)
TRIANGLE_METHOD(triu, 1, 0)
TRIANGLE_METHOD(tril_, 0, 1)
TRIANGLE_METHOD(triu_, 1, 1)

/* _triangle(input, diagonal, upper) */
static PyObject *f_triangle(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    int upper;
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "_triangle(input, diagonal, upper) takes 3 arguments "
                     "(%zd given)", nargs);
        return NULL;
    }
    if ((upper = PyObject_IsTrue(args[2])) < 0 ||
        !tensor_arg(s, args[0], upper ? "triu" : "tril", "input"))
        return NULL;
    return triangle_call(s, args[0], args + 1, 1, NULL, upper, 0, 2);
}

/* ---- scaled_dot_product_attention, rms_norm ---- */

static int opt_tensor(mp_state *s, PyObject *o, const char *fname, const char *arg,
                      mp_tensor **t)
{
    *t = NULL;
    if (o == Py_None)
        return 0;
    return (*t = tensor_arg(s, o, fname, arg)) ? 0 : -1;
}

static int sdpa_opts(PyObject *const *args, mp_sdpa_opts *o)
{
    int64_t seed, offset;
    o->dropout_p = PyFloat_AsDouble(args[4]);
    if (o->dropout_p == -1.0 && PyErr_Occurred())
        return -1;
    if ((o->is_causal = PyObject_IsTrue(args[5])) < 0 ||
        (o->enable_gqa = PyObject_IsTrue(args[7])) < 0)
        return -1;
    o->has_scale = args[6] != Py_None;
    if (o->has_scale && (o->scale = PyFloat_AsDouble(args[6])) == -1.0 && PyErr_Occurred())
        return -1;
    if (mp_parse_int64(args[8], "scaled_dot_product_attention", "seed", &seed) < 0 ||
        mp_parse_int64(args[9], "scaled_dot_product_attention", "offset", &offset) < 0)
        return -1;
    o->seed = (uint64_t)seed, o->offset = (uint64_t)offset;
    return 0;
}

static mp_status sdpa_run(mp_tensor **ts, mp_sdpa_opts *o, mp_tensor **out, uint64_t *used)
{
    o->mask = ts[3];
    return mp_op_sdpa(ts[0], ts[1], ts[2], o, out, used);
}

/* _sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, seed, offset)
 * -> (output, philox blocks used) */
static PyObject *f_sdpa(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    static const char *const names[] = {"query", "key", "value"};
    const char *fname = "scaled_dot_product_attention";
    mp_state *s = mp_state_of_module(m);
    mp_tensor *ts[4], *out = NULL;
    mp_sdpa_opts o = {0};
    uint64_t used = 0;
    if (nargs != 10) {
        PyErr_Format(PyExc_TypeError, "_sdpa() takes 10 arguments (%zd given)", nargs);
        return NULL;
    }
    for (int i = 0; i < 3; i++)
        if (!mp_is_tensor(s, args[i])) {
            PyErr_Format(PyExc_TypeError, "%s(): argument '%s' (position %d) must be Tensor, "
                         "not %.100s", fname, names[i], i + 1, Py_TYPE(args[i])->tp_name);
            return NULL;
        } else {
            ts[i] = MP_T(args[i]);
        }
    if (opt_tensor(s, args[3], fname, "attn_mask", &ts[3]) < 0 || sdpa_opts(args, &o) < 0)
        return NULL;
    mp_status st;
    RUN(big(ts[0]) || big(ts[1]), st, sdpa_run(ts, &o, &out, &used));
    if (st != MP_OK)
        return mp_raise(st);
    PyObject *t = mp_wrap(s, out);
    return t ? Py_BuildValue("(NK)", t, (unsigned long long)used) : NULL;
}

/* _rms_norm(input, normalized_shape, weight or None, eps or None) */
static PyObject *f_rms_norm(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    const char *fname = "rms_norm";
    mp_state *s = mp_state_of_module(m);
    mp_tensor *ts[2], *out = NULL;
    int64_t ns[MP_MAX_DIMS];
    int n;
    double eps = 0.0;
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "_rms_norm() takes 4 arguments (%zd given)", nargs);
        return NULL;
    }
    if (!(ts[0] = tensor_arg(s, args[0], fname, "input")) ||
        opt_tensor(s, args[2], fname, "weight", &ts[1]) < 0)
        return NULL;
    if (PyIndex_Check(args[1]) && !PyBool_Check(args[1])) {   /* an int, as nn.RMSNorm */
        n = 1;
        if (mp_parse_int64(args[1], fname, "normalized_shape", &ns[0]) < 0)
            return NULL;
    } else if (mp_parse_shape_obj(args[1], fname, ns, &n) < 0) {
        return NULL;
    }
    if (args[3] != Py_None && (eps = PyFloat_AsDouble(args[3])) == -1.0 && PyErr_Occurred())
        return NULL;
    mp_status st;
    RUN(big(ts[0]), st, mp_op_rms_norm(ts[0], ns, n, ts[1], args[3] != Py_None, eps, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

PyMethodDef mp_attention_functions[] = {
    {"_masked_fill", FN(f_masked_fill), METH_FASTCALL, "_masked_fill(input, mask, value)"},
    {"_triangle", FN(f_triangle), METH_FASTCALL, "_triangle(input, diagonal, upper)"},
    {"_sdpa", FN(f_sdpa), METH_FASTCALL,
     "_sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, seed, "
     "offset) -> (output, philox blocks used)"},
    {"_rms_norm", FN(f_rms_norm), METH_FASTCALL,
     "_rms_norm(input, normalized_shape, weight or None, eps or None)"},
    {NULL, NULL, 0, NULL},
};

PyMethodDef mp_tensor_attention_methods[] = {
    {"masked_fill", FN(m_masked_fill), FAST, "masked_fill(mask, value): value where mask"},
    {"masked_fill_", FN(m_masked_fill_), FAST, "In-place masked_fill"},
    {"tril", FN(m_tril), FAST, "tril(diagonal=0): the lower triangle, the rest zero"},
    {"triu", FN(m_triu), FAST, "triu(diagonal=0): the upper triangle, the rest zero"},
    {"tril_", FN(m_tril_), FAST, "In-place tril"},
    {"triu_", FN(m_triu_), FAST, "In-place triu"},
    {NULL, NULL, 0, NULL},
};
