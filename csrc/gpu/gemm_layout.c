/* gemm_layout.c - the core's row-major products as column-major cuBLASLt calls, and the
 * cuBLASLt workspace size (mp_gpu_plan.h). A row-major C[m, n] read column-major is
 * C^T[n, m] = op(B)^T @ op(A)^T, so B becomes cuBLAS's first operand and A its second, each
 * keeping its own transpose flag and leading dimension. Plain C: cuda/gemm.cu calls it, the
 * simulated GPU computes every product through it (csrc/sim/sim_gemm.c). */
#include "../shared/mp_gpu_plan.h"

#include <stdio.h>
#include <stdlib.h>

static const char *dt_name(mp_dtype dt)
{
    switch (dt) {
    case MP_DTYPE_FLOAT32: return "float32";
    case MP_DTYPE_FLOAT16: return "float16";
    case MP_DTYPE_BFLOAT16: return "bfloat16";
    case MP_DTYPE_INT64: return "int64";
    default: return "a non-float dtype";
    }
}

static mp_status refuse(mp_msg *msg, const char *what)
{
    snprintf(msg->text, sizeof msg->text, "CUDA matmul: %s", what);
    return MP_ERR_VALUE;
}

/* cuBLASLt has kernels for equal input dtypes with an fp32 or same-dtype output. */
static int pair_ok(mp_dtype in, mp_dtype out)
{
    if (in == MP_DTYPE_FLOAT32)
        return out == MP_DTYPE_FLOAT32;
    return (in == MP_DTYPE_FLOAT16 || in == MP_DTYPE_BFLOAT16) &&
           (out == in || out == MP_DTYPE_FLOAT32);
}

mp_status mp_gpu_gemm_to_colmajor(const mp_gpu_gemm_rm *rm, mp_gpu_gemm_cm *cm, mp_msg *msg)
{
    if (rm->a_dtype != rm->b_dtype || !pair_ok(rm->a_dtype, rm->c_dtype)) {
        snprintf(msg->text, sizeof msg->text, "CUDA matmul: no cuBLASLt kernel for %s x %s "
                 "into %s (the operands must share a dtype: float32 into float32, float16 or "
                 "bfloat16 into itself or float32)", dt_name(rm->a_dtype),
                 dt_name(rm->b_dtype), dt_name(rm->c_dtype));
        return rm->a_dtype == MP_DTYPE_INT64 ? MP_ERR_NOT_IMPLEMENTED : MP_ERR_VALUE;
    }
    if (rm->m < 0 || rm->n < 0 || rm->k < 0 || rm->batch < 1 || rm->batch > INT32_MAX)
        return refuse(msg, "sizes must be non-negative and the batch count in 1..2^31-1");
    /* column-major leading dimensions: at least the rows of the stored matrix, and >= 1 */
    int64_t need_b = rm->trans_b ? rm->k : rm->n, need_a = rm->trans_a ? rm->m : rm->k;
    if (rm->ldb < (need_b > 1 ? need_b : 1) || rm->lda < (need_a > 1 ? need_a : 1) ||
        rm->ldc < (rm->n > 1 ? rm->n : 1))
        return refuse(msg, "a leading dimension is smaller than the row length it strides");
    cm->trans_x = rm->trans_b != 0;
    cm->trans_y = rm->trans_a != 0;
    cm->rows = rm->n;
    cm->cols = rm->m;
    cm->inner = rm->k;
    cm->ldx = rm->ldb;
    cm->ldy = rm->lda;
    cm->ldc = rm->ldc;
    cm->batch = rm->batch;
    cm->stride_x = rm->stride_b;
    cm->stride_y = rm->stride_a;
    cm->stride_c = rm->stride_c;
    cm->x_dtype = rm->b_dtype;
    cm->y_dtype = rm->a_dtype;
    cm->c_dtype = rm->c_dtype;
    cm->compute = MP_DTYPE_FLOAT32;
    cm->alpha = rm->alpha;
    cm->beta = rm->beta;
    cm->bias_dtype = rm->bias_dtype;
    cm->swapped = 1;
    int plain_bias = rm->has_bias && rm->bias_dtype == rm->c_dtype &&
                     (rm->bias_stride == 1 || rm->n <= 1) && rm->bias_scale == 1.0f;
    if (rm->act == 2 || (rm->has_bias && !plain_bias))
        cm->epilogue = MP_GPU_EPI_SEPARATE;
    else if (rm->has_bias)
        cm->epilogue = rm->act == 1 ? MP_GPU_EPI_RELU_BIAS : MP_GPU_EPI_BIAS;
    else
        cm->epilogue = rm->act == 1 ? MP_GPU_EPI_RELU : MP_GPU_EPI_DEFAULT;
    return MP_OK;
}

size_t mp_gpu_gemm_workspace_bytes(int major, int minor)
{
    (void)minor;
    const char *env = getenv("MPAMP_CUBLASLT_WORKSPACE_MB");
    if (env && *env) {
        char *end = NULL;
        long mb = strtol(env, &end, 10);
        if (end && *end == '\0' && mb >= 0 && mb <= 1024)
            return (size_t)mb << 20;
    }
    return (size_t)(major >= 9 ? 32 : 4) << 20;
}
