/* device_bind.c - the device surface of _C: moving tensors between devices (Tensor._to_device)
 * and the queries behind mpamp.cuda (device count, properties, memory counters, the
 * simulator's copy counts). Which backend is "cuda" is the core's choice (core/backend.c). */
#include "bindings.h"

#include "../core/backend.h"
#include "../shared/mp_cuda_api.h"
#include "../core/iter.h"

static const mp_backend *cuda_backend(void)
{
    const mp_backend *b = mp_backend_get(MP_DEVICE_CUDA);
    if (!b)
        mp_raise(MP_ERR_NO_CUDA);
    return b;
}

/* _to_device(device_type: 0 cpu / 1 cuda, dtype=None, copy=False) */
static PyObject *m_to_device(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    mp_state *s = mp_state_of_type(Py_TYPE(self));
    mp_tensor *t = MP_T(self), *out = NULL;
    if (nargs < 1 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "_to_device(device_type, dtype=None, copy=False)");
        return NULL;
    }
    long dev = PyLong_AsLong(args[0]);
    if (dev == -1 && PyErr_Occurred())
        return NULL;
    if (dev != MP_DEVICE_CPU && dev != MP_DEVICE_CUDA) {
        PyErr_Format(PyExc_ValueError, "_to_device: unknown device type %ld", dev);
        return NULL;
    }
    mp_dtype dt = t->dtype;
    if (nargs > 1 && mp_parse_dtype(s, args[1], t->dtype, &dt) < 0)
        return NULL;
    int copy = nargs > 2 ? PyObject_IsTrue(args[2]) : 0;
    if (copy < 0)
        return NULL;
    if (dev == MP_DEVICE_CUDA && !cuda_backend())
        return NULL;
    mp_status st;
    Py_BEGIN_ALLOW_THREADS
    st = mp_op_to_device(t, (mp_device)dev, dt, copy, &out);
    Py_END_ALLOW_THREADS
    if (st != MP_OK)
        return mp_raise(st);
    return mp_wrap(s, out);
}

PyMethodDef mp_device_methods[] = {
    {"_to_device", (PyCFunction)(void (*)(void))m_to_device, METH_FASTCALL,
     "A copy on another device type (0 cpu, 1 cuda), optionally in another dtype"},
    {NULL, NULL, 0, NULL},
};

static PyObject *f_cuda_is_sim(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    return PyBool_FromLong(mp_cuda_sim_enabled());
}

static PyObject *f_cuda_count(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    if (mp_cuda_sim_enabled()) {
        const mp_backend *b = mp_backend_get(MP_DEVICE_CUDA);
        PyErr_Clear();
        return PyLong_FromLong(b ? b->device_count() : 0);
    }
    return PyLong_FromLong(mp_cuda_device_count());
}

/* _cuda_properties(index) -> (name, major, minor, total_memory, multi_processor_count) */
static PyObject *f_cuda_properties(PyObject *m, PyObject *arg)
{
    (void)m;
    long index = PyLong_AsLong(arg);
    if (index == -1 && PyErr_Occurred())
        return NULL;
    const mp_backend *b = cuda_backend();
    if (!b)
        return NULL;
    mp_device_props p;
    mp_msg msg;
    mp_status st = b->properties((int)index, &p, &msg);
    if (st != MP_OK)
        return mp_raise(mp_backend_error(st, &msg));
    return Py_BuildValue("(siini)", p.name, p.major, p.minor,
                         (Py_ssize_t)p.total_memory, p.multi_processor_count);
}

static PyObject *f_cuda_memory_stats(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    const mp_backend *b = cuda_backend();
    if (!b)
        return NULL;
    mp_device_stats d;
    b->stats(&d);
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:K,s:K,s:K,s:K,s:K,s:K}",
                         "allocated_bytes", (Py_ssize_t)d.allocated,
                         "peak_allocated_bytes", (Py_ssize_t)d.peak_allocated,
                         "reserved_bytes", (Py_ssize_t)d.reserved,
                         "peak_reserved_bytes", (Py_ssize_t)d.peak_reserved,
                         "alloc_calls", (unsigned long long)d.alloc_calls,
                         "cache_hits", (unsigned long long)d.cache_hits,
                         "h2d", (unsigned long long)d.h2d, "d2h", (unsigned long long)d.d2h,
                         "d2d", (unsigned long long)d.d2d, "syncs", (unsigned long long)d.syncs);
}

static PyObject *f_cuda_reset_peak(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    const mp_backend *b = cuda_backend();
    if (!b)
        return NULL;
    b->reset_peak();
    Py_RETURN_NONE;
}

static PyObject *f_cuda_empty_cache(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    const mp_backend *b = cuda_backend();
    if (!b)
        return NULL;
    b->empty_cache();
    Py_RETURN_NONE;
}

static PyObject *f_cuda_synchronize(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    const mp_backend *b = cuda_backend();
    if (!b)
        return NULL;
    mp_msg msg;
    mp_status st = b->synchronize(&msg);
    if (st != MP_OK)
        return mp_raise(mp_backend_error(st, &msg));
    Py_RETURN_NONE;
}

/* Test hook: a simulated-GPU copy kernel handed a host buffer as its destination must fail. */
static PyObject *f_sim_kernel_on_host_pointer(PyObject *m, PyObject *unused)
{
    (void)m, (void)unused;
    const mp_backend *b = cuda_backend();
    if (!b)
        return NULL;
    float host[4] = {0};
    mp_tensor *dev = NULL;
    int64_t n = 4;
    mp_status st = mp_tensor_empty(&n, 1, MP_DTYPE_FLOAT32, MP_DEVICE_CUDA, &dev);
    if (st != MP_OK)
        return mp_raise(st);
    mp_iter it;
    mp_iter_init(&it, (mp_tensor *const[]){dev, dev}, 2);
    it.base[0] = (char *)host;
    mp_msg msg;
    st = b->copy(&it, MP_DTYPE_FLOAT32, MP_DTYPE_FLOAT32, &msg);
    mp_tensor_decref(dev);
    if (st != MP_OK)
        return mp_raise(mp_backend_error(st, &msg));
    Py_RETURN_NONE;
}

/* torch.backends.cuda.matmul.allow_tf32: fp32 products on a GPU may use TF32. */
static PyObject *f_cuda_set_allow_tf32(PyObject *m, PyObject *flag)
{
    (void)m;
    int on = PyObject_IsTrue(flag);
    if (on < 0)
        return NULL;
    mp_cuda_allow_tf32 = on;
    Py_RETURN_NONE;
}

PyMethodDef mp_device_functions[] = {
    {"_cuda_set_allow_tf32", f_cuda_set_allow_tf32, METH_O,
     "Let fp32 products on a real GPU use TF32 (mpamp.backends.cuda.matmul.allow_tf32)"},
    {"_sim_kernel_on_host_pointer", f_sim_kernel_on_host_pointer, METH_NOARGS,
     "Test hook: hand a host pointer to a device kernel (fails on the simulated GPU)"},
    {"_cuda_is_sim", f_cuda_is_sim, METH_NOARGS, "True when MPAMP_CUDA_SIM=1 (simulated GPU)"},
    {"_cuda_count", f_cuda_count, METH_NOARGS, "CUDA devices of this process (simulated too)"},
    {"_cuda_properties", f_cuda_properties, METH_O,
     "(name, major, minor, total_memory, multi_processor_count) of a CUDA device"},
    {"_cuda_memory_stats", f_cuda_memory_stats, METH_NOARGS,
     "The CUDA device's allocator and copy counters"},
    {"_cuda_reset_peak", f_cuda_reset_peak, METH_NOARGS, "Start new peaks"},
    {"_cuda_empty_cache", f_cuda_empty_cache, METH_NOARGS, "Release cached device blocks"},
    {"_cuda_synchronize", f_cuda_synchronize, METH_NOARGS, "Wait for the device"},
    {NULL, NULL, 0, NULL},
};
