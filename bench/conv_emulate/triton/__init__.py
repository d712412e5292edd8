"""A numpy model of the few triton features the generated conv kernels use (for checking their
index math on a machine without a GPU): every program runs in turn, blocks are numpy arrays."""
import numpy as np
from . import language


class _Kernel:
    def __init__(self, fn):
        self.fn = fn

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            for k in ("num_warps", "num_stages"):
                kwargs.pop(k, None)
            args = [language.Pointer(a) if hasattr(a, "numpy") else a for a in args]
            g = tuple(grid) + (1,) * (3 - len(grid))
            for z in range(g[2]):
                for y in range(g[1]):
                    for x in range(g[0]):
                        language._pid[:] = [x, y, z]
                        self.fn(*args, **kwargs)
        return launch


def jit(fn):
    return _Kernel(fn)


def cdiv(a, b):
    return (a + b - 1) // b
