/* ops_bind_matmul.c - Python entry points of the matmul, shape and leftover pointwise ops of
 * csrc/core/ops/ops.h: module functions (_C._mm, _C._cat, _C._dropout, ...; mpamp/_ops_matmul.py
 * adds torch's signatures and keyword arguments) and Tensor methods (t.mm, t.matmul, the
 * operands of @, t.clamp, t.clamp_, t.where). Autocast is applied by the core entries;
 * kernels on large operands run with the GIL released. */
#include "bindings.h"

#include "../core/ops/ops.h"
#include "../core/rows.h"

/* Runs `stmt` with the GIL released when `big` (the core never touches Python). */
#define NOGIL_IF(big, stmt)                                                                  \
    do {                                                                                     \
        if (big) {                                                                           \
            Py_BEGIN_ALLOW_THREADS                                                           \
            stmt;                                                                            \
            Py_END_ALLOW_THREADS                                                             \
        } else {                                                                             \
            stmt;                                                                            \
        }                                                                                    \
    } while (0)

#define FAST (METH_FASTCALL | METH_KEYWORDS)
#define FN(f) (PyCFunction)(void (*)(void))(f)

static int is_big(mp_tensor *a, mp_tensor *b)
{
    return mp_tensor_numel(a) + (b ? mp_tensor_numel(b) : 0) >= MP_NOGIL_NUMEL;
}

/* The tensor behind obj, or NULL with torch's TypeError naming the argument. */
static mp_tensor *tensor_arg(mp_state *s, PyObject *obj, const char *fname, const char *arg,
                             int pos)
{
    if (mp_is_tensor(s, obj))
        return MP_T(obj);
    PyErr_Format(PyExc_TypeError, "%s(): argument '%s' (position %d) must be Tensor, not "
                 "%.100s", fname, arg, pos, Py_TYPE(obj)->tp_name);
    return NULL;
}

static int check_nargs(Py_ssize_t nargs, Py_ssize_t want, const char *sig)
{
    if (nargs == want)
        return 0;
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (%zd given)", sig, want, nargs);
    return -1;
}

static PyObject *finish(mp_state *s, mp_status st, mp_tensor *out)
{
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* ---- matrix products ---- */

typedef mp_status (*op2_fn)(mp_tensor *, mp_tensor *, mp_tensor **);

/* one product call (the core entry applies autocast) */
typedef struct {
    op2_fn fn2;                 /* mm, bmm, matmul */
    int kind;                   /* 0: fn2(a, b), 1: addmm(bias, a, b), 2: linear(x, w, bias),
                                   3: baddbmm(bias, a, b) */
    double beta, alpha;
} product_call;

static mp_status run_product(const product_call *c, mp_tensor **in, mp_tensor **out)
{
    if (c->kind == 0)
        return c->fn2(in[0], in[1], out);
    if (c->kind == 1)
        return mp_op_addmm(in[0], in[1], in[2], c->beta, c->alpha, out);
    if (c->kind == 3)
        return mp_op_baddbmm(in[0], in[1], in[2], c->beta, c->alpha, out);
    return mp_op_linear(in[0], in[1], in[2], out);
}

static PyObject *product2(mp_state *s, op2_fn fn, PyObject *a, PyObject *b,
                          const char *fname, const char *arg_a, const char *arg_b)
{
    mp_tensor *args[2], *out = NULL;
    if (!(args[0] = tensor_arg(s, a, fname, arg_a, 0)) ||
        !(args[1] = tensor_arg(s, b, fname, arg_b, 1)))
        return NULL;
    product_call c = {fn, 0, 0.0, 0.0};
    mp_status st;
    NOGIL_IF(is_big(args[0], args[1]), st = run_product(&c, args, &out));
    return finish(s, st, out);
}

#define PRODUCT_FUNCTION(name, fn, arg_a, arg_b)                                         \
    static PyObject *f_##name(PyObject *m, PyObject *const *args, Py_ssize_t nargs)          \
    {                                                                                        \
        if (check_nargs(nargs, 2, "_" #name "(" arg_a ", " arg_b ")") < 0)                   \
            return NULL;                                                                     \
        return product2(mp_state_of_module(m), fn, args[0], args[1], #name, arg_a,           \
                        arg_b);                                                              \
    }                                                                                        \
    static PyObject *m_##name(PyObject *self, PyObject *other)                               \
    {                                                                                        \
        return product2(mp_state_of_type(Py_TYPE(self)), fn, self, other, #name, arg_a,     \
                        arg_b);                                                              \
    }

PRODUCT_FUNCTION(mm, mp_op_mm, "input", "mat2")
PRODUCT_FUNCTION(bmm, mp_op_bmm, "input", "mat2")
PRODUCT_FUNCTION(matmul, mp_op_matmul, "input", "other")

/* self @ other and other @ self: NotImplemented for non-tensors, as Python's operators need */
static PyObject *matmul_operator(PyObject *self, PyObject *other, int reflected)
{
    mp_state *s = mp_state_of_type(Py_TYPE(self));
    if (!mp_is_tensor(s, other))
        Py_RETURN_NOTIMPLEMENTED;
    return product2(s, mp_op_matmul, reflected ? other : self,
                    reflected ? self : other, "matmul", "input", "other");
}

static PyObject *m_matmul_op(PyObject *self, PyObject *o) { return matmul_operator(self, o, 0); }
static PyObject *m_rmatmul_op(PyObject *self, PyObject *o) { return matmul_operator(self, o, 1); }

static int parse_double(PyObject *obj, const char *fname, const char *arg, double *out)
{
    *out = PyFloat_AsDouble(obj);
    if (*out == -1.0 && PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be a number, not %.100s",
                     fname, arg, Py_TYPE(obj)->tp_name);
        return -1;
    }
    return 0;
}

/* _addmm(input, mat1, mat2, beta, alpha) */
static PyObject *f_addmm(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_tensor *bias, *a, *b, *out = NULL;
    double beta, alpha;
    if (check_nargs(nargs, 5, "_addmm(input, mat1, mat2, beta, alpha)") < 0 ||
        !(bias = tensor_arg(s, args[0], "addmm", "input", 0)) ||
        !(a = tensor_arg(s, args[1], "addmm", "mat1", 1)) ||
        !(b = tensor_arg(s, args[2], "addmm", "mat2", 2)) ||
        parse_double(args[3], "addmm", "beta", &beta) < 0 ||
        parse_double(args[4], "addmm", "alpha", &alpha) < 0)
        return NULL;
    mp_tensor *in[3] = {bias, a, b};
    product_call c = {NULL, 1, beta, alpha};
    mp_status st;
    NOGIL_IF(is_big(a, b), st = run_product(&c, in, &out));
    return finish(s, st, out);
}

/* _baddbmm(input, batch1, batch2, beta, alpha) */
static PyObject *f_baddbmm(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_tensor *bias, *a, *b, *out = NULL;
    double beta, alpha;
    if (check_nargs(nargs, 5, "_baddbmm(input, batch1, batch2, beta, alpha)") < 0 ||
        !(bias = tensor_arg(s, args[0], "baddbmm", "input", 0)) ||
        !(a = tensor_arg(s, args[1], "baddbmm", "batch1", 1)) ||
        !(b = tensor_arg(s, args[2], "baddbmm", "batch2", 2)) ||
        parse_double(args[3], "baddbmm", "beta", &beta) < 0 ||
        parse_double(args[4], "baddbmm", "alpha", &alpha) < 0)
        return NULL;
    mp_tensor *in[3] = {bias, a, b};
    product_call c = {NULL, 3, beta, alpha};
    mp_status st;
    NOGIL_IF(is_big(a, b), st = run_product(&c, in, &out));
    return finish(s, st, out);
}

/* _linear(input, weight, bias or None) */
static PyObject *f_linear(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_tensor *x, *w, *bias = NULL, *out = NULL;
    if (check_nargs(nargs, 3, "_linear(input, weight, bias)") < 0 ||
        !(x = tensor_arg(s, args[0], "linear", "input", 0)) ||
        !(w = tensor_arg(s, args[1], "linear", "weight", 1)) ||
        (args[2] != Py_None && !(bias = tensor_arg(s, args[2], "linear", "bias", 2))))
        return NULL;
    mp_tensor *in[3] = {x, w, bias};
    product_call c = {NULL, 2, 0.0, 0.0};
    mp_status st;
    NOGIL_IF(is_big(x, w), st = run_product(&c, in, &out));
    return finish(s, st, out);
}

/* ---- joining, lookup, dropout ---- */


/* The tensors of a list or tuple into ts (borrowed); -1 with TypeError for anything else. */
static int collect_tensors(mp_state *s, PyObject *seq, mp_tensor **ts, int64_t *total)
{
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    *total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
        if (!mp_is_tensor(s, o)) {
            PyErr_Format(PyExc_TypeError, "expected Tensor as element %zd in argument 0, but "
                         "got %.100s", i, Py_TYPE(o)->tp_name);
            return -1;
        }
        ts[i] = MP_T(o);
        *total += mp_tensor_numel(ts[i]);
    }
    return 0;
}

/* _cat(tensors, dim, stack) */
static PyObject *f_cat(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    int64_t dim, total;
    if (check_nargs(nargs, 3, "_cat(tensors, dim, stack)") < 0)
        return NULL;
    int stack = PyObject_IsTrue(args[2]);
    const char *fname = stack ? "stack" : "cat";
    if (stack < 0 || mp_parse_int64(args[1], fname, "dim", &dim) < 0)
        return NULL;
    PyObject *seq = PyTuple_Check(args[0]) || PyList_Check(args[0])
                        ? PySequence_Fast(args[0], "") : NULL;
    if (!seq) {
        PyErr_Format(PyExc_TypeError, "%s(): argument 'tensors' (position 1) must be tuple of "
                     "Tensors, not %.100s", fname, Py_TYPE(args[0])->tp_name);
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    mp_tensor **ts = n < INT32_MAX / 2 ? PyMem_Malloc(sizeof *ts * (size_t)(n + 1)) : NULL;
    mp_tensor *out = NULL;
    PyObject *res = NULL;
    if (!ts) {
        PyErr_NoMemory();
    } else if (collect_tensors(s, seq, ts, &total) == 0) {
        mp_status st;
        NOGIL_IF(total >= MP_NOGIL_NUMEL, st = stack ? mp_op_stack(ts, (int)n, dim, &out)
                                                   : mp_op_cat(ts, (int)n, dim, &out));
        res = finish(s, st, out);
    }
    PyMem_Free(ts);
    Py_DECREF(seq);
    return res;
}

/* _embedding(weight, indices, padding_idx) with padding_idx < 0 meaning none */
static PyObject *f_embedding(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_tensor *w, *idx, *out = NULL;
    int64_t pad;
    if (check_nargs(nargs, 3, "_embedding(weight, indices, padding_idx)") < 0 ||
        !(w = tensor_arg(s, args[0], "embedding", "weight", 0)) ||
        !(idx = tensor_arg(s, args[1], "embedding", "indices", 1)) ||
        mp_parse_int64(args[2], "embedding", "padding_idx", &pad) < 0)
        return NULL;
    mp_status st;
    NOGIL_IF(is_big(idx, NULL) || is_big(w, NULL), st = mp_op_embedding(w, idx, pad, &out));
    return finish(s, st, out);
}

/* _dropout(input, p, seed, offset) -> (output, blocks_used); seed/offset as signed int64 */
static PyObject *f_dropout(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_tensor *a, *out = NULL;
    double p;
    int64_t seed, offset;
    uint64_t used = 0;
    if (check_nargs(nargs, 4, "_dropout(input, p, seed, offset)") < 0 ||
        !(a = tensor_arg(s, args[0], "dropout", "input", 0)) ||
        parse_double(args[1], "dropout", "p", &p) < 0 ||
        mp_parse_int64(args[2], "dropout", "seed", &seed) < 0 ||
        mp_parse_int64(args[3], "dropout", "offset", &offset) < 0)
        return NULL;
    mp_status st;
    NOGIL_IF(is_big(a, NULL), st = mp_op_dropout(a, p, (uint64_t)seed, (uint64_t)offset, &out,
                                                 &used));
    PyObject *t = finish(s, st, out);
    return t ? Py_BuildValue("(NK)", t, (unsigned long long)used) : NULL;
}

/* ---- clamp and where ---- */

/* A bound: None (absent) or a real number; *is_float says it was a float (promotes ints). */
static int parse_bound(mp_state *s, PyObject *obj, const char *fname, const char *arg, int *has,
                       double *v, int *is_float)
{
    *has = obj && obj != Py_None;
    if (!*has)
        return 0;
    if (mp_is_tensor(s, obj) || (!PyFloat_Check(obj) && !PyLong_Check(obj) && !PyIndex_Check(obj) &&
        !(Py_TYPE(obj)->tp_as_number && Py_TYPE(obj)->tp_as_number->nb_float))) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be a Python number or None, "
                     "not %.100s (tensor bounds are not supported)", fname, arg,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    *is_float |= !PyLong_Check(obj) && !PyIndex_Check(obj);
    return parse_double(obj, fname, arg, v);
}

/* min/max from (min=None, max=None) positional or keyword arguments. */
static int parse_clamp(mp_state *s, PyObject *const *args, Py_ssize_t nargs, PyObject *kw,
                       const char *fname, int *has_min, double *lo, int *has_max, double *hi,
                       int *is_float)
{
    PyObject *vals[2] = {NULL, NULL};
    Py_ssize_t nkw = kw ? PyTuple_GET_SIZE(kw) : 0;
    if (nargs > 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most 2 arguments (min, max)", fname);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        vals[i] = args[i];
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kw, i);
        int which = PyUnicode_CompareWithASCIIString(name, "min") == 0   ? 0
                    : PyUnicode_CompareWithASCIIString(name, "max") == 0 ? 1 : -1;
        if (which < 0 || vals[which]) {
            PyErr_Format(PyExc_TypeError, "%s() got %s keyword argument %R", fname,
                         which < 0 ? "an unexpected" : "a repeated", name);
            return -1;
        }
        vals[which] = args[nargs + i];
    }
    *is_float = 0;
    if (parse_bound(s, vals[0], fname, "min", has_min, lo, is_float) < 0 ||
        parse_bound(s, vals[1], fname, "max", has_max, hi, is_float) < 0)
        return -1;
    if (!*has_min && !*has_max) {
        PyErr_SetString(PyExc_RuntimeError, "torch.clamp: At least one of 'min' or 'max' must "
                        "not be None");
        return -1;
    }
    return 0;
}

/* clamp(a): an integer tensor with a float bound gives float32, as torch's type promotion. */
static mp_status clamp_run(mp_tensor *a, int has_min, double lo, int has_max, double hi,
                           int is_float, mp_tensor **out)
{
    mp_tensor *f = NULL;
    if (!is_float || mp_dtype_is_float(a->dtype))
        return mp_op_clamp(a, has_min, lo, has_max, hi, out);
    mp_status st = mp_op_to_dtype(a, MP_DTYPE_FLOAT32, 0, &f);
    if (st == MP_OK)
        st = mp_op_clamp(f, has_min, lo, has_max, hi, out);
    mp_tensor_decref(f);
    return st;
}

static PyObject *clamp_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kw, const char *fname, int inplace)
{
    mp_state *s = mp_state_of_type(Py_TYPE(self));
    mp_tensor *a = MP_T(self), *out = NULL;
    int has_min, has_max, is_float;
    double lo = 0.0, hi = 0.0;
    if (parse_clamp(s, args, nargs, kw, fname, &has_min, &lo, &has_max, &hi, &is_float) < 0)
        return NULL;
    if (inplace && is_float && !mp_dtype_is_float(a->dtype)) {
        PyErr_Format(PyExc_RuntimeError, "%s: result type Float can't be cast to the desired "
                     "output type %s", fname, mp_dtype_torch_name(a->dtype));
        return NULL;
    }
    mp_status st = inplace ? mp_check_inplace(a, fname) : MP_OK;
    if (st == MP_OK)
        NOGIL_IF(is_big(a, NULL), st = clamp_run(a, has_min, lo, has_max, hi, is_float, &out));
    if (!inplace || st != MP_OK)
        return finish(s, st, out);
    st = mp_inplace_commit(a, out, fname);
    mp_tensor_decref(out);
    return st == MP_OK ? Py_NewRef(self) : mp_raise(st);
}

static PyObject *m_clamp(PyObject *self, PyObject *const *args, Py_ssize_t n, PyObject *kw)
{
    return clamp_method(self, args, n, kw, "clamp", 0);
}

static PyObject *m_clamp_(PyObject *self, PyObject *const *args, Py_ssize_t n, PyObject *kw)
{
    return clamp_method(self, args, n, kw, "clamp_", 1);
}

static PyObject *m_clip(PyObject *self, PyObject *const *args, Py_ssize_t n, PyObject *kw)
{
    return clamp_method(self, args, n, kw, "clip", 0);
}

static PyObject *m_clip_(PyObject *self, PyObject *const *args, Py_ssize_t n, PyObject *kw)
{
    return clamp_method(self, args, n, kw, "clip_", 1);
}

static PyObject *where3(mp_state *s, PyObject *cond, PyObject *a, PyObject *b)
{
    mp_tensor *c = tensor_arg(s, cond, "where", "condition", 0), *ta, *tb, *oa, *ob = NULL;
    mp_tensor *out = NULL;
    if (!c)
        return NULL;
    if (c->dtype == MP_DTYPE_UINT8 &&
        PyErr_WarnEx(PyExc_UserWarning, "where received a uint8 condition tensor. This "
                     "behavior is deprecated (as in torch). Use a boolean condition "
                     "instead.", 1) < 0)
        return NULL;
    int ra = mp_operand(s, a, &ta, &oa);
    int rb = ra ? 1 : mp_operand(s, b, &tb, &ob);
    if (ra || rb) {
        mp_tensor_decref(oa);
        if (ra > 0 || rb > 0)
            PyErr_Format(PyExc_TypeError, "where(): argument '%s' must be Tensor or a number, "
                         "not %.100s", ra ? "input" : "other", Py_TYPE(ra ? a : b)->tp_name);
        return NULL;
    }
    mp_status st;
    NOGIL_IF(is_big(ta, tb), st = mp_op_where(c, ta, tb, &out));
    mp_tensor_decref(oa);
    mp_tensor_decref(ob);
    return finish(s, st, out);
}

/* _where(condition, input, other) */
static PyObject *f_where(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 3, "_where(condition, input, other)") < 0)
        return NULL;
    return where3(mp_state_of_module(m), args[0], args[1], args[2]);
}

/* t.where(condition, other) = where(condition, t, other) */
static PyObject *m_where(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 2, "where(condition, other)") < 0)
        return NULL;
    return where3(mp_state_of_type(Py_TYPE(self)), args[0], self, args[1]);
}

/* _clamp(input, min, max) */
static PyObject *f_clamp(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_tensor *a;
    if (check_nargs(nargs, 3, "_clamp(input, min, max)") < 0 ||
        !(a = tensor_arg(s, args[0], "clamp", "input", 0)))
        return NULL;
    return clamp_method(args[0], args + 1, 2, NULL, "clamp", 0);
}

PyMethodDef mp_matmul_functions[] = {
    {"_mm", FN(f_mm), METH_FASTCALL, "_mm(input, mat2)"},
    {"_bmm", FN(f_bmm), METH_FASTCALL, "_bmm(input, mat2)"},
    {"_matmul", FN(f_matmul), METH_FASTCALL, "_matmul(input, other)"},
    {"_addmm", FN(f_addmm), METH_FASTCALL, "_addmm(input, mat1, mat2, beta, alpha)"},
    {"_baddbmm", FN(f_baddbmm), METH_FASTCALL, "_baddbmm(input, batch1, batch2, beta, alpha)"},
    {"_linear", FN(f_linear), METH_FASTCALL, "_linear(input, weight, bias or None)"},
    {"_cat", FN(f_cat), METH_FASTCALL, "_cat(tensors, dim, stack)"},
    {"_embedding", FN(f_embedding), METH_FASTCALL, "_embedding(weight, indices, padding_idx)"},
    {"_dropout", FN(f_dropout), METH_FASTCALL,
     "_dropout(input, p, seed, offset) -> (output, philox blocks used)"},
    {"_clamp", FN(f_clamp), METH_FASTCALL, "_clamp(input, min or None, max or None)"},
    {"_where", FN(f_where), METH_FASTCALL, "_where(condition, input, other)"},
    {NULL, NULL, 0, NULL},
};

PyMethodDef mp_tensor_matmul_methods[] = {
    {"mm", m_mm, METH_O, "Matrix product of two 2-D tensors"},
    {"bmm", m_bmm, METH_O, "Batched matrix product of two 3-D tensors"},
    {"matmul", m_matmul, METH_O, "Matrix product with torch.matmul's broadcasting rules"},
    {"_matmul_op", m_matmul_op, METH_O, "self @ other (NotImplemented for non-tensors)"},
    {"_rmatmul_op", m_rmatmul_op, METH_O, "other @ self (NotImplemented for non-tensors)"},
    {"clamp", FN(m_clamp), FAST, "clamp(min=None, max=None)"},
    {"clamp_", FN(m_clamp_), FAST, "In-place clamp"},
    {"clip", FN(m_clip), FAST, "Alias of clamp"},
    {"clip_", FN(m_clip_), FAST, "Alias of clamp_"},
    {"where", FN(m_where), METH_FASTCALL, "where(condition, other): self where condition"},
    {NULL, NULL, 0, NULL},
};
