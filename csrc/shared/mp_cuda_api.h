/* mp_cuda_api.h - the C ABI between the core and the CUDA code in cuda/ (raw device pointers,
 * counts, dtypes). Every call that can fail returns an mp_status and writes its message into
 * the caller's mp_msg; cuda/ never touches the core's error state and includes nothing but
 * csrc/shared/. When the extension is built without nvcc, csrc/core/cuda_stub.c provides
 * these and every call reports "CUDA not available". */
#ifndef MP_CUDA_API_H
#define MP_CUDA_API_H

#include "mp_backend.h"
#include "mp_defs.h"
#include "mp_gpu_plan.h"
#include "mp_kernel_args.h"

#ifdef __cplusplus
extern "C" {
#endif

int mp_cuda_is_built(void);       /* 1 when cuda/ was compiled into this extension */
int mp_cuda_device_count(void);   /* 0 without a usable device (never fails) */
mp_status mp_cuda_malloc(void **ptr, size_t nbytes, mp_msg *msg);
mp_status mp_cuda_free(void *ptr, mp_msg *msg);
/* kind: 0 host->device, 1 device->host, 2 device->device */
mp_status mp_cuda_memcpy(void *dst, const void *src, size_t nbytes, int kind, mp_msg *msg);
/* Elementwise dtype conversion of n contiguous elements on the device (float dtypes). */
mp_status mp_cuda_cast(const void *src, mp_dtype src_dtype, void *dst, mp_dtype dst_dtype,
                       size_t n, mp_msg *msg);

/* Properties of device `index` (name, capability, memory, multiprocessors). */
mp_status mp_cuda_properties(int index, mp_device_props *out, mp_msg *msg);
/* Waits for the device (the legacy default stream) and reports an asynchronous fault. */
mp_status mp_cuda_synchronize(mp_msg *msg);

/* ---- kernels (the .cu files of cuda/); all launch on the legacy default stream and return after the
 * launch (faults surface at the next synchronising call) ---- */

/* Strided copy with dtype conversion over iterator metadata (operand 0 destination, 1
 * source; any dtypes of mp_defs.h: floats through fp32, integers exactly). */
mp_status mp_cuda_copy(const mp_iter *it, mp_dtype dst, mp_dtype src, mp_msg *msg);
/* An elementwise map by its op id (k->op, shared/mp_pointwise.h); MP_ERR_NOT_IMPLEMENTED
 * for maps without one (k->op 0, double-precision maps, integer outputs). */
mp_status mp_cuda_map(const mp_map_kernel *k, mp_msg *msg);
/* Every element of operand 0 of it set to the itemsize-byte pattern. */
mp_status mp_cuda_fill(const mp_iter *it, const void *pattern, size_t itemsize, mp_msg *msg);
/* MP_KERNEL_UNSCALE, MP_KERNEL_SCALE_UPDATE, MP_KERNEL_INV_SCALE and MP_KERNEL_OPTIM with
 * their buffer lists and argument blocks (mp_kernel_args.h); found_inf, scales and step
 * counts are read on the device (no host synchronisation). sm_count sizes the grids. */
mp_status mp_cuda_unscale(void *const *buf, const mp_unscale_args *a, mp_msg *msg);
mp_status mp_cuda_scale_update(void *const *buf, const mp_scale_update_args *a, mp_msg *msg);
mp_status mp_cuda_inv_scale(void *const *buf, mp_msg *msg);
mp_status mp_cuda_optim(void *const *buf, const mp_optim_launch *a, mp_msg *msg);
/* MP_KERNEL_SUM_SQUARES, _EMBEDDING(_BACKWARD), _RELU_16, _COLUMN_SUM, _SUM_STORE, _LOSS, _LOSS_GRAD, _LOSS_REDUCE likewise. */
mp_status mp_cuda_sum_squares(void *const *buf, const mp_sum_squares_args *a, mp_msg *msg);
mp_status mp_cuda_embedding(void *const *buf, const mp_embedding_args *a, mp_msg *msg);
mp_status mp_cuda_embedding_backward(void *const *buf, const mp_embedding_args *a,
                                     mp_msg *msg);
mp_status mp_cuda_relu16(void *const *buf, const mp_relu16_args *a, mp_msg *msg);
mp_status mp_cuda_column_sum(void *const *buf, const mp_colsum_args *a, mp_msg *msg);
/* MP_KERNEL_SUM, the iterator kernel of the core's sums (a its ctx's public block). */
mp_status mp_cuda_sum(const mp_iter *it, const mp_sum_iter_args *a, mp_msg *msg);
mp_status mp_cuda_sum_store(void *const *buf, const mp_sum_store_args *a, mp_msg *msg);
mp_status mp_cuda_loss(void *const *buf, const mp_loss_args *a, mp_msg *msg);
mp_status mp_cuda_loss_grad(void *const *buf, const mp_loss_grad_args *a, mp_msg *msg);
mp_status mp_cuda_loss_reduce(void *const *buf, const mp_loss_reduce_args *a, mp_msg *msg);
/* One column-major cuBLASLt matmul (mp_gpu_gemm_to_colmajor's result): C = alpha * op(X) @
 * op(Y) + beta * C with the epilogue's bias (a rows-long vector) and activation. x, y, c,
 * bias are device addresses; workspace (ws_bytes) is device scratch the caller owns.
 * allow_tf32: fp32 products may use TF32 (torch.backends.cuda.matmul.allow_tf32). cuBLASLt
 * is loaded on first use (dlopen; MPAMP_CUBLASLT_PATH names the library when it is not on
 * the loader's path). MP_GPU_EPI_SEPARATE is the caller's business (refused here). */
mp_status mp_cuda_gemm(const mp_gpu_gemm_cm *g, const void *x, const void *y, void *c,
                       const void *bias, void *workspace, size_t ws_bytes, int allow_tf32,
                       mp_msg *msg);
/* Rounds n contiguous fp32 values in place to dtype (fp16 or bf16) and back: an fp32 C that
 * holds the values a 16-bit C would (mp_gemm_batch.round_dt). */
mp_status mp_cuda_round_f32(void *data, size_t n, mp_dtype dtype, mp_msg *msg);

#ifdef __cplusplus
}
#endif

#endif
