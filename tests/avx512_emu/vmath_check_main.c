/* vmath_check_main.c - test-only: the 16-lane vector math (vmath_avx512.c, emulated) against
 * the scalar oracle (vmath_scalar.c), bit for bit: every map on a strided sweep of all 2^32
 * float patterns (argv[1]: the stride) in blocks of odd lengths (so the masked tails run),
 * and max/sum/dot/exp_sum at every length 0..80 and at several offsets, unscale at lengths
 * 0..200 with and without an inf or NaN. Prints "ok" lines and
 * exits 0, or prints the first mismatch and exits 1. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/vmath.h"

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static int same(float a, float b)
{
    return bits_of(a) == bits_of(b);
}

static int same_d(double a, double b)
{
    uint64_t x, y;
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    return x == y || (a != a && b != b);     /* vmath.h: a NaN sum's payload may differ */
}

#define BLOCK 997                         /* odd: each block ends in a masked tail */

int main(int argc, char **argv)
{
    uint64_t stride = argc > 1 ? strtoull(argv[1], NULL, 10) : 4099;
    mp_vmath s, v;
    mp_vmath_fill_scalar(&s);
    mp_vmath_fill_avx512(&v);
    static float x[BLOCK], ys[BLOCK], yv[BLOCK];
    for (int k = 0; k < MP_VM_MAP_COUNT; k++) {
        uint64_t checked = 0;
        for (uint64_t u = 0; u < (1ull << 32);) {
            int n = 0;
            for (; n < BLOCK && u < (1ull << 32); n++, u += stride) {
                uint32_t w = (uint32_t)u;
                memcpy(&x[n], &w, sizeof w);
            }
            s.map[k](x, ys, (size_t)n);
            v.map[k](x, yv, (size_t)n);
            for (int i = 0; i < n; i++)
                if (!same(ys[i], yv[i])) {
                    printf("MISMATCH %s x=0x%08x scalar=0x%08x avx512=0x%08x\n",
                           mp_vm_map_name(k), bits_of(x[i]), bits_of(ys[i]), bits_of(yv[i]));
                    return 1;
                }
            checked += (uint64_t)n;
        }
        printf("ok %s %llu inputs\n", mp_vm_map_name(k), (unsigned long long)checked);
    }
    /* reductions: lengths 0..80 at offsets 0..3, values of mixed sign and scale, some inf */
    static float a[128], b[128];
    uint32_t r = 12345;
    for (int i = 0; i < 128; i++) {
        r = r * 1103515245u + 12345u;
        a[i] = ((float)(r >> 8) / 16777216.0f - 0.5f) * (i % 7 == 0 ? 1e6f : 3.0f);
        r = r * 1103515245u + 12345u;
        b[i] = (float)(r >> 8) / 16777216.0f - 0.25f;
    }
    a[77] = -INFINITY;
    static float c[128];                  /* all negative: a pad of 0 would show in max */
    for (int i = 0; i < 128; i++)
        c[i] = -fabsf(a[i]) - 1.0f;
    for (int var = 0; var < 2; var++)
    for (int off = 0; off < 4; off++)
        for (size_t n = 0; n <= 80; n++) {
            const float *xa = (var ? c : a) + off, *xb = b + off;
            float e1[96], e2[96];
            if (!same(s.max(xa, n), v.max(xa, n)) || !same_d(s.sum(xa, n), v.sum(xa, n)) ||
                !same_d(s.dot(xa, xb, n), v.dot(xa, xb, n))) {
                printf("MISMATCH reductions n=%zu off=%d var=%d\n", n, off, var);
                return 1;
            }
            double q1 = s.exp_sum(xb, 0.3f, e1, n), q2 = v.exp_sum(xb, 0.3f, e2, n);
            if (!same_d(q1, q2) || (n && memcmp(e1, e2, n * sizeof(float)))) {
                printf("MISMATCH exp_sum n=%zu off=%d\n", n, off);
                return 1;
            }
            double d1[96], d2[96];            /* acc: column sums into doubles */
            for (size_t i = 0; i < n; i++)
                d1[i] = d2[i] = (double)xb[i] * 1e3;
            s.acc(d1, xa, n);
            v.acc(d2, xa, n);
            if (n && memcmp(d1, d2, n * sizeof(double))) {
                printf("MISMATCH acc n=%zu off=%d\n", n, off);
                return 1;
            }
            s.acc_mul(d1, xa, xb, n);         /* acc_mul: products summed into them */
            v.acc_mul(d2, xa, xb, n);
            if (n && memcmp(d1, d2, n * sizeof(double))) {
                printf("MISMATCH acc_mul n=%zu off=%d\n", n, off);
                return 1;
            }
            s.colsum(d1, xa, 3, n / 3, n / 3 + off);   /* colsum: 3 rows of n / 3 */
            v.colsum(d2, xa, 3, n / 3, n / 3 + off);
            if (n && memcmp(d1, d2, n * sizeof(double))) {
                printf("MISMATCH colsum n=%zu off=%d\n", n, off);
                return 1;
            }
        }
    {                                     /* colsum past its 64-column blocks */
        static float big[5 * 160];
        static double e1[160], e2[160];
        for (int i = 0; i < 5 * 160; i++)
            big[i] = a[i % 128] * (float)(1 + i % 3);
        for (size_t cols = 0; cols <= 150; cols += 7) {
            for (size_t j = 0; j < cols; j++)
                e1[j] = e2[j] = (double)b[j % 128];
            s.colsum(e1, big + 1, 5, cols, 155);
            v.colsum(e2, big + 1, 5, cols, 155);
            if (cols && memcmp(e1, e2, cols * sizeof(double))) {
                printf("MISMATCH colsum cols=%zu\n", cols);
                return 1;
            }
        }
    }
    {                                     /* unscale: the find and the products, any tail */
        static float u1[200], u2[200];
        const float invs[3] = {1.0f, 0.37f, 3.0e38f};
        for (size_t n = 0; n <= 200; n += 3)
            for (int bad = -1; bad < 3; bad++)
                for (int q = 0; q < 3; q++) {
                    for (size_t i = 0; i < n; i++)
                        u1[i] = u2[i] = a[i % 128] * 0.001f;
                    if (bad >= 0 && n) {      /* inf, -inf or NaN at the start, middle or end */
                        size_t at = bad == 0 ? 0 : bad == 1 ? n / 2 : n - 1;
                        u1[at] = u2[at] = bad == 2 ? NAN : (bad ? -INFINITY : INFINITY);
                    }
                    int want = 0;                     /* (a[77] is -inf too) */
                    for (size_t i = 0; i < n; i++)
                        want |= !isfinite(u1[i]);
                    int f1 = s.unscale(u1, n, invs[q]), f2 = v.unscale(u2, n, invs[q]);
                    if (f1 != f2 || f1 != want ||
                        (n && memcmp(u1, u2, n * sizeof(float)))) {
                        printf("MISMATCH unscale n=%zu bad=%d inv=%g\n", n, bad, invs[q]);
                        return 1;
                    }
                }
    }
    printf("ok reductions\n");
    return 0;
}
