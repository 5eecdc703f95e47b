/* loss.h - helpers shared by the loss files (ops_loss.c, ops_loss_nll.c): the reduction
 * argument, dense fp32 operands, and the final 'none'/'mean'/'sum' step. Internal to the core. */
#ifndef MP_LOSS_H
#define MP_LOSS_H

#include "../tensor.h"

/* ValueError unless reduction is MP_RED_NONE, MP_RED_MEAN or MP_RED_SUM. */
mp_status mp_loss_check_reduction(int reduction);
/* t broadcast to shape as a contiguous fp32 tensor (new reference; t's own header when it
 * already is one). */
mp_status mp_loss_dense(mp_tensor *t, const int64_t *shape, int nd, mp_tensor **out);
/* l: per-element fp32 losses. 'none': l as dtype dt; 'sum'/'mean': a 0-d tensor of dt with the
 * double sum (divided by denom for 'mean'), rounded once. */
mp_status mp_loss_reduce(mp_tensor *l, int reduction, double denom, mp_dtype dt,
                         mp_tensor **out);
/* The same with the 'mean' denominator on l's device: one double held in denom (an 8-byte
 * element tensor), read by the kernel (nll_loss's weight sum: no host copy). */
mp_status mp_loss_reduce_by(mp_tensor *l, int reduction, mp_tensor *denom, mp_dtype dt,
                            mp_tensor **out);
/* For 'mean'/'sum' the gradient is one number: g (divided by denom for 'mean'). */
mp_status mp_loss_grad_scale(mp_tensor *g, int reduction, double denom, float *scale);

#endif
