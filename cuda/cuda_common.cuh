/* cuda_common.cuh - what the .cu files share: the "is there a device" gate and the one
 * mapping from cudaError_t to mp_status + message. Internal to cuda/, which includes only
 * csrc/shared/: failures are a status plus text in the caller's mp_msg (mp_cuda_api.h), never
 * the core's error state. Included by C++ (nvcc) only. */
#ifndef MP_CUDA_COMMON_CUH
#define MP_CUDA_COMMON_CUH

#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdio>

#include "shared/mp_cuda_api.h"

/* Writes the message (printf format) into msg and returns st. */
inline mp_status mp_cuda_fail(mp_msg *msg, mp_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg->text, sizeof msg->text, fmt, ap);
    va_end(ap);
    return st;
}

/* MP_OK when a device is usable, else MP_ERR_NO_CUDA with the message the Python layer
 * also uses (mpamp/_tensor.py: _no_cuda_message). Every entry point calls it first so a
 * GPU-less machine gets "CUDA not available", not a raw driver error. */
mp_status mp_cuda_require_device(mp_msg *msg);

/* MP_OK for cudaSuccess; otherwise clears the runtime's last error (so the next call does
 * not see a stale one) and returns MP_ERR_CUDA with "<what>: <cuda message>". */
mp_status mp_cuda_check(cudaError_t err, const char *what, mp_msg *msg);

/* Multiprocessors of the current device (1 when it cannot be read), read once: grid sizes. */
int mp_cuda_sm_count(void);

#endif
