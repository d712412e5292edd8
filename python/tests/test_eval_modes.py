"""Request options added for the hardening issue: CUDA-graph timing mode (GPU only; on the CPU the
option is accepted and reported), the torch.compile baseline, and the per-worker cache of the
reference's trial outputs (refcache.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openkernel_worker import refcache, timing
from openkernel_worker.evaluate import Evaluation, Options, evaluate
from openkernel_worker.problem import BadInput

from test_evaluate import CORRECT

# TINY_REFERENCE with a switch: while COUNTING is set (by the test, only around the trials) every
# forward appends a line to COUNTER.
COUNTED_REFERENCE = """
import torch
import torch.nn as nn

COUNTER = {counter!r}
COUNTING = False


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        if COUNTING:
            with open(COUNTER, "a") as f:
                f.write("x\\n")
        return torch.relu(x) * self.scale


rows = 8
cols = 16


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [2.0]
"""


def run(reference: str, candidate: str, **extra: Any) -> dict[str, Any]:
    request = {"reference": reference, "candidate": candidate, "backend": "cpu", "trials": 2,
               "timing_budget_s": 0.3, "min_timing_samples": 3, "timeout_s": 20, "threads": 1,
               **extra}
    return evaluate(request)


def test_cuda_graph_option_parsing() -> None:
    base = {"reference": "r.py", "candidate": "c.py"}
    assert Options.from_request(base).cuda_graph == "auto"
    assert Options.from_request({**base, "cuda_graph": "off"}).cuda_graph == "off"
    assert Options.from_request({**base, "cuda_graph": True}).cuda_graph == "on"
    assert Options.from_request({**base, "compile_baseline": 1}).compile_baseline is True
    assert Options.from_request(base).compile_baseline is False
    with pytest.raises(BadInput, match="cuda_graph"):
        Options.from_request({**base, "cuda_graph": "sometimes"})


def test_graph_pool_size() -> None:
    assert timing.graph_pool_size(1 << 20, 80e9) == 16
    assert timing.graph_pool_size(1 << 30, 10e9) == 1
    assert timing.graph_pool_size(0, 1e9, cap=4) == 4


def test_cpu_timing_mode_is_events_and_graph_on_is_noted(tiny_reference: str, write) -> None:
    cand = write("cand.py", CORRECT)
    r = run(tiny_reference, cand, seed=5, cuda_graph="on")
    assert r["verdict"] == "correct", r["reasons"]
    assert r["timing"]["mode"] == "events"
    assert r["timing"]["cuda_graph"]["ok"] is False
    assert "CUDA device" in r["timing"]["cuda_graph"]["reason"]
    assert "graph_much_faster" not in r["flags"]


def test_compile_baseline(tiny_reference: str, write) -> None:
    import torch

    cand = write("cand.py", CORRECT)
    r = run(tiny_reference, cand, seed=6, compile_baseline=True)
    assert r["verdict"] == "correct", r["reasons"]
    info = r["compile_baseline"]
    assert info is not None and info["method"] == "events"
    if not callable(getattr(torch, "compile", None)):
        assert info["ok"] is False and "no torch.compile" in info["reason"]
        assert r["compile_runtime_us"] is None and r["speedup_compile"] is None
    elif info["ok"]:
        assert r["compile_runtime_us"]["n"] > 0 and r["speedup_compile"] > 0
    else:  # a machine without a working compiler for inductor
        assert info["reason"] and r["speedup_compile"] is None
    plain = run(tiny_reference, cand, seed=6)
    assert plain["compile_baseline"] is None and plain["compile_runtime_us"] is None


def test_reference_outputs_are_reused_across_candidates(tmp_path: Path, write,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    counter = tmp_path / "calls.txt"
    reference = write("counted_reference.py", COUNTED_REFERENCE.format(counter=str(counter)))
    original = Evaluation._trials

    def counting(self: Evaluation, ref_model: Any) -> bool:
        self.ref.module.COUNTING = True
        try:
            return original(self, ref_model)
        finally:
            self.ref.module.COUNTING = False

    monkeypatch.setattr(Evaluation, "_trials", counting)

    def calls() -> int:
        return len(counter.read_text().splitlines()) if counter.exists() else 0

    first = run(reference, write("cand1.py", CORRECT), trials=3)
    assert first["verdict"] == "correct", first["reasons"]
    assert calls() == 3
    assert first["reference_cache"]["misses"] == 3 and first["reference_cache"]["hits"] == 0
    # Another candidate (different source) of the same problem in the same worker: no reference
    # runs for the trials, and the same secret trial seed.
    second = run(reference, write("cand2.py", CORRECT + "\n# another candidate\n"), trials=3)
    assert second["verdict"] == "correct", second["reasons"]
    assert calls() == 3
    assert second["reference_cache"]["hits"] == 3 and second["reference_cache"]["misses"] == 0
    assert first["seed"] == second["seed"] == refcache.WORKER_SECRET
    # More trials: the first three are cached, the fourth runs the reference.
    third = run(reference, write("cand3.py", CORRECT), trials=4)
    assert calls() == 4 and third["reference_cache"]["hits"] == 3
    # A different override is another problem; so is an explicit seed.
    run(reference, write("cand4.py", CORRECT), trials=2, overrides={"cols": "32"})
    assert calls() == 6
    run(reference, write("cand5.py", CORRECT), trials=2, seed=77)
    assert calls() == 8
    # Off when the cap is 0.
    monkeypatch.setenv("OPENKERNEL_REFERENCE_CACHE_BYTES", "0")
    off = run(reference, write("cand6.py", CORRECT), trials=2)
    assert calls() == 10 and off["reference_cache"]["hits"] == 0


def test_reference_cache_evicts_least_recently_used() -> None:
    import torch

    cache = refcache.ReferenceCache()
    four_kib = lambda: [torch.zeros(1024)]  # noqa: E731
    assert cache.put("a", four_kib(), cap=10000) and cache.put("b", four_kib(), cap=10000)
    assert cache.get("a") is not None  # a is now the most recent
    assert cache.put("c", four_kib(), cap=10000)
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("c") is not None
    assert cache.bytes == 8192
    assert not cache.put("huge", [torch.zeros(4096)], cap=10000)


def test_fingerprint_notices_mutation() -> None:
    import torch

    x = torch.randn(64)
    before = refcache.fingerprint([x, 3])
    assert refcache.fingerprint([x, 3]) == before
    x[5] += 1.0
    assert refcache.fingerprint([x, 3]) != before


# Outputs 256 times larger than the inputs (a GEMM with a small K, like KernelBench level1/7):
# 2 x 8 KB in, 1 MiB out per forward.
WIDE_OUTPUT_REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn(512, 4), torch.randn(4, 512)]


def get_init_inputs():
    return []
"""

WIDE_OUTPUT_CANDIDATE = """
import ctypes

import torch
import torch.nn as nn

from openkernel_worker.native import compile_cpp, ptr

_lib = compile_cpp(r\"\"\"
#include <cstdint>
extern "C" void small_k_gemm(const float* a, const float* b, float* c, int64_t m, int64_t k,
                             int64_t n) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float s = 0.0f;
      for (int64_t p = 0; p < k; ++p) s += a[i * k + p] * b[p * n + j];
      c[i * n + j] = s;
    }
}
\"\"\", name="small_k_gemm")


class ModelNew(nn.Module):
    def forward(self, a, b):
        a, b = a.contiguous(), b.contiguous()
        m, k = a.shape
        n = b.shape[1]
        c = torch.empty(m, n)
        _lib.small_k_gemm(ptr(a), ptr(b), ptr(c), ctypes.c_int64(m), ctypes.c_int64(k),
                          ctypes.c_int64(n))
        return c
"""


def test_timing_pool_is_sized_by_outputs_too(write, monkeypatch: pytest.MonkeyPatch) -> None:
    """The eager pool keeps an input set and its outputs per entry on both sides: sized by the
    larger of the two (on an 80 GB GPU, eight 4 GiB outputs a side once filled the device). The
    CPU's pool budget (256 MiB) scaled down to 8 MiB: 8 MiB // (2 x 1 MiB) = 4 entries,
    where the inputs alone (16 KB) would allow the cap of 8."""
    ref = write("reference.py", WIDE_OUTPUT_REFERENCE)
    cand = write("cand.py", WIDE_OUTPUT_CANDIDATE)
    import openkernel_worker.timing_series as series

    monkeypatch.setattr(series, "CPU_POOL_BYTES", 8 << 20)
    r = run(ref, cand, seed=7)
    assert r["verdict"] == "correct", r["reasons"]
    assert r["timing"]["mode"] == "events"
    assert r["timing"]["pool_size"] == 4


def test_trusted_timing_pool_is_sized_by_outputs_too(write,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The same for a trusted callable timed in the worker (the torch.compile and eager
    baselines): its first call's outputs count."""
    from random import Random

    from openkernel_worker import trusted_timing
    from openkernel_worker.problem import load_reference

    ref = load_reference(write("reference.py", WIDE_OUTPUT_REFERENCE), {},
                         module_name="openkernel_wide_output_reference")
    seen: list[int] = []
    real = timing.graph_pool_size

    def spy(per_set: int, free: float, cap: int = 16) -> int:
        seen.append(per_set)
        return real(per_set, free, cap)

    monkeypatch.setattr(timing, "graph_pool_size", spy)
    opts = Options.from_request({"reference": "r.py", "candidate": "c.py", "backend": "cpu",
                                 "timing_budget_s": 0.2, "min_timing_samples": 3})
    out = trusted_timing.time_in_worker(ref.module.Model(), ref.module, "cpu", Random(3),
                                        "events", 0.2, opts)
    assert out["runtime_us"]["n"] > 0
    assert seen == [512 * 512 * 4]  # the output's bytes, not the inputs' 2 x 8 KB
