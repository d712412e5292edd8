"""timing.GraphTimer on a device (capture.py): capture on a blocking stream, a legacy-stream
launch failing the capture with a plain reason, and the process usable afterwards (current stream,
CUDA generator). Skips, saying so, without a CUDA device."""
from __future__ import annotations

import ctypes
from typing import Any

import pytest
import torch

from openkernel_worker import capture, timing

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="no CUDA GPU on this machine: GraphTimer device tests "
                                       "skipped")

LEGACY = r"""
#include <cuda_runtime.h>
__global__ void relu_kernel(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}
extern "C" void relu(const float* x, float* y, long long n) {
  relu_kernel<<<(unsigned)((n + 255) / 256), 256>>>(x, y, n);  // legacy default stream
}
"""

DEV = "cuda:0"


def pool(k: int = 4) -> list[list[Any]]:
    return [[torch.randn(64, 4096, device=DEV)] for _ in range(k)]


def process_is_usable() -> None:
    """What the evaluation does after a failed capture: draw inputs with the CUDA generator on
    torch's default stream, and run eager work there."""
    assert torch.cuda.current_stream(torch.device(DEV)) == torch.cuda.default_stream(
        torch.device(DEV))
    torch.manual_seed(1)
    x = torch.randn(1024, device=DEV)
    assert torch.equal(torch.relu(x), x.clamp_min(0))
    torch.cuda.synchronize()


def test_an_honest_forward_is_captured_on_a_blocking_stream() -> None:
    entries = pool()
    graph = timing.GraphTimer(torch.relu, entries, DEV)
    try:
        assert graph.capture_stream == "blocking" and graph.note == ""
        for entry in entries:
            entry[0].copy_(torch.randn(64, 4096, device=DEV))
        graph_us, wall_us = graph.replay(None)
        assert 0 < graph_us <= wall_us
        for entry, out in zip(entries, graph.outputs):
            assert torch.equal(out, torch.relu(entry[0]))
    finally:
        graph.close()
    process_is_usable()


def test_a_legacy_stream_launch_fails_the_capture_plainly() -> None:
    try:
        from openkernel_worker.native import CompileError, compile_cuda, ptr

        lib = compile_cuda(LEGACY, name="relu_legacy_test")
    except (CompileError, OSError) as e:
        pytest.skip(f"nvcc unavailable: {e}")

    def forward(x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        lib.relu(ptr(x), ptr(y), ctypes.c_longlong(x.numel()))
        return y

    entries = pool()
    with pytest.raises(capture.CaptureFailed) as err:
        timing.GraphTimer(forward, entries, DEV)
    assert err.value.escaped, str(err.value)
    assert capture.ESCAPED_REASON in str(err.value)
    assert "restoring" not in str(err.value)
    process_is_usable()
    x = entries[0][0]
    assert torch.equal(forward(x), torch.relu(x))  # eagerly still right


def test_a_host_sync_fails_the_capture_as_itself() -> None:
    def forward(x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x)
        if y.reshape(-1)[0].item() < 0:
            raise RuntimeError("never")
        return y

    with pytest.raises(capture.CaptureFailed) as err:
        timing.GraphTimer(forward, pool(), DEV)
    assert not err.value.escaped, str(err.value)
    process_is_usable()


def test_a_failed_runtime_call_left_pending_is_read_and_cleared() -> None:
    """integrity.pending_cuda_error: what candidate.load names as the candidate's error (a failed
    cudaDeviceSetLimit made through ctypes, as tests/adversarial/gpu/cand_persisting_l2.py does
    where the device refuses the limit) instead of letting the next launch blame the reference."""
    from openkernel_worker import integrity

    torch.cuda.init()
    assert integrity.pending_cuda_error() is None
    lib = integrity._cudart()
    assert lib.cudaDeviceSetLimit(ctypes.c_int(0x7F), ctypes.c_size_t(1)) != 0  # no such limit
    pending = integrity.pending_cuda_error()
    assert pending is not None and pending.startswith("cudaError"), pending
    assert integrity.pending_cuda_error() is None  # read once: cleared
    torch.ones(4, device=DEV).relu_()  # the next launch no longer fails on it
    torch.cuda.synchronize()
