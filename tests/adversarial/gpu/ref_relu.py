import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU on 256 M elements (1 GiB): long enough that hidden work shows in any clock."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


rows = 4096
cols = 65536


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
