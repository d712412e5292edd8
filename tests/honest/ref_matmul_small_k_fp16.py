"""A float16 matrix product with a small inner dimension, 32768 x 32 by 32 x 32768: 4 MiB of inputs,
a 2 GiB output (the shape of KernelBench level1/7, whose outputs once made the evaluator's timing
pools fill an 80 GB GPU). Every flat index stays below 2^31, as the candidate's int32 offsets need."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


m = 32768
k = 32
n = 32768


def get_inputs():
    return [torch.randn(m, k, dtype=torch.float16), torch.randn(k, n, dtype=torch.float16)]


def get_init_inputs():
    return []
