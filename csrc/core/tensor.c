/* tensor.c - lifetime of storages and tensors, contiguity and shape checks.
 * Metadata-only view operations live in view.c; data movement in copy.c. */
#include "tensor.h"

#include <stdlib.h>

#include "alloc.h"
#include "backend.h"
#include "autograd/autograd.h"
#include "autograd/autograd_hooks.h"

mp_status mp_storage_new(size_t nbytes, mp_device device, mp_storage **out)
{
    mp_storage *s;
    if (device == MP_DEVICE_CPU) {
        if (!(s = malloc(sizeof *s)))
            return mp_error(MP_ERR_NOMEM, "out of memory allocating a storage header");
        if (!(s->data = mp_alloc(nbytes))) {
            free(s);
            return MP_ERR_NOMEM;
        }
    } else {
        const mp_backend *b = mp_backend_get(device);
        if (!b)
            return MP_ERR_NO_CUDA;
        if (!(s = malloc(sizeof *s)))
            return mp_error(MP_ERR_NOMEM, "out of memory allocating a storage header");
        mp_msg msg;
        mp_status st = b->alloc(nbytes ? nbytes : 1, &s->data, &msg);
        if (st != MP_OK) {
            free(s);
            return mp_backend_error(st, &msg);
        }
    }
    s->refcount = 1;
    s->nbytes = nbytes;
    s->device = device;
    s->release = NULL;
    s->release_ctx = NULL;
    s->version = 0;
    *out = s;
    return MP_OK;
}

mp_storage *mp_storage_wrap(void *data, size_t nbytes, mp_device device,
                            void (*release)(void *), void *ctx)
{
    mp_storage *s = malloc(sizeof *s);
    if (!s) {
        mp_error(MP_ERR_NOMEM, "out of memory allocating a storage header");
        return NULL;
    }
    s->refcount = 1;
    s->data = data;
    s->nbytes = nbytes;
    s->device = device;
    s->release = release;
    s->release_ctx = ctx;
    s->version = 0;
    return s;
}

void mp_storage_incref(mp_storage *s)
{
    __atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED);
}

void mp_storage_decref(mp_storage *s)
{
    if (!s || __atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    if (s->release)
        s->release(s->release_ctx);
    else if (s->device == MP_DEVICE_CPU)
        mp_free(s->data, s->nbytes);
    else
        mp_backend_of_storage(s)->free(s->data, s->nbytes ? s->nbytes : 1);
    free(s);
}

mp_status mp_shape_check(const int64_t *shape, int ndim, mp_dtype dtype, int64_t *numel)
{
    char buf[256];
    if (ndim < 0 || ndim > MP_MAX_DIMS)
        return mp_error(MP_ERR_VALUE, "tensors may have at most %d dimensions, got %d",
                        MP_MAX_DIMS, ndim);
    int has_zero = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            mp_format_shape(buf, sizeof buf, shape, ndim);
            return mp_error(MP_ERR_VALUE, "Trying to create tensor with negative dimension "
                            "%lld: %s", (long long)shape[i], buf);
        }
        has_zero |= shape[i] == 0;
    }
    int64_t n = 1;
    int64_t max_elems = INT64_MAX / (int64_t)mp_dtype_size(dtype);
    for (int i = 0; i < ndim && !has_zero; i++) {
        if (n > max_elems / shape[i]) {
            mp_format_shape(buf, sizeof buf, shape, ndim);
            return mp_error(MP_ERR_NOMEM, "Storage size calculation overflowed with sizes=%s",
                            buf);
        }
        n *= shape[i];
    }
    *numel = has_zero ? 0 : n;
    return has_zero ? mp_shape_check_extent(shape, ndim) : MP_OK;
}

mp_status mp_shape_check_extent(const int64_t *shape, int ndim)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (__builtin_mul_overflow(n, shape[i] > 1 ? shape[i] : 1, &n)) {
            char buf[256];
            mp_format_shape(buf, sizeof buf, shape, ndim);
            return mp_error(MP_ERR_RUNTIME, "numel: integer multiplication overflow (sizes=%s)",
                            buf);
        }
    }
    return MP_OK;
}

void mp_contiguous_strides(const int64_t *shape, int ndim, int64_t *strides)
{
    /* Unsigned, so that a shape still to be refused by mp_shape_check_extent is not UB here. */
    uint64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = (int64_t)s;
        s *= shape[i] > 1 ? (uint64_t)shape[i] : 1;
    }
}

mp_tensor *mp_tensor_on_storage(mp_storage *s, mp_dtype dtype, const int64_t *shape,
                                const int64_t *strides, int ndim, int64_t offset)
{
    mp_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        mp_error(MP_ERR_NOMEM, "out of memory allocating a tensor header");
        return NULL;
    }
    t->refcount = 1;
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        t->shape[i] = shape[i];
        t->strides[i] = strides[i];
    }
    t->offset = offset;
    t->storage = s;
    mp_storage_incref(s);
    return t;
}

mp_status mp_tensor_empty(const int64_t *shape, int ndim, mp_dtype dtype, mp_device device,
                          mp_tensor **out)
{
    int64_t numel;
    int64_t strides[MP_MAX_DIMS];
    mp_storage *s = NULL;
    mp_status st = mp_shape_check(shape, ndim, dtype, &numel);
    if (st != MP_OK)
        return st;
    st = mp_storage_new((size_t)numel * mp_dtype_size(dtype), device, &s);
    if (st != MP_OK)
        return st;
    mp_contiguous_strides(shape, ndim, strides);
    *out = mp_tensor_on_storage(s, dtype, shape, strides, ndim, 0);
    mp_storage_decref(s);
    return *out ? MP_OK : MP_ERR_NOMEM;
}

void mp_tensor_incref(mp_tensor *t)
{
    __atomic_add_fetch(&t->refcount, 1, __ATOMIC_RELAXED);
}

void mp_tensor_decref(mp_tensor *t)
{
    if (!t || __atomic_sub_fetch(&t->refcount, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    if (t->hooks || t->retain_node)
        mp_tensor_release_hooks(t);
    mp_tensor_decref(t->base);
    mp_node_decref(t->grad_fn);
    mp_tensor_decref(t->grad);
    mp_storage_decref(t->storage);
    free(t);
}

int64_t mp_tensor_numel(const mp_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->shape[i];
    return n;
}

int mp_tensor_is_contiguous(const mp_tensor *t)
{
    int64_t expected = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] == 0)
            return 1;
        if (t->shape[i] != 1 && t->strides[i] != expected)
            return 0;
        expected *= t->shape[i];
    }
    return 1;
}

void *mp_tensor_data(const mp_tensor *t)
{
    return (char *)t->storage->data + t->offset * (int64_t)mp_dtype_size(t->dtype);
}
