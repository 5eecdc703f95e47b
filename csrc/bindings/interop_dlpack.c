/* interop_dlpack.c - DLPack in both directions, zero-copy, for CPU memory (kDLCPU, and
 * kDLCUDAHost on import) and CUDA memory (kDLCUDA, device 0: mpamp's cuda:0, the simulated GPU
 * included). Export: Tensor.__dlpack__ returns a capsule whose manager context holds a
 * reference to the core tensor (its deleter needs no GIL); Tensor.__dlpack_device__. Import:
 * _from_dlpack(capsule) wraps the producer's memory in an mp_storage on its device whose
 * release hook calls the producer's deleter. Streams: mpamp runs on CUDA's legacy default
 * stream, so a consumer on that stream (stream=None or 1) or one that asks for no
 * synchronisation (-1) gets the capsule at once; a consumer naming another stream gets it
 * after a device synchronisation. Strides are in elements; exports point `data` at element 0
 * and use byte_offset 0. Structs in dlpack.h. */
#include "bindings.h"

#include <stdlib.h>
#include <string.h>

#include "dlpack.h"
#include "../core/backend.h"

/* ================================ export ================================ */

/* One allocation per export: the managed tensor (either flavour), the core tensor that keeps
 * the memory alive, and the arrays the DLTensor's shape/strides point into. */
typedef struct {
    union {
        DLManagedTensor legacy;
        DLManagedTensorVersioned versioned;
    } m;
    mp_tensor *t;
    int64_t shape[MP_MAX_DIMS];
    int64_t strides[MP_MAX_DIMS];
} export_ctx;

/* Pure C: consumers may call the deleter from any thread without the GIL. A storage owned by a
 * Python object (from_numpy) takes the GIL itself in its release hook (interop_buffer.c). */
static void export_free(export_ctx *ctx)
{
    mp_tensor_decref(ctx->t);
    free(ctx);
}

static void delete_legacy(DLManagedTensor *self)
{
    export_free(self->manager_ctx);
}

static void delete_versioned(DLManagedTensorVersioned *self)
{
    export_free(self->manager_ctx);
}

/* A consumer that took ownership renamed the capsule ("used_..."); then deleting is its job. */
static void legacy_capsule_destructor(PyObject *cap)
{
    if (!PyCapsule_IsValid(cap, DLPACK_CAPSULE))
        return;
    DLManagedTensor *m = PyCapsule_GetPointer(cap, DLPACK_CAPSULE);
    if (m && m->deleter)
        m->deleter(m);
}

static void versioned_capsule_destructor(PyObject *cap)
{
    if (!PyCapsule_IsValid(cap, DLPACK_CAPSULE_VERSIONED))
        return;
    DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, DLPACK_CAPSULE_VERSIONED);
    if (m && m->deleter)
        m->deleter(m);
}

static DLDataType dl_dtype_of(mp_dtype dt)
{
    DLDataType d = {kDLFloat, 32, 1};
    switch (dt) {
    case MP_DTYPE_FLOAT32: break;
    case MP_DTYPE_FLOAT16: d.bits = 16; break;
    case MP_DTYPE_BFLOAT16: d.code = kDLBfloat; d.bits = 16; break;
    case MP_DTYPE_INT64: d.code = kDLInt; d.bits = 64; break;
    case MP_DTYPE_BOOL: d.code = kDLBool; d.bits = 8; break;
    case MP_DTYPE_UINT8: d.code = kDLUInt; d.bits = 8; break;
    default: break;
    }
    return d;
}

static void fill_dltensor(DLTensor *dl, export_ctx *ctx)
{
    const mp_tensor *t = ctx->t;
    for (int i = 0; i < t->ndim; i++) {
        ctx->shape[i] = t->shape[i];
        ctx->strides[i] = t->strides[i];
    }
    dl->data = mp_tensor_data(t);
    dl->device = (DLDevice){t->storage->device == MP_DEVICE_CUDA ? kDLCUDA : kDLCPU, 0};
    dl->ndim = t->ndim;
    dl->dtype = dl_dtype_of(t->dtype);
    dl->shape = ctx->shape;
    dl->strides = ctx->strides;
    dl->byte_offset = 0;
}

/* Steals the reference to t (also on failure). */
static PyObject *export_capsule(mp_tensor *t, int versioned, int copied)
{
    export_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        mp_tensor_decref(t);
        return PyErr_NoMemory();
    }
    ctx->t = t;
    PyObject *cap;
    if (versioned) {
        DLManagedTensorVersioned *m = &ctx->m.versioned;
        m->version = (DLPackVersion){DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
        m->manager_ctx = ctx;
        m->deleter = delete_versioned;
        m->flags = copied ? DLPACK_FLAG_BITMASK_IS_COPIED : 0;
        fill_dltensor(&m->dl_tensor, ctx);
        cap = PyCapsule_New(m, DLPACK_CAPSULE_VERSIONED, versioned_capsule_destructor);
    } else {
        DLManagedTensor *m = &ctx->m.legacy;
        m->manager_ctx = ctx;
        m->deleter = delete_legacy;
        fill_dltensor(&m->dl_tensor, ctx);
        cap = PyCapsule_New(m, DLPACK_CAPSULE, legacy_capsule_destructor);
    }
    if (!cap)
        export_free(ctx);
    return cap;
}

typedef struct {
    PyObject *stream, *max_version, *dl_device, *copy;
} dlpack_kwargs;

static int parse_dlpack_kwargs(Py_ssize_t nargs, PyObject *const *args, PyObject *kwnames,
                               dlpack_kwargs *kw)
{
    static const char *const names[] = {"stream", "max_version", "dl_device", "copy"};
    PyObject **slots[] = {&kw->stream, &kw->max_version, &kw->dl_device, &kw->copy};
    *kw = (dlpack_kwargs){Py_None, Py_None, Py_None, Py_None};
    if (nargs != 0) {
        PyErr_SetString(PyExc_TypeError, "__dlpack__() takes no positional arguments");
        return -1;
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        size_t j = 0;
        while (j < 4 && PyUnicode_CompareWithASCIIString(name, names[j]) != 0)
            j++;
        if (j == 4) {
            PyErr_Format(PyExc_TypeError, "__dlpack__() got an unexpected keyword argument "
                         "'%U'", name);
            return -1;
        }
        *slots[j] = args[i];
    }
    return 0;
}

/* (a, b) with two ints, as max_version and dl_device are. */
static int parse_int_pair(PyObject *obj, const char *what, long *a, long *b)
{
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 2 ||
        !PyLong_Check(PyTuple_GET_ITEM(obj, 0)) || !PyLong_Check(PyTuple_GET_ITEM(obj, 1))) {
        PyErr_Format(PyExc_TypeError, "__dlpack__(): %s must be a tuple of two ints, got %R",
                     what, obj);
        return -1;
    }
    *a = PyLong_AsLong(PyTuple_GET_ITEM(obj, 0));
    *b = PyLong_AsLong(PyTuple_GET_ITEM(obj, 1));
    return PyErr_Occurred() ? -1 : 0;
}

/* The stream a CUDA consumer names (the array API's numbers): 1 on success when the export
 * must synchronise the device first, 0 when not, -1 with an exception. */
static int check_cuda_stream(long v)
{
    if (v == -1 || v == 1)          /* no synchronisation / the legacy default stream: ours */
        return 0;
    if (v == 2) {
        PyErr_SetString(PyExc_BufferError, "per-thread default stream is not supported.");
        return -1;
    }
    if (v <= 0) {
        PyErr_Format(PyExc_ValueError, "unsupported stream on cuda:0: %ld.", v);
        return -1;
    }
    return 1;                       /* a consumer's own stream: let it see finished work */
}

/* Checks stream and dl_device against the device of the tensor exported; *sync = 1 when the
 * device must be synchronised first. Returns 1 for a versioned capsule, 0 for legacy, -1 on
 * error. */
static int check_dlpack_kwargs(const dlpack_kwargs *kw, mp_device dev, int *sync)
{
    long a, b;
    int cuda = dev == MP_DEVICE_CUDA;
    *sync = 0;
    if (kw->stream != Py_None) {
        if (!PyLong_Check(kw->stream)) {
            PyErr_Format(PyExc_TypeError, "__dlpack__(): stream must be an int or None, got "
                         "%.100s", Py_TYPE(kw->stream)->tp_name);
            return -1;
        }
        long v = PyLong_AsLong(kw->stream);
        int overflow = v == -1 && PyErr_Occurred();
        if (overflow)
            PyErr_Clear();
        if (cuda && overflow) {
            PyErr_Format(PyExc_ValueError, "unsupported stream on cuda:0: %R.", kw->stream);
            return -1;
        }
        if (cuda && (*sync = check_cuda_stream(v)) < 0)
            return -1;
        if (!cuda && (overflow || v != -1)) {   /* -1 means "no synchronization": harmless */
            PyErr_Format(PyExc_ValueError, "__dlpack__(): stream must be None for CPU "
                         "tensors, got %R", kw->stream);
            return -1;
        }
    }
    if (kw->dl_device != Py_None) {
        if (parse_int_pair(kw->dl_device, "dl_device", &a, &b) < 0)
            return -1;
        if (a != (cuda ? kDLCUDA : kDLCPU) || b != 0) {
            PyErr_Format(PyExc_BufferError, "__dlpack__(): mpamp exports a %s tensor only to "
                         "its own device (%s, 0), not dl_device=(%ld, %ld); move it with "
                         ".to() first", cuda ? "cuda:0" : "CPU",
                         cuda ? "kDLCUDA=2" : "kDLCPU=1", a, b);
            return -1;
        }
    }
    if (kw->max_version == Py_None)
        return 0;
    if (parse_int_pair(kw->max_version, "max_version", &a, &b) < 0)
        return -1;
    return a >= 1;
}

/* Waits for the device of dev (the consumer reads on a stream of its own). */
static int sync_device(mp_device dev)
{
    const mp_backend *b = mp_backend_get(dev);
    if (!b)
        return mp_raise_int(MP_ERR_NO_CUDA);
    mp_msg msg;
    mp_status st = b->synchronize(&msg);
    return st == MP_OK ? 0 : mp_raise_int(mp_backend_error(st, &msg));
}

/* __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) */
static PyObject *m_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                          PyObject *kwnames)
{
    dlpack_kwargs kw;
    mp_tensor *t = MP_T(self), *out;
    if (parse_dlpack_kwargs(nargs, args, kwnames, &kw) < 0)
        return NULL;
    mp_device dev = t->storage->device;
    int sync;
    int versioned = check_dlpack_kwargs(&kw, dev, &sync);
    int copy = kw.copy == Py_None ? 0 : PyObject_IsTrue(kw.copy);
    if (versioned < 0 || copy < 0)
        return NULL;
    if (t->requires_grad) {
        PyErr_SetString(PyExc_BufferError, "Can't export tensors that require gradient, use "
                        "tensor.detach()");
        return NULL;
    }
    if (!copy) {
        if (sync && sync_device(dev) < 0)
            return NULL;
        mp_tensor_incref(t);
        return export_capsule(t, versioned, 0);
    }
    mp_status st = mp_tensor_empty(t->shape, t->ndim, t->dtype, dev, &out);
    if (st == MP_OK && (st = mp_copy_maybe_nogil(out, t)) != MP_OK)
        mp_tensor_decref(out);
    if (st != MP_OK)
        return mp_raise(st);
    if (sync && sync_device(dev) < 0) {
        mp_tensor_decref(out);
        return NULL;
    }
    return export_capsule(out, versioned, 1);
}

static PyObject *m_dlpack_device(PyObject *self, PyObject *unused)
{
    (void)unused;
    int cuda = MP_T(self)->storage->device == MP_DEVICE_CUDA;
    return Py_BuildValue("(ii)", cuda ? kDLCUDA : kDLCPU, 0);
}

PyMethodDef mp_tensor_interop_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))m_dlpack, METH_FASTCALL | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None): a DLPack "
     "capsule sharing this tensor's memory (versioned when max_version >= (1, 0))"},
    {"__dlpack_device__", m_dlpack_device, METH_NOARGS,
     "(device_type, device_id) as DLPack numbers: (1, 0) for the CPU, (2, 0) for cuda:0"},
    {NULL, NULL, 0, NULL},
};

/* ================================ import ================================ */

/* What the import needs from either flavour of managed tensor. */
typedef struct {
    DLTensor *dl;
    void *managed;
    void (*release)(void *managed);
    const char *used_name;
    int readonly;
} import_src;

static void release_legacy(void *p)
{
    DLManagedTensor *m = p;
    if (m->deleter)
        m->deleter(m);
}

static void release_versioned(void *p)
{
    DLManagedTensorVersioned *m = p;
    if (m->deleter)
        m->deleter(m);
}

/* For a storage that must not call the producer's deleter (the capsule still owns it). */
static void release_nothing(void *p)
{
    (void)p;
}

static int open_capsule(PyObject *cap, import_src *src)
{
    if (!PyCapsule_CheckExact(cap)) {
        PyErr_Format(PyExc_TypeError, "from_dlpack: expected an object with __dlpack__ or a "
                     "DLPack capsule, got %.100s", Py_TYPE(cap)->tp_name);
        return -1;
    }
    if (PyCapsule_IsValid(cap, DLPACK_CAPSULE_VERSIONED)) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, DLPACK_CAPSULE_VERSIONED);
        if (m->version.major != DLPACK_MAJOR_VERSION) {
            PyErr_Format(PyExc_BufferError, "from_dlpack: DLPack version %u.%u is not "
                         "supported (mpamp reads version 1.x)", (unsigned)m->version.major,
                         (unsigned)m->version.minor);
            return -1;
        }
        *src = (import_src){&m->dl_tensor, m, release_versioned, DLPACK_CAPSULE_VERSIONED_USED,
                            (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0};
        return 0;
    }
    if (PyCapsule_IsValid(cap, DLPACK_CAPSULE)) {
        DLManagedTensor *m = PyCapsule_GetPointer(cap, DLPACK_CAPSULE);
        *src = (import_src){&m->dl_tensor, m, release_legacy, DLPACK_CAPSULE_USED, 0};
        return 0;
    }
    const char *name = PyCapsule_GetName(cap);
    PyErr_Clear();
    if (name && (strcmp(name, DLPACK_CAPSULE_USED) == 0 ||
                 strcmp(name, DLPACK_CAPSULE_VERSIONED_USED) == 0)) {
        PyErr_SetString(PyExc_RuntimeError, "from_dlpack received an invalid capsule. Note "
                        "that DLTensor capsules can be consumed only once, so you might have "
                        "already constructed a tensor from it once.");
        return -1;
    }
    PyErr_Format(PyExc_ValueError, "from_dlpack: the capsule is named '%s', not 'dltensor' or "
                 "'dltensor_versioned'", name ? name : "(null)");
    return -1;
}

static const char *dl_code_name(unsigned code)
{
    static const char *const names[] = {"int", "uint", "float", "opaque", "bfloat", "complex",
                                        "bool"};
    return code < sizeof names / sizeof names[0] ? names[code] : "unknown";
}

static int dtype_of_dl(DLDataType d, mp_dtype *out)
{
    int ok = d.lanes == 1;
    if (ok && d.code == kDLFloat && d.bits == 32)
        *out = MP_DTYPE_FLOAT32;
    else if (ok && d.code == kDLFloat && d.bits == 16)
        *out = MP_DTYPE_FLOAT16;
    else if (ok && d.code == kDLBfloat && d.bits == 16)
        *out = MP_DTYPE_BFLOAT16;
    else if (ok && d.code == kDLInt && d.bits == 64)
        *out = MP_DTYPE_INT64;
    else if (ok && d.code == kDLBool && d.bits == 8)
        *out = MP_DTYPE_BOOL;
    else if (ok && d.code == kDLUInt && d.bits == 8)
        *out = MP_DTYPE_UINT8;
    else {
        PyErr_Format(PyExc_TypeError, "from_dlpack: unsupported DLPack dtype %s%u (code=%u, "
                     "bits=%u, lanes=%u). The only supported types are: float32, float16, "
                     "bfloat16, int64, bool and uint8.", dl_code_name(d.code), (unsigned)d.bits,
                     (unsigned)d.code, (unsigned)d.bits, (unsigned)d.lanes);
        return -1;
    }
    return 0;
}

/* The mpamp device of the producer's memory: the CPU for kDLCPU and kDLCUDAHost (pinned host
 * memory is ordinary CPU memory to us), cuda:0 for kDLCUDA device 0 when this process has
 * CUDA. */
static int check_dl_device(DLDevice dev, mp_device *out)
{
    if (dev.device_type == kDLCPU || dev.device_type == kDLCUDAHost) {
        *out = MP_DEVICE_CPU;
        return 0;
    }
    if (dev.device_type == kDLCUDA && dev.device_id == 0) {
        if (!mp_backend_get(MP_DEVICE_CUDA)) {
            PyErr_Format(PyExc_BufferError, "from_dlpack: the memory is on DLPack device "
                         "(2, 0), CUDA, and %s", mp_error_message());
            return -1;
        }
        *out = MP_DEVICE_CUDA;
        return 0;
    }
    PyErr_Format(PyExc_BufferError, "from_dlpack: mpamp imports CPU memory and cuda:0 memory "
                 "(DLPack devices (1, 0), (3, 0) and (2, 0)), got DLPack device (%d, %d); copy "
                 "the tensor to one of those first", (int)dev.device_type, (int)dev.device_id);
    return -1;
}

/* Shape, element strides, and the bytes the view can reach from element 0 (*extent). */
static int layout_of_dl(const DLTensor *dl, mp_dtype dt, int64_t *shape, int64_t *strides,
                        size_t *extent)
{
    int64_t numel, last = 0;
    if (dl->ndim < 0 || dl->ndim > MP_MAX_DIMS || (dl->ndim > 0 && !dl->shape)) {
        PyErr_Format(PyExc_ValueError, "from_dlpack: tensors may have 0 to %d dimensions, got "
                     "%d%s", MP_MAX_DIMS, (int)dl->ndim, dl->shape ? "" : " (shape is NULL)");
        return -1;
    }
    for (int i = 0; i < dl->ndim; i++)
        shape[i] = dl->shape[i];
    mp_status st = mp_shape_check(shape, dl->ndim, dt, &numel);
    if (st != MP_OK)
        return mp_raise_int(st);
    if (!dl->strides)
        mp_contiguous_strides(shape, dl->ndim, strides);
    for (int i = 0; dl->strides && i < dl->ndim; i++) {
        strides[i] = dl->strides[i];
        if (strides[i] < 0) {
            PyErr_SetString(PyExc_ValueError, "from_dlpack: tensors with negative strides are "
                            "not supported; make a copy first");
            return -1;
        }
    }
    for (int i = 0; numel > 0 && i < dl->ndim; i++) {
        int64_t reach;
        if (__builtin_mul_overflow(shape[i] - 1, strides[i], &reach) ||
            __builtin_add_overflow(last, reach, &last)) {
            PyErr_SetString(PyExc_ValueError, "from_dlpack: strides overflow the address "
                            "space");
            return -1;
        }
    }
    int64_t bytes;
    if (__builtin_mul_overflow(last + 1, (int64_t)mp_dtype_size(dt), &bytes)) {
        PyErr_SetString(PyExc_ValueError, "from_dlpack: strides overflow the address space");
        return -1;
    }
    *extent = numel > 0 ? (size_t)bytes : 0;
    return 0;
}

/* Wraps the producer's memory; on success the storage owns the managed tensor. */
static mp_tensor *wrap_memory(const import_src *src, mp_dtype dt, mp_device dev,
                              const int64_t *shape, const int64_t *strides, size_t extent)
{
    char *data = src->dl->data ? (char *)src->dl->data + src->dl->byte_offset : NULL;
    if (extent > 0 && (!data || (uintptr_t)data % mp_dtype_size(dt) != 0)) {
        PyErr_SetString(PyExc_ValueError, "from_dlpack: the data pointer is NULL or not "
                        "aligned to the element size");
        return NULL;
    }
    mp_storage *st = mp_storage_wrap(data, extent, dev, src->release, src->managed);
    if (!st) {
        mp_raise(MP_ERR_NOMEM);
        return NULL;
    }
    mp_tensor *t = mp_tensor_on_storage(st, dt, shape, strides, src->dl->ndim, 0);
    if (!t)
        st->release = release_nothing;
    mp_storage_decref(st);
    if (!t)
        mp_raise(MP_ERR_NOMEM);
    return t;
}

/* _from_dlpack(capsule) -> (tensor, readonly) */
static PyObject *f_from_dlpack(PyObject *m, PyObject *cap)
{
    mp_state *s = mp_state_of_module(m);
    import_src src;
    mp_dtype dt;
    mp_device dev;
    int64_t shape[MP_MAX_DIMS], strides[MP_MAX_DIMS];
    size_t extent = 0;
    if (open_capsule(cap, &src) < 0 || check_dl_device(src.dl->device, &dev) < 0 ||
        dtype_of_dl(src.dl->dtype, &dt) < 0 ||
        layout_of_dl(src.dl, dt, shape, strides, &extent) < 0)
        return NULL;
    mp_tensor *t = wrap_memory(&src, dt, dev, shape, strides, extent);
    if (!t)
        return NULL;
    if (PyCapsule_SetName(cap, src.used_name) < 0) {
        t->storage->release = release_nothing;   /* the capsule still owns the memory */
        mp_tensor_decref(t);
        return NULL;
    }
    PyObject *tensor = mp_wrap(s, t);   /* on failure the deleter runs: we own it now */
    if (!tensor)
        return NULL;
    return Py_BuildValue("(Ni)", tensor, src.readonly);
}

PyMethodDef mp_dlpack_functions[] = {
    {"_from_dlpack", f_from_dlpack, METH_O,
     "_from_dlpack(capsule) -> (tensor sharing the capsule's memory, readonly flag)"},
    {NULL, NULL, 0, NULL},
};
