"""mpamp.nn: Module, Parameter, layers, functional, init and utils, as torch.nn."""
from .parameter import Parameter
from .modules import *  # noqa: F401,F403 - the layer namespace, as torch.nn
from .modules import __all__ as _modules_all
from . import functional, init, parallel, utils

__all__ = ["Parameter", "functional", "init", "parallel", "utils"] + _modules_all
