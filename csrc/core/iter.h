/* iter.h - walking up to MP_ITER_MAX_OPS equally-shaped strided operands together.
 * Dimensions of size 1 are dropped and adjacent dimensions that are contiguous for every
 * operand are merged, so most walks become one long inner loop. Strides are in elements. */
#ifndef MP_ITER_H
#define MP_ITER_H

#include "../shared/mp_backend.h"
#include "tensor.h"

/* All operands must have the shape of ops[0] (broadcast them first with expand views). */
void mp_iter_init(mp_iter *it, mp_tensor *const *ops, int nops);

/* Calls fn(ptrs, inner_strides_in_elements, inner_count, ctx) once per innermost run
 * (mp_iter and mp_iter_fn: csrc/shared/mp_backend.h). */
void mp_iter_run(const mp_iter *it, mp_iter_fn fn, void *ctx);

/* The same walk cut into contiguous ranges of elements (in row-major order) run on the
 * threads of mp_parallel_for, each at least `grain` elements. Only for fn that treat every
 * element on its own and only read ctx (maps, casts): never for reductions or anything with
 * state, and never when an output overlaps an input other than element for element. */
void mp_iter_run_parallel(const mp_iter *it, mp_iter_fn fn, void *ctx, int64_t grain);

/* The walk cut along one dimension in which operand 0 moves (its largest such), so the
 * threads' ranges touch disjoint elements of operand 0 and each element of it sees its
 * runs in the serial walk's order: for fn that accumulate into operand 0 (sums over some
 * dims), with the serial walk's bits. Serial when operand 0 moves along no dimension or the
 * walk is under two grains. */
void mp_iter_run_split(const mp_iter *it, mp_iter_fn fn, void *ctx, int64_t grain);

#endif
