"""A float16 matrix product with a small inner dimension, 49152 x 32 by 32 x 49152: 6 MB of inputs,
a 4.5 GiB output (the shape of KernelBench level1/7, whose outputs once made the evaluator's timing
pools fill an 80 GB GPU)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


m = 49152
k = 32
n = 49152


def get_inputs():
    return [torch.randn(m, k, dtype=torch.float16), torch.randn(k, n, dtype=torch.float16)]


def get_init_inputs():
    return []
