/* check_main.c - test-only driver: the AVX-512 cast kernels, built against shim.h on a CPU
 * without AVX-512, compared with the scalar kernels by cast_check.c (every up-cast pattern,
 * every `step`-th chunk of 64Ki fp32 patterns for the down-casts), then on large arrays of
 * random patterns at several offsets, which take the streaming-store path.
 * Usage: check_main STEP. Prints one line per check: "<name> <mismatches> <first_bad>". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testing/cast_check.h"

static const char *const kinds[MP_CAST_KIND_COUNT] = {"f32_to_f16", "f16_to_f32", "f32_to_bf16",
                                                       "bf16_to_f32"};

/* cast_check.c's ISA-level entry point needs the dispatcher, which this build leaves out. */
const mp_cpu_kernels *mp_cpu_for_isa(mp_isa isa)
{
    (void)isa;
    return NULL;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rng_next(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)rng_state;
}

static void convert(const mp_cpu_kernels *k, int which, const void *s, void *d, size_t n)
{
    switch (which) {
    case MP_CAST_F32_TO_F16: k->f32_to_f16(s, d, n); break;
    case MP_CAST_F16_TO_F32: k->f16_to_f32(s, d, n); break;
    case MP_CAST_F32_TO_BF16: k->f32_to_bf16(s, d, n); break;
    default: k->bf16_to_f32(s, d, n); break;
    }
}

/* Arrays whose destination exceeds the streaming threshold, at element offsets 0 and 3. */
static int check_streaming(const mp_cpu_kernels *ref, const mp_cpu_kernels *vec, int which)
{
    size_t n = ((size_t)4 << 20) + 100, es = which == MP_CAST_F32_TO_F16 ||
                                             which == MP_CAST_F32_TO_BF16 ? 4 : 2;
    size_t ds = 6 - es, bytes = (n + 64) * 4;
    uint32_t *src = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
    int bad = 0;
    if (!src || !want || !got) {
        bad = -1;
    } else {
        for (size_t i = 0; i < n + 64; i++)
            src[i] = rng_next();
        for (size_t off = 0; off < 4; off += 3) {
            size_t len = n - off * 7;
            const char *s = (const char *)src + off * es;
            char *g = (char *)got + off * ds;
            convert(ref, which, s, want, len);
            convert(vec, which, s, g, len);
            bad += memcmp(want, g, len * ds) != 0;
        }
    }
    free(src);
    free(want);
    free(got);
    return bad;
}

int main(int argc, char **argv)
{
    uint32_t step = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 1;
    mp_cpu_kernels ref, vec;
    mp_cpu_fill_scalar(&ref);
    mp_cpu_fill_scalar(&vec);
    mp_cpu_fill_avx512(&vec);
    int status = 0;
    for (int w = 0; w < MP_CAST_KIND_COUNT; w++) {
        uint64_t bad = 0;
        uint32_t first = 0;
        if (mp_cast_check_tables(&ref, &vec, w, step, &bad, &first) != MP_OK)
            return 2;
        printf("%s %llu 0x%08x\n", kinds[w], (unsigned long long)bad, bad ? first : 0u);
        int sbad = check_streaming(&ref, &vec, w);
        printf("%s_streaming %d 0x00000000\n", kinds[w], sbad);
        status |= bad != 0 || sbad != 0;
    }
    return status;
}
