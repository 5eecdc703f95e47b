/* elementwise.h - the one loop behind every elementwise op: walks an output and up to three
 * inputs (already broadcast to the output's shape), converts chunks of each input to fp32,
 * calls a per-op function on fp32 arrays and converts the result chunk to the output dtype.
 * Math is therefore always fp32 (int64 tensors go through fp32 too: exact below 2^24;
 * mp_map_f64 below exists for integer ops that need exactness). Also: dtype promotion and
 * broadcasting helpers shared by the op files. */
#ifndef MP_ELEMENTWISE_H
#define MP_ELEMENTWISE_H

#include "../shared/mp_backend.h"
#include "tensor.h"

mp_status mp_map(mp_tensor *out, mp_tensor *const *ins, int n_in, mp_map_fn fn,
                 const double *args);

/* mp_map with the op id a GPU backend runs instead of fn (shared/mp_pointwise.h: the same
 * per-element body); mp_map's maps have none and refuse a real GPU. */
mp_status mp_map_with_op(mp_tensor *out, mp_tensor *const *ins, int n_in, mp_map_fn fn, int op,
                    const double *args);

/* Same in double precision (used for int64 results so integers stay exact); mp_map_fn and
 * mp_map_f64_fn: csrc/shared/mp_backend.h. */
mp_status mp_map_f64(mp_tensor *out, mp_tensor *const *ins, int n_in, mp_map_f64_fn fn,
                     const double *args);

/* torch's result_type over tensors (0-d tensors and wrapped numbers have lower priority). */
mp_dtype mp_result_type(mp_tensor *const *ts, int n);
mp_dtype mp_promote_types(mp_dtype a, mp_dtype b);

/* Broadcast shape of all inputs; then expand views of each to it (new references). */
mp_status mp_broadcast_all(mp_tensor *const *ins, int n, int64_t *shape, int *ndim,
                           mp_tensor **expanded, const char *op_name);
void mp_decref_all(mp_tensor **ts, int n);

/* New tensor of `shape` with every element = v. */
mp_status mp_tensor_full(const int64_t *shape, int ndim, mp_dtype dt, double v, mp_tensor **out);
mp_status mp_tensor_full_on(const int64_t *shape, int ndim, mp_dtype dt, double v, mp_device dev,
                            mp_tensor **out);
/* A wrapped-number 0-d tensor (a Python scalar operand). */
mp_status mp_scalar_tensor(double v, mp_dtype dt, mp_tensor **out);
/* Sums g over the broadcast dims so it has `shape` (new reference; g itself if no-op). */
mp_status mp_sum_to_shape(mp_tensor *g, const int64_t *shape, int ndim, mp_tensor **out);

#endif
