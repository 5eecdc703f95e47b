/* ops_bind_split.c - Python entry points of the shape ops and factories of
 * csrc/core/ops/ops_index.h: _C._split, _C._unbind, _C._flip, _C._narrow, _C._linspace, _C._eye,
 * _C._repeat_index (positional; mpamp/_ops_shape.py adds torch's signatures and methods).
 * Argument checks that torch makes before any work (split sizes, narrow bounds) are here. */
#include "bindings.h"

#include "../core/elementwise.h"
#include "../core/ops/ops.h"
#include "../core/ops/ops_index.h"
#include "../core/view.h"

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

static int tensor_arg(mp_state *s, PyObject *o, const char *fname, const char *arg,
                      mp_tensor **t)
{
    if (!mp_is_tensor(s, o)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be Tensor, not %.100s", fname,
                     arg, Py_TYPE(o)->tp_name);
        return -1;
    }
    *t = MP_T(o);
    return 0;
}

static int big(mp_tensor *t) { return mp_tensor_numel(t) >= MP_NOGIL_NUMEL; }

/* ---- split / unbind / flip / narrow ---- */

static PyObject *tuple_of(mp_state *s, mp_tensor **ts, int64_t n)
{
    PyObject *tup = PyTuple_New((Py_ssize_t)n);
    for (int64_t i = 0; i < n; i++) {
        PyObject *w = tup ? mp_wrap(s, ts[i]) : NULL;
        if (!tup)
            mp_tensor_decref(ts[i]);
        else if (!w)
            Py_CLEAR(tup);
        else
            PyTuple_SET_ITEM(tup, (Py_ssize_t)i, w);
    }
    return tup;
}

/* piece sizes for split(int): all split_size, the last one smaller; checks as torch */
static int64_t split_sizes_of(mp_tensor *t, int64_t split, int64_t dim, int64_t **sizes)
{
    int d;
    if (t->ndim == 0) {
        PyErr_SetString(PyExc_RuntimeError, "split expects at least a 1-dimensional tensor");
        return -1;
    }
    mp_status st = mp_wrap_dim(dim, t->ndim, &d);
    if (st != MP_OK)
        return mp_raise_int(st);
    int64_t size = t->shape[d];
    if (split < 0 || (split == 0 && size != 0)) {
        if (split < 0)
            PyErr_Format(PyExc_RuntimeError, "split expects split_size be non-negative, but got "
                         "split_size=%lld", (long long)split);
        else
            PyErr_Format(PyExc_RuntimeError, "split_size can only be 0 if dimension size is 0, "
                         "but got dimension size of %lld", (long long)size);
        return -1;
    }
    int64_t n = split ? (size + split - 1) / split : 1;
    if (n == 0)
        n = 1;      /* a size-0 dim splits into one empty piece, as torch */
    if (!(*sizes = PyMem_Malloc(sizeof(int64_t) * (size_t)n))) {
        PyErr_NoMemory();
        return -1;
    }
    for (int64_t i = 0; i < n; i++)
        (*sizes)[i] = split && size - i * split < split ? size - i * split : split;
    return n;
}

static int64_t sizes_from_seq(PyObject *seq, int64_t **sizes)
{
    PyObject *fast = PySequence_Fast(seq, "split(): split_size_or_sections must be int or a "
                                     "sequence of ints");
    if (!fast)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    *sizes = PyMem_Malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    int rc = *sizes ? 0 : (PyErr_NoMemory(), -1);
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++)
        rc = mp_parse_int64(PySequence_Fast_GET_ITEM(fast, i), "split", "split_sizes",
                            &(*sizes)[i]);
    Py_DECREF(fast);
    return rc < 0 ? -1 : (int64_t)n;
}

/* _split(t, split_size_or_sections, dim) */
static PyObject *f_split(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_tensor *t, **outs = NULL;
    int64_t dim, *sizes = NULL, n;
    if (nargs_is(nargs, 3, "split") < 0 || tensor_arg(STATE(m), args[0], "split", "tensor",
                                                      &t) < 0 ||
        mp_parse_int64(args[2], "split", "dim", &dim) < 0)
        return NULL;
    int with_sizes = !PyIndex_Check(args[1]) || mp_is_tensor(STATE(m), args[1]);
    int64_t split = 0;
    if (!with_sizes && mp_parse_int64(args[1], "split", "split_size", &split) < 0)
        return NULL;
    n = with_sizes ? sizes_from_seq(args[1], &sizes) : split_sizes_of(t, split, dim, &sizes);
    if (n < 0 || n > INT32_MAX || !(outs = PyMem_Calloc((size_t)(n ? n : 1), sizeof *outs))) {
        PyMem_Free(sizes);
        return n < 0 ? NULL : PyErr_NoMemory();
    }
    mp_status st = mp_op_split(t, dim, sizes, (int)n, with_sizes, outs);
    PyObject *res = st == MP_OK ? tuple_of(STATE(m), outs, n) : mp_raise(st);
    PyMem_Free(sizes);
    PyMem_Free(outs);
    return res;
}

/* _unbind(t, dim) */
static PyObject *f_unbind(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_tensor *t, **outs;
    int64_t dim;
    int d = 0;
    if (nargs_is(nargs, 2, "unbind") < 0 || tensor_arg(STATE(m), args[0], "unbind", "input",
                                                       &t) < 0 ||
        mp_parse_int64(args[1], "unbind", "dim", &dim) < 0)
        return NULL;
    int64_t n = t->ndim && mp_wrap_dim(dim, t->ndim, &d) == MP_OK ? t->shape[d] : 0;
    if (n > INT32_MAX || !(outs = PyMem_Calloc((size_t)(n ? n : 1), sizeof *outs)))
        return PyErr_NoMemory();
    mp_status st = mp_op_unbind(t, dim, outs);
    PyObject *res = st == MP_OK ? tuple_of(STATE(m), outs, n) : mp_raise(st);
    PyMem_Free(outs);
    return res;
}

/* dims (an int sequence) -> bit mask; duplicates are an error, as torch */
static int dims_mask(PyObject *seq, mp_tensor *t, const char *fname, uint32_t *mask)
{
    PyObject *fast = PySequence_Fast(seq, "");
    if (!fast) {
        PyErr_Format(PyExc_TypeError, "%s(): argument 'dims' must be tuple of ints, not "
                     "%.100s", fname, Py_TYPE(seq)->tp_name);
        return -1;
    }
    int rc = 0;
    *mask = 0;
    for (Py_ssize_t i = 0; rc == 0 && i < PySequence_Fast_GET_SIZE(fast); i++) {
        int64_t d;
        int w = 0;
        rc = mp_parse_int64(PySequence_Fast_GET_ITEM(fast, i), fname, "dims", &d);
        mp_status st = rc == 0 ? mp_wrap_dim(d, t->ndim, &w) : MP_OK;
        if (st != MP_OK)
            rc = mp_raise_int(st);
        else if (rc == 0 && (*mask & (1u << w))) {
            PyErr_Format(PyExc_RuntimeError, "dim %d appears multiple times in the list of dims",
                         w);
            rc = -1;
        }
        *mask |= 1u << w;
    }
    Py_DECREF(fast);
    return rc;
}

/* _flip(t, dims) */
static PyObject *f_flip(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_tensor *t, *out = NULL;
    uint32_t mask;
    if (nargs_is(nargs, 2, "flip") < 0 || tensor_arg(STATE(m), args[0], "flip", "input", &t) < 0
        || dims_mask(args[1], t, "flip", &mask) < 0)
        return NULL;
    if (t->ndim == 0)
        mask = 0;
    mp_status st;
    if (big(t)) {
        Py_BEGIN_ALLOW_THREADS
        st = mp_op_flip(t, mask, &out);
        Py_END_ALLOW_THREADS
    } else {
        st = mp_op_flip(t, mask, &out);
    }
    return st == MP_OK ? mp_wrap(STATE(m), out) : mp_raise(st);
}

/* _narrow(t, dim, start, length): a slice view, with torch's checks */
static PyObject *f_narrow(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_tensor *t, *out = NULL;
    int64_t dim, start, length;
    int d = 0;
    if (nargs_is(nargs, 4, "narrow") < 0 || tensor_arg(STATE(m), args[0], "narrow", "input",
                                                       &t) < 0 ||
        mp_parse_int64(args[1], "narrow", "dim", &dim) < 0 ||
        mp_parse_int64(args[2], "narrow", "start", &start) < 0 ||
        mp_parse_int64(args[3], "narrow", "length", &length) < 0)
        return NULL;
    if (t->ndim == 0) {
        PyErr_SetString(PyExc_RuntimeError, "narrow() cannot be applied to a 0-dim tensor.");
        return NULL;
    }
    if (length < 0) {
        PyErr_SetString(PyExc_RuntimeError, "narrow(): length must be non-negative.");
        return NULL;
    }
    mp_status st = mp_wrap_dim(dim, t->ndim, &d);
    if (st != MP_OK)
        return mp_raise(st);
    int64_t size = t->shape[d];
    if (start < -size || start > size) {
        PyErr_Format(PyExc_IndexError, "start out of range (expected to be in range of [%lld, "
                     "%lld], but got %lld)", (long long)-size, (long long)size,
                     (long long)start);
        return NULL;
    }
    start = start < 0 ? start + size : start;
    if (start > size - length) {
        PyErr_Format(PyExc_RuntimeError, "start (%lld) + length (%lld) exceeds dimension size "
                     "(%lld).", (long long)start, (long long)length, (long long)size);
        return NULL;
    }
    int64_t rec[4] = {d, start, start + length, 1};
    st = mp_view_slice(t, d, start, start + length, 1, &out);
    if (st == MP_OK && (st = mp_record_view(MP_VIEWOP_SLICE, t, out, rec, 4)) != MP_OK) {
        mp_tensor_decref(out);
        out = NULL;
    }
    return st == MP_OK ? mp_wrap(STATE(m), out) : mp_raise(st);
}

/* ---- factories ---- */

static int number_arg(mp_state *s, PyObject *o, const char *fname, const char *arg, double *v)
{
    if (mp_is_tensor(s, o) && mp_tensor_numel(MP_T(o)) == 1) {
        mp_scalar sc = mp_tensor_get_item(MP_T(o), 0);
        *v = sc.is_int ? (double)sc.i : sc.f;
        return 0;
    }
    if (PyBool_Check(o) || (!PyFloat_Check(o) && !PyIndex_Check(o))) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be Number, not %.100s", fname,
                     arg, Py_TYPE(o)->tp_name);
        return -1;
    }
    *v = PyFloat_AsDouble(o);
    return *v == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* _linspace(start, end, steps, dtype) */
static PyObject *f_linspace(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    double start, end;
    int64_t steps;
    mp_dtype dt;
    mp_tensor *out = NULL;
    if (nargs_is(nargs, 4, "linspace") < 0 ||
        number_arg(STATE(m), args[0], "linspace", "start", &start) < 0 ||
        number_arg(STATE(m), args[1], "linspace", "end", &end) < 0 ||
        mp_parse_int64(args[2], "linspace", "steps", &steps) < 0 ||
        mp_parse_dtype(STATE(m), args[3], MP_DTYPE_FLOAT32, &dt) < 0)
        return NULL;
    mp_status st = mp_op_linspace(start, end, steps, dt, &out);
    return st == MP_OK ? mp_wrap(STATE(m), out) : mp_raise(st);
}

/* _eye(n, m, dtype); m None: n */
static PyObject *f_eye(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t n, cols;
    mp_dtype dt;
    mp_tensor *out = NULL;
    if (nargs_is(nargs, 3, "eye") < 0 || mp_parse_int64(args[0], "eye", "n", &n) < 0)
        return NULL;
    cols = n;
    if (args[1] != Py_None && mp_parse_int64(args[1], "eye", "m", &cols) < 0)
        return NULL;
    if (mp_parse_dtype(STATE(m), args[2], MP_DTYPE_FLOAT32, &dt) < 0)
        return NULL;
    mp_status st = mp_op_eye(n, cols, dt, &out);
    return st == MP_OK ? mp_wrap(STATE(m), out) : mp_raise(st);
}

/* _repeat_index(repeats, output_size or None) */
static PyObject *f_repeat_index(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_tensor *r, *out = NULL;
    int64_t size = -1;
    if (nargs_is(nargs, 2, "repeat_interleave") < 0 ||
        tensor_arg(STATE(m), args[0], "repeat_interleave", "repeats", &r) < 0)
        return NULL;
    if (args[1] != Py_None &&
        mp_parse_int64(args[1], "repeat_interleave", "output_size", &size) < 0)
        return NULL;
    mp_status st = mp_op_repeat_index(r, size, &out);
    return st == MP_OK ? mp_wrap(STATE(m), out) : mp_raise(st);
}

PyMethodDef mp_split_functions[] = {
    {"_split", FN(f_split), METH_FASTCALL, "_split(t, split_size_or_sections, dim)"},
    {"_unbind", FN(f_unbind), METH_FASTCALL, "_unbind(t, dim)"},
    {"_flip", FN(f_flip), METH_FASTCALL, "_flip(t, dims)"},
    {"_narrow", FN(f_narrow), METH_FASTCALL, "_narrow(t, dim, start, length)"},
    {"_linspace", FN(f_linspace), METH_FASTCALL, "_linspace(start, end, steps, dtype)"},
    {"_eye", FN(f_eye), METH_FASTCALL, "_eye(n, m, dtype)"},
    {"_repeat_index", FN(f_repeat_index), METH_FASTCALL,
     "_repeat_index(repeats, output_size)"},
    {NULL, NULL, 0, NULL},
};
