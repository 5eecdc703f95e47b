/* gemm_avx512_emu.c - test-only: csrc/cpu/gemm_avx512.c (the fp32 micro-kernel) with the
 * AVX-512 intrinsics emulated (shim.h). One translation unit per kernel file: both define a
 * static kernel_12x32 and the same macros. */
#include "shim.h"

#include "cpu/gemm_avx512.c"
