/* interop_buffer.c - the buffer protocol in both directions: tensors export their memory
 * (formats f, e, q, ?, B; bfloat16 as 'H' bits only through _memoryview, see below), and
 * _from_buffer wraps another object's buffer (a NumPy array) without copying, keeping that
 * object alive. */
#include "bindings.h"

#include <stdlib.h>
#include <string.h>

static const char *buffer_format(mp_dtype dt)
{
    switch (dt) {
    case MP_DTYPE_FLOAT32: return "f";
    case MP_DTYPE_FLOAT16: return "e";
    case MP_DTYPE_BFLOAT16: return "H";   /* raw bits: PEP 3118 has no bfloat16 code */
    case MP_DTYPE_INT64: return "q";
    case MP_DTYPE_BOOL: return "?";
    case MP_DTYPE_UINT8: return "B";
    default: return "B";
    }
}

/* Why bfloat16 refuses typed buffers by default: NumPy's np.asarray/np.array ask for a buffer
 * *before* they look at __array_struct__, __array_interface__ or __array__ (numpy/_core/src/
 * multiarray/ctors.c, _array_from_array_like), and PEP 3118 has no bfloat16 code, so a typed
 * 'H' export makes np.asarray(bf16_tensor) a uint16 array of raw bits: a silent wrong answer.
 * NumPy asks with the same flags as memoryview() (PyBUF_FULL_RO), so the two cannot be told
 * apart; but NumPy ignores a failed buffer request and falls through to __array__, which gives
 * ml_dtypes.bfloat16 (or float32). So a bf16 tensor exports a typed ('H') buffer only inside
 * _memoryview() (used by Tensor.numpy and pickling); untyped requests (no PyBUF_FORMAT:
 * struct.unpack_from, file.write, hashlib) still get the raw bytes. */
static _Thread_local int typed_bf16_requested;

/* A consumer that asks for a C/F/any-contiguous buffer (mpi4py, ctypes) reads it as one run
 * of memory, so a strided tensor must refuse (strides are then only informational). */
static int contiguity_refused(const mp_tensor *t, int flags, int c_contiguous)
{
    int big_dims = 0;
    for (int i = 0; i < t->ndim; i++)
        big_dims += t->shape[i] > 1;
    if ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS ||
        (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS)
        return !c_contiguous;
    if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS)
        return !c_contiguous || big_dims > 1;
    return 0;
}

int mp_tensor_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    mp_tensor *t = MP_T(self);
    if (t->storage->device != MP_DEVICE_CPU) {
        PyErr_SetString(PyExc_BufferError, "only CPU tensors export a buffer");
        return -1;
    }
    if (t->dtype == MP_DTYPE_BFLOAT16 && (flags & PyBUF_FORMAT) && !typed_bf16_requested) {
        PyErr_SetString(PyExc_BufferError, "a bfloat16 tensor has no typed buffer (PEP 3118 has "
                        "no bfloat16 format); use t.numpy() (needs ml_dtypes), np.asarray(t) "
                        "or t.float()");
        return -1;
    }
    int contiguous = mp_tensor_is_contiguous(t);
    if (contiguity_refused(t, flags, contiguous)) {
        PyErr_SetString(PyExc_BufferError, "tensor is not contiguous in the requested order; "
                        "call .contiguous()");
        return -1;
    }
    if (!contiguous && (flags & PyBUF_STRIDES) != PyBUF_STRIDES) {
        PyErr_SetString(PyExc_BufferError, "tensor is not contiguous; call .contiguous() or "
                        "request a strided buffer");
        return -1;
    }
    Py_ssize_t *dims = malloc(sizeof(Py_ssize_t) * 2 * (size_t)(t->ndim ? t->ndim : 1));
    if (!dims) {
        PyErr_NoMemory();
        return -1;
    }
    size_t isz = mp_dtype_size(t->dtype);
    for (int i = 0; i < t->ndim; i++) {
        dims[i] = (Py_ssize_t)t->shape[i];
        dims[t->ndim + i] = (Py_ssize_t)(t->strides[i] * (int64_t)isz);
    }
    view->buf = mp_tensor_data(t);
    view->obj = Py_NewRef(self);
    view->len = (Py_ssize_t)(mp_tensor_numel(t) * (int64_t)isz);
    view->readonly = 0;
    view->itemsize = (Py_ssize_t)isz;
    view->format = (flags & PyBUF_FORMAT) ? (char *)buffer_format(t->dtype) : NULL;
    view->ndim = t->ndim;
    view->shape = (flags & PyBUF_ND) == PyBUF_ND ? dims : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? dims + t->ndim : NULL;
    view->suboffsets = NULL;
    view->internal = dims;
    return 0;
}

void mp_tensor_releasebuffer(PyObject *self, Py_buffer *view)
{
    (void)self;
    free(view->internal);
    view->internal = NULL;
}

/* ---- importing a buffer ---- */

typedef struct {
    Py_buffer view;
} held_buffer;

static void release_held(void *ctx)
{
    held_buffer *h = ctx;
    PyGILState_STATE g = PyGILState_Ensure();
    PyBuffer_Release(&h->view);
    PyGILState_Release(g);
    free(h);
}

static int dtype_of_format(const char *fmt, Py_ssize_t itemsize, mp_dtype *out)
{
    if (!fmt)
        fmt = "B";
    if (*fmt == '<' || *fmt == '=' || *fmt == '@')
        fmt++;
    if (strcmp(fmt, "f") == 0 && itemsize == 4)
        *out = MP_DTYPE_FLOAT32;
    else if (strcmp(fmt, "e") == 0 && itemsize == 2)
        *out = MP_DTYPE_FLOAT16;
    else if ((strcmp(fmt, "q") == 0 || strcmp(fmt, "l") == 0) && itemsize == 8)
        *out = MP_DTYPE_INT64;
    else if (strcmp(fmt, "?") == 0 && itemsize == 1)
        *out = MP_DTYPE_BOOL;
    else if (strcmp(fmt, "B") == 0 && itemsize == 1)
        *out = MP_DTYPE_UINT8;
    else if (strcmp(fmt, "H") == 0 && itemsize == 2)
        *out = MP_DTYPE_BFLOAT16;   /* only when the caller says the bits are bfloat16 */
    else
        return -1;
    return 0;
}

/* Checks the imported layout and builds shape/strides in elements. */
static int layout_of(const Py_buffer *v, int64_t *shape, int64_t *strides)
{
    if (v->ndim > MP_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "arrays with more than %d dimensions are not supported",
                     MP_MAX_DIMS);
        return -1;
    }
    for (int i = 0; i < v->ndim; i++) {
        Py_ssize_t st = v->strides ? v->strides[i] : 0;
        shape[i] = v->shape[i];
        if (st < 0) {
            PyErr_SetString(PyExc_ValueError, "At least one stride in the given numpy array is "
                            "negative, and tensors with negative strides are not currently "
                            "supported. (You can probably work around this by making a copy "
                            "of your array with array.copy().)");
            return -1;
        }
        if (st % v->itemsize != 0) {
            PyErr_SetString(PyExc_ValueError, "given numpy array strides not a multiple of the "
                            "element byte size. Copy the numpy array to reallocate the memory.");
            return -1;
        }
        strides[i] = st / v->itemsize;
    }
    if (!v->strides)
        mp_contiguous_strides(shape, v->ndim, strides);
    return 0;
}

/* _from_buffer(obj, bits_are_bf16) -> (tensor, readonly) */
static PyObject *f_from_buffer(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "_from_buffer(obj, bits_are_bf16)");
        return NULL;
    }
    int as_bf16 = PyObject_IsTrue(args[1]);
    held_buffer *h = calloc(1, sizeof *h);
    if (as_bf16 < 0 || !h) {
        free(h);
        return as_bf16 < 0 ? NULL : PyErr_NoMemory();
    }
    if (PyObject_GetBuffer(args[0], &h->view, PyBUF_RECORDS_RO) < 0) {
        free(h);
        return NULL;
    }
    mp_dtype dt;
    int64_t shape[MP_MAX_DIMS], strides[MP_MAX_DIMS];
    int bad = dtype_of_format(h->view.format, h->view.itemsize, &dt) < 0 ||
              (dt == MP_DTYPE_BFLOAT16) != (as_bf16 != 0);
    if (bad)
        PyErr_Format(PyExc_TypeError, "can't convert an array with buffer format '%s' "
                     "(itemsize %zd). The only supported types are: float32, float16, "
                     "bfloat16 (ml_dtypes), int64 and bool.",
                     h->view.format ? h->view.format : "B", h->view.itemsize);
    if (bad || layout_of(&h->view, shape, strides) < 0) {
        PyBuffer_Release(&h->view);
        free(h);
        return NULL;
    }
    int readonly = h->view.readonly;
    mp_storage *st = mp_storage_wrap(h->view.buf, (size_t)h->view.len, MP_DEVICE_CPU,
                                     release_held, h);
    if (!st) {
        PyBuffer_Release(&h->view);
        free(h);
        return mp_raise(MP_ERR_NOMEM);
    }
    mp_tensor *t = mp_tensor_on_storage(st, dt, shape, strides, h->view.ndim, 0);
    mp_storage_decref(st);
    PyObject *tensor = mp_wrap(s, t);
    if (!tensor)
        return NULL;
    return Py_BuildValue("(Ni)", tensor, readonly);
}

/* _memoryview(tensor): memoryview(tensor), with bfloat16 as 'H' (raw bits) allowed. */
static PyObject *f_memoryview(PyObject *m, PyObject *obj)
{
    if (!mp_is_tensor(mp_state_of_module(m), obj)) {
        PyErr_Format(PyExc_TypeError, "_memoryview() expects a Tensor, got %.100s",
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    typed_bf16_requested = 1;
    PyObject *mv = PyMemoryView_FromObject(obj);
    typed_bf16_requested = 0;
    return mv;
}

PyMethodDef mp_buffer_functions[] = {
    {"_memoryview", f_memoryview, METH_O,
     "_memoryview(tensor) -> memoryview of its elements (bfloat16 as 'H' bits)"},
    {"_from_buffer", (PyCFunction)(void (*)(void))f_from_buffer, METH_FASTCALL,
     "_from_buffer(obj, bits_are_bf16) -> (tensor sharing obj's memory, readonly)"},
    {NULL, NULL, 0, NULL},
};
