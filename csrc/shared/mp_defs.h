/* mp_defs.h - definitions shared by every layer: status codes, dtypes, devices, MP_HD.
 * Header-only, C11 that is also valid C++17 so nvcc can compile it inside .cu files.
 * No allocation, no Python, no intrinsics here. */
#ifndef MP_DEFS_H
#define MP_DEFS_H

#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define MP_HD __host__ __device__ inline
#else
#define MP_HD static inline
#endif

/* The most dimensions a tensor (and an iterator over tensors) has. */
#define MP_MAX_DIMS 16

/* Every core/cpu/cuda function that can fail returns one of these; the bindings map them to
 * Python exceptions (csrc/bindings/errors.c), the message comes from mp_error_message(). */
typedef enum {
    MP_OK = 0,
    MP_ERR_VALUE,       /* bad argument value                   -> ValueError   */
    MP_ERR_TYPE,        /* wrong dtype / kind                   -> TypeError    */
    MP_ERR_SHAPE,       /* incompatible shapes / sizes          -> RuntimeError */
    MP_ERR_INDEX,       /* index out of range                   -> IndexError   */
    MP_ERR_NOMEM,       /* allocation failed                    -> MemoryError  */
    MP_ERR_RUNTIME,     /* other runtime failure                -> RuntimeError */
    MP_ERR_NO_CUDA,     /* CUDA not built or no device present  -> RuntimeError */
    MP_ERR_CUDA,        /* a CUDA call failed                   -> RuntimeError */
    MP_ERR_NOT_IMPLEMENTED /* no kernel for this dtype (torch's) -> NotImplementedError */
} mp_status;

/* Order is part of the ABI between core and bindings (dtype objects are indexed by it). */
typedef enum {
    MP_DTYPE_FLOAT32 = 0,
    MP_DTYPE_FLOAT16 = 1,
    MP_DTYPE_BFLOAT16 = 2,
    MP_DTYPE_INT64 = 3,
    MP_DTYPE_BOOL = 4,
    MP_DTYPE_UINT8 = 5,     /* appended after bool so the older indices keep their values */
    MP_DTYPE_COUNT = 6
} mp_dtype;

typedef enum { MP_DEVICE_CPU = 0, MP_DEVICE_CUDA = 1 } mp_device;

/* A caller-provided message buffer. Backends (cpu/, sim/, cuda/) report a failure as a status
 * code plus text written here; the core copies it into its own error state. They never write
 * the core's buffer themselves. */
#define MP_MSG_CAP 256
typedef struct {
    char text[MP_MSG_CAP];
} mp_msg;

MP_HD size_t mp_dtype_size(mp_dtype dt)
{
    switch (dt) {
    case MP_DTYPE_FLOAT32: return 4;
    case MP_DTYPE_FLOAT16: return 2;
    case MP_DTYPE_BFLOAT16: return 2;
    case MP_DTYPE_INT64: return 8;
    case MP_DTYPE_BOOL: return 1;
    case MP_DTYPE_UINT8: return 1;
    default: return 0;
    }
}

MP_HD int mp_dtype_is_float(mp_dtype dt)
{
    return dt == MP_DTYPE_FLOAT32 || dt == MP_DTYPE_FLOAT16 || dt == MP_DTYPE_BFLOAT16;
}

/* int64, uint8 and bool: exact integer storage (mp_scalar.is_int when loaded). */
MP_HD int mp_dtype_is_integral(mp_dtype dt)
{
    return dt == MP_DTYPE_INT64 || dt == MP_DTYPE_UINT8 || dt == MP_DTYPE_BOOL;
}

#endif
