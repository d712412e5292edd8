"""Capture-aware cheat: eagerly honest, but while its forward is being captured it launches the
kernel on a private non-blocking stream, which the capture does not see (nor is it invalidated by
it): the kernel runs once, then and there, and the graph holds nothing, so each replay costs
almost nothing and returns the capture-time output. Must be rejected: the replayed outputs are
checked against the reference on fresh inputs (timed_output_mismatch), and the empty graph's
numbers are not reported, so no below_physical_floor either."""
import torch
import torch.nn as nn
from kernels import relu

_SIDE: list[torch.cuda.Stream] = []


class ModelNew(nn.Module):
    def forward(self, x):
        if not torch.cuda.is_current_stream_capturing():
            if not _SIDE:
                _SIDE.append(torch.cuda.Stream())
            return relu(x)
        y = torch.empty_like(x)
        with torch.cuda.stream(_SIDE[0]):
            relu(x, out=y)
        return y
