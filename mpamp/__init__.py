"""mpamp: mixed-precision (float16 / bfloat16) training for Python with a C core.

The API follows torch: tensors and dtypes here, ``mpamp.backends.cpu`` for the CPU kernel
level, ``mpamp.cuda`` for device queries.
"""
from . import _C
from ._C import OutOfMemoryError, get_num_threads, set_num_threads
from ._C import bfloat16, dtype, float16, float32, int64, uint8
from ._C import bool as _bool_dtype
from ._size import Size, device
from ._tensor import Tensor
from ._random import (Generator, default_generator, get_rng_state, initial_seed, manual_seed,
                      seed, set_rng_state)
from ._factories import (arange, as_tensor, empty, empty_like, from_numpy, full, full_like,
                         get_default_device, ones, ones_like, rand, rand_like, randint,
                         randint_like, randn, randn_like, set_default_device, tensor, zeros,
                         zeros_like)
from ._dlpack import from_dlpack
from ._legacy import BFloat16Tensor, BoolTensor, FloatTensor, HalfTensor, LongTensor
from . import backends, cuda
from . import autograd
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from . import nn
from ._ops_pointwise import *  # noqa: F401,F403 - the functional op namespace, as torch
from ._ops_matmul import *  # noqa: F401,F403
from ._ops_reduce import *  # noqa: F401,F403
from ._ops_compare import *  # noqa: F401,F403
from ._ops_math import *  # noqa: F401,F403
from ._ops_attention import *  # noqa: F401,F403
from ._ops_minmax import *  # noqa: F401,F403
from ._ops_stats import *  # noqa: F401,F403
from ._ops_sort import *  # noqa: F401,F403
from ._ops_einsum import *  # noqa: F401,F403
from . import linalg, return_types
from ._ops_shape import *  # noqa: F401,F403
from ._ops_index import *  # noqa: F401,F403
from ._ops_random import *  # noqa: F401,F403
from . import amp, cpu, optim
from . import utils
from . import accelerator, distributed, random
from ._compat import compile, get_float32_matmul_precision, set_float32_matmul_precision
from .serialization import load, load_safetensors, save, save_safetensors
from .amp.autocast_mode import default_autocast as autocast
from .amp.autocast_mode import (clear_autocast_cache, get_autocast_dtype,
                                is_autocast_cache_enabled, is_autocast_enabled,
                                set_autocast_cache_enabled, set_autocast_dtype,
                                set_autocast_enabled)

globals()["bool"] = _bool_dtype        # mpamp.bool, as torch.bool
float = float32                         # noqa: A001 - torch's alias
half = float16
long = int64

_C._register(Tensor, Size, device("cpu"))

__version__ = "0.1.0"


def is_tensor(obj):
    """True when obj is an mpamp tensor."""
    return isinstance(obj, _C.TensorBase)


def numel(input):  # noqa: A002
    """Number of elements of a tensor."""
    return input.numel()
