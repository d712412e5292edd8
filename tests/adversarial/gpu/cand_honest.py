"""Control: an honest Triton kernel. Must be correct."""
import torch.nn as nn
from kernels import relu


class ModelNew(nn.Module):
    def forward(self, x):
        return relu(x)
