/* scaler.c - the loss-scaler kernels: the multi-tensor inf/NaN check that unscales gradients
 * in place (torch's _amp_foreach_non_finite_check_and_unscale_) and the scale update
 * (torch's _amp_update_scale_), both on tensors so no Python number is involved.
 * Owns no state: GradScaler (mpamp/amp/grad_scaler.py) keeps the scale and tracker tensors. */
#include "optim.h"

#include "../cpu/dispatch.h"
#include "../cpu/parallel.h"

#define CHUNK 1024

static mp_status check_one(const mp_tensor *t, mp_dtype dt, const char *name, const char *kind)
{
    if (t->storage->device != MP_DEVICE_CPU)
        return mp_error(MP_ERR_RUNTIME, "%s must be a CPU tensor.", name);
    if (mp_tensor_numel(t) != 1)
        return mp_error(MP_ERR_RUNTIME, "%s must be a 1-element tensor.", name);
    if (t->dtype != dt)
        return mp_error(MP_ERR_RUNTIME, "%s must be a%s tensor.", name, kind);
    return MP_OK;
}

/* Returns 1 when a value in g[0..n) is not finite; scales in place when inv != 1. */
static int check_f32(float *g, int64_t n, float inv, int write)
{
    int found = 0;
    if (!write || inv == 1.0f) {
        for (int64_t i = 0; i < n; i++)
            found |= !mp_f32_isfinite(g[i]);
        return found;
    }
    for (int64_t i = 0; i < n; i++)
        g[i] = mp_unscale_check(g[i], inv, &found);
    return found;
}

/* Elements [b, e) of an fp16/bf16 gradient, through fp32 chunks. */
static int check_half(mp_tensor *t, int64_t b, int64_t e, float inv, int write)
{
    const mp_cpu_kernels *k = mp_cpu();
    void *data = mp_tensor_data(t);
    float buf[CHUNK];
    int found = 0;
    for (int64_t s = b; s < e; s += CHUNK) {
        int64_t len = e - s < CHUNK ? e - s : CHUNK;
        if (t->dtype == MP_DTYPE_FLOAT16)
            k->f16_to_f32((const mp_half *)data + s, buf, (size_t)len);
        else
            k->bf16_to_f32((const mp_bf16 *)data + s, buf, (size_t)len);
        found |= check_f32(buf, len, inv, write);
        if (!write || inv == 1.0f)
            continue;
        if (t->dtype == MP_DTYPE_FLOAT16)
            k->f32_to_f16(buf, (mp_half *)data + s, (size_t)len);
        else
            k->f32_to_bf16(buf, (mp_bf16 *)data + s, (size_t)len);
    }
    return found;
}

/* A large gradient is checked on several threads (elements are independent; the flag is an
 * OR). Below the grain a tensor stays on the calling thread. */
#define UNSCALE_GRAIN (1 << 18)

typedef struct {
    mp_tensor *g;
    float inv;
    int write;
    int found;
} unscale_job;

static void unscale_range(void *ctx, int64_t b, int64_t e)
{
    unscale_job *j = ctx;
    int f = j->g->dtype == MP_DTYPE_FLOAT32
                ? check_f32((float *)mp_tensor_data(j->g) + b, e - b, j->inv, j->write)
                : check_half(j->g, b, e, j->inv, j->write);
    if (f)
        __atomic_store_n(&j->found, 1, __ATOMIC_RELAXED);
}

mp_status mp_scaler_unscale_(mp_tensor **grads, int n, mp_tensor *found_inf,
                             mp_tensor *inv_scale)
{
    mp_status s;
    if (n == 0)
        return MP_OK;
    if ((s = check_one(found_inf, MP_DTYPE_FLOAT32, "found_inf", " float")) != MP_OK)
        return s;
    if (inv_scale && (s = check_one(inv_scale, MP_DTYPE_FLOAT32, "inv_scale", " float")) != MP_OK)
        return s;
    for (int i = 0; i < n; i++) {
        if (grads[i]->storage->device != MP_DEVICE_CPU)
            return mp_error(MP_ERR_RUNTIME, "scaled_grads must be on the same device.");
        if (!mp_tensor_is_contiguous(grads[i]))
            return mp_error(MP_ERR_RUNTIME, "one of scaled_grads was not a contiguous tensor.");
        if (!mp_dtype_is_float(grads[i]->dtype))
            return mp_error(MP_ERR_TYPE, "scaled_grads must be floating-point tensors.");
    }
    float inv = inv_scale ? *(const float *)mp_tensor_data(inv_scale) : 1.0f;
    int write = inv_scale != NULL, found = 0;
    for (int i = 0; i < n; i++) {
        unscale_job job = {grads[i], inv, write, 0};
        mp_parallel_for(mp_tensor_numel(grads[i]), UNSCALE_GRAIN, unscale_range, &job);
        found |= job.found;
    }
    if (found)   /* never cleared: one found_inf accumulates over buckets */
        *(float *)mp_tensor_data(found_inf) = 1.0f;
    return MP_OK;
}

mp_status mp_scaler_update(mp_tensor *scale, mp_tensor *tracker, mp_tensor *found_inf,
                           double growth_factor, double backoff_factor, int64_t interval)
{
    mp_status s;
    if ((s = check_one(tracker, MP_DTYPE_INT64, "growth_tracker", "n int")) != MP_OK ||
        (s = check_one(scale, MP_DTYPE_FLOAT32, "current_scale", " float")) != MP_OK ||
        (s = check_one(found_inf, MP_DTYPE_FLOAT32, "found_inf", " float")) != MP_OK)
        return s;
    float *sc = (float *)mp_tensor_data(scale);
    int64_t *tr = (int64_t *)mp_tensor_data(tracker);
    if (*(const float *)mp_tensor_data(found_inf) != 0.0f) {
        *sc = (float)((double)*sc * backoff_factor);
        *tr = 0;
        return MP_OK;
    }
    int64_t successful = *tr + 1;
    if (successful == interval) {
        float grown = (float)((double)*sc * growth_factor);
        if (mp_f32_isfinite(grown))
            *sc = grown;
        *tr = 0;
    } else {
        *tr = successful;
    }
    return MP_OK;
}
