/* dtype.c - the mpamp.dtype type (one immutable instance per mp_dtype) and the single parser
 * that turns user spellings of a dtype into an mp_dtype. */
#include "bindings.h"

#include <string.h>

#include "../core/dtypes.h"

typedef struct {
    PyObject_HEAD
    mp_dtype dtype;
} MPDtype;

#define ACCEPTED "mpamp.float32, mpamp.float16, mpamp.bfloat16, mpamp.int64, mpamp.bool, " \
                 "mpamp.uint8 or one of the strings "

static PyObject *dtype_repr(PyObject *self)
{
    return PyUnicode_FromFormat("mpamp.%s", mp_dtype_name(((MPDtype *)self)->dtype));
}

static PyObject *dtype_is_floating_point(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(mp_dtype_is_float(((MPDtype *)self)->dtype));
}

static PyObject *dtype_itemsize(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(mp_dtype_size(((MPDtype *)self)->dtype));
}

static PyObject *dtype_is_signed(PyObject *self, void *closure)
{
    (void)closure;
    mp_dtype dt = ((MPDtype *)self)->dtype;
    return PyBool_FromLong(dt != MP_DTYPE_BOOL && dt != MP_DTYPE_UINT8);
}

static PyObject *dtype_index(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(((MPDtype *)self)->dtype);
}

static PyObject *dtype_reduce(PyObject *self, PyObject *unused)
{
    (void)unused;
    /* pickles by name: mpamp.float32 etc. are module attributes */
    return PyUnicode_FromString(mp_dtype_name(((MPDtype *)self)->dtype));
}

static PyGetSetDef dtype_getset[] = {
    {"is_floating_point", dtype_is_floating_point, NULL, "True for float32/float16/bfloat16",
     NULL},
    {"itemsize", dtype_itemsize, NULL, "Bytes per element", NULL},
    {"is_signed", dtype_is_signed, NULL, "False for bool and uint8", NULL},
    {"_index", dtype_index, NULL, "Position in the core's dtype enum", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef dtype_methods[] = {
    {"__reduce__", dtype_reduce, METH_NOARGS, "Pickle by name"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot dtype_slots[] = {
    {Py_tp_repr, dtype_repr},
    {Py_tp_getset, dtype_getset},
    {Py_tp_methods, dtype_methods},
    {Py_tp_doc, "A tensor element type: mpamp.float32, float16, bfloat16, int64, bool or uint8."},
    {0, NULL},
};

static PyType_Spec dtype_spec = {
    .name = "mpamp.dtype",
    .basicsize = sizeof(MPDtype),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = dtype_slots,
};

int mp_dtype_type_init(PyObject *module, mp_state *s)
{
    s->dtype_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &dtype_spec, NULL);
    if (!s->dtype_type || PyModule_AddObjectRef(module, "dtype", (PyObject *)s->dtype_type) < 0)
        return -1;
    for (int i = 0; i < MP_DTYPE_COUNT; i++) {
        MPDtype *d = PyObject_New(MPDtype, s->dtype_type);
        if (!d)
            return -1;
        d->dtype = (mp_dtype)i;
        s->dtypes[i] = (PyObject *)d;
        if (PyModule_AddObjectRef(module, mp_dtype_name(i), (PyObject *)d) < 0)
            return -1;
    }
    return 0;
}

/* _dtype_table() -> list indexed by dtype of {name, torch_name, storage, safetensors,
 * spellings}: what mpamp's Python reads instead of spelling dtypes itself */
PyObject *mp_dtype_table(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    PyObject *list = PyList_New(MP_DTYPE_COUNT);
    for (int dt = 0; list && dt < MP_DTYPE_COUNT; dt++) {
        const mp_dtype_row *r = mp_dtype_info(dt);
        PyObject *sp = PyTuple_New(0);
        for (const char *const *p = r->spellings; sp && *p; p++) {
            PyObject *str = PyUnicode_FromString(*p);
            if (!str || _PyTuple_Resize(&sp, PyTuple_GET_SIZE(sp) + 1) < 0) {
                Py_XDECREF(str);
                Py_CLEAR(sp);
                break;
            }
            PyTuple_SET_ITEM(sp, PyTuple_GET_SIZE(sp) - 1, str);
        }
        PyObject *row = sp ? Py_BuildValue("{s:s,s:s,s:s,s:s,s:N}", "name", r->name,
                                           "torch_name", r->torch_name, "storage", r->storage,
                                           "safetensors", r->safetensors, "spellings", sp)
                           : NULL;
        if (!row)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, dt, row);
    }
    return list;
}

int mp_parse_dtype(mp_state *s, PyObject *obj, mp_dtype dflt, mp_dtype *out)
{
    if (obj == NULL || obj == Py_None) {
        *out = dflt;
        return 0;
    }
    if (Py_IS_TYPE(obj, s->dtype_type)) {
        *out = ((MPDtype *)obj)->dtype;
        return 0;
    }
    if (PyUnicode_Check(obj)) {
        const char *str = PyUnicode_AsUTF8(obj);
        if (!str)
            return -1;
        int dt = mp_dtype_from_string(str);
        if (dt >= 0) {
            *out = (mp_dtype)dt;
            return 0;
        }
        PyErr_Format(PyExc_ValueError, "unknown dtype %R: expected " ACCEPTED "%s", obj,
                     mp_dtype_spellings_text());
        return -1;
    }
    PyErr_Format(PyExc_TypeError, "dtype must be " ACCEPTED "%s, not %.100s",
                 mp_dtype_spellings_text(), Py_TYPE(obj)->tp_name);
    return -1;
}
