"""What an evaluation is asked and what it concludes: the request's options, the limits and
modes beside them, the outcome (verdict, flags, reasons) the checks write into, and the device
and environment every candidate process of one launch shares.

Shared by the evaluation's flow (evaluate.py), its candidate processes (candidate_process.py),
its timing series (timing_series.py), its verdict rules (verdicts.py), `baseline` and `prebuild`.
No state: plain values and pure functions (resolve_device asks torch about the machine).
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .compare import Comparison
from .problem import BadInput
from .protocol import req_bool, req_float, req_int, req_overrides, req_str

BACKENDS = ("cpu", "cuda", "triton")
CUDA_GRAPH_MODES = ("auto", "on", "off")
GRAPH_AUTO_US = 50.0  # cuda_graph "auto": graph timing when the eager candidate median is below
REST_MODES = ("auto", "on", "off")
PROFILE_TIERS = ("basic", "proton", "deep")  # profiling.py; docs/profiling.md
REST_AUTO_US = 100.0  # rested "auto": rested timing when the reference's median reaches this
REST_MIN_RATIO = 0.8  # rested / back-to-back median of the candidate below this, or below the
# reference's ratio less REST_REF_SLACK: flag rested_gap and report back to back (the 8192^3 bf16
# matmul, throttled back to back, measured 0.86; a memory-bound kernel 1.00)
REST_REF_SLACK = 0.1
GRAPH_EAGER_RATIO = 12.0  # flag graph_much_faster: eager median / graph median above this (an
# honest 1 MiB Triton ReLU measured 7x on the H200: Triton's Python launch path costs ~25 us)
# Flags that say how the candidate was measured, not that anything is wrong: never rejected, not
# even under --strict (no_sandbox is added after the strict rule for the same reason).
STRICT_EXEMPT = frozenset({"graph_fallback"})
VERDICTS = ("correct", "incorrect", "compile_error", "runtime_error", "timeout", "rejected")


class TimedBlock(NamedTuple):
    """One timed block as the worker saw it: its wall time measured outside the candidate, the
    sum of the candidate's own per-call times, the calls, and (rested blocks) the idle gaps the
    candidate's events reported, each counted at most twice the length asked for."""
    outside_us: float
    claimed_us: float
    calls: int
    gaps_us: float = 0.0


class EnvironmentProblem(Exception):
    """The machine cannot do what was asked (no GPU for a CUDA backend, say)."""


@dataclass
class Options:
    reference: str
    candidate: str
    backend: str = "cpu"
    device: str | None = None
    trials: int = 5
    seed: int | None = None
    timeout_s: float = 300.0
    overrides: dict[str, str] = field(default_factory=dict)
    timing_budget_s: float = 4.0
    min_timing_samples: int = 10
    max_timing_samples: int = 1000
    target_rse: float = 0.01
    threads: int = 0
    strict: bool = False
    cache_dir: str | None = None
    no_sandbox: bool = False  # run the candidate without bwrap (sandbox.py); reported as a flag
    cuda_graph: str = "auto"  # time by CUDA-graph replay: auto (eager median < 50 us), on, off
    compile_baseline: bool = False  # also time torch.compile(reference)
    spare: bool = False  # afterwards, start the next candidate processes ahead of time (SparePool)
    rested: str = "auto"  # rested timing on CUDA: auto (the reference's median >= 100 us), on, off
    profile_tier: str = "basic"  # profiling tier after the evaluation: basic, proton, deep

    @staticmethod
    def from_request(req: dict[str, Any]) -> "Options":
        """The options of an evaluate request; RequestError (bad input) naming a malformed field."""
        o = Options(reference=req_str(req, "reference", required=True) or "",
                    candidate=req_str(req, "candidate", required=True) or "")
        o.backend = req_str(req, "backend", o.backend) or o.backend
        o.device = req_str(req, "device")
        o.cache_dir = req_str(req, "cache_dir")
        o.trials = req_int(req, "trials", o.trials, 1, 100_000) or o.trials
        o.min_timing_samples = req_int(req, "min_timing_samples", o.min_timing_samples, 1,
                                       10**7) or o.min_timing_samples
        o.max_timing_samples = req_int(req, "max_timing_samples", o.max_timing_samples, 1,
                                       10**7) or o.max_timing_samples
        o.threads = req_int(req, "threads", o.threads, 0, 1 << 16) or 0
        o.timeout_s = req_float(req, "timeout_s", o.timeout_s, 1e-3, 1e7)
        o.timing_budget_s = req_float(req, "timing_budget_s", o.timing_budget_s, 0.0, 1e7)
        o.target_rse = req_float(req, "target_rse", o.target_rse, 1e-9, 1.0)
        o.seed = req_int(req, "seed", None, -(2**63), 2**63 - 1)
        o.overrides = req_overrides(req)
        o.strict = req_bool(req, "strict")
        o.no_sandbox = req_bool(req, "no_sandbox")
        o.compile_baseline = req_bool(req, "compile_baseline")
        o.spare = req_bool(req, "spare")
        o.rested = req_str(req, "rested", o.rested) or o.rested
        if o.rested not in REST_MODES:
            raise BadInput(f"rested must be one of {', '.join(REST_MODES)}, not {o.rested!r}")
        o.profile_tier = req_str(req, "profile", o.profile_tier) or o.profile_tier
        if o.profile_tier not in PROFILE_TIERS:
            raise BadInput(f"profile must be one of {', '.join(PROFILE_TIERS)}, "
                           f"not {o.profile_tier!r}")
        mode = req.get("cuda_graph")
        if isinstance(mode, bool):
            mode = "on" if mode else "off"
        o.cuda_graph = req_str({"cuda_graph": mode}, "cuda_graph", o.cuda_graph) or o.cuda_graph
        if o.cuda_graph not in CUDA_GRAPH_MODES:
            raise BadInput(f"cuda_graph must be one of {', '.join(CUDA_GRAPH_MODES)}, "
                           f"not {o.cuda_graph!r}")
        return o



@dataclass
class Outcome:
    verdict: str = "correct"
    compiled: bool = False
    correct: bool = False
    flags: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    comparison: Comparison = field(default_factory=Comparison)

    def flag(self, name: str, reason: str, reject: bool) -> None:
        if name not in self.flags:
            self.flags.append(name)
            self.reasons.append(reason)
        if reject and self.verdict == "correct":
            self.verdict = "rejected"


def resolve_device(backend: str, device: str | None) -> str:
    import torch

    if backend not in BACKENDS:
        raise BadInput(f"unknown backend {backend!r} (choose one of {', '.join(BACKENDS)})")
    if backend == "cpu":
        if device not in (None, "cpu"):
            raise BadInput(f"the cpu backend runs on device cpu, not {device}")
        return "cpu"
    if not torch.cuda.is_available():
        raise EnvironmentProblem(f"the {backend} backend needs an NVIDIA GPU, and this machine's "
                                 f"torch {torch.__version__} sees none; use --backend cpu")
    device = device or "cuda:0"
    if device == "cuda":
        device = "cuda:0"
    if not device.startswith("cuda:"):
        raise BadInput(f"the {backend} backend needs a cuda device such as cuda:0, not {device}")
    index = int(device.split(":")[1])
    if index >= torch.cuda.device_count():
        raise BadInput(f"device {device} does not exist (this machine has "
                       f"{torch.cuda.device_count()} GPU(s))")
    return device


def announced_device(backend: str, device: str | None) -> str:
    """The device resolve_device will give a request, told without torch (the worker's start,
    boot.py): "cpu" for the cpu backend, else `device` or cuda:0. Whether it exists is
    resolve_device's to say when the request comes."""
    if backend == "cpu":
        return "cpu"
    device = device or "cuda:0"
    return "cuda:0" if device == "cuda" else device


def launch_key_of(opts: Options, device: str, python: str) -> tuple[Any, ...]:
    """What a candidate process's start depends on (SparePool, boot.py): two evaluations with
    the same key can use processes started alike."""
    return (python, device, opts.no_sandbox, opts.timeout_s, opts.trials, opts.timing_budget_s,
            opts.threads, cache_root_of(opts))


def tensor_nbytes(values: list[Any]) -> int:
    import torch

    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def cache_root_of(opts: Options) -> str:
    return opts.cache_dir or os.path.join(tempfile.gettempdir(), "openkernel-cache")


def candidate_env_of(opts: Options, cache: str) -> dict[str, str]:
    """A candidate process's environment on any device (Evaluation.candidate_env adds the CUDA
    architecture; prebuild.py the evaluation device's)."""
    env = dict(os.environ)
    env["TORCH_EXTENSIONS_DIR"] = os.path.join(cache, "torch_extensions")
    env["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
    env["OPENKERNEL_NATIVE_CACHE"] = os.path.join(cache, "native")
    env["OPENKERNEL_INLINE_CACHE"] = os.path.join(cache, "inline")  # read-only inside
    if opts.threads > 0:
        env["OMP_NUM_THREADS"] = str(opts.threads)
    return env
