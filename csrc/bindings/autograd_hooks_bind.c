/* autograd_hooks_bind.c - the Python side of gradient hooks and in-place bookkeeping:
 * Tensor.register_hook / register_post_accumulate_grad_hook (Python callables run by the C
 * engine; handles are capsules that _C._remove_hook takes), retain_grad / retains_grad,
 * _version, _base, _is_view(), the .data header (writes through it bump no version), and
 * bringing a stale view's grad_fn up to date before Python reads it. */
#include "bindings.h"

#include "../core/autograd/autograd_hooks.h"
#include "../core/ops/ops.h"

int mp_tensor_sync(PyObject *self)
{
    mp_tensor *t = MP_T(self);
    mp_status st = mp_view_stale(t) ? mp_view_refresh(t) : MP_OK;
    return st == MP_OK ? 0 : mp_raise_int(st);
}

/* ---- Python callables as hooks ---- */

typedef struct {
    PyObject *fn;
    PyObject *owner;      /* weakref to the tensor object the hook was registered on */
    mp_state *state;
} py_hook;

static void py_hook_release(void *p)
{
    py_hook *h = p;
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF(h->fn);
    Py_XDECREF(h->owner);
    PyMem_RawFree(h);
    PyGILState_Release(g);
}

static const char *legacy_type(mp_dtype dt)
{
    switch (dt) {
    case MP_DTYPE_FLOAT16: return "mpamp.HalfTensor";
    case MP_DTYPE_BFLOAT16: return "mpamp.BFloat16Tensor";
    case MP_DTYPE_INT64: return "mpamp.LongTensor";
    case MP_DTYPE_BOOL: return "mpamp.BoolTensor";
    case MP_DTYPE_UINT8: return "mpamp.ByteTensor";
    default: return "mpamp.FloatTensor";
    }
}

/* a hook's result must be a tensor of the gradient's shape and dtype (torch's checks) */
static int check_result(py_hook *h, PyObject *res, const mp_tensor *g)
{
    if (!mp_is_tensor(h->state, res)) {
        PyErr_Format(PyExc_TypeError, "expected Variable, but hook returned '%.100s'",
                     Py_TYPE(res)->tp_name);
        return -1;
    }
    mp_tensor *r = MP_T(res);
    PyObject *name = PyObject_GetAttrString(h->fn, "__name__");
    if (!name) {
        PyErr_Clear();
        name = PyObject_Repr(h->fn);
    }
    int rc = 0;
    if (r->ndim != g->ndim || memcmp(r->shape, g->shape, sizeof(int64_t) * (size_t)g->ndim)) {
        PyErr_Format(PyExc_RuntimeError, "hook '%S' has changed the size of value", name);
        rc = -1;
    } else if (r->dtype != g->dtype) {
        PyErr_Format(PyExc_RuntimeError, "hook '%S' has changed the type of value (was %s got "
                     "%s)", name, legacy_type(g->dtype), legacy_type(r->dtype));
        rc = -1;
    }
    Py_XDECREF(name);
    return rc;
}

static mp_status python_failed(void)
{
    return mp_error(MP_ERR_RUNTIME, "(python exception)");   /* the Python error wins */
}

static mp_status py_tensor_hook_locked(void *ctx, mp_tensor *unused, mp_tensor **grad)
{
    (void)unused;
    py_hook *h = ctx;
    mp_tensor_incref(*grad);
    PyObject *g = mp_wrap(h->state, *grad);
    PyObject *res = g ? PyObject_CallOneArg(h->fn, g) : NULL;
    Py_XDECREF(g);
    if (!res)
        return python_failed();
    if (res != Py_None) {
        if (check_result(h, res, *grad) < 0) {
            Py_DECREF(res);
            return python_failed();
        }
        mp_tensor_incref(MP_T(res));
        mp_tensor_decref(*grad);
        *grad = MP_T(res);
    }
    Py_DECREF(res);
    return MP_OK;
}

/* called with the very object it was registered on (as torch), while that object lives */
static mp_status py_post_hook_locked(void *ctx, mp_tensor *leaf, mp_tensor **unused)
{
    (void)unused;
    py_hook *h = ctx;
    PyObject *obj = PyObject_CallNoArgs(h->owner);     /* a new reference, or None */
    if (!obj)
        return python_failed();
    if (obj == Py_None || MP_T(obj) != leaf) {
        Py_DECREF(obj);
        mp_tensor_incref(leaf);
        obj = mp_wrap(h->state, leaf);
    }
    PyObject *res = obj ? PyObject_CallOneArg(h->fn, obj) : NULL;
    Py_XDECREF(obj);
    if (!res)
        return python_failed();
    Py_DECREF(res);
    return MP_OK;
}

/* The engine runs without the GIL (csrc/bindings/autograd_bind.c): take it for the call. */
static mp_status py_tensor_hook(void *ctx, mp_tensor *t, mp_tensor **grad)
{
    PyGILState_STATE g = PyGILState_Ensure();
    mp_status st = py_tensor_hook_locked(ctx, t, grad);
    PyGILState_Release(g);
    return st;
}

static mp_status py_post_hook(void *ctx, mp_tensor *leaf, mp_tensor **grad)
{
    PyGILState_STATE g = PyGILState_Ensure();
    mp_status st = py_post_hook_locked(ctx, leaf, grad);
    PyGILState_Release(g);
    return st;
}

/* The garbage collector sees a leaf's hook callables (a hook closing over its parameter is a
 * cycle through C) while this object is the tensor's only owner; otherwise the tensor is held
 * from elsewhere too and the callables are not this object's to report. */
int mp_tensor_traverse_hooks(PyObject *self, visitproc visit, void *arg)
{
    mp_tensor *t = MP_T(self);
    if (!t || t->refcount != 1)
        return 0;
    for (mp_hook *h = t->hooks; h; h = h->next)
        if (!h->removed && (h->fn == py_tensor_hook || h->fn == py_post_hook))
            Py_VISIT(((py_hook *)h->ctx)->fn);
    return 0;
}

void mp_tensor_clear_hooks(PyObject *self)
{
    mp_tensor *t = MP_T(self);
    if (t && t->refcount == 1 && t->hooks)
        mp_hook_list_release(&t->hooks);
}

static void handle_destructor(PyObject *cap)
{
    mp_hook_decref(PyCapsule_GetPointer(cap, "mpamp.hook"));
}

static PyObject *add_hook(PyObject *self, PyObject *fn, int kind)
{
    if (mp_tensor_sync(self) < 0)
        return NULL;
    py_hook *h = PyMem_RawMalloc(sizeof *h);
    if (!h)
        return PyErr_NoMemory();
    h->state = mp_state_of_type(Py_TYPE(self));
    h->owner = PyWeakref_NewRef(self, NULL);
    if (!h->owner) {
        PyMem_RawFree(h);
        return NULL;
    }
    h->fn = Py_NewRef(fn);
    mp_hook *handle;
    mp_status st = mp_tensor_add_hook(MP_T(self), kind, kind == MP_HOOK_TENSOR ? py_tensor_hook
                                      : py_post_hook, h, py_hook_release, &handle);
    if (st != MP_OK) {
        py_hook_release(h);
        return mp_raise(st);
    }
    PyObject *cap = PyCapsule_New(handle, "mpamp.hook", handle_destructor);
    if (!cap) {
        mp_hook_remove(handle);
        mp_hook_decref(handle);
    }
    return cap;
}

static PyObject *m_register_hook(PyObject *self, PyObject *fn)
{
    return add_hook(self, fn, MP_HOOK_TENSOR);
}

static PyObject *m_register_post_accumulate_grad_hook(PyObject *self, PyObject *fn)
{
    return add_hook(self, fn, MP_HOOK_POST_ACCUMULATE);
}

static PyObject *f_remove_hook(PyObject *m, PyObject *cap)
{
    (void)m;
    mp_hook *h = PyCapsule_GetPointer(cap, "mpamp.hook");
    if (!h)
        return NULL;
    mp_hook_remove(h);
    Py_RETURN_NONE;
}

/* ---- retain_grad, views, versions ---- */

static PyObject *m_retain_grad(PyObject *self, PyObject *unused)
{
    (void)unused;
    mp_status st = mp_tensor_retain_grad(MP_T(self));
    return st == MP_OK ? Py_NewRef(Py_None) : mp_raise(st);
}

static PyObject *m_is_view(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(MP_T(self)->base != NULL);
}

/* .data: the same data outside autograd, as torch's (writes through it are not versioned) */
static PyObject *m_data_header(PyObject *self, PyObject *unused)
{
    (void)unused;
    mp_tensor *d = mp_tensor_detach(MP_T(self));
    if (!d)
        return mp_raise(MP_ERR_NOMEM);
    d->version_exempt = 1;
    return mp_wrap(mp_state_of_type(Py_TYPE(self)), d);
}

PyObject *mp_get_version(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromLongLong(MP_T(self)->storage->version);
}

PyObject *mp_get_base(PyObject *self, void *c)
{
    (void)c;
    mp_tensor *b = MP_T(self)->base;
    if (!b)
        Py_RETURN_NONE;
    mp_tensor_incref(b);
    return mp_wrap(mp_state_of_type(Py_TYPE(self)), b);
}

PyObject *mp_get_retains_grad(PyObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(MP_T(self)->retains_grad);
}

PyMethodDef mp_tensor_autograd_methods[] = {
    {"_register_hook", m_register_hook, METH_O,
     "_C handle for hook(grad) -> None or a replacement gradient"},
    {"_register_post_accumulate_grad_hook", m_register_post_accumulate_grad_hook, METH_O,
     "_C handle for hook(tensor), called after a leaf's .grad was accumulated"},
    {"retain_grad", m_retain_grad, METH_NOARGS, "Keep the gradient of a non-leaf in .grad"},
    {"_is_view", m_is_view, METH_NOARGS, "True when this tensor is a view of another"},
    {"_data_header", m_data_header, METH_NOARGS,
     "The data outside autograd, with writes not versioned (Tensor.data)"},
    {NULL, NULL, 0, NULL},
};

PyMethodDef mp_hook_functions[] = {
    {"_remove_hook", f_remove_hook, METH_O, "Unregister the hook of a handle capsule"},
    {NULL, NULL, 0, NULL},
};
