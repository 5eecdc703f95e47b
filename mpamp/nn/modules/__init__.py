"""The layers of mpamp.nn, one file per family as in torch.nn.modules."""
from .activation import GELU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .batchnorm import BatchNorm1d, BatchNorm2d
from .conv import Conv1d, Conv2d
from .container import ModuleDict, ModuleList, Sequential
from .container_params import ParameterDict, ParameterList
from .dropout import Dropout
from .flatten import Flatten
from .groupnorm import GroupNorm
from .linear import Identity, Linear
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss,
                   MSELoss, NLLLoss, SmoothL1Loss)
from .activation_param import LeakyReLU, Softplus
from .distance import CosineSimilarity
from .padding import __all__ as _padding_all
from .padding import *  # noqa: F401,F403
from .module import Module
from .normalization import LayerNorm
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, MaxPool1d,
                      MaxPool2d)
from .sparse import Embedding

__all__ = ["Module", "Identity", "Linear", "Flatten", "ReLU", "GELU", "SiLU", "Tanh",
           "Sigmoid", "Softmax", "LogSoftmax", "Dropout", "LayerNorm", "Embedding",
           "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
           "L1Loss", "MSELoss", "NLLLoss",
           "CrossEntropyLoss", "BCEWithLogitsLoss", "Conv1d", "Conv2d", "MaxPool1d", "MaxPool2d",
           "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "BatchNorm1d",
           "BatchNorm2d", "GroupNorm", "SmoothL1Loss", "HuberLoss", "BCELoss",
           "KLDivLoss", "LeakyReLU", "Softplus", "CosineSimilarity"] + _padding_all
from .normalization_rms import RMSNorm  # noqa: E402 - attention part (issue 13)
from .transformer import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer  # noqa: E402,E501

__all__ += ["RMSNorm", "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder"]
