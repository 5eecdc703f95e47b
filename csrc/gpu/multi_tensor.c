/* multi_tensor.c - the chunking of multi-tensor launches (mp_gpu_plan.h): which tensor and
 * chunk each block of each launch owns. Plain C shared by cuda/'s unscale and optimizer
 * launchers and the simulated GPU, which runs the CPU kernels block by block over the same
 * plan (so a chunk the plan dropped or repeated fails the device tests). */
#include "../shared/mp_gpu_plan.h"

#include <string.h>

int mp_mt_max_tensors(int depth)
{
    /* torch's depth_to_max_tensors, then what keeps `depth` address lists, the numels,
     * one extra per-tensor word (from depth 2: the optimizers' Philox offsets) and the
     * block tables under 4 KiB (tests/test_gpu_plan.py adds it up) */
    static const int max[MP_MT_MAX_DEPTH] = {110, 64, 48, 36, 30, 24, 20};
    return depth >= 1 && depth <= MP_MT_MAX_DEPTH ? max[depth - 1] : 0;
}

int mp_mt_next(const int64_t *numel, int n, int depth, mp_mt_cursor *cur, mp_mt_launch *out)
{
    int cap = mp_mt_max_tensors(depth);
    out->ntensors = 0;
    out->nblocks = 0;
    while (cur->t < n && out->nblocks < MP_MT_MAX_BLOCKS && cap > 0) {
        int64_t chunks = (numel[cur->t] + MP_MT_CHUNK - 1) / MP_MT_CHUNK;
        if (numel[cur->t] <= 0 || cur->chunk >= chunks) {
            cur->t++;
            cur->chunk = 0;
            continue;
        }
        if (out->ntensors == cap)
            break;
        int slot = out->ntensors++;
        out->tensor[slot] = cur->t;
        while (cur->chunk < chunks && out->nblocks < MP_MT_MAX_BLOCKS) {
            out->block_tensor[out->nblocks] = (unsigned char)slot;
            out->block_chunk[out->nblocks] = (int)cur->chunk;
            out->nblocks++;
            cur->chunk++;
        }
        if (cur->chunk == chunks) {
            cur->t++;
            cur->chunk = 0;
        }
    }
    return out->nblocks > 0;
}

void mp_mt_block_range(const mp_mt_launch *l, const int64_t *numel, int b, int64_t *begin,
                       int64_t *end)
{
    int64_t total = numel[l->tensor[l->block_tensor[b]]];
    int64_t s = (int64_t)l->block_chunk[b] * MP_MT_CHUNK;
    *begin = s;
    *end = total - s < MP_MT_CHUNK ? total : s + MP_MT_CHUNK;
}
