/* tensor_data.c - _C._set_data(tensor, other): rebinds the data of an existing tensor object,
 * as torch's `tensor.data = other`. nn.Module.to()/half()/... use it so that a Parameter keeps
 * its identity (optimizers built earlier still hold it) while its dtype changes. The object
 * gets a fresh header over other's storage and layout; graphs recorded before the call keep
 * the old header (their gradients go to it, not to the rebound tensor). */
#include "bindings.h"

#include <string.h>

#include "../core/autograd/autograd.h"

static int same_shape(const mp_tensor *a, const mp_tensor *b)
{
    return a->ndim == b->ndim &&
           memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

/* requires_grad stays; the gradient stays when its shape and dtype still fit, else it is
 * dropped (torch would reject such a .grad). Leaves only: a non-leaf's graph would be lost. */
static PyObject *f_set_data(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    if (nargs != 2 || !mp_is_tensor(s, args[0]) || !mp_is_tensor(s, args[1])) {
        PyErr_SetString(PyExc_TypeError, "_set_data(tensor, other) expects two tensors");
        return NULL;
    }
    MPTensor *o = (MPTensor *)args[0];
    mp_tensor *old = o->t, *src = MP_T(args[1]);
    if (old == src)
        Py_RETURN_NONE;
    if (old->grad_fn) {
        PyErr_SetString(PyExc_RuntimeError, "_set_data: only leaf tensors can have their data "
                        "replaced");
        return NULL;
    }
    if (old->requires_grad && !mp_dtype_is_float(src->dtype)) {
        PyErr_SetString(PyExc_RuntimeError, "only Tensors of floating point dtype can require "
                        "gradients");
        return NULL;
    }
    mp_tensor *fresh = mp_tensor_detach(src);
    if (!fresh)
        return mp_raise(MP_ERR_NOMEM);
    fresh->requires_grad = old->requires_grad;
    fresh->hooks = old->hooks;              /* hooks belong to the parameter, not its data */
    old->hooks = NULL;
    if (old->grad && old->grad->dtype == fresh->dtype && same_shape(old->grad, fresh)) {
        fresh->grad = old->grad;            /* moved: .grad keeps its identity */
        old->grad = NULL;
    } else {
        Py_CLEAR(o->grad_obj);
    }
    o->t = fresh;
    mp_tensor_decref(old);
    Py_RETURN_NONE;
}

PyMethodDef mp_tensor_data_functions[] = {
    {"_set_data", (PyCFunction)(void (*)(void))f_set_data, METH_FASTCALL,
     "Make tensor refer to other's data (tensor.data = other)"},
    {NULL, NULL, 0, NULL},
};
