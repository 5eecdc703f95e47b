/* random_bind.c - Python entries of the random ops that mpamp/_ops_random.py builds on:
 * in-place fills (Tensor.normal_, uniform_, random_, exponential_, bernoulli_), multinomial
 * and randperm. The Python layer owns the generator: every entry takes (seed, offset) last and
 * returns (result, Philox blocks consumed), the shape Generator._draw expects. In-place fills
 * draw into a fresh contiguous tensor and land through mp_inplace_commit (ops.h). */
#include "bindings.h"

#include <string.h>

#include "../core/ops/ops.h"
#include "../core/random.h"

#define MSTATE(m) mp_state_of_module(m)

enum { K_UNIFORM, K_NORMAL, K_INT, K_EXPONENTIAL, K_BERNOULLI };

static int kind_of(PyObject *name)
{
    static const char *const kinds[] = {"uniform", "normal", "int", "exponential", "bernoulli"};
    const char *k = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    for (int i = 0; k && i < (int)(sizeof kinds / sizeof kinds[0]); i++)
        if (strcmp(k, kinds[i]) == 0)
            return i;
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "unknown random kind %R", name);
    return -1;
}

static double as_double(mp_scalar v) { return v.is_int ? (double)v.i : v.f; }

/* Fills dst (contiguous, fresh) with kind; pt is bernoulli's tensor p or NULL. */
static mp_status fill(mp_tensor *dst, int kind, mp_scalar a, mp_scalar b, mp_tensor *pt,
                      uint64_t seed, uint64_t offset, uint64_t *used)
{
    switch (kind) {
    case K_UNIFORM:
        return mp_random_uniform_(dst, seed, offset, as_double(a), as_double(b), used);
    case K_NORMAL:
        return mp_random_normal_(dst, seed, offset, as_double(a), as_double(b), used);
    case K_INT:
        return mp_random_int_(dst, seed, offset, a.i, b.i, used);
    case K_EXPONENTIAL:
        return mp_random_exponential_(dst, seed, offset, as_double(a), used);
    default:
        if (pt)
            return mp_random_bernoulli_tensor_(dst, pt, seed, offset, used);
        return mp_random_bernoulli_(dst, as_double(a), seed, offset, used);
    }
}

/* _random_inplace_(t, kind, a, b, name, seed, offset) -> (t, blocks). kind: "uniform" (a=from,
 * b=to), "normal" (mean, std), "int" ([a, b)), "exponential" (a=lambd), "bernoulli" (a=p, a
 * number or a tensor that broadcasts to t). name is the method's name for error messages. */
static PyObject *f_random_inplace(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = MSTATE(m);
    if (nargs != 7 || !mp_is_tensor(s, args[0]) || !PyUnicode_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "_random_inplace_(tensor, kind, a, b, name, seed, "
                        "offset)");
        return NULL;
    }
    int kind = kind_of(args[1]);
    mp_tensor *t = MP_T(args[0]), *pt = NULL, *dst = NULL;
    mp_scalar a = {0.0, 0, 0}, b = {0.0, 0, 0};
    int64_t seed, offset;
    const char *name = PyUnicode_AsUTF8(args[4]);
    if (kind < 0 || !name)
        return NULL;
    if (kind == K_BERNOULLI && mp_is_tensor(s, args[2]))
        pt = MP_T(args[2]);
    else if (mp_parse_scalar(args[2], name, &a) < 0)
        return NULL;
    if (mp_parse_scalar(args[3], name, &b) < 0 ||
        mp_parse_int64(args[5], name, "seed", &seed) < 0 ||
        mp_parse_int64(args[6], name, "offset", &offset) < 0)
        return NULL;
    if (kind == K_INT && (!a.is_int || !b.is_int)) {
        PyErr_Format(PyExc_TypeError, "%s: the bounds must be integers", name);
        return NULL;
    }
    uint64_t used = 0;
    mp_tensor *hp = NULL;   /* bernoulli's p on the host */
    /* The draws are made on the host from the one (CPU) generator and copied to a device
     * tensor by the commit, so a CUDA tensor gets the CPU's stream of numbers. */
    mp_status st = mp_check_inplace(t, name);
    if (st == MP_OK)
        st = mp_tensor_empty(t->shape, t->ndim, t->dtype, MP_DEVICE_CPU, &dst);
    if (st == MP_OK && pt)
        st = mp_op_to_device(pt, MP_DEVICE_CPU, pt->dtype, 0, &hp);
    if (st == MP_OK) {
        int big = mp_tensor_numel(t) > MP_NOGIL_NUMEL;
        PyThreadState *ts = big ? PyEval_SaveThread() : NULL;
        st = fill(dst, kind, a, b, hp, (uint64_t)seed, (uint64_t)offset, &used);
        if (ts)
            PyEval_RestoreThread(ts);
        if (st == MP_OK)      /* with the GIL: the commit may record autograd history */
            st = mp_inplace_commit(t, dst, name);
    }
    mp_tensor_decref(hp);
    mp_tensor_decref(dst);
    if (st != MP_OK)
        return mp_raise(st);
    return Py_BuildValue("(OK)", args[0], (unsigned long long)used);
}

/* (tensor, blocks) for a new tensor t (stolen), or NULL. */
static PyObject *with_blocks(mp_state *s, mp_tensor *t, uint64_t used)
{
    PyObject *obj = mp_wrap(s, t);
    if (!obj)
        return NULL;
    PyObject *res = Py_BuildValue("(NK)", obj, (unsigned long long)used);
    return res;
}

/* _multinomial(probs, num_samples, replacement, seed, offset) -> (indices, blocks) */
static PyObject *f_multinomial(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = MSTATE(m);
    int64_t ns, seed, offset;
    if (nargs != 5 || !mp_is_tensor(s, args[0])) {
        PyErr_SetString(PyExc_TypeError, "_multinomial(probs, num_samples, replacement, seed, "
                        "offset)");
        return NULL;
    }
    int replacement = PyObject_IsTrue(args[2]);
    if (replacement < 0 || mp_parse_int64(args[1], "multinomial", "num_samples", &ns) < 0 ||
        mp_parse_int64(args[3], "multinomial", "seed", &seed) < 0 ||
        mp_parse_int64(args[4], "multinomial", "offset", &offset) < 0)
        return NULL;
    mp_tensor *probs = MP_T(args[0]), *out = NULL;
    uint64_t used = 0;
    mp_status st;
    Py_BEGIN_ALLOW_THREADS
    st = mp_random_multinomial(probs, ns, replacement, (uint64_t)seed, (uint64_t)offset, &out,
                               &used);
    Py_END_ALLOW_THREADS
    return st == MP_OK ? with_blocks(s, out, used) : mp_raise(st);
}

/* _randperm(n, dtype, seed, offset) -> (permutation, blocks) */
static PyObject *f_randperm(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = MSTATE(m);
    int64_t n, seed, offset;
    mp_dtype dt;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "_randperm(n, dtype, seed, offset)");
        return NULL;
    }
    if (mp_parse_int64(args[0], "randperm", "n", &n) < 0 ||
        mp_parse_dtype(s, args[1], MP_DTYPE_INT64, &dt) < 0 ||
        mp_parse_int64(args[2], "randperm", "seed", &seed) < 0 ||
        mp_parse_int64(args[3], "randperm", "offset", &offset) < 0)
        return NULL;
    mp_tensor *out = NULL;
    uint64_t used = 0;
    mp_status st;
    Py_BEGIN_ALLOW_THREADS
    st = mp_random_randperm(n, dt, (uint64_t)seed, (uint64_t)offset, &out, &used);
    Py_END_ALLOW_THREADS
    return st == MP_OK ? with_blocks(s, out, used) : mp_raise(st);
}

PyMethodDef mp_random_functions[] = {
    {"_random_inplace_", (PyCFunction)(void (*)(void))f_random_inplace, METH_FASTCALL,
     "_random_inplace_(tensor, kind, a, b, name, seed, offset) -> (tensor, blocks consumed)"},
    {"_multinomial", (PyCFunction)(void (*)(void))f_multinomial, METH_FASTCALL,
     "_multinomial(probs, num_samples, replacement, seed, offset) -> (indices, blocks)"},
    {"_randperm", (PyCFunction)(void (*)(void))f_randperm, METH_FASTCALL,
     "_randperm(n, dtype, seed, offset) -> (permutation, blocks)"},
    {NULL, NULL, 0, NULL},
};
