/* reduce_args.h - argument conversion shared by the bindings of the reductions, scans and
 * sorting ops (ops_bind_stats.c): tensors, flags, dtypes and dims (an int or a
 * sequence of ints as a bit mask), with torch's messages, plus the GIL-releasing RUN macro.
 * Every function returns 0, or -1 with a Python exception set. */
#ifndef MP_REDUCE_ARGS_H
#define MP_REDUCE_ARGS_H

#include "bindings.h"

/* st = call, without the GIL when the input is large (core functions never touch Python). */
#define MP_RUN(numel, st, call)                                                              \
    do {                                                                                     \
        if ((numel) >= MP_NOGIL_NUMEL) {                                                     \
            Py_BEGIN_ALLOW_THREADS                                                           \
            st = (call);                                                                     \
            Py_END_ALLOW_THREADS                                                             \
        } else {                                                                             \
            st = (call);                                                                     \
        }                                                                                    \
    } while (0)

int mp_rarg_nargs(Py_ssize_t nargs, Py_ssize_t want, const char *fname);
/* "<fname>(): argument '<arg>' (position <pos>) must be Tensor, not <type>" */
int mp_rarg_tensor(mp_state *s, PyObject *o, const char *fname, const char *arg, int pos,
                   mp_tensor **t);
int mp_rarg_flag(PyObject *o, int *out);
/* None -> -1 (the op's default) */
int mp_rarg_dtype(mp_state *s, PyObject *o, int *out);
int mp_rarg_double(PyObject *o, double *out);
/* dim: an int, or a tuple/list of ints (each wrapped, none repeated) -> bit mask. None and an
 * empty sequence give every dim when none_is_all, else 0 ("not given"). */
int mp_rarg_dim_mask(PyObject *dim, int ndim, const char *fname, int none_is_all,
                     uint32_t *mask);
/* Returns tup = (a, b) (steals both; NULL-safe) or NULL. */
PyObject *mp_rarg_pair(mp_state *s, mp_tensor *a, mp_tensor *b);

#endif
