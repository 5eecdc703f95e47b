/* check_cublaslt_abi.cpp - compile-time proof that cuda/cublaslt_abi.h (mpamp's own
 * declarations of the cuBLASLt calls it dlopens) matches the real cublasLt.h: every value
 * equal, every struct of the same layout, every function pointer type the real function's
 * type with each cuBLAS type replaced by its mp_lt_* counterpart. Nothing runs: compiling
 * it is the test (tests/test_cuda_abi.py, with -fsyntax-only). */
#include <cublasLt.h>

#include <cstddef>
#include <type_traits>

#include "cublaslt_abi.h"

/* ---- values ---- */
#define SAME_VALUE(mine, real) \
    static_assert(static_cast<long long>(mine) == static_cast<long long>(real), #mine)

SAME_VALUE(MP_LT_STATUS_SUCCESS, CUBLAS_STATUS_SUCCESS);
SAME_VALUE(MP_LT_STATUS_NOT_INITIALIZED, CUBLAS_STATUS_NOT_INITIALIZED);
SAME_VALUE(MP_LT_STATUS_ALLOC_FAILED, CUBLAS_STATUS_ALLOC_FAILED);
SAME_VALUE(MP_LT_STATUS_INVALID_VALUE, CUBLAS_STATUS_INVALID_VALUE);
SAME_VALUE(MP_LT_STATUS_ARCH_MISMATCH, CUBLAS_STATUS_ARCH_MISMATCH);
SAME_VALUE(MP_LT_STATUS_MAPPING_ERROR, CUBLAS_STATUS_MAPPING_ERROR);
SAME_VALUE(MP_LT_STATUS_EXECUTION_FAILED, CUBLAS_STATUS_EXECUTION_FAILED);
SAME_VALUE(MP_LT_STATUS_INTERNAL_ERROR, CUBLAS_STATUS_INTERNAL_ERROR);
SAME_VALUE(MP_LT_STATUS_NOT_SUPPORTED, CUBLAS_STATUS_NOT_SUPPORTED);
SAME_VALUE(MP_LT_STATUS_LICENSE_ERROR, CUBLAS_STATUS_LICENSE_ERROR);

SAME_VALUE(MP_LT_OP_N, CUBLAS_OP_N);
SAME_VALUE(MP_LT_OP_T, CUBLAS_OP_T);
SAME_VALUE(MP_LT_R_32F, CUDA_R_32F);
SAME_VALUE(MP_LT_R_16F, CUDA_R_16F);
SAME_VALUE(MP_LT_R_16BF, CUDA_R_16BF);
SAME_VALUE(MP_LT_COMPUTE_32F, CUBLAS_COMPUTE_32F);
SAME_VALUE(MP_LT_COMPUTE_32F_FAST_TF32, CUBLAS_COMPUTE_32F_FAST_TF32);

SAME_VALUE(MP_LT_DESC_TRANSA, CUBLASLT_MATMUL_DESC_TRANSA);
SAME_VALUE(MP_LT_DESC_TRANSB, CUBLASLT_MATMUL_DESC_TRANSB);
SAME_VALUE(MP_LT_DESC_EPILOGUE, CUBLASLT_MATMUL_DESC_EPILOGUE);
SAME_VALUE(MP_LT_DESC_BIAS_POINTER, CUBLASLT_MATMUL_DESC_BIAS_POINTER);
SAME_VALUE(MP_LT_DESC_BIAS_DATA_TYPE, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE);
SAME_VALUE(MP_LT_LAYOUT_BATCH_COUNT, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
SAME_VALUE(MP_LT_LAYOUT_STRIDED_BATCH_OFFSET, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
SAME_VALUE(MP_LT_PREF_MAX_WORKSPACE_BYTES, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
SAME_VALUE(MP_LT_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES);
SAME_VALUE(MP_LT_PREF_MIN_ALIGNMENT_B_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES);
SAME_VALUE(MP_LT_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES);
SAME_VALUE(MP_LT_PREF_MIN_ALIGNMENT_D_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES);
SAME_VALUE(MP_LT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_DEFAULT);
SAME_VALUE(MP_LT_EPILOGUE_RELU, CUBLASLT_EPILOGUE_RELU);
SAME_VALUE(MP_LT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_BIAS);
SAME_VALUE(MP_LT_EPILOGUE_RELU_BIAS, CUBLASLT_EPILOGUE_RELU_BIAS);

/* ---- types: which mp_lt_* type stands for which cuBLAS type ---- */
template <class T> struct mine { using type = T; };   /* identity: size_t, ints, void * */
#define MINE(real, ours) \
    template <> struct mine<real> { using type = ours; }
MINE(cublasStatus_t, mp_lt_status);
MINE(cudaDataType, mp_lt_data_type);
MINE(cublasComputeType_t, mp_lt_compute_type);
MINE(cublasLtMatmulDescAttributes_t, mp_lt_desc_attr);
MINE(cublasLtMatrixLayoutAttribute_t, mp_lt_layout_attr);
MINE(cublasLtMatmulPreferenceAttributes_t, mp_lt_pref_attr);
MINE(cublasLtHandle_t, mp_lt_handle);
MINE(cublasLtMatmulDesc_t, mp_lt_matmul_desc);
MINE(cublasLtMatrixLayout_t, mp_lt_layout);
MINE(cublasLtMatmulPreference_t, mp_lt_pref);
MINE(cublasLtMatmulAlgo_t, mp_lt_algo);
MINE(cublasLtMatmulHeuristicResult_t, mp_lt_heuristic);
template <class T> struct mine<T *> { using type = typename mine<T>::type *; };
template <class T> struct mine<const T> { using type = const typename mine<T>::type; };
template <class R, class... A> struct mine<R (*)(A...)> {
    using type = typename mine<R>::type (*)(typename mine<A>::type...);
};
/* cudaStream_t is struct CUstream_st * in both: the identity applies. */
static_assert(std::is_same<cudaStream_t, mp_lt_stream>::value, "mp_lt_stream");

/* An enum passed as a 32-bit integer: same size, every value used fits. */
#define INT_FOR_ENUM(real, ours) \
    static_assert(sizeof(real) == sizeof(ours) && sizeof(ours) == 4 && \
                  std::is_signed<ours>::value, #ours)
INT_FOR_ENUM(cublasStatus_t, mp_lt_status);
INT_FOR_ENUM(cudaDataType, mp_lt_data_type);
INT_FOR_ENUM(cublasComputeType_t, mp_lt_compute_type);
INT_FOR_ENUM(cublasLtMatmulDescAttributes_t, mp_lt_desc_attr);
INT_FOR_ENUM(cublasLtMatrixLayoutAttribute_t, mp_lt_layout_attr);
INT_FOR_ENUM(cublasLtMatmulPreferenceAttributes_t, mp_lt_pref_attr);

/* The value structs: same size, alignment and field offsets. */
#define SAME_FIELD(real, rf, ours, of) \
    static_assert(offsetof(real, rf) == offsetof(ours, of) && \
                  sizeof(((real *)0)->rf) == sizeof(((ours *)0)->of), #ours "." #of)
static_assert(sizeof(cublasLtMatmulAlgo_t) == sizeof(mp_lt_algo) &&
              alignof(cublasLtMatmulAlgo_t) == alignof(mp_lt_algo), "mp_lt_algo");
static_assert(sizeof(cublasLtMatmulHeuristicResult_t) == sizeof(mp_lt_heuristic) &&
              alignof(cublasLtMatmulHeuristicResult_t) == alignof(mp_lt_heuristic),
              "mp_lt_heuristic");
SAME_FIELD(cublasLtMatmulHeuristicResult_t, algo, mp_lt_heuristic, algo);
SAME_FIELD(cublasLtMatmulHeuristicResult_t, workspaceSize, mp_lt_heuristic, workspace_size);
SAME_FIELD(cublasLtMatmulHeuristicResult_t, state, mp_lt_heuristic, state);
SAME_FIELD(cublasLtMatmulHeuristicResult_t, wavesCount, mp_lt_heuristic, waves_count);
SAME_FIELD(cublasLtMatmulHeuristicResult_t, reserved, mp_lt_heuristic, reserved);

/* ---- prototypes ---- */
#define SAME_FN(fn, ours) \
    static_assert(std::is_same<mine<decltype(&fn)>::type, ours>::value, #fn " vs " #ours)
SAME_FN(cublasLtCreate, mp_lt_create_fn);
SAME_FN(cublasLtGetStatusName, mp_lt_status_name_fn);
SAME_FN(cublasLtGetStatusString, mp_lt_status_string_fn);
SAME_FN(cublasLtMatmulDescCreate, mp_lt_matmul_desc_create_fn);
SAME_FN(cublasLtMatmulDescDestroy, mp_lt_matmul_desc_destroy_fn);
SAME_FN(cublasLtMatmulDescSetAttribute, mp_lt_matmul_desc_set_fn);
SAME_FN(cublasLtMatrixLayoutCreate, mp_lt_layout_create_fn);
SAME_FN(cublasLtMatrixLayoutDestroy, mp_lt_layout_destroy_fn);
SAME_FN(cublasLtMatrixLayoutSetAttribute, mp_lt_layout_set_fn);
SAME_FN(cublasLtMatmulPreferenceCreate, mp_lt_pref_create_fn);
SAME_FN(cublasLtMatmulPreferenceDestroy, mp_lt_pref_destroy_fn);
SAME_FN(cublasLtMatmulPreferenceSetAttribute, mp_lt_pref_set_fn);
SAME_FN(cublasLtMatmulAlgoGetHeuristic, mp_lt_heuristic_fn);
SAME_FN(cublasLtMatmul, mp_lt_matmul_fn);

/* A deliberate mismatch must not pass (the mapping is not vacuous). */
static_assert(!std::is_same<mine<decltype(&cublasLtMatrixLayoutCreate)>::type,
                            mp_lt_status (*)(mp_lt_layout *, mp_lt_data_type, int64_t,
                                             uint64_t, int64_t)>::value, "mapping is strict");
