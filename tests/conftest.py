"""Shared pytest setup: tests marked `cuda` need a device and are skipped without one."""
import pytest

import mpamp


def pytest_collection_modifyitems(config, items):
    if mpamp.cuda.is_available():
        return
    reason = ("needs a CUDA device (mpamp.cuda.is_available() is False; built with CUDA: "
              f"{mpamp.cuda.is_built()})")
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)
