/* op_table_bind.c - the core's op and dtype tables (csrc/core/ops/op_table.h, dtypes.h) seen
 * from Python: _C._dtype_table() (dtype.c builds it), _C.op_ids
 * (name -> id, what mpamp's Python passes to _C._binary, _C._compare, _C._logic and
 * _C._maximum) and _C._op_table() (one tuple per id, for tests and introspection). Import
 * fails when an id has no complete row. */
#include "bindings.h"

#include "../core/ops/op_table.h"

static const char *const kind_names[] = {NULL, "binary", "compare", "logical", "bitwise",
                                         "extremum", "unary", "other", "python"};
static const char *const policy_names[] = {NULL, "lower", "fp32", "promote", "banned"};

static PyObject *opt_str(const char *s)
{
    return s ? PyUnicode_FromString(s) : Py_NewRef(Py_None);
}

/* _op_table() -> list indexed by op id of (name, kind, cpu policy, cuda policy, backward) */
static PyObject *f_op_table(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    PyObject *list = PyList_New(MP_OP_COUNT);
    for (int op = 0; list && op < MP_OP_COUNT; op++) {
        const mp_op_row *r = mp_op_info(op);
        PyObject *row = Py_BuildValue("(NNNNN)", opt_str(r->name), opt_str(kind_names[r->kind]),
                                      opt_str(policy_names[r->autocast[MP_DEVICE_CPU]]),
                                      opt_str(policy_names[r->autocast[MP_DEVICE_CUDA]]),
                                      opt_str(r->backward));
        if (!row)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, op, row);
    }
    return list;
}

int mp_op_table_init(PyObject *module)
{
    int bad = mp_op_table_check();
    if (bad >= 0) {
        PyErr_Format(PyExc_ImportError, "mpamp: op id %d has no complete row in "
                     "csrc/core/ops/op_table.c", bad);
        return -1;
    }
    PyObject *ids = PyDict_New();
    for (int op = 0; ids && op < MP_OP_COUNT; op++) {
        const char *name = mp_op_info(op)->name;
        if (PyDict_GetItemString(ids, name))       /* the first row of a name wins (gelu) */
            continue;
        PyObject *v = PyLong_FromLong(op);
        if (!v || PyDict_SetItemString(ids, name, v) < 0)
            Py_CLEAR(ids);
        Py_XDECREF(v);
    }
    if (!ids || PyModule_AddObject(module, "op_ids", ids) < 0) {
        Py_XDECREF(ids);
        return -1;
    }
    return 0;
}

PyMethodDef mp_op_table_functions[] = {
    {"_dtype_table", mp_dtype_table, METH_NOARGS,
     "_dtype_table(): per dtype, {name, torch_name, storage, safetensors, spellings}"},
    {"_op_table", f_op_table, METH_NOARGS,
     "_op_table(): per op id, (name, kind, cpu policy, cuda policy, backward)"},
    {NULL, NULL, 0, NULL},
};

int mp_op_arg(PyObject *o, int kind, int kind2, const char *fname, const mp_op_row **row)
{
    long op = PyLong_Check(o) ? PyLong_AsLong(o) : -1;
    if (op == -1 && PyErr_Occurred())
        return -1;
    const mp_op_row *r = mp_op_info((int)op);
    if (!r || ((int)r->kind != kind && (int)r->kind != kind2)) {
        PyErr_Format(PyExc_ValueError, "%s: %R is not an op id of this function (the ids are "
                     "in _C.op_ids)", fname, o);
        return -1;
    }
    *row = r;
    return 0;
}

int mp_op_choice(PyObject *o, const char *fname, int a, int b)
{
    long op = PyLong_Check(o) && !PyBool_Check(o) ? PyLong_AsLong(o) : -2;
    if (op == -1 && PyErr_Occurred())
        return -1;
    if (op == a || op == b)
        return op == b;
    PyErr_Format(PyExc_ValueError, "%s: %R is not the op id of %s or %s (the ids are in "
                 "_C.op_ids)", fname, o, mp_op_info(a)->name, mp_op_info(b)->name);
    return -1;
}
