/* dlpack.h - the DLPack ABI (v1.x) that interop_dlpack.c exports and imports: devices, dtypes,
 * the DLTensor view, and the legacy and versioned managed tensors carried in PyCapsules.
 * Written from the public specification (dmlc/dlpack); only the parts mpamp uses. Layouts must
 * match the spec byte for byte: every producer and consumer in the process shares them. */
#ifndef MP_DLPACK_H
#define MP_DLPACK_H

#include <stdint.h>

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1

/* Capsule names: a consumer renames the capsule to the "used_" name when it takes ownership. */
#define DLPACK_CAPSULE "dltensor"
#define DLPACK_CAPSULE_USED "used_dltensor"
#define DLPACK_CAPSULE_VERSIONED "dltensor_versioned"
#define DLPACK_CAPSULE_VERSIONED_USED "used_dltensor_versioned"

/* DLManagedTensorVersioned.flags */
#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (UINT64_C(1) << 1)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (UINT64_C(1) << 2)

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

typedef enum {
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3,
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13,
    kDLOneAPI = 14,
    kDLWebGPU = 15,
    kDLHexagon = 16,
    kDLMAIA = 17,
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id;
} DLDevice;

typedef enum {
    kDLInt = 0,
    kDLUInt = 1,
    kDLFloat = 2,
    kDLOpaqueHandle = 3,
    kDLBfloat = 4,
    kDLComplex = 5,
    kDLBool = 6,
} DLDataTypeCode;

typedef struct {
    uint8_t code;    /* a DLDataTypeCode */
    uint8_t bits;
    uint16_t lanes;  /* 1 for scalars; >1 for vector types (not supported by mpamp) */
} DLDataType;

typedef struct {
    void *data;              /* the element at index 0 is at (char *)data + byte_offset */
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;        /* in elements; NULL means compact row-major */
    uint64_t byte_offset;
} DLTensor;

/* Legacy (pre-1.0) managed tensor, capsule "dltensor". */
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

/* DLPack >= 1.0 managed tensor, capsule "dltensor_versioned". */
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#endif
