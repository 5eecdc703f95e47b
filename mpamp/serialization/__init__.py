"""Checkpoints: mpamp.save / mpamp.load in torch.save's zip format (readable by torch.load,
and reading torch.save files without torch), and the safetensors format."""
from ._safetensors import load_safetensors, safetensors_metadata, save_safetensors
from ._torch_zip import load, save

__all__ = ["save", "load", "save_safetensors", "load_safetensors", "safetensors_metadata"]
