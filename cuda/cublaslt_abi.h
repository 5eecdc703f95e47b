/* cublaslt_abi.h - the slice of cuBLASLt's C interface that cuda/gemm.cu calls, under mpamp's
 * own names (mp_lt_*, MP_LT_*). cuBLASLt is dlopen'ed at run time and its headers are not
 * part of the CUDA toolkit mpamp builds against, so the values and prototypes are written
 * here; tests/cuda_abi/check_cublaslt_abi.cpp static_asserts each one against the real
 * cublasLt.h (tests/test_cuda_abi.py compiles it). Values are stable across cuBLAS 12 and 13.
 * Enums travel as 32-bit integers: cuBLAS's enums are 4 bytes, passed as int. */
#ifndef MP_CUBLASLT_ABI_H
#define MP_CUBLASLT_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t mp_lt_status;         /* cublasStatus_t */
typedef int32_t mp_lt_data_type;      /* cudaDataType */
typedef int32_t mp_lt_compute_type;   /* cublasComputeType_t */
typedef int32_t mp_lt_desc_attr;      /* cublasLtMatmulDescAttributes_t */
typedef int32_t mp_lt_layout_attr;    /* cublasLtMatrixLayoutAttribute_t */
typedef int32_t mp_lt_pref_attr;      /* cublasLtMatmulPreferenceAttributes_t */

/* The descriptors are pointers to library-owned objects (the *Create functions allocate). */
typedef struct mp_lt_context *mp_lt_handle;               /* cublasLtHandle_t */
typedef struct mp_lt_matmul_desc_s *mp_lt_matmul_desc;    /* cublasLtMatmulDesc_t */
typedef struct mp_lt_layout_s *mp_lt_layout;              /* cublasLtMatrixLayout_t */
typedef struct mp_lt_pref_s *mp_lt_pref;                  /* cublasLtMatmulPreference_t */
struct CUstream_st;                                       /* the runtime's cudaStream_t */
typedef struct CUstream_st *mp_lt_stream;

/* cublasLtMatmulAlgo_t: a plain value, safe to copy and keep (the heuristic cache does). */
typedef struct {
    uint64_t data[8];
} mp_lt_algo;

/* cublasLtMatmulHeuristicResult_t */
typedef struct {
    mp_lt_algo algo;
    size_t workspace_size;
    mp_lt_status state;
    float waves_count;
    int reserved[4];
} mp_lt_heuristic;

enum {                                /* cublasStatus_t */
    MP_LT_STATUS_SUCCESS = 0,
    MP_LT_STATUS_NOT_INITIALIZED = 1,
    MP_LT_STATUS_ALLOC_FAILED = 3,
    MP_LT_STATUS_INVALID_VALUE = 7,
    MP_LT_STATUS_ARCH_MISMATCH = 8,
    MP_LT_STATUS_MAPPING_ERROR = 11,
    MP_LT_STATUS_EXECUTION_FAILED = 13,
    MP_LT_STATUS_INTERNAL_ERROR = 14,
    MP_LT_STATUS_NOT_SUPPORTED = 15,
    MP_LT_STATUS_LICENSE_ERROR = 16
};

enum { MP_LT_OP_N = 0, MP_LT_OP_T = 1 };                           /* cublasOperation_t */
enum { MP_LT_R_32F = 0, MP_LT_R_16F = 2, MP_LT_R_16BF = 14 };      /* cudaDataType */
enum { MP_LT_COMPUTE_32F = 68, MP_LT_COMPUTE_32F_FAST_TF32 = 77 }; /* cublasComputeType_t */

enum {                                /* cublasLtMatmulDescAttributes_t (value type) */
    MP_LT_DESC_TRANSA = 3,            /* int32_t */
    MP_LT_DESC_TRANSB = 4,            /* int32_t */
    MP_LT_DESC_EPILOGUE = 7,          /* uint32_t */
    MP_LT_DESC_BIAS_POINTER = 8,      /* const void * */
    MP_LT_DESC_BIAS_DATA_TYPE = 26    /* int32_t */
};

enum {                                /* cublasLtMatrixLayoutAttribute_t */
    MP_LT_LAYOUT_BATCH_COUNT = 5,             /* int32_t */
    MP_LT_LAYOUT_STRIDED_BATCH_OFFSET = 6     /* int64_t, in elements */
};

enum {                                /* cublasLtMatmulPreferenceAttributes_t */
    MP_LT_PREF_MAX_WORKSPACE_BYTES = 1,       /* uint64_t */
    MP_LT_PREF_MIN_ALIGNMENT_A_BYTES = 5,     /* uint32_t, each */
    MP_LT_PREF_MIN_ALIGNMENT_B_BYTES = 6,
    MP_LT_PREF_MIN_ALIGNMENT_C_BYTES = 7,
    MP_LT_PREF_MIN_ALIGNMENT_D_BYTES = 8
};

enum {                                /* cublasLtEpilogue_t */
    MP_LT_EPILOGUE_DEFAULT = 1,
    MP_LT_EPILOGUE_RELU = 2,
    MP_LT_EPILOGUE_BIAS = 4,
    MP_LT_EPILOGUE_RELU_BIAS = 6
};

/* The functions, as pointer types (gemm.cu resolves each with dlsym). */
typedef mp_lt_status (*mp_lt_create_fn)(mp_lt_handle *handle);
typedef const char *(*mp_lt_status_name_fn)(mp_lt_status status);
typedef const char *(*mp_lt_status_string_fn)(mp_lt_status status);
typedef mp_lt_status (*mp_lt_matmul_desc_create_fn)(mp_lt_matmul_desc *desc,
                                                     mp_lt_compute_type compute,
                                                     mp_lt_data_type scale);
typedef mp_lt_status (*mp_lt_matmul_desc_destroy_fn)(mp_lt_matmul_desc desc);
typedef mp_lt_status (*mp_lt_matmul_desc_set_fn)(mp_lt_matmul_desc desc, mp_lt_desc_attr attr,
                                                 const void *buf, size_t size);
typedef mp_lt_status (*mp_lt_layout_create_fn)(mp_lt_layout *layout, mp_lt_data_type type,
                                               uint64_t rows, uint64_t cols, int64_t ld);
typedef mp_lt_status (*mp_lt_layout_destroy_fn)(mp_lt_layout layout);
typedef mp_lt_status (*mp_lt_layout_set_fn)(mp_lt_layout layout, mp_lt_layout_attr attr,
                                            const void *buf, size_t size);
typedef mp_lt_status (*mp_lt_pref_create_fn)(mp_lt_pref *pref);
typedef mp_lt_status (*mp_lt_pref_destroy_fn)(mp_lt_pref pref);
typedef mp_lt_status (*mp_lt_pref_set_fn)(mp_lt_pref pref, mp_lt_pref_attr attr,
                                          const void *buf, size_t size);
typedef mp_lt_status (*mp_lt_heuristic_fn)(mp_lt_handle handle, mp_lt_matmul_desc desc,
                                           mp_lt_layout a, mp_lt_layout b, mp_lt_layout c,
                                           mp_lt_layout d, mp_lt_pref pref, int requested,
                                           mp_lt_heuristic *results, int *returned);
typedef mp_lt_status (*mp_lt_matmul_fn)(mp_lt_handle handle, mp_lt_matmul_desc desc,
                                        const void *alpha, const void *a, mp_lt_layout a_desc,
                                        const void *b, mp_lt_layout b_desc, const void *beta,
                                        const void *c, mp_lt_layout c_desc, void *d,
                                        mp_lt_layout d_desc, const mp_lt_algo *algo,
                                        void *workspace, size_t workspace_bytes,
                                        mp_lt_stream stream);

#ifdef __cplusplus
}
#endif

#endif
