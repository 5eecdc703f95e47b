/* ops_bind_stats.c - Python entry points of min/argmin, amax/amin, maximum/minimum/fmax/fmin,
 * prod, var/std (+ _mean), logsumexp, vector_norm, cumsum/cumprod, sort and topk (see
 * csrc/core/ops/ops.h): positional-only _C functions that mpamp/_ops_minmax.py, _ops_stats.py and
 * _ops_sort.py wrap with torch's signatures. Autocast is applied by the core entries. */
#include "reduce_args.h"

#include "../core/elementwise.h"
#include "../core/ops/ops.h"

#define FN(f) (PyCFunction)(void (*)(void))(f)
#define STATE(m) mp_state_of_module(m)

/* _min(input, dim, keepdim): dim None -> the min of all elements; else (values, indices) */
static PyObject *f_min(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *a, *v = NULL, *i = NULL;
    int keepdim;
    int64_t dim;
    mp_status st;
    if (mp_rarg_nargs(nargs, 3, "_min") < 0 ||
        mp_rarg_tensor(s, args[0], "min", "input", 1, &a) < 0 ||
        mp_rarg_flag(args[2], &keepdim) < 0)
        return NULL;
    if (args[1] == Py_None) {
        MP_RUN(mp_tensor_numel(a), st, mp_op_min_all(a, &v));
        return st == MP_OK ? mp_wrap(s, v) : mp_raise(st);
    }
    if (mp_parse_int64(args[1], "min", "dim", &dim) < 0)
        return NULL;
    MP_RUN(mp_tensor_numel(a), st, mp_op_min_dim(a, dim, keepdim, &v, &i));
    return st == MP_OK ? mp_rarg_pair(s, v, i) : mp_raise(st);
}

/* _argmin(input, dim, keepdim) */
static PyObject *f_argmin(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *a, *out = NULL;
    int keepdim, has_dim;
    int64_t dim = 0;
    mp_status st;
    if (mp_rarg_nargs(nargs, 3, "_argmin") < 0 ||
        mp_rarg_tensor(s, args[0], "argmin", "input", 1, &a) < 0 ||
        mp_rarg_flag(args[2], &keepdim) < 0)
        return NULL;
    has_dim = args[1] != Py_None;
    if (has_dim && mp_parse_int64(args[1], "argmin", "dim", &dim) < 0)
        return NULL;
    MP_RUN(mp_tensor_numel(a), st, mp_op_argmin(a, has_dim, dim, keepdim, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* _amax(input, dim, keepdim, is_min): dim None or () reduces every dim */
static PyObject *f_amax(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *a, *out = NULL;
    int keepdim, is_min;
    uint32_t mask;
    if (mp_rarg_nargs(nargs, 4, "_amax") < 0 || mp_rarg_flag(args[3], &is_min) < 0)
        return NULL;
    const char *fname = is_min ? "amin" : "amax";
    if (mp_rarg_tensor(s, args[0], fname, "input", 1, &a) < 0 ||
        mp_rarg_dim_mask(args[1], a->ndim, fname, 0, &mask) < 0 ||
        mp_rarg_flag(args[2], &keepdim) < 0)
        return NULL;
    mp_status st;
    MP_RUN(mp_tensor_numel(a), st, mp_op_amax(a, mask, keepdim, is_min, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* _maximum(which, input, other): which 0 maximum, 1 minimum, 2 fmax, 3 fmin */
static PyObject *f_maximum(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *a, *b, *out = NULL;
    const mp_op_row *r;
    if (mp_rarg_nargs(nargs, 3, "_maximum") < 0 ||
        mp_op_arg(args[0], MP_OPK_EXTREMUM, MP_OPK_EXTREMUM, "_maximum", &r) < 0)
        return NULL;
    int which = r->code;
    const char *fname = r->name;
    if (mp_rarg_tensor(s, args[1], fname, "input", 1, &a) < 0 ||
        mp_rarg_tensor(s, args[2], fname, "other", 2, &b) < 0)
        return NULL;
    mp_status st;
    MP_RUN(mp_tensor_numel(a) + mp_tensor_numel(b), st, mp_op_maximum((int)which, a, b, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* _prod(input, dim, keepdim, dtype): dim None -> everything */
static PyObject *f_prod(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *a, *out = NULL;
    int keepdim, dtype;
    int64_t dim = 0;
    if (mp_rarg_nargs(nargs, 4, "_prod") < 0 ||
        mp_rarg_tensor(s, args[0], "prod", "input", 1, &a) < 0 ||
        mp_rarg_flag(args[2], &keepdim) < 0 || mp_rarg_dtype(s, args[3], &dtype) < 0)
        return NULL;
    int has_dim = args[1] != Py_None;
    if (has_dim && mp_parse_int64(args[1], "prod", "dim", &dim) < 0)
        return NULL;
    mp_status st;
    MP_RUN(mp_tensor_numel(a), st, mp_op_prod(a, has_dim, dim, keepdim, dtype, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* _var(input, dim, correction, keepdim, take_sqrt, with_mean): var, std, or a (var|std, mean)
 * tuple; dim None or () reduces every dim */
static PyObject *f_var(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *a, *out = NULL, *mean = NULL;
    int keepdim, take_sqrt, with_mean;
    uint32_t mask;
    double correction;
    if (mp_rarg_nargs(nargs, 6, "_var") < 0 || mp_rarg_flag(args[4], &take_sqrt) < 0 ||
        mp_rarg_flag(args[5], &with_mean) < 0)
        return NULL;
    const char *fname = take_sqrt ? (with_mean ? "std_mean" : "std")
                                  : (with_mean ? "var_mean" : "var");
    if (mp_rarg_tensor(s, args[0], fname, "input", 1, &a) < 0 ||
        mp_rarg_dim_mask(args[1], a->ndim, fname, 1, &mask) < 0 ||
        mp_rarg_double(args[2], &correction) < 0 || mp_rarg_flag(args[3], &keepdim) < 0)
        return NULL;
    mp_status st;
    MP_RUN(mp_tensor_numel(a), st, mp_op_var(a, mask, correction, keepdim, take_sqrt, &out,
                                             with_mean ? &mean : NULL));
    if (st != MP_OK)
        return mp_raise(st);
    return with_mean ? mp_rarg_pair(s, out, mean) : mp_wrap(s, out);
}

/* _logsumexp(input, dim, keepdim) */
static PyObject *f_logsumexp(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *a, *out = NULL;
    int keepdim;
    uint32_t mask;
    if (mp_rarg_nargs(nargs, 3, "_logsumexp") < 0 ||
        mp_rarg_tensor(s, args[0], "logsumexp", "input", 1, &a) < 0 ||
        mp_rarg_dim_mask(args[1], a->ndim, "logsumexp", 1, &mask) < 0 ||
        mp_rarg_flag(args[2], &keepdim) < 0)
        return NULL;
    mp_status st;
    MP_RUN(mp_tensor_numel(a), st, mp_op_logsumexp(a, mask, keepdim, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* _vector_norm(input, ord, dim, keepdim, dtype): dim None or () reduces every dim */
static PyObject *f_vector_norm(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    const char *fname = "linalg_vector_norm";
    mp_tensor *a, *out = NULL;
    int keepdim, dtype;
    uint32_t mask;
    double ord;
    if (mp_rarg_nargs(nargs, 5, "_vector_norm") < 0 ||
        mp_rarg_tensor(s, args[0], fname, "input", 1, &a) < 0)
        return NULL;
    if (!PyNumber_Check(args[1]) || PyBool_Check(args[1]) || mp_is_tensor(s, args[1])) {
        PyErr_Format(PyExc_TypeError, "%s(): argument 'ord' must be Number, not %.100s", fname,
                     Py_TYPE(args[1])->tp_name);
        return NULL;
    }
    if (mp_rarg_double(args[1], &ord) < 0 ||
        mp_rarg_dim_mask(args[2], a->ndim, fname, 0, &mask) < 0 ||
        mp_rarg_flag(args[3], &keepdim) < 0 || mp_rarg_dtype(s, args[4], &dtype) < 0)
        return NULL;
    mp_status st;
    MP_RUN(mp_tensor_numel(a), st, mp_op_vector_norm(a, ord, mask, keepdim, dtype, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* _cumsum(input, dim, dtype, prod): prod 0 cumsum, 1 cumprod */
static PyObject *f_cumsum(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *a, *out = NULL;
    int dtype, prod;
    int64_t dim;
    if (mp_rarg_nargs(nargs, 4, "_cumsum") < 0 || mp_rarg_flag(args[3], &prod) < 0)
        return NULL;
    const char *fname = prod ? "cumprod" : "cumsum";
    if (mp_rarg_tensor(s, args[0], fname, "input", 1, &a) < 0 ||
        mp_parse_int64(args[1], fname, "dim", &dim) < 0 || mp_rarg_dtype(s, args[2], &dtype) < 0)
        return NULL;
    mp_status st;
    MP_RUN(mp_tensor_numel(a), st, mp_op_cumsum(a, dim, dtype, prod, &out));
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* _sort(input, dim, descending) -> (values, indices) */
static PyObject *f_sort(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *a, *v = NULL, *i = NULL;
    int desc;
    int64_t dim;
    if (mp_rarg_nargs(nargs, 3, "_sort") < 0 ||
        mp_rarg_tensor(s, args[0], "sort", "input", 1, &a) < 0 ||
        mp_parse_int64(args[1], "sort", "dim", &dim) < 0 || mp_rarg_flag(args[2], &desc) < 0)
        return NULL;
    mp_status st;
    MP_RUN(mp_tensor_numel(a), st, mp_op_sort(a, dim, desc, &v, &i));
    return st == MP_OK ? mp_rarg_pair(s, v, i) : mp_raise(st);
}

/* _topk(input, k, dim, largest) -> (values, indices), sorted */
static PyObject *f_topk(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = STATE(m);
    mp_tensor *a, *v = NULL, *i = NULL;
    int largest;
    int64_t k, dim;
    if (mp_rarg_nargs(nargs, 4, "_topk") < 0 ||
        mp_rarg_tensor(s, args[0], "topk", "input", 1, &a) < 0 ||
        mp_parse_int64(args[1], "topk", "k", &k) < 0 ||
        mp_parse_int64(args[2], "topk", "dim", &dim) < 0 || mp_rarg_flag(args[3], &largest) < 0)
        return NULL;
    mp_status st;
    MP_RUN(mp_tensor_numel(a), st, mp_op_topk(a, k, dim, largest, &v, &i));
    return st == MP_OK ? mp_rarg_pair(s, v, i) : mp_raise(st);
}

PyMethodDef mp_stats_functions[] = {
    {"_min", FN(f_min), METH_FASTCALL, "_min(input, dim, keepdim)"},
    {"_argmin", FN(f_argmin), METH_FASTCALL, "_argmin(input, dim, keepdim)"},
    {"_amax", FN(f_amax), METH_FASTCALL, "_amax(input, dim, keepdim, is_min)"},
    {"_maximum", FN(f_maximum), METH_FASTCALL,
     "_maximum(op, input, other): op the id (_C.op_ids) of maximum, minimum, fmax, fmin"},
    {"_prod", FN(f_prod), METH_FASTCALL, "_prod(input, dim, keepdim, dtype)"},
    {"_var", FN(f_var), METH_FASTCALL,
     "_var(input, dim, correction, keepdim, take_sqrt, with_mean)"},
    {"_logsumexp", FN(f_logsumexp), METH_FASTCALL, "_logsumexp(input, dim, keepdim)"},
    {"_vector_norm", FN(f_vector_norm), METH_FASTCALL,
     "_vector_norm(input, ord, dim, keepdim, dtype)"},
    {"_cumsum", FN(f_cumsum), METH_FASTCALL, "_cumsum(input, dim, dtype, prod)"},
    {"_sort", FN(f_sort), METH_FASTCALL, "_sort(input, dim, descending)"},
    {"_topk", FN(f_topk), METH_FASTCALL, "_topk(input, k, dim, largest)"},
    {NULL, NULL, 0, NULL},
};
