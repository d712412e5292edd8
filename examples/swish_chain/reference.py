import torch
import torch.nn as nn


class Model(nn.Module):
    """An elementwise chain: y = swish(x) * scale + shift, then clamped to [-1, 4]."""

    def __init__(self, scale: float, shift: float):
        super().__init__()
        self.scale = scale
        self.shift = shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * torch.sigmoid(x)
        y = y * self.scale + self.shift
        return torch.clamp(y, -1.0, 4.0)


batch_size = 256
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [1.5, 0.25]
