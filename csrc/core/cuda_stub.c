/* cuda_stub.c - stand-ins for cuda/ when the extension is built without nvcc (compiled only
 * then; setup.py picks one or the other). Every entry fails cleanly, through the same ABI as
 * cuda/ (csrc/shared/mp_cuda_api.h: a status plus the caller's message buffer). */
#include "../shared/mp_cuda_api.h"

#include <stdio.h>

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
