/* device.cu - device discovery, device memory and host<->device copies behind the C ABI of
 * csrc/shared/mp_cuda_api.h. Owns the mapping of CUDA runtime errors to mp_status; does not own
 * caching (the core's allocator sits above this) nor streams (everything uses the legacy
 * default stream for now). Without a driver or a device every call reports MP_ERR_NO_CUDA. */
#include "cuda_common.cuh"

#include <cstring>

/* Counted once: the first runtime call initialises CUDA, and the answer cannot change for
 * the life of the process (CUDA_VISIBLE_DEVICES is read at initialisation). */
static int query_device_count(void)
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        /* No driver (cudaErrorInsufficientDriver), no device (cudaErrorNoDevice), ...:
         * all mean "nothing usable"; clear the error so later calls start clean. */
        (void)cudaGetLastError();
        return 0;
    }
    return count;
}

mp_status mp_cuda_require_device(mp_msg *msg)
{
    if (mp_cuda_device_count() > 0)
        return MP_OK;
    return mp_cuda_fail(msg, MP_ERR_NO_CUDA, "CUDA not available: no CUDA device was found");
}

mp_status mp_cuda_check(cudaError_t err, const char *what, mp_msg *msg)
{
    if (err == cudaSuccess)
        return MP_OK;
    (void)cudaGetLastError();
    return mp_cuda_fail(msg, MP_ERR_CUDA, "%s: %s", what, cudaGetErrorString(err));
}

int mp_cuda_sm_count(void)
{
    static const int count = [] {
        int dev = 0, n = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
            (void)cudaGetLastError();
            n = 1;
        }
        return n;
    }();
    return count;
}

extern "C" {

int mp_cuda_is_built(void)
{
    return 1;
}

int mp_cuda_device_count(void)
{
    static const int count = query_device_count();   /* C++11: initialised once, safely */
    return count;
}

mp_status mp_cuda_malloc(void **ptr, size_t nbytes, mp_msg *msg)
{
    *ptr = NULL;
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK)
        return st;
    if (nbytes == 0)
        return MP_OK;
    void *p = NULL;
    cudaError_t err = cudaMalloc(&p, nbytes);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return mp_cuda_fail(msg, MP_ERR_CUDA, "cudaMalloc of %zu bytes failed: %s", nbytes,
                            cudaGetErrorString(err));
    }
    *ptr = p;
    return MP_OK;
}

mp_status mp_cuda_free(void *ptr, mp_msg *msg)
{
    if (!ptr)                       /* as free(NULL); also what malloc of 0 bytes returned */
        return MP_OK;
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK)
        return st;
    return mp_cuda_check(cudaFree(ptr), "cudaFree", msg);
}

mp_status mp_cuda_memcpy(void *dst, const void *src, size_t nbytes, int kind, mp_msg *msg)
{
    static const cudaMemcpyKind kinds[3] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                                            cudaMemcpyDeviceToDevice};
    if (kind < 0 || kind > 2)
        return mp_cuda_fail(msg, MP_ERR_VALUE, "mp_cuda_memcpy: kind must be 0 (host to "
                            "device), 1 (device to host) or 2 (device to device), got %d", kind);
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK)
        return st;
    if (nbytes == 0)
        return MP_OK;
    return mp_cuda_check(cudaMemcpy(dst, src, nbytes, kinds[kind]), "cudaMemcpy", msg);
}

mp_status mp_cuda_properties(int index, mp_device_props *out, mp_msg *msg)
{
    memset(out, 0, sizeof *out);
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK)
        return st;
    if (index < 0 || index >= mp_cuda_device_count())
        return mp_cuda_fail(msg, MP_ERR_VALUE, "Invalid device id %d: %d CUDA device(s) "
                            "visible", index, mp_cuda_device_count());
    cudaDeviceProp p;
    if ((st = mp_cuda_check(cudaGetDeviceProperties(&p, index), "cudaGetDeviceProperties",
                            msg)) != MP_OK)
        return st;
    size_t len = strnlen(p.name, sizeof p.name);
    if (len > sizeof out->name - 1)
        len = sizeof out->name - 1;
    memcpy(out->name, p.name, len);     /* memset left the terminator */
    out->major = p.major;
    out->minor = p.minor;
    out->total_memory = p.totalGlobalMem;
    out->multi_processor_count = p.multiProcessorCount;
    return MP_OK;
}

mp_status mp_cuda_synchronize(mp_msg *msg)
{
    mp_status st = mp_cuda_require_device(msg);
    if (st != MP_OK)
        return st;
    return mp_cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (a kernel launched "
                         "earlier failed)", msg);
}

}  /* extern "C" */
