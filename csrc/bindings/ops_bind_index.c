/* ops_bind_index.c - Python entry points of csrc/core/ops/ops_index.h: positional _C functions
 * (_C._gather, _C._index_put, _C._index_add, ...) that mpamp/_ops_index.py and _ops_shape.py wrap
 * with torch's signatures, keywords and Tensor methods (split, flip, the factories:
 * ops_bind_split.c). In-place forms (inplace=1) check with
 * mp_check_inplace first, compute out of place and land through mp_inplace_commit. The
 * out-of-place index_put, scatter_add and index_copy apply their autocast rows. */
#include "bindings.h"

#include "../core/amp/autocast.h"
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

static int flag_arg(PyObject *o, int *out)
{
    int v = PyObject_IsTrue(o);
    if (v < 0)
        return -1;
    *out = v;
    return 0;
}

/* The result of an op that may be in place: self for in-place ops (res committed into t),
 * else res wrapped. */
static PyObject *finish(mp_state *s, PyObject *self, mp_tensor *t, mp_status st,
                        mp_tensor *res, int inplace, const char *name)
{
    if (st == MP_OK && inplace) {
        st = mp_inplace_commit(t, res, name);
        mp_tensor_decref(res);
        return st == MP_OK ? Py_NewRef(self) : mp_raise(st);
    }
    return st == MP_OK ? mp_wrap(s, res) : mp_raise(st);
}

static int big(mp_tensor *t) { return mp_tensor_numel(t) >= MP_NOGIL_NUMEL; }

#define RUN(cond, st, call)                                                                  \
    do {                                                                                     \
        if (cond) {                                                                          \
            Py_BEGIN_ALLOW_THREADS                                                           \
            st = (call);                                                                     \
            Py_END_ALLOW_THREADS                                                             \
        } else {                                                                             \
            st = (call);                                                                     \
        }                                                                                    \
    } while (0)

/* ---- advanced indexing ---- */

/* a tuple/list of tensors (None: the whole dim) -> borrowed pointers */
static int index_list(mp_state *s, PyObject *seq, const char *fname, mp_tensor **idx, int *n)
{
    if (!PyTuple_Check(seq) && !PyList_Check(seq)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument 'indices' must be tuple of Tensors, not "
                     "%.100s", fname, Py_TYPE(seq)->tp_name);
        return -1;
    }
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    if (len > 2 * MP_MAX_DIMS) {
        PyErr_Format(PyExc_IndexError, "too many indices (%zd)", len);
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
        if (o != Py_None && !mp_is_tensor(s, o)) {
            PyErr_Format(PyExc_TypeError, "%s(): expected Tensor as element %zd in argument 0, "
                         "but got %.100s", fname, i, Py_TYPE(o)->tp_name);
            return -1;
        }
        idx[i] = o == Py_None ? NULL : MP_T(o);
        if (idx[i] && idx[i]->dtype == MP_DTYPE_UINT8 &&   /* a byte mask: torch warns */
            PyErr_WarnEx(PyExc_UserWarning, "indexing with dtype mpamp.uint8 is now "
                         "deprecated, please use a dtype mpamp.bool instead.", 1) < 0)
            return -1;
    }
    *n = (int)len;
    return 0;
}

static PyObject *f_index(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_tensor *t, *idx[2 * MP_MAX_DIMS], *out = NULL;
    int n;
    if (nargs_is(nargs, 2, "index") < 0 || tensor_arg(STATE(m), args[0], "index", "input",
                                                       &t) < 0 ||
        index_list(STATE(m), args[1], "index", idx, &n) < 0)
        return NULL;
    mp_status st;
    RUN(big(t), st, mp_op_index(t, idx, n, &out));
    return finish(STATE(m), args[0], t, st, out, 0, "index");
}

static mp_status index_put_call(mp_tensor *t, mp_tensor **idx, int n, mp_tensor *v, int acc,
                                int inplace, mp_tensor **out)
{
    if (inplace)
        return mp_op_index_put_(t, idx, n, v, acc);
    return mp_op_index_put(t, idx, n, v, acc, out);
}

/* _index_put(t, indices, values, accumulate, inplace) */
static PyObject *f_index_put(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_tensor *t, *v, *idx[2 * MP_MAX_DIMS], *out = NULL;
    int n, acc, inplace;
    const char *fname = "index_put";
    if (nargs_is(nargs, 5, fname) < 0 || tensor_arg(STATE(m), args[0], fname, "input", &t) < 0 ||
        index_list(STATE(m), args[1], fname, idx, &n) < 0 ||
        tensor_arg(STATE(m), args[2], fname, "values", &v) < 0 || flag_arg(args[3], &acc) < 0 ||
        flag_arg(args[4], &inplace) < 0)
        return NULL;
    mp_status st;
    RUN(big(t), st, index_put_call(t, idx, n, v, acc, inplace, &out));
    if (st == MP_OK && inplace)
        return Py_NewRef(args[0]);
    return finish(STATE(m), args[0], t, st, out, 0, fname);
}

static PyObject *f_nonzero(PyObject *m, PyObject *arg)
{
    mp_tensor *t, *out = NULL;
    if (tensor_arg(STATE(m), arg, "nonzero", "input", &t) < 0)
        return NULL;
    mp_status st;
    RUN(big(t), st, mp_op_nonzero(t, &out));
    return finish(STATE(m), arg, t, st, out, 0, "nonzero");
}

/* ---- gather / scatter ---- */

/* (t, dim, index) of the dim ops */
static int dim_args(mp_state *s, PyObject *const *args, const char *fname, mp_tensor **t,
                    int64_t *dim, mp_tensor **index)
{
    if (tensor_arg(s, args[0], fname, "input", t) < 0 ||
        mp_parse_int64(args[1], fname, "dim", dim) < 0)
        return -1;
    return tensor_arg(s, args[2], fname, "index", index);
}

/* _gather(t, dim, index, wrap) */
static PyObject *f_gather(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_tensor *t, *index, *out = NULL;
    int64_t dim;
    int wrap;
    if (nargs_is(nargs, 4, "gather") < 0 ||
        dim_args(STATE(m), args, "gather", &t, &dim, &index) < 0 || flag_arg(args[3], &wrap) < 0)
        return NULL;
    mp_status st;
    RUN(big(index), st, mp_op_gather(t, dim, index, wrap, &out));
    return finish(STATE(m), args[0], t, st, out, 0, "gather");
}

static int reduce_arg(PyObject *o, int *reduce)
{
    *reduce = MP_SCATTER_SET;
    if (o == Py_None)
        return 0;
    const char *r = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    if (r && strcmp(r, "add") == 0)
        *reduce = MP_SCATTER_ADD;
    else if (r && strcmp(r, "multiply") == 0)
        *reduce = MP_SCATTER_MUL;
    else if (!PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "reduce argument must be either add or multiply.");
    return PyErr_Occurred() ? -1 : 0;
}

/* _scatter(t, dim, index, src_or_value, reduce, inplace) */
static PyObject *f_scatter(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_tensor *t, *index, *src = NULL, *out = NULL;
    int64_t dim;
    int reduce, inplace;
    mp_scalar value = {0.0, 0, 0};
    const char *name;
    if (nargs_is(nargs, 6, "scatter") < 0 ||
        dim_args(STATE(m), args, "scatter", &t, &dim, &index) < 0 ||
        reduce_arg(args[4], &reduce) < 0 || flag_arg(args[5], &inplace) < 0)
        return NULL;
    if (mp_is_tensor(STATE(m), args[3]))
        src = MP_T(args[3]);
    else if (mp_parse_scalar(args[3], "scatter", &value) < 0)
        return NULL;
    name = inplace ? "scatter_" : "scatter";
    mp_status st = inplace ? mp_check_inplace(t, name) : MP_OK;
    if (st == MP_OK)
        RUN(big(index), st, mp_op_scatter(t, dim, index, src, value, reduce, &out));
    return finish(STATE(m), args[0], t, st, out, inplace, name);
}

static mp_status scatter_add_call(mp_tensor *t, int64_t dim, mp_tensor *index, mp_tensor *src,
                                  int inplace, mp_tensor **out)
{
    if (!inplace)
        return mp_op_scatter_add(t, dim, index, src, out);
    mp_autocast_exclude();          /* scatter_add_ is not autocast (torch lists scatter_add) */
    mp_status st = mp_op_scatter_add(t, dim, index, src, out);
    mp_autocast_include();
    return st;
}

/* _scatter_add(t, dim, index, src, inplace) */
static PyObject *f_scatter_add(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_tensor *t, *index, *src, *out = NULL;
    int64_t dim;
    int inplace;
    if (nargs_is(nargs, 5, "scatter_add") < 0 ||
        dim_args(STATE(m), args, "scatter_add", &t, &dim, &index) < 0 ||
        tensor_arg(STATE(m), args[3], "scatter_add", "src", &src) < 0 ||
        flag_arg(args[4], &inplace) < 0)
        return NULL;
    const char *name = inplace ? "scatter_add_" : "scatter_add";
    mp_status st = inplace ? mp_check_inplace(t, name) : MP_OK;
    if (st == MP_OK)
        RUN(big(index), st, scatter_add_call(t, dim, index, src, inplace, &out));
    return finish(STATE(m), args[0], t, st, out, inplace, name);
}

/* ---- index_* along one dim ---- */

static PyObject *f_index_select(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_tensor *t, *index, *out = NULL;
    int64_t dim;
    if (nargs_is(nargs, 3, "index_select") < 0 ||
        dim_args(STATE(m), args, "index_select", &t, &dim, &index) < 0)
        return NULL;
    mp_status st;
    RUN(big(t), st, mp_op_index_select(t, dim, index, &out));
    return finish(STATE(m), args[0], t, st, out, 0, "index_select");
}

enum { LINE_ADD, LINE_COPY, LINE_FILL };

static mp_status line_call(int op, mp_tensor *t, int64_t dim, mp_tensor *index, mp_tensor *src,
                           mp_scalar value, double alpha, int inplace, mp_tensor **out)
{
    if (op == LINE_ADD)
        return mp_op_index_add(t, dim, index, src, alpha, out);
    if (op == LINE_FILL)
        return mp_op_index_fill(t, dim, index, value, out);
    if (!inplace)
        return mp_op_index_copy(t, dim, index, src, out);
    mp_autocast_exclude();          /* index_copy_ is not autocast (torch lists index_copy) */
    mp_status st = mp_op_index_copy(t, dim, index, src, out);
    mp_autocast_include();
    return st;
}

/* the value of index_fill: a number or a 0-dim tensor (no gradient flows to it) */
static int fill_value(mp_state *s, PyObject *o, mp_scalar *v)
{
    if (!mp_is_tensor(s, o))
        return mp_parse_scalar(o, "index_fill_", v);
    mp_tensor *t = MP_T(o);
    if (t->ndim != 0) {
        PyErr_Format(PyExc_RuntimeError, "index_fill_ only supports a 0-dimensional value "
                     "tensor, but got tensor with %d dimension(s).", t->ndim);
        return -1;
    }
    *v = mp_tensor_get_item(t, 0);
    return 0;
}

/* _index_add(t, dim, index, src, alpha, inplace), _index_copy(t, dim, index, src, 0, inplace),
 * _index_fill(t, dim, index, value, 0, inplace) */
static PyObject *line_op(PyObject *m, PyObject *const *args, Py_ssize_t nargs, int op)
{
    static const char *const names[][2] = {{"index_add", "index_add_"},
                                           {"index_copy", "index_copy_"},
                                           {"index_fill", "index_fill_"}};
    mp_tensor *t, *index, *src = NULL, *out = NULL;
    int64_t dim;
    int inplace;
    double alpha = 1.0;
    mp_scalar value = {0.0, 0, 0};
    if (nargs_is(nargs, 6, names[op][0]) < 0 ||
        dim_args(STATE(m), args, names[op][0], &t, &dim, &index) < 0 ||
        flag_arg(args[5], &inplace) < 0)
        return NULL;
    if (op == LINE_FILL ? fill_value(STATE(m), args[3], &value) < 0
                        : tensor_arg(STATE(m), args[3], names[op][0], "source", &src) < 0)
        return NULL;
    if (op == LINE_ADD && (alpha = PyFloat_AsDouble(args[4])) == -1.0 && PyErr_Occurred())
        return NULL;
    const char *name = names[op][inplace];
    mp_status st = inplace ? mp_check_inplace(t, name) : MP_OK;
    if (st == MP_OK)
        RUN(big(t), st, line_call(op, t, dim, index, src, value, alpha, inplace, &out));
    return finish(STATE(m), args[0], t, st, out, inplace, name);
}

static PyObject *f_index_add(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    return line_op(m, args, nargs, LINE_ADD);
}

static PyObject *f_index_copy(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    return line_op(m, args, nargs, LINE_COPY);
}

static PyObject *f_index_fill(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    return line_op(m, args, nargs, LINE_FILL);
}

PyMethodDef mp_index_functions[] = {
    {"_index", FN(f_index), METH_FASTCALL, "input[indices] (advanced indexing)"},
    {"_index_put", FN(f_index_put), METH_FASTCALL,
     "_index_put(t, indices, values, accumulate, inplace)"},
    {"_nonzero", f_nonzero, METH_O, "Coordinates of the non-zero elements"},
    {"_gather", FN(f_gather), METH_FASTCALL, "_gather(t, dim, index, wrap_negative)"},
    {"_scatter", FN(f_scatter), METH_FASTCALL,
     "_scatter(t, dim, index, src_or_value, reduce, inplace)"},
    {"_scatter_add", FN(f_scatter_add), METH_FASTCALL,
     "_scatter_add(t, dim, index, src, inplace)"},
    {"_index_select", FN(f_index_select), METH_FASTCALL, "_index_select(t, dim, index)"},
    {"_index_add", FN(f_index_add), METH_FASTCALL,
     "_index_add(t, dim, index, source, alpha, inplace)"},
    {"_index_copy", FN(f_index_copy), METH_FASTCALL,
     "_index_copy(t, dim, index, source, unused, inplace)"},
    {"_index_fill", FN(f_index_fill), METH_FASTCALL,
     "_index_fill(t, dim, index, value, unused, inplace)"},
    {NULL, NULL, 0, NULL},
};
