"""mpamp.optim: fused optimizers with torch.optim's API (SGD, Adam, AdamW) and lr_scheduler."""
from . import lr_scheduler
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler"]
