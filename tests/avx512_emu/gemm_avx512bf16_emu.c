/* gemm_avx512bf16_emu.c - test-only: csrc/cpu/gemm_avx512bf16.c (the bf16-pair micro-kernel)
 * with the AVX-512 intrinsics emulated, vdpbf16ps as the SDM specifies it (shim.h). */
#include "shim.h"

#include "cpu/gemm_avx512bf16.c"

/* One multiply-add step of the emulated vdpbf16ps, for gemm_check_main.c to compare with the
 * host's own FMA under MXCSR.DAZ|FTZ (x86's flushing rules, on real hardware). */
float mp_emu_fma_daz_ftz(float a, float b, float c);

float mp_emu_fma_daz_ftz(float a, float b, float c)
{
    return emu_fma_daz_ftz(a, b, c);
}
