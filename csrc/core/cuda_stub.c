/* cuda_stub.c - stand-ins for cuda/ when the extension is built without nvcc (compiled only
 * then; setup.py picks one or the other). Every entry fails cleanly, through the same ABI as
 * cuda/ (csrc/shared/mp_cuda_api.h: a status plus the caller's message buffer). */
#include "../shared/mp_cuda_api.h"

#include <stdio.h>
#include <string.h>

static mp_status unavailable(mp_msg *msg)
{
    snprintf(msg->text, sizeof msg->text, "CUDA not available: mpamp was built without CUDA "
             "support (nvcc was not found or MPAMP_CUDA=0)");
    return MP_ERR_NO_CUDA;
}

int mp_cuda_is_built(void) { return 0; }
int mp_cuda_device_count(void) { return 0; }

mp_status mp_cuda_malloc(void **ptr, size_t nbytes, mp_msg *msg)
{
    (void)nbytes;
    *ptr = NULL;
    return unavailable(msg);
}

mp_status mp_cuda_free(void *ptr, mp_msg *msg)
{
    (void)ptr;
    return unavailable(msg);
}

mp_status mp_cuda_memcpy(void *dst, const void *src, size_t nbytes, int kind, mp_msg *msg)
{
    (void)dst, (void)src, (void)nbytes, (void)kind;
    return unavailable(msg);
}

mp_status mp_cuda_cast(const void *src, mp_dtype src_dtype, void *dst, mp_dtype dst_dtype,
                       size_t n, mp_msg *msg)
{
    (void)src, (void)src_dtype, (void)dst, (void)dst_dtype, (void)n;
    return unavailable(msg);
}

mp_status mp_cuda_properties(int index, mp_device_props *out, mp_msg *msg)
{
    (void)index;
    memset(out, 0, sizeof *out);
    return unavailable(msg);
}

mp_status mp_cuda_synchronize(mp_msg *msg) { return unavailable(msg); }

mp_status mp_cuda_copy(const mp_iter *it, mp_dtype dst, mp_dtype src, mp_msg *msg)
{
    (void)it, (void)dst, (void)src;
    return unavailable(msg);
}

mp_status mp_cuda_fill(const mp_iter *it, const void *pattern, size_t itemsize, mp_msg *msg)
{
    (void)it, (void)pattern, (void)itemsize;
    return unavailable(msg);
}

mp_status mp_cuda_unscale(void *const *buf, const mp_unscale_args *a, mp_msg *msg)
{
    (void)buf, (void)a;
    return unavailable(msg);
}

mp_status mp_cuda_scale_update(void *const *buf, const mp_scale_update_args *a, mp_msg *msg)
{
    (void)buf, (void)a;
    return unavailable(msg);
}

mp_status mp_cuda_inv_scale(void *const *buf, mp_msg *msg)
{
    (void)buf;
    return unavailable(msg);
}

mp_status mp_cuda_optim(void *const *buf, const mp_optim_launch *a, mp_msg *msg)
{
    (void)buf, (void)a;
    return unavailable(msg);
}

mp_status mp_cuda_gemm(const mp_gpu_gemm_cm *g, const void *x, const void *y, void *c,
                       const void *bias, void *workspace, size_t ws_bytes, int allow_tf32,
                       mp_msg *msg)
{
    (void)g, (void)x, (void)y, (void)c, (void)bias, (void)workspace, (void)ws_bytes;
    (void)allow_tf32;
    return unavailable(msg);
}

mp_status mp_cuda_round_f32(void *data, size_t n, mp_dtype dtype, mp_msg *msg)
{
    (void)data, (void)n, (void)dtype;
    return unavailable(msg);
}

mp_status mp_cuda_map(const mp_map_kernel *k, mp_msg *msg)
{
    (void)k;
    return unavailable(msg);
}

mp_status mp_cuda_relu16(void *const *buf, const mp_relu16_args *a, mp_msg *msg)
{
    (void)buf, (void)a;
    return unavailable(msg);
}

mp_status mp_cuda_column_sum(void *const *buf, const mp_colsum_args *a, mp_msg *msg)
{
    (void)buf, (void)a;
    return unavailable(msg);
}

mp_status mp_cuda_sum_store(void *const *buf, const mp_sum_store_args *a, mp_msg *msg)
{
    (void)buf, (void)a;
    return unavailable(msg);
}

mp_status mp_cuda_loss(void *const *buf, const mp_loss_args *a, mp_msg *msg)
{
    (void)buf, (void)a;
    return unavailable(msg);
}

mp_status mp_cuda_loss_grad(void *const *buf, const mp_loss_grad_args *a, mp_msg *msg)
{
    (void)buf, (void)a;
    return unavailable(msg);
}

mp_status mp_cuda_loss_reduce(void *const *buf, const mp_loss_reduce_args *a, mp_msg *msg)
{
    (void)buf, (void)a;
    return unavailable(msg);
}

mp_status mp_cuda_sum(const mp_iter *it, const mp_sum_iter_args *a, mp_msg *msg)
{
    (void)it, (void)a;
    return unavailable(msg);
}

mp_status mp_cuda_sum_squares(void *const *buf, const mp_sum_squares_args *a, mp_msg *msg)
{
    (void)buf, (void)a;
    return unavailable(msg);
}

mp_status mp_cuda_embedding(void *const *buf, const mp_embedding_args *a, mp_msg *msg)
{
    (void)buf, (void)a;
    return unavailable(msg);
}

mp_status mp_cuda_embedding_backward(void *const *buf, const mp_embedding_args *a, mp_msg *msg)
{
    (void)buf, (void)a;
    return unavailable(msg);
}
