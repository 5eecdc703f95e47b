/* mp_gpu_plan.h - the GPU backend's host logic, in plain C compiled by cc in every build (the
 * MPAMP_CUDA=0 sanitizer build too; csrc/gpu/): launch shapes, multi-tensor chunking and the
 * row-major -> column-major (cuBLASLt) GEMM layout with its workspace size. cuda/'s launchers
 * call these, and the simulated GPU runs the same plans against the CPU kernels, so every
 * chunk and every layout CI exercises is the one a real GPU would launch. No CUDA types here. */
#ifndef MP_GPU_PLAN_H
#define MP_GPU_PLAN_H

#include <stdint.h>

#include "mp_defs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- launch shapes (grid-stride kernels) ---- */
#define MP_GPU_THREADS 256
#define MP_GPU_BLOCKS_PER_SM 8      /* resident blocks worth launching per multiprocessor */

typedef struct {
    unsigned blocks, threads;
    int vec;                        /* elements per 16-byte access (1: scalar accesses) */
} mp_gpu_launch;

/* Elements per 16-byte vector access for n_ptr buffers of the given item sizes: 16 / the
 * largest item size when every address is 16-byte aligned, else 1. */
int mp_gpu_vector_width(const void *const *ptrs, const size_t *itemsize, int n_ptr);
/* The grid for n elements, vec per thread-step, on a device with sm_count multiprocessors:
 * enough blocks for one pass, capped at MP_GPU_BLOCKS_PER_SM per SM (the rest grid-strides);
 * at least one block. */
mp_gpu_launch mp_gpu_launch_shape(int64_t n, int vec, int sm_count);

/* ---- multi-tensor launches (unscale, optimizers): torch's multi_tensor_apply scheme. Each
 * block of a launch owns one chunk of MP_MT_CHUNK elements of one tensor; a launch names at
 * most mp_mt_max_tensors(depth) tensors and MP_MT_MAX_BLOCKS blocks, so its parameter block
 * (addresses for `depth` lists) stays under the 4 KiB kernel-parameter limit. A tensor whose
 * chunks do not fit in the launch continues in the next one. */
#define MP_MT_CHUNK 65536
#define MP_MT_MAX_BLOCKS 320
#define MP_MT_MAX_TENSORS 110      /* mp_mt_max_tensors(1); deeper lists fit fewer */
#define MP_MT_MAX_DEPTH 7

typedef struct {
    int ntensors;                   /* tensors this launch touches */
    int tensor[MP_MT_MAX_TENSORS];  /* their indices in the caller's list */
    int nblocks;
    unsigned char block_tensor[MP_MT_MAX_BLOCKS];   /* index into tensor[] */
    int block_chunk[MP_MT_MAX_BLOCKS];              /* chunk of that tensor */
} mp_mt_launch;

/* Where the next launch starts: tensor `t`, chunk `chunk` (zero-initialise to begin). */
typedef struct {
    int t;
    int64_t chunk;
} mp_mt_cursor;

/* Tensors per launch for kernels reading `depth` address lists (1..MP_MT_MAX_DEPTH): torch's
 * depth_to_max_tensors for 1..5, then what still fits 4 KiB; 0 for other depths. */
int mp_mt_max_tensors(int depth);
/* Fills *out with the next launch over tensors of numel[0..n) (empty tensors are skipped);
 * returns 0 when every chunk has been handed out (out->nblocks is then 0). */
int mp_mt_next(const int64_t *numel, int n, int depth, mp_mt_cursor *cur, mp_mt_launch *out);
/* Element range [*begin, *end) of block b of launch l. */
void mp_mt_block_range(const mp_mt_launch *l, const int64_t *numel, int b, int64_t *begin,
                       int64_t *end);

/* ---- GEMM: the core's row-major product as one column-major cuBLASLt call ---- */

/* Row-major C[m, n] (ldc) = alpha * op(A)[m, k] @ op(B)[k, n] + beta * C, over `batch`
 * products at element strides stride_a/b/c (0: shared). trans_a: A is stored as [k, m]
 * (lda its row stride), likewise trans_b. bias: a length-n vector added to every row (in
 * the epilogue), act the activation after it (0 none, 1 ReLU, 2 exact GELU). */
typedef struct {
    int trans_a, trans_b;
    int64_t m, n, k, lda, ldb, ldc;
    int64_t batch, stride_a, stride_b, stride_c;
    mp_dtype a_dtype, b_dtype, c_dtype;
    float alpha, beta;
    int has_bias;
    mp_dtype bias_dtype;
    int64_t bias_stride;
    float bias_scale;
    int act;
    mp_dtype round_dtype;           /* FLOAT32: none; else an fp32 C rounded after the call */
} mp_gpu_gemm_rm;

/* The same product as cuBLAS sees it: C_col[rows, cols] = op1(X) @ op2(Y), column-major.
 * C_col is the row-major C read column-major (rows = n, cols = m); X is B and Y is A. */
typedef struct {
    int trans_x, trans_y;           /* 1: CUBLAS_OP_T */
    int64_t rows, cols, inner;      /* cuBLAS m, n, k */
    int64_t ldx, ldy, ldc;
    int64_t batch, stride_x, stride_y, stride_c;
    mp_dtype x_dtype, y_dtype, c_dtype;
    mp_dtype compute;               /* FLOAT32; tf32 is the backend's choice (allow_tf32) */
    float alpha, beta;
    int epilogue;                   /* MP_GPU_EPI_* */
    mp_dtype bias_dtype;
    int swapped;                    /* 1: X is the row-major B (always, today) */
} mp_gpu_gemm_cm;

enum {
    MP_GPU_EPI_DEFAULT = 0,
    MP_GPU_EPI_BIAS,
    MP_GPU_EPI_RELU_BIAS,
    MP_GPU_EPI_RELU,
    MP_GPU_EPI_SEPARATE             /* the epilogue cannot be fused: bias/act as own kernels */
};

/* Maps a row-major product to its column-major call. Returns MP_OK, or MP_ERR_VALUE with a
 * message for shapes cuBLASLt cannot take (a leading dimension smaller than its rows, sizes
 * past int32 where cuBLASLt's layouts need them, dtype pairs it has no kernel for). Exact
 * GELU, a strided or scaled bias, or a bias of another dtype than C map to
 * MP_GPU_EPI_SEPARATE: cuBLASLt's GELU epilogue is the tanh approximation. */
mp_status mp_gpu_gemm_to_colmajor(const mp_gpu_gemm_rm *rm, mp_gpu_gemm_cm *cm, mp_msg *msg);

/* The core's batched product (mp_kernel_args.h: mp_gemm_batch) as a sequence of strided
 * batched calls: every batch dim but the last, and every dim whose products sum into one C
 * (C stride 0), is an outer loop; the last dim, when C moves along it, is the call's batch.
 * mp_gpu_gemm_outer_count gives the number of calls; mp_gpu_gemm_call fills call o's
 * descriptor and the element offsets of A, B and C (the bias never moves). The first call
 * that writes a C has beta 0 unless the product accumulates; later ones into it beta 1. */
int64_t mp_gpu_gemm_outer_count(const void *batch);
void mp_gpu_gemm_call(const void *batch, int64_t o, mp_gpu_gemm_rm *rm, int64_t *off_a,
                      int64_t *off_b, int64_t *off_c);

/* cuBLASLt workspace for a device of compute capability major.minor: 32 MiB on Hopper and
 * newer, 4 MiB before (torch's defaults), or MPAMP_CUBLASLT_WORKSPACE_MB when set (0..1024). */
size_t mp_gpu_gemm_workspace_bytes(int major, int minor);

#ifdef __cplusplus
}
#endif

#endif
