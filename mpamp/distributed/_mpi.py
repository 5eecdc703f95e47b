"""The MPI engine under mpamp.distributed: collectives on CPU tensors through mpi4py on one
communicator. float32, int64, uint8 and bool tensors travel zero-copy through the buffer
protocol (MPI_FLOAT, MPI_INT64_T, MPI_UINT8_T, MPI_C_BOOL; uint8 sums and products go through
int64, see _WRAPPING). float16 and bfloat16 are reduced
in a float32 copy (MPI has no portable type for them, and reducing their bit patterns as
integers would be wrong) and rounded back once. Moves without arithmetic (broadcast,
all_gather) send bytes, so every dtype arrives bit for bit. Non-contiguous tensors go through
a contiguous copy. These methods run on the group's communication thread; the arguments were
checked on the caller's thread (distributed_c10d.py). A CUDA backend (NCCL) would offer the
same methods for CUDA tensors; the process group picks the backend by the tensors' device."""
import numpy as np

import mpamp
from ..autograd.grad_mode import no_grad
from ._reduce_op import RedOpType

_LOW_PRECISION = (mpamp.float16, mpamp.bfloat16)
# Open MPI 5's AVX reduction component (op/avx) adds 8- and 16-bit integers with saturating
# instructions on full vector chunks (200 + 200 gives 255, not 144), so uint8 sums and products
# travel as int64 and wrap modulo 256 when copied back, as torch's uint8 arithmetic does.
_WRAPPING = (RedOpType.SUM, RedOpType.PRODUCT)


def _work_dtype(dtype, op):
    if dtype in _LOW_PRECISION:
        return mpamp.float32
    if dtype == mpamp.uint8 and op in _WRAPPING:
        return mpamp.int64
    return dtype


def _staged(t, op, copy_in=True):
    """(w, staged): t itself when MPI can reduce it as is, else a contiguous copy in the dtype
    MPI reduces (float32 for float16/bfloat16, int64 for uint8 sums), filled from t only
    when copy_in."""
    dtype = _work_dtype(t.dtype, op)
    if dtype == t.dtype and t.is_contiguous():
        return t, False
    if not copy_in:
        return mpamp.empty(t.shape, dtype=dtype), True
    return (t.to(dtype) if dtype != t.dtype else t).contiguous(), True


def _contiguous(t):
    return t if t.is_contiguous() else t.contiguous()


class MPIBackend:
    """Collectives of one MPI communicator (a duplicate, so user MPI traffic cannot mix)."""

    name = "mpi"

    def __init__(self, comm):
        from mpi4py import MPI
        self.MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self._types = {mpamp.float32: MPI.FLOAT, mpamp.int64: MPI.INT64_T,
                       mpamp.uint8: MPI.UINT8_T, mpamp.bool: MPI.C_BOOL}
        ops = {RedOpType.SUM: MPI.SUM, RedOpType.AVG: MPI.SUM, RedOpType.PRODUCT: MPI.PROD,
               RedOpType.MIN: MPI.MIN, RedOpType.MAX: MPI.MAX, RedOpType.BAND: MPI.BAND,
               RedOpType.BOR: MPI.BOR, RedOpType.BXOR: MPI.BXOR}
        # MPI defines no arithmetic on C_BOOL: any-true for SUM/MAX/BOR, all-true for
        # PRODUCT/MIN/BAND (torch's results), exclusive or for BXOR
        bool_ops = {RedOpType.SUM: MPI.LOR, RedOpType.MAX: MPI.LOR, RedOpType.BOR: MPI.LOR,
                    RedOpType.PRODUCT: MPI.LAND, RedOpType.MIN: MPI.LAND,
                    RedOpType.BAND: MPI.LAND, RedOpType.BXOR: MPI.LXOR}
        self._ops, self._bool_ops = ops, bool_ops

    def _typed(self, t):
        return [t, self._types[t.dtype]]

    def _bytes(self, t):
        return [t, self.MPI.BYTE]

    def _op(self, op, dtype):
        return (self._bool_ops if dtype == mpamp.bool else self._ops)[op]

    def _finish(self, t, w, staged, op):
        """AVG's division (in float32 for 16-bit dtypes; w is float32 then) and the copy back
        into t. The division runs in place through NumPy on w's memory: an in-place mpamp op
        would compute into a fresh buffer and copy (for DDP's 16 MB buckets, 10x slower)."""
        if op is RedOpType.AVG and w.numel():
            flat = np.frombuffer(memoryview(w), dtype=np.float32)
            np.divide(flat, np.float32(self.size), out=flat)
        if staged:
            t.copy_(w)

    def all_reduce(self, t, op):
        with no_grad():
            w, staged = _staged(t, op)
            self.comm.Allreduce(self.MPI.IN_PLACE, self._typed(w), op=self._op(op, t.dtype))
            self._finish(t, w, staged, op)

    def reduce(self, t, root, op):
        with no_grad():
            w, staged = _staged(t, op)
            mop = self._op(op, t.dtype)
            if self.rank == root:
                self.comm.Reduce(self.MPI.IN_PLACE, self._typed(w), op=mop, root=root)
                self._finish(t, w, staged, op)
            else:
                self.comm.Reduce(self._typed(w), None, op=mop, root=root)

    def broadcast(self, t, root):
        with no_grad():
            w = _contiguous(t)
            self.comm.Bcast(self._bytes(w), root=root)
            if w is not t and self.rank != root:
                t.copy_(w)

    def all_gather_into_tensor(self, out, inp):
        with no_grad():
            src = _contiguous(inp)
            dst = out if out.is_contiguous() else mpamp.empty(out.shape, dtype=out.dtype)
            self.comm.Allgather(self._bytes(src), self._bytes(dst))
            if dst is not out:
                out.copy_(dst)

    def all_gather(self, outs, inp):
        with no_grad():
            n = inp.numel()
            flat = mpamp.empty((self.size * n,), dtype=inp.dtype)
            self.comm.Allgather(self._bytes(_contiguous(inp)), self._bytes(flat))
            for i, o in enumerate(outs):
                o.copy_(flat[i * n:(i + 1) * n].reshape(o.shape))

    def reduce_scatter_tensor(self, out, inp, op):
        with no_grad():
            src, _ = _staged(inp, op)
            dst, staged = _staged(out, op, copy_in=False)
            self.comm.Reduce_scatter_block(self._typed(src), self._typed(dst),
                                           op=self._op(op, out.dtype))
            self._finish(out, dst, staged, op)

    def reduce_scatter(self, out, inputs, op):
        with no_grad():
            flat = mpamp.cat([x.reshape(-1) for x in inputs]) if inputs[0].numel() else \
                mpamp.empty((0,), dtype=out.dtype)
        self.reduce_scatter_tensor(out, flat, op)

    def barrier(self):
        self.comm.Barrier()

    def all_gather_object(self, obj):
        return self.comm.allgather(obj)

    def broadcast_object(self, obj, root):
        return self.comm.bcast(obj, root=root)

    def split(self, ranks):
        """A backend over `ranks` (ranks of this communicator); None on the others.
        Collective over this communicator."""
        group = self.comm.Get_group()
        sub = group.Incl(list(ranks))
        comm = self.comm.Create(sub)
        sub.Free()
        group.Free()
        return None if comm == self.MPI.COMM_NULL else MPIBackend(comm)

    def free(self):
        if self.comm != self.MPI.COMM_NULL:
            self.comm.Free()
