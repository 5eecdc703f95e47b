/* gemm_batch.c - the core's batched product (mp_gemm_batch: broadcast batch dims, strides,
 * products summed into one C) split into strided batched GEMM calls for a GPU backend
 * (mp_gpu_plan.h). Plain C: cuda/'s GEMM launcher and the simulated GPU walk the same calls. */
#include "../shared/mp_gpu_plan.h"
#include "../shared/mp_kernel_args.h"

/* The batch dim that becomes the call's batch: the last one, when C moves along it. */
static int inner_dim(const mp_gemm_batch *p)
{
    int d = p->nb - 1;
    return d >= 0 && p->sc[d] != 0 ? d : -1;
}

int64_t mp_gpu_gemm_outer_count(const void *batch)
{
    const mp_gemm_batch *p = batch;
    int in = inner_dim(p);
    int64_t total = 1;
    for (int d = 0; d < p->nb; d++)
        if (d != in)
            total *= p->bshape[d];
    return total;
}

void mp_gpu_gemm_call(const void *batch, int64_t o, mp_gpu_gemm_rm *rm, int64_t *off_a,
                      int64_t *off_b, int64_t *off_c)
{
    const mp_gemm_batch *p = batch;
    int in = inner_dim(p), revisit = 0;
    int64_t oa = 0, ob = 0, oc = 0;
    for (int d = p->nb - 1; d >= 0; d--) {
        if (d == in)
            continue;
        int64_t i = o % p->bshape[d];
        o /= p->bshape[d];
        oa += i * p->sa[d], ob += i * p->sb[d], oc += i * p->sc[d];
        revisit |= p->sc[d] == 0 && i > 0;
    }
    *off_a = oa, *off_b = ob, *off_c = oc;
    rm->trans_a = p->ta, rm->trans_b = p->tb;
    rm->m = p->m, rm->n = p->n, rm->k = p->k;
    rm->lda = p->lda, rm->ldb = p->ldb, rm->ldc = p->n > 1 ? p->n : 1;
    rm->batch = in >= 0 ? p->bshape[in] : 1;
    rm->stride_a = in >= 0 ? p->sa[in] : 0;
    rm->stride_b = in >= 0 ? p->sb[in] : 0;
    rm->stride_c = in >= 0 ? p->sc[in] : 0;
    rm->a_dtype = p->adt, rm->b_dtype = p->bdt, rm->c_dtype = p->wt;
    rm->alpha = (float)p->alpha;
    rm->beta = p->accumulate || revisit ? 1.0f : 0.0f;
    rm->has_bias = p->bias != NULL;
    rm->bias_dtype = p->bias_dt;
    rm->bias_stride = p->bias_stride;
    rm->bias_scale = p->bias_scale;
    rm->act = 0;
    rm->round_dtype = p->round_dt;
}
