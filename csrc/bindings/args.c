/* args.c - argument parsing shared by the binding files: shapes, integers, scalars, and the
 * GIL-releasing copy wrapper. Error messages name the function and the argument. */
#include "bindings.h"

int mp_parse_int64(PyObject *obj, const char *fname, const char *arg, int64_t *out)
{
    if (PyFloat_Check(obj) || PyBool_Check(obj) || !PyIndex_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be int, not %.100s", fname,
                     arg, Py_TYPE(obj)->tp_name);
        return -1;
    }
    PyObject *idx = PyNumber_Index(obj);
    if (!idx)
        return -1;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(idx, &overflow);
    Py_DECREF(idx);
    if (overflow) {
        PyErr_Format(PyExc_OverflowError, "%s(): argument '%s' does not fit in a 64-bit "
                     "integer", fname, arg);
        return -1;
    }
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = v;
    return 0;
}

/* Each element must be an int (not a float or bool); never recurses into elements. */
static int parse_dims(PyObject *const *items, Py_ssize_t n, const char *fname, int64_t *shape,
                      int *ndim)
{
    if (n > MP_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "%s(): tensors may have at most %d dimensions, got %zd",
                     fname, MP_MAX_DIMS, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyFloat_Check(items[i]) || PyBool_Check(items[i]) || !PyIndex_Check(items[i])) {
            PyErr_Format(PyExc_TypeError, "%s(): argument 'size' must be tuple of ints, but "
                         "found element of type %.100s at pos %zd", fname,
                         Py_TYPE(items[i])->tp_name, i);
            return -1;
        }
        if (mp_parse_int64(items[i], fname, "size", &shape[i]) < 0)
            return -1;
    }
    *ndim = (int)n;
    return 0;
}

int mp_parse_shape_obj(PyObject *seq, const char *fname, int64_t *shape, int *ndim)
{
    PyObject *fast = PyUnicode_Check(seq) || PyBytes_Check(seq) ? NULL
                                                                : PySequence_Fast(seq, "");
    if (!fast) {
        PyErr_Format(PyExc_TypeError, "%s(): size must be a tuple of ints, not %.100s", fname,
                     Py_TYPE(seq)->tp_name);
        return -1;
    }
    int rc = parse_dims(PySequence_Fast_ITEMS(fast), PySequence_Fast_GET_SIZE(fast), fname,
                        shape, ndim);
    Py_DECREF(fast);
    return rc;
}

int mp_parse_shape(PyObject *const *args, Py_ssize_t nargs, const char *fname,
                   int64_t *shape, int *ndim)
{
    if (nargs == 1 && !PyIndex_Check(args[0]) && !PyFloat_Check(args[0]))
        return mp_parse_shape_obj(args[0], fname, shape, ndim);
    return parse_dims(args, nargs, fname, shape, ndim);
}

int mp_parse_scalar(PyObject *obj, const char *fname, mp_scalar *out)
{
    out->f = 0.0, out->i = 0, out->is_int = 0;
    if (PyBool_Check(obj) || PyLong_Check(obj)) {
        int overflow = 0;
        out->i = PyLong_AsLongLongAndOverflow(obj, &overflow);
        if (overflow) {
            PyErr_Format(PyExc_OverflowError, "%s(): value %R does not fit in int64", fname,
                         obj);
            return -1;
        }
        out->is_int = 1;
        return 0;
    }
    if (PyFloat_Check(obj)) {
        out->f = PyFloat_AS_DOUBLE(obj);
        return 0;
    }
    if (PyIndex_Check(obj)) {
        PyObject *idx = PyNumber_Index(obj);
        if (!idx)
            return -1;
        int rc = mp_parse_scalar(idx, fname, out);
        Py_DECREF(idx);
        return rc;
    }
    if (Py_TYPE(obj)->tp_as_number && Py_TYPE(obj)->tp_as_number->nb_float) {
        out->f = PyFloat_AsDouble(obj);
        return out->f == -1.0 && PyErr_Occurred() ? -1 : 0;
    }
    PyErr_Format(PyExc_TypeError, "%s(): expected a number, got %.100s", fname,
                 Py_TYPE(obj)->tp_name);
    return -1;
}

PyObject *mp_shape_to_size(mp_state *s, const int64_t *shape, int ndim)
{
    /* mpamp.Size is a tuple subclass: allocate it directly, as tuple's own subtype_new does,
     * instead of calling the class (shape is read on every op in user code) */
    PyTypeObject *tp = s->size_class ? (PyTypeObject *)s->size_class : &PyTuple_Type;
    PyObject *tup = tp == &PyTuple_Type ? PyTuple_New(ndim) : tp->tp_alloc(tp, ndim);
    if (!tup)
        return NULL;
    for (int i = 0; i < ndim; i++) {
        PyObject *v = PyLong_FromLongLong(shape[i]);
        if (!v) {
            Py_DECREF(tup);
            return NULL;
        }
        PyTuple_SET_ITEM(tup, i, v);
    }
    return tup;
}

mp_status mp_copy_maybe_nogil(mp_tensor *dst, mp_tensor *src)
{
    mp_status st;
    if (mp_tensor_numel(dst) >= MP_NOGIL_NUMEL) {
        Py_BEGIN_ALLOW_THREADS
        st = mp_tensor_copy_(dst, src);
        Py_END_ALLOW_THREADS
    } else {
        st = mp_tensor_copy_(dst, src);
    }
    return st;
}
