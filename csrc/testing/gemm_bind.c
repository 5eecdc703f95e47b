/* gemm_bind.c - test and benchmark hooks that call the GEMM of csrc/cpu/gemm.h directly, with
 * a chosen ISA level, thread count and epilogue (the public ops reach it through
 * matmul_core.c, always at the active level). */
#include "../bindings/bindings.h"

#include "../cpu/gemm.h"

static int gemm_tensor(mp_state *s, PyObject *obj, const char *what, int ndim, mp_tensor **t)
{
    if (!mp_is_tensor(s, obj)) {
        PyErr_Format(PyExc_TypeError, "_gemm: %s must be a tensor", what);
        return -1;
    }
    *t = MP_T(obj);
    if ((*t)->ndim != ndim || !mp_tensor_is_contiguous(*t) || !mp_dtype_is_float((*t)->dtype)) {
        PyErr_Format(PyExc_ValueError, "_gemm: %s must be a contiguous %d-D float tensor", what,
                     ndim);
        return -1;
    }
    if ((*t)->storage->device != MP_DEVICE_CPU) {    /* the CPU GEMM reads host memory */
        PyErr_Format(PyExc_ValueError, "_gemm: %s must be a CPU tensor", what);
        return -1;
    }
    return 0;
}

/* _gemm(a, b, c, trans_a, trans_b, alpha, beta, bias, act, isa, threads, round='float32'):
 * c (M, N) = act(alpha * op(a) @ op(b) + beta * c + bias), op(x) = x.T when its flag is set;
 * bias is None or N values; act 'none', 'relu' or 'gelu'; isa a level name; threads 0 =
 * default; round 'float16' / 'bfloat16': an fp32 c holds the results rounded to that dtype. */
static PyObject *f_gemm(PyObject *m, PyObject *args)
{
    mp_state *s = mp_state_of_module(m);
    PyObject *oa, *ob, *oc, *obias;
    int ta, tb, threads;
    float alpha, beta;
    const char *act, *isa_name, *round = "float32";
    if (!PyArg_ParseTuple(args, "OOOppffOssi|s:_gemm", &oa, &ob, &oc, &ta, &tb, &alpha, &beta,
                          &obias, &act, &isa_name, &threads, &round))
        return NULL;
    mp_tensor *a, *b, *c, *bias = NULL;
    if (gemm_tensor(s, oa, "a", 2, &a) < 0 || gemm_tensor(s, ob, "b", 2, &b) < 0 ||
        gemm_tensor(s, oc, "c", 2, &c) < 0 ||
        (obias != Py_None && gemm_tensor(s, obias, "bias", 1, &bias) < 0))
        return NULL;
    int64_t m_ = ta ? a->shape[1] : a->shape[0], k = ta ? a->shape[0] : a->shape[1];
    int64_t kb = tb ? b->shape[1] : b->shape[0], n = tb ? b->shape[0] : b->shape[1];
    if (k != kb || c->shape[0] != m_ || c->shape[1] != n || (bias && bias->shape[0] != n)) {
        PyErr_SetString(PyExc_ValueError, "_gemm: shapes do not match");
        return NULL;
    }
    int isa = mp_isa_from_name(isa_name);
    if (isa < 0 || !mp_cpu_for_isa((mp_isa)isa)) {
        PyErr_Format(PyExc_ValueError, "ISA level '%s' is unknown or not supported by this CPU",
                     isa_name);
        return NULL;
    }
    mp_gemm_args g = mp_gemm_plain(ta, tb, m_, n, k, mp_tensor_data(a), a->shape[1],
                                   mp_tensor_data(b), b->shape[1], mp_tensor_data(c), n);
    g.a_dtype = a->dtype, g.b_dtype = b->dtype, g.c_dtype = c->dtype;
    g.alpha = alpha, g.beta = beta;
    if (bias)
        g.bias = mp_tensor_data(bias), g.bias_dtype = bias->dtype;
    if (!strcmp(round, "float16"))
        g.round_dtype = MP_DTYPE_FLOAT16;
    else if (!strcmp(round, "bfloat16"))
        g.round_dtype = MP_DTYPE_BFLOAT16;
    else if (strcmp(round, "float32")) {
        PyErr_Format(PyExc_ValueError, "_gemm: round must be 'float32', 'float16' or "
                     "'bfloat16', not '%s'", round);
        return NULL;
    }
    if (!strcmp(act, "relu"))
        g.act = MP_GEMM_ACT_RELU;
    else if (!strcmp(act, "gelu"))
        g.act = MP_GEMM_ACT_GELU;
    else if (strcmp(act, "none")) {
        PyErr_Format(PyExc_ValueError, "_gemm: act must be 'none', 'relu' or 'gelu', not '%s'",
                     act);
        return NULL;
    }
    mp_status st;
    Py_BEGIN_ALLOW_THREADS
    st = mp_gemm_at(&g, (mp_isa)isa, threads < 0 ? 0 : threads);
    Py_END_ALLOW_THREADS
    if (st == MP_ERR_NOMEM)
        return PyErr_NoMemory();
    if (st == MP_ERR_TYPE) {
        PyErr_SetString(PyExc_TypeError, "_gemm: beta != 0 needs a float32 c");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* _gemm_kernel_name(isa, a_dtype, b_dtype): the micro-kernel a product would use. */
static PyObject *f_gemm_kernel_name(PyObject *m, PyObject *args)
{
    mp_state *s = mp_state_of_module(m);
    const char *isa_name;
    PyObject *da, *db;
    mp_dtype a, b;
    if (!PyArg_ParseTuple(args, "sOO:_gemm_kernel_name", &isa_name, &da, &db) ||
        mp_parse_dtype(s, da, MP_DTYPE_FLOAT32, &a) < 0 ||
        mp_parse_dtype(s, db, MP_DTYPE_FLOAT32, &b) < 0)
        return NULL;
    int isa = mp_isa_from_name(isa_name);
    if (isa < 0) {
        PyErr_Format(PyExc_ValueError, "unknown ISA level '%s'", isa_name);
        return NULL;
    }
    return PyUnicode_FromString(mp_gemm_kernel_name((mp_isa)isa, a, b));
}

PyMethodDef mp_gemm_functions[] = {
    {"_gemm", f_gemm, METH_VARARGS, "Test hook: the GEMM at one ISA level with an epilogue"},
    {"_gemm_kernel_name", f_gemm_kernel_name, METH_VARARGS,
     "Micro-kernel used at an ISA level for these input dtypes"},
    {NULL, NULL, 0, NULL},
};
