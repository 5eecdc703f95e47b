/* tensor.h - the core tensor: dtype, device, shape, strides (in elements), offset, and a
 * refcounted storage. Views share storage. No Python here: the bindings wrap an mp_tensor
 * in a Python object. Autograd fields join this struct with the tape; the version counter
 * (per storage) and the view base serve in-place ops under autograd (inplace.c). */
#ifndef MP_TENSOR_H
#define MP_TENSOR_H

#include "status.h"

typedef struct mp_storage {
    int64_t refcount;
    void *data;
    size_t nbytes;
    mp_device device;
    /* External owner (a NumPy array, a DLPack producer): release(ctx) instead of mp_free. */
    void (*release)(void *ctx);
    void *release_ctx;
    /* Bumped by every in-place write that autograd must know of (mp_inplace_commit): a tensor
     * saved for backward remembers it, and backward refuses a stale one (torch's _version). */
    int64_t version;
} mp_storage;

struct mp_node;
struct mp_hook;

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
    struct mp_tensor *grad;         /* owned; leaves, and non-leaves that retain_grad() */
    int wrapped_number;             /* a Python scalar: lowest priority in type promotion */
    /* views (set by mp_record_view): the tensor this one views (owned; never itself a view),
     * and the storage version at which grad_fn was last made current; a write through the
     * base or any other view makes grad_fn stale, and mp_view_refresh remakes it. */
    struct mp_tensor *base;
    int64_t view_version;
    unsigned char view_no_grad;     /* the view was made while grad mode was off */
    unsigned char version_exempt;   /* .data headers: writes through them bump no version */
    unsigned char retains_grad;
    /* saved headers (mp_node_save): the version when saved, and the node whose output
     * `saved_output_nr` the tensor was (not owned: the saving node keeps it alive), or NULL */
    int saved_output_nr;
    int64_t saved_version;
    const struct mp_node *saved_fn;
    struct mp_hook *hooks;          /* leaves: tensor and post-accumulate hooks (owned) */
    struct mp_node *retain_node;    /* retain_grad(): the node holding its hook (owned) */
} mp_tensor;

/* A view whose grad_fn predates a write into its storage (see mp_view_refresh). */
static inline int mp_view_stale(const mp_tensor *t)
{
    return t->base && t->view_version != t->storage->version;
}

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
