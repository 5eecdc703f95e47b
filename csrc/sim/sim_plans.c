/* sim_plans.c - the simulated GPU runs the kernels whose GPU form is planned on the host
 * (csrc/gpu/) through those plans, so CI exercises every launch a GPU would make: products
 * as the column-major cuBLASLt calls of gemm_batch.c + gemm_layout.c (each call converted
 * back and run by the CPU GEMM), the unscale pass block by block over multi_tensor.c's
 * chunks. Buffers arrive already translated to the arena's read-write alias. */
#include "sim.h"

#include <stdio.h>

#include "../cpu/gemm.h"
#include "../shared/mp_gpu_plan.h"
#include "../shared/mp_kernel_args.h"

/* One column-major call on the CPU: C_col = op(X) @ op(Y) is the row-major
 * C = op(Y)^T @ op(X)^T, i.e. A = Y and B = X with their own transpose flags. */
static mp_status run_colmajor(const mp_gpu_gemm_cm *cm, const mp_gpu_gemm_rm *rm,
                              const char *x, const char *y, char *c, const void *bias,
                              mp_msg *msg)
{
    mp_gemm_args g = mp_gemm_plain(cm->trans_y, cm->trans_x, cm->cols, cm->rows, cm->inner,
                                   y, cm->ldy, x, cm->ldx, c, cm->ldc);
    g.a_dtype = cm->y_dtype, g.b_dtype = cm->x_dtype, g.c_dtype = cm->c_dtype;
    g.alpha = cm->alpha, g.beta = cm->beta;
    g.round_dtype = rm->round_dtype;
    if (cm->epilogue == MP_GPU_EPI_RELU || cm->epilogue == MP_GPU_EPI_RELU_BIAS)
        g.act = MP_GEMM_ACT_RELU;
    else if (rm->act == 2)
        g.act = MP_GEMM_ACT_GELU;
    /* MP_GPU_EPI_SEPARATE: a GPU runs the bias and activation as a pass over an fp32
     * result, rounding once - the values of the CPU's fused store */
    if (rm->has_bias) {
        g.bias = bias, g.bias_dtype = rm->bias_dtype;
        g.bias_stride = rm->bias_stride, g.bias_scale = rm->bias_scale;
    }
    if (mp_gemm(&g) != MP_OK) {
        snprintf(msg->text, sizeof msg->text, "simulated GPU: out of memory for the matmul "
                 "packing buffers");
        return MP_ERR_NOMEM;
    }
    return MP_OK;
}

mp_status mp_sim_gemm(void *const *buf, const mp_buf_kernel *k, mp_msg *msg)
{
    const mp_gemm_batch *p = k->args;
    if (p->wt == MP_DTYPE_INT64)            /* no cuBLAS kernel: the exact int64 path */
        return k->run(buf, k->args, msg);
    size_t ea = mp_dtype_size(p->adt), eb = mp_dtype_size(p->bdt), ec = mp_dtype_size(p->wt);
    int64_t outer = mp_gpu_gemm_outer_count(p);
    for (int64_t o = 0; o < outer; o++) {
        mp_gpu_gemm_rm rm;
        mp_gpu_gemm_cm cm;
        int64_t oa, ob, oc;
        mp_gpu_gemm_call(p, o, &rm, &oa, &ob, &oc);
        mp_status st = mp_gpu_gemm_to_colmajor(&rm, &cm, msg);
        if (st != MP_OK)
            return st;
        for (int64_t b = 0; b < cm.batch; b++) {
            const char *x = (const char *)buf[1] + (size_t)(ob + b * cm.stride_x) * eb;
            const char *y = (const char *)buf[0] + (size_t)(oa + b * cm.stride_y) * ea;
            char *c = (char *)buf[2] + (size_t)(oc + b * cm.stride_c) * ec;
            if ((st = run_colmajor(&cm, &rm, x, y, c, buf[3], msg)) != MP_OK)
                return st;
        }
    }
    return MP_OK;
}

mp_status mp_sim_unscale(void *const *buf, const mp_buf_kernel *k, mp_msg *msg)
{
    const mp_unscale_args *a = k->args;
    mp_mt_cursor cur = {0, 0};
    mp_mt_launch l;
    while (mp_mt_next(a->numel, a->n, 1, &cur, &l)) {
        for (int b = 0; b < l.nblocks; b++) {
            int t = l.tensor[l.block_tensor[b]];
            int64_t begin, end;
            mp_mt_block_range(&l, a->numel, b, &begin, &end);
            void *sub[3] = {(char *)buf[t] + (size_t)begin * mp_dtype_size(a->dt[t]),
                            buf[a->n], buf[a->n + 1]};
            int64_t len = end - begin;
            mp_unscale_args one = {1, &a->dt[t], &len};
            mp_status st = k->run(sub, &one, msg);
            if (st != MP_OK)
                return st;
        }
    }
    return MP_OK;
}
