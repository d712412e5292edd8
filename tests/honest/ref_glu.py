"""GLU over the last dimension of an 8192 x 2000 float32 matrix (16 M elements in, 8 M out)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.glu(x, dim=-1)


rows = 8192
cols = 2000


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
