/* cast_scalar.c - portable conversion loops over the shared per-element conversions.
 * These define the right answer: every vector kernel must match them bit for bit. */
#include "dispatch.h"

static void f32_to_f16_scalar(const float *src, mp_half *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = mp_f32_to_half(src[i]);
}

static void f16_to_f32_scalar(const mp_half *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = mp_half_to_f32(src[i]);
}

static void f32_to_bf16_scalar(const float *src, mp_bf16 *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = mp_f32_to_bf16(src[i]);
}

static void bf16_to_f32_scalar(const mp_bf16 *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = mp_bf16_to_f32(src[i]);
}

void mp_cpu_fill_scalar(mp_cpu_kernels *k)
{
    k->isa = MP_ISA_SCALAR;
    k->f32_to_f16 = f32_to_f16_scalar;
    k->f16_to_f32 = f16_to_f32_scalar;
    k->f32_to_bf16 = f32_to_bf16_scalar;
    k->bf16_to_f32 = bf16_to_f32_scalar;
}
