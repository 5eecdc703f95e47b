/* gpu_plan_bind.c - test hooks over the GPU backend's host plans (csrc/gpu/): multi-tensor
 * chunking, launch shapes and the column-major GEMM layout, so tests check them against
 * their definitions (every element covered once; cuBLAS's column-major semantics) on any
 * machine. Dtypes are passed as their mp_dtype index. */
#include "../bindings/bindings.h"

#include <stdlib.h>

#include "../shared/mp_gpu_plan.h"

#define MT_HOOK_MAX 100000

/* _gpu_mt_plan(numels, depth) -> [(tensors, [(slot, chunk), ...]), ...] */
static PyObject *f_mt_plan(PyObject *self, PyObject *args)
{
    PyObject *seq, *out = NULL;
    int depth;
    (void)self;
    if (!PyArg_ParseTuple(args, "Oi", &seq, &depth))
        return NULL;
    PyObject *fast = PySequence_Fast(seq, "_gpu_mt_plan(): numels must be a sequence");
    if (!fast)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    int64_t *numel = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    mp_mt_launch *l = malloc(sizeof *l);
    if (!numel || !l || n > MT_HOOK_MAX) {
        PyErr_SetString(PyExc_ValueError, "_gpu_mt_plan(): too many tensors");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (mp_parse_int64(PySequence_Fast_GET_ITEM(fast, i), "_gpu_mt_plan", "numels",
                           &numel[i]) < 0)
            goto done;
    if (mp_mt_max_tensors(depth) == 0) {
        PyErr_Format(PyExc_ValueError, "_gpu_mt_plan(): depth must be 1..%d", MP_MT_MAX_DEPTH);
        goto done;
    }
    out = PyList_New(0);
    mp_mt_cursor cur = {0, 0};
    while (out && mp_mt_next(numel, (int)n, depth, &cur, l)) {
        PyObject *ts = PyTuple_New(l->ntensors), *bs = PyList_New(l->nblocks);
        for (int i = 0; ts && i < l->ntensors; i++)
            PyTuple_SET_ITEM(ts, i, PyLong_FromLong(l->tensor[i]));
        for (int b = 0; bs && b < l->nblocks; b++)
            PyList_SET_ITEM(bs, b, Py_BuildValue("(ii)", l->block_tensor[b], l->block_chunk[b]));
        PyObject *item = ts && bs ? PyTuple_Pack(2, ts, bs) : NULL;
        Py_XDECREF(ts);
        Py_XDECREF(bs);
        if (!item || PyList_Append(out, item) < 0)
            Py_CLEAR(out);
        Py_XDECREF(item);
    }
done:
    free(numel);
    free(l);
    Py_DECREF(fast);
    return out;
}

/* _gpu_launch_shape(n, vec, sm_count) -> (blocks, threads, vec) */
static PyObject *f_launch_shape(PyObject *self, PyObject *args)
{
    long long n;
    int vec, sm;
    (void)self;
    if (!PyArg_ParseTuple(args, "Lii", &n, &vec, &sm))
        return NULL;
    mp_gpu_launch l = mp_gpu_launch_shape(n, vec, sm);
    return Py_BuildValue("(IIi)", l.blocks, l.threads, l.vec);
}

/* _gpu_vector_width(addresses, itemsizes) -> int */
static PyObject *f_vector_width(PyObject *self, PyObject *args)
{
    unsigned long long a[4] = {0};
    unsigned long s[4] = {0};
    int n = (int)PyTuple_GET_SIZE(args) / 2;
    (void)self;
    if (!PyArg_ParseTuple(args, "|KkKkKkKk", &a[0], &s[0], &a[1], &s[1], &a[2], &s[2], &a[3],
                          &s[3]))
        return NULL;
    const void *p[4];
    size_t sz[4];
    for (int i = 0; i < n; i++)
        p[i] = (const void *)(uintptr_t)a[i], sz[i] = s[i];
    return PyLong_FromLong(mp_gpu_vector_width(p, sz, n));
}

/* _gpu_gemm_colmajor(ta, tb, m, n, k, lda, ldb, ldc, a_dt, b_dt, c_dt, has_bias, bias_dt,
 *                    bias_stride, bias_scale, act) -> dict of the column-major call */
static PyObject *f_gemm_colmajor(PyObject *self, PyObject *args)
{
    mp_gpu_gemm_rm rm = {0};
    int adt, bdt, cdt, biasdt;
    long long m, n, k, lda, ldb, ldc, bs;
    (void)self;
    if (!PyArg_ParseTuple(args, "iiLLLLLLiiiiiLfi", &rm.trans_a, &rm.trans_b, &m, &n, &k,
                          &lda, &ldb, &ldc, &adt, &bdt, &cdt, &rm.has_bias, &biasdt, &bs,
                          &rm.bias_scale, &rm.act))
        return NULL;
    rm.m = m, rm.n = n, rm.k = k, rm.lda = lda, rm.ldb = ldb, rm.ldc = ldc, rm.batch = 1;
    rm.a_dtype = (mp_dtype)adt, rm.b_dtype = (mp_dtype)bdt, rm.c_dtype = (mp_dtype)cdt;
    rm.bias_dtype = (mp_dtype)biasdt, rm.bias_stride = bs;
    rm.alpha = 1.0f, rm.round_dtype = MP_DTYPE_FLOAT32;
    mp_gpu_gemm_cm cm;
    mp_msg msg;
    mp_status st = mp_gpu_gemm_to_colmajor(&rm, &cm, &msg);
    if (st != MP_OK) {
        PyErr_SetString(st == MP_ERR_NOT_IMPLEMENTED ? PyExc_NotImplementedError
                                                     : PyExc_ValueError, msg.text);
        return NULL;
    }
    return Py_BuildValue("{s:i,s:i,s:L,s:L,s:L,s:L,s:L,s:L,s:i,s:i,s:i}", "trans_x",
                         cm.trans_x, "trans_y", cm.trans_y, "rows", (long long)cm.rows,
                         "cols", (long long)cm.cols, "inner", (long long)cm.inner, "ldx",
                         (long long)cm.ldx, "ldy", (long long)cm.ldy, "ldc",
                         (long long)cm.ldc, "x_dtype", (int)cm.x_dtype, "y_dtype",
                         (int)cm.y_dtype, "epilogue", cm.epilogue);
}

static PyObject *f_gemm_workspace(PyObject *self, PyObject *args)
{
    int major, minor;
    (void)self;
    if (!PyArg_ParseTuple(args, "ii", &major, &minor))
        return NULL;
    return PyLong_FromSize_t(mp_gpu_gemm_workspace_bytes(major, minor));
}

PyMethodDef mp_gpu_plan_functions[] = {
    {"_gpu_mt_plan", f_mt_plan, METH_VARARGS, "test hook: multi-tensor launch plan"},
    {"_gpu_launch_shape", f_launch_shape, METH_VARARGS, "test hook: grid of a launch"},
    {"_gpu_vector_width", f_vector_width, METH_VARARGS, "test hook: 16-byte access width"},
    {"_gpu_gemm_colmajor", f_gemm_colmajor, METH_VARARGS, "test hook: cuBLASLt layout"},
    {"_gpu_gemm_workspace", f_gemm_workspace, METH_VARARGS, "test hook: workspace bytes"},
    {NULL, NULL, 0, NULL},
};
