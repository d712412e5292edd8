"""An embedding lookup: a 65536 x 128 float32 table indexed by a 64 x 512 int64 tensor (4 M
output elements)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, index: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        return F.embedding(index, table)


vocab = 65536
dim = 128
batch = 64
seq = 512


def get_inputs():
    return [torch.randint(0, vocab, (batch, seq), dtype=torch.int64), torch.randn(vocab, dim)]


def get_init_inputs():
    return []
