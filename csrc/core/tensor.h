/* tensor.h - the core tensor: dtype, device, shape, strides (in elements), offset, and a
 * refcounted storage. Views share storage. No Python here: the bindings wrap an mp_tensor
 * in a Python object. Autograd fields join this struct with the tape. */
#ifndef MP_TENSOR_H
#define MP_TENSOR_H

#include "status.h"

#define MP_MAX_DIMS 16

typedef struct mp_storage {
    int64_t refcount;
    void *data;
    size_t nbytes;
    mp_device device;
    /* External owner (a NumPy array, a DLPack producer): release(ctx) instead of mp_free. */
    void (*release)(void *ctx);
    void *release_ctx;
} mp_storage;

struct mp_node;

typedef struct mp_tensor {
    int64_t refcount;
    mp_dtype dtype;
    int ndim;
    int64_t shape[MP_MAX_DIMS];
    int64_t strides[MP_MAX_DIMS];
    int64_t offset;
    mp_storage *storage;
    /* autograd (autograd.c): a leaf has grad_fn == NULL */
    int requires_grad;
    int output_nr;                  /* which output of grad_fn this tensor is */
    struct mp_node *grad_fn;        /* owned reference */
    struct mp_node *grad_accumulator; /* not owned: cleared when that node dies */
    struct mp_tensor *grad;         /* owned; leaves only */
    int wrapped_number;             /* a Python scalar: lowest priority in type promotion */
} mp_tensor;

/* Storage */
mp_status mp_storage_new(size_t nbytes, mp_device device, mp_storage **out);
mp_storage *mp_storage_wrap(void *data, size_t nbytes, mp_device device,
                            void (*release)(void *), void *ctx);
void mp_storage_incref(mp_storage *s);
void mp_storage_decref(mp_storage *s);

/* Checks a shape (non-negative, bounded rank, numel * itemsize representable). */
mp_status mp_shape_check(const int64_t *shape, int ndim, mp_dtype dtype, int64_t *numel);
/* Checks that the product of the sizes, zeros counted as 1, fits in int64: then numel,
 * contiguous strides and index arithmetic over the shape cannot overflow, even when the
 * tensor is empty or an expanded view. */
mp_status mp_shape_check_extent(const int64_t *shape, int ndim);

/* A new contiguous tensor with uninitialised memory. */
mp_status mp_tensor_empty(const int64_t *shape, int ndim, mp_dtype dtype, mp_device device,
                          mp_tensor **out);
/* A tensor over an existing storage (takes a new reference to it). */
mp_tensor *mp_tensor_on_storage(mp_storage *s, mp_dtype dtype, const int64_t *shape,
                                const int64_t *strides, int ndim, int64_t offset);
void mp_tensor_incref(mp_tensor *t);
void mp_tensor_decref(mp_tensor *t);

int64_t mp_tensor_numel(const mp_tensor *t);
int mp_tensor_is_contiguous(const mp_tensor *t);
void *mp_tensor_data(const mp_tensor *t);   /* address of element 0 (storage + offset) */
void mp_contiguous_strides(const int64_t *shape, int ndim, int64_t *strides);

#endif
