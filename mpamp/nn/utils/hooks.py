"""RemovableHandle: what register_*_hook returns (torch.utils.hooks.RemovableHandle)."""
import itertools


class RemovableHandle:
    """Returned by register_*_hook: remove() unregisters the hook (also a context manager)."""

    _ids = itertools.count()

    def __init__(self, *hooks_dicts):
        self.hooks_dicts = hooks_dicts
        self.id = next(RemovableHandle._ids)

    def remove(self):
        """Unregister the hook."""
        for d in self.hooks_dicts:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _CHookHandle(RemovableHandle):
    """The handle of a tensor hook: the hook lives in the C autograd core."""

    def __init__(self, capsule):
        super().__init__()
        self._capsule = capsule

    def remove(self):
        """Unregister the hook (idempotent)."""
        from ... import _C
        _C._remove_hook(self._capsule)
