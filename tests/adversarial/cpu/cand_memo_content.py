"""Memoisation by content: a slow honest path (2 ms) and a fast path for inputs seen before.
With fresh contents for every timed call the fast path must never be taken."""
import hashlib
import time

import torch.nn as nn
from kernels import swish

_cache = {}


class ModelNew(nn.Module):
    def forward(self, x):
        key = hashlib.sha1(x.contiguous().numpy().tobytes()).hexdigest()
        if key in _cache:
            return _cache[key].clone()
        time.sleep(0.002)
        y = swish(x)
        _cache[key] = y.clone()
        return y
