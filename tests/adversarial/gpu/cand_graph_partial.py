"""Honest when called eagerly (every correctness trial, every eager timed call); while its forward
is being captured in a CUDA graph it launches the kernel on the first eighth of the tensor only,
so each replay is fast and leaves most of the output unwritten. Must be rejected: the replayed
outputs are checked (timed_output_mismatch)."""
import torch
import torch.nn as nn
from kernels import relu


class ModelNew(nn.Module):
    def forward(self, x):
        if torch.cuda.is_current_stream_capturing():
            y = torch.empty_like(x)
            n = x.numel() // 8
            relu(x.reshape(-1)[:n], out=y.reshape(-1)[:n])
            return y
        return relu(x)
