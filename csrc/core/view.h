/* view.h - operations that make a new tensor header over the same storage: reshape/view,
 * permute, transpose, (un)squeeze, expand, slicing and selection. No data moves here, except
 * reshape of a tensor whose strides cannot express the new shape (it copies, like torch). */
#ifndef MP_VIEW_H
#define MP_VIEW_H

#include "tensor.h"

/* Wraps a possibly negative dim into [0, ndim); IndexError with torch's message if out of
 * range. `ndim` of a 0-d tensor counts as 1, as in torch. */
mp_status mp_wrap_dim(int64_t dim, int ndim, int *out);

mp_status mp_view_make(mp_tensor *t, const int64_t *shape, const int64_t *strides, int ndim,
                       int64_t offset, mp_tensor **out);
/* shape may hold one -1. view_only: fail instead of copying when strides do not allow it. */
mp_status mp_view_reshape(mp_tensor *t, const int64_t *shape, int ndim, int view_only,
                          mp_tensor **out);
mp_status mp_view_permute(mp_tensor *t, const int64_t *dims, int ndim, mp_tensor **out);
mp_status mp_view_transpose(mp_tensor *t, int64_t d0, int64_t d1, mp_tensor **out);
mp_status mp_view_unsqueeze(mp_tensor *t, int64_t dim, mp_tensor **out);
/* all_dims: drop every size-1 dim; otherwise only `dim` when its size is 1. */
mp_status mp_view_squeeze(mp_tensor *t, int64_t dim, int all_dims, mp_tensor **out);
/* shape may hold -1 for "keep"; new leading dims are allowed, as in torch. */
mp_status mp_view_expand(mp_tensor *t, const int64_t *shape, int ndim, mp_tensor **out);
/* Python slice semantics with step > 0; start/stop are clamped like Python's. */
mp_status mp_view_slice(mp_tensor *t, int64_t dim, int64_t start, int64_t stop, int64_t step,
                        mp_tensor **out);
mp_status mp_view_select(mp_tensor *t, int64_t dim, int64_t index, mp_tensor **out);
/* Broadcast shape of a and b (numpy rules); error names both shapes. */
mp_status mp_broadcast_shapes(const int64_t *a, int na, const int64_t *b, int nb,
                              int64_t *out, int *nout);

#endif
