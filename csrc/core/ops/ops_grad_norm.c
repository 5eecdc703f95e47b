/* ops_grad_norm.c - the sum of squares of a list of tensors in one kernel, for
 * clip_grad_norm_'s 2-norm (mpamp/nn/utils/clip_grad.py): one read of every gradient instead
 * of an abs, a square and a sum per tensor (three passes and two temporaries each). The
 * tensors are cut into segments of a fixed length, whose sums (the dispatch table's dot of a
 * segment with itself: each square exact in double) run on the thread pool; the segments'
 * sums are then added in order, so the total does not depend on the thread count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cpu/dispatch.h"
#include "../../cpu/parallel.h"
#include "../../shared/mp_half.h"
#include "../backend.h"
#include "../../shared/mp_kernel_args.h"
#include "../reduce.h"
#include "ops.h"

#define SUMSQ_SEG 16384         /* elements per segment (the last of a tensor may be short) */
#define SUMSQ_CHUNK 1024        /* fp16/bf16 values converted at a time */

typedef mp_sum_squares_args sumsq_args;   /* shared/mp_kernel_args.h */

typedef struct {
    const sumsq_args *a;
    void *const *buf;
    double *part;               /* one per segment */
} sumsq_job;

static double seg_sum(mp_dtype dt, const void *data, int64_t at, int64_t len)
{
    const mp_cpu_kernels *k = mp_cpu();
    if (dt == MP_DTYPE_FLOAT32) {
        const float *x = (const float *)data + at;
        return k->vm.dot(x, x, (size_t)len);
    }
    float buf[SUMSQ_CHUNK];
    double s = 0.0;
    for (int64_t i = 0; i < len; i += SUMSQ_CHUNK) {
        int64_t m = len - i < SUMSQ_CHUNK ? len - i : SUMSQ_CHUNK;
        if (dt == MP_DTYPE_FLOAT16)
            k->f16_to_f32((const mp_half *)data + at + i, buf, (size_t)m);
        else
            k->bf16_to_f32((const mp_bf16 *)data + at + i, buf, (size_t)m);
        s += k->vm.dot(buf, buf, (size_t)m);
    }
    return s;
}

static void sumsq_range(void *vj, int64_t s0, int64_t s1)
{
    const sumsq_job *j = vj;
    const sumsq_args *a = j->a;
    int i = 0;
    while (i + 1 < a->n && a->first[i + 1] <= s0)
        i++;
    for (int64_t s = s0; s < s1; s++) {
        while (i + 1 < a->n && a->first[i + 1] <= s)
            i++;
        int64_t at = (s - a->first[i]) * SUMSQ_SEG;
        int64_t len = a->numel[i] - at < SUMSQ_SEG ? a->numel[i] - at : SUMSQ_SEG;
        j->part[s] = seg_sum(a->dt[i], j->buf[i], at, len);
    }
}

/* The MP_KERNEL_SUM_SQUARES kernel: buffers 0..n-1 the tensors (contiguous, float), n the
 * total (one double). */
static mp_status run_sumsq(void *const *buf, const void *args, mp_msg *msg)
{
    const sumsq_args *a = args;
    double *part = malloc(sizeof(double) * (size_t)(a->segs ? a->segs : 1));
    if (!part) {
        snprintf(msg->text, sizeof msg->text, "out of memory for the sum of squares");
        return MP_ERR_NOMEM;
    }
    sumsq_job j = {a, buf, part};
    mp_parallel_for(a->segs, 2, sumsq_range, &j);
    double total = 0.0;
    for (int64_t s = 0; s < a->segs; s++)
        total += part[s];
    *(double *)buf[a->n] = total;
    free(part);
    return MP_OK;
}

mp_status mp_op_foreach_sum_squares(mp_tensor **ts, int n, mp_tensor **out)
{
    *out = NULL;
    if (n < 1)
        return mp_error(MP_ERR_VALUE, "_foreach_sum_squares: expected at least one tensor");
    mp_device dev = ts[0]->storage->device;
    for (int i = 0; i < n; i++) {
        if (ts[i]->storage->device != dev)
            return mp_error(MP_ERR_RUNTIME, "_foreach_sum_squares: all tensors must be on the "
                            "same device");
        if (!mp_dtype_is_float(ts[i]->dtype) || !mp_tensor_is_contiguous(ts[i]))
            return mp_error(MP_ERR_TYPE, "_foreach_sum_squares: tensors must be contiguous "
                            "float tensors");
    }
    mp_tensor *acc = NULL;
    int64_t one = 1;
    mp_status st = mp_acc_zeros(&one, 1, dev, &acc);
    size_t nb = (size_t)n + 1;
    void **buf = malloc(nb * sizeof(void *));
    int64_t *nbytes = malloc(nb * sizeof(int64_t));
    int64_t *numel = malloc((size_t)n * sizeof(int64_t)), *first = malloc((size_t)n * 8);
    mp_dtype *dt = malloc((size_t)n * sizeof(mp_dtype));
    if (st == MP_OK && (!buf || !nbytes || !numel || !first || !dt))
        st = mp_error(MP_ERR_NOMEM, "out of memory for the sum of squares");
    if (st == MP_OK) {
        int64_t segs = 0;
        for (int i = 0; i < n; i++) {
            buf[i] = mp_tensor_data(ts[i]);
            numel[i] = mp_tensor_numel(ts[i]);
            dt[i] = ts[i]->dtype;
            nbytes[i] = numel[i] * (int64_t)mp_dtype_size(dt[i]);
            first[i] = segs;
            segs += (numel[i] + SUMSQ_SEG - 1) / SUMSQ_SEG;
        }
        buf[n] = mp_tensor_data(acc);
        nbytes[n] = 8;
        sumsq_args a = {n, dt, numel, first, segs};
        st = mp_launch_bufs(dev, MP_KERNEL_SUM_SQUARES, n + 1, buf, nbytes, run_sumsq, &a);
    }
    if (st == MP_OK)
        st = mp_tensor_empty(NULL, 0, MP_DTYPE_FLOAT32, dev, out);
    if (st == MP_OK && (st = mp_store_f64(acc, *out)) != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    free(buf);
    free(nbytes);
    free(numel);
    free(first);
    free(dt);
    mp_tensor_decref(acc);
    return st;
}
