/* errors.c - the one place where mp_status becomes a Python exception, and the home of
 * mpamp.OutOfMemoryError (RuntimeError and MemoryError, as torch's allocators raise the
 * first and Python code catches the second), raised for every MP_ERR_NOMEM. */
#include "bindings.h"

#include "../core/status.h"

/* One class for the process (like the built-in exceptions), created by the first module
 * exec and kept: mp_raise is called from everywhere, without the module at hand. */
static PyObject *mp_oom_error;

int mp_errors_init(PyObject *module)
{
    if (!mp_oom_error) {
        PyObject *bases = PyTuple_Pack(2, PyExc_RuntimeError, PyExc_MemoryError);
        if (!bases)
            return -1;
        mp_oom_error = PyErr_NewExceptionWithDoc(
            "mpamp.OutOfMemoryError",
            "Raised when memory for a tensor or a kernel's buffers can't be had, after every "
            "cache was released and the allocation retried (a RuntimeError and a MemoryError).",
            bases, NULL);
        Py_DECREF(bases);
        if (!mp_oom_error)
            return -1;
    }
    return PyModule_AddObjectRef(module, "OutOfMemoryError", mp_oom_error);
}

static PyObject *exception_for(mp_status st)
{
    switch (st) {
    case MP_ERR_VALUE: return PyExc_ValueError;
    case MP_ERR_TYPE: return PyExc_TypeError;
    case MP_ERR_INDEX: return PyExc_IndexError;
    case MP_ERR_NOMEM: return mp_oom_error ? mp_oom_error : PyExc_MemoryError;
    case MP_ERR_NOT_IMPLEMENTED: return PyExc_NotImplementedError;
    case MP_ERR_SHAPE:
    case MP_ERR_RUNTIME:
    case MP_ERR_NO_CUDA:
    case MP_ERR_CUDA:
    default: return PyExc_RuntimeError;
    }
}

PyObject *mp_raise(mp_status st)
{
    if (PyErr_Occurred())
        return NULL;       /* a Python exception (e.g. from a user Function) wins */
    if (st == MP_OK) {
        PyErr_SetString(PyExc_SystemError, "mpamp: mp_raise called without an error");
        return NULL;
    }
    PyErr_SetString(exception_for(st), mp_error_message());
    return NULL;
}

int mp_raise_int(mp_status st)
{
    mp_raise(st);
    return -1;
}
