/* cuda_common.cuh - what the .cu files share: the "is there a device" gate and the one
 * mapping from cudaError_t to mp_status + message. Internal to cuda/; the core only sees
 * csrc/core/cuda_api.h. Included by C++ (nvcc) only. */
#ifndef MP_CUDA_COMMON_CUH
#define MP_CUDA_COMMON_CUH

#include <cuda_runtime.h>

#include "core/cuda_api.h"
#include "core/status.h"

/* MP_OK when a device is usable, else MP_ERR_NO_CUDA with the message the Python layer
 * also uses (mpamp/_tensor.py: _no_cuda_message). Every entry point calls it first so a
 * GPU-less machine gets "CUDA not available", not a raw driver error. */
mp_status mp_cuda_require_device(void);

/* MP_OK for cudaSuccess; otherwise clears the runtime's last error (so the next call does
 * not see a stale one) and returns MP_ERR_CUDA with "<what>: <cuda message>". */
mp_status mp_cuda_check(cudaError_t err, const char *what);

#endif
