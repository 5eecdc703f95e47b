/* reduce.h - sum reductions over any set of dimensions with a double accumulator, the
 * building block of sum/mean and of reducing broadcast gradients. dim_mask bit d set means
 * "reduce dimension d". */
#ifndef MP_REDUCE_H
#define MP_REDUCE_H

#include "tensor.h"

/* A contiguous accumulator of shape (nd dims) with 8-byte zero elements (0.0 and 0 alike)
 * under an int64 header, on dev: calloc'd host memory on the CPU (no fill pass), filled
 * there on a device. */
mp_status mp_acc_zeros(const int64_t *shape, int nd, mp_device dev, mp_tensor **out);
/* out (contiguous, any dtype) = the numel(out) doubles held in acc (a contiguous tensor of
 * 8-byte elements, e.g. an int64 header over double accumulators), rounded once; on their
 * device. */
mp_status mp_store_f64(mp_tensor *acc, mp_tensor *out);
mp_status mp_reduce_sum(mp_tensor *t, uint32_t dim_mask, int keepdim, mp_dtype out_dtype,
                        mp_tensor **out);
/* Output shape of a reduction. */
void mp_reduced_shape(const mp_tensor *t, uint32_t dim_mask, int keepdim, int64_t *shape,
                      int *ndim);

#endif
