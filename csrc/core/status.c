/* status.c - the thread-local error message behind mp_error(). */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char mp_errbuf[512];

mp_status mp_error(mp_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(mp_errbuf, sizeof mp_errbuf, fmt, ap);
    va_end(ap);
    return st;
}

const char *mp_error_message(void)
{
    return mp_errbuf[0] ? mp_errbuf : "unknown mpamp error";
}

void mp_format_shape(char *buf, size_t cap, const int64_t *shape, int ndim)
{
    size_t n = 0;
    buf[0] = '\0';
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (int i = 0; i < ndim && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}
