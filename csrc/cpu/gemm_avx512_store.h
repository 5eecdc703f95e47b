/* gemm_avx512_store.h - the tile store shared by the AVX-512 micro-kernels (gemm_avx512.c,
 * gemm_avx512bf16.c): row r of a 32-wide fp32 tile held in two zmm accumulators c<r>a, c<r>b
 * goes to c + r * ldc, stored or (when `accumulate`) added to what is there. */
#ifndef MP_CPU_GEMM_AVX512_STORE_H
#define MP_CPU_GEMM_AVX512_STORE_H

#define ROW_STORE(r)                                                                         \
    do {                                                                                     \
        float *cr = c + (r) * ldc;                                                           \
        if (accumulate) {                                                                    \
            c##r##a = _mm512_add_ps(_mm512_loadu_ps(cr), c##r##a);                           \
            c##r##b = _mm512_add_ps(_mm512_loadu_ps(cr + 16), c##r##b);                      \
        }                                                                                    \
        _mm512_storeu_ps(cr, c##r##a);                                                       \
        _mm512_storeu_ps(cr + 16, c##r##b);                                                  \
    } while (0)

#endif
