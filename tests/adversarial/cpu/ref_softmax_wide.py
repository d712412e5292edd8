import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over wide rows: every output is about 1/cols, far below an absolute tolerance."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


rows = 8
cols = 65536


def get_inputs():
    return [torch.rand(rows, cols)]


def get_init_inputs():
    return []
