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
