"""mpamp.cpu: CPU queries (is_bf16_supported) and the deprecated cpu.amp spellings."""
from . import amp  # noqa: F401
from .. import _C


def is_bf16_supported():
    """True when this CPU has native bf16 dot-product instructions (AVX512_BF16)."""
    return "avx512bf16" in _C._supported_isas()
