/* cast_avx512_emu.c - test-only: csrc/cpu/cast_avx512.c with the AVX-512 intrinsics emulated
 * (shim.h), so that only this translation unit pays for SIMDe's headers. */
#include "shim.h"

#include "cpu/cast_avx512.c"
