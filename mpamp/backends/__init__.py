"""Backend queries and settings, as torch.backends: cpu (mpamp's kernel level), and the
cuda / cudnn / mps switches that CUDA scripts touch at setup (recorded, honest no-ops)."""
from . import cpu, cuda, cudnn, mps  # noqa: F401
