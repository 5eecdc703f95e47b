"""no_grad / enable_grad / set_grad_enabled: thread-local grad mode, as context managers and
decorators (torch.autograd.grad_mode)."""
import functools
import inspect

from .. import _C


class _GradModeBase:
    """A context manager that is also a decorator (functions and generators)."""

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen_wrapper(*args, **kwargs):
                gen = fn(*args, **kwargs)
                with self.__class__(*self._args()):
                    yield from gen
            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args()):
                return fn(*args, **kwargs)
        return wrapper

    def _args(self):
        return ()

    def clone(self):
        """A fresh instance with the same settings."""
        return self.__class__(*self._args())


class no_grad(_GradModeBase):
    """Disable gradient recording in this thread inside the block."""

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False


class enable_grad(_GradModeBase):
    """Enable gradient recording inside the block (e.g. within no_grad)."""

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(True)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False


class set_grad_enabled(_GradModeBase):
    """Set grad mode: takes effect immediately, and as a context restores the previous mode."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled() expected a bool, got {type(mode).__name__}")
        self._prev = _C.is_grad_enabled()
        self.mode = mode
        _C._set_grad_enabled(mode)

    def _args(self):
        return (self.mode,)

    def __call__(self, fn):
        _C._set_grad_enabled(self._prev)   # used as a decorator: do not change mode now
        return super().__call__(fn)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False


class inference_mode(no_grad):
    """Alias of no_grad (mpamp has no separate inference tensors)."""

    def __init__(self, mode=True):
        self.mode = mode

    def _args(self):
        return (self.mode,)

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(not self.mode and self._prev)


def is_grad_enabled():
    """True unless grad recording is disabled in this thread."""
    return _C.is_grad_enabled()
