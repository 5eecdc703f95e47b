/* gemm_pack_avx512_emu.c - test-only: csrc/cpu/gemm_pack_avx512.c (bf16-pair panel packing)
 * with the AVX-512 intrinsics emulated (shim.h), for the emulated bf16 kernel's driver. */
#include "shim.h"

#include "cpu/gemm_pack_avx512.c"
