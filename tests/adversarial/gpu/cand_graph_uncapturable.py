"""Honest, but its forward synchronises with the host (.item()), which a CUDA graph cannot
capture. Not a cheat: the evaluation falls back to eager timing with a note, verdict correct."""
import torch.nn as nn
from kernels import relu


class ModelNew(nn.Module):
    def forward(self, x):
        y = relu(x)
        if y.reshape(-1)[0].item() < 0:  # never true; forces a host sync
            raise RuntimeError("relu produced a negative value")
        return y
