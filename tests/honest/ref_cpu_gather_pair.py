"""An embedding lookup by int64 indices that also returns each gathered row's L2 norm: two
outputs (CPU; a 16384 x 64 table, 16384 lookups)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, table: torch.Tensor, index: torch.Tensor):
        rows = table[index]
        return rows, rows.norm(dim=1)


vocab = 16384
dim = 64
lookups = 16384


def get_inputs():
    return [torch.randn(vocab, dim), torch.randint(0, vocab, (lookups,), dtype=torch.int64)]


def get_init_inputs():
    return []
