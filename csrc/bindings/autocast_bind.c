/* autocast_bind.c - Python access to the autocast state and weight-cast cache (the policy
 * itself is applied by each op's binding through mp_autocast_args). Device types are the
 * strings "cpu" and "cuda". */
#include "bindings.h"

#include <string.h>

#include "../core/amp/autocast.h"

static int parse_device(PyObject *obj, mp_device *dev)
{
    const char *s = PyUnicode_Check(obj) ? PyUnicode_AsUTF8(obj) : NULL;
    if (s && strcmp(s, "cpu") == 0) {
        *dev = MP_DEVICE_CPU;
        return 0;
    }
    if (s && strcmp(s, "cuda") == 0) {
        *dev = MP_DEVICE_CUDA;
        return 0;
    }
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_RuntimeError, "User specified an unsupported autocast device_type "
                     "'%S'", obj);
    return -1;
}

static PyObject *f_is_enabled(PyObject *m, PyObject *arg)
{
    (void)m;
    mp_device dev;
    return parse_device(arg, &dev) < 0 ? NULL : PyBool_FromLong(mp_autocast_enabled(dev));
}

static PyObject *f_set_enabled(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    (void)m;
    mp_device dev;
    if (nargs != 2 || parse_device(args[0], &dev) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "_set_autocast_enabled(device_type, enabled)");
        return NULL;
    }
    int on = PyObject_IsTrue(args[1]);
    if (on < 0)
        return NULL;
    mp_autocast_set_enabled(dev, on);
    Py_RETURN_NONE;
}

static PyObject *f_get_dtype(PyObject *m, PyObject *arg)
{
    mp_device dev;
    if (parse_device(arg, &dev) < 0)
        return NULL;
    return Py_NewRef(mp_state_of_module(m)->dtypes[mp_autocast_dtype(dev)]);
}

static PyObject *f_set_dtype(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_device dev;
    mp_dtype dt;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "_set_autocast_dtype(device_type, dtype)");
        return NULL;
    }
    if (parse_device(args[0], &dev) < 0 ||
        mp_parse_dtype(mp_state_of_module(m), args[1], MP_DTYPE_FLOAT32, &dt) < 0)
        return NULL;
    mp_autocast_set_dtype(dev, dt);
    Py_RETURN_NONE;
}

static PyObject *f_cache_enabled(PyObject *m, PyObject *u)
{
    (void)m, (void)u;
    return PyBool_FromLong(mp_autocast_cache_enabled());
}

static PyObject *f_set_cache_enabled(PyObject *m, PyObject *arg)
{
    (void)m;
    if (!PyBool_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "enabled must be a bool (got %.100s)",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    mp_autocast_set_cache_enabled(arg == Py_True);
    Py_RETURN_NONE;
}

static PyObject *f_inc(PyObject *m, PyObject *u)
{
    (void)m, (void)u;
    return PyLong_FromLong(mp_autocast_increment_nesting());
}

static PyObject *f_dec(PyObject *m, PyObject *u)
{
    (void)m, (void)u;
    return PyLong_FromLong(mp_autocast_decrement_nesting());
}

static PyObject *f_clear(PyObject *m, PyObject *u)
{
    (void)m, (void)u;
    mp_autocast_clear_cache();
    Py_RETURN_NONE;
}

static PyObject *f_stats(PyObject *m, PyObject *u)
{
    (void)m, (void)u;
    uint64_t hits, misses;
    int64_t entries;
    mp_autocast_cache_stats(&hits, &misses, &entries);
    return Py_BuildValue("{s:K,s:K,s:L}", "hits", (unsigned long long)hits, "misses",
                         (unsigned long long)misses, "entries", (long long)entries);
}

/* _autocast_policy(op_name, device_type) -> "lower" | "fp32" | "promote" | "banned" | None */
static PyObject *f_policy(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    (void)m;
    mp_device dev;
    if (nargs != 2 || !PyUnicode_Check(args[0]) || parse_device(args[1], &dev) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "_autocast_policy(op_name, device_type)");
        return NULL;
    }
    const char *name = PyUnicode_AsUTF8(args[0]);
    int op = name ? mp_op_by_name(name) : -1;
    if (op >= 0) {
        static const char *const names[] = {NULL, "lower", "fp32", "promote", "banned"};
        const char *p = names[mp_autocast_policy(op, dev)];
        return p ? PyUnicode_FromString(p) : Py_NewRef(Py_None);
    }
    if (!name)
        return NULL;
    Py_RETURN_NONE;
}

/* _autocast_cast(op_name, *tensors) -> tuple: the tensors an op composed in Python should run
 * with under the current autocast state (its row in core/op_table.c); None
 * passes through. The op's own C entry is what autocasts ops written in C. */
static PyObject *f_autocast_cast(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    if (nargs < 1 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "_autocast_cast(op_name, *tensors)");
        return NULL;
    }
    const char *name = PyUnicode_AsUTF8(args[0]);
    int op = name ? mp_op_by_name(name) : -1;
    if (op < 0) {
        if (name)
            PyErr_Format(PyExc_ValueError, "_autocast_cast: no autocast policy for op '%s'",
                         name);
        return NULL;
    }
    Py_ssize_t n = nargs - 1;
    if (n > 8) {
        PyErr_SetString(PyExc_TypeError, "_autocast_cast: at most 8 tensors");
        return NULL;
    }
    mp_tensor *in[8] = {NULL}, *out[8] = {NULL};
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = args[i + 1];
        if (a == Py_None)
            continue;
        if (!mp_is_tensor(s, a)) {
            PyErr_Format(PyExc_TypeError, "_autocast_cast: argument %zd must be a Tensor or "
                         "None, not %.100s", i + 1, Py_TYPE(a)->tp_name);
            return NULL;
        }
        in[i] = MP_T(a);
    }
    mp_status st = mp_autocast_args(op, in, (int)n, out);
    if (st != MP_OK)
        return mp_raise(st);
    PyObject *res = PyTuple_New(n);
    for (Py_ssize_t i = 0; res && i < n; i++) {
        PyObject *o;
        if (!out[i])
            o = Py_NewRef(Py_None);
        else if (out[i] == in[i])
            o = Py_NewRef(args[i + 1]);
        else
            o = mp_wrap(s, out[i]), out[i] = NULL;       /* mp_wrap steals */
        if (!o) {
            Py_CLEAR(res);
            break;
        }
        PyTuple_SET_ITEM(res, i, o);
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (out[i])
            mp_tensor_decref(out[i]);
    return res;
}

PyMethodDef mp_autocast_functions[] = {
    {"_autocast_cast", (PyCFunction)(void (*)(void))f_autocast_cast, METH_FASTCALL,
     "The tensors an op composed in Python runs with under autocast"},
    {"_is_autocast_enabled", f_is_enabled, METH_O, "Autocast flag of a device type"},
    {"_set_autocast_enabled", (PyCFunction)(void (*)(void))f_set_enabled, METH_FASTCALL,
     "Set the autocast flag of a device type (this thread)"},
    {"_get_autocast_dtype", f_get_dtype, METH_O, "Lower-precision dtype of a device type"},
    {"_set_autocast_dtype", (PyCFunction)(void (*)(void))f_set_dtype, METH_FASTCALL,
     "Set the lower-precision dtype of a device type (this thread)"},
    {"_is_autocast_cache_enabled", f_cache_enabled, METH_NOARGS, "Weight-cast cache flag"},
    {"_set_autocast_cache_enabled", f_set_cache_enabled, METH_O, "Set the cache flag"},
    {"_autocast_increment_nesting", f_inc, METH_NOARGS, "Enter a region; new depth"},
    {"_autocast_decrement_nesting", f_dec, METH_NOARGS, "Leave a region; new depth"},
    {"_clear_autocast_cache", f_clear, METH_NOARGS, "Drop every cached weight cast"},
    {"_cast_cache_stats", f_stats, METH_NOARGS, "Weight-cast cache counters"},
    {"_autocast_policy", (PyCFunction)(void (*)(void))f_policy, METH_FASTCALL,
     "The autocast policy of an op on a device type"},
    {NULL, NULL, 0, NULL},
};
