/* cast_avx512bf16.c - the cast kernels of the AVX512_BF16 level: the AVX-512 ones, on purpose.
 * vcvtneps2bf16 treats fp32 subnormal inputs as zero (it always behaves as if MXCSR.DAZ were
 * set), so using it would need a fix-up for those lanes to match mp_f32_to_bf16, and it would
 * not be faster: a 16-lane integer rounding is a handful of ops per 64 bytes and the casts are
 * memory-bound. The BF16 dot-product instructions are for the GEMM (gemm.c), not for here. */
#include "dispatch.h"

void mp_cpu_fill_avx512bf16(mp_cpu_kernels *k)
{
    mp_cpu_fill_avx512(k);
}
