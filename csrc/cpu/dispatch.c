/* dispatch.c - probes the CPU once and fills one kernel table per supported ISA level.
 * Vector tables start as copies of the scalar one, so a level that has not (yet) got a
 * vector version of some kernel falls back to scalar for it. */
#define _DEFAULT_SOURCE        /* syscall() under -std=c11 */
#include "dispatch.h"

#include "optim_kernels.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

static mp_cpu_kernels mp_tables[MP_ISA_COUNT];
static int mp_supported[MP_ISA_COUNT];
static int mp_filled[MP_ISA_COUNT];     /* levels whose table was filled (usable) */
static mp_isa mp_detected = MP_ISA_SCALAR;
static mp_isa mp_active = MP_ISA_SCALAR;
static pthread_once_t mp_once = PTHREAD_ONCE_INIT;

static const char *const mp_isa_names[MP_ISA_COUNT] = {"scalar", "avx2", "avx512",
                                                        "avx512bf16"};

/* AMX-BF16 tiles usable by this process: the CPU has them, the OS saves their state (XCR0
 * bits 17-18), and Linux granted this process the tile data (arch_prctl
 * ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), which it must ask for before a thread uses them. */
static int amx_usable(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !((d >> 22) & 1) || !((d >> 24) & 1))
        return 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1))        /* OSXSAVE */
        return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    if (((lo >> 17) & 3) != 3)
        return 0;
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0;
#else
    return 0;
#endif
}

static void probe(void)
{
    mp_supported[MP_ISA_SCALAR] = 1;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    mp_supported[MP_ISA_AVX2] = __builtin_cpu_supports("avx2") &&
                                __builtin_cpu_supports("f16c") && __builtin_cpu_supports("fma");
    mp_supported[MP_ISA_AVX512] = mp_supported[MP_ISA_AVX2] &&
                                  __builtin_cpu_supports("avx512f") &&
                                  __builtin_cpu_supports("avx512bw") &&
                                  __builtin_cpu_supports("avx512vl");
    mp_supported[MP_ISA_AVX512BF16] = mp_supported[MP_ISA_AVX512] &&
                                      __builtin_cpu_supports("avx512bf16");
#endif
    for (int i = 0; i < MP_ISA_COUNT; i++)
        if (mp_supported[i])
            mp_detected = (mp_isa)i;
    mp_active = mp_detected;
    const char *forced = getenv("MPAMP_CPU_ISA");
    int want = forced && *forced ? mp_isa_from_name(forced) : -1;
    if (want >= 0 && want < (int)mp_active)
        mp_active = (mp_isa)want;
    /* Only the levels this process may run are filled (and handed out by mp_cpu_for_isa):
     * an ISA file's fill function is compiled for its ISA and may use its instructions
     * itself (gcc stores the pointers with AVX-512 moves), so filling a level the CPU lacks
     * would fault at import; a forced level also keeps the process below it (emulators and
     * valgrind, which lack AVX-512, run mpamp with MPAMP_CPU_ISA=avx2). */
    for (int i = 0; i < MP_ISA_COUNT; i++) {
        mp_filled[i] = i <= (int)mp_active && mp_supported[i];
        mp_cpu_fill_scalar(&mp_tables[i]);
        mp_vmath_fill_scalar(&mp_tables[i].vm);
        mp_tables[i].isa = (mp_isa)i;
        mp_tables[i].gemm_f32 = &mp_gemm_ukr_f32_scalar;
        mp_tables[i].gemm_bf16 = NULL;
        memset(&mp_tables[i].optim, 0, sizeof mp_tables[i].optim);
    }
#if defined(__x86_64__) && defined(__GNUC__)
    if (mp_filled[MP_ISA_AVX2]) {
        mp_cpu_fill_avx2(&mp_tables[MP_ISA_AVX2]);
        /* the vector math: 8 lanes on AVX2, 16 on both AVX-512 levels (the same bits) */
        mp_vmath_fill_avx2(&mp_tables[MP_ISA_AVX2].vm);
    }
    if (mp_filled[MP_ISA_AVX512])
        mp_cpu_fill_avx512(&mp_tables[MP_ISA_AVX512]);
    if (mp_filled[MP_ISA_AVX512BF16])
        mp_cpu_fill_avx512bf16(&mp_tables[MP_ISA_AVX512BF16]);
    for (int i = MP_ISA_AVX512; i < MP_ISA_COUNT; i++)
        if (mp_filled[i])
            mp_vmath_fill_avx512(&mp_tables[i].vm);
    /* GEMM micro-kernels and optimizer spans: each level gets the best one it can run (the
     * AVX2 optimizer spans serve the AVX-512 levels too). bf16 products use vdpbf16ps where
     * it is the faster path: on AMD's AVX512_BF16 (Zen 4, Zen 5) it runs at twice the fp32
     * FMA rate; on Intel's (measured on a Xeon with AMX: 114 against 229 GFLOP/s, one core)
     * at half of it, so there bf16 is widened to fp32 in packing and takes the FMA kernel
     * (1.7x faster). A fixed rule, not a timing, so results do not change from run to run;
     * MPAMP_GEMM_BF16=amx|dot|fp32 overrides it. */
    const char *bf16_env = getenv("MPAMP_GEMM_BF16");
    const mp_gemm_ukr *bf16_ukr = __builtin_cpu_is("intel") ? NULL : &mp_gemm_ukr_bf16_avx512bf16;
    if (bf16_env && strcmp(bf16_env, "dot") == 0)
        bf16_ukr = &mp_gemm_ukr_bf16_avx512bf16;
    else if (bf16_env && strcmp(bf16_env, "fp32") == 0)
        bf16_ukr = NULL;
    /* AMX tiles, where the process may use them, beat both (5-9x on a Xeon); MPAMP_GEMM_BF16
     * =dot or =fp32 still picks the others */
    if (mp_filled[MP_ISA_AVX512BF16] && (!bf16_env || !*bf16_env || !strcmp(bf16_env, "amx")) &&
        amx_usable())
        bf16_ukr = &mp_gemm_ukr_bf16_amx;
    for (int i = MP_ISA_AVX2; i < MP_ISA_COUNT; i++) {
        if (!mp_filled[i])
            continue;
        mp_cpu_kernels *k = &mp_tables[i];
        k->gemm_f32 = i >= MP_ISA_AVX512 ? &mp_gemm_ukr_f32_avx512 : &mp_gemm_ukr_f32_avx2;
        k->gemm_bf16 = i >= MP_ISA_AVX512BF16 ? bf16_ukr : NULL;
        k->optim.adam = mp_adam_span_avx2;
        k->optim.rmsprop = mp_rmsprop_span_avx2;
        k->optim.adagrad = mp_adagrad_span_avx2;
        k->optim.adadelta = mp_adadelta_span_avx2;
    }
#endif
}

const mp_cpu_kernels *mp_cpu(void)
{
    pthread_once(&mp_once, probe);
    return &mp_tables[mp_active];
}

const mp_cpu_kernels *mp_cpu_for_isa(mp_isa isa)
{
    pthread_once(&mp_once, probe);
    if ((int)isa < 0 || isa >= MP_ISA_COUNT || !mp_filled[isa])
        return NULL;
    return &mp_tables[isa];
}

mp_isa mp_cpu_detected_isa(void)
{
    pthread_once(&mp_once, probe);
    return mp_detected;
}

const char *mp_isa_name(mp_isa isa)
{
    return (int)isa >= 0 && isa < MP_ISA_COUNT ? mp_isa_names[isa] : "unknown";
}

int mp_isa_from_name(const char *name)
{
    for (int i = 0; i < MP_ISA_COUNT; i++)
        if (strcmp(name, mp_isa_names[i]) == 0)
            return i;
    return -1;
}
