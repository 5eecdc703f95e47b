/* factories.c - module functions that create tensors: empty, full, arange, the random fills
 * (the Python layer owns the generator state and passes seed/offset), and zero-copy wrapping
 * of objects that export a buffer (NumPy arrays). */
#include "bindings.h"

#include <math.h>
#include <string.h>

#include "../core/chunk.h"
#include "../core/random.h"

#define MSTATE(m) mp_state_of_module(m)

static int check_nargs(Py_ssize_t nargs, Py_ssize_t want, const char *fname)
{
    if (nargs == want)
        return 0;
    PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", fname, want, nargs);
    return -1;
}

static mp_tensor *new_empty(mp_state *s, PyObject *shape_obj, PyObject *dtype_obj,
                            const char *fname, mp_device dev)
{
    int64_t shape[MP_MAX_DIMS];
    int ndim;
    mp_dtype dt;
    mp_tensor *t;
    if (mp_parse_shape_obj(shape_obj, fname, shape, &ndim) < 0 ||
        mp_parse_dtype(s, dtype_obj, MP_DTYPE_FLOAT32, &dt) < 0)
        return NULL;
    mp_status st = mp_tensor_empty(shape, ndim, dt, dev, &t);
    if (st != MP_OK)
        return (void)mp_raise(st), NULL;
    return t;
}

/* The optional trailing device-type argument of _empty/_full (0 cpu, 1 cuda). */
static int parse_dev(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t at, mp_device *dev)
{
    *dev = MP_DEVICE_CPU;
    if (nargs <= at)
        return 0;
    long d = PyLong_AsLong(args[at]);
    if (d == -1 && PyErr_Occurred())
        return -1;
    if (d != MP_DEVICE_CPU && d != MP_DEVICE_CUDA) {
        PyErr_Format(PyExc_ValueError, "unknown device type %ld", d);
        return -1;
    }
    *dev = (mp_device)d;
    return 0;
}

/* _empty(shape, dtype) */
static PyObject *f_empty(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_device dev;
    if (check_nargs(nargs == 3 ? 2 : nargs, 2, "_empty") < 0 || parse_dev(args, nargs, 2, &dev) < 0)
        return NULL;
    mp_tensor *t = new_empty(MSTATE(m), args[0], args[1], "empty", dev);
    return t ? mp_wrap(MSTATE(m), t) : NULL;
}

/* _full(shape, value, dtype) */
static PyObject *f_full(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_scalar v;
    mp_device dev;
    if (check_nargs(nargs == 4 ? 3 : nargs, 3, "_full") < 0 ||
        parse_dev(args, nargs, 3, &dev) < 0 || mp_parse_scalar(args[1], "full", &v) < 0)
        return NULL;
    mp_tensor *t = new_empty(MSTATE(m), args[0], args[2], "full", dev);
    if (!t)
        return NULL;
    mp_status st = mp_check_scalar_fits(t->dtype, v);     /* full(300, uint8): torch's error */
    if (st == MP_OK) {
        Py_BEGIN_ALLOW_THREADS
        st = mp_tensor_fill_(t, v);
        Py_END_ALLOW_THREADS
    }
    if (st != MP_OK) {
        mp_tensor_decref(t);
        return mp_raise(st);
    }
    return mp_wrap(MSTATE(m), t);
}

static double as_double(mp_scalar v) { return v.is_int ? (double)v.i : v.f; }

/* _arange(start, end, step, dtype): dtype None means int64 for all-integer arguments. */
static PyObject *f_arange(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_scalar a, b, step;
    mp_dtype dt;
    mp_state *s = MSTATE(m);
    if (check_nargs(nargs, 4, "_arange") < 0 || mp_parse_scalar(args[0], "arange", &a) < 0 ||
        mp_parse_scalar(args[1], "arange", &b) < 0 ||
        mp_parse_scalar(args[2], "arange", &step) < 0)
        return NULL;
    int ints = a.is_int && b.is_int && step.is_int;
    if (mp_parse_dtype(s, args[3], ints ? MP_DTYPE_INT64 : MP_DTYPE_FLOAT32, &dt) < 0)
        return NULL;
    double fa = as_double(a), fb = as_double(b), fs = as_double(step);
    if (!isfinite(fa) || !isfinite(fb) || !isfinite(fs)) {
        PyErr_SetString(PyExc_RuntimeError, "unsupported range: arange bounds and step must "
                        "be finite");
        return NULL;
    }
    if (fs == 0.0) {
        PyErr_SetString(PyExc_RuntimeError, "step must be nonzero");
        return NULL;
    }
    if ((fs > 0 && fb < fa) || (fs < 0 && fb > fa)) {
        PyErr_SetString(PyExc_RuntimeError, "upper bound and larger bound inconsistent with "
                        "step sign");
        return NULL;
    }
    double count = ints ? (double)((b.i - a.i + step.i + (step.i > 0 ? -1 : 1)) / step.i)
                        : ceil((fb - fa) / fs);
    if (count > 9.0e18) {
        PyErr_SetString(PyExc_MemoryError, "arange: the range has too many elements");
        return NULL;
    }
    int64_t n = (int64_t)count;
    mp_tensor *t;
    mp_status st = mp_tensor_empty(&n, 1, dt, MP_DEVICE_CPU, &t);
    if (st == MP_OK && (st = mp_tensor_arange_(t, a, step)) != MP_OK)
        mp_tensor_decref(t);
    return st == MP_OK ? mp_wrap(s, t) : mp_raise(st);
}

enum { RAND_UNIFORM, RAND_NORMAL, RAND_INT };

/* Fills t (any layout, any device) with the chosen distribution; returns blocks consumed or
 * -1. The draws are made on the host (the one CPU generator) and copied to a device tensor. */
static long long random_fill(mp_tensor *t, int kind, double p0, double p1, int64_t lo,
                             int64_t hi, uint64_t seed, uint64_t offset)
{
    mp_tensor *dst = t;
    mp_status st = MP_OK;
    uint64_t used = 0;
    if (!mp_tensor_is_contiguous(t) || t->storage->device != MP_DEVICE_CPU)
        st = mp_tensor_empty(t->shape, t->ndim, t->dtype, MP_DEVICE_CPU, &dst);
    if (st != MP_OK)
        return mp_raise_int(st);
    Py_BEGIN_ALLOW_THREADS
    if (kind == RAND_UNIFORM)
        st = mp_random_uniform_(dst, seed, offset, p0, p1, &used);
    else if (kind == RAND_NORMAL)
        st = mp_random_normal_(dst, seed, offset, p0, p1, &used);
    else
        st = mp_random_int_(dst, seed, offset, lo, hi, &used);
    if (st == MP_OK && dst != t)
        st = mp_tensor_copy_(t, dst);
    Py_END_ALLOW_THREADS
    if (dst != t)
        mp_tensor_decref(dst);
    return st == MP_OK ? (long long)used : mp_raise_int(st);
}

/* _random_(tensor, kind, a, b, seed, offset) -> blocks used. kind: "uniform" (a=low, b=high),
 * "normal" (a=mean, b=std), "int" (integers in [a, b)). */
static PyObject *f_random_(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = MSTATE(m);
    mp_scalar a, b;
    int64_t seed, offset;
    if (check_nargs(nargs, 6, "_random_") < 0)
        return NULL;
    if (!mp_is_tensor(s, args[0]) || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "_random_(tensor, kind, a, b, seed, offset)");
        return NULL;
    }
    if (mp_parse_scalar(args[2], "random", &a) < 0 || mp_parse_scalar(args[3], "random", &b) < 0 ||
        mp_parse_int64(args[4], "random", "seed", &seed) < 0 ||
        mp_parse_int64(args[5], "random", "offset", &offset) < 0)
        return NULL;
    const char *kind = PyUnicode_AsUTF8(args[1]);
    int k = strcmp(kind, "uniform") == 0 ? RAND_UNIFORM : strcmp(kind, "normal") == 0
            ? RAND_NORMAL : strcmp(kind, "int") == 0 ? RAND_INT : -1;
    if (k < 0) {
        PyErr_Format(PyExc_ValueError, "unknown random kind %R", args[1]);
        return NULL;
    }
    if (k == RAND_INT && (!a.is_int || !b.is_int)) {
        PyErr_SetString(PyExc_TypeError, "randint bounds must be integers");
        return NULL;
    }
    long long used = random_fill(MP_T(args[0]), k, as_double(a), as_double(b), a.i, b.i,
                                 (uint64_t)seed, (uint64_t)offset);
    return used < 0 ? NULL : PyLong_FromLongLong(used);
}

PyMethodDef mp_factory_functions[] = {
    {"_empty", (PyCFunction)(void (*)(void))f_empty, METH_FASTCALL,
     "_empty(shape, dtype): uninitialised tensor"},
    {"_full", (PyCFunction)(void (*)(void))f_full, METH_FASTCALL,
     "_full(shape, value, dtype): filled tensor"},
    {"_arange", (PyCFunction)(void (*)(void))f_arange, METH_FASTCALL,
     "_arange(start, end, step, dtype)"},
    {"_random_", (PyCFunction)(void (*)(void))f_random_, METH_FASTCALL,
     "_random_(tensor, kind, a, b, seed, offset) -> Philox blocks consumed"},
    {NULL, NULL, 0, NULL},
};
