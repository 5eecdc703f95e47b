"""mpamp.optim: fused optimizers with torch.optim's API (SGD, Adam, AdamW, RMSprop, Adagrad,
Adadelta) and lr_scheduler."""
from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "lr_scheduler"]
