/* peak_avx512.c - the fp32 FMA peak loop for AVX-512 (this file gets -mavx512f ...). 24
 * independent zmm chains: enough for 2 FMA/cycle at 4-6 cycles latency on every AVX-512 core
 * (Zen 4/5, Skylake-X..Sapphire Rapids), with 8 of the 32 registers to spare. Same recurrence
 * as peak_avx2.c: c = c * a + b stays near 1. */
#include <immintrin.h>

#include "peak.h"

#define CHAINS 24

double mp_peak_fma_avx512(int64_t iters, float *sink)
{
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
    __m512 c[CHAINS];
    for (int j = 0; j < CHAINS; j++)
        c[j] = _mm512_set1_ps(1.0f + (float)j);
    for (int64_t i = 0; i < iters; i++) {
#pragma GCC unroll 24
        for (int j = 0; j < CHAINS; j++)
            c[j] = _mm512_fmadd_ps(c[j], a, b);
    }
    __m512 s = c[0];
    for (int j = 1; j < CHAINS; j++)
        s = _mm512_add_ps(s, c[j]);
    *sink = _mm512_reduce_add_ps(s);
    return (double)iters * CHAINS * 16 * 2;
}
