"""The property the mpamp.load fuzz target checks on every input.

An input (the bytes of a would-be checkpoint) must either load, or raise RuntimeError or
pickle.UnpicklingError whose message names the file. Never another type (no SystemError,
KeyError, zlib.error...), never a SystemError hidden in the exception's context chain, and
nothing may execute: no new module import (the canary module in particular), no process,
exec, compile or file open while loading (watched with a PEP 578 audit hook).
"""
import io
import os
import pickle
import sys
import warnings

import mpamp

NAME = "fuzz-input.pth"
EXPECTED = (RuntimeError, pickle.UnpicklingError)
CANARY = "mpamp_fuzz_canary"
# Audit events that mean the loader ran something it should not have.
_FORBIDDEN = ("import", "exec", "compile", "open", "os.system", "os.exec", "os.posix_spawn",
              "os.spawn", "os.fork", "os.startfile", "subprocess.Popen", "ctypes.dlopen",
              "ctypes.call_function", "socket.connect", "shutil.rmtree", "os.remove")


class PropertyViolation(AssertionError):
    """An input made mpamp.load break its contract."""


class _NamedBytes(io.BytesIO):
    name = NAME


class _Watch:
    """Records forbidden audit events while armed (audit hooks can't be removed: one for all)."""

    armed = False
    events = []

    @classmethod
    def hook(cls, event, args):
        if cls.armed and (event in _FORBIDDEN or event.startswith(("os.exec", "os.spawn"))):
            cls.events.append((event, repr(args)[:200]))


_hooked = False


def _install_hook():
    global _hooked
    if not _hooked:
        # Codecs the zip reader and the unpickler look up lazily (fixed names, not the file's):
        # imported now so that their first use does not look like an import from the file.
        for codec in ("cp437", "utf_8", "ascii", "latin_1", "raw_unicode_escape"):
            __import__(f"encodings.{codec}")
        sys.addaudithook(_Watch.hook)
        _hooked = True


def _chain(exc):
    """exc and every exception in its __cause__/__context__ chain."""
    seen = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def load_once(data):
    """mpamp.load(data) under the audit watch: (result or None, exception or None, events)."""
    _install_hook()
    _Watch.events = []
    result = error = None
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        _Watch.armed = True
        try:
            result = mpamp.load(_NamedBytes(data))
        except Exception as exc:     # noqa: BLE001 - classified by check()
            error = exc
        finally:
            _Watch.armed = False
    return result, error, list(_Watch.events)


def check(data):
    """Raise PropertyViolation unless mpamp.load(data) loads or fails cleanly and runs nothing."""
    result, error, events = load_once(data)
    if events:
        raise PropertyViolation(f"loading ran something: {events[:5]}")
    if CANARY in sys.modules or os.environ.get("MPAMP_FUZZ_CANARY"):
        raise PropertyViolation("the canary module was imported or fired")
    if error is None:
        return result
    chain = _chain(error)
    bad = [e for e in chain if isinstance(e, SystemError)]
    if bad:
        raise PropertyViolation(f"SystemError while loading: {bad[0]!r}") from error
    if not isinstance(error, EXPECTED):
        raise PropertyViolation(f"unexpected {type(error).__name__}: {error}") from error
    if NAME not in str(error):
        raise PropertyViolation(f"error does not name the file: {error}") from error
    return None
