/* peak_avx512bf16.c - the bf16 dot-product peak loop (this file gets -mavx512bf16). 24
 * independent zmm chains of vdpbf16ps (latency ~6, 2 per cycle on Zen 4/5 needs >= 12). Each
 * instruction adds 16 lanes x 2 bf16 products: 64 flops. The pairs are (1, -1) . (0.5, 0.5),
 * so every step adds exactly 0: the accumulators never drift, whatever the run length. */
#include <immintrin.h>

#include "peak.h"

#define CHAINS 24
#define BF16_PAIR(lo, hi) ((int)(((unsigned)(hi) << 16) | (unsigned)(lo)))

double mp_peak_dot_avx512bf16(int64_t iters, float *sink)
{
    /* bf16 bit patterns: 1.0 = 0x3F80, -1.0 = 0xBF80, 0.5 = 0x3F00 */
    const __m512bh x = (__m512bh)_mm512_set1_epi32(BF16_PAIR(0x3F80, 0xBF80));
    const __m512bh y = (__m512bh)_mm512_set1_epi32(BF16_PAIR(0x3F00, 0x3F00));
    __m512 c[CHAINS];
    for (int j = 0; j < CHAINS; j++)
        c[j] = _mm512_set1_ps(1.0f + (float)j);
    for (int64_t i = 0; i < iters; i++) {
#pragma GCC unroll 24
        for (int j = 0; j < CHAINS; j++)
            c[j] = _mm512_dpbf16_ps(c[j], x, y);
    }
    __m512 s = c[0];
    for (int j = 1; j < CHAINS; j++)
        s = _mm512_add_ps(s, c[j]);
    *sink = _mm512_reduce_add_ps(s);
    return (double)iters * CHAINS * 16 * 2 * 2;
}
