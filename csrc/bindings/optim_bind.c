/* optim_bind.c - Python entry points of the loss-scaler kernels and the fused optimizer steps
 * (SGD, Adam/AdamW, RMSprop, Adagrad, Adadelta; csrc/core/amp/optim.h): positional-only private _C functions that mpamp/amp/grad_scaler.py and
 * mpamp/optim call. Here: lists of tensors to arrays, optional tensors, the hyper-parameters,
 * and the GIL released when the group is large. No optimizer bookkeeping lives here. */
#include "bindings.h"

#include "../core/amp/optim.h"
#include "../core/ops/ops.h"

#define FN(f) (PyCFunction)(void (*)(void))(f)

/* A list/tuple of tensors (or None -> empty, *out NULL) as a borrowed array; *keep holds the
 * sequence (release with Py_XDECREF) and *arr is PyMem-allocated (release with PyMem_Free). */
typedef struct {
    PyObject *keep;
    mp_tensor **arr;
    Py_ssize_t n;
} tlist;

static void tlist_free(tlist *l)
{
    Py_CLEAR(l->keep);
    PyMem_Free(l->arr);
    l->arr = NULL;
}

static int tlist_parse(mp_state *s, PyObject *obj, const char *fname, const char *arg,
                       int allow_none, tlist *l)
{
    l->keep = NULL;
    l->arr = NULL;
    l->n = 0;
    if (obj == Py_None && allow_none)
        return 0;
    l->keep = PySequence_Fast(obj, "");
    if (!l->keep) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be a list of tensors", fname,
                     arg);
        return -1;
    }
    l->n = PySequence_Fast_GET_SIZE(l->keep);
    l->arr = PyMem_Malloc(sizeof(mp_tensor *) * (size_t)(l->n ? l->n : 1));
    if (!l->arr) {
        tlist_free(l);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < l->n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(l->keep, i);
        if (!mp_is_tensor(s, o)) {
            PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must contain only tensors, "
                         "found %.100s", fname, arg, Py_TYPE(o)->tp_name);
            tlist_free(l);
            return -1;
        }
        l->arr[i] = MP_T(o);
    }
    return 0;
}

static int opt_tensor(mp_state *s, PyObject *o, const char *fname, const char *arg,
                      mp_tensor **t)
{
    *t = NULL;
    if (o == Py_None)
        return 0;
    if (!mp_is_tensor(s, o)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be Tensor or None", fname, arg);
        return -1;
    }
    *t = MP_T(o);
    return 0;
}

static int64_t total_numel(mp_tensor **ts, Py_ssize_t n)
{
    int64_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        total += mp_tensor_numel(ts[i]);
    return total;
}

static int floats(PyObject *const *args, Py_ssize_t n, float *out)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        double d = PyFloat_AsDouble(args[i]);
        if (d == -1.0 && PyErr_Occurred())
            return -1;
        out[i] = (float)d;
    }
    return 0;
}

static int flags(PyObject *const *args, Py_ssize_t n, int *out)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if ((out[i] = PyObject_IsTrue(args[i])) < 0)
            return -1;
    return 0;
}

/* (grads, found_inf, inv_scale or None) */
static PyObject *f_unscale(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    const char *fn = "_amp_foreach_non_finite_check_and_unscale_";
    mp_state *s = mp_state_of_module(m);
    mp_tensor *found = NULL, *inv = NULL;
    tlist g;
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "%s() takes 3 positional arguments", fn);
        return NULL;
    }
    if (opt_tensor(s, args[1], fn, "found_inf", &found) < 0 ||
        opt_tensor(s, args[2], fn, "inv_scale", &inv) < 0)
        return NULL;
    if (!found) {
        PyErr_Format(PyExc_TypeError, "%s(): found_inf must be a Tensor", fn);
        return NULL;
    }
    if (tlist_parse(s, args[0], fn, "self", 0, &g) < 0)
        return NULL;
    mp_status st;
    if (total_numel(g.arr, g.n) >= MP_NOGIL_NUMEL) {
        Py_BEGIN_ALLOW_THREADS
        st = mp_scaler_unscale_(g.arr, (int)g.n, found, inv);
        Py_END_ALLOW_THREADS
    } else {
        st = mp_scaler_unscale_(g.arr, (int)g.n, found, inv);
    }
    tlist_free(&g);
    if (st != MP_OK)
        return mp_raise(st);
    Py_RETURN_NONE;
}

/* (tensors): the sum of the squares of all their elements, a 0-d float32 tensor on their
 * device (clip_grad_norm_) */
static PyObject *f_sum_squares(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    const char *fn = "_foreach_sum_squares";
    mp_state *s = mp_state_of_module(m);
    tlist g;
    if (nargs != 1) {
        PyErr_Format(PyExc_TypeError, "%s() takes 1 positional argument", fn);
        return NULL;
    }
    if (tlist_parse(s, args[0], fn, "tensors", 0, &g) < 0)
        return NULL;
    mp_tensor *out = NULL;
    mp_status st;
    if (total_numel(g.arr, g.n) >= MP_NOGIL_NUMEL) {
        Py_BEGIN_ALLOW_THREADS
        st = mp_op_foreach_sum_squares(g.arr, (int)g.n, &out);
        Py_END_ALLOW_THREADS
    } else {
        st = mp_op_foreach_sum_squares(g.arr, (int)g.n, &out);
    }
    tlist_free(&g);
    if (st != MP_OK)
        return mp_raise(st);
    return mp_wrap(s, out);
}

/* (out, scale): out = 1 / scale on the scale's device (reciprocal in double, as torch) */
static PyObject *f_inv_scale(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    const char *fn = "_amp_inv_scale_";
    mp_state *s = mp_state_of_module(m);
    mp_tensor *t[2];
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes 2 positional arguments", fn);
        return NULL;
    }
    for (int i = 0; i < 2; i++)
        if (opt_tensor(s, args[i], fn, i ? "scale" : "out", &t[i]) < 0)
            return NULL;
    if (!t[0] || !t[1]) {
        PyErr_Format(PyExc_TypeError, "%s(): expected two tensors", fn);
        return NULL;
    }
    mp_status st = mp_scaler_inv_scale(t[0], t[1]);
    if (st != MP_OK)
        return mp_raise(st);
    Py_INCREF(args[0]);
    return args[0];
}

/* (scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval) */
static PyObject *f_update_scale(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    const char *fn = "_amp_update_scale_";
    mp_state *s = mp_state_of_module(m);
    mp_tensor *t[3];
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "%s() takes 6 positional arguments", fn);
        return NULL;
    }
    for (int i = 0; i < 3; i++)
        if (opt_tensor(s, args[i], fn, "self", &t[i]) < 0)
            return NULL;
    if (!t[0] || !t[1] || !t[2]) {
        PyErr_Format(PyExc_TypeError, "%s(): expected three tensors", fn);
        return NULL;
    }
    double growth = PyFloat_AsDouble(args[3]), backoff = PyFloat_AsDouble(args[4]);
    int64_t interval;
    if (PyErr_Occurred() || mp_parse_int64(args[5], fn, "growth_interval", &interval) < 0)
        return NULL;
    mp_status st = mp_scaler_update(t[0], t[1], t[2], growth, backoff, interval);
    if (st != MP_OK)
        return mp_raise(st);
    Py_INCREF(args[0]);
    return args[0];
}

/* Shared group arguments: params, grads, masters|None, grad_scale|None, found_inf|None,
 * stochastic, seed, offset. Returns 0, or -1 with lists released. */
static int parse_group(mp_state *s, PyObject *const *a, const char *fn, tlist *p, tlist *g,
                       tlist *mst, mp_optim_group *grp)
{
    uint64_t seed, offset;
    int64_t sv, ov;
    if (opt_tensor(s, a[3], fn, "grad_scale", &grp->grad_scale) < 0 ||
        opt_tensor(s, a[4], fn, "found_inf", &grp->found_inf) < 0 ||
        (grp->stochastic = PyObject_IsTrue(a[5])) < 0 ||
        mp_parse_int64(a[6], fn, "seed", &sv) < 0 || mp_parse_int64(a[7], fn, "offset", &ov) < 0)
        return -1;
    seed = (uint64_t)sv;
    offset = (uint64_t)ov;
    grp->seed = seed;
    grp->offset = offset;
    if (tlist_parse(s, a[0], fn, "params", 0, p) < 0)
        return -1;
    if (tlist_parse(s, a[1], fn, "grads", 0, g) < 0 ||
        tlist_parse(s, a[2], fn, "masters", 1, mst) < 0) {
        tlist_free(p);
        tlist_free(g);
        return -1;
    }
    if (g->n != p->n || (mst->arr && mst->n != p->n)) {
        PyErr_Format(PyExc_ValueError, "%s(): tensor lists must have the same length", fn);
        tlist_free(p);
        tlist_free(g);
        tlist_free(mst);
        return -1;
    }
    for (Py_ssize_t i = 0; i < p->n; i++)
        p->arr[i]->storage->version++;     /* an in-place write, as torch's: saved copies of
                                              these parameters are stale from now on */
    grp->n = (int)p->n;
    grp->params = p->arr;
    grp->grads = g->arr;
    grp->masters = mst->arr;
    return 0;
}

static int check_len(const tlist *l, Py_ssize_t n, const char *fn)
{
    if (!l->arr || l->n == n)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s(): state lists must match the parameters", fn);
    return -1;
}

/* group (8 args), bufs|None, first, lr, momentum, dampening, weight_decay, nesterov, maximize
 * -> Philox blocks used */
static PyObject *f_fused_sgd(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    const char *fn = "_fused_sgd_";
    mp_state *s = mp_state_of_module(m);
    tlist p, g, mst, bufs = {NULL, NULL, 0};
    mp_optim_group grp;
    mp_sgd_hyper h;
    float fv[4];
    int fl[3];
    if (nargs != 16) {
        PyErr_Format(PyExc_TypeError, "%s() takes 16 positional arguments", fn);
        return NULL;
    }
    if (floats(args + 10, 4, fv) < 0 || flags(args + 14, 2, fl + 1) < 0 ||
        flags(args + 9, 1, fl) < 0)
        return NULL;
    h = (mp_sgd_hyper){fv[0], fv[1], fv[2], fv[3], fl[1], fl[2],
                       (float)(1.0 - PyFloat_AsDouble(args[12]))};
    if (parse_group(s, args, fn, &p, &g, &mst, &grp) < 0)
        return NULL;
    mp_status st = MP_OK;
    uint64_t used = 0;
    if (tlist_parse(s, args[8], fn, "momentum_buffers", 1, &bufs) < 0 ||
        check_len(&bufs, p.n, fn) < 0) {
        st = (mp_status)-1;
    } else if (h.momentum != 0.0f && !bufs.arr) {
        PyErr_Format(PyExc_ValueError, "%s(): momentum needs buffers", fn);
        st = (mp_status)-1;
    } else {
        Py_BEGIN_ALLOW_THREADS
        st = mp_optim_sgd_step(&grp, bufs.arr, fl[0], &h, &used);
        Py_END_ALLOW_THREADS
    }
    tlist_free(&p), tlist_free(&g), tlist_free(&mst), tlist_free(&bufs);
    if (st == (mp_status)-1)
        return NULL;
    if (st != MP_OK)
        return mp_raise(st);
    return PyLong_FromUnsignedLongLong(used);
}

/* group (8 args), exp_avgs, exp_avg_sqs, max_exp_avg_sqs|None, beta1, beta2, eps,
 * weight_decay, step_size, bias_correction2_sqrt, decay, decoupled, amsgrad, maximize,
 * [state_steps|None, lr]: with state_steps (1-element fp32 tensors on the parameters'
 * device) the kernel increments them and derives step_size and bias_correction2_sqrt itself
 * -> Philox blocks used */
static PyObject *f_fused_adam(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    const char *fn = "_fused_adam_";
    mp_state *s = mp_state_of_module(m);
    tlist p, g, mst, st3[3] = {{NULL, NULL, 0}, {NULL, NULL, 0}, {NULL, NULL, 0}};
    mp_optim_group grp;
    float fv[7];
    int fl[3];
    if (nargs != 21 && nargs != 23) {
        PyErr_Format(PyExc_TypeError, "%s() takes 21 or 23 positional arguments", fn);
        return NULL;
    }
    tlist steps = {NULL, NULL, 0};
    if (floats(args + 11, 7, fv) < 0 || flags(args + 18, 3, fl) < 0)
        return NULL;
    mp_adam_steps rule = {NULL, 0.0, PyFloat_AsDouble(args[11]), PyFloat_AsDouble(args[12])};
    if (nargs == 23 && ((rule.lr = PyFloat_AsDouble(args[22])) == -1.0 && PyErr_Occurred()))
        return NULL;
    mp_adam_hyper h = {fv[0], fv[1], fv[2], fv[3], fv[4], fv[5], fv[6], fl[0], fl[1], fl[2],
                       (float)(1.0 - PyFloat_AsDouble(args[11])),
                       (float)(1.0 - PyFloat_AsDouble(args[12]))};
    if (parse_group(s, args, fn, &p, &g, &mst, &grp) < 0)
        return NULL;
    mp_status st = MP_OK;
    uint64_t used = 0;
    static const char *names[3] = {"exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"};
    for (int k = 0; k < 3 && st == MP_OK; k++)
        if (tlist_parse(s, args[8 + k], fn, names[k], k == 2, &st3[k]) < 0 ||
            check_len(&st3[k], p.n, fn) < 0)
            st = (mp_status)-1;
    if (st == MP_OK && nargs == 23 &&
        (tlist_parse(s, args[21], fn, "state_steps", 1, &steps) < 0 ||
         check_len(&steps, p.n, fn) < 0))
        st = (mp_status)-1;
    rule.t = steps.arr;
    if (st == MP_OK) {
        Py_BEGIN_ALLOW_THREADS
        st = mp_optim_adam_step(&grp, st3[0].arr, st3[1].arr, st3[2].arr, &h,
                                steps.arr ? &rule : NULL, &used);
        Py_END_ALLOW_THREADS
    }
    tlist_free(&p), tlist_free(&g), tlist_free(&mst), tlist_free(&steps);
    for (int k = 0; k < 3; k++)
        tlist_free(&st3[k]);
    if (st == (mp_status)-1)
        return NULL;
    if (st != MP_OK)
        return mp_raise(st);
    return PyLong_FromUnsignedLongLong(used);
}

/* Parses nst state lists starting at args[8] (optional ones may be None), runs `call` with
 * the GIL released, frees everything; returns the Philox blocks used or NULL. */
typedef mp_status (*state_step_fn)(const mp_optim_group *grp, tlist *st, const void *h,
                                   uint64_t *used);

static PyObject *state_step(PyObject *m, PyObject *const *args, const char *fn, int nst,
                            const char *const *names, const int *optional, state_step_fn call,
                            const void *h)
{
    mp_state *s = mp_state_of_module(m);
    tlist p, g, mst, st[3] = {{NULL, NULL, 0}, {NULL, NULL, 0}, {NULL, NULL, 0}};
    mp_optim_group grp;
    if (parse_group(s, args, fn, &p, &g, &mst, &grp) < 0)
        return NULL;
    mp_status rc = MP_OK;
    uint64_t used = 0;
    for (int k = 0; k < nst && rc == MP_OK; k++)
        if (tlist_parse(s, args[8 + k], fn, names[k], optional[k], &st[k]) < 0 ||
            check_len(&st[k], p.n, fn) < 0)
            rc = (mp_status)-1;
    if (rc == MP_OK) {
        Py_BEGIN_ALLOW_THREADS
        rc = call(&grp, st, h, &used);
        Py_END_ALLOW_THREADS
    }
    tlist_free(&p), tlist_free(&g), tlist_free(&mst);
    for (int k = 0; k < 3; k++)
        tlist_free(&st[k]);
    if (rc == (mp_status)-1)
        return NULL;
    if (rc != MP_OK)
        return mp_raise(rc);
    return PyLong_FromUnsignedLongLong(used);
}

static mp_status rmsprop_call(const mp_optim_group *grp, tlist *st, const void *h,
                              uint64_t *used)
{
    return mp_optim_rmsprop_step(grp, st[0].arr, st[1].arr, st[2].arr, h, used);
}

/* group (8 args), square_avgs, grad_avgs|None, momentum_buffers|None, lr, alpha, eps,
 * weight_decay, momentum, centered, maximize -> Philox blocks used */
static PyObject *f_fused_rmsprop(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    static const char *const names[3] = {"square_avgs", "grad_avgs", "momentum_buffers"};
    static const int optional[3] = {0, 1, 1};
    float fv[5];
    int fl[2];
    if (nargs != 18) {
        PyErr_Format(PyExc_TypeError, "%s() takes 18 positional arguments", "_fused_rmsprop_");
        return NULL;
    }
    if (floats(args + 11, 5, fv) < 0 || flags(args + 16, 2, fl) < 0)
        return NULL;
    mp_rmsprop_hyper h = {fv[0], fv[1], fv[2], fv[3], fv[4], fl[0], fl[1],
                          (float)(1.0 - PyFloat_AsDouble(args[12]))};
    return state_step(m, args, "_fused_rmsprop_", 3, names, optional, rmsprop_call, &h);
}

static mp_status adagrad_call(const mp_optim_group *grp, tlist *st, const void *h,
                              uint64_t *used)
{
    return mp_optim_adagrad_step(grp, st[0].arr, h, used);
}

/* group (8 args), state_sums, clr, weight_decay, eps, maximize -> Philox blocks used */
static PyObject *f_fused_adagrad(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    static const char *const names[1] = {"state_sums"};
    static const int optional[1] = {0};
    float fv[3];
    int fl[1];
    if (nargs != 13) {
        PyErr_Format(PyExc_TypeError, "%s() takes 13 positional arguments", "_fused_adagrad_");
        return NULL;
    }
    if (floats(args + 9, 3, fv) < 0 || flags(args + 12, 1, fl) < 0)
        return NULL;
    mp_adagrad_hyper h = {fv[0], fv[1], fv[2], fl[0]};
    return state_step(m, args, "_fused_adagrad_", 1, names, optional, adagrad_call, &h);
}

static mp_status adadelta_call(const mp_optim_group *grp, tlist *st, const void *h,
                               uint64_t *used)
{
    return mp_optim_adadelta_step(grp, st[0].arr, st[1].arr, h, used);
}

/* group (8 args), square_avgs, acc_deltas, lr, rho, eps, weight_decay, maximize
 * -> Philox blocks used */
static PyObject *f_fused_adadelta(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    static const char *const names[2] = {"square_avgs", "acc_deltas"};
    static const int optional[2] = {0, 0};
    float fv[4];
    int fl[1];
    if (nargs != 15) {
        PyErr_Format(PyExc_TypeError, "%s() takes 15 positional arguments", "_fused_adadelta_");
        return NULL;
    }
    if (floats(args + 10, 4, fv) < 0 || flags(args + 14, 1, fl) < 0)
        return NULL;
    mp_adadelta_hyper h = {fv[0], fv[1], fv[2], fv[3], fl[0],
                           (float)(1.0 - PyFloat_AsDouble(args[11]))};
    return state_step(m, args, "_fused_adadelta_", 2, names, optional, adadelta_call, &h);
}

PyMethodDef mp_optim_functions[] = {
    {"_amp_foreach_non_finite_check_and_unscale_", FN(f_unscale), METH_FASTCALL,
     "Check grads for inf/NaN (found_inf = 1) and multiply them by inv_scale in place"},
    {"_amp_update_scale_", FN(f_update_scale), METH_FASTCALL,
     "torch's loss-scale update: backoff on inf, growth after growth_interval clean steps"},
    {"_amp_inv_scale_", FN(f_inv_scale), METH_FASTCALL,
     "out = 1 / scale on the scale's device (reciprocal in double, stored as float32)"},
    {"_foreach_sum_squares", FN(f_sum_squares), METH_FASTCALL,
     "Sum of the squares of every element of a list of float tensors (0-d float32)"},
    {"_fused_sgd_", FN(f_fused_sgd), METH_FASTCALL, "Fused multi-tensor SGD step"},
    {"_fused_adam_", FN(f_fused_adam), METH_FASTCALL, "Fused multi-tensor Adam/AdamW step"},
    {"_fused_rmsprop_", FN(f_fused_rmsprop), METH_FASTCALL, "Fused multi-tensor RMSprop step"},
    {"_fused_adagrad_", FN(f_fused_adagrad), METH_FASTCALL, "Fused multi-tensor Adagrad step"},
    {"_fused_adadelta_", FN(f_fused_adadelta), METH_FASTCALL,
     "Fused multi-tensor Adadelta step"},
    {NULL, NULL, 0, NULL},
};
