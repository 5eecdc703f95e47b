/* cuda_stub.c - stand-ins for the cuda/ kernels when the extension is built without nvcc
 * (compiled only then; setup.py picks one or the other). Every entry fails cleanly. */
#include "cuda_api.h"
#include "status.h"

static mp_status unavailable(void)
{
    return mp_error(MP_ERR_NO_CUDA, "CUDA not available: mpamp was built without CUDA "
                    "support (nvcc was not found or MPAMP_CUDA=0)");
}

int mp_cuda_is_built(void) { return 0; }
int mp_cuda_device_count(void) { return 0; }

mp_status mp_cuda_malloc(void **ptr, size_t nbytes)
{
    (void)nbytes;
    *ptr = NULL;
    return unavailable();
}

mp_status mp_cuda_free(void *ptr)
{
    (void)ptr;
    return unavailable();
}

mp_status mp_cuda_memcpy(void *dst, const void *src, size_t nbytes, int kind)
{
    (void)dst, (void)src, (void)nbytes, (void)kind;
    return unavailable();
}

mp_status mp_cuda_cast(const void *src, mp_dtype src_dtype, void *dst, mp_dtype dst_dtype,
                       size_t n)
{
    (void)src, (void)src_dtype, (void)dst, (void)dst_dtype, (void)n;
    return unavailable();
}
