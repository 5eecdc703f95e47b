/* peak_avx2.c - the fp32 FMA peak loop for AVX2 + FMA (this file gets -mavx2 -mfma). Twelve
 * independent ymm chains cover FMA latency x throughput (4 x 2 on Zen 3 and Haswell..Alder
 * Lake) with room to spare, and leave registers for the two constants: no loads in the loop.
 * c = c * a + b with a just below 1 keeps every value near 1 (no subnormals, no overflow). */
#include <immintrin.h>

#include "peak.h"

#define CHAINS 12

double mp_peak_fma_avx2(int64_t iters, float *sink)
{
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f);
    __m256 c[CHAINS];
    for (int j = 0; j < CHAINS; j++)
        c[j] = _mm256_set1_ps(1.0f + (float)j);
    for (int64_t i = 0; i < iters; i++) {
#pragma GCC unroll 12
        for (int j = 0; j < CHAINS; j++)
            c[j] = _mm256_fmadd_ps(c[j], a, b);
    }
    __m256 s = c[0];
    for (int j = 1; j < CHAINS; j++)
        s = _mm256_add_ps(s, c[j]);
    *sink = _mm256_cvtss_f32(s);
    return (double)iters * CHAINS * 8 * 2;
}
