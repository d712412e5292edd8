"""An honest Triton ReLU the hostile GPU candidates build on."""
import torch
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def relu(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x) if out is None else out
    _relu_kernel[(triton.cdiv(x.numel(), 4096),)](x, y, x.numel(), BLOCK=4096, num_warps=8)
    return y
