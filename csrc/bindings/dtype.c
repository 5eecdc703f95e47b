/* dtype.c - the mpamp.dtype type (one immutable instance per mp_dtype) and the single parser
 * that turns user spellings of a dtype into an mp_dtype. */
#include "bindings.h"

#include <string.h>

typedef struct {
    PyObject_HEAD
    mp_dtype dtype;
} MPDtype;

static const char *const dtype_names[MP_DTYPE_COUNT] = {"float32", "float16", "bfloat16",
                                                        "int64", "bool", "uint8"};

static const struct {
    const char *name;
    mp_dtype dtype;
} dtype_strings[] = {
    {"fp32", MP_DTYPE_FLOAT32}, {"float32", MP_DTYPE_FLOAT32}, {"fp16", MP_DTYPE_FLOAT16},
    {"float16", MP_DTYPE_FLOAT16}, {"half", MP_DTYPE_FLOAT16}, {"bf16", MP_DTYPE_BFLOAT16},
    {"bfloat16", MP_DTYPE_BFLOAT16},
};

#define ACCEPTED "mpamp.float32, mpamp.float16, mpamp.bfloat16, mpamp.int64, mpamp.bool, " \
                 "mpamp.uint8 or " \
                 "one of the strings 'fp32', 'float32', 'fp16', 'float16', 'half', 'bf16', " \
                 "'bfloat16'"

static PyObject *dtype_repr(PyObject *self)
{
    return PyUnicode_FromFormat("mpamp.%s", dtype_names[((MPDtype *)self)->dtype]);
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
    return PyUnicode_FromString(dtype_names[((MPDtype *)self)->dtype]);
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
        if (PyModule_AddObjectRef(module, dtype_names[i], (PyObject *)d) < 0)
            return -1;
    }
    return 0;
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
        for (size_t i = 0; i < sizeof dtype_strings / sizeof dtype_strings[0]; i++) {
            if (strcmp(str, dtype_strings[i].name) == 0) {
                *out = dtype_strings[i].dtype;
                return 0;
            }
        }
        PyErr_Format(PyExc_ValueError, "unknown dtype %R: expected " ACCEPTED, obj);
        return -1;
    }
    PyErr_Format(PyExc_TypeError, "dtype must be " ACCEPTED ", not %.100s",
                 Py_TYPE(obj)->tp_name);
    return -1;
}
