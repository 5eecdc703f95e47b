/* tensor_views.c - Tensor methods that make views (view, reshape, transpose, permute,
 * (un)squeeze, flatten, expand, detach), basic indexing (t[...] and t[...] = v), and the
 * in-place writers copy_, fill_, zero_ (through the in-place seam, core/inplace.c).
 * Validation and the view math are in core/view.c. */
#include "bindings.h"

#include "../core/ops/ops.h"
#include "../core/view.h"

#define STATE(self) mp_state_of_type(Py_TYPE(self))

/* Takes the address of the result: C leaves argument evaluation order unspecified, so the
 * call producing *out must complete before *out is read. */
static PyObject *finish(PyObject *self, mp_status st, mp_tensor **out)
{
    if (st != MP_OK)
        return mp_raise(st);
    return mp_wrap(STATE(self), *out);
}

/* finish() for views: records the autograd node of a view of self. */
static PyObject *finish_view(PyObject *self, mp_status st, mp_tensor **out, mp_view_op kind,
                             const int64_t *args, int nargs)
{
    if (st == MP_OK && (st = mp_record_view(kind, MP_T(self), *out, args, nargs)) != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return finish(self, st, out);
}

static PyObject *m_view(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t shape[MP_MAX_DIMS];
    int ndim;
    mp_tensor *out = NULL;
    if (nargs == 1 && Py_IS_TYPE(args[0], STATE(self)->dtype_type)) {
        PyErr_SetString(PyExc_TypeError, "view(dtype) is not supported; use .to(dtype)");
        return NULL;
    }
    if (mp_parse_shape(args, nargs, "view", shape, &ndim) < 0)
        return NULL;
    return finish_view(self, mp_view_reshape(MP_T(self), shape, ndim, 1, &out), &out,
                       MP_VIEWOP_RESHAPE, NULL, 0);
}

static PyObject *m_reshape(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t shape[MP_MAX_DIMS];
    int ndim;
    mp_tensor *out = NULL;
    if (mp_parse_shape(args, nargs, "reshape", shape, &ndim) < 0)
        return NULL;
    mp_status st;
    Py_BEGIN_ALLOW_THREADS   /* may copy a large non-contiguous tensor */
    st = mp_view_reshape(MP_T(self), shape, ndim, 0, &out);
    Py_END_ALLOW_THREADS
    return finish_view(self, st, &out, MP_VIEWOP_RESHAPE, NULL, 0);
}

static PyObject *m_permute(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t dims[MP_MAX_DIMS];
    int ndim;
    mp_tensor *out = NULL;
    if (mp_parse_shape(args, nargs, "permute", dims, &ndim) < 0)
        return NULL;
    mp_status st = mp_view_permute(MP_T(self), dims, ndim, &out);
    for (int i = 0; st == MP_OK && i < ndim; i++)
        dims[i] = dims[i] < 0 ? dims[i] + ndim : dims[i];   /* validated by the view */
    return finish_view(self, st, &out, MP_VIEWOP_PERMUTE, dims, ndim);
}

static int two_ints(PyObject *const *args, Py_ssize_t nargs, const char *fname, int64_t *a,
                    int64_t *b)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes 2 arguments (dim0, dim1), got %zd", fname,
                     nargs);
        return -1;
    }
    if (mp_parse_int64(args[0], fname, "dim0", a) < 0)
        return -1;
    return mp_parse_int64(args[1], fname, "dim1", b);
}

/* transpose as a recorded permutation */
static PyObject *transpose_view(PyObject *self, int64_t a, int64_t b)
{
    mp_tensor *t = MP_T(self), *out = NULL;
    int64_t perm[MP_MAX_DIMS];
    int da = 0, db = 0;
    mp_status st = mp_wrap_dim(a, t->ndim, &da);
    if (st == MP_OK)
        st = mp_wrap_dim(b, t->ndim, &db);
    if (st != MP_OK)
        return mp_raise(st);
    if (t->ndim == 0)
        return Py_NewRef(self);
    for (int i = 0; i < t->ndim; i++)
        perm[i] = i == da ? db : i == db ? da : i;
    st = mp_view_permute(t, perm, t->ndim, &out);
    return finish_view(self, st, &out, MP_VIEWOP_PERMUTE, perm, t->ndim);
}

static PyObject *m_transpose(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t a, b;
    if (two_ints(args, nargs, "transpose", &a, &b) < 0)
        return NULL;
    return transpose_view(self, a, b);
}

static PyObject *m_t(PyObject *self, PyObject *unused)
{
    (void)unused;
    mp_tensor *t = MP_T(self);
    if (t->ndim > 2) {
        PyErr_Format(PyExc_RuntimeError, "t() expects a tensor with <= 2 dimensions, but self "
                     "is %dD", t->ndim);
        return NULL;
    }
    if (t->ndim < 2)
        return Py_NewRef(self);
    return transpose_view(self, 0, 1);
}

static PyObject *m_unsqueeze(PyObject *self, PyObject *arg)
{
    int64_t d;
    mp_tensor *out = NULL;
    if (mp_parse_int64(arg, "unsqueeze", "dim", &d) < 0)
        return NULL;
    return finish_view(self, mp_view_unsqueeze(MP_T(self), d, &out), &out,
                       MP_VIEWOP_UNSQUEEZE, NULL, 0);
}

static PyObject *m_squeeze(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t d = 0;
    mp_tensor *out = NULL;
    int all = nargs == 0 || args[0] == Py_None;
    if (!all && mp_parse_int64(args[0], "squeeze", "dim", &d) < 0)
        return NULL;
    return finish_view(self, mp_view_squeeze(MP_T(self), d, all, &out), &out,
                       MP_VIEWOP_SQUEEZE, NULL, 0);
}

static PyObject *m_flatten(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t s0 = 0, e0 = -1, shape[MP_MAX_DIMS];
    int start, end, n = 0;
    mp_tensor *t = MP_T(self), *out = NULL;
    if (nargs > 0 && mp_parse_int64(args[0], "flatten", "start_dim", &s0) < 0)
        return NULL;
    if (nargs > 1 && mp_parse_int64(args[1], "flatten", "end_dim", &e0) < 0)
        return NULL;
    mp_status st = mp_wrap_dim(s0, t->ndim, &start);
    if (st == MP_OK)
        st = mp_wrap_dim(e0, t->ndim, &end);
    if (st != MP_OK)
        return mp_raise(st);
    if (start > end) {
        PyErr_SetString(PyExc_RuntimeError, "flatten() has invalid args: start_dim cannot "
                        "come after end_dim");
        return NULL;
    }
    if (t->ndim == 0) {
        shape[0] = 1;
        return finish_view(self, mp_view_reshape(t, shape, 1, 0, &out), &out,
                           MP_VIEWOP_RESHAPE, NULL, 0);
    }
    for (int i = 0; i < t->ndim; i++) {
        if (i > start && i <= end)
            shape[n - 1] *= t->shape[i];
        else
            shape[n++] = t->shape[i];
    }
    return finish_view(self, mp_view_reshape(t, shape, n, 0, &out), &out,
                       MP_VIEWOP_RESHAPE, NULL, 0);
}

static PyObject *m_expand(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t shape[MP_MAX_DIMS];
    int ndim;
    mp_tensor *out = NULL;
    if (mp_parse_shape(args, nargs, "expand", shape, &ndim) < 0)
        return NULL;
    return finish_view(self, mp_view_expand(MP_T(self), shape, ndim, &out), &out,
                       MP_VIEWOP_EXPAND, NULL, 0);
}

static PyObject *m_expand_as(PyObject *self, PyObject *other)
{
    mp_tensor *out = NULL;
    if (!mp_is_tensor(STATE(self), other)) {
        PyErr_SetString(PyExc_TypeError, "expand_as(): argument 'other' must be Tensor");
        return NULL;
    }
    mp_tensor *o = MP_T(other);
    return finish_view(self, mp_view_expand(MP_T(self), o->shape, o->ndim, &out), &out,
                       MP_VIEWOP_EXPAND, NULL, 0);
}

static PyObject *m_detach(PyObject *self, PyObject *unused)
{
    (void)unused;
    mp_tensor *t = MP_T(self), *out = NULL;
    return finish(self, mp_view_make(t, t->shape, t->strides, t->ndim, t->offset, &out), &out);
}

/* ---- in-place writers: through mp_check_inplace / mp_inplace_commit, like every in-place
 * op, so autograd sees them (gradient to the source; none to the overwritten values) ---- */

static mp_status commit_maybe_nogil(mp_tensor *dst, mp_tensor *res, const char *fname)
{
    mp_status st;
    if (mp_tensor_numel(dst) >= MP_NOGIL_NUMEL) {
        Py_BEGIN_ALLOW_THREADS
        st = mp_inplace_commit(dst, res, fname);
        Py_END_ALLOW_THREADS
    } else {
        st = mp_inplace_commit(dst, res, fname);
    }
    return st;
}

static mp_status copy_broadcast(mp_tensor *dst, mp_tensor *src)
{
    mp_tensor *expanded;
    mp_status st = mp_check_inplace(dst, "copy_");
    if (st != MP_OK)
        return st;
    st = mp_view_expand(src, dst->shape, dst->ndim, &expanded);
    if (st != MP_OK)
        return st;
    if ((st = mp_record_view(MP_VIEWOP_EXPAND, src, expanded, NULL, 0)) == MP_OK)
        st = commit_maybe_nogil(dst, expanded, "copy_");
    mp_tensor_decref(expanded);
    return st;
}

static PyObject *m_copy_(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || !mp_is_tensor(STATE(self), args[0])) {
        PyErr_SetString(PyExc_TypeError, "copy_(): argument 'src' must be Tensor");
        return NULL;
    }
    mp_status st = copy_broadcast(MP_T(self), MP_T(args[0]));
    return st == MP_OK ? Py_NewRef(self) : mp_raise(st);
}

static int fill_with(mp_tensor *t, PyObject *value, const char *fname)
{
    mp_scalar v;
    if (mp_parse_scalar(value, fname, &v) < 0)
        return -1;
    mp_status st;
    if (mp_tensor_numel(t) >= MP_NOGIL_NUMEL) {
        Py_BEGIN_ALLOW_THREADS
        st = mp_inplace_fill(t, v, fname);
        Py_END_ALLOW_THREADS
    } else {
        st = mp_inplace_fill(t, v, fname);
    }
    return st == MP_OK ? 0 : mp_raise_int(st);
}

static PyObject *m_fill_(PyObject *self, PyObject *value)
{
    if (mp_is_tensor(STATE(self), value)) {
        mp_tensor *v = MP_T(value);
        if (v->ndim != 0) {
            PyErr_Format(PyExc_RuntimeError, "fill_ only supports 0-dimension value tensor but "
                         "got tensor with %d dimensions.", v->ndim);
            return NULL;
        }
        mp_status st = copy_broadcast(MP_T(self), v);
        return st == MP_OK ? Py_NewRef(self) : mp_raise(st);
    }
    return fill_with(MP_T(self), value, "fill_") < 0 ? NULL : Py_NewRef(self);
}

static PyObject *m_zero_(PyObject *self, PyObject *unused)
{
    (void)unused;
    PyObject *zero = PyLong_FromLong(0);
    int rc = fill_with(MP_T(self), zero, "zero_");
    Py_DECREF(zero);
    return rc < 0 ? NULL : Py_NewRef(self);
}

/* ---- basic indexing ---- */

/* Applies one index tuple element to *cur at dimension *dim; replaces *cur. *orig counts the
 * dimensions of the indexed tensor consumed so far (for error messages, as torch reports). */
static int apply_index(mp_tensor **cur, int *dim, int *orig, PyObject *item,
                       int remaining_after)
{
    mp_tensor *next = NULL;
    mp_status st;
    mp_view_op kind = MP_VIEWOP_UNSQUEEZE;
    int64_t rec[4] = {*dim, 0, 0, 0};
    int nrec = 0;
    if (item == Py_None) {
        st = mp_view_unsqueeze(*cur, *dim, &next);
        *dim += 1;
    } else if (item == Py_Ellipsis) {
        *orig += (*cur)->ndim - remaining_after - *dim;
        *dim = (*cur)->ndim - remaining_after;
        return 0;
    } else if (PySlice_Check(item)) {
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(item, &start, &stop, &step) < 0)
            return -1;
        if (step <= 0) {
            PyErr_SetString(PyExc_ValueError, "step must be greater than zero");
            return -1;
        }
        if (*dim >= (*cur)->ndim) {
            PyErr_Format(PyExc_IndexError, "too many indices for tensor of dimension %d",
                         (*cur)->ndim);
            return -1;
        }
        st = mp_view_slice(*cur, *dim, start, stop, step, &next);
        kind = MP_VIEWOP_SLICE;
        rec[1] = start, rec[2] = stop, rec[3] = step, nrec = 4;
        *dim += 1;
        *orig += 1;
    } else if (PyIndex_Check(item) && !PyBool_Check(item)) {
        int64_t idx;
        if (mp_parse_int64(item, "__getitem__", "index", &idx) < 0)
            return -1;
        if (*dim >= (*cur)->ndim) {
            PyErr_Format(PyExc_IndexError, "too many indices for tensor of dimension %d",
                         (*cur)->ndim);
            return -1;
        }
        int64_t n = (*cur)->shape[*dim];
        if (idx < -n || idx >= n) {
            PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for dimension %d with "
                         "size %lld", (long long)idx, *orig, (long long)n);
            return -1;
        }
        st = mp_view_select(*cur, *dim, idx, &next);
        kind = MP_VIEWOP_SELECT;
        rec[1] = idx, nrec = 2;
        *orig += 1;
    } else {
        PyErr_Format(PyExc_IndexError, "only integers, slices (`:`), ellipsis (`...`) and None "
                     "are valid indices, got %.100s (advanced indexing is not supported)",
                     Py_TYPE(item)->tp_name);
        return -1;
    }
    if (st == MP_OK && (st = mp_record_view(kind, *cur, next, rec, nrec)) != MP_OK)
        mp_tensor_decref(next);
    if (st != MP_OK)
        return mp_raise_int(st);
    mp_tensor_decref(*cur);
    *cur = next;
    return 0;
}

static mp_tensor *index_view(PyObject *self, PyObject *key)
{
    PyObject *tup = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (!tup)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(tup), ellipses = 0, consuming = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PyTuple_GET_ITEM(tup, i);
        ellipses += it == Py_Ellipsis;
        consuming += it != Py_Ellipsis && it != Py_None;
    }
    mp_tensor *cur = MP_T(self);
    if (ellipses > 1 || consuming > cur->ndim) {
        if (ellipses > 1)
            PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis "
                            "('...')");
        else if (cur->ndim == 0)
            PyErr_SetString(PyExc_IndexError, "invalid index of a 0-dim tensor. Use "
                            "`tensor.item()` to convert a 0-dim tensor to a number");
        else
            PyErr_Format(PyExc_IndexError, "too many indices for tensor of dimension %d",
                         cur->ndim);
        Py_DECREF(tup);
        return NULL;
    }
    mp_tensor_incref(cur);
    int dim = 0, orig = 0;
    Py_ssize_t after = consuming;   /* dims still to be consumed after the current item */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PyTuple_GET_ITEM(tup, i);
        if (it != Py_Ellipsis && it != Py_None)
            after--;
        /* For an ellipsis, `after` counts the consuming items that follow it. */
        if (apply_index(&cur, &dim, &orig, it, (int)after) < 0) {
            mp_tensor_decref(cur);
            Py_DECREF(tup);
            return NULL;
        }
    }
    Py_DECREF(tup);
    return cur;
}

PyObject *mp_tensor_getitem(PyObject *self, PyObject *key)
{
    if (mp_index_is_advanced(self, key))
        return mp_index_get_advanced(self, key);
    mp_tensor *view = index_view(self, key);
    return view ? mp_wrap(STATE(self), view) : NULL;
}

int mp_tensor_setitem(PyObject *self, PyObject *key, PyObject *value)
{
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "tensor elements cannot be deleted");
        return -1;
    }
    if (mp_index_is_advanced(self, key))
        return mp_index_set_advanced(self, key, value);
    mp_tensor *view = index_view(self, key);
    if (!view)
        return -1;
    int rc;
    if (mp_is_tensor(STATE(self), value)) {
        mp_status st = copy_broadcast(view, MP_T(value));
        rc = st == MP_OK ? 0 : mp_raise_int(st);
    } else {
        rc = fill_with(view, value, "__setitem__");
    }
    mp_tensor_decref(view);
    return rc;
}

PyMethodDef mp_tensor_view_methods[] = {
    {"view", (PyCFunction)(void (*)(void))m_view, METH_FASTCALL, "A view with a new shape"},
    {"reshape", (PyCFunction)(void (*)(void))m_reshape, METH_FASTCALL,
     "A view with a new shape, or a copy when strides do not allow a view"},
    {"permute", (PyCFunction)(void (*)(void))m_permute, METH_FASTCALL, "Reorder dimensions"},
    {"transpose", (PyCFunction)(void (*)(void))m_transpose, METH_FASTCALL,
     "Swap two dimensions"},
    {"t", m_t, METH_NOARGS, "Transpose a tensor of at most 2 dimensions"},
    {"unsqueeze", m_unsqueeze, METH_O, "Insert a dimension of size 1"},
    {"squeeze", (PyCFunction)(void (*)(void))m_squeeze, METH_FASTCALL,
     "Remove dimensions of size 1"},
    {"flatten", (PyCFunction)(void (*)(void))m_flatten, METH_FASTCALL,
     "Merge dimensions start_dim..end_dim"},
    {"expand", (PyCFunction)(void (*)(void))m_expand, METH_FASTCALL,
     "Broadcast size-1 dimensions without copying"},
    {"expand_as", m_expand_as, METH_O, "expand(other.shape)"},
    {"detach", m_detach, METH_NOARGS, "A view that does not require grad"},
    {"copy_", (PyCFunction)(void (*)(void))m_copy_, METH_FASTCALL,
     "Copy src (broadcast, converted) into self"},
    {"fill_", m_fill_, METH_O, "Fill with a value"},
    {"zero_", m_zero_, METH_NOARGS, "Fill with zeros"},
    {NULL, NULL, 0, NULL},
};
