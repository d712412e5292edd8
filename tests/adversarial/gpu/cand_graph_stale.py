"""Honest eagerly; under CUDA-graph capture it returns the output of its last eager call, so a
replay launches nothing and the "output" never changes. Must be rejected: the replayed outputs
are checked against the reference on the replay's fresh inputs (timed_output_mismatch)."""
import torch
import torch.nn as nn
from kernels import relu


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.last = None

    def forward(self, x):
        if torch.cuda.is_current_stream_capturing() and self.last is not None:
            return self.last
        self.last = relu(x)
        return self.last
