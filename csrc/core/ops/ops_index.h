/* ops_index.h - indexing ops of the core: advanced indexing (index, index_put), nonzero,
 * gather/scatter, the index_* family along one dim, and the shape ops that need a kernel or a
 * multi-output node (split, unbind, flip) plus the linspace/eye/repeat_interleave factories.
 * Every op checks its arguments with torch's messages, records its autograd node and never
 * reads out of bounds: index values are range-checked before any kernel runs. */
#ifndef MP_OPS_INDEX_H
#define MP_OPS_INDEX_H

#include "../autograd/autograd.h"
#include "../copy.h"
#include "../dtypes.h"   /* mp_dtype_torch_name, for messages */


/* ---- advanced indexing (ops_index.c) ----
 * indices[i] is NULL (dim not indexed), an int64 tensor (indexes one dim; negative values
 * count from the end) or a bool mask (indexes as many dims as it has, which must match).
 * The index tensors broadcast together; their dims replace the indexed dims in place when
 * those are adjacent, and go first otherwise (torch's and NumPy's rule). */
mp_status mp_op_index(mp_tensor *a, mp_tensor *const *indices, int n, mp_tensor **out);
/* out = a copy of a with out[indices] = values (accumulate: +=); values has a's dtype and
 * broadcasts to the indexing result. */
mp_status mp_op_index_put(mp_tensor *a, mp_tensor *const *indices, int n, mp_tensor *values,
                          int accumulate, mp_tensor **out);
/* In place through mp_check_inplace / mp_inplace_commit. */
mp_status mp_op_index_put_(mp_tensor *a, mp_tensor *const *indices, int n, mp_tensor *values,
                           int accumulate);
/* (count, ndim) int64 coordinates of the non-zero elements, in row-major order */
mp_status mp_op_nonzero(mp_tensor *a, mp_tensor **out);

/* ---- along one dim (ops_gather.c, ops_index_dim.c) ---- */
/* out[p] = a[p with p[dim] = index[p]]; wrap: negative indices count from the end
 * (take_along_dim), else they are errors (gather) */
mp_status mp_op_gather(mp_tensor *a, int64_t dim, mp_tensor *index, int wrap, mp_tensor **out);
enum { MP_SCATTER_SET = 0, MP_SCATTER_ADD = 1, MP_SCATTER_MUL = 2 };
/* out = a copy of a with out[p with p[dim] = index[p]] (reduce)= src[p], or value when src is
 * NULL. reduce != SET has no backward (torch's NotImplemented). */
mp_status mp_op_scatter(mp_tensor *a, int64_t dim, mp_tensor *index, mp_tensor *src,
                        mp_scalar value, int reduce, mp_tensor **out);
mp_status mp_op_scatter_add(mp_tensor *a, int64_t dim, mp_tensor *index, mp_tensor *src,
                            mp_tensor **out);
/* index: 1-D (or 0-D) int64 */
mp_status mp_op_index_select(mp_tensor *a, int64_t dim, mp_tensor *index, mp_tensor **out);
mp_status mp_op_index_add(mp_tensor *a, int64_t dim, mp_tensor *index, mp_tensor *src,
                          double alpha, mp_tensor **out);
mp_status mp_op_index_copy(mp_tensor *a, int64_t dim, mp_tensor *index, mp_tensor *src,
                           mp_tensor **out);
mp_status mp_op_index_fill(mp_tensor *a, int64_t dim, mp_tensor *index, mp_scalar value,
                           mp_tensor **out);

/* ---- shape ops and factories (ops_split.c) ---- */
/* outs[i] = views of consecutive pieces of sizes[i] along dim (sum = the dim's size), with
 * one multi-output node (SplitBackward0 / SplitWithSizesBackward0) */
mp_status mp_op_split(mp_tensor *a, int64_t dim, const int64_t *sizes, int n, int with_sizes,
                      mp_tensor **outs);
/* outs[i] = a.select(dim, i) for every i (outs has room for a->shape[dim]) */
mp_status mp_op_unbind(mp_tensor *a, int64_t dim, mp_tensor **outs);
/* a copy reversed along the dims in dim_mask */
mp_status mp_op_flip(mp_tensor *a, uint32_t dim_mask, mp_tensor **out);
mp_status mp_op_linspace(double start, double end, int64_t steps, mp_dtype dt,
                         mp_tensor **out);
mp_status mp_op_eye(int64_t n, int64_t m, mp_dtype dt, mp_tensor **out);
/* repeat_interleave(repeats): i repeated repeats[i] times; output_size < 0: not given */
mp_status mp_op_repeat_index(mp_tensor *repeats, int64_t output_size, mp_tensor **out);

#endif
