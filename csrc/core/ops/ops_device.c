/* ops_device.c - moving a tensor to another device (Tensor.to(device), .cuda(), .cpu()) as a
 * differentiable op: backward moves the gradient back to the source's device and dtype
 * (torch's ToCopyBackward0). The copy itself is copy.c's (one contiguous transfer). */
#include "../autograd/autograd.h"
#include "../backend.h"
#include "../copy.h"
#include "ops.h"

static mp_status to_device_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *g = gout[0];
    mp_status st = mp_tensor_empty(g->shape, g->ndim, (mp_dtype)n->iargs[1],
                                   (mp_device)n->iargs[0], &gin[0]);
    if (st == MP_OK && (st = mp_tensor_copy_(gin[0], g)) != MP_OK) {
        mp_tensor_decref(gin[0]);
        gin[0] = NULL;
    }
    return st;
}

mp_status mp_op_to_device(mp_tensor *a, mp_device device, mp_dtype dtype, int copy,
                          mp_tensor **out)
{
    if (a->storage->device == device)
        return mp_op_to_dtype(a, dtype, copy, out);
    mp_status st = mp_tensor_empty(a->shape, a->ndim, dtype, device, out);
    if (st != MP_OK)
        return st;
    if ((st = mp_tensor_copy_(*out, a)) != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
        return st;
    }
    mp_node *node;
    st = mp_autograd_record("ToCopyBackward0", to_device_backward, &a, 1, out, 1, &node);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
        return st;
    }
    if (node) {
        node->iargs[0] = a->storage->device;
        node->iargs[1] = a->dtype;
    }
    return MP_OK;
}
