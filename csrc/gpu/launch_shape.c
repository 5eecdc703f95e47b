/* launch_shape.c - grid sizes and vector widths of the GPU backend's grid-stride kernels
 * (mp_gpu_plan.h). Plain C: cuda/ calls it before each launch, tests call it through
 * mpamp._C._gpu_plan_* hooks. */
#include "../shared/mp_gpu_plan.h"

#include <stdint.h>

int mp_gpu_vector_width(const void *const *ptrs, const size_t *itemsize, int n_ptr)
{
    size_t widest = 1;
    for (int i = 0; i < n_ptr; i++) {
        if (((uintptr_t)ptrs[i] & 15u) != 0 || itemsize[i] == 0 || 16 % itemsize[i] != 0)
            return 1;
        if (itemsize[i] > widest)
            widest = itemsize[i];
    }
    return n_ptr > 0 ? (int)(16 / widest) : 1;
}

mp_gpu_launch mp_gpu_launch_shape(int64_t n, int vec, int sm_count)
{
    mp_gpu_launch l = {1, MP_GPU_THREADS, vec > 0 ? vec : 1};
    if (sm_count < 1)
        sm_count = 1;
    int64_t per_block = (int64_t)MP_GPU_THREADS * l.vec;
    int64_t need = n > 0 ? (n + per_block - 1) / per_block : 1;
    int64_t cap = (int64_t)sm_count * MP_GPU_BLOCKS_PER_SM;
    l.blocks = (unsigned)(need < cap ? need : cap);
    return l;
}
