/* peak.h - the machine's arithmetic limits, measured in-process, so benchmarks can report a
 * kernel's speed as a fraction of what this CPU (at the active ISA level) sustains right now.
 * Each probe runs many independent multiply-add chains on every thread for a fixed time; it
 * allocates nothing and touches no memory beyond registers. Not a kernel the ops use. */
#ifndef MP_CPU_PEAK_H
#define MP_CPU_PEAK_H

#include <stdint.h>

typedef enum {
    MP_PEAK_FP32_FMA = 0,   /* fp32 FMA: 2 flops per lane; zmm with AVX-512, else ymm */
    MP_PEAK_BF16_DOT = 1,   /* vdpbf16ps: 2 flops per bf16 pair product-add (64 per zmm) */
    MP_PEAK_KIND_COUNT = 2
} mp_peak_kind;

#define MP_PEAK_MAX_THREADS 256

/* Parses "fp32_fma" / "bf16_dot"; -1 when unknown. */
int mp_peak_kind_from_name(const char *name);

/* Sustained GFLOP/s of `kind` on `threads` threads (1..MP_PEAK_MAX_THREADS) for about
 * `seconds` (> 0): flops of all threads / wall time from a common start to the last finish.
 * Returns 1 with *gflops set; 0 when the active ISA level (mp_cpu()->isa) has no instruction
 * for `kind` (fp32_fma needs avx2, bf16_dot avx512bf16); -1 when a thread cannot start. */
int mp_cpu_peak_gflops(mp_peak_kind kind, int threads, double seconds, double *gflops);

/* ISA loops (peak_<isa>.c, x86-64 only): `iters` rounds over independent accumulator
 * chains; return the flops done and store a value derived from every chain in *sink so that
 * no chain can be optimised away. */
double mp_peak_fma_avx2(int64_t iters, float *sink);
double mp_peak_fma_avx512(int64_t iters, float *sink);
double mp_peak_dot_avx512bf16(int64_t iters, float *sink);

#endif
