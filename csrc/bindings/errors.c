/* errors.c - the one place where mp_status becomes a Python exception. */
#include "bindings.h"

#include "../core/status.h"

static PyObject *exception_for(mp_status st)
{
    switch (st) {
    case MP_ERR_VALUE: return PyExc_ValueError;
    case MP_ERR_TYPE: return PyExc_TypeError;
    case MP_ERR_INDEX: return PyExc_IndexError;
    case MP_ERR_NOMEM: return PyExc_MemoryError;
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
