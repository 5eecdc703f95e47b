/* ops_bind.c - Python entry points of the pointwise ops: module functions (_C.add, _C.relu,
 * ...), Tensor methods (t.add, t.relu_, ...) and the number protocol (+ - * / ** unary -,
 * abs, in-place += ...). Python numbers become wrapped 0-d tensors (lowest promotion
 * priority), as torch does. Other op groups bind in ops_bind_<group>.c. */
#include "bindings.h"

#include "../core/ops/op_table.h"
#include "../core/chunk.h"
#include "../core/elementwise.h"
#include "../core/ops/ops.h"
#include "../core/rows.h"

/* A wrapped-number int64 scalar holding all 64 bits of v (not rounded through a double). */
static int wrapped_int(long long v, mp_tensor **out)
{
    mp_scalar exact = {(double)v, (int64_t)v, 1};
    mp_status st = mp_tensor_empty(NULL, 0, MP_DTYPE_INT64, MP_DEVICE_CPU, out);
    if (st == MP_OK && (st = mp_tensor_fill_(*out, exact)) != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    if (st != MP_OK)
        return mp_raise_int(st);
    (*out)->wrapped_number = 1;
    return 0;
}

/* *t = a tensor for obj: borrowed for tensors, a new wrapped scalar (*owned) for numbers.
 * Returns 0, or 1 when obj is not an operand (no exception), or -1 on error. */
int mp_operand(mp_state *s, PyObject *obj, mp_tensor **t, mp_tensor **owned)
{
    *owned = NULL;
    if (mp_is_tensor(s, obj)) {
        *t = MP_T(obj);
        return 0;
    }
    mp_dtype dt;
    double v;
    if (PyBool_Check(obj)) {
        dt = MP_DTYPE_BOOL, v = obj == Py_True;
    } else if (PyLong_Check(obj)) {
        int overflow = 0;
        long long i = PyLong_AsLongLongAndOverflow(obj, &overflow);
        if (overflow) {
            PyErr_SetString(PyExc_OverflowError, "Python int too large to convert to int64");
            return -1;
        }
        if (wrapped_int(i, owned) < 0)
            return -1;
        *t = *owned;
        return 0;
    } else if (PyFloat_Check(obj)) {
        dt = MP_DTYPE_FLOAT32, v = PyFloat_AS_DOUBLE(obj);
    } else if (PyIndex_Check(obj) || (Py_TYPE(obj)->tp_as_number &&
                                      Py_TYPE(obj)->tp_as_number->nb_float)) {
        int is_int = PyIndex_Check(obj);
        PyObject *num = is_int ? PyNumber_Index(obj) : PyNumber_Float(obj);
        if (!num) {      /* e.g. a NumPy array (it has __index__): not a number operand */
            if (!PyErr_ExceptionMatches(PyExc_TypeError))
                return -1;
            PyErr_Clear();
            return 1;
        }
        int rc = mp_operand(s, num, t, owned);
        Py_DECREF(num);
        return rc;
    } else {
        return 1;
    }
    mp_status st = mp_scalar_tensor(v, dt, owned);
    if (st != MP_OK)
        return mp_raise_int(st);
    *t = *owned;
    return 0;
}

#define STATE_OF(obj) mp_state_of_type(Py_TYPE(obj))

static mp_state *state_for(PyObject *a, PyObject *b)
{
    mp_state *s = NULL;
    PyObject *m = PyType_GetModuleByDef(Py_TYPE(a), &mp_module_def);
    if (!m) {
        PyErr_Clear();
        m = PyType_GetModuleByDef(Py_TYPE(b), &mp_module_def);
    }
    if (m)
        s = mp_state_of_module(m);
    return s;
}

/* Runs binary op `op` (an MP_OP_* id of kind MP_OPK_BINARY) on two Python operands;
 * NotImplemented when either is not a tensor or number (operators) or TypeError (functions:
 * strict). */
static PyObject *binary(mp_state *s, int op, PyObject *a, PyObject *b, double alpha,
                        int strict)
{
    mp_tensor *ta, *tb, *oa, *ob, *out = NULL;
    int ra = mp_operand(s, a, &ta, &oa);
    if (ra < 0)
        return NULL;
    int rb = ra ? 1 : mp_operand(s, b, &tb, &ob);
    if (rb) {
        mp_tensor_decref(oa);
        if (rb < 0)
            return NULL;
        if (!strict)
            Py_RETURN_NOTIMPLEMENTED;
        PyErr_Format(PyExc_TypeError, "unsupported operand types: %.100s and %.100s",
                     Py_TYPE(a)->tp_name, Py_TYPE(b)->tp_name);
        return NULL;
    }
    mp_status st = mp_op_call(op, ta, tb, alpha, &out);   /* the core entry autocasts pow */
    mp_tensor_decref(oa);
    mp_tensor_decref(ob);
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

/* a = a (op) b in place; op an MP_OP_* id of kind MP_OPK_BINARY */
static PyObject *inplace(PyObject *self, int op, PyObject *other, double alpha)
{
    mp_state *s = STATE_OF(self);
    mp_tensor *t, *owned;
    int r = mp_operand(s, other, &t, &owned);
    if (r) {
        if (r > 0)
            PyErr_Format(PyExc_TypeError, "unsupported operand type for in-place op: %.100s",
                         Py_TYPE(other)->tp_name);
        return NULL;
    }
    mp_status st = mp_op_binary_(mp_op_info(op)->code, MP_T(self), t, alpha);
    mp_tensor_decref(owned);
    return st == MP_OK ? Py_NewRef(self) : mp_raise(st);
}

/* ---- number protocol ---- */

static PyObject *nb_add(PyObject *a, PyObject *b) { return binary(state_for(a, b), MP_OP_ADD, a, b, 1.0, 0); }
static PyObject *nb_sub(PyObject *a, PyObject *b) { return binary(state_for(a, b), MP_OP_SUB, a, b, 1.0, 0); }
static PyObject *nb_mul(PyObject *a, PyObject *b) { return binary(state_for(a, b), MP_OP_MUL, a, b, 1.0, 0); }
static PyObject *nb_div(PyObject *a, PyObject *b) { return binary(state_for(a, b), MP_OP_DIV, a, b, 1.0, 0); }

static PyObject *nb_pow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None) {
        PyErr_SetString(PyExc_TypeError, "pow() with a modulus is not supported for tensors");
        return NULL;
    }
    return binary(state_for(a, b), MP_OP_POW, a, b, 1.0, 0);
}

static PyObject *unary(PyObject *self, mp_unary_op op)
{
    mp_tensor *out;
    mp_status st = mp_op_unary(op, MP_T(self), &out);   /* autocast: in the core entry */
    return st == MP_OK ? mp_wrap(STATE_OF(self), out) : mp_raise(st);
}

static PyObject *nb_neg(PyObject *a) { return unary(a, MP_UN_NEG); }
static PyObject *nb_abs(PyObject *a) { return unary(a, MP_UN_ABS); }
static PyObject *nb_pos(PyObject *a) { return Py_NewRef(a); }
static PyObject *nb_iadd(PyObject *a, PyObject *b) { return inplace(a, MP_OP_ADD, b, 1.0); }
static PyObject *nb_isub(PyObject *a, PyObject *b) { return inplace(a, MP_OP_SUB, b, 1.0); }
static PyObject *nb_imul(PyObject *a, PyObject *b) { return inplace(a, MP_OP_MUL, b, 1.0); }
static PyObject *nb_idiv(PyObject *a, PyObject *b) { return inplace(a, MP_OP_DIV, b, 1.0); }

static PyObject *nb_ipow(PyObject *a, PyObject *b, PyObject *mod)
{
    (void)mod;
    return inplace(a, MP_OP_POW, b, 1.0);
}

PyType_Slot mp_tensor_number_slots[] = {
    {Py_nb_add, nb_add}, {Py_nb_subtract, nb_sub}, {Py_nb_multiply, nb_mul},
    {Py_nb_true_divide, nb_div}, {Py_nb_power, nb_pow}, {Py_nb_negative, nb_neg},
    {Py_nb_absolute, nb_abs}, {Py_nb_positive, nb_pos}, {Py_nb_inplace_add, nb_iadd},
    {Py_nb_inplace_subtract, nb_isub}, {Py_nb_inplace_multiply, nb_imul},
    {Py_nb_inplace_true_divide, nb_idiv}, {Py_nb_inplace_power, nb_ipow},
    {0, NULL},
};

/* ---- methods: t.add(other, alpha=1) etc. ---- */

static int parse_alpha(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                       PyObject **other, double *alpha, const char *fname)
{
    *alpha = 1.0;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs < 1 || nargs > 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes other and an optional alpha", fname);
        return -1;
    }
    *other = args[0];
    PyObject *a = nargs == 2 ? args[1] : NULL;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        if (!PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "alpha") == 0) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument %R", fname,
                         PyTuple_GET_ITEM(kwnames, i));
            return -1;
        }
        a = args[nargs + i];
    }
    if (a) {
        *alpha = PyFloat_AsDouble(a);
        if (*alpha == -1.0 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

#define ALPHA_METHOD(fn, which, name, inplace_form)                                         \
    static PyObject *fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,             \
                        PyObject *kw)                                                        \
    {                                                                                        \
        PyObject *other;                                                                     \
        double alpha;                                                                        \
        if (parse_alpha(args, nargs, kw, &other, &alpha, name) < 0)                          \
            return NULL;                                                                     \
        return inplace_form ? inplace(self, which, other, alpha)                             \
                            : binary(STATE_OF(self), which, self, other, alpha, 1);          \
    }

ALPHA_METHOD(m_add, MP_OP_ADD, "add", 0)
ALPHA_METHOD(m_sub, MP_OP_SUB, "sub", 0)
ALPHA_METHOD(m_add_, MP_OP_ADD, "add_", 1)
ALPHA_METHOD(m_sub_, MP_OP_SUB, "sub_", 1)

static PyObject *m_mul(PyObject *self, PyObject *o) { return binary(STATE_OF(self), MP_OP_MUL, self, o, 1.0, 1); }
static PyObject *m_div(PyObject *self, PyObject *o) { return binary(STATE_OF(self), MP_OP_DIV, self, o, 1.0, 1); }
static PyObject *m_pow(PyObject *self, PyObject *o) { return binary(STATE_OF(self), MP_OP_POW, self, o, 1.0, 1); }
static PyObject *m_mul_(PyObject *self, PyObject *o) { return inplace(self, MP_OP_MUL, o, 1.0); }
static PyObject *m_div_(PyObject *self, PyObject *o) { return inplace(self, MP_OP_DIV, o, 1.0); }
static PyObject *m_pow_(PyObject *self, PyObject *o) { return inplace(self, MP_OP_POW, o, 1.0); }

/* in place unary: computes out of place then copies back (checks autograd first) */
static PyObject *unary_(PyObject *self, mp_unary_op op, const char *name)
{
    mp_tensor *t = MP_T(self), *out;
    mp_status st = mp_check_inplace(t, name);
    if (st == MP_OK && (st = mp_op_unary(op, t, &out)) == MP_OK) {
        if ((st = mp_check_result_cast(out->dtype, t->dtype)) == MP_OK)    /* as torch */
            st = mp_inplace_commit(t, out, name);
        mp_tensor_decref(out);
    }
    return st == MP_OK ? Py_NewRef(self) : mp_raise(st);
}

/* for the unary ops bound in other files (ops_bind_math.c) */
PyObject *mp_unary_method(PyObject *self, mp_unary_op op)
{
    return unary(self, op);
}

PyObject *mp_unary_inplace_method(PyObject *self, mp_unary_op op, const char *name)
{
    return unary_(self, op, name);
}

#define UNARY_METHODS(name, op)                                                              \
    static PyObject *m_##name(PyObject *self, PyObject *u) { (void)u; return unary(self, op); } \
    static PyObject *m_##name##_(PyObject *self, PyObject *u)                                \
    {                                                                                        \
        (void)u;                                                                             \
        return unary_(self, op, #name "_");                                                  \
    }

UNARY_METHODS(neg, MP_UN_NEG)
UNARY_METHODS(relu, MP_UN_RELU)
UNARY_METHODS(silu, MP_UN_SILU)
UNARY_METHODS(sigmoid, MP_UN_SIGMOID)
UNARY_METHODS(tanh, MP_UN_TANH)
UNARY_METHODS(exp, MP_UN_EXP)
UNARY_METHODS(log, MP_UN_LOG)
UNARY_METHODS(sqrt, MP_UN_SQRT)
UNARY_METHODS(rsqrt, MP_UN_RSQRT)
UNARY_METHODS(abs, MP_UN_ABS)

/* gelu(approximate='none'|'tanh') */
static int gelu_kind(PyObject *approx, mp_unary_op *op)
{
    *op = MP_UN_GELU;
    if (!approx || approx == Py_None)
        return 0;
    if (PyUnicode_Check(approx) && PyUnicode_CompareWithASCIIString(approx, "none") == 0)
        return 0;
    if (PyUnicode_Check(approx) && PyUnicode_CompareWithASCIIString(approx, "tanh") == 0) {
        *op = MP_UN_GELU_TANH;
        return 0;
    }
    PyErr_Format(PyExc_RuntimeError, "approximate argument must be either none or tanh, got "
                 "%R", approx);
    return -1;
}

static PyObject *m_gelu(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                        PyObject *kw)
{
    mp_unary_op op;
    PyObject *approx = nargs > 0 ? args[0] : (kw && PyTuple_GET_SIZE(kw) ? args[nargs] : NULL);
    if (gelu_kind(approx, &op) < 0)
        return NULL;
    return unary(self, op);
}

#define FAST (METH_FASTCALL | METH_KEYWORDS)
#define FN(f) (PyCFunction)(void (*)(void))(f)

PyMethodDef mp_tensor_ops_methods[] = {
    {"add", FN(m_add), FAST, "self + alpha * other"},
    {"sub", FN(m_sub), FAST, "self - alpha * other"},
    {"add_", FN(m_add_), FAST, "In-place add"},
    {"sub_", FN(m_sub_), FAST, "In-place sub"},
    {"mul", m_mul, METH_O, "self * other"},
    {"div", m_div, METH_O, "self / other"},
    {"pow", m_pow, METH_O, "self ** exponent"},
    {"mul_", m_mul_, METH_O, "In-place mul"},
    {"div_", m_div_, METH_O, "In-place div"},
    {"pow_", m_pow_, METH_O, "In-place pow"},
    {"neg", m_neg, METH_NOARGS, "-self"}, {"neg_", m_neg_, METH_NOARGS, "In-place neg"},
    {"relu", m_relu, METH_NOARGS, "max(self, 0)"},
    {"relu_", m_relu_, METH_NOARGS, "In-place relu"},
    {"silu", m_silu, METH_NOARGS, "self * sigmoid(self)"},
    {"silu_", m_silu_, METH_NOARGS, "In-place silu"},
    {"sigmoid", m_sigmoid, METH_NOARGS, "1 / (1 + exp(-self))"},
    {"sigmoid_", m_sigmoid_, METH_NOARGS, "In-place sigmoid"},
    {"tanh", m_tanh, METH_NOARGS, "tanh"}, {"tanh_", m_tanh_, METH_NOARGS, "In-place tanh"},
    {"exp", m_exp, METH_NOARGS, "exp"}, {"exp_", m_exp_, METH_NOARGS, "In-place exp"},
    {"log", m_log, METH_NOARGS, "natural log"}, {"log_", m_log_, METH_NOARGS, "In-place log"},
    {"sqrt", m_sqrt, METH_NOARGS, "sqrt"}, {"sqrt_", m_sqrt_, METH_NOARGS, "In-place sqrt"},
    {"rsqrt", m_rsqrt, METH_NOARGS, "1/sqrt"},
    {"rsqrt_", m_rsqrt_, METH_NOARGS, "In-place rsqrt"},
    {"abs", m_abs, METH_NOARGS, "absolute value"},
    {"abs_", m_abs_, METH_NOARGS, "In-place abs"},
    {"gelu", FN(m_gelu), FAST, "GELU (approximate='none' or 'tanh')"},
    {NULL, NULL, 0, NULL},
};

/* ---- module functions: _C._binary(which, a, b, alpha) for mpamp.add(...) etc. ---- */

static PyObject *f_binary(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyLong_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "_binary(op, a, b, alpha)");
        return NULL;
    }
    long op = PyLong_AsLong(args[0]);
    double alpha = PyFloat_AsDouble(args[3]);
    if (alpha == -1.0 && PyErr_Occurred())
        return NULL;
    const mp_op_row *row = op == -1 && PyErr_Occurred() ? NULL : mp_op_info((int)op);
    if (!row || row->kind != MP_OPK_BINARY) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "_binary: op %ld is not add/sub/mul/div/pow (the "
                         "ids are in _C.op_ids)", op);
        return NULL;
    }
    return binary(mp_state_of_module(m), (int)op, args[1], args[2], alpha, 1);
}

PyMethodDef mp_ops_functions[] = {
    {"_binary", FN(f_binary), METH_FASTCALL, "_binary(op, a, b, alpha): add/sub/mul/div/pow by op id (_C.op_ids)"},
    {NULL, NULL, 0, NULL},
};
