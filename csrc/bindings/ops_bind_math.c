/* ops_bind_math.c - Python entry points of the math ops added for real training code: the
 * unary ops sin, cos, erf, log1p, expm1, sign (sgn), floor, ceil, round (decimals=), trunc
 * (fix), square, reciprocal, log2, log10 as Tensor methods and in-place methods (through
 * ops_bind.c's unary entries, which apply the autocast rows), and remainder / fmod as
 * methods, in-place methods, the % and %= operators and the _C._remainder function. */
#include "bindings.h"

#include "../core/ops/ops.h"
#include "../core/ops/ops_compare.h"

#define STATE_OF(obj) mp_state_of_type(Py_TYPE(obj))
#define FN(f) (PyCFunction)(void (*)(void))(f)

#define UNARY_METHODS(name, op)                                                              \
    static PyObject *m_##name(PyObject *self, PyObject *u)                                   \
    {                                                                                        \
        (void)u;                                                                             \
        return mp_unary_method(self, op);                                                    \
    }                                                                                        \
    static PyObject *m_##name##_(PyObject *self, PyObject *u)                                \
    {                                                                                        \
        (void)u;                                                                             \
        return mp_unary_inplace_method(self, op, #name "_");                                 \
    }

UNARY_METHODS(sin, MP_UN_SIN)
UNARY_METHODS(cos, MP_UN_COS)
UNARY_METHODS(erf, MP_UN_ERF)
UNARY_METHODS(log1p, MP_UN_LOG1P)
UNARY_METHODS(expm1, MP_UN_EXPM1)
UNARY_METHODS(sign, MP_UN_SIGN)
UNARY_METHODS(sgn, MP_UN_SIGN)
UNARY_METHODS(floor, MP_UN_FLOOR)
UNARY_METHODS(ceil, MP_UN_CEIL)
UNARY_METHODS(trunc, MP_UN_TRUNC)
UNARY_METHODS(fix, MP_UN_TRUNC)
UNARY_METHODS(square, MP_UN_SQUARE)
UNARY_METHODS(reciprocal, MP_UN_RECIPROCAL)
UNARY_METHODS(log2, MP_UN_LOG2)
UNARY_METHODS(log10, MP_UN_LOG10)

/* round(*, decimals=None): no positional arguments, as torch; *has = 0 when not given */
static int parse_decimals(PyObject *const *args, Py_ssize_t nargs, PyObject *kw,
                          const char *fname, int *has, int64_t *decimals)
{
    (void)args;
    *has = 0;
    Py_ssize_t nkw = kw ? PyTuple_GET_SIZE(kw) : 0;
    if (nargs > 0) {
        PyErr_Format(PyExc_TypeError, "%s() takes no positional arguments (decimals is "
                     "keyword-only)", fname);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nkw; i++) {
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kw, i), "decimals") != 0) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument %R", fname,
                         PyTuple_GET_ITEM(kw, i));
            return -1;
        }
        if (args[nargs + i] == Py_None)
            continue;
        if (mp_parse_int64(args[nargs + i], fname, "decimals", decimals) < 0)
            return -1;
        *has = 1;
    }
    return 0;
}

static PyObject *m_round(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kw)
{
    int has;
    int64_t decimals = 0;
    if (parse_decimals(args, nargs, kw, "round", &has, &decimals) < 0)
        return NULL;
    if (!has)
        return mp_unary_method(self, MP_UN_ROUND);
    mp_tensor *out = NULL;
    mp_status st = mp_op_round_decimals(MP_T(self), decimals, &out);
    return st == MP_OK ? mp_wrap(STATE_OF(self), out) : mp_raise(st);
}

static PyObject *m_round_(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                          PyObject *kw)
{
    int has;
    int64_t decimals = 0;
    if (parse_decimals(args, nargs, kw, "round_", &has, &decimals) < 0)
        return NULL;
    if (!has)
        return mp_unary_inplace_method(self, MP_UN_ROUND, "round_");
    mp_tensor *t = MP_T(self), *out = NULL;
    mp_status st = mp_check_inplace(t, "round_");
    if (st == MP_OK && (st = mp_op_round_decimals(t, decimals, &out)) == MP_OK)
        st = mp_inplace_commit(t, out, "round_");
    mp_tensor_decref(out);
    return st == MP_OK ? Py_NewRef(self) : mp_raise(st);
}

/* ---- remainder / fmod ---- */

static mp_state *state_of_pair(PyObject *x, PyObject *y)
{
    PyObject *m = PyType_GetModuleByDef(Py_TYPE(x), &mp_module_def);
    if (!m) {
        PyErr_Clear();
        m = PyType_GetModuleByDef(Py_TYPE(y), &mp_module_def);
    }
    return m ? mp_state_of_module(m) : NULL;
}

/* x % y (is_fmod 0) or fmod(x, y); strict: TypeError instead of NotImplemented */
static PyObject *rem_binary(mp_state *s, int is_fmod, PyObject *x, PyObject *y, int strict)
{
    if (!s)
        return NULL;
    mp_tensor *a, *b, *oa, *ob = NULL, *out = NULL;
    int ra = mp_operand(s, x, &a, &oa);
    int rb = ra < 0 ? -1 : mp_operand(s, y, &b, &ob);
    if (ra == 0 && rb == 0 && oa && ob) {
        rb = 1;     /* two numbers: not ours */
    }
    if (ra || rb) {
        mp_tensor_decref(oa);
        mp_tensor_decref(ob);
        if (ra < 0 || rb < 0)
            return NULL;
        if (!strict)
            Py_RETURN_NOTIMPLEMENTED;
        PyErr_Format(PyExc_TypeError, "%s(): expected Tensor or Number operands with at least "
                     "one Tensor, got %.100s and %.100s", is_fmod ? "fmod" : "remainder",
                     Py_TYPE(x)->tp_name, Py_TYPE(y)->tp_name);
        return NULL;
    }
    mp_status st = mp_op_remainder(is_fmod, a, b, &out);
    mp_tensor_decref(oa);
    mp_tensor_decref(ob);
    return st == MP_OK ? mp_wrap(s, out) : mp_raise(st);
}

static PyObject *remainder_inplace(PyObject *self, int is_fmod, PyObject *other)
{
    mp_tensor *b, *owned;
    int r = mp_operand(STATE_OF(self), other, &b, &owned);
    if (r) {
        if (r > 0)
            PyErr_Format(PyExc_TypeError, "%s(): argument 'other' must be Tensor or Number, "
                         "not %.100s", is_fmod ? "fmod_" : "remainder_",
                         Py_TYPE(other)->tp_name);
        return NULL;
    }
    mp_status st = mp_op_remainder_(is_fmod, MP_T(self), b);
    mp_tensor_decref(owned);
    return st == MP_OK ? Py_NewRef(self) : mp_raise(st);
}

static PyObject *nb_rem(PyObject *x, PyObject *y)
{
    return rem_binary(state_of_pair(x, y), 0, x, y, 0);
}

static PyObject *nb_irem(PyObject *x, PyObject *y) { return remainder_inplace(x, 0, y); }

static PyObject *m_remainder(PyObject *self, PyObject *o)
{
    return rem_binary(STATE_OF(self), 0, self, o, 1);
}

static PyObject *m_fmod(PyObject *self, PyObject *o)
{
    return rem_binary(STATE_OF(self), 1, self, o, 1);
}

static PyObject *m_remainder_(PyObject *self, PyObject *o) { return remainder_inplace(self, 0, o); }
static PyObject *m_fmod_(PyObject *self, PyObject *o) { return remainder_inplace(self, 1, o); }

PyType_Slot mp_tensor_math_slots[] = {
    {Py_nb_remainder, nb_rem}, {Py_nb_inplace_remainder, nb_irem},
    {0, NULL},
};

#define M_U(name, doc) {#name, m_##name, METH_NOARGS, doc}, {#name "_", m_##name##_, \
                                                             METH_NOARGS, "In-place " #name}

PyMethodDef mp_tensor_math_methods[] = {
    M_U(sin, "sine"), M_U(cos, "cosine"), M_U(erf, "error function"),
    M_U(log1p, "log(1 + self)"), M_U(expm1, "exp(self) - 1"),
    M_U(sign, "-1, 0 or 1 (0 for NaN)"), M_U(sgn, "sign (real tensors)"),
    M_U(floor, "round down"), M_U(ceil, "round up"), M_U(trunc, "round toward zero"),
    M_U(fix, "trunc"), M_U(square, "self * self"), M_U(reciprocal, "1 / self"),
    M_U(log2, "base-2 logarithm"), M_U(log10, "base-10 logarithm"),
    {"round", FN(m_round), METH_FASTCALL | METH_KEYWORDS,
     "round half to even (at 10^-decimals with decimals=)"},
    {"round_", FN(m_round_), METH_FASTCALL | METH_KEYWORDS, "In-place round"},
    {"remainder", m_remainder, METH_O, "self % other (the sign of other, as Python)"},
    {"remainder_", m_remainder_, METH_O, "In-place remainder"},
    {"fmod", m_fmod, METH_O, "C fmod (the sign of self)"},
    {"fmod_", m_fmod_, METH_O, "In-place fmod"},
    {NULL, NULL, 0, NULL},
};

/* _remainder(is_fmod, input, other): mpamp.remainder / mpamp.fmod */
static PyObject *f_remainder(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_remainder(is_fmod, input, other)");
        return NULL;
    }
    int is_fmod = PyObject_IsTrue(args[0]);
    if (is_fmod < 0)
        return NULL;
    return rem_binary(mp_state_of_module(m), is_fmod, args[1], args[2], 1);
}

PyMethodDef mp_math_functions[] = {
    {"_remainder", FN(f_remainder), METH_FASTCALL,
     "_remainder(is_fmod, input, other): remainder (0) or fmod (1)"},
    {NULL, NULL, 0, NULL},
};
