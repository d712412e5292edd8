"""Control: an honest native kernel. Must be correct."""
import torch.nn as nn
from kernels import swish


class ModelNew(nn.Module):
    def forward(self, x):
        return swish(x)
