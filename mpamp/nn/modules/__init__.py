"""The layers of mpamp.nn, one file per family as in torch.nn.modules."""
from .activation import GELU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .container import ModuleDict, ModuleList, Sequential
from .container_params import ParameterDict, ParameterList
from .dropout import Dropout
from .flatten import Flatten
from .linear import Identity, Linear
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .module import Module
from .normalization import LayerNorm
from .sparse import Embedding

__all__ = ["Module", "Identity", "Linear", "Flatten", "ReLU", "GELU", "SiLU", "Tanh",
           "Sigmoid", "Softmax", "LogSoftmax", "Dropout", "LayerNorm", "Embedding",
           "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
           "L1Loss", "MSELoss", "NLLLoss", "CrossEntropyLoss", "BCEWithLogitsLoss"]
