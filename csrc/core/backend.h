/* backend.h - the core's side of the seam to devices: which backend runs a tensor, launching
 * kernels over tensors, device checks. The ABI itself (the struct of function pointers, the
 * kernel descriptors, iterator metadata) is csrc/shared/mp_backend.h, so backends include no
 * core header. The CPU's backend is filled in backend.c from the CPU kernels, the simulated
 * GPU's by sim/ (MPAMP_CUDA_SIM=1), the real GPU's in backend_gpu.c over cuda/'s
 * mp_cuda_api.h. Backends report failures as a status plus a caller-provided mp_msg.
 * An op whose kernels do not go through this table yet refuses device tensors at its entry
 * (mp_require_host), so no host code ever dereferences device memory. */
#ifndef MP_BACKEND_H
#define MP_BACKEND_H

#include "../shared/mp_backend.h"
#include "elementwise.h"
#include "iter.h"
#include "tensor.h"

/* Runs k on the backend of device dev (the core's error state set on failure). */
mp_status mp_launch(mp_device dev, const mp_buf_kernel *k);
mp_status mp_launch_iter(mp_device dev, const mp_iter_kernel *k);
/* The bytes [lo, hi) around t's data pointer that t's elements occupy (strides of any sign;
 * an empty tensor gives [0, 0)). */
void mp_tensor_byte_extent(const mp_tensor *t, int64_t *lo, int64_t *hi);
/* A buffer kernel over n tensors (NULL entries allowed: absent buffers), each buffer its
 * tensor's data pointer with the extent of its elements. */
mp_status mp_launch_tensors(mp_device dev, mp_kernel_id id, int n, mp_tensor *const *ts,
                            mp_status (*run)(void *const *ptr, const void *args, mp_msg *msg),
                            const void *args);
/* An iterator kernel over tensors: ops[0] the output, whose device runs it; a host scalar input
 * (a 0-d CPU tensor or a Python number, broadcast) is moved there first, any other operand
 * elsewhere is torch's mixed-device error. elementwise.c. */
mp_status mp_run_iter(mp_kernel_id id, mp_tensor *const *ops, int n, mp_iter_fn fn, void *ctx,
                      int64_t grain);
/* The usual launch of a kernel over n buffers with extents [0, nbytes[i]) each. */
mp_status mp_launch_bufs(mp_device dev, mp_kernel_id id, int n, void *const *ptr,
                         const int64_t *nbytes,
                         mp_status (*run)(void *const *ptr, const void *args, mp_msg *msg),
                         const void *args);

/* The CPU kernels behind the CPU backend's map, copy and fill (elementwise.c, copy.c). */
mp_status mp_cpu_map_kernel(const mp_map_kernel *k, mp_msg *msg);
mp_status mp_cpu_copy_kernel(const mp_iter *it, mp_dtype dst, mp_dtype src, mp_msg *msg);
mp_status mp_cpu_fill_kernel(const mp_iter *it, mp_dtype dt, const void *pattern, mp_msg *msg);

/* The backend for device type d, or NULL (with an MP_ERR_NO_CUDA message) when there is no
 * such device in this process: MPAMP_CUDA_SIM=1 selects the simulated GPU, otherwise a real
 * one when built and present. */
const mp_backend *mp_backend_get(mp_device d);
/* The backend that owns a storage's or tensor t's memory (never NULL when it exists). */
const mp_backend *mp_backend_of_storage(const mp_storage *s);
const mp_backend *mp_backend_of(const mp_tensor *t);
/* The real GPU's table (backend_gpu.c); mp_cuda_allow_tf32 its TF32 switch. */
const mp_backend *mp_backend_gpu(void);
/* What the real GPU's table runs; mp_backend_sim_as_gpu: the simulator refusing the rest
 * with the real table's message (MPAMP_SIM_AS_GPU=1), to list what a real GPU still lacks;
 * log_only (=2): name each missing kernel on stderr and run it anyway. */
int mp_gpu_has_kernel(mp_kernel_id id);
int mp_gpu_has_map(const mp_map_kernel *k);
int mp_gpu_has_iter(mp_kernel_id id);
const mp_backend *mp_backend_sim_as_gpu(const mp_backend *sim, int log_only);
extern int mp_cuda_allow_tf32;
/* 1 when the simulated GPU is the CUDA device of this process. */
int mp_cuda_sim_enabled(void);

/* Copies a backend's message into the core's error state and returns st. */
mp_status mp_backend_error(mp_status st, const mp_msg *msg);

/* "Expected all tensors to be on the same device, ..." unless every tensor given is on
 * `dev` (NULL entries and 0-d CPU tensors excepted when allow_cpu_scalars, as torch). */
mp_status mp_check_same_device(mp_tensor *const *ts, int n, mp_device dev,
                               int allow_cpu_scalars);

/* The guard at the entry of an op whose kernels are host code: fails with torch's
 * NotImplementedError wording ("Could not run '<op>' with arguments from the 'CUDA'
 * backend") when any of the n tensors (NULL allowed) is not on the CPU. */
mp_status mp_require_host_(const char *op, const mp_tensor *const *ts, int n);
#define mp_require_host(op, ...)                                                          \
    mp_require_host_(op, (const mp_tensor *const[]){__VA_ARGS__},                        \
                     (int)(sizeof((const mp_tensor *const[]){__VA_ARGS__}) / sizeof(mp_tensor *)))
/* Returns the guard's failure from the enclosing function (an mp_status one). */
#define MP_HOST_ONLY(op, ...)                                                             \
    do {                                                                                  \
        const mp_tensor *const mp_ho_[] = {__VA_ARGS__};                                        \
        if (!mp_all_host(mp_ho_, (int)(sizeof mp_ho_ / sizeof mp_ho_[0])))                \
            return mp_require_host_(op, mp_ho_, (int)(sizeof mp_ho_ / sizeof mp_ho_[0])); \
    } while (0)
/* True when every given tensor is on the CPU (the fast check before mp_require_host_). */
static inline int mp_all_host(const mp_tensor *const *ts, int n)
{
    for (int i = 0; i < n; i++)
        if (ts[i] && ts[i]->storage->device != MP_DEVICE_CPU)
            return 0;
    return 1;
}

/* CUDA when any of the n tensors (NULL allowed) is not on the CPU, else the CPU: where an op's
 * result goes (mp_map then checks that the operands agree, host scalars excepted). */
static inline mp_device mp_any_device(mp_tensor *const *ts, int n)
{
    for (int i = 0; i < n; i++)
        if (ts[i] && ts[i]->storage->device != MP_DEVICE_CPU)
            return ts[i]->storage->device;
    return MP_DEVICE_CPU;
}

/* Device-aware copies (copy.c uses these for every cross-device copy_). */
mp_status mp_backend_copy_bytes(mp_device dst_dev, void *dst, mp_device src_dev,
                                const void *src, size_t nbytes);

/* Name of a kernel id for messages ("gemm", ...). */
const char *mp_kernel_name(mp_kernel_id id);

#endif
