/* mp_cuda_api.h - the C ABI between the core and the CUDA code in cuda/ (raw device pointers,
 * counts, dtypes). Every call that can fail returns an mp_status and writes its message into
 * the caller's mp_msg; cuda/ never touches the core's error state and includes nothing but
 * csrc/shared/. When the extension is built without nvcc, csrc/core/cuda_stub.c provides
 * these and every call reports "CUDA not available". */
#ifndef MP_CUDA_API_H
#define MP_CUDA_API_H

#include "mp_defs.h"

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

#ifdef __cplusplus
}
#endif

#endif
