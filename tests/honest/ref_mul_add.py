"""out = a + b * c over three 4096 x 1024 float32 tensors (4 M elements each)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return a + b * c


rows = 4096
cols = 1024


def get_inputs():
    return [torch.randn(rows, cols), torch.randn(rows, cols), torch.randn(rows, cols)]


def get_init_inputs():
    return []
