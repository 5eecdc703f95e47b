/* reduce_args.c - argument conversion for the reduction, scan and sorting bindings (see
 * reduce_args.h). Messages follow torch's argument parser where torch has one. */
#include "reduce_args.h"

#include "../core/view.h"

int mp_rarg_nargs(Py_ssize_t nargs, Py_ssize_t want, const char *fname)
{
    if (nargs == want)
        return 0;
    PyErr_Format(PyExc_TypeError, "%s() takes %zd positional arguments (%zd given)", fname,
                 want, nargs);
    return -1;
}

int mp_rarg_tensor(mp_state *s, PyObject *o, const char *fname, const char *arg, int pos,
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

int mp_rarg_flag(PyObject *o, int *out)
{
    int v = PyObject_IsTrue(o);
    if (v < 0)
        return -1;
    *out = v;
    return 0;
}

int mp_rarg_dtype(mp_state *s, PyObject *o, int *out)
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

int mp_rarg_double(PyObject *o, double *out)
{
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred())
        return -1;
    *out = v;
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

int mp_rarg_dim_mask(PyObject *dim, int ndim, const char *fname, int none_is_all,
                     uint32_t *mask)
{
    *mask = 0;
    if (dim == Py_None)
        goto none;
    if (PyTuple_Check(dim) || PyList_Check(dim)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(dim);
        if (n == 0)
            goto none;
        for (Py_ssize_t i = 0; i < n; i++)
            if (add_dim(PySequence_Fast_GET_ITEM(dim, i), fname, ndim, mask) < 0)
                return -1;
        return 0;
    }
    return add_dim(dim, fname, ndim, mask);
none:
    if (none_is_all)
        *mask = ndim >= 32 ? ~0u : (1u << ndim) - 1u;
    return 0;
}

PyObject *mp_rarg_pair(mp_state *s, mp_tensor *a, mp_tensor *b)
{
    PyObject *pa = mp_wrap(s, a), *pb = pa ? mp_wrap(s, b) : NULL;
    if (!pa || !pb) {
        if (!pa)
            mp_tensor_decref(b);
        Py_XDECREF(pa);
        return NULL;
    }
    PyObject *tup = PyTuple_Pack(2, pa, pb);
    Py_DECREF(pa);
    Py_DECREF(pb);
    return tup;
}
