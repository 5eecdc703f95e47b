/* chunk.c - loading strided runs of any dtype into fp32 / int64 / truth buffers and storing
 * them back (see chunk.h). Contiguous fp16/bf16 runs go through the CPU's vector conversion
 * kernels; everything else is converted element by element with the shared functions. */
#include "chunk.h"

#include <string.h>

#include "../cpu/dispatch.h"
#include "../shared/mp_half.h"
#include "copy.h"
#include "rows.h"

static float load1_f32(mp_dtype dt, const char *p)
{
    switch (dt) {
    case MP_DTYPE_FLOAT32: return *(const float *)p;
    case MP_DTYPE_FLOAT16: return mp_half_to_f32(*(const mp_half *)p);
    case MP_DTYPE_BFLOAT16: return mp_bf16_to_f32(*(const mp_bf16 *)p);
    case MP_DTYPE_INT64: return (float)*(const int64_t *)p;     /* one rounding */
    case MP_DTYPE_BOOL: return *(const uint8_t *)p ? 1.0f : 0.0f;
    case MP_DTYPE_UINT8: return (float)*(const uint8_t *)p;
    default: return 0.0f;
    }
}

static float round_f32(float v, mp_dtype to)
{
    if (to == MP_DTYPE_FLOAT16)
        return mp_half_to_f32(mp_f32_to_half(v));
    if (to == MP_DTYPE_BFLOAT16)
        return mp_bf16_to_f32(mp_f32_to_bf16(v));
    return v;
}

const float *mp_chunk_f32(const char *p, int64_t stride, mp_dtype dt, mp_dtype round_to,
                          int64_t n, float *buf)
{
    /* rounding matters only when dt is wider than round_to or is not a float */
    int rounds = (round_to == MP_DTYPE_FLOAT16 || round_to == MP_DTYPE_BFLOAT16) &&
                 dt != round_to;
    if (stride == 0) {
        float v = load1_f32(dt, p);
        v = rounds ? round_f32(v, round_to) : v;
        for (int64_t i = 0; i < n; i++)
            buf[i] = v;
        return buf;
    }
    if (stride == 1 && !rounds) {
        const mp_cpu_kernels *k = mp_cpu();
        switch (dt) {
        case MP_DTYPE_FLOAT32: return (const float *)p;
        case MP_DTYPE_FLOAT16: k->f16_to_f32((const mp_half *)p, buf, (size_t)n); return buf;
        case MP_DTYPE_BFLOAT16: k->bf16_to_f32((const mp_bf16 *)p, buf, (size_t)n); return buf;
        default: break;
        }
    }
    int64_t step = stride * (int64_t)mp_dtype_size(dt);
    for (int64_t i = 0; i < n; i++)
        buf[i] = load1_f32(dt, p + i * step);
    if (rounds)
        for (int64_t i = 0; i < n; i++)
            buf[i] = round_f32(buf[i], round_to);
    return buf;
}

const int64_t *mp_chunk_i64(const char *p, int64_t stride, mp_dtype dt, int64_t n,
                            int64_t *buf)
{
    if (stride == 1 && dt == MP_DTYPE_INT64)
        return (const int64_t *)p;
    if (stride == 0) {
        int64_t v = mp_load_i64(dt, p);
        for (int64_t i = 0; i < n; i++)
            buf[i] = v;
        return buf;
    }
    int64_t step = stride * (int64_t)mp_dtype_size(dt);
    if (dt == MP_DTYPE_INT64) {
        for (int64_t i = 0; i < n; i++)
            buf[i] = *(const int64_t *)(p + i * step);
    } else {
        for (int64_t i = 0; i < n; i++)
            buf[i] = mp_load_i64(dt, p + i * step);
    }
    return buf;
}

const int64_t *mp_chunk_i64_as(const char *p, int64_t stride, mp_dtype dt, mp_dtype as,
                               int64_t n, int64_t *buf)
{
    const int64_t *v = mp_chunk_i64(p, stride, dt, n, buf);
    if (as != MP_DTYPE_UINT8 || dt == MP_DTYPE_UINT8 || dt == MP_DTYPE_BOOL)
        return v;
    for (int64_t i = 0; i < n; i++)
        buf[i] = (int64_t)(uint8_t)v[i];
    return buf;
}

void mp_chunk_truth_as(const char *p, int64_t stride, mp_dtype dt, mp_dtype as, int64_t n,
                       uint8_t *buf)
{
    if (as != MP_DTYPE_UINT8 || dt != MP_DTYPE_INT64) {
        mp_chunk_truth(p, stride, dt, n, buf);
        return;
    }
    int64_t tmp[MP_CHUNK], step = stride * (int64_t)sizeof(int64_t);
    for (int64_t i0 = 0; i0 < n; i0 += MP_CHUNK) {
        int64_t m = n - i0 < MP_CHUNK ? n - i0 : MP_CHUNK;
        const int64_t *v = mp_chunk_i64_as(p + i0 * step, stride, dt, as, m, tmp);
        for (int64_t i = 0; i < m; i++)
            buf[i0 + i] = v[i] != 0;
    }
}

void mp_chunk_truth(const char *p, int64_t stride, mp_dtype dt, int64_t n, uint8_t *buf)
{
    int64_t step = stride * (int64_t)mp_dtype_size(dt);
    switch (dt) {
    case MP_DTYPE_BOOL:
    case MP_DTYPE_UINT8:
        for (int64_t i = 0; i < n; i++)
            buf[i] = p[i * step] != 0;
        return;
    case MP_DTYPE_INT64:
        for (int64_t i = 0; i < n; i++)
            buf[i] = *(const int64_t *)(p + i * step) != 0;
        return;
    default: {
        float tmp[MP_CHUNK];
        for (int64_t i0 = 0; i0 < n; i0 += MP_CHUNK) {
            int64_t m = n - i0 < MP_CHUNK ? n - i0 : MP_CHUNK;
            const float *v = mp_chunk_f32(p + i0 * step, stride, dt, dt, m, tmp);
            for (int64_t i = 0; i < m; i++)
                buf[i0 + i] = v[i] != 0.0f;     /* NaN != 0: true, as torch */
        }
        return;
    }
    }
}

void mp_chunk_store_u8(char *p, int64_t stride, const uint8_t *v, int64_t n)
{
    if (stride == 1) {
        memcpy(p, v, (size_t)n);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        p[i * stride] = (char)v[i];
}

void mp_chunk_store_i64(char *p, int64_t stride, mp_dtype dt, const int64_t *v, int64_t n)
{
    if (dt == MP_DTYPE_BOOL) {
        for (int64_t i = 0; i < n; i++)
            p[i * stride] = v[i] != 0;
        return;
    }
    if (dt == MP_DTYPE_UINT8) {             /* wraps modulo 256, as torch */
        for (int64_t i = 0; i < n; i++)
            p[i * stride] = (char)(uint8_t)v[i];
        return;
    }
    if (stride == 1) {
        if ((const char *)v != p)
            memcpy(p, v, (size_t)n * sizeof(int64_t));
        return;
    }
    for (int64_t i = 0; i < n; i++)
        memcpy(p + i * stride * (int64_t)sizeof(int64_t), &v[i], sizeof(int64_t));
}

void mp_chunk_store_f32(char *p, int64_t stride, mp_dtype dt, const float *v, int64_t n)
{
    const mp_cpu_kernels *k = mp_cpu();
    if (stride == 1) {
        switch (dt) {
        case MP_DTYPE_FLOAT32:
            if ((const float *)p != v)
                memcpy(p, v, (size_t)n * sizeof(float));
            return;
        case MP_DTYPE_FLOAT16: k->f32_to_f16(v, (mp_half *)p, (size_t)n); return;
        case MP_DTYPE_BFLOAT16: k->f32_to_bf16(v, (mp_bf16 *)p, (size_t)n); return;
        default: break;
        }
    }
    int64_t step = stride * (int64_t)mp_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) {
        mp_scalar s = {v[i], 0, 0};
        mp_store_scalar(dt, p + i * step, s);
    }
}

mp_status mp_check_scalar_fits(mp_dtype dt, mp_scalar v)
{
    if (dt != MP_DTYPE_UINT8)
        return MP_OK;
    int ok = v.is_int ? v.i >= -255 && v.i <= 255 : v.f >= 0.0 && v.f <= 255.0;    /* NaN: no */
    return ok ? MP_OK : mp_error(MP_ERR_RUNTIME, "value cannot be converted to type uint8_t "
                                 "without overflow");
}

/* integers (bool included) may not receive floats, bool may not receive integers */
static int rank_of(mp_dtype d)
{
    return d == MP_DTYPE_BOOL ? 0 : mp_dtype_is_float(d) ? 2 : 1;     /* int64, uint8: 1 */
}

mp_status mp_check_result_cast(mp_dtype result, mp_dtype self)
{
    if (rank_of(result) > rank_of(self))
        return mp_error(MP_ERR_RUNTIME, "result type %s can't be cast to the desired output "
                        "type %s", mp_dtype_torch_name(result), mp_dtype_torch_name(self));
    return MP_OK;
}
