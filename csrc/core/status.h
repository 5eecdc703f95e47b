/* status.h - error reporting for the core: a status code plus a thread-local message.
 * The core never prints or exits; it sets a message and returns the status, and the
 * bindings turn both into a Python exception. */
#ifndef MP_STATUS_H
#define MP_STATUS_H

#include "../shared/mp_defs.h"

#if defined(__GNUC__)
#define MP_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define MP_PRINTF(a, b)
#endif

#ifdef __cplusplus
extern "C" {   /* the .cu files (C++) call mp_error, which status.c defines in C */
#endif

/* Records `fmt` as the current thread's error message and returns `st`. */
mp_status mp_error(mp_status st, const char *fmt, ...) MP_PRINTF(2, 3);
const char *mp_error_message(void);

/* Formats a shape as "[2, 3]" into buf (always NUL-terminated). */
void mp_format_shape(char *buf, size_t cap, const int64_t *shape, int ndim);

#ifdef __cplusplus
}
#endif

#endif
