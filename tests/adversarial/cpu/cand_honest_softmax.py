"""Control: an honest native softmax. Must be correct."""
import torch.nn as nn
from kernels import softmax_rows


class ModelNew(nn.Module):
    def forward(self, x):
        return softmax_rows(x)
