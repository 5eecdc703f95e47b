/* iter.h - walking up to MP_ITER_MAX_OPS equally-shaped strided operands together.
 * Dimensions of size 1 are dropped and adjacent dimensions that are contiguous for every
 * operand are merged, so most walks become one long inner loop. Strides are in elements. */
#ifndef MP_ITER_H
#define MP_ITER_H

#include "tensor.h"

#define MP_ITER_MAX_OPS 4

typedef struct {
    int nops;
    int ndim;                                   /* after coalescing; >= 1 */
    int64_t shape[MP_MAX_DIMS];
    int64_t strides[MP_ITER_MAX_OPS][MP_MAX_DIMS];
    char *base[MP_ITER_MAX_OPS];                /* address of element 0 of each operand */
    size_t itemsize[MP_ITER_MAX_OPS];
    int64_t numel;
} mp_iter;

/* All operands must have the shape of ops[0] (broadcast them first with expand views). */
void mp_iter_init(mp_iter *it, mp_tensor *const *ops, int nops);

/* Calls fn(ptrs, inner_strides_in_elements, inner_count, ctx) once per innermost run. */
typedef void (*mp_iter_fn)(char **ptrs, const int64_t *strides, int64_t n, void *ctx);
void mp_iter_run(const mp_iter *it, mp_iter_fn fn, void *ctx);

/* The same walk cut into contiguous ranges of elements (in row-major order) run on the
 * threads of mp_parallel_for, each at least `grain` elements. Only for fn that treat every
 * element on its own and only read ctx (maps, casts): never for reductions or anything with
 * state, and never when an output overlaps an input other than element for element. */
void mp_iter_run_parallel(const mp_iter *it, mp_iter_fn fn, void *ctx, int64_t grain);

#endif
