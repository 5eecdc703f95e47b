/* copy_bytes.h - a short copy in fixed-size moves the compiler inlines, for rows of a few
 * dozen bytes (GEMM tiles and epilogue rows, the rows of a head transpose), where a libc
 * memcpy call per row cost more than the row. */
#ifndef MP_CPU_COPY_BYTES_H
#define MP_CPU_COPY_BYTES_H

#include <stddef.h>
#include <string.h>

static inline void mp_copy_bytes(void *dst, const void *src, size_t bytes)
{
    char *d = dst;
    const char *s = src;
    for (; bytes >= 32; bytes -= 32, d += 32, s += 32)
        memcpy(d, s, 32);
    if (bytes >= 16)
        memcpy(d, s, 16), bytes -= 16, d += 16, s += 16;
    if (bytes >= 8)
        memcpy(d, s, 8), bytes -= 8, d += 8, s += 8;
    if (bytes >= 4)
        memcpy(d, s, 4), bytes -= 4, d += 4, s += 4;
    if (bytes >= 2)
        memcpy(d, s, 2), bytes -= 2, d += 2, s += 2;
    if (bytes)
        *d = *s;
}

#endif
