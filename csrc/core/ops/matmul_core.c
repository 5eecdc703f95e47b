/* matmul_core.c - the batched product of matmul_core.h. An operand the GEMM can read in place
 * (any float dtype, unit stride along rows or columns) is used as is, whatever its batch
 * strides; other operands are copied once in their own dtype, keeping broadcast batch dims
 * broadcast. When no product is summed into another and the bias is a row vector, the GEMM
 * writes the result in the output dtype with the bias fused; otherwise it accumulates an fp32
 * result that is rounded once at the end. Batch dims that the A rows can absorb (B shared
 * across the batch) are folded into M so a (B, M, K) @ (K, N) product is one GEMM, and batch
 * dims summed into one output into K. Output batch dims of size 1 accumulate (beta = 1 after
 * the first). */
#include "matmul_core.h"
#include "../backend.h"
#include "../../shared/mp_kernel_args.h"

#include <stdio.h>
#include <string.h>

#include "../../cpu/gemm.h"
#include "../copy.h"
#include "../dtypes.h"
#include "../view.h"

/* How the GEMM reads t's last two dims: row-major (trans 0) or column-major (trans 1) with
 * leading dimension ld; 0 when neither dim has unit stride. */
static int gemm_layout(const mp_tensor *t, int *trans, int64_t *ld)
{
    int d = t->ndim - 2;
    int64_t rows = t->shape[d], cols = t->shape[d + 1];
    int64_t rs = t->strides[d], cs = t->strides[d + 1];
    if ((cols == 1 || cs == 1) && (rows == 1 || rs >= cols)) {
        *trans = 0;
        *ld = rows == 1 ? (cols > 1 ? cols : 1) : rs;
        return 1;
    }
    if ((rows == 1 || rs == 1) && (cols == 1 || cs >= rows)) {
        *trans = 1;
        *ld = cols == 1 ? (rows > 1 ? rows : 1) : cs;
        return 1;
    }
    return 0;
}

/* t's values readable by the GEMM (float dtypes as they are, others as wt): t itself when it
 * already is, else a copy in t's own orientation (column-major stays column-major, so the copy
 * reads unit-stride runs). Broadcast (stride-0) batch dims are copied once, then expanded. */
static mp_status gemm_operand(mp_tensor *t, mp_dtype wt, mp_tensor **out)
{
    int trans, nd = t->ndim;
    int64_t ld, shape[MP_MAX_DIMS];
    if (wt != MP_DTYPE_INT64 && mp_dtype_is_float(t->dtype))
        wt = t->dtype;                     /* the GEMM converts fp16/bf16 while packing */
    if (t->dtype == wt && gemm_layout(t, &trans, &ld)) {
        mp_tensor_incref(t);
        *out = t;
        return MP_OK;
    }
    memcpy(shape, t->shape, sizeof(int64_t) * (size_t)nd);
    for (int d = 0; d < nd - 2; d++)
        if (t->strides[d] == 0)
            shape[d] = 1;
    mp_tensor *base = NULL, *tr = NULL, *c = NULL, *c2 = NULL;
    int col = t->strides[nd - 2] == 1 && t->strides[nd - 1] != 1;
    mp_status st = mp_view_make(t, shape, t->strides, nd, t->offset, &base);
    if (st == MP_OK && col && (st = mp_view_transpose(base, -1, -2, &tr)) == MP_OK &&
        (st = mp_tensor_cast(tr, wt, &c2)) == MP_OK)
        st = mp_view_transpose(c2, -1, -2, &c);
    else if (st == MP_OK && !col)
        st = mp_tensor_cast(base, wt, &c);
    if (st == MP_OK)
        st = mp_view_expand(c, t->shape, nd, out);
    mp_tensor_decref(base);
    mp_tensor_decref(tr);
    mp_tensor_decref(c2);
    mp_tensor_decref(c);
    return st;
}

mp_status mp_matmul_batch_shape(const mp_tensor *a, const mp_tensor *b, const char *op,
                                int64_t *bshape, int *nb)
{
    mp_status st = mp_broadcast_shapes(a->shape, a->ndim - 2, b->shape, b->ndim - 2, bshape,
                                       nb);
    if (st != MP_OK) {
        char msg[512], sa[256], sb[256];
        snprintf(msg, sizeof msg, "%s", mp_error_message());
        mp_format_shape(sa, sizeof sa, a->shape, a->ndim);
        mp_format_shape(sb, sizeof sb, b->shape, b->ndim);
        return mp_error(st, "%s: batch dimensions of %s and %s do not broadcast: %s", op, sa,
                        sb, msg);
    }
    return MP_OK;
}

/* The GEMM kernel's argument block is public (shared/mp_kernel_args.h): a GPU backend reads it. */
typedef mp_gemm_batch mm_plan;

/* Stride of t's batch dim aligned to batch dim d of an nb-dim batch (0: broadcast). */
static int64_t batch_stride(const mp_tensor *t, int d, int nb)
{
    int j = d - (nb - (t->ndim - 2));
    return j >= 0 && t->shape[j] != 1 ? t->strides[j] : 0;
}

/* Drops size-1 batch dims, then folds trailing batch dims into M while B does not move
 * along them and A and C rows continue with the same stride, or into K while C does not move
 * along them (the products are summed) and both operands continue along K with the same
 * stride. The K fold is the weight gradient of linear on (B, T, K) inputs: 32 products of
 * 192 x 32 x 64, each too small to split across threads, became one 192 x 1024 x 64. */
static void simplify_plan(mm_plan *p)
{
    int n = 0;
    for (int d = 0; d < p->nb; d++) {
        if (p->bshape[d] == 1)
            continue;
        p->bshape[n] = p->bshape[d];
        p->sa[n] = p->sa[d], p->sb[n] = p->sb[d], p->sc[n] = p->sc[d];
        n++;
    }
    p->nb = n;
    while (p->nb > 0) {
        int d = p->nb - 1;
        if (!p->ta && p->sb[d] == 0 && p->sa[d] == p->m * p->lda && p->sc[d] == p->m * p->n)
            p->m *= p->bshape[d];
        else if (p->sc[d] == 0 && !p->bias && p->sa[d] == p->k * (p->ta ? p->lda : 1) &&
                 p->sb[d] == p->k * (p->tb ? 1 : p->ldb))
            p->k *= p->bshape[d];
        else
            break;
        p->nb--;
    }
}

/* The GEMM kernel (MP_KERNEL_GEMM): buffers A, B, C and the bias (NULL entries allowed),
 * args the plan (whose own pointers the kernel ignores). */
static mp_status run_plan(void *const *buf, const void *args, mp_msg *msg)
{
    const mm_plan *p = args;
    int64_t idx[MP_MAX_DIMS] = {0}, total = 1;
    size_t ea = mp_dtype_size(p->adt), eb = mp_dtype_size(p->bdt), ec = mp_dtype_size(p->wt);
    char *pa = buf[0], *pb = buf[1], *pc = buf[2];
    for (int d = 0; d < p->nb; d++)
        total *= p->bshape[d];
    for (int64_t t = 0; t < total; t++) {
        int64_t oa = 0, ob = 0, oc = 0;
        int revisit = 0;
        for (int d = 0; d < p->nb; d++) {
            oa += idx[d] * p->sa[d], ob += idx[d] * p->sb[d], oc += idx[d] * p->sc[d];
            revisit |= p->sc[d] == 0 && idx[d] > 0;
        }
        int add = p->accumulate || revisit;
        if (p->wt == MP_DTYPE_INT64) {
            mp_gemm_i64(p->ta, p->tb, p->m, p->n, p->k, (int64_t)p->alpha,
                        (const int64_t *)(void *)pa + oa, p->lda,
                        (const int64_t *)(void *)pb + ob, p->ldb, add,
                        (int64_t *)(void *)pc + oc, p->n);
        } else {
            mp_gemm_args g = mp_gemm_plain(p->ta, p->tb, p->m, p->n, p->k,
                                           pa + (size_t)oa * ea, p->lda,
                                           pb + (size_t)ob * eb, p->ldb,
                                           pc + (size_t)oc * ec, p->n);
            g.a_dtype = p->adt, g.b_dtype = p->bdt, g.c_dtype = p->wt;
            g.alpha = (float)p->alpha;
            g.beta = add ? 1.0f : 0.0f;
            g.bias = p->bias ? buf[3] : NULL, g.bias_dtype = p->bias_dt;
            g.bias_stride = p->bias_stride, g.bias_scale = p->bias_scale;
            g.round_dtype = p->round_dt;
            if (mp_gemm(&g) != MP_OK) {
                snprintf(msg->text, sizeof msg->text,
                         "out of memory for the matmul packing buffers");
                return MP_ERR_NOMEM;
            }
        }
        for (int d = p->nb - 1; d >= 0 && ++idx[d] == p->bshape[d]; d--)
            idx[d] = 0;
    }
    return MP_OK;
}

/* Byte extent [*lo, *hi) of a matrix operand: rows x cols elements of size es with leading
 * dimension ld (row-major unless trans), at every batch offset of the plan (strides s). */
static void extent(const mm_plan *p, const int64_t *s, int64_t rows, int64_t cols, int trans,
                   int64_t ld, size_t es, int64_t *lo, int64_t *hi)
{
    int64_t l = 0, h = trans ? (cols - 1) * ld + rows : (rows - 1) * ld + cols;
    for (int d = 0; d < p->nb; d++) {
        int64_t span = s[d] * (p->bshape[d] - 1);
        if (span < 0)
            l += span;
        else
            h += span;
    }
    *lo = l * (int64_t)es;
    *hi = h * (int64_t)es;
}

static mp_status launch_plan(mp_device dev, const mm_plan *p)
{
    void *buf[4] = {p->pa, p->pb, p->pc, (void *)p->bias};
    int64_t lo[4] = {0}, hi[4] = {0};
    extent(p, p->sa, p->m, p->k, p->ta, p->lda, mp_dtype_size(p->adt), &lo[0], &hi[0]);
    extent(p, p->sb, p->k, p->n, p->tb, p->ldb, mp_dtype_size(p->bdt), &lo[1], &hi[1]);
    extent(p, p->sc, p->m, p->n, 0, p->n, mp_dtype_size(p->wt), &lo[2], &hi[2]);
    if (p->bias) {
        int64_t b = p->bias_stride * (p->n - 1) * (int64_t)mp_dtype_size(p->bias_dt);
        lo[3] = b < 0 ? b : 0;
        hi[3] = (b > 0 ? b : 0) + (int64_t)mp_dtype_size(p->bias_dt);
    }
    mp_buf_kernel k = {MP_KERNEL_GEMM, 4, buf, lo, hi, run_plan, p};
    return mp_launch(dev, &k);
}

/* c (contiguous, batch dims broadcasting to a's and b's) (+)= alpha * a @ b (+ the fused
 * bias of *fused, whose other fields this fills). */
static mp_status matmul_into(mp_tensor *c, mp_tensor *a, mp_tensor *b, double alpha,
                             int accumulate, const char *op, mm_plan *fused)
{
    mm_plan p = *fused;
    mp_status st = mp_matmul_batch_shape(a, b, op, p.bshape, &p.nb);
    if (st != MP_OK)
        return st;
    int cb = c->ndim - 2;
    int64_t total = 1;
    for (int d = 0; d < p.nb; d++)
        total *= p.bshape[d];
    for (int d = 0; d < cb; d++)
        if (cb > p.nb || (c->shape[d] != 1 && c->shape[d] != p.bshape[d - cb + p.nb]))
            return mp_error(MP_ERR_RUNTIME, "%s: internal error: product layout does not "
                            "match the batch shape", op);
    p.m = a->shape[a->ndim - 2], p.k = a->shape[a->ndim - 1], p.n = b->shape[b->ndim - 1];
    if (p.m * p.n == 0)
        return MP_OK;
    if (total == 0 || (p.k == 0 && !p.bias)) {
        if (!accumulate)
            return mp_tensor_fill_(c, (mp_scalar){0.0, 0, mp_dtype_is_integral(c->dtype)});
        return MP_OK;
    }
    mp_tensor *fa = NULL, *fb = NULL;
    p.wt = c->dtype;
    if ((st = gemm_operand(a, p.wt, &fa)) == MP_OK && (st = gemm_operand(b, p.wt, &fb)) == MP_OK) {
        gemm_layout(fa, &p.ta, &p.lda);
        gemm_layout(fb, &p.tb, &p.ldb);
        for (int d = 0; d < p.nb; d++) {
            p.sa[d] = batch_stride(fa, d, p.nb);
            p.sb[d] = batch_stride(fb, d, p.nb);
            p.sc[d] = batch_stride(c, d, p.nb);
        }
        p.pa = mp_tensor_data(fa), p.pb = mp_tensor_data(fb), p.pc = mp_tensor_data(c);
        p.adt = fa->dtype, p.bdt = fb->dtype;
        p.alpha = alpha;
        p.accumulate = accumulate;
        simplify_plan(&p);
        st = launch_plan(c->storage->device, &p);
    }
    mp_tensor_decref(fa);
    mp_tensor_decref(fb);
    return st;
}

/* The MP_KERNEL_SCALE kernel: n contiguous int64 or fp32 values of buffer 0 times beta
 * (int64 wraps, as torch's). */
typedef struct {
    int64_t n;
    mp_dtype dt;
    double beta;
} scale_args;

static mp_status run_scale(void *const *buf, const void *args, mp_msg *msg)
{
    const scale_args *a = args;
    (void)msg;
    if (a->dt == MP_DTYPE_INT64) {
        int64_t *d = buf[0];
        for (int64_t i = 0; i < a->n; i++)
            d[i] = (int64_t)((uint64_t)d[i] * (uint64_t)(int64_t)a->beta);
    } else {
        float *d = buf[0], fb = (float)a->beta;
        for (int64_t i = 0; i < a->n; i++)
            d[i] *= fb;
    }
    return MP_OK;
}

/* c = beta * bias (broadcast to c's shape); *used says whether c now holds anything. */
static mp_status init_with_bias(mp_tensor *c, mp_tensor *bias, double beta, const char *op,
                                int *used)
{
    mp_tensor *bx = NULL;
    *used = 0;
    mp_status st = mp_view_expand(bias, c->shape, c->ndim, &bx);
    if (st != MP_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", mp_error_message());
        return mp_error(st, "%s: %s", op, msg);
    }
    if (beta != 0.0) {
        st = mp_tensor_copy_(c, bx);
        scale_args a = {mp_tensor_numel(c), c->dtype, beta};
        void *buf[1] = {mp_tensor_data(c)};
        int64_t nbytes[1] = {a.n * (int64_t)mp_dtype_size(c->dtype)};
        if (st == MP_OK && beta != 1.0)
            st = mp_launch_bufs(c->storage->device, MP_KERNEL_SCALE, 1, buf, nbytes,
                                run_scale, &a);
        *used = st == MP_OK;
    }
    mp_tensor_decref(bx);
    return st;
}

/* Whether every product of the batch lands in its own slice of pshape (nothing is summed). */
static int no_batch_sum(const mp_tensor *a, const mp_tensor *b, const int64_t *pshape, int pnd)
{
    int na = a->ndim - 2, nb = b->ndim - 2, n = na > nb ? na : nb;
    int64_t total = 1, kept = 1;
    for (int d = 0; d < n; d++) {
        int64_t da = d - (n - na) >= 0 ? a->shape[d - (n - na)] : 1;
        int64_t db = d - (n - nb) >= 0 ? b->shape[d - (n - nb)] : 1;
        if (da != db && da != 1 && db != 1)
            return 0;                      /* does not broadcast: the general path says so */
        total *= da == 1 ? db : da;
    }
    for (int d = 0; d < pnd - 2; d++)
        kept *= pshape[d];
    return total == kept && total > 0;
}

/* bias as N values `stride` apart, when its expansion to oshape (== pshape) moves only
 * along the last dim and its dtype is a float one. */
static int row_bias(const mp_tensor *bias, const int64_t *oshape, int ond, int64_t *stride)
{
    if (!mp_dtype_is_float(bias->dtype) || bias->ndim > ond || ond < 1)
        return 0;
    for (int d = 0; d < bias->ndim; d++) {
        int64_t s = bias->shape[d], o = oshape[ond - bias->ndim + d];
        if ((s != 1 && s != o) || (d < bias->ndim - 1 && s != 1))
            return 0;
    }
    int64_t last = bias->ndim ? bias->shape[bias->ndim - 1] : 1;
    *stride = last == 1 ? 0 : bias->strides[bias->ndim - 1];
    return 1;
}

static mp_status product(mp_tensor *a, mp_tensor *b, mp_tensor *bias, double alpha,
                         double beta, const int64_t *oshape, int ond, const int64_t *pshape,
                         int pnd, mp_dtype dt, mp_dtype round_dt, const char *op,
                         mp_tensor **out);

mp_status mp_matmul_product(mp_tensor *a, mp_tensor *b, mp_tensor *bias, double alpha,
                            double beta, const int64_t *oshape, int ond,
                            const int64_t *pshape, int pnd, mp_dtype dt, const char *op,
                            mp_tensor **out)
{
    return product(a, b, bias, alpha, beta, oshape, ond, pshape, pnd, dt, MP_DTYPE_FLOAT32, op,
                   out);
}

mp_status mp_matmul_product_rounded(mp_tensor *a, mp_tensor *b, const int64_t *oshape,
                                    int ond, const int64_t *pshape, int pnd,
                                    mp_dtype round_dt, const char *op, mp_tensor **out)
{
    mp_tensor *r = NULL;
    mp_status st = product(a, b, NULL, 1.0, 0.0, oshape, ond, pshape, pnd, MP_DTYPE_FLOAT32,
                           round_dt, op, out);
    if (st != MP_OK || (*out)->dtype != round_dt)
        return st;
    /* products summed over a batch came back in round_dt: widen them (exact) */
    st = mp_tensor_cast(*out, MP_DTYPE_FLOAT32, &r);
    mp_tensor_decref(*out);
    *out = st == MP_OK ? r : NULL;
    return st;
}

static mp_status product(mp_tensor *a, mp_tensor *b, mp_tensor *bias, double alpha,
                         double beta, const int64_t *oshape, int ond, const int64_t *pshape,
                         int pnd, mp_dtype dt, mp_dtype round_dt, const char *op,
                         mp_tensor **out)
{
    mp_tensor *const devs[3] = {a, b, bias};
    mp_device dev = mp_any_device(devs, 3);
    mp_status st = mp_check_same_device(devs, 3, dev, 0);
    if (st != MP_OK)
        return st;
    mm_plan fused = {0};
    int direct = mp_dtype_is_float(dt) && no_batch_sum(a, b, pshape, pnd) && ond == pnd &&
                 !memcmp(oshape, pshape, sizeof(int64_t) * (size_t)ond);
    if (round_dt != MP_DTYPE_FLOAT32) {   /* rounded in the GEMM's store, or as a 16-bit result */
        if (direct)
            fused.round_dt = round_dt;
        else
            dt = round_dt;
    }
    if (direct && bias && beta != 0.0)
        direct = row_bias(bias, oshape, ond, &fused.bias_stride);
    if (direct && bias && beta != 0.0) {
        fused.bias = mp_tensor_data(bias);
        fused.bias_dt = bias->dtype;
        fused.bias_scale = (float)beta;
    }
    /* integers (int64, uint8) multiply exactly in int64; a uint8 result then wraps modulo
     * 256, which is what torch's uint8 arithmetic gives */
    mp_dtype wt = direct ? dt : mp_dtype_is_integral(dt) ? MP_DTYPE_INT64 : MP_DTYPE_FLOAT32;
    mp_tensor *c = NULL, *cv = NULL;
    int accumulate = 0;
    st = mp_tensor_empty(oshape, ond, wt, dev, &c);
    if (st == MP_OK && bias && !direct)
        st = init_with_bias(c, bias, beta, op, &accumulate);
    int64_t pstrides[MP_MAX_DIMS];
    mp_contiguous_strides(pshape, pnd, pstrides);
    if (st == MP_OK)          /* c is contiguous with pshape's numel: a plain re-labelling */
        st = mp_view_make(c, pshape, pstrides, pnd, 0, &cv);
    if (st == MP_OK)
        st = matmul_into(cv, a, b, alpha, accumulate, op, &fused);
    mp_tensor_decref(cv);
    if (st == MP_OK && dt != wt) {
        st = mp_tensor_cast(c, dt, out);
        mp_tensor_decref(c);
    } else if (st == MP_OK) {
        *out = c;
    } else {
        mp_tensor_decref(c);
    }
    return st;
}
