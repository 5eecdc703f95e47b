/* index_advanced.c - t[key] and t[key] = value when the key holds a tensor, a list, a bool or
 * another array: the key's ints, slices, None and ... are applied as views (recorded as
 * such), its index tensors collected into the list core/ops_index.c takes (mp_op_index,
 * mp_op_index_put_; a uint8 tensor is a byte mask there, with torch's deprecation warning).
 * Sequences become int64 or bool tensors here, with torch's rules: floats
 * in a list truncate, an all-bool list is a mask, and a short non-tuple key that holds a
 * sequence, slice or None is read as a tuple (deprecated in torch; warned here too). */
#include "bindings.h"

#include "../core/chunk.h"
#include "../core/ops/ops.h"
#include "../core/ops/ops_index.h"
#include "../core/view.h"

#define STATE(self) mp_state_of_type(Py_TYPE(self))
#define MAX_ITEMS 64

enum { IT_NONE, IT_ELLIPSIS, IT_SLICE, IT_INT, IT_TENSOR };

typedef struct {
    int kind;
    int64_t ival;
    PyObject *obj;          /* the slice (borrowed from the key) */
    mp_tensor *t;           /* IT_TENSOR: int64 or bool (owned) */
} key_item;

/* ---- sequences to tensors ---- */

typedef struct {
    int64_t *v;
    Py_ssize_t n, cap;
    int ndim, frozen, all_bool;
    int64_t shape[MP_MAX_DIMS];
} seq_buf;

static int push_value(seq_buf *b, int64_t v)
{
    if (b->n == b->cap) {
        Py_ssize_t cap = b->cap ? 2 * b->cap : 64;
        int64_t *nv = PyMem_Realloc(b->v, sizeof(int64_t) * (size_t)cap);
        if (!nv) {
            PyErr_NoMemory();
            return -1;
        }
        b->v = nv, b->cap = cap;
    }
    b->v[b->n++] = v;
    return 0;
}

static int seq_leaf(mp_state *s, PyObject *o, seq_buf *b)
{
    if (PyBool_Check(o))
        return push_value(b, o == Py_True);
    if (mp_is_tensor(s, o) && mp_tensor_numel(MP_T(o)) == 1) {
        mp_scalar v = mp_tensor_get_item(MP_T(o), 0);
        b->all_bool &= MP_T(o)->dtype == MP_DTYPE_BOOL;
        return push_value(b, v.is_int ? v.i : (int64_t)v.f);
    }
    b->all_bool = 0;
    if (PyFloat_Check(o)) {   /* torch truncates floats in index lists */
        double f = PyFloat_AS_DOUBLE(o);
        if (!(f > -9.2e18 && f < 9.2e18)) {
            PyErr_SetString(PyExc_ValueError, "an index list holds a float that is not a "
                            "finite int64 value");
            return -1;
        }
        return push_value(b, (int64_t)f);
    }
    int64_t v;
    if (!PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "new(): invalid data type '%.100s'", Py_TYPE(o)->tp_name);
        return -1;
    }
    if (mp_parse_int64(o, "__getitem__", "index", &v) < 0)
        return -1;
    return push_value(b, v);
}

/* Nested lists/tuples: the first path down fixes the shape (frozen at the first leaf or
 * empty sequence); everything after must match it. */
static int seq_walk(mp_state *s, PyObject *o, int depth, seq_buf *b)
{
    int is_seq = PyList_Check(o) || PyTuple_Check(o);
    int can_grow = !b->frozen && depth == b->ndim;
    if (!is_seq || (depth >= b->ndim && !can_grow)) {
        if (is_seq || (b->frozen && depth != b->ndim)) {
            PyErr_Format(PyExc_ValueError, "expected a regular nested sequence of indices "
                         "(ragged at dim %d)", depth);
            return -1;
        }
        b->frozen = 1;
        return seq_leaf(s, o, b);
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    if (can_grow) {
        if (depth == MP_MAX_DIMS) {
            PyErr_Format(PyExc_ValueError, "index sequences may have at most %d dimensions",
                         MP_MAX_DIMS);
            return -1;
        }
        b->shape[b->ndim++] = n;
        b->frozen = n == 0;
    } else if (b->shape[depth] != n) {
        PyErr_Format(PyExc_ValueError, "expected sequence of length %lld at dim %d (got %zd)",
                     (long long)b->shape[depth], depth, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (seq_walk(s, PySequence_Fast_GET_ITEM(o, i), depth + 1, b) < 0)
            return -1;
    return 0;
}

static mp_tensor *sequence_tensor(mp_state *s, PyObject *seq)
{
    seq_buf b = {NULL, 0, 0, 0, 0, 1, {0}};
    mp_tensor *t = NULL;
    if (seq_walk(s, seq, 0, &b) == 0) {
        int all_bool = b.all_bool && b.n > 0;
        mp_status st = mp_tensor_empty(b.shape, b.ndim, all_bool ? MP_DTYPE_BOOL
                                       : MP_DTYPE_INT64, MP_DEVICE_CPU, &t);
        if (st != MP_OK) {
            mp_raise(st);
        } else {
            char *p = mp_tensor_data(t);
            for (Py_ssize_t i = 0; i < b.n; i++) {
                if (all_bool)
                    p[i] = (char)(b.v[i] != 0);
                else
                    ((int64_t *)p)[i] = b.v[i];
            }
        }
    }
    PyMem_Free(b.v);
    return t;
}

/* An array-like (NumPy array, ...) through mpamp.as_tensor; int arrays become int64. */
static mp_tensor *array_tensor(mp_state *s, PyObject *obj)
{
    PyObject *mod = PyImport_ImportModule("mpamp");
    PyObject *t = mod ? PyObject_CallMethod(mod, "as_tensor", "O", obj) : NULL;
    Py_XDECREF(mod);
    if (!t)
        return NULL;
    mp_tensor *out = NULL;
    if (mp_is_tensor(s, t))
        mp_tensor_incref(out = MP_T(t));
    else
        PyErr_SetString(PyExc_TypeError, "as_tensor did not return a tensor");
    Py_DECREF(t);
    return out;
}

/* ---- the key ---- */

static int item_of(mp_state *s, PyObject *o, key_item *it)
{
    memset(it, 0, sizeof *it);
    if (o == Py_None) {
        it->kind = IT_NONE;
    } else if (o == Py_Ellipsis) {
        it->kind = IT_ELLIPSIS;
    } else if (PySlice_Check(o)) {
        it->kind = IT_SLICE, it->obj = o;
    } else if (mp_is_tensor(s, o)) {
        mp_tensor *t = MP_T(o);
        if (t->dtype == MP_DTYPE_INT64 && t->ndim == 0) {   /* as an int, like torch */
            it->kind = IT_INT, it->ival = mp_tensor_get_item(t, 0).i;
            return 0;
        }
        if (t->dtype == MP_DTYPE_UINT8 &&   /* a byte mask, as torch (which warns too) */
            PyErr_WarnEx(PyExc_UserWarning, "indexing with dtype mpamp.uint8 is now "
                         "deprecated, please use a dtype mpamp.bool instead.", 1) < 0)
            return -1;
        it->kind = IT_TENSOR;
        mp_tensor_incref(it->t = t);
    } else if (PyBool_Check(o)) {
        it->kind = IT_TENSOR;
        mp_status st = mp_tensor_empty(NULL, 0, MP_DTYPE_BOOL, MP_DEVICE_CPU, &it->t);
        if (st != MP_OK)
            return mp_raise_int(st);
        *(char *)mp_tensor_data(it->t) = o == Py_True;
    } else if (PyList_Check(o) || PyTuple_Check(o)) {
        it->kind = IT_TENSOR;
        if (!(it->t = sequence_tensor(s, o)))
            return -1;
    } else if (PyLong_Check(o) || (PyIndex_Check(o) && !PySequence_Check(o))) {
        it->kind = IT_INT;
        return mp_parse_int64(o, "__getitem__", "index", &it->ival);
    } else if (!PyUnicode_Check(o) && !PyBytes_Check(o) &&
               (PySequence_Check(o) || PyObject_HasAttrString(o, "__array__"))) {
        it->kind = IT_TENSOR;
        if (!(it->t = array_tensor(s, o)))
            return -1;
        if (it->t->dtype == MP_DTYPE_UINT8 && PyErr_WarnEx(PyExc_UserWarning, "indexing with "
                "dtype mpamp.uint8 is now deprecated, please use a dtype mpamp.bool instead.",
                1) < 0)
            return -1;
        if (it->t->dtype == MP_DTYPE_INT64 && it->t->ndim == 0) {   /* as an int, like torch */
            it->kind = IT_INT, it->ival = mp_tensor_get_item(it->t, 0).i;
            mp_tensor_decref(it->t);
            it->t = NULL;
        }
    } else {
        PyErr_Format(PyExc_IndexError, "only integers, slices (`:`), ellipsis (`...`), None and "
                     "long or byte Variables are valid indices (got %.100s)",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    return 0;
}

static void free_items(key_item *items, int n)
{
    for (int i = 0; i < n; i++)
        mp_tensor_decref(items[i].t);
}

/* torch's rule for a non-tuple sequence key: read as a tuple when short and holding a
 * sequence, tensor, slice, ... or None */
static int sequence_is_tuple(mp_state *s, PyObject *key)
{
    Py_ssize_t n = PyList_GET_SIZE(key);
    if (n >= 32)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyList_GET_ITEM(key, i);
        if (o == Py_None || o == Py_Ellipsis || PySlice_Check(o) || mp_is_tensor(s, o) ||
            PyList_Check(o) || PyTuple_Check(o))
            return 1;
    }
    return 0;
}

/* The key as items; *n their count. */
static int parse_key(mp_state *s, PyObject *key, key_item *items, int *n)
{
    PyObject *tup;
    *n = 0;
    if (PyList_Check(key) && sequence_is_tuple(s, key)) {
        if (PyErr_WarnEx(PyExc_UserWarning, "Using a non-tuple sequence for multidimensional "
                         "indexing is deprecated (as in torch); use x[tuple(seq)] instead of "
                         "x[seq]", 1) < 0)
            return -1;
        tup = PyList_AsTuple(key);
    } else {
        tup = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    }
    if (!tup)
        return -1;
    Py_ssize_t len = PyTuple_GET_SIZE(tup);
    int rc = 0;
    if (len > MAX_ITEMS) {
        PyErr_Format(PyExc_IndexError, "too many indices (%zd)", len);
        rc = -1;
    }
    for (Py_ssize_t i = 0; rc == 0 && i < len; i++) {
        rc = item_of(s, PyTuple_GET_ITEM(tup, i), &items[i]);
        *n = (int)i + (rc == 0);
    }
    Py_DECREF(tup);    /* slices are borrowed from the key, which the caller holds */
    if (rc < 0)
        free_items(items, *n);
    return rc;
}

/* ---- applying the key ---- */

typedef struct {
    mp_tensor *view;                            /* the key's basic part applied (owned) */
    mp_tensor *entries[MAX_ITEMS + MP_MAX_DIMS]; /* per dim of view: NULL or an index */
    int n_entries, advanced;
} applied_key;

static int consumes(const key_item *it)
{
    if (it->kind == IT_SLICE || it->kind == IT_INT)
        return 1;
    if (it->kind != IT_TENSOR)
        return 0;
    return it->t->dtype == MP_DTYPE_BOOL || it->t->dtype == MP_DTYPE_UINT8 ? it->t->ndim : 1;
}

/* replaces k->view by *next (a view of it recorded as kind); takes the address of next: the
 * call producing it must complete before it is read */
static int step_view(applied_key *k, mp_status st, mp_tensor **next, mp_view_op kind,
                     const int64_t *rec, int nrec)
{
    if (st == MP_OK && (st = mp_record_view(kind, k->view, *next, rec, nrec)) != MP_OK)
        mp_tensor_decref(*next);
    if (st != MP_OK)
        return mp_raise_int(st);
    mp_tensor_decref(k->view);
    k->view = *next;
    return 0;
}

static int apply_basic(applied_key *k, const key_item *it, int *dim, int *orig)
{
    mp_tensor *cur = k->view, *next = NULL;
    mp_status st;
    if (it->kind == IT_NONE) {
        k->entries[k->n_entries++] = NULL;
        st = mp_view_unsqueeze(cur, (*dim)++, &next);
        return step_view(k, st, &next, MP_VIEWOP_UNSQUEEZE, NULL, 0);
    }
    if (it->kind == IT_SLICE) {
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(it->obj, &start, &stop, &step) < 0)
            return -1;
        if (step <= 0) {
            PyErr_SetString(PyExc_ValueError, "step must be greater than zero");
            return -1;
        }
        int64_t rec[4] = {*dim, start, stop, step};
        k->entries[k->n_entries++] = NULL;
        (*orig)++;
        st = mp_view_slice(cur, (*dim)++, start, stop, step, &next);
        return step_view(k, st, &next, MP_VIEWOP_SLICE, rec, 4);
    }
    int64_t n = cur->shape[*dim], idx = it->ival;
    if (idx < -n || idx >= n) {
        PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for dimension %d with size "
                     "%lld", (long long)idx, *orig, (long long)n);
        return -1;
    }
    int64_t rec[2] = {*dim, idx < 0 ? idx + n : idx};
    (*orig)++;
    st = mp_view_select(cur, *dim, rec[1], &next);
    return step_view(k, st, &next, MP_VIEWOP_SELECT, rec, 2);
}

static int check_counts(const mp_tensor *t, const key_item *items, int n, int *consuming)
{
    int ellipses = 0;
    *consuming = 0;
    for (int i = 0; i < n; i++) {
        *consuming += consumes(&items[i]);
        ellipses += items[i].kind == IT_ELLIPSIS;
    }
    if (ellipses > 1) {
        PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
        return -1;
    }
    if (*consuming > t->ndim) {
        PyErr_Format(PyExc_IndexError, "too many indices for tensor of dimension %d", t->ndim);
        return -1;
    }
    return 0;
}

static int apply_key(PyObject *self, key_item *items, int n, applied_key *k)
{
    int after, dim = 0, orig = 0;
    memset(k, 0, sizeof *k);
    if (check_counts(MP_T(self), items, n, &after) < 0)
        return -1;
    mp_tensor_incref(k->view = MP_T(self));
    for (int i = 0; i < n; i++) {
        const key_item *it = &items[i];
        int c = consumes(it);
        after -= c;
        if (it->kind == IT_ELLIPSIS) {
            int skip = k->view->ndim - dim - after;
            for (int j = 0; j < skip; j++)
                k->entries[k->n_entries++] = NULL;
            dim += skip, orig += skip;
        } else if (it->kind == IT_TENSOR) {
            k->entries[k->n_entries++] = it->t;
            k->advanced = 1;
            dim += c, orig += c;
        } else if (apply_basic(k, it, &dim, &orig) < 0) {
            mp_tensor_decref(k->view);
            k->view = NULL;
            return -1;
        }
    }
    return 0;
}

/* ---- entry points (dispatched from tensor_views.c) ---- */

static int item_is_basic(mp_state *s, PyObject *o)
{
    if (o == Py_None || o == Py_Ellipsis || PySlice_Check(o))
        return 1;
    if (mp_is_tensor(s, o) || PyBool_Check(o))
        return 0;
    return PyLong_Check(o) || (PyIndex_Check(o) && !PySequence_Check(o));
}

int mp_index_is_advanced(PyObject *self, PyObject *key)
{
    mp_state *s = STATE(self);
    if (!PyTuple_Check(key))
        return !item_is_basic(s, key);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key); i++)
        if (!item_is_basic(s, PyTuple_GET_ITEM(key, i)))
            return 1;
    return 0;
}

PyObject *mp_index_get_advanced(PyObject *self, PyObject *key)
{
    key_item items[MAX_ITEMS];
    applied_key k;
    int n;
    if (parse_key(STATE(self), key, items, &n) < 0)
        return NULL;
    PyObject *res = NULL;
    if (apply_key(self, items, n, &k) == 0) {
        mp_tensor *out = NULL;
        mp_status st = MP_OK;
        if (!k.advanced) {
            mp_tensor_incref(out = k.view);
        } else if (mp_tensor_numel(k.view) >= MP_NOGIL_NUMEL) {
            Py_BEGIN_ALLOW_THREADS
            st = mp_op_index(k.view, k.entries, k.n_entries, &out);
            Py_END_ALLOW_THREADS
        } else {
            st = mp_op_index(k.view, k.entries, k.n_entries, &out);
        }
        res = st == MP_OK ? mp_wrap(STATE(self), out) : mp_raise(st);
        mp_tensor_decref(k.view);
    }
    free_items(items, n);
    return res;
}

/* value as a tensor of dtype dt without leading size-1 dims (as torch's setitem) */
static mp_tensor *value_tensor(mp_state *s, PyObject *value, mp_dtype dt)
{
    mp_tensor *v = NULL, *out = NULL;
    mp_status st;
    if (!mp_is_tensor(s, value)) {
        mp_scalar sc;
        if (mp_parse_scalar(value, "__setitem__", &sc) < 0)
            return NULL;
        if ((st = mp_check_scalar_fits(dt, sc)) != MP_OK ||
            (st = mp_tensor_empty(NULL, 0, dt, MP_DEVICE_CPU, &v)) != MP_OK) {
            mp_raise(st);
            return NULL;
        }
        mp_store_scalar(dt, mp_tensor_data(v), sc);
        return v;
    }
    if ((st = mp_op_to_dtype(MP_T(value), dt, 0, &v)) != MP_OK) {
        mp_raise(st);
        return NULL;
    }
    int lead = 0;
    while (lead < v->ndim && v->shape[lead] == 1)
        lead++;
    if (!lead)
        return v;
    st = mp_view_reshape(v, v->shape + lead, v->ndim - lead, 0, &out);
    if (st == MP_OK && (st = mp_record_view(MP_VIEWOP_RESHAPE, v, out, NULL, 0)) != MP_OK) {
        mp_tensor_decref(out);
        out = NULL;
    }
    mp_tensor_decref(v);
    if (st != MP_OK)
        mp_raise(st);
    return out;
}

int mp_index_set_advanced(PyObject *self, PyObject *key, PyObject *value)
{
    key_item items[MAX_ITEMS];
    applied_key k;
    int n, rc = -1;
    if (parse_key(STATE(self), key, items, &n) < 0)
        return -1;
    if (apply_key(self, items, n, &k) == 0) {
        mp_tensor *v = value_tensor(STATE(self), value, k.view->dtype);
        if (v) {
            mp_status st;
            if (mp_tensor_numel(k.view) >= MP_NOGIL_NUMEL) {
                Py_BEGIN_ALLOW_THREADS
                st = mp_op_index_put_(k.view, k.entries, k.n_entries, v, 0);
                Py_END_ALLOW_THREADS
            } else {
                st = mp_op_index_put_(k.view, k.entries, k.n_entries, v, 0);
            }
            rc = st == MP_OK ? 0 : mp_raise_int(st);
            mp_tensor_decref(v);
        }
        mp_tensor_decref(k.view);
    }
    free_items(items, n);
    return rc;
}
