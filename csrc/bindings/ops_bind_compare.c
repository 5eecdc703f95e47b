/* ops_bind_compare.c - Python entry points of the comparisons and logic ops: the rich
 * comparison slot (== != < <= > >=, with identity hashing kept), the & | ^ ~ operators and
 * their in-place forms, Tensor methods (eq ... ge and torch's aliases, logical_*, bitwise_*,
 * isnan ...) and the _C functions behind mpamp.eq, mpamp.logical_and, mpamp.any, ... An
 * operand that is neither a tensor nor a number gives NotImplemented from an operator (so
 * t == None is False, as torch) and a TypeError from a method or function. */
#include "bindings.h"

#include "../core/ops/ops_compare.h"
#include "../core/view.h"

#define STATE_OF(obj) mp_state_of_type(Py_TYPE(obj))
#define FN(f) (PyCFunction)(void (*)(void))(f)

#define cmp_names(op) (mp_op_info(MP_OP_EQ + (int)(op))->name)   /* the op table's names */

/* a tensor (or, unless tensor_only, a number) for argument `arg` of fname */
static int operand_arg(mp_state *s, PyObject *o, int tensor_only, const char *fname,
                       const char *arg, int pos, mp_tensor **t, mp_tensor **owned)
{
    *owned = NULL;
    int r = tensor_only ? !mp_is_tensor(s, o) : mp_operand(s, o, t, owned);
    if (r < 0)
        return -1;
    if (r > 0) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' (position %d) must be Tensor%s, "
                     "not %.100s", fname, arg, pos, tensor_only ? "" : " or Number",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    if (tensor_only)
        *t = MP_T(o);
    return 0;
}

/* *out is read after st was computed (an argument list has no evaluation order) */
static PyObject *result(mp_state *s, mp_status st, mp_tensor *const *out, mp_tensor *o1,
                        mp_tensor *o2)
{
    mp_tensor_decref(o1);
    mp_tensor_decref(o2);
    return st == MP_OK ? mp_wrap(s, *out) : mp_raise(st);
}

/* ---- comparisons ---- */

static PyObject *compare(mp_state *s, mp_cmp_op op, mp_tensor *a, PyObject *other,
                         int strict, const char *fname)
{
    mp_tensor *b, *owned, *out = NULL;
    int r = mp_operand(s, other, &b, &owned);
    if (r < 0)
        return NULL;
    if (r > 0) {
        if (!strict)
            Py_RETURN_NOTIMPLEMENTED;
        PyErr_Format(PyExc_TypeError, "%s(): argument 'other' must be Tensor or Number, not "
                     "%.100s", fname, Py_TYPE(other)->tp_name);
        return NULL;
    }
    mp_status st = mp_op_compare(op, a, b, &out);
    return result(s, st, &out, owned, NULL);
}

static PyObject *tensor_richcompare(PyObject *self, PyObject *other, int pyop)
{
    mp_cmp_op op;
    switch (pyop) {
    case Py_LT: op = MP_CMP_LT; break;
    case Py_LE: op = MP_CMP_LE; break;
    case Py_EQ: op = MP_CMP_EQ; break;
    case Py_NE: op = MP_CMP_NE; break;
    case Py_GT: op = MP_CMP_GT; break;
    default: op = MP_CMP_GE; break;
    }
    return compare(STATE_OF(self), op, MP_T(self), other, 0, cmp_names(op));
}

/* Defining richcompare would otherwise make the type unhashable: tensors hash by identity,
 * as torch's do. */
static Py_hash_t tensor_hash(PyObject *self)
{
    return PyBaseObject_Type.tp_hash(self);
}

static PyObject *compare_inplace(PyObject *self, mp_cmp_op op, PyObject *other,
                                 const char *fname)
{
    mp_tensor *b, *owned;
    if (operand_arg(STATE_OF(self), other, 0, fname, "other", 1, &b, &owned) < 0)
        return NULL;
    mp_status st = mp_op_compare_(op, MP_T(self), b);
    mp_tensor_decref(owned);
    return st == MP_OK ? Py_NewRef(self) : mp_raise(st);
}

#define CMP_METHODS(name, alias, op)                                                         \
    static PyObject *m_##name(PyObject *self, PyObject *o)                                   \
    {                                                                                        \
        return compare(STATE_OF(self), op, MP_T(self), o, 1, #name);                         \
    }                                                                                        \
    static PyObject *m_##name##_(PyObject *self, PyObject *o)                                \
    {                                                                                        \
        return compare_inplace(self, op, o, #name "_");                                      \
    }                                                                                        \
    static PyObject *m_##alias(PyObject *self, PyObject *o)                                  \
    {                                                                                        \
        return compare(STATE_OF(self), op, MP_T(self), o, 1, #alias);                        \
    }                                                                                        \
    static PyObject *m_##alias##_(PyObject *self, PyObject *o)                               \
    {                                                                                        \
        return compare_inplace(self, op, o, #alias "_");                                     \
    }

CMP_METHODS(ne, not_equal, MP_CMP_NE)
CMP_METHODS(lt, less, MP_CMP_LT)
CMP_METHODS(le, less_equal, MP_CMP_LE)
CMP_METHODS(gt, greater, MP_CMP_GT)
CMP_METHODS(ge, greater_equal, MP_CMP_GE)

static PyObject *m_eq(PyObject *self, PyObject *o)
{
    return compare(STATE_OF(self), MP_CMP_EQ, MP_T(self), o, 1, "eq");
}

static PyObject *m_eq_(PyObject *self, PyObject *o)
{
    return compare_inplace(self, MP_CMP_EQ, o, "eq_");
}

/* ---- logical and bitwise ---- */

enum { KIND_LOGICAL, KIND_BITWISE };
#define logic_names(kind, op)                                                                \
    (mp_op_info((kind) == KIND_LOGICAL ? MP_OP_LOGICAL_AND + (int)(op)                       \
                                       : MP_OP_BITWISE_AND + (int)(op))->name)

static mp_status run_logic(int kind, mp_logic_op op, mp_tensor *a, mp_tensor *b,
                           mp_tensor **out)
{
    return kind == KIND_LOGICAL ? mp_op_logical(op, a, b, out) : mp_op_bitwise(op, a, b, out);
}

/* the module state from whichever operand is one of ours (a binary slot may be called
 * with the tensor on either side) */
static mp_state *state_of_pair(PyObject *x, PyObject *y)
{
    PyObject *m = PyType_GetModuleByDef(Py_TYPE(x), &mp_module_def);
    if (!m) {
        PyErr_Clear();
        m = PyType_GetModuleByDef(Py_TYPE(y), &mp_module_def);
    }
    return m ? mp_state_of_module(m) : NULL;
}

/* the & | ^ operators: either side may be the tensor */
static PyObject *bit_operator(mp_logic_op op, PyObject *x, PyObject *y)
{
    mp_state *s = state_of_pair(x, y);
    if (!s)
        return NULL;
    mp_tensor *a, *b, *oa, *ob = NULL, *out = NULL;
    int ra = mp_operand(s, x, &a, &oa);
    if (ra < 0)
        return NULL;
    int rb = ra ? 1 : mp_operand(s, y, &b, &ob);
    if (rb) {
        mp_tensor_decref(oa);
        if (rb < 0)
            return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    return result(s, mp_op_bitwise(op, a, b, &out), &out, oa, ob);
}

static PyObject *nb_and(PyObject *x, PyObject *y) { return bit_operator(MP_LOGIC_AND, x, y); }
static PyObject *nb_or(PyObject *x, PyObject *y) { return bit_operator(MP_LOGIC_OR, x, y); }
static PyObject *nb_xor(PyObject *x, PyObject *y) { return bit_operator(MP_LOGIC_XOR, x, y); }

static PyObject *logic_inplace(PyObject *self, int kind, mp_logic_op op, PyObject *other,
                               const char *fname)
{
    mp_tensor *b, *owned;
    if (operand_arg(STATE_OF(self), other, kind == KIND_LOGICAL, fname, "other", 1, &b,
                    &owned) < 0)
        return NULL;
    mp_status st = kind == KIND_LOGICAL ? mp_op_logical_(op, MP_T(self), b)
                                        : mp_op_bitwise_(op, MP_T(self), b);
    mp_tensor_decref(owned);
    return st == MP_OK ? Py_NewRef(self) : mp_raise(st);
}

static PyObject *nb_iand(PyObject *x, PyObject *y)
{
    return logic_inplace(x, KIND_BITWISE, MP_LOGIC_AND, y, "bitwise_and_");
}

static PyObject *nb_ior(PyObject *x, PyObject *y)
{
    return logic_inplace(x, KIND_BITWISE, MP_LOGIC_OR, y, "bitwise_or_");
}

static PyObject *nb_ixor(PyObject *x, PyObject *y)
{
    return logic_inplace(x, KIND_BITWISE, MP_LOGIC_XOR, y, "bitwise_xor_");
}

static PyObject *nb_invert(PyObject *x)
{
    mp_tensor *out = NULL;
    if (mp_dtype_is_float(MP_T(x)->dtype)) {
        PyErr_SetString(PyExc_TypeError, "~ (operator.invert) is only implemented on integer "
                        "and Boolean-type tensors");
        return NULL;
    }
    return result(STATE_OF(x), mp_op_bitwise_not(MP_T(x), &out), &out, NULL, NULL);
}

PyType_Slot mp_tensor_compare_slots[] = {
    {Py_tp_richcompare, tensor_richcompare}, {Py_tp_hash, tensor_hash},
    {Py_nb_and, nb_and}, {Py_nb_or, nb_or}, {Py_nb_xor, nb_xor}, {Py_nb_invert, nb_invert},
    {Py_nb_inplace_and, nb_iand}, {Py_nb_inplace_or, nb_ior}, {Py_nb_inplace_xor, nb_ixor},
    {0, NULL},
};

#define LOGIC_METHODS(name, kind, op)                                                        \
    static PyObject *m_##name(PyObject *self, PyObject *o)                                   \
    {                                                                                        \
        mp_tensor *b, *owned, *out = NULL;                                                   \
        mp_state *s = STATE_OF(self);                                                        \
        if (operand_arg(s, o, kind == KIND_LOGICAL, #name, "other", 1, &b, &owned) < 0)      \
            return NULL;                                                                     \
        return result(s, run_logic(kind, op, MP_T(self), b, &out), &out, owned, NULL);        \
    }                                                                                        \
    static PyObject *m_##name##_(PyObject *self, PyObject *o)                                \
    {                                                                                        \
        return logic_inplace(self, kind, op, o, #name "_");                                  \
    }

LOGIC_METHODS(logical_and, KIND_LOGICAL, MP_LOGIC_AND)
LOGIC_METHODS(logical_or, KIND_LOGICAL, MP_LOGIC_OR)
LOGIC_METHODS(logical_xor, KIND_LOGICAL, MP_LOGIC_XOR)
LOGIC_METHODS(bitwise_and, KIND_BITWISE, MP_LOGIC_AND)
LOGIC_METHODS(bitwise_or, KIND_BITWISE, MP_LOGIC_OR)
LOGIC_METHODS(bitwise_xor, KIND_BITWISE, MP_LOGIC_XOR)

static PyObject *m_logical_not(PyObject *self, PyObject *u)
{
    (void)u;
    mp_tensor *out = NULL;
    return result(STATE_OF(self), mp_op_logical_not(MP_T(self), &out), &out, NULL, NULL);
}

static PyObject *m_logical_not_(PyObject *self, PyObject *u)
{
    (void)u;
    mp_status st = mp_op_logical_not_(MP_T(self));
    return st == MP_OK ? Py_NewRef(self) : mp_raise(st);
}

static PyObject *m_bitwise_not(PyObject *self, PyObject *u)
{
    (void)u;
    mp_tensor *out = NULL;
    return result(STATE_OF(self), mp_op_bitwise_not(MP_T(self), &out), &out, NULL, NULL);
}

static PyObject *m_bitwise_not_(PyObject *self, PyObject *u)
{
    (void)u;
    mp_status st = mp_op_bitwise_not_(MP_T(self));
    return st == MP_OK ? Py_NewRef(self) : mp_raise(st);
}

#define CLASS_METHOD(name, op)                                                               \
    static PyObject *m_##name(PyObject *self, PyObject *u)                                   \
    {                                                                                        \
        (void)u;                                                                             \
        mp_tensor *out = NULL;                                                               \
        return result(STATE_OF(self), mp_op_classify(op, MP_T(self), &out), &out, NULL,       \
                      NULL);                                                                 \
    }

CLASS_METHOD(isnan, MP_CLS_ISNAN)
CLASS_METHOD(isinf, MP_CLS_ISINF)
CLASS_METHOD(isfinite, MP_CLS_ISFINITE)
CLASS_METHOD(isposinf, MP_CLS_ISPOSINF)
CLASS_METHOD(isneginf, MP_CLS_ISNEGINF)

#define M_O(name, doc) {#name, m_##name, METH_O, doc}, {#name "_", m_##name##_, METH_O, \
                                                        "In-place " #name}
#define M_N(name, doc) {#name, m_##name, METH_NOARGS, doc}

PyMethodDef mp_tensor_compare_methods[] = {
    M_O(eq, "self == other (bool)"), M_O(ne, "self != other (bool)"),
    M_O(lt, "self < other (bool)"), M_O(le, "self <= other (bool)"),
    M_O(gt, "self > other (bool)"), M_O(ge, "self >= other (bool)"),
    M_O(not_equal, "self != other (bool)"), M_O(less, "self < other (bool)"),
    M_O(less_equal, "self <= other (bool)"), M_O(greater, "self > other (bool)"),
    M_O(greater_equal, "self >= other (bool)"),
    M_O(logical_and, "self and other, elementwise (bool)"),
    M_O(logical_or, "self or other, elementwise (bool)"),
    M_O(logical_xor, "self xor other, elementwise (bool)"),
    M_N(logical_not, "not self, elementwise (bool)"),
    {"logical_not_", m_logical_not_, METH_NOARGS, "In-place logical_not"},
    M_O(bitwise_and, "self & other (bool or int64)"),
    M_O(bitwise_or, "self | other (bool or int64)"),
    M_O(bitwise_xor, "self ^ other (bool or int64)"),
    M_N(bitwise_not, "~self (bool or int64)"),
    {"bitwise_not_", m_bitwise_not_, METH_NOARGS, "In-place bitwise_not"},
    M_N(isnan, "True where NaN"), M_N(isinf, "True where +-inf"),
    M_N(isfinite, "True where neither inf nor NaN"), M_N(isposinf, "True where +inf"),
    M_N(isneginf, "True where -inf"),
    {NULL, NULL, 0, NULL},
};

/* _compare(op, input, other): mpamp.eq(input, other) etc.; input must be a tensor */
/* ---- module functions ---- */

static PyObject *f_compare(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_tensor *a, *owned;
    const mp_op_row *r;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_compare(op, input, other)");
        return NULL;
    }
    if (mp_op_arg(args[0], MP_OPK_COMPARE, MP_OPK_COMPARE, "_compare", &r) < 0 ||
        operand_arg(s, args[1], 1, r->name, "input", 1, &a, &owned) < 0)
        return NULL;
    return compare(s, (mp_cmp_op)r->code, a, args[2], 1, r->name);
}

/* _logic(op, input, other): op the id of logical_* (tensors) or bitwise_* (numbers too) */
static PyObject *f_logic(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_tensor *a, *b, *oa, *ob = NULL, *out = NULL;
    const mp_op_row *r;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_logic(op, input, other)");
        return NULL;
    }
    if (mp_op_arg(args[0], MP_OPK_LOGICAL, MP_OPK_BITWISE, "_logic", &r) < 0)
        return NULL;
    int kind = r->kind == MP_OPK_LOGICAL ? KIND_LOGICAL : KIND_BITWISE;
    mp_logic_op op = (mp_logic_op)r->code;
    const char *fname = r->name;
    if (operand_arg(s, args[1], kind == KIND_LOGICAL, fname, "input", 1, &a, &oa) < 0)
        return NULL;
    if (operand_arg(s, args[2], kind == KIND_LOGICAL, fname, "other", 2, &b, &ob) < 0) {
        mp_tensor_decref(oa);
        return NULL;
    }
    if (oa && ob) {         /* two numbers: torch wants a tensor among them */
        mp_tensor_decref(oa);
        mp_tensor_decref(ob);
        PyErr_Format(PyExc_TypeError, "%s(): expected a Tensor as 'input' or 'other', got "
                     "two numbers", fname);
        return NULL;
    }
    return result(s, run_logic(kind, op, a, b, &out), &out, oa, ob);
}

/* dim: None (every dim), an int, or a sequence of ints (empty: none, as torch's any/all)
 * -> bit mask */
static int dims_arg(PyObject *dim, int ndim, const char *fname, uint32_t *mask)
{
    *mask = 0;
    int seq = PyTuple_Check(dim) || PyList_Check(dim);
    Py_ssize_t n = dim == Py_None ? 0 : seq ? PySequence_Fast_GET_SIZE(dim) : 1;
    if (dim == Py_None)
        *mask = ndim >= 32 ? ~0u : (1u << ndim) - 1u;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = seq ? PySequence_Fast_GET_ITEM(dim, i) : dim;
        int64_t d;
        int w;
        if (PyBool_Check(o) || !PyIndex_Check(o)) {
            PyErr_Format(PyExc_TypeError, "%s(): argument 'dim' must be int or tuple of ints, "
                         "not %.100s", fname, Py_TYPE(o)->tp_name);
            return -1;
        }
        if (mp_parse_int64(o, fname, "dim", &d) < 0)
            return -1;
        mp_status st = mp_wrap_dim(d, ndim, &w);
        if (st != MP_OK)
            return mp_raise_int(st);
        if (*mask & (1u << w)) {
            PyErr_Format(PyExc_RuntimeError, "dim %d appears multiple times in the list of "
                         "dims", w);
            return -1;
        }
        *mask |= 1u << w;
    }
    return 0;
}

/* _any_all(all, input, dim, keepdim) */
static PyObject *f_any_all(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_tensor *a, *owned, *out = NULL;
    uint32_t mask;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "_any_all(all, input, dim, keepdim)");
        return NULL;
    }
    int all = PyObject_IsTrue(args[0]), keepdim = PyObject_IsTrue(args[3]);
    if (all < 0 || keepdim < 0)
        return NULL;
    const char *fname = all ? "all" : "any";
    if (operand_arg(s, args[1], 1, fname, "input", 1, &a, &owned) < 0 ||
        dims_arg(args[2], a->ndim, fname, &mask) < 0)
        return NULL;
    mp_status st;
    if (mp_tensor_numel(a) >= MP_NOGIL_NUMEL) {
        Py_BEGIN_ALLOW_THREADS
        st = mp_op_any_all(all, a, mask, keepdim, &out);
        Py_END_ALLOW_THREADS
    } else {
        st = mp_op_any_all(all, a, mask, keepdim, &out);
    }
    return result(s, st, &out, NULL, NULL);
}

PyMethodDef mp_compare_functions[] = {
    {"_compare", FN(f_compare), METH_FASTCALL, "_compare(op, input, other): op the id (_C.op_ids) of eq ne lt le gt ge"},
    {"_logic", FN(f_logic), METH_FASTCALL,
     "_logic(op, input, other): op the id (_C.op_ids) of logical_/bitwise_ and, or, xor"},
    {"_any_all", FN(f_any_all), METH_FASTCALL, "_any_all(all, input, dim, keepdim)"},
    {NULL, NULL, 0, NULL},
};
