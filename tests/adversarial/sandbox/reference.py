import torch
import torch.nn as nn


class Model(nn.Module):
    """y = relu(x) * scale: the tiny problem behind the sandbox's hostile candidates."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) * self.scale


rows = 64
cols = 256


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [2.0]
