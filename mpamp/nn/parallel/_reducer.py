"""DDP's gradient reducer. Parameters are packed into float32 buckets of about bucket_cap_mb
in reverse registration order (roughly the order backward produces their gradients), and
after the first backward in the order the gradients really became ready (as torch). Each
parameter's post-accumulate-grad hook copies its gradient into its bucket slot; a bucket whose
slots are all filled is all-reduced (averaged) asynchronously on the process group's
communication thread, in bucket order on every rank, while backward goes on (the engine runs
without the GIL). The hook of the last gradient waits for the buckets and writes the averaged
gradients back into .grad (rounding once for float16/bfloat16 parameters). With
find_unused_parameters the forward's graph is walked to mark parameters that will get no
gradient, and a used-mask is all-reduced so a parameter unused on every rank keeps its .grad."""
import time
import weakref

import mpamp
from ...autograd.grad_mode import no_grad
from ... import distributed as dist

__all__ = ["Reducer"]

_PRIOR_NOT_FINISHED = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing "
    "loss. You can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `mpamp.nn.parallel.DistributedDataParallel`, and by \n"
    "making sure all `forward` function outputs participate in calculating loss. \n"
    "If you already have done the above, then the distributed data parallel module wasn't able "
    "to locate the output tensors in the return value of your module's `forward` function.\n"
    "Parameters which did not receive grad for rank {rank}: {names}")


class _Bucket:
    def __init__(self, index, entries, numel):
        self.index = index
        self.entries = entries          # [(param index, offset, numel)]
        self.flat = mpamp.zeros((numel,), dtype=mpamp.float32)
        self.pending = len(entries)
        self.work = None
        self.launched_at = 0.0


def _tensors_in(obj, out):
    if isinstance(obj, mpamp.Tensor):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _tensors_in(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _tensors_in(v, out)
    return out


def reachable_leaves(outputs):
    """data_ptr() of every leaf the outputs' graph reaches (AccumulateGrad nodes)."""
    found, seen, stack = set(), set(), []
    for t in _tensors_in(outputs, []):
        if t.grad_fn is not None:
            stack.append(t.grad_fn)
        elif t.requires_grad:
            found.add(t.data_ptr())
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        if fn.name() == "AccumulateGrad":
            found.add(fn.variable.data_ptr())
            continue
        stack.extend(nxt for nxt, _ in fn.next_functions if nxt is not None)
    return found


class Reducer:
    """Buckets, hooks and the per-backward state of one DistributedDataParallel."""

    def __init__(self, params, names, pg, bucket_cap_bytes, find_unused):
        self._params, self._names, self._pg = params, names, pg
        self._find_unused = find_unused
        self._world = pg.size()
        self._cap = bucket_cap_bytes
        self._assign(list(reversed(range(len(params)))))
        self._order, self._rebuilt = [], False
        self._expect = self._started = False
        self._ready = [False] * len(params)
        self._used = [0] * len(params)
        self._next = 0
        self._t_last_grad = 0.0
        # comm_s: time the buckets' all-reduces ran; hidden_s: the part of it before the last
        # gradient was ready (overlapped with backward); exposed_s: time the last hook waited
        self.stats = {"backwards": 0, "buckets": 0, "comm_s": 0.0, "hidden_s": 0.0,
                      "exposed_s": 0.0, "bytes": 0}
        ref = weakref.ref(self)
        handles = [p.register_post_accumulate_grad_hook(_hook(ref, i))
                   for i, p in enumerate(params)]
        weakref.finalize(self, _remove_all, handles)

    def _assign(self, order):
        """Buckets of about the cap, filled with the parameters in `order`."""
        self._buckets, self._slot = [], {}
        group, size = [], 0
        for i in order:
            nbytes = self._params[i].numel() * 4
            if group and size + nbytes > self._cap:
                self._add_bucket(group)
                group, size = [], 0
            group.append(i)
            size += nbytes
        if group:
            self._add_bucket(group)

    def _rebuild(self):
        """After the first synced backward, as torch: buckets in the order the gradients
        actually became ready (rank 0's order, so every rank builds the same buckets), so
        the first bucket is complete, and launched, as early as possible."""
        order = self._order + [i for i in range(len(self._params)) if i not in self._order]
        box = [order]
        dist.broadcast_object_list(box, src=self._pg._ranks[0], group=self._pg)
        self._rebuilt = True
        if [i for b in self._buckets for i, _, _ in b.entries] != box[0]:
            self._assign(box[0])

    def _add_bucket(self, indices):
        entries, off = [], 0
        for i in indices:
            n = self._params[i].numel()
            entries.append((i, off, n))
            self._slot[i] = (len(self._buckets), off, n)
            off += n
        self._buckets.append(_Bucket(len(self._buckets), entries, off))

    @property
    def bucket_sizes(self):
        """Number of float32 elements per bucket, in launch order."""
        return [b.flat.numel() for b in self._buckets]

    def check_prior_finished(self):
        """torch's error when the previous backward left gradients unreduced."""
        if self._started:
            missing = [self._names[i] for i, r in enumerate(self._ready) if not r]
            raise RuntimeError(_PRIOR_NOT_FINISHED.format(rank=dist.get_rank(),
                                                          names=", ".join(missing)))

    def prepare(self, outputs):
        """Called at the end of a synced forward: expect the hooks of the next backward."""
        self._expect, self._started, self._next = True, False, 0
        self._ready = [False] * len(self._params)
        self._used = [0] * len(self._params)
        for b in self._buckets:
            b.pending, b.work = len(b.entries), None
        if outputs is not None:
            reached = reachable_leaves(outputs)
            for i, p in enumerate(self._params):
                if p.data_ptr() not in reached:
                    self._mark_unused(i)

    def skip(self):
        """A forward without gradient sync (no_sync, no_grad): hooks do nothing."""
        self._expect = False

    def _mark_unused(self, i):
        """No gradient will arrive this backward: the slot holds what .grad already has
        (accumulated under no_sync), or zeros."""
        b, off, n = self._slot[i]
        bucket, p = self._buckets[b], self._params[i]
        with no_grad():
            if p.grad is not None:
                bucket.flat[off:off + n].copy_(p.grad.reshape(-1))
                self._used[i] = 1
            else:
                bucket.flat[off:off + n].zero_()
        self._ready[i] = True
        bucket.pending -= 1

    def on_grad(self, i):
        if not self._expect:
            return
        if self._ready[i]:
            raise RuntimeError(f"Expected to mark a variable ready only once. The parameter "
                               f"{self._names[i]} received its gradient twice in one backward "
                               f"pass (or was marked unused by find_unused_parameters)")
        self._started = True
        if not self._rebuilt:
            self._order.append(i)
        b, off, n = self._slot[i]
        with no_grad():
            self._buckets[b].flat[off:off + n].copy_(self._params[i].grad.reshape(-1))
        self._ready[i], self._used[i] = True, 1
        self._buckets[b].pending -= 1
        if self._buckets[b].pending == 0:
            self._launch_ready()

    def _launch_ready(self):
        while self._next < len(self._buckets) and self._buckets[self._next].pending == 0:
            b = self._buckets[self._next]
            b.launched_at = time.perf_counter()
            b.work = dist.all_reduce(b.flat, op=dist.ReduceOp.AVG, group=self._pg,
                                     async_op=True)
            self._next += 1
        if self._next == len(self._buckets):
            self._finalize()

    def _finalize(self):
        used = None
        if self._find_unused:
            used = mpamp.tensor(self._used, dtype=mpamp.int64)
            used_work = dist.all_reduce(used, op=dist.ReduceOp.MAX, group=self._pg,
                                        async_op=True)
        t0 = self._t_last_grad = time.perf_counter()     # backward's last gradient is ready
        for b in self._buckets:
            b.work.wait()
            start, end = b.work._span
            self.stats["comm_s"] += end - start
            self.stats["hidden_s"] += max(0.0, min(end, t0) - start)
            self._write_back(b, None)
        if used is not None:
            used_work.wait()
            self._write_back_unused(used.tolist())
        self.stats["exposed_s"] += time.perf_counter() - t0
        self.stats["backwards"] += 1
        self.stats["buckets"] += len(self._buckets)
        self.stats["bytes"] += sum(4 * b.flat.numel() for b in self._buckets)
        self._expect = self._started = False
        if not self._rebuilt:
            self._rebuild()

    def _write_back(self, b, only):
        """Averaged gradients into .grad: of the parameters this rank used, or of `only`."""
        with no_grad():
            for i, off, n in b.entries:
                if not (i in only if only is not None else self._used[i]):
                    continue
                p = self._params[i]
                avg = b.flat[off:off + n].view(p.shape)
                if p.grad is None:
                    p.grad = avg.clone() if p.dtype == mpamp.float32 else avg.to(p.dtype)
                else:
                    p.grad.copy_(avg)

    def _write_back_unused(self, used_anywhere):
        """Parameters unused here that another rank used get the average too; those no rank
        used keep their .grad (None), as torch."""
        late = {i for i, u in enumerate(used_anywhere) if u and not self._used[i]}
        if late:
            for b in self._buckets:
                self._write_back(b, late)


def _hook(ref, i):
    def hook(param):
        reducer = ref()
        if reducer is not None:
            reducer.on_grad(i)
    return hook


def _remove_all(handles):
    for h in handles:
        h.remove()
