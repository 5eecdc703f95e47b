/* vmath_bind.c - test hooks for the vector math kernels (csrc/cpu/vmath.h): run one ISA
 * level's kernel on a tensor, and the input-space self-test (vmath_check.h). The ops reach the
 * kernels through the core, not through these. */
#include "../bindings/bindings.h"

#include "../cpu/dispatch.h"
#include "vmath_check.h"

static const mp_cpu_kernels *isa_table(PyObject *name)
{
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    int isa = s ? mp_isa_from_name(s) : -1;
    const mp_cpu_kernels *k = isa >= 0 ? mp_cpu_for_isa((mp_isa)isa) : NULL;
    if (!k && !PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "ISA level %R is unknown or not supported by this CPU",
                     name);
    return k;
}

static mp_tensor *f32_input(mp_state *s, PyObject *o, const char *what)
{
    if (!mp_is_tensor(s, o) || MP_T(o)->dtype != MP_DTYPE_FLOAT32 ||
        MP_T(o)->storage->device != MP_DEVICE_CPU || !mp_tensor_is_contiguous(MP_T(o))) {
        PyErr_Format(PyExc_TypeError, "_vmath_with_isa: %s must be a contiguous float32 CPU "
                     "tensor", what);
        return NULL;
    }
    return MP_T(o);
}

static PyObject *map_call(mp_state *s, const mp_vmath *vm, int kind, mp_tensor *x)
{
    mp_tensor *y;
    mp_status st = mp_tensor_empty(x->shape, x->ndim, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &y);
    if (st != MP_OK)
        return mp_raise(st);
    vm->map[kind](mp_tensor_data(x), mp_tensor_data(y), (size_t)mp_tensor_numel(x));
    return mp_wrap(s, y);
}

/* _vmath_with_isa(isa, name, x, arg=None): one kernel of one ISA level on a contiguous fp32
 * tensor. Maps ("exp", "gelu", ...) return a new tensor; "max", "sum" return a float; "dot"
 * takes a second tensor as arg; "exp_sum" takes the shift as arg and returns (sum, tensor);
 * "unscale" takes inv as arg and returns (found, scaled copy of x). */
static PyObject *f_vmath_with_isa(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    if (nargs < 3 || nargs > 4 || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "_vmath_with_isa(isa, name, x, arg=None)");
        return NULL;
    }
    const mp_cpu_kernels *k = isa_table(args[0]);
    mp_tensor *x = k ? f32_input(s, args[2], "x") : NULL;
    const char *name = PyUnicode_AsUTF8(args[1]);
    if (!x || !name)
        return NULL;
    PyObject *arg = nargs == 4 ? args[3] : Py_None;
    const float *xp = mp_tensor_data(x);
    size_t n = (size_t)mp_tensor_numel(x);
    int kind = mp_vm_map_from_name(name);
    if (kind >= 0)
        return map_call(s, &k->vm, kind, x);
    if (strcmp(name, "max") == 0)
        return PyFloat_FromDouble(k->vm.max(xp, n));
    if (strcmp(name, "sum") == 0)
        return PyFloat_FromDouble(k->vm.sum(xp, n));
    if (strcmp(name, "dot") == 0) {
        mp_tensor *y = f32_input(s, arg, "arg");
        if (!y)
            return NULL;
        if (mp_tensor_numel(y) != (int64_t)n) {
            PyErr_SetString(PyExc_ValueError, "_vmath_with_isa: dot of different lengths");
            return NULL;
        }
        return PyFloat_FromDouble(k->vm.dot(xp, mp_tensor_data(y), n));
    }
    if (strcmp(name, "exp_sum") == 0) {
        double shift = PyFloat_AsDouble(arg);
        mp_tensor *y;
        if (shift == -1.0 && PyErr_Occurred())
            return NULL;
        mp_status st = mp_tensor_empty(x->shape, x->ndim, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &y);
        if (st != MP_OK)
            return mp_raise(st);
        double sum = k->vm.exp_sum(xp, (float)shift, mp_tensor_data(y), n);
        PyObject *t = mp_wrap(s, y);
        return t ? Py_BuildValue("(dN)", sum, t) : NULL;
    }
    if (strcmp(name, "unscale") == 0) {       /* arg: inv; returns (found, scaled copy) */
        double inv = PyFloat_AsDouble(arg);
        mp_tensor *y;
        if (inv == -1.0 && PyErr_Occurred())
            return NULL;
        mp_status st = mp_tensor_empty(x->shape, x->ndim, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &y);
        if (st != MP_OK)
            return mp_raise(st);
        memcpy(mp_tensor_data(y), xp, n * sizeof(float));
        int found = k->vm.unscale(mp_tensor_data(y), n, (float)inv);
        PyObject *t = mp_wrap(s, y);
        return t ? Py_BuildValue("(iN)", found, t) : NULL;
    }
    PyErr_Format(PyExc_ValueError, "_vmath_with_isa: unknown function %R", args[1]);
    return NULL;
}

/* _check_vmath(isa, name, chunk_step): runs map kernel `name` of one ISA level and of the
 * scalar level on every chunk_step-th chunk of 64Ki fp32 input patterns (1: all 2^32) and
 * returns a dict: checked, mismatches (bits differing from scalar), first_bad (input pattern
 * or None), max_ulp / worst (against a float64 reference), max_ulp_subnormal /
 * worst_subnormal. The GIL is released meanwhile. */
static PyObject *f_check_vmath(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    (void)m;
    if (nargs != 3 || !PyUnicode_Check(args[1]) || !PyLong_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "_check_vmath(isa, name, chunk_step)");
        return NULL;
    }
    const mp_cpu_kernels *k = isa_table(args[0]);
    const char *name = k ? PyUnicode_AsUTF8(args[1]) : NULL;
    if (!name)
        return NULL;
    int kind = mp_vm_map_from_name(name);
    long step = PyLong_AsLong(args[2]);
    if (step == -1 && PyErr_Occurred())
        return NULL;
    if (kind < 0 || step < 1 || step > 65536) {
        PyErr_Format(PyExc_ValueError, "_check_vmath: unknown function %R or chunk_step not "
                     "in 1..65536", args[1]);
        return NULL;
    }
    mp_vmath_check_result r;
    mp_status st;
    Py_BEGIN_ALLOW_THREADS
    st = mp_vmath_check(k->isa, kind, (uint32_t)step, &r);
    Py_END_ALLOW_THREADS
    if (st == MP_ERR_NOMEM)
        return PyErr_NoMemory();
    if (st != MP_OK) {
        PyErr_SetString(PyExc_RuntimeError, "_check_vmath failed");
        return NULL;
    }
    PyObject *first = r.mismatches ? PyLong_FromUnsignedLong(r.first_bad) : Py_NewRef(Py_None);
    if (!first)
        return NULL;
    return Py_BuildValue("{s:K,s:K,s:N,s:d,s:k,s:d,s:k}", "checked",
                         (unsigned long long)r.checked, "mismatches",
                         (unsigned long long)r.mismatches, "first_bad", first, "max_ulp",
                         r.max_ulp, "worst", (unsigned long)r.worst, "max_ulp_subnormal",
                         r.max_ulp_subnormal, "worst_subnormal",
                         (unsigned long)r.worst_subnormal);
}

PyMethodDef mp_vmath_functions[] = {
    {"_vmath_with_isa", (PyCFunction)(void (*)(void))f_vmath_with_isa, METH_FASTCALL,
     "Test hook: one vector math kernel of one ISA level on a float32 tensor"},
    {"_check_vmath", (PyCFunction)(void (*)(void))f_check_vmath, METH_FASTCALL,
     "Test hook: a vector math kernel vs scalar and a float64 reference over fp32 inputs"},
    {NULL, NULL, 0, NULL},
};
