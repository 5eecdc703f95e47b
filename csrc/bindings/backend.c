/* backend.c - module functions about the machine and the runtime rather than tensors:
 * CPU ISA level, allocator statistics, CUDA availability, registration of the Python
 * classes the C code instantiates, and test hooks that run one ISA's kernels. */
#include "bindings.h"

#include <pthread.h>

#include "../core/alloc.h"
#include "../core/backend.h"
#include "../shared/mp_cuda_api.h"
#include "../testing/cast_check.h"
#include "../cpu/dispatch.h"
#include "../cpu/gemm.h"
#include "../cpu/parallel.h"

static PyObject *f_get_isa(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    return PyUnicode_FromString(mp_isa_name(mp_cpu()->isa));
}

static PyObject *f_detected_isa(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    return PyUnicode_FromString(mp_isa_name(mp_cpu_detected_isa()));
}

/* Names of every ISA level this CPU can run, lowest first. */
static PyObject *f_supported_isas(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    PyObject *list = PyList_New(0);
    for (int i = 0; list && i < MP_ISA_COUNT; i++) {
        if (!mp_cpu_for_isa((mp_isa)i))
            continue;
        PyObject *name = PyUnicode_FromString(mp_isa_name((mp_isa)i));
        if (!name || PyList_Append(list, name) < 0) {
            Py_XDECREF(name);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(name);
    }
    return list;
}

static PyObject *f_alloc_stats(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    mp_alloc_stats st;
    mp_alloc_get_stats(&st);
    return Py_BuildValue("{s:K,s:K,s:K,s:n,s:n,s:n}", "allocs",
                         (unsigned long long)st.allocs, "cache_hits",
                         (unsigned long long)st.cache_hits, "system_allocs",
                         (unsigned long long)st.system_allocs, "cached_bytes",
                         (Py_ssize_t)st.cached_bytes, "in_use_bytes",
                         (Py_ssize_t)st.in_use_bytes, "peak_in_use_bytes",
                         (Py_ssize_t)st.peak_in_use_bytes);
}

static PyObject *f_alloc_reset_peak(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    mp_alloc_reset_peak();
    Py_RETURN_NONE;
}

int mp_memory_init(void)
{
    /* the GEMM's packing buffers come from the caching allocator, as tensors do */
    mp_gemm_set_allocator(mp_alloc, mp_free);
    return 0;
}

static PyObject *f_empty_cache(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    mp_alloc_empty_cache();
    Py_RETURN_NONE;
}

static PyObject *f_set_cache_limit(PyObject *m, PyObject *arg)
{
    (void)m;
    int64_t bytes;
    if (mp_parse_int64(arg, "set_cache_limit", "bytes", &bytes) < 0)
        return NULL;
    if (bytes < 0) {
        PyErr_SetString(PyExc_ValueError, "cache limit must be >= 0 bytes");
        return NULL;
    }
    mp_alloc_set_cache_limit((size_t)bytes);
    Py_RETURN_NONE;
}

static PyObject *f_cuda_is_built(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    return PyBool_FromLong(mp_cuda_is_built());
}

static PyObject *f_cuda_device_count(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    return PyLong_FromLong(mp_cuda_device_count());
}

/* _cuda_probe(): None when a 16-byte device allocation works, else the mapped exception
 * (test hook for the "CUDA not available" path of both the stub and the real build). */
static PyObject *f_cuda_probe(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    void *p = NULL;
    mp_msg msg;
    mp_status st = mp_cuda_malloc(&p, 16, &msg);
    if (st == MP_OK)
        st = mp_cuda_free(p, &msg);
    if (st != MP_OK)
        return mp_raise(mp_backend_error(st, &msg));
    Py_RETURN_NONE;
}

/* Host src -> device, mp_cuda_cast, device -> host dst; n elements, contiguous. A failure
 * sets the core's error state from the backend's message. */
static mp_status cuda_cast_via_device(const void *src, mp_dtype from, void *dst, mp_dtype to,
                                      size_t n)
{
    void *dsrc = NULL, *ddst = NULL;
    mp_msg msg, ignored;
    mp_status st = mp_cuda_malloc(&dsrc, n * mp_dtype_size(from), &msg);
    if (st == MP_OK)
        st = mp_cuda_malloc(&ddst, n * mp_dtype_size(to), &msg);
    if (st == MP_OK)
        st = mp_cuda_memcpy(dsrc, src, n * mp_dtype_size(from), 0, &msg);
    if (st == MP_OK)
        st = mp_cuda_cast(dsrc, from, ddst, to, n, &msg);
    if (st == MP_OK)   /* synchronous: also surfaces faults of the cast kernel */
        st = mp_cuda_memcpy(dst, ddst, n * mp_dtype_size(to), 1, &msg);
    /* Freed after a failure too; the status returned is still the first failure's. */
    if (ddst)
        mp_cuda_free(ddst, &ignored);
    if (dsrc)
        mp_cuda_free(dsrc, &ignored);
    return st == MP_OK ? MP_OK : mp_backend_error(st, &msg);
}

/* _cuda_cast_roundtrip(src, dtype): converts a contiguous CPU tensor with the CUDA cast
 * kernels and returns the result on the CPU (test hook: compared with the CPU casts). */
static PyObject *f_cuda_cast_roundtrip(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_dtype dt;
    if (nargs != 2 || !mp_is_tensor(s, args[0])) {
        PyErr_SetString(PyExc_TypeError, "_cuda_cast_roundtrip(src, dtype)");
        return NULL;
    }
    if (mp_parse_dtype(s, args[1], MP_DTYPE_FLOAT32, &dt) < 0)
        return NULL;
    mp_tensor *src = MP_T(args[0]), *out;
    if (src->storage->device != MP_DEVICE_CPU || !mp_tensor_is_contiguous(src)) {
        PyErr_SetString(PyExc_ValueError, "_cuda_cast_roundtrip needs a contiguous CPU tensor");
        return NULL;
    }
    mp_status st = mp_tensor_empty(src->shape, src->ndim, dt, MP_DEVICE_CPU, &out);
    if (st != MP_OK)
        return mp_raise(st);
    st = cuda_cast_via_device(mp_tensor_data(src), src->dtype, mp_tensor_data(out), dt,
                              (size_t)mp_tensor_numel(src));
    if (st != MP_OK) {
        mp_tensor_decref(out);
        return mp_raise(st);
    }
    return mp_wrap(s, out);
}

/* _register(tensor_class, size_class, cpu_device): classes defined in Python. */
static PyObject *f_register(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    if (nargs != 3 || !PyType_Check(args[0]) ||
        !PyType_IsSubtype((PyTypeObject *)args[0], s->tensor_base)) {
        PyErr_SetString(PyExc_TypeError, "_register(tensor_class, size_class, cpu_device)");
        return NULL;
    }
    if (!PyType_Check(args[1]) || !PyType_IsSubtype((PyTypeObject *)args[1], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "_register: size_class must be a tuple subclass");
        return NULL;
    }
    Py_SETREF(s->tensor_class, (PyTypeObject *)Py_NewRef(args[0]));
    Py_XSETREF(s->size_class, Py_NewRef(args[1]));
    Py_XSETREF(s->cpu_device, Py_NewRef(args[2]));
    Py_RETURN_NONE;
}

/* _cast_with_isa(isa_name, src, dtype): converts a contiguous float tensor with the kernels
 * of one ISA level (test hook: every level is checked against scalar). */
static PyObject *f_cast_with_isa(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_module(m);
    mp_dtype dt;
    if (nargs != 3 || !PyUnicode_Check(args[0]) || !mp_is_tensor(s, args[1])) {
        PyErr_SetString(PyExc_TypeError, "_cast_with_isa(isa_name, src, dtype)");
        return NULL;
    }
    if (mp_parse_dtype(s, args[2], MP_DTYPE_FLOAT32, &dt) < 0)
        return NULL;
    int isa = mp_isa_from_name(PyUnicode_AsUTF8(args[0]));
    const mp_cpu_kernels *k = isa >= 0 ? mp_cpu_for_isa((mp_isa)isa) : NULL;
    if (!k) {
        PyErr_Format(PyExc_ValueError, "ISA level %R is unknown or not supported by this CPU",
                     args[0]);
        return NULL;
    }
    mp_tensor *src = MP_T(args[1]), *out;
    if (!mp_tensor_is_contiguous(src)) {
        PyErr_SetString(PyExc_ValueError, "_cast_with_isa needs a contiguous tensor");
        return NULL;
    }
    mp_status st = mp_tensor_empty(src->shape, src->ndim, dt, MP_DEVICE_CPU, &out);
    if (st != MP_OK)
        return mp_raise(st);
    size_t n = (size_t)mp_tensor_numel(src);
    void *a = mp_tensor_data(src), *b = mp_tensor_data(out);
    mp_dtype from = src->dtype;
    if (from == MP_DTYPE_FLOAT32 && dt == MP_DTYPE_FLOAT16)
        k->f32_to_f16(a, b, n);
    else if (from == MP_DTYPE_FLOAT32 && dt == MP_DTYPE_BFLOAT16)
        k->f32_to_bf16(a, b, n);
    else if (from == MP_DTYPE_FLOAT16 && dt == MP_DTYPE_FLOAT32)
        k->f16_to_f32(a, b, n);
    else if (from == MP_DTYPE_BFLOAT16 && dt == MP_DTYPE_FLOAT32)
        k->bf16_to_f32(a, b, n);
    else {
        mp_tensor_decref(out);
        PyErr_SetString(PyExc_ValueError, "_cast_with_isa converts between float32 and "
                        "float16/bfloat16 only");
        return NULL;
    }
    return mp_wrap(s, out);
}

/* _check_cast_exhaustive(isa_name, which): runs one ISA level's kernel for `which`
 * ("f32_to_f16", "f16_to_f32", "f32_to_bf16", "bf16_to_f32") on every input bit pattern and
 * compares with scalar. Returns (mismatch_count, first_bad_pattern or None). Takes seconds;
 * the GIL is released meanwhile. */
static PyObject *f_check_cast_exhaustive(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    (void)m;
    if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "_check_cast_exhaustive(isa_name, which)");
        return NULL;
    }
    const char *isa_name = PyUnicode_AsUTF8(args[0]), *which_name = PyUnicode_AsUTF8(args[1]);
    if (!isa_name || !which_name)
        return NULL;
    int isa = mp_isa_from_name(isa_name);
    if (isa < 0 || !mp_cpu_for_isa((mp_isa)isa)) {
        PyErr_Format(PyExc_ValueError, "ISA level %R is unknown or not supported by this CPU",
                     args[0]);
        return NULL;
    }
    int which = mp_cast_kind_from_name(which_name);
    if (which < 0) {
        PyErr_Format(PyExc_ValueError, "unknown conversion %R (expected 'f32_to_f16', "
                     "'f16_to_f32', 'f32_to_bf16' or 'bf16_to_f32')", args[1]);
        return NULL;
    }
    uint64_t bad = 0;
    uint32_t first = 0;
    mp_status st;
    Py_BEGIN_ALLOW_THREADS
    st = mp_cast_check_exhaustive((mp_isa)isa, which, &bad, &first);
    Py_END_ALLOW_THREADS
    if (st == MP_ERR_NOMEM)
        return PyErr_NoMemory();
    if (st != MP_OK) {
        PyErr_SetString(PyExc_RuntimeError, "_check_cast_exhaustive failed");
        return NULL;
    }
    if (bad == 0)
        return Py_BuildValue("(KO)", 0ULL, Py_None);
    return Py_BuildValue("(Kk)", (unsigned long long)bad, (unsigned long)first);
}

static PyObject *f_get_num_threads(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    return PyLong_FromLong(mp_get_num_threads());
}

static PyObject *f_set_num_threads(PyObject *m, PyObject *arg)
{
    (void)m;
    int64_t n;
    if (mp_parse_int64(arg, "set_num_threads", "num", &n) < 0)
        return NULL;
    if (n < 1) {
        PyErr_Format(PyExc_ValueError, "set_num_threads expects a positive integer, got %lld",
                     (long long)n);
        return NULL;
    }
    mp_set_num_threads(n > 1024 ? 1024 : (int)n);
    Py_RETURN_NONE;
}

/* ---- test hook: which threads ran the ranges of one parallel region ---- */

typedef struct {
    int64_t n;
    int64_t covered;            /* items run (atomic): must end equal to n */
    int nested;                 /* each range opens a region of its own inside */
    pthread_t ids[64];
    int nids;                   /* under lock */
    pthread_mutex_t lock;
} probe_ctx;

static void probe_nested(void *p, int64_t b, int64_t e)
{
    (void)p, (void)b, (void)e;
}

static void probe_range(void *p, int64_t b, int64_t e)
{
    probe_ctx *c = p;
    if (c->nested)
        mp_parallel_for(1 << 20, 1, probe_nested, NULL);
    __atomic_add_fetch(&c->covered, e - b, __ATOMIC_RELAXED);
    pthread_t me = pthread_self();
    pthread_mutex_lock(&c->lock);
    int seen = 0;
    for (int i = 0; i < c->nids; i++)
        seen |= pthread_equal(c->ids[i], me);
    if (!seen && c->nids < 64)
        c->ids[c->nids++] = me;
    pthread_mutex_unlock(&c->lock);
}

/* _parallel_probe(n, grain, nested) -> (threads that ran a range, items run, workers) */
static PyObject *f_parallel_probe(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    (void)m;
    int64_t n, grain, nested;
    if (nargs != 3 || mp_parse_int64(args[0], "_parallel_probe", "n", &n) < 0 ||
        mp_parse_int64(args[1], "_parallel_probe", "grain", &grain) < 0 ||
        mp_parse_int64(args[2], "_parallel_probe", "nested", &nested) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "_parallel_probe(n, grain, nested)");
        return NULL;
    }
    probe_ctx c = {.n = n, .nested = (int)nested};
    pthread_mutex_init(&c.lock, NULL);
    Py_BEGIN_ALLOW_THREADS
    mp_parallel_for(n, grain, probe_range, &c);
    Py_END_ALLOW_THREADS
    pthread_mutex_destroy(&c.lock);
    return Py_BuildValue("(iLi)", c.nids, (long long)c.covered, mp_parallel_workers());
}

PyMethodDef mp_misc_functions[] = {
    {"_parallel_probe", (PyCFunction)(void (*)(void))f_parallel_probe, METH_FASTCALL,
     "Test hook: run one parallel region; (threads that ran ranges, items run, workers)"},
    {"get_num_threads", f_get_num_threads, METH_NOARGS,
     "Threads large kernels use (MPAMP_NUM_THREADS / OMP_NUM_THREADS / cores)"},
    {"set_num_threads", f_set_num_threads, METH_O, "Set the threads large kernels use"},
    {"_get_isa", f_get_isa, METH_NOARGS, "ISA level in use"},
    {"_detected_isa", f_detected_isa, METH_NOARGS, "Highest ISA level this CPU supports"},
    {"_supported_isas", f_supported_isas, METH_NOARGS, "All ISA levels this CPU can run"},
    {"_alloc_stats", f_alloc_stats, METH_NOARGS, "Caching allocator counters"},
    {"_alloc_reset_peak", f_alloc_reset_peak, METH_NOARGS,
     "Start a new peak: peak_in_use_bytes = in_use_bytes"},
    {"_empty_cache", f_empty_cache, METH_NOARGS, "Return cached blocks to the system"},
    {"_set_cache_limit", f_set_cache_limit, METH_O, "Max bytes the allocator may cache"},
    {"_cuda_is_built", f_cuda_is_built, METH_NOARGS, "True when built with nvcc"},
    {"_cuda_device_count", f_cuda_device_count, METH_NOARGS, "Usable CUDA devices"},
    {"_cuda_probe", f_cuda_probe, METH_NOARGS,
     "Test hook: allocate 16 bytes on the device; raises when CUDA is not available"},
    {"_cuda_cast_roundtrip", (PyCFunction)(void (*)(void))f_cuda_cast_roundtrip, METH_FASTCALL,
     "Test hook: convert a CPU tensor with the CUDA cast kernels"},
    {"_register", (PyCFunction)(void (*)(void))f_register, METH_FASTCALL,
     "Register the Python Tensor, Size and cpu device objects"},
    {"_cast_with_isa", (PyCFunction)(void (*)(void))f_cast_with_isa, METH_FASTCALL,
     "Test hook: convert with one ISA level's kernels"},
    {"_check_cast_exhaustive", (PyCFunction)(void (*)(void))f_check_cast_exhaustive,
     METH_FASTCALL, "Test hook: one ISA level's cast vs scalar on every input pattern"},
    {NULL, NULL, 0, NULL},
};
