/* vmath_avx512_emu.c - test-only: csrc/cpu/vmath_avx512.c with the AVX-512 intrinsics
 * emulated (shim.h). */
#include "shim.h"

#include "cpu/vmath_avx512.c"
