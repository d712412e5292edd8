"""evaluate.py: request parsing, device resolution and whole evaluations of tiny CPU problems.

Each end-to-end test starts one candidate process (about two seconds for `import torch`).
"""
from __future__ import annotations

import os
import time
from typing import Any

import pytest

from openkernel_worker.evaluate import (EnvironmentProblem, Options, evaluate,
                                        resolve_device, same_inputs)
from openkernel_worker.problem import BadInput

RESULT_KEYS = {"verdict", "compiled", "correct", "valid", "flags", "reasons", "max_abs_error",
               "max_rel_error", "runtime_us", "ref_runtime_us", "speedup", "device", "backend",
               "tolerance"}
STATS_KEYS = {"median", "mean", "stderr", "min", "n"}

# Candidates built on PyTorch ops: enough for checks that fail before timing.
TORCH_CANDIDATE = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x.clamp_min(0) * self.scale
"""

# A correct candidate must run a kernel of its own (PyTorch-only candidates are flagged).
CORRECT = """
import ctypes

import torch
import torch.nn as nn

from openkernel_worker.native import compile_cpp, ptr

_lib = compile_cpp(r\"\"\"
#include <cstdint>
extern "C" void scaled_relu(const float* x, float* y, int64_t n, float scale) {
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] > 0.0f ? x[i] : 0.0f) * scale;
}
\"\"\", name="scaled_relu")


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _lib.scaled_relu(ptr(x), ptr(y), ctypes.c_int64(x.numel()), ctypes.c_float(self.scale))
        return y
"""


def run(reference: str, candidate: str, **extra: Any) -> dict[str, Any]:
    request = {"reference": reference, "candidate": candidate, "backend": "cpu", "trials": 2,
               "timing_budget_s": 0.3, "min_timing_samples": 3, "timeout_s": 20, "threads": 1,
               "seed": 1234, **extra}
    return evaluate(request)


def test_options_from_request_converts_types() -> None:
    o = Options.from_request({"reference": "r.py", "candidate": "c.py", "trials": "3",
                              "timeout_s": "1.5", "seed": "9", "overrides": {"n": 4},
                              "strict": 1, "device": None})
    assert (o.trials, o.timeout_s, o.seed, o.overrides, o.strict, o.device) == (
        3, 1.5, 9, {"n": "4"}, True, None)
    defaults = Options.from_request({"reference": "r.py", "candidate": "c.py"})
    assert defaults.trials == 5 and defaults.backend == "cpu" and defaults.seed is None


def test_resolve_device() -> None:
    import torch

    assert resolve_device("cpu", None) == "cpu"
    assert resolve_device("cpu", "cpu") == "cpu"
    with pytest.raises(BadInput, match="unknown backend 'opencl'"):
        resolve_device("opencl", None)
    with pytest.raises(BadInput, match="runs on device cpu, not cuda:0"):
        resolve_device("cpu", "cuda:0")
    if not torch.cuda.is_available():
        for backend in ("cuda", "triton"):
            with pytest.raises(EnvironmentProblem, match="needs an NVIDIA GPU"):
                resolve_device(backend, None)


def test_same_inputs() -> None:
    import torch

    a = [torch.ones(2), 3]
    assert same_inputs(a, [torch.ones(2), 3])
    assert not same_inputs(a, [torch.ones(2)])
    assert not same_inputs(a, [torch.zeros(2), 3])
    assert not same_inputs(a, [torch.ones(2), 4])
    assert not same_inputs(a, [torch.ones(2, dtype=torch.float64), 3])
    assert not same_inputs(a, [[1.0, 1.0], 3])
    # A NaN left in place is an unchanged input; a NaN written over a number is a change.
    nan = torch.tensor([1.0, float("nan")])
    assert same_inputs([nan], [nan.clone()])
    assert not same_inputs([nan], [torch.tensor([float("nan"), float("nan")])])


def test_missing_candidate_is_bad_input(tiny_reference: str, tmp_path) -> None:
    with pytest.raises(BadInput, match="candidate not found"):
        run(tiny_reference, str(tmp_path / "missing.py"))


def test_unknown_override_is_bad_input(tiny_reference: str, write) -> None:
    with pytest.raises(BadInput, match="no module-level constant named nope"):
        run(tiny_reference, write("c.py", CORRECT), overrides={"nope": "1"})


def test_correct_candidate(tiny_reference: str, write) -> None:
    r = run(tiny_reference, write("c.py", CORRECT))
    assert RESULT_KEYS <= r.keys()
    assert r["verdict"] == "correct", r["reasons"]
    assert r["compiled"] is True and r["correct"] is True and r["valid"] is True
    assert r["flags"] == []
    assert r["reasons"] == ["matched the reference on 2 trials with fresh inputs"]
    assert r["max_abs_error"] == 0.0
    for key in ("runtime_us", "ref_runtime_us"):
        assert set(r[key]) == STATS_KEYS
        assert r[key]["n"] >= 3
        assert r[key]["median"] > 0
    assert r["speedup"] == pytest.approx(r["ref_runtime_us"]["median"] / r["runtime_us"]["median"])
    assert r["device"] == "cpu" and r["backend"] == "cpu"
    assert (r["tolerance"]["float32"]["atol"], r["tolerance"]["float32"]["rtol"]) == (1e-3, 1e-3)
    assert r["seed"] == 1234
    assert r["compile_s"] is not None
    assert len(r["problem"]["source_hash"]) == 64
    assert len(r["candidate"]["source_hash"]) == 64


def test_phases_account_for_the_evaluation(tiny_reference: str, write) -> None:
    r = run(tiny_reference, write("c.py", CORRECT))
    phases = r["phases_s"]
    assert {"reference", "process_start", "load", "trials", "profile", "quiesce", "timing",
            "floor", "cleanup"} <= phases.keys()
    assert all(v >= 0 for v in phases.values())
    assert sum(phases.values()) <= r["worker_wall_s"] + 0.01
    assert phases["process_start"] > 0.05  # a fresh Python importing torch
    assert r["candidate_process"] == "fresh"
    warm = r["process_warm_s"]  # the candidate process's own account of its start-up
    assert {"module_imports", "torch_import", "profiler_import", "profiler_start",
            "start_to_ready"} <= warm.keys()
    # The process is launched before the reference is built (_launch_early), so its start-up
    # overlaps the reference phase: it fits within the two phases together, not process_start.
    assert warm["start_to_ready"] <= phases["reference"] + phases["process_start"] + 0.01


def test_spare_process_serves_the_next_evaluation(tiny_reference: str, write) -> None:
    from openkernel_worker import evaluate as ev

    try:
        first = run(tiny_reference, write("a.py", CORRECT), spare=True)
        assert first["verdict"] == "correct" and first["candidate_process"] == "fresh"
        assert len(ev.SPARE.procs) == 1  # the CPU device: one spare, started up in one stage
        spare = ev.SPARE.procs[0]
        assert spare.alive()
        # A different candidate (and a wrong one: nothing of the first may leak into it).
        wrong = TORCH_CANDIDATE.replace("* self.scale", "* self.scale + 1")
        second = run(tiny_reference, write("b.py", wrong), spare=True)
        assert second["candidate_process"] == "spare"
        assert second["verdict"] == "incorrect"
        assert second["candidate"]["path"].endswith("b.py")
        assert not os.path.exists(spare.scratch)  # used once, then removed
        third = run(tiny_reference, write("c.py", CORRECT), spare=False)
        assert third["candidate_process"] == "spare" and third["verdict"] == "correct"
        assert ev.SPARE.procs == []  # spare=False starts none afterwards
    finally:
        ev.SPARE.clear()


def test_dead_or_mismatched_spare_is_replaced(tiny_reference: str, write) -> None:
    from openkernel_worker import evaluate as ev

    try:
        run(tiny_reference, write("a.py", CORRECT), spare=True)
        spare = ev.SPARE.procs[0]
        spare.kill()  # the OOM killer, say: the next evaluation must not blame its candidate
        r = run(tiny_reference, write("b.py", CORRECT), spare=True)
        assert r["verdict"] == "correct" and r["candidate_process"] == "fresh"
        assert not os.path.exists(spare.scratch)
        # Other limits (trials) make another launch: that spare is not used.
        other = ev.SPARE.procs[0]
        r = run(tiny_reference, write("c.py", CORRECT), trials=3)
        assert r["verdict"] == "correct" and r["candidate_process"] == "fresh"
        assert other.proc.wait(timeout=10) is not None  # killed
    finally:
        ev.SPARE.clear()


def test_staged_start_runs_the_device_stage_only_when_asked(tmp_path) -> None:
    from openkernel_worker import evaluate as ev

    opts = ev.Options(reference="", candidate="", no_sandbox=True)
    proc = ev.CandidateProcess(str(tmp_path), dict(os.environ), opts, "cpu", gpu_later=True)
    try:
        deadline = time.monotonic() + 60
        while not proc.cpu_ready():
            assert time.monotonic() < deadline, proc.log_tail()
            time.sleep(0.05)
        assert not proc.gpu_in_flight()
        assert "profiler_import" in proc.warm_seconds
        assert "profiler_start" not in proc.warm_seconds  # the device stage: not yet
        proc.start_gpu()
        assert proc.gpu_in_flight()
        assert proc.wait_warm(60) == ({"ok": True}, "")
        assert not proc.gpu_in_flight()
        assert "profiler_start" in proc.warm_seconds
        assert proc.warm_seconds["start_to_ready"] > 0
    finally:
        ev.discard(proc)


def test_profiler_stage_of_its_own_is_not_in_flight(tmp_path) -> None:
    """profiler_anytime ("context" overlap): the device stage is the context and a first kernel
    only; the profiler's first start follows as a stage quiesce() does not wait for, and the
    process is fully started once wait_warm() returns."""
    from openkernel_worker import evaluate as ev

    opts = ev.Options(reference="", candidate="", no_sandbox=True)
    proc = ev.CandidateProcess(str(tmp_path), dict(os.environ), opts, "cpu", gpu_later=True,
                               profiler_anytime=True)
    try:
        deadline = time.monotonic() + 60
        while not proc.cpu_ready():
            assert time.monotonic() < deadline, proc.log_tail()
            time.sleep(0.05)
        proc.start_gpu()
        assert proc._pending == ["gpu", "profiler"] and proc.gpu_in_flight()
        # What quiesce() waits for in "context" mode: the device stage, not the profiler's.
        assert proc.wait_warm(60, device_only=True) == ({"ok": True}, "")
        assert not proc.gpu_in_flight() and "cuda_context" not in proc.warm_seconds  # CPU
        assert proc.wait_warm(60) == ({"ok": True}, "")
        assert "profiler_start" in proc.warm_seconds and not proc._pending
    finally:
        ev.discard(proc)


def test_spare_overlap_mode_defaults_to_context_on_cuda_hosts(monkeypatch) -> None:
    from openkernel_worker import evaluate as ev

    monkeypatch.delenv("OPENKERNEL_SPARE_OVERLAP", raising=False)
    monkeypatch.setattr(ev.os, "sched_getaffinity", lambda pid: set(range(16)))
    assert ev.SparePool.overlap("cuda") == "context" and ev.SparePool.overlap("cuda:1") == "context"
    assert ev.SparePool.overlap("cpu") == "none"
    for mode in ("imports", "all", "none", "context"):
        monkeypatch.setenv("OPENKERNEL_SPARE_OVERLAP", mode)
        assert ev.SparePool.overlap("cuda") == mode and ev.SparePool.overlap("cpu") == "none"
    monkeypatch.setenv("OPENKERNEL_SPARE_OVERLAP", "sometimes")
    assert ev.SparePool.overlap("cuda") == "context"  # an unknown mode: the default
    monkeypatch.setattr(ev.os, "sched_getaffinity", lambda pid: {0, 1, 2})
    monkeypatch.setenv("OPENKERNEL_SPARE_OVERLAP", "context")
    assert ev.SparePool.overlap("cuda") == "none"  # too few cores for anything to overlap


def test_context_overlap_pool_starts_spares_with_the_profiler_anytime(
        tiny_reference: str, write, monkeypatch) -> None:
    from openkernel_worker import evaluate as ev

    assert ev.SparePool.depth("none") == 1 and ev.SparePool.depth("imports") == 2
    monkeypatch.setenv("OPENKERNEL_SPARES", "5")
    assert ev.SparePool.depth("context") == 5 and ev.SparePool.depth("none") == 1
    monkeypatch.setenv("OPENKERNEL_SPARES", "many")
    assert ev.SparePool.depth("context") == 4
    monkeypatch.delenv("OPENKERNEL_SPARES")

    monkeypatch.setattr(ev.SparePool, "overlap", staticmethod(lambda device: "context"))
    try:
        run(tiny_reference, write("a.py", CORRECT), spare=True)
        assert len(ev.SPARE.procs) == 4  # a spare's start-up takes about three evaluations
        assert all(p._profiler_anytime for p in ev.SPARE.procs)
        r = run(tiny_reference, write("b.py", CORRECT), spare=True)
        assert r["verdict"] == "correct" and r["candidate_process"] == "spare"
        assert "profiler_start" in r["process_warm_s"]
    finally:
        ev.SPARE.clear()


def test_staged_pool_keeps_two_spares(tiny_reference: str, write, monkeypatch) -> None:
    from openkernel_worker import evaluate as ev

    monkeypatch.setattr(ev.SparePool, "overlap", staticmethod(lambda device: "imports"))
    try:
        first = run(tiny_reference, write("a.py", CORRECT), spare=True)
        assert first["candidate_process"] == "fresh"
        assert len(ev.SPARE.procs) == 2
        for name in ("b.py", "c.py"):
            r = run(tiny_reference, write(name, CORRECT), spare=True)
            assert r["verdict"] == "correct" and r["candidate_process"] == "spare"
            assert "profiler_start" in r["process_warm_s"]  # its device stage ran before load
            assert len(ev.SPARE.procs) == 2
        for proc in ev.SPARE.procs:
            assert not proc.gpu_in_flight() or proc.wait_warm(60)[0] is not None
    finally:
        ev.SPARE.clear()


def test_overrides_reach_the_candidate_process(tiny_reference: str, write) -> None:
    candidate = write("c.py", CORRECT + """

class Checked(ModelNew):
    def forward(self, x):
        assert x.shape == (3, 4), x.shape
        return super().forward(x)


ModelNew = Checked
""")
    r = run(tiny_reference, candidate, overrides={"rows": "3", "cols": "4"})
    assert r["verdict"] == "correct", r["reasons"]
    assert r["problem"]["overrides"] == {"rows": "3", "cols": "4"}


def test_wrong_values_are_incorrect(tiny_reference: str, write) -> None:
    wrong = TORCH_CANDIDATE.replace("* self.scale", "* self.scale + 1")
    r = run(tiny_reference, write("c.py", wrong))
    assert r["verdict"] == "incorrect"
    assert r["compiled"] is True and r["correct"] is False
    assert r["speedup"] is None
    assert r["max_abs_error"] == pytest.approx(1.0)
    assert any("outside tolerance" in reason for reason in r["reasons"])


def test_syntax_error_is_compile_error_naming_the_line(tiny_reference: str, write) -> None:
    r = run(tiny_reference, write("c.py", "import torch\n\n\ndef broken(:\n    pass\n"))
    assert r["verdict"] == "compile_error"
    assert r["compiled"] is False
    assert r["max_abs_error"] is None
    assert "at line 4" in r["reasons"][0]
    assert "SyntaxError" in r["reasons"][0]


def test_raising_forward_is_runtime_error(tiny_reference: str, write) -> None:
    r = run(tiny_reference, write("c.py", TORCH_CANDIDATE.replace(
        "return x.clamp_min(0) * self.scale", "raise RuntimeError('kaboom')")))
    assert r["verdict"] == "runtime_error"
    assert r["compiled"] is True
    assert "kaboom" in r["reasons"][0]
    assert "line 12" in r["reasons"][0]


def test_input_mutation_is_rejected(tiny_reference: str, write) -> None:
    r = run(tiny_reference, write("c.py", TORCH_CANDIDATE.replace(
        "return x.clamp_min(0) * self.scale",
        "y = x.clamp_min(0) * self.scale\n        x.zero_()\n        return y")))
    assert r["verdict"] == "rejected"
    assert r["correct"] is False and r["valid"] is False
    assert "input_mutated" in r["flags"]

