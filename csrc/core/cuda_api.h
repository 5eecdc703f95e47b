/* cuda_api.h - the C ABI between the core and the kernels in cuda/ (raw device pointers,
 * mp_status). When the extension is built without nvcc, cuda_stub.c provides these and
 * every call reports "CUDA not available". */
#ifndef MP_CUDA_API_H
#define MP_CUDA_API_H

#include "../shared/mp_defs.h"

#ifdef __cplusplus
extern "C" {
#endif

int mp_cuda_is_built(void);       /* 1 when cuda/ was compiled into this extension */
int mp_cuda_device_count(void);   /* 0 without a usable device (never fails) */
mp_status mp_cuda_malloc(void **ptr, size_t nbytes);
mp_status mp_cuda_free(void *ptr);
/* kind: 0 host->device, 1 device->host, 2 device->device */
mp_status mp_cuda_memcpy(void *dst, const void *src, size_t nbytes, int kind);
/* Elementwise dtype conversion of n contiguous elements on the device (float dtypes). */
mp_status mp_cuda_cast(const void *src, mp_dtype src_dtype, void *dst, mp_dtype dst_dtype,
                       size_t n);

#ifdef __cplusplus
}
#endif

#endif
