import torch
import torch.nn as nn


class Model(nn.Module):
    """y = x * sigmoid(x) on a small tensor: an elementwise problem for the adversarial suite."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x)


rows = 128
cols = 1024


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
