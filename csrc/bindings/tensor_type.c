/* tensor_type.c - the heap type _C.TensorBase: lifetime, introspection (shape, dtype, item,
 * ...), and dtype conversion. mpamp.Tensor subclasses it in Python; views and indexing are in
 * tensor_views.c, NumPy/buffer/DLPack interop in interop_*.c. */
#include "bindings.h"

#include <stddef.h>
#include <string.h>
#include <structmember.h>

#include "../core/ops/ops.h"
#include "../core/view.h"

mp_state *mp_state_of_type(PyTypeObject *tp)
{
    PyObject *m = PyType_GetModuleByDef(tp, &mp_module_def);
    return m ? (mp_state *)PyModule_GetState(m) : NULL;
}

mp_state *mp_state_of_module(PyObject *m)
{
    return (mp_state *)PyModule_GetState(m);
}

PyObject *mp_wrap(mp_state *s, mp_tensor *t)
{
    if (!t)
        return PyErr_Occurred() ? NULL : mp_raise(MP_ERR_NOMEM);
    PyTypeObject *tp = s->tensor_class;
    MPTensor *o = (MPTensor *)tp->tp_alloc(tp, 0);
    if (!o) {
        mp_tensor_decref(t);
        return NULL;
    }
    o->t = t;
    return (PyObject *)o;
}

int mp_is_tensor(mp_state *s, PyObject *obj)
{
    return PyObject_TypeCheck(obj, s->tensor_base);
}

static int tensor_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(((MPTensor *)self)->grad_obj);
    Py_VISIT(Py_TYPE(self));
    return mp_tensor_traverse_hooks(self, visit, arg);
}

static int tensor_clear(PyObject *self)
{
    Py_CLEAR(((MPTensor *)self)->grad_obj);
    mp_tensor_clear_hooks(self);
    return 0;
}

static void tensor_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    MPTensor *o = (MPTensor *)self;
    PyObject_GC_UnTrack(self);
    if (o->weakreflist)
        PyObject_ClearWeakRefs(self);
    Py_CLEAR(o->grad_obj);
    mp_tensor_decref(o->t);
    o->t = NULL;
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* TensorBase(*sizes): an uninitialised float32 tensor, as torch.Tensor(2, 3). */
static PyObject *tensor_new(PyTypeObject *tp, PyObject *args, PyObject *kwargs)
{
    int64_t shape[MP_MAX_DIMS] = {0};
    int ndim = 1;
    mp_state *s = mp_state_of_type(tp);
    if (!s)
        return NULL;
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "Tensor() takes no keyword arguments; use "
                        "mpamp.tensor(data, dtype=..., requires_grad=...)");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n > 0 && mp_parse_shape(&PyTuple_GET_ITEM(args, 0), n, "Tensor", shape, &ndim) < 0)
        return NULL;
    mp_tensor *t;
    mp_status st = mp_tensor_empty(shape, ndim, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &t);
    if (st != MP_OK)
        return mp_raise(st);
    MPTensor *o = (MPTensor *)tp->tp_alloc(tp, 0);
    if (!o) {
        mp_tensor_decref(t);
        return NULL;
    }
    o->t = t;
    return (PyObject *)o;
}

/* ---- getters ---- */

static PyObject *get_shape(PyObject *self, void *c)
{
    (void)c;
    mp_tensor *t = MP_T(self);
    return mp_shape_to_size(mp_state_of_type(Py_TYPE(self)), t->shape, t->ndim);
}

static PyObject *get_dtype(PyObject *self, void *c)
{
    (void)c;
    mp_state *s = mp_state_of_type(Py_TYPE(self));
    return Py_NewRef(s->dtypes[MP_T(self)->dtype]);
}

static PyObject *get_device(PyObject *self, void *c)
{
    (void)c;
    mp_state *s = mp_state_of_type(Py_TYPE(self));
    if (MP_T(self)->storage->device == MP_DEVICE_CUDA) {
        if (!s->cuda_device && s->cpu_device)   /* mpamp.device('cuda', 0), made once */
            s->cuda_device = PyObject_CallFunction((PyObject *)Py_TYPE(s->cpu_device), "si",
                                                   "cuda", 0);
        if (!s->cuda_device)
            return PyErr_Occurred() ? NULL : PyUnicode_FromString("cuda:0");
        return Py_NewRef(s->cuda_device);
    }
    if (!s->cpu_device)
        return PyUnicode_FromString("cpu");
    return Py_NewRef(s->cpu_device);
}

static PyObject *get_ndim(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(MP_T(self)->ndim);
}

static PyObject *get_is_cuda(PyObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(MP_T(self)->storage->device == MP_DEVICE_CUDA);
}

static PyObject *get_requires_grad(PyObject *self, void *c)
{
    (void)c;
    if (mp_tensor_sync(self) < 0)
        return NULL;
    return PyBool_FromLong(MP_T(self)->requires_grad);
}

static int set_requires_grad(PyObject *self, PyObject *value, void *c)
{
    (void)c;
    if (!value) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete requires_grad");
        return -1;
    }
    int flag = PyObject_IsTrue(value);
    if (flag < 0 || mp_tensor_sync(self) < 0)
        return -1;
    if (flag && !mp_dtype_is_float(MP_T(self)->dtype)) {
        PyErr_SetString(PyExc_RuntimeError, "only Tensors of floating point dtype can require "
                        "gradients");
        return -1;
    }
    if (MP_T(self)->grad_fn) {
        if (flag)
            return 0;
        PyErr_SetString(PyExc_RuntimeError, "you can only change requires_grad flags of leaf "
                        "variables. If you want to use a computed variable in a subgraph that "
                        "doesn't require differentiation use var_no_grad = var.detach().");
        return -1;
    }
    mp_tensor *t = MP_T(self);
    if (flag && t->base && !t->base->requires_grad) {
        mp_tensor_decref(t->base);      /* a leaf of its own now, no longer a view */
        t->base = NULL;
    }
    t->requires_grad = flag;
    return 0;
}

static PyObject *get_grad(PyObject *self, void *c)
{
    (void)c;
    MPTensor *o = (MPTensor *)self;
    mp_tensor *g = o->t->grad;
    if (!g) {
        Py_CLEAR(o->grad_obj);
        Py_RETURN_NONE;
    }
    if (!o->grad_obj || MP_T(o->grad_obj) != g) {
        mp_tensor_incref(g);
        PyObject *w = mp_wrap(mp_state_of_type(Py_TYPE(self)), g);
        if (!w)
            return NULL;
        Py_XSETREF(o->grad_obj, w);
    }
    return Py_NewRef(o->grad_obj);
}

static int set_grad(PyObject *self, PyObject *value, void *c)
{
    (void)c;
    MPTensor *o = (MPTensor *)self;
    mp_state *s = mp_state_of_type(Py_TYPE(self));
    if (value && value != Py_None) {
        if (!mp_is_tensor(s, value)) {
            PyErr_Format(PyExc_TypeError, "assigned grad expected to be a Tensor or None but "
                         "got grad of type %.100s", Py_TYPE(value)->tp_name);
            return -1;
        }
        mp_tensor *g = MP_T(value), *t = o->t;
        if (g->ndim != t->ndim || memcmp(g->shape, t->shape, sizeof(int64_t) *
                                         (size_t)t->ndim) != 0) {
            PyErr_SetString(PyExc_RuntimeError, "assigned grad has data of a different size");
            return -1;
        }
        if (g->dtype != t->dtype) {
            PyErr_SetString(PyExc_RuntimeError, "assigned grad has data of a different type");
            return -1;
        }
        mp_tensor_incref(g);
        mp_tensor_decref(t->grad);
        t->grad = g;
        Py_XSETREF(o->grad_obj, Py_NewRef(value));
        return 0;
    }
    mp_tensor_decref(o->t->grad);
    o->t->grad = NULL;
    Py_CLEAR(o->grad_obj);
    return 0;
}

static PyObject *get_grad_fn(PyObject *self, void *c)
{
    (void)c;
    if (mp_tensor_sync(self) < 0)
        return NULL;
    return mp_wrap_node(mp_state_of_type(Py_TYPE(self)), MP_T(self)->grad_fn);
}

static PyObject *get_is_leaf(PyObject *self, void *c)
{
    (void)c;
    if (mp_tensor_sync(self) < 0)
        return NULL;
    return PyBool_FromLong(MP_T(self)->grad_fn == NULL);
}

static PyObject *get_itemsize(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(mp_dtype_size(MP_T(self)->dtype));
}

static PyObject *get_nbytes(PyObject *self, void *c)
{
    (void)c;
    mp_tensor *t = MP_T(self);
    return PyLong_FromLongLong(mp_tensor_numel(t) * (int64_t)mp_dtype_size(t->dtype));
}

static PyGetSetDef tensor_getset[] = {
    {"shape", get_shape, NULL, "The size of each dimension (an mpamp.Size)", NULL},
    {"dtype", get_dtype, NULL, "Element type", NULL},
    {"device", get_device, NULL, "Where the data lives", NULL},
    {"ndim", get_ndim, NULL, "Number of dimensions", NULL},
    {"is_cuda", get_is_cuda, NULL, "True when the data is on a CUDA device", NULL},
    {"requires_grad", get_requires_grad, set_requires_grad, "Whether autograd records ops",
     NULL},
    {"grad", get_grad, set_grad, "Accumulated gradient (leaves), or None", NULL},
    {"grad_fn", get_grad_fn, NULL, "The node that produced this tensor, or None", NULL},
    {"is_leaf", get_is_leaf, NULL, "True unless produced by a recorded op", NULL},
    {"itemsize", get_itemsize, NULL, "Bytes per element", NULL},
    {"nbytes", get_nbytes, NULL, "Bytes of the elements viewed", NULL},
    {"_version", mp_get_version, NULL, "Writes into the storage so far (autograd's counter)",
     NULL},
    {"_base", mp_get_base, NULL, "The tensor this one is a view of, or None", NULL},
    {"retains_grad", mp_get_retains_grad, NULL, "True after retain_grad() on a non-leaf",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---- methods ---- */

static PyObject *m_dim(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromLong(MP_T(self)->ndim);
}

static PyObject *m_numel(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromLongLong(mp_tensor_numel(MP_T(self)));
}

static PyObject *m_size(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    mp_tensor *t = MP_T(self);
    int d;
    int64_t dim;
    if (nargs == 0 || args[0] == Py_None)
        return mp_shape_to_size(mp_state_of_type(Py_TYPE(self)), t->shape, t->ndim);
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "size() takes at most one argument (dim)");
        return NULL;
    }
    if (mp_parse_int64(args[0], "size", "dim", &dim) < 0)
        return NULL;
    mp_status st = mp_wrap_dim(dim, t->ndim, &d);
    if (st != MP_OK)
        return mp_raise(st);
    return PyLong_FromLongLong(t->ndim ? t->shape[d] : 1);
}

static PyObject *m_stride(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    mp_tensor *t = MP_T(self);
    int d;
    int64_t dim;
    if (nargs == 0 || args[0] == Py_None) {
        PyObject *tup = PyTuple_New(t->ndim);
        for (int i = 0; tup && i < t->ndim; i++)
            PyTuple_SET_ITEM(tup, i, PyLong_FromLongLong(t->strides[i]));
        return tup;
    }
    if (mp_parse_int64(args[0], "stride", "dim", &dim) < 0)
        return NULL;
    mp_status st = mp_wrap_dim(dim, t->ndim, &d);
    if (st != MP_OK)
        return mp_raise(st);
    return PyLong_FromLongLong(t->ndim ? t->strides[d] : 1);
}

static PyObject *m_storage_offset(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromLongLong(MP_T(self)->offset);
}

static PyObject *m_data_ptr(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromVoidPtr(mp_tensor_data(MP_T(self)));
}

static PyObject *m_element_size(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromSize_t(mp_dtype_size(MP_T(self)->dtype));
}

static PyObject *m_is_contiguous(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(mp_tensor_is_contiguous(MP_T(self)));
}

static PyObject *m_is_floating_point(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(mp_dtype_is_float(MP_T(self)->dtype));
}

static PyObject *scalar_to_py(mp_dtype dt, mp_scalar v)
{
    if (dt == MP_DTYPE_BOOL)
        return PyBool_FromLong(v.i != 0);
    if (v.is_int)
        return PyLong_FromLongLong(v.i);
    return PyFloat_FromDouble(v.f);
}

static PyObject *m_item(PyObject *self, PyObject *unused)
{
    (void)unused;
    mp_tensor *t = MP_T(self);
    int64_t n = mp_tensor_numel(t);
    if (n != 1) {
        PyErr_Format(PyExc_RuntimeError, "a Tensor with %lld elements cannot be converted to "
                     "Scalar", (long long)n);
        return NULL;
    }
    return scalar_to_py(t->dtype, mp_tensor_get_item(t, 0));
}

/* All elements as a flat list of Python numbers (row-major); tolist() reshapes it. */
static PyObject *m_flat_list(PyObject *self, PyObject *unused)
{
    (void)unused;
    mp_tensor *t = MP_T(self);
    int64_t n = mp_tensor_numel(t);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (int64_t i = 0; list && i < n; i++) {
        PyObject *v = scalar_to_py(t->dtype, mp_tensor_get_item(t, i));
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    return list;
}

static Py_ssize_t tensor_len(PyObject *self)
{
    mp_tensor *t = MP_T(self);
    if (t->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d tensor");
        return -1;
    }
    return (Py_ssize_t)t->shape[0];
}

static PyObject *m_requires_grad_(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *flag = nargs > 0 ? args[0] : Py_True;
    if (set_requires_grad(self, flag, NULL) < 0)
        return NULL;
    return Py_NewRef(self);
}

/* ---- dtype conversion ---- */

static PyObject *cast_to(PyObject *self, mp_dtype dtype, int copy)
{
    mp_tensor *t = MP_T(self), *out;
    if (t->dtype == dtype && !copy)
        return Py_NewRef(self);
    mp_state *s = mp_state_of_type(Py_TYPE(self));
    mp_status st;
    if (mp_tensor_numel(t) >= MP_NOGIL_NUMEL) {
        Py_BEGIN_ALLOW_THREADS
        st = mp_op_to_dtype(t, dtype, copy, &out);
        Py_END_ALLOW_THREADS
    } else {
        st = mp_op_to_dtype(t, dtype, copy, &out);
    }
    if (st != MP_OK)
        return mp_raise(st);
    return mp_wrap(s, out);
}

/* _to_dtype(dtype, copy=False): the dtype part of Tensor.to (device handling is Python). */
static PyObject *m_to_dtype(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    mp_dtype dt;
    mp_state *s = mp_state_of_type(Py_TYPE(self));
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "_to_dtype(dtype, copy=False)");
        return NULL;
    }
    if (mp_parse_dtype(s, args[0], MP_T(self)->dtype, &dt) < 0)
        return NULL;
    int copy = nargs > 1 ? PyObject_IsTrue(args[1]) : 0;
    if (copy < 0)
        return NULL;
    return cast_to(self, dt, copy);
}

static PyObject *m_float(PyObject *self, PyObject *u) { (void)u; return cast_to(self, MP_DTYPE_FLOAT32, 0); }
static PyObject *m_half(PyObject *self, PyObject *u) { (void)u; return cast_to(self, MP_DTYPE_FLOAT16, 0); }
static PyObject *m_bfloat16(PyObject *self, PyObject *u) { (void)u; return cast_to(self, MP_DTYPE_BFLOAT16, 0); }
static PyObject *m_long(PyObject *self, PyObject *u) { (void)u; return cast_to(self, MP_DTYPE_INT64, 0); }
static PyObject *m_bool(PyObject *self, PyObject *u) { (void)u; return cast_to(self, MP_DTYPE_BOOL, 0); }
static PyObject *m_byte(PyObject *self, PyObject *u) { (void)u; return cast_to(self, MP_DTYPE_UINT8, 0); }

static PyObject *m_type_as(PyObject *self, PyObject *other)
{
    mp_state *s = mp_state_of_type(Py_TYPE(self));
    if (!mp_is_tensor(s, other)) {
        PyErr_Format(PyExc_TypeError, "type_as(): argument 'other' must be Tensor, not %.100s",
                     Py_TYPE(other)->tp_name);
        return NULL;
    }
    return cast_to(self, MP_T(other)->dtype, 0);
}

static PyObject *m_clone(PyObject *self, PyObject *unused)
{
    (void)unused;
    return cast_to(self, MP_T(self)->dtype, 1);
}

static PyObject *m_contiguous(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (mp_tensor_is_contiguous(MP_T(self)))
        return Py_NewRef(self);
    return cast_to(self, MP_T(self)->dtype, 1);
}

static PyMethodDef tensor_core_methods[] = {
    {"dim", m_dim, METH_NOARGS, "Number of dimensions"},
    {"numel", m_numel, METH_NOARGS, "Number of elements"},
    {"size", (PyCFunction)(void (*)(void))m_size, METH_FASTCALL, "Shape, or one dimension"},
    {"stride", (PyCFunction)(void (*)(void))m_stride, METH_FASTCALL,
     "Strides in elements, or one of them"},
    {"storage_offset", m_storage_offset, METH_NOARGS, "Offset into the storage, in elements"},
    {"data_ptr", m_data_ptr, METH_NOARGS, "Address of the first element"},
    {"element_size", m_element_size, METH_NOARGS, "Bytes per element"},
    {"is_contiguous", m_is_contiguous, METH_NOARGS, "True for row-major dense layout"},
    {"is_floating_point", m_is_floating_point, METH_NOARGS, "True for float dtypes"},
    {"item", m_item, METH_NOARGS, "The value of a one-element tensor as a Python number"},
    {"_flat_list", m_flat_list, METH_NOARGS, "All values as a flat list"},
    {"requires_grad_", (PyCFunction)(void (*)(void))m_requires_grad_, METH_FASTCALL,
     "Set requires_grad in place; returns self"},
    {"_to_dtype", (PyCFunction)(void (*)(void))m_to_dtype, METH_FASTCALL,
     "Convert to a dtype (self when unchanged unless copy)"},
    {"float", m_float, METH_NOARGS, "Convert to float32"},
    {"half", m_half, METH_NOARGS, "Convert to float16"},
    {"bfloat16", m_bfloat16, METH_NOARGS, "Convert to bfloat16"},
    {"long", m_long, METH_NOARGS, "Convert to int64"},
    {"bool", m_bool, METH_NOARGS, "Convert to bool"},
    {"byte", m_byte, METH_NOARGS, "Convert to uint8"},
    {"type_as", m_type_as, METH_O, "Convert to other's dtype"},
    {"clone", m_clone, METH_NOARGS, "A contiguous copy"},
    {"contiguous", m_contiguous, METH_NOARGS, "self if contiguous, else a contiguous copy"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef tensor_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(MPTensor, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

/* This file's methods plus those of tensor_views.c and interop_*.c, joined at init. */
static PyMethodDef tensor_methods[512];

static PyType_Slot tensor_base_slots[] = {
    {Py_tp_dealloc, tensor_dealloc},
    {Py_tp_traverse, tensor_traverse},
    {Py_tp_clear, tensor_clear},
    {Py_tp_new, tensor_new},
    {Py_tp_getset, tensor_getset},
    {Py_tp_methods, tensor_methods},
    {Py_tp_members, tensor_members},
    {Py_sq_length, tensor_len},
    {Py_mp_length, tensor_len},
    {Py_mp_subscript, mp_tensor_getitem},
    {Py_mp_ass_subscript, mp_tensor_setitem},
    {Py_bf_getbuffer, mp_tensor_getbuffer},
    {Py_bf_releasebuffer, mp_tensor_releasebuffer},
    {Py_tp_doc, "The C part of mpamp.Tensor."},
    {0, NULL},
};

static PyType_Spec tensor_spec = {
    .name = "mpamp._C.TensorBase",
    .basicsize = sizeof(MPTensor),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = NULL,          /* tensor_base_slots + mp_tensor_number_slots, joined at init */
};

static PyType_Slot tensor_slots[64];

static int join_slots(void)
{
    size_t n = 0, cap = sizeof tensor_slots / sizeof tensor_slots[0] - 1;
    PyType_Slot *const tables[] = {tensor_base_slots, mp_tensor_number_slots,
                                   mp_tensor_compare_slots, mp_tensor_math_slots};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        for (PyType_Slot *sl = tables[i]; sl->slot; sl++) {
            if (n == cap) {
                PyErr_SetString(PyExc_SystemError, "mpamp: tensor slot table is full");
                return -1;
            }
            tensor_slots[n++] = *sl;
        }
    }
    tensor_slots[n] = (PyType_Slot){0, NULL};
    tensor_spec.slots = tensor_slots;
    return 0;
}

static int join_methods(PyMethodDef *const *tables, size_t ntables)
{
    size_t n = 0, cap = sizeof tensor_methods / sizeof tensor_methods[0] - 1;
    for (size_t i = 0; i < ntables; i++) {
        for (PyMethodDef *d = tables[i]; d->ml_name; d++) {
            if (n == cap) {
                PyErr_SetString(PyExc_SystemError, "mpamp: tensor method table is full");
                return -1;
            }
            tensor_methods[n++] = *d;
        }
    }
    tensor_methods[n] = (PyMethodDef){NULL, NULL, 0, NULL};
    return 0;
}

int mp_tensor_type_init(PyObject *module, mp_state *s)
{
    PyMethodDef *const tables[] = {tensor_core_methods, mp_tensor_view_methods,
                                   mp_tensor_interop_methods, mp_tensor_ops_methods,
                                   mp_tensor_reduce_methods, mp_tensor_matmul_methods,
                                   mp_tensor_compare_methods, mp_tensor_math_methods,
                                   mp_tensor_attention_methods,
                                   mp_tensor_autograd_methods, mp_device_methods};
    if (join_methods(tables, sizeof tables / sizeof tables[0]) < 0 || join_slots() < 0)
        return -1;
    PyObject *tp = PyType_FromModuleAndSpec(module, &tensor_spec, NULL);
    if (!tp)
        return -1;
    s->tensor_base = (PyTypeObject *)tp;
    s->tensor_class = (PyTypeObject *)Py_NewRef(tp);
    return PyModule_AddObjectRef(module, "TensorBase", tp);
}
