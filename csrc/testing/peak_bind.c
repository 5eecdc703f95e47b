/* peak_bind.c - _cpu_peak_gflops: the in-process machine-limit probe of csrc/testing/peak.c, for
 * benchmarks that report a kernel's speed as a fraction of this CPU's peak. Argument checks
 * live here (the cpu layer sets no messages); the probe runs with the GIL released. */
#include "../bindings/bindings.h"

#include <math.h>

#include "peak.h"
#include "../cpu/parallel.h"

#define PEAK_MAX_SECONDS 60

static int parse_threads(PyObject *obj, int *out)
{
    if (obj == Py_None) {
        *out = mp_get_num_threads();
        return 0;
    }
    int64_t n;
    if (mp_parse_int64(obj, "_cpu_peak_gflops", "threads", &n) < 0)
        return -1;
    if (n < 1 || n > MP_PEAK_MAX_THREADS) {
        PyErr_Format(PyExc_ValueError, "_cpu_peak_gflops(): threads must be between 1 and %d, "
                     "got %lld", MP_PEAK_MAX_THREADS, (long long)n);
        return -1;
    }
    *out = (int)n;
    return 0;
}

static int parse_seconds(PyObject *obj, double *out)
{
    if (PyBool_Check(obj) || !(PyFloat_Check(obj) || PyIndex_Check(obj))) {
        PyErr_Format(PyExc_TypeError, "_cpu_peak_gflops(): argument 'seconds' must be a "
                     "number, not %.100s", Py_TYPE(obj)->tp_name);
        return -1;
    }
    double s = PyFloat_AsDouble(obj);
    if (s == -1.0 && PyErr_Occurred())
        return -1;
    if (!(s > 0.0 && s <= PEAK_MAX_SECONDS)) {      /* also rejects NaN */
        PyErr_Format(PyExc_ValueError, "_cpu_peak_gflops(): seconds must be > 0 and <= %d, "
                     "got %R", PEAK_MAX_SECONDS, obj);
        return -1;
    }
    *out = s;
    return 0;
}

/* _cpu_peak_gflops(kind, threads=None, seconds=0.2) -> float | None */
static PyObject *f_cpu_peak_gflops(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    (void)m;
    if (nargs < 1 || nargs > 3 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "_cpu_peak_gflops(kind: str, threads: int | None = "
                        "None, seconds: float = 0.2)");
        return NULL;
    }
    const char *name = PyUnicode_AsUTF8(args[0]);
    if (!name)
        return NULL;
    int kind = mp_peak_kind_from_name(name);
    if (kind < 0) {
        PyErr_Format(PyExc_ValueError, "_cpu_peak_gflops(): unknown kind %R (expected "
                     "'fp32_fma' or 'bf16_dot')", args[0]);
        return NULL;
    }
    int threads;
    double seconds = 0.2, gflops;
    if (parse_threads(nargs > 1 ? args[1] : Py_None, &threads) < 0 ||
        (nargs > 2 && parse_seconds(args[2], &seconds) < 0))
        return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = mp_cpu_peak_gflops((mp_peak_kind)kind, threads, seconds, &gflops);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        PyErr_Format(PyExc_RuntimeError, "_cpu_peak_gflops(): could not start %d threads",
                     threads);
        return NULL;
    }
    if (rc == 0)
        Py_RETURN_NONE;
    return PyFloat_FromDouble(gflops);
}

PyMethodDef mp_peak_functions[] = {
    {"_cpu_peak_gflops", (PyCFunction)(void (*)(void))f_cpu_peak_gflops, METH_FASTCALL,
     "_cpu_peak_gflops(kind, threads=None, seconds=0.2): measured GFLOP/s of 'fp32_fma' or "
     "'bf16_dot'; None when the active ISA level lacks the instruction"},
    {NULL, NULL, 0, NULL},
};
