/* node_type.c - the Python face of an autograd node (tensor.grad_fn): name(),
 * next_functions, repr. Holds a reference to the core node. */
#include "bindings.h"

#include "../core/autograd/autograd.h"

typedef struct {
    PyObject_HEAD
    mp_node *node;
} MPNode;

static PyTypeObject *node_type(mp_state *s);

static void node_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    mp_node_decref(((MPNode *)self)->node);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *node_repr(PyObject *self)
{
    return PyUnicode_FromFormat("<%s object at %p>", ((MPNode *)self)->node->name, self);
}

static PyObject *node_name(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyUnicode_FromString(((MPNode *)self)->node->name);
}

static PyObject *node_next_functions(PyObject *self, void *closure)
{
    (void)closure;
    mp_node *n = ((MPNode *)self)->node;
    mp_state *s = mp_state_of_type(Py_TYPE(self));
    PyObject *tup = PyTuple_New(n->n_inputs);
    for (int i = 0; tup && i < n->n_inputs; i++) {
        PyObject *fn = mp_wrap_node(s, n->next[i].node);
        PyObject *pair = fn ? Py_BuildValue("(Ni)", fn, n->next[i].output_nr) : NULL;
        if (!pair) {
            Py_CLEAR(tup);
            break;
        }
        PyTuple_SET_ITEM(tup, i, pair);
    }
    return tup;
}

static PyObject *node_variable(PyObject *self, void *closure)
{
    (void)closure;
    mp_node *n = ((MPNode *)self)->node;
    if (!n->leaf) {
        PyErr_SetString(PyExc_AttributeError, "only AccumulateGrad nodes have a variable");
        return NULL;
    }
    mp_tensor_incref(n->leaf);
    return mp_wrap(mp_state_of_type(Py_TYPE(self)), n->leaf);
}

static PyObject *node_richcompare(PyObject *a, PyObject *b, int op)
{
    if (Py_TYPE(a) != Py_TYPE(b) || (op != Py_EQ && op != Py_NE))
        Py_RETURN_NOTIMPLEMENTED;
    int eq = ((MPNode *)a)->node == ((MPNode *)b)->node;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t node_hash(PyObject *self)
{
    return _Py_HashPointer(((MPNode *)self)->node);
}

static PyMethodDef node_methods[] = {
    {"name", node_name, METH_NOARGS, "The node's name, e.g. 'AddBackward0'"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef node_getset[] = {
    {"next_functions", node_next_functions, NULL, "(node, output_nr) per input", NULL},
    {"variable", node_variable, NULL, "The leaf of an AccumulateGrad node", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot node_slots[] = {
    {Py_tp_dealloc, node_dealloc},
    {Py_tp_repr, node_repr},
    {Py_tp_methods, node_methods},
    {Py_tp_getset, node_getset},
    {Py_tp_richcompare, node_richcompare},
    {Py_tp_hash, node_hash},
    {Py_tp_doc, "An autograd graph node (read-only view)."},
    {0, NULL},
};

static PyType_Spec node_spec = {
    .name = "mpamp._C.Node",
    .basicsize = sizeof(MPNode),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = node_slots,
};

int mp_node_type_init(PyObject *module, mp_state *s)
{
    s->node_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &node_spec, NULL);
    if (!s->node_type)
        return -1;
    return PyModule_AddObjectRef(module, "Node", (PyObject *)s->node_type);
}

static PyTypeObject *node_type(mp_state *s) { return s->node_type; }

PyObject *mp_wrap_node(mp_state *s, mp_node *n)
{
    if (!n)
        Py_RETURN_NONE;
    MPNode *o = PyObject_New(MPNode, node_type(s));
    if (!o)
        return NULL;
    mp_node_incref(n);
    o->node = n;
    return (PyObject *)o;
}
