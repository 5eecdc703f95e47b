/* scaler.c - the loss-scaler kernels: the multi-tensor inf/NaN check that unscales gradients
 * in place (torch's _amp_foreach_non_finite_check_and_unscale_) and the scale update
 * (torch's _amp_update_scale_), both on tensors so no Python number is involved.
 * Owns no state: GradScaler (mpamp/amp/grad_scaler.py) keeps the scale and tracker tensors. */
#include "optim.h"

#include <stdlib.h>

#include "../backend.h"
#include "../../shared/mp_kernel_args.h"

#include "../../cpu/dispatch.h"
#include "../../cpu/parallel.h"

#define CHUNK 1024

static mp_status check_one(const mp_tensor *t, mp_dtype dt, mp_device dev, const char *name,
                           const char *kind)
{
    if (t->storage->device != dev)
        return mp_error(MP_ERR_RUNTIME, "%s must be a %s tensor.", name,
                        dev == MP_DEVICE_CPU ? "CPU" : "CUDA");
    if (mp_tensor_numel(t) != 1)
        return mp_error(MP_ERR_RUNTIME, "%s must be a 1-element tensor.", name);
    if (t->dtype != dt)
        return mp_error(MP_ERR_RUNTIME, "%s must be a%s tensor.", name, kind);
    return MP_OK;
}

/* Returns 1 when a value in g[0..n) is not finite; scales in place when inv != 1 (the
 * dispatch table's vector pass: the bits of mp_unscale_check, 16 lanes at a time). */
static int check_f32(float *g, int64_t n, float inv, int write)
{
    return mp_cpu()->vm.unscale(g, (size_t)n, write ? inv : 1.0f);
}

/* Elements [b, e) of an fp16/bf16 gradient, through fp32 chunks. */
static int check_half(void *data, mp_dtype dt, int64_t b, int64_t e, float inv, int write)
{
    const mp_cpu_kernels *k = mp_cpu();
    float buf[CHUNK];
    int found = 0;
    for (int64_t s = b; s < e; s += CHUNK) {
        int64_t len = e - s < CHUNK ? e - s : CHUNK;
        if (dt == MP_DTYPE_FLOAT16)
            k->f16_to_f32((const mp_half *)data + s, buf, (size_t)len);
        else
            k->bf16_to_f32((const mp_bf16 *)data + s, buf, (size_t)len);
        found |= check_f32(buf, len, inv, write);
        if (!write || inv == 1.0f)
            continue;
        if (dt == MP_DTYPE_FLOAT16)
            k->f32_to_f16(buf, (mp_half *)data + s, (size_t)len);
        else
            k->f32_to_bf16(buf, (mp_bf16 *)data + s, (size_t)len);
    }
    return found;
}

/* A large gradient is checked on several threads (elements are independent; the flag is an
 * OR). Below the grain a tensor stays on the calling thread. */
#define UNSCALE_GRAIN (1 << 15)

typedef struct {
    void *g;
    mp_dtype dt;
    float inv;
    int write;
    int found;
} unscale_job;

static void unscale_range(void *ctx, int64_t b, int64_t e)
{
    unscale_job *j = ctx;
    int f = j->dt == MP_DTYPE_FLOAT32
                ? check_f32((float *)j->g + b, e - b, j->inv, j->write)
                : check_half(j->g, j->dt, b, e, j->inv, j->write);
    if (f)
        __atomic_store_n(&j->found, 1, __ATOMIC_RELAXED);
}

/* The MP_KERNEL_UNSCALE kernel: buffers 0..n-1 the grads, n found_inf (fp32, set to 1 when
 * a value is not finite, never cleared), n + 1 inv_scale (fp32) or absent. Every value is
 * read on the device: no host number is involved. */
typedef mp_unscale_args unscale_args;   /* shared/mp_kernel_args.h */

static mp_status run_unscale(void *const *buf, const void *args, mp_msg *msg)
{
    const unscale_args *a = args;
    const float *inv_p = buf[a->n + 1];
    float inv = inv_p ? *inv_p : 1.0f;
    int write = inv_p != NULL, found = 0;
    (void)msg;
    for (int i = 0; i < a->n; i++) {
        unscale_job job = {buf[i], a->dt[i], inv, write, 0};
        mp_parallel_for(a->numel[i], UNSCALE_GRAIN, unscale_range, &job);
        found |= job.found;
    }
    if (found)   /* never cleared: one found_inf accumulates over buckets */
        *(float *)buf[a->n] = 1.0f;
    return MP_OK;
}

mp_status mp_scaler_unscale_(mp_tensor **grads, int n, mp_tensor *found_inf,
                             mp_tensor *inv_scale)
{
    mp_status s;
    if (n == 0)
        return MP_OK;
    mp_device dev = found_inf->storage->device;
    if ((s = check_one(found_inf, MP_DTYPE_FLOAT32, dev, "found_inf", " float")) != MP_OK)
        return s;
    if (inv_scale &&
        (s = check_one(inv_scale, MP_DTYPE_FLOAT32, dev, "inv_scale", " float")) != MP_OK)
        return s;
    for (int i = 0; i < n; i++) {
        if (grads[i]->storage->device != dev)
            return mp_error(MP_ERR_RUNTIME, "scaled_grads must be on the same device.");
        if (!mp_tensor_is_contiguous(grads[i]))
            return mp_error(MP_ERR_RUNTIME, "one of scaled_grads was not a contiguous tensor.");
        if (!mp_dtype_is_float(grads[i]->dtype))
            return mp_error(MP_ERR_TYPE, "scaled_grads must be floating-point tensors.");
    }
    size_t nb = (size_t)n + 2;
    void **buf = malloc(nb * sizeof(void *));
    int64_t *nbytes = malloc(nb * sizeof(int64_t)), *numel = malloc((size_t)n * sizeof(int64_t));
    mp_dtype *dt = malloc((size_t)n * sizeof(mp_dtype));
    if (!buf || !nbytes || !numel || !dt) {
        s = mp_error(MP_ERR_NOMEM, "out of memory for the unscale launch");
    } else {
        for (int i = 0; i < n; i++) {
            buf[i] = mp_tensor_data(grads[i]);
            numel[i] = mp_tensor_numel(grads[i]);
            dt[i] = grads[i]->dtype;
            nbytes[i] = numel[i] * (int64_t)mp_dtype_size(dt[i]);
        }
        buf[n] = mp_tensor_data(found_inf);
        buf[n + 1] = inv_scale ? mp_tensor_data(inv_scale) : NULL;
        nbytes[n] = nbytes[n + 1] = 4;
        unscale_args a = {n, dt, numel};
        s = mp_launch_bufs(dev, MP_KERNEL_UNSCALE, n + 2, buf, nbytes, run_unscale, &a);
    }
    free(buf);
    free(nbytes);
    free(numel);
    free(dt);
    return s;
}

/* The MP_KERNEL_SCALE_UPDATE kernel: buffers scale (fp32), growth tracker (int64),
 * found_inf (fp32). */
typedef mp_scale_update_args update_args;   /* shared/mp_kernel_args.h */

static mp_status run_update(void *const *buf, const void *args, mp_msg *msg)
{
    const update_args *a = args;
    float *sc = buf[0];
    int64_t *tr = buf[1];
    (void)msg;
    if (*(const float *)buf[2] != 0.0f) {
        *sc = (float)((double)*sc * a->backoff);
        *tr = 0;
        return MP_OK;
    }
    int64_t successful = *tr + 1;
    if (successful == a->interval) {
        float grown = (float)((double)*sc * a->growth);
        if (mp_f32_isfinite(grown))
            *sc = grown;
        *tr = 0;
    } else {
        *tr = successful;
    }
    return MP_OK;
}

mp_status mp_scaler_update(mp_tensor *scale, mp_tensor *tracker, mp_tensor *found_inf,
                           double growth_factor, double backoff_factor, int64_t interval)
{
    mp_status s;
    mp_device dev = scale->storage->device;
    if ((s = check_one(tracker, MP_DTYPE_INT64, dev, "growth_tracker", "n int")) != MP_OK ||
        (s = check_one(scale, MP_DTYPE_FLOAT32, dev, "current_scale", " float")) != MP_OK ||
        (s = check_one(found_inf, MP_DTYPE_FLOAT32, dev, "found_inf", " float")) != MP_OK)
        return s;
    void *buf[3] = {mp_tensor_data(scale), mp_tensor_data(tracker), mp_tensor_data(found_inf)};
    int64_t nbytes[3] = {4, 8, 4};
    update_args a = {growth_factor, backoff_factor, interval};
    return mp_launch_bufs(dev, MP_KERNEL_SCALE_UPDATE, 3, buf, nbytes, run_update, &a);
}

/* The MP_KERNEL_INV_SCALE kernel: out = 1 / scale, the reciprocal taken in double and stored
 * as fp32 (torch: scale.double().reciprocal().float()); 0 gives inf. */
static mp_status run_inv(void *const *buf, const void *args, mp_msg *msg)
{
    (void)args, (void)msg;
    *(float *)buf[0] = (float)(1.0 / (double)*(const float *)buf[1]);
    return MP_OK;
}

mp_status mp_scaler_inv_scale(mp_tensor *out, mp_tensor *scale)
{
    mp_status s;
    mp_device dev = scale->storage->device;
    if ((s = check_one(scale, MP_DTYPE_FLOAT32, dev, "scale", " float")) != MP_OK ||
        (s = check_one(out, MP_DTYPE_FLOAT32, dev, "inv_scale", " float")) != MP_OK)
        return s;
    void *buf[2] = {mp_tensor_data(out), mp_tensor_data(scale)};
    int64_t nbytes[2] = {4, 4};
    return mp_launch_bufs(dev, MP_KERNEL_INV_SCALE, 2, buf, nbytes, run_inv, NULL);
}
