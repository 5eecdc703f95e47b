/* autograd_bind.c - Python access to the tape: grad mode, backward / autograd.grad, the
 * grad_fn objects, and nodes whose backward is a Python callable (autograd.Function). */
#include "bindings.h"

#include <stdio.h>
#include <string.h>

#include "../core/autograd/autograd.h"

/* ---- grad mode ---- */

static PyObject *f_is_grad_enabled(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    return PyBool_FromLong(mp_grad_enabled());
}

static PyObject *f_set_grad_enabled(PyObject *m, PyObject *arg)
{
    (void)m;
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    mp_set_grad_enabled(on);
    Py_RETURN_NONE;
}

/* ---- backward / grad ---- */

/* Fills ts[0..n) from a sequence of tensors (borrowed); None allowed when allow_none. */
static int tensor_list(mp_state *s, PyObject *seq, mp_tensor ***out, Py_ssize_t *n,
                       int allow_none, const char *what)
{
    PyObject *fast = PySequence_Fast(seq, "expected a sequence of tensors");
    if (!fast)
        return -1;
    *n = PySequence_Fast_GET_SIZE(fast);
    *out = PyMem_Calloc((size_t)(*n ? *n : 1), sizeof **out);
    if (!*out) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(fast, i);
        if (o == Py_None && allow_none)
            continue;
        if (!mp_is_tensor(s, o)) {
            PyErr_Format(PyExc_TypeError, "%s[%zd] must be a Tensor%s, not %.100s", what, i,
                         allow_none ? " or None" : "", Py_TYPE(o)->tp_name);
            Py_DECREF(fast);
            PyMem_Free(*out);
            return -1;
        }
        (*out)[i] = MP_T(o);
    }
    Py_DECREF(fast);
    return 0;
}

static int check_grad_shapes(mp_tensor **roots, mp_tensor **grads, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!grads[i])
            continue;
        mp_tensor *r = roots[i], *g = grads[i];
        if (r->ndim != g->ndim || memcmp(r->shape, g->shape, sizeof(int64_t) *
                                         (size_t)r->ndim) != 0) {
            char a[256], b[256];
            mp_format_shape(a, sizeof a, g->shape, g->ndim);
            mp_format_shape(b, sizeof b, r->shape, r->ndim);
            PyErr_Format(PyExc_RuntimeError, "Mismatch in shape: grad_output[%zd] has a shape "
                         "of %s and output[%zd] has a shape of %s.", i, a, i, b);
            return -1;
        }
    }
    return 0;
}

/* _backward(tensors, grad_tensors, retain_graph) */
static PyObject *f_backward(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_tensor **roots = NULL, **grads = NULL;
    Py_ssize_t n, ng;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_backward(tensors, grad_tensors, retain_graph)");
        return NULL;
    }
    int retain = PyObject_IsTrue(args[2]);
    if (retain < 0 || tensor_list(s, args[0], &roots, &n, 0, "tensors") < 0)
        return NULL;
    if (tensor_list(s, args[1], &grads, &ng, 1, "grad_tensors") < 0) {
        PyMem_Free(roots);
        return NULL;
    }
    PyObject *res = NULL;
    if (ng != n)
        PyErr_Format(PyExc_RuntimeError, "got %zd tensors and %zd gradients", n, ng);
    else if (check_grad_shapes(roots, grads, n) == 0) {
        mp_status st;
        Py_BEGIN_ALLOW_THREADS              /* Python nodes and hooks take it back */
        st = mp_autograd_backward(roots, grads, (int)n, retain, NULL, 0, NULL);
        Py_END_ALLOW_THREADS
        res = st == MP_OK ? Py_NewRef(Py_None) : mp_raise(st);
    }
    PyMem_Free(roots);
    PyMem_Free(grads);
    return res;
}

/* _grad(outputs, grad_outputs, inputs, retain_graph) -> tuple (None where unreachable) */
static PyObject *f_grad(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_tensor **outs = NULL, **gouts = NULL, **ins = NULL, **res = NULL;
    Py_ssize_t no = 0, ng = 0, ni = 0;
    PyObject *tuple = NULL;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "_grad(outputs, grad_outputs, inputs, retain_graph)");
        return NULL;
    }
    int retain = PyObject_IsTrue(args[3]);
    if (retain < 0 || tensor_list(s, args[0], &outs, &no, 0, "outputs") < 0 ||
        tensor_list(s, args[1], &gouts, &ng, 1, "grad_outputs") < 0 ||
        tensor_list(s, args[2], &ins, &ni, 0, "inputs") < 0)
        goto done;
    if (ng != no) {
        PyErr_Format(PyExc_RuntimeError, "got %zd outputs and %zd grad_outputs", no, ng);
        goto done;
    }
    for (Py_ssize_t i = 0; i < ni; i++) {
        mp_status vs = mp_view_stale(ins[i]) ? mp_view_refresh(ins[i]) : MP_OK;
        if (vs != MP_OK) {
            mp_raise(vs);
            goto done;
        }
        if (!ins[i]->requires_grad) {
            PyErr_Format(PyExc_RuntimeError, "One of the differentiated Tensors does not "
                         "require grad");
            goto done;
        }
    }
    if (check_grad_shapes(outs, gouts, no) < 0 ||
        !(res = PyMem_Calloc((size_t)(ni ? ni : 1), sizeof *res)))
        goto done;
    mp_status st;
    Py_BEGIN_ALLOW_THREADS
    st = mp_autograd_backward(outs, gouts, (int)no, retain, ins, (int)ni, res);
    Py_END_ALLOW_THREADS
    if (st != MP_OK) {
        mp_raise(st);
        goto done;
    }
    tuple = PyTuple_New(ni);
    for (Py_ssize_t i = 0; tuple && i < ni; i++) {
        PyObject *o = res[i] ? mp_wrap(s, res[i]) : Py_NewRef(Py_None);
        res[i] = NULL;
        if (!o)
            Py_CLEAR(tuple);
        else
            PyTuple_SET_ITEM(tuple, i, o);
    }
done:
    for (Py_ssize_t i = 0; res && i < ni; i++)
        mp_tensor_decref(res[i]);
    PyMem_Free(outs);
    PyMem_Free(gouts);
    PyMem_Free(ins);
    PyMem_Free(res);
    return tuple;
}

/* ---- nodes with a Python backward (autograd.Function) ---- */

typedef struct {
    PyObject *callback;   /* callable(*grads) -> sequence of grads, one per tensor input */
    mp_state *state;
    char name[128];       /* the node's name points here */
} py_node_ctx;

static void py_ctx_release(void *p)
{
    py_node_ctx *c = p;
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF(c->callback);
    PyGILState_Release(g);
    PyMem_RawFree(c);
}

static mp_status py_result_to_grads(mp_node *n, PyObject *res, mp_tensor **gin)
{
    PyObject *fast = PySequence_Fast(res, "backward must return a tuple of gradients");
    if (!fast)
        return MP_ERR_RUNTIME;
    mp_status st = MP_OK;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(fast);
    mp_state *s = ((py_node_ctx *)n->ctx)->state;
    if (k < n->n_inputs) {
        st = mp_error(MP_ERR_RUNTIME, "function %s returned an incorrect number of gradients "
                      "(expected %d, got %zd)", n->name, n->n_inputs, k);
    }
    for (int i = 0; i < n->n_inputs && st == MP_OK; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(fast, i);
        if (o == Py_None)
            continue;
        if (!mp_is_tensor(s, o)) {
            st = mp_error(MP_ERR_TYPE, "function %s returned a gradient of type %.100s at "
                          "index %d; expected a Tensor or None", n->name,
                          Py_TYPE(o)->tp_name, i);
            break;
        }
        int nd;
        const int64_t *shape = mp_node_in_shape(n, i, &nd);
        mp_tensor *g = MP_T(o);
        if (g->ndim != nd || memcmp(g->shape, shape, sizeof(int64_t) * (size_t)nd) != 0) {
            char a[256], b[256];
            mp_format_shape(a, sizeof a, g->shape, g->ndim);
            mp_format_shape(b, sizeof b, shape, nd);
            st = mp_error(MP_ERR_RUNTIME, "Function %s returned an invalid gradient at index "
                          "%d - got %s but expected shape compatible with %s", n->name, i, a,
                          b);
            break;
        }
        mp_tensor_incref(gin[i] = g);
    }
    Py_DECREF(fast);
    return st;
}

static mp_status py_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    py_node_ctx *c = n->ctx;
    PyObject *args = PyTuple_New(n->n_outputs);
    for (int i = 0; args && i < n->n_outputs; i++) {
        PyObject *o = Py_NewRef(Py_None);
        if (gout[i]) {
            mp_tensor_incref(gout[i]);
            Py_SETREF(o, mp_wrap(c->state, gout[i]));
        }
        if (!o) {
            Py_CLEAR(args);
            break;
        }
        PyTuple_SET_ITEM(args, i, o);
    }
    PyObject *res = args ? PyObject_CallObject(c->callback, args) : NULL;
    Py_XDECREF(args);
    if (!res) {
        /* keep the Python exception; tell the engine to stop */
        return mp_error(MP_ERR_RUNTIME, "(python exception)");
    }
    mp_status st = py_result_to_grads(n, res, gin);
    Py_DECREF(res);
    return st;
}

/* The engine runs without the GIL (other Python threads, e.g. DDP's communication thread,
 * make progress during a long backward); Python callables take it back for their call. */
static mp_status py_backward_gil(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    PyGILState_STATE g = PyGILState_Ensure();
    mp_status st = py_backward(n, gout, gin);
    PyGILState_Release(g);
    return st;
}

/* _record_function(name, callback, inputs, outputs): inputs are the tensor arguments in
 * order; outputs get the new node as grad_fn. Returns True when a node was recorded. */
static PyObject *f_record_function(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_tensor **ins = NULL, **outs = NULL;
    Py_ssize_t ni, no;
    if (nargs != 4 || !PyUnicode_Check(args[0]) || !PyCallable_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "_record_function(name, callback, inputs, outputs)");
        return NULL;
    }
    if (tensor_list(s, args[2], &ins, &ni, 1, "inputs") < 0)
        return NULL;
    if (tensor_list(s, args[3], &outs, &no, 1, "outputs") < 0) {
        PyMem_Free(ins);
        return NULL;
    }
    const char *cname = PyUnicode_AsUTF8(args[0]);
    py_node_ctx *c = cname ? PyMem_RawMalloc(sizeof *c) : NULL;
    PyObject *res = NULL;
    mp_node *node = NULL;
    if (!c) {
        if (cname)
            PyErr_NoMemory();
        goto done;
    }
    snprintf(c->name, sizeof c->name, "%s", cname);
    mp_status st = mp_autograd_record(c->name, py_backward_gil, ins, (int)ni, outs, (int)no,
                                      &node);
    if (st != MP_OK) {
        mp_raise(st);
        PyMem_RawFree(c);
    } else if (node) {
        c->callback = Py_NewRef(args[1]);
        c->state = s;
        node->ctx = c;          /* owns the name the node points at */
        node->release_ctx = py_ctx_release;
        res = Py_NewRef(Py_True);
    } else {
        PyMem_RawFree(c);
        res = Py_NewRef(Py_False);
    }
done:
    PyMem_Free(ins);
    PyMem_Free(outs);
    return res;
}

PyMethodDef mp_autograd_functions[] = {
    {"is_grad_enabled", f_is_grad_enabled, METH_NOARGS, "True unless inside no_grad"},
    {"_set_grad_enabled", f_set_grad_enabled, METH_O, "Set this thread's grad mode"},
    {"_backward", (PyCFunction)(void (*)(void))f_backward, METH_FASTCALL,
     "Run backward from tensors, accumulating into leaves' .grad"},
    {"_grad", (PyCFunction)(void (*)(void))f_grad, METH_FASTCALL,
     "Gradients of outputs with respect to inputs (autograd.grad)"},
    {"_record_function", (PyCFunction)(void (*)(void))f_record_function, METH_FASTCALL,
     "Record a node whose backward is a Python callable"},
    {NULL, NULL, 0, NULL},
};
