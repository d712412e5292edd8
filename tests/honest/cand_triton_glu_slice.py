"""GLU in Triton writing into a row-padded buffer (rows rounded up to a multiple of 128 columns,
for aligned rows) and returning the slice `buf[:, :half]`: a non-contiguous view with the
reference's shape and values."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def glu_kernel(x_ptr, out_ptr, half, stride_x, stride_out, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < half
    a = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0)
    b = tl.load(x_ptr + row * stride_x + half + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride_out + cols, a * tl.sigmoid(b), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        half = n_cols // 2
        padded = triton.cdiv(half, 128) * 128
        buf = torch.empty(n_rows, padded, device=x.device, dtype=x.dtype)
        block = 512
        glu_kernel[(n_rows, triton.cdiv(half, block))](x, buf, half, x.stride(0), buf.stride(0),
                                                       BLOCK=block, num_warps=4)
        return buf[:, :half]
