/* mp_math.h - one-element bodies of the activation functions and their derivatives, shared by
 * the CPU loops and the CUDA kernels. fp32 in, fp32 out; no fast-math assumptions. */
#ifndef MP_MATH_H
#define MP_MATH_H

#include <math.h>

#include "mp_defs.h"

#define MP_SQRT1_2 0.70710678118654752440f
#define MP_SQRT2_PI 0.79788456080286535588f   /* sqrt(2/pi) */
#define MP_INV_SQRT_2PI 0.39894228040143267794f

MP_HD float mp_relu(float x) { return x < 0.0f ? 0.0f : x; }   /* NaN and -0 pass, as torch */
MP_HD float mp_relu_grad(float x) { return x > 0.0f ? 1.0f : 0.0f; }

MP_HD float mp_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* exact GELU: x * Phi(x) */
MP_HD float mp_gelu(float x) { return 0.5f * x * (1.0f + erff(x * MP_SQRT1_2)); }
MP_HD float mp_gelu_grad(float x)
{
    float cdf = 0.5f * (1.0f + erff(x * MP_SQRT1_2));
    float pdf = MP_INV_SQRT_2PI * expf(-0.5f * x * x);
    return cdf + x * pdf;
}

/* tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
MP_HD float mp_gelu_tanh(float x)
{
    float inner = MP_SQRT2_PI * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
}
MP_HD float mp_gelu_tanh_grad(float x)
{
    float inner = MP_SQRT2_PI * (x + 0.044715f * x * x * x);
    float t = tanhf(inner);
    float dinner = MP_SQRT2_PI * (1.0f + 3.0f * 0.044715f * x * x);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * dinner;
}

MP_HD float mp_silu(float x) { return x * mp_sigmoid(x); }
MP_HD float mp_silu_grad(float x)
{
    float s = mp_sigmoid(x);
    return s * (1.0f + x * (1.0f - s));
}

#endif
