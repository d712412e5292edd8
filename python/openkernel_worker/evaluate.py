"""One evaluation: reference in this (trusted) process, candidate in a child, verdict from checks.

Flow: load and validate the reference; start the candidate process and let it import (compile) the
candidate; run correctness trials on fresh inputs from a secret seed, comparing outputs and
returned inputs here; then time reference and candidate in interleaved blocks and cross-check the
candidate's own timings against wall time measured from this side. See docs/evaluation.md.

Long (about 1,800 lines): it still holds the candidate process pool, the timing series and the
verdict rules beside the flow; the code-health work splits them into modules of their own.
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import secrets
import selectors
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from random import Random
from typing import Any, Iterator, NamedTuple

from . import floor_counts
from . import integrity, prebuild, refcache, roofline, timing
from .integrity import NON_COMPUTE_OPS, defined_kernel_names, is_library_kernel
from .compare import Comparison, compare_values, dtype_name, flatten
from .problem import (BadInput, Reference, SourceDefect, build_reference,
                      load_reference, make_inputs, read_source, refresh_inputs)
from .protocol import req_bool, req_float, req_int, req_overrides, req_str
from .transfer import rebuild

BACKENDS = ("cpu", "cuda", "triton")
CUDA_GRAPH_MODES = ("auto", "on", "off")
GRAPH_AUTO_US = 50.0  # cuda_graph "auto": graph timing when the eager candidate median is below
REST_MODES = ("auto", "on", "off")
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


def _durations(values: Any, n: int) -> bool:
    """A candidate's reply holds exactly n non-negative times."""
    if n == 0:
        return values is None or values == []
    return isinstance(values, list) and len(values) == n and all(
        isinstance(t, (int, float)) and not isinstance(t, bool) and t >= 0 for t in values)


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
        mode = req.get("cuda_graph")
        if isinstance(mode, bool):
            mode = "on" if mode else "off"
        o.cuda_graph = req_str({"cuda_graph": mode}, "cuda_graph", o.cuda_graph) or o.cuda_graph
        if o.cuda_graph not in CUDA_GRAPH_MODES:
            raise BadInput(f"cuda_graph must be one of {', '.join(CUDA_GRAPH_MODES)}, "
                           f"not {o.cuda_graph!r}")
        return o


class CandidateDied(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)


class CandidateTimeout(Exception):
    pass


SEND_TIMEOUT_S = 60.0  # a request line to a candidate that does not read it
MAX_BUILDS_PER_LOAD = 64  # load_inline/load builds one load may ask the worker for


class CandidateProcess:
    """A running `python -m openkernel_worker.candidate`, killed with its group on close()."""

    def __init__(self, scratch: str, env: dict[str, str], opts: Options | None = None,
                 device: str = "cpu", gpu_later: bool = False,
                 profiler_anytime: bool = False) -> None:
        """Starts it under the sandbox (sandbox.py) unless opts.no_sandbox; without a working
        sandbox raises EnvironmentProblem. opts gives the limits. The process is asked at once to
        pay its one-time costs ("warm"), all of them, or with gpu_later only those without device
        work (start_gpu() asks for the rest: the device stage, then the profiler's first start,
        a stage of its own with profiler_anytime, which gpu_in_flight() does not count);
        wait_warm() reads the replies. Nothing of a
        candidate is known yet: the worker copies the files into the scratch directory before
        "load"."""
        from . import sandbox

        self.scratch = scratch
        self.device = device
        pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(env)
        env["PYTHONPATH"] = pkg_root + os.pathsep + env.get("PYTHONPATH", "")
        try:
            self.launch = sandbox.prepare([sys.executable, "-m", "openkernel_worker.candidate",
                                           scratch], scratch=scratch, env=env, device=device,
                                          opts=opts)
        except sandbox.SandboxUnavailable as e:
            raise EnvironmentProblem(str(e)) from None
        self.log_path = os.path.join(scratch, "candidate.log")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            self.launch.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            cwd=scratch, env=self.launch.env, start_new_session=True)
        self._buf = b""
        self._sel = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        self._sel.register(self.proc.stdout, selectors.EVENT_READ)
        self.spawned = time.monotonic()
        self.served: list[dict[str, Any]] = []  # the replies to its build requests
        self.warm_seconds: dict[str, float] = {}  # the candidate's own account, step by step
        self._pending: list[str] = []  # warm stages asked for and not yet answered, in order
        self._failed = ""  # why start-up failed, once known
        self._gpu_later = gpu_later
        self._profiler_anytime = profiler_anytime
        self._send_warm(["cpu"] if self._gpu_later else ["cpu", "gpu", "profiler"])

    def _send_warm(self, stages: list[str]) -> None:
        self._pending.append("+".join(stages))
        try:
            self.send({"op": "warm", "device": self.device, "stages": stages})
        except CandidateDied:
            pass  # reported by the wait

    def _take_warm_reply(self, reply: dict[str, Any]) -> None:
        self._pending.pop(0)
        seconds = reply.get("seconds")
        if isinstance(seconds, dict):
            self.warm_seconds.update({str(k): float(v) for k, v in seconds.items()
                                      if isinstance(v, (int, float))})
        if not self._pending:
            self.warm_seconds["start_to_ready"] = round(time.monotonic() - self.spawned, 3)

    def cpu_ready(self) -> bool:
        """Whether the stage without device work has answered; reads a waiting reply if any."""
        while self._pending and not self._failed:
            try:
                reply = self.receive(0.0, kill_on_timeout=False)
            except CandidateTimeout:
                break
            except CandidateDied as e:
                self._failed = str(e)
                break
            self._take_warm_reply(reply)
        return not self._failed and not (self._pending and self._pending[0] == "cpu")

    def start_gpu(self) -> None:
        """Asks for the device stage, when a spare was started without it. Call it only when no
        measurement is running or will start before wait_warm(): the stage uses the device."""
        if self._gpu_later:
            self._gpu_later = False
            if self._profiler_anytime:
                self._send_warm(["gpu"])
                self._send_warm(["profiler"])
            else:
                self._send_warm(["gpu", "profiler"])

    def gpu_in_flight(self) -> bool:
        """Whether a warm stage that may not overlap a measurement is asked for and unanswered."""
        return any("gpu" in p.split("+") for p in self._pending)

    def wait_warm(self, timeout_s: float,
                  device_only: bool = False) -> tuple[dict[str, Any] | None, str]:
        """Completes start-up (asking for the device stage if still due) and reads every warm
        reply, or with device_only only until no stage that may not overlap a measurement is
        pending: ({"ok": True}, "") or (None, why the process could not start). A warm reply
        that reports a failure is not a failed start: load meets the problem and reports it."""
        self.start_gpu()
        deadline = time.monotonic() + timeout_s
        while self._pending and not self._failed and not (device_only
                                                          and not self.gpu_in_flight()):
            try:
                reply = self.receive(max(0.0, deadline - time.monotonic()))
            except CandidateTimeout:
                self._failed = f"the candidate process did not start within {timeout_s:g} s"
            except CandidateDied as e:
                self._failed = str(e)
            else:
                self._take_warm_reply(reply)
        if self._failed:
            return None, self._failed
        return {"ok": True}, ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, message: dict[str, Any], timeout_s: float = SEND_TIMEOUT_S) -> None:
        """Writes one line; a candidate that stops reading (its pipe full) is killed after
        timeout_s (CandidateTimeout) instead of blocking the worker."""
        import json

        assert self.proc.stdin is not None
        if message.get("op") == "load":
            self._builds_this_load = 0
        data = json.dumps(message).encode() + b"\n"
        deadline = time.monotonic() + timeout_s
        try:
            fd = self.proc.stdin.fileno()
            os.set_blocking(fd, False)
            while data:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.kill()
                    raise CandidateTimeout()
                with selectors.DefaultSelector() as sel:
                    sel.register(fd, selectors.EVENT_WRITE)
                    if not sel.select(timeout=min(left, 1.0)):
                        continue
                try:
                    data = data[os.write(fd, data):]
                except BlockingIOError:
                    continue
        except (BrokenPipeError, OSError, ValueError):
            raise CandidateDied(self._death()) from None

    def request(self, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        self.send(message, timeout_s)
        return self.receive(max(0.0, deadline - time.monotonic()))

    def receive(self, timeout_s: float, kill_on_timeout: bool = True) -> dict[str, Any]:
        """The next reply. After timeout_s the process is killed (CandidateTimeout), or only
        CandidateTimeout is raised with kill_on_timeout=False (0 s then polls). Nested build
        requests are served in between, within the same deadline, only while a load with a
        build server is in progress and at most MAX_BUILDS_PER_LOAD of them; any other is a
        protocol violation and kills the candidate (CandidateDied: runtime_error)."""
        deadline = time.monotonic() + timeout_s
        while True:
            reply = self._next_line(deadline, kill_on_timeout)
            if reply.get("op") != "build":
                return reply
            if self.builder is None:
                self.kill()
                raise CandidateDied("the candidate process broke the protocol: a build request "
                                    "outside a load served by the build server")
            self._builds_this_load += 1
            if self._builds_this_load > MAX_BUILDS_PER_LOAD:
                self.kill()
                raise CandidateDied(f"the candidate process broke the protocol: more than "
                                    f"{MAX_BUILDS_PER_LOAD} build requests in one load")
            served = self._serve_build(reply)
            self.send(served, max(1.0, deadline - time.monotonic()))  # 1 s: a poll's too

    def _next_line(self, deadline: float, kill_on_timeout: bool) -> dict[str, Any]:
        """One JSON object from the candidate, before `deadline` (see receive)."""
        import json

        assert self.proc.stdout is not None
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            ready = self._sel.select(timeout=min(max(left, 0.0), 1.0))
            if not ready:
                if time.monotonic() >= deadline:
                    if kill_on_timeout:
                        self.kill()
                    raise CandidateTimeout()
                continue
            chunk = self.proc.stdout.read(1 << 16)
            if not chunk:
                if chunk is None:
                    continue
                raise CandidateDied(self._death())
            self._buf += chunk
            if len(self._buf) > (64 << 20):
                self.kill()
                raise CandidateDied("the candidate process flooded the result channel")
        line, _, self._buf = self._buf.partition(b"\n")
        try:
            reply = json.loads(line)
        except ValueError:
            self.kill()
            raise CandidateDied("the candidate process wrote a malformed reply") from None
        if not isinstance(reply, dict):
            raise CandidateDied("the candidate process wrote a malformed reply")
        return reply

    builder: Any = None  # inline_cache.Builder, set by the evaluation before "load"
    _builds_this_load = 0  # build requests served since the last "load" sent
    build_roots: list[str] = []  # the directories a build request may name

    def _serve_build(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.builder is None:
            return {"ok": False, "message": "this worker serves no builds now"}
        try:
            reply = self.builder.serve(request, self.build_roots)
        except Exception as e:  # noqa: BLE001 - the candidate falls back to torch's own build
            reply = {"ok": False, "message": f"{type(e).__name__}: {e}"}
        self.served.append(reply)
        return reply

    def _death(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.wait()
        code = self.launch.exit_code(code)
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            what = f"was killed by {name}"
        else:
            what = f"exited with status {code}"
        return f"the candidate process {what} before replying{self.log_tail()}"

    def log_tail(self, limit: int = 1500) -> str:
        try:
            self._log.flush()
            with open(self.log_path, "rb") as f:
                data = f.read()[-limit:].decode(errors="replace").strip()
        except OSError:
            return ""
        return f"; its last output: {data}" if data else ""

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()

    def close(self) -> None:
        """Kills the process (its group) without waiting for it to go: its state is worthless
        now, and a GPU process's teardown takes the better part of a second. quiesce() waits for
        the processes still going before anything is measured."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            DYING[:] = [p for p in DYING if p.poll() is None]  # reaps those gone already
            DYING.append(self.proc)
        self._log.close()


DYING: list[subprocess.Popen[bytes]] = []  # killed candidate processes not yet reaped
EARLY: list[CandidateProcess] = []  # started by _launch_early, not yet adopted (at most one)


SPARE_OVERLAP_MODES = ("imports", "context", "all", "none")


class SparePool:
    """Candidate processes started ahead of time for the next evaluations whose launch (device,
    sandbox, limits, caches) is the same, so that process start-up (Python, torch's import, the
    CUDA context, Triton's import, the profiler's first start: seconds on a GPU host) overlaps
    the work of earlier evaluations. A spare has run no candidate code; it is used once and
    never shared between evaluations.

    Start-up must not disturb a measurement. How much of it may overlap one is `overlap()`:
    "context" (the default on a CUDA device with 4 or more cores): the imports and the
    profiler's first start (3-4 s of CUPTI set-up) run whenever; only the CUDA context and a first
    kernel (0.2-0.5 s) wait for the windows between this worker's measurements: asked for at
    open_window() and waited for at quiesce(). bench/spare_interference.py on the H200: a 2 ms
    kernel timed while another process ran the context stage had its 90th percentile 18% slower;
    under the imports or the profiler's first start its event times did not move, and in an H200
    search-landscape run under "context" (66 honest evaluations of 1-3 ms kernels) every median
    block stayed 1.1-2.0 ms under its outside wall-clock allowance (bench/results/
    h200_wall_check_context.txt). "imports": the profiler's first start waits for a
    window too (fewer, slower spares). "all": the whole start-up may overlap. "none" (the CPU
    device, or few cores): one spare, and its whole start-up is waited for at quiesce(). depth()
    says how many are kept.
    OPENKERNEL_SPARE_OVERLAP overrides the default on CUDA devices."""

    def __init__(self) -> None:
        self.key: tuple[Any, ...] | None = None
        self.procs: list[CandidateProcess] = []  # oldest first

    @staticmethod
    def overlap(device: str) -> str:
        """What of a spare's start-up may overlap a measurement on `device` (see the class)."""
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = os.cpu_count() or 1
        if not device.startswith("cuda") or cores < 4:
            return "none"
        mode = os.environ.get("OPENKERNEL_SPARE_OVERLAP", "context")
        return mode if mode in SPARE_OVERLAP_MODES else "context"

    @staticmethod
    def depth(mode: str) -> int:
        """Spares kept: one for "none"; otherwise OPENKERNEL_SPARES (1-6), by default two, or
        four for "context", where an evaluation with a ready spare takes about 3 s on the H200
        and a spare's whole start-up about 9 s (imports, context, the profiler's first start):
        new Triton sources measured 2.9-4.7 s each with three spares, 3.2-3.4 s with four."""
        if mode == "none":
            return 1
        try:
            return max(1, min(6, int(os.environ["OPENKERNEL_SPARES"])))
        except (KeyError, ValueError):
            return 4 if mode == "context" else 2

    def take(self, key: tuple[Any, ...]) -> "CandidateProcess | None":
        """The oldest live spare for `key`, or None; spares for another key are dropped."""
        if self.key != key:
            self.clear()
            return None
        while self.procs:
            proc = self.procs.pop(0)
            if proc.alive():
                return proc
            discard(proc)
        return None

    def fill(self, key: tuple[Any, ...], device: str, start: Any) -> None:
        """Starts spares with start(gpu_later, profiler_anytime) until the pool holds its depth;
        a failure is left for the evaluation that would have used the spare to meet and
        report."""
        if self.key != key:
            self.clear()
            self.key = key
        mode = self.overlap(device)
        while len(self.procs) < self.depth(mode):
            try:
                self.procs.append(start(mode in ("imports", "context"), mode == "context"))
            except Exception:  # noqa: BLE001
                break

    def open_window(self) -> None:
        """No measurement runs until quiesce(): spares whose imports are done start their device
        stage."""
        for proc in self.procs:
            if proc.cpu_ready():
                proc.start_gpu()

    def quiesce(self, device: str, timeout_s: float) -> None:
        """Before a measurement: waits for killed candidate processes to be gone and for the
        spares' start-up that may not overlap it (overlap()); spares that fail to start are
        dropped."""
        while DYING:
            try:
                DYING[0].wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                pass
            DYING.pop(0)
        mode = self.overlap(device)
        for proc in list(self.procs):
            proc.cpu_ready()  # reads the warm replies that have come
            if mode == "all" or (mode in ("imports", "context") and not proc.gpu_in_flight()):
                continue
            reply, _ = proc.wait_warm(timeout_s, device_only=mode == "context")
            if reply is None:
                self.procs.remove(proc)
                discard(proc)

    def clear(self) -> None:
        procs, self.procs = self.procs, []
        for proc in procs:
            discard(proc)


def discard(proc: CandidateProcess) -> None:
    proc.close()
    shutil.rmtree(proc.scratch, ignore_errors=True)


def _exit_cleanup() -> None:
    SPARE.clear()
    while EARLY:
        discard(EARLY.pop())
    for proc in DYING:
        with contextlib.suppress(Exception):
            proc.wait(timeout=5)


SPARE = SparePool()
atexit.register(_exit_cleanup)


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


def kernel_table(kernels: Any) -> list[dict[str, Any]]:
    """The profiled forward's GPU kernels grouped by name: launches, device time and its share,
    longest first (at most 10); what the critic reads."""
    rows: dict[str, dict[str, Any]] = {}
    for k in kernels if isinstance(kernels, list) else []:
        if not isinstance(k, dict):
            continue
        name = str(k.get("name"))[:120]
        row = rows.setdefault(name, {"name": name, "launches": 0, "us": 0.0})
        row["launches"] += 1
        row["us"] += float(k.get("us") or 0.0)
    total = sum(r["us"] for r in rows.values()) or 1.0
    for r in rows.values():
        r["share"] = r["us"] / total
    return sorted(rows.values(), key=lambda r: -r["us"])[:10]


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


def set_reference_precision() -> None:
    integrity.set_precision_policy()


def tensor_nbytes(values: list[Any]) -> int:
    import torch

    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def same_inputs(ours: list[Any], theirs: list[Any]) -> bool:
    import torch

    if len(ours) != len(theirs):
        return False
    for a, b in zip(ours, theirs):
        if isinstance(a, torch.Tensor):
            if not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
                return False
            if not torch.equal(a, b.to(a.device)):
                return False
        elif a != b:
            return False
    return True


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


class Evaluation:
    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.device = resolve_device(opts.backend, opts.device)
        self.ref: Reference = load_reference(opts.reference, opts.overrides,
                                             time_limit_s=opts.timeout_s)
        # A candidate file that is no Python source (empty, huge, NUL bytes, not UTF-8) is a
        # compile_error verdict (run), not bad input: the candidate is what is judged.
        self.candidate_defect: str | None = None
        try:
            self.candidate_source = read_source(opts.candidate, "candidate")
            self.candidate_hash = hashlib.sha256(self.candidate_source.encode()).hexdigest()
        except SourceDefect as e:
            self.candidate_defect = str(e)
            self.candidate_source, self.candidate_hash = e.preview, e.sha256
        # Trial seeds (and the init seed) come from `seed` or this worker's secret, so the
        # reference's trial outputs can be reused across candidates (refcache.py); everything
        # timed draws from a fresh secret per evaluation (or from `seed`, reproducibly).
        self.master_seed = opts.seed if opts.seed is not None else refcache.WORKER_SECRET
        self.trial_rng = Random(self.master_seed)
        self.rng = Random(f"{opts.seed}/timing" if opts.seed is not None else secrets.randbits(62))
        self.cache_stats = {"hits": 0, "misses": 0}
        self.out = Outcome()
        self.result: dict[str, Any] = {}
        self.cand: CandidateProcess | None = None
        self.scratch = ""
        self.phases: dict[str, float] = {}
        self.process_start = "fresh"  # or "spare": a process started before this evaluation
        self.ceil: dict[str, Any] | None = None  # _ceilings()
        self.counts: floor_counts.Counts | None = None  # the floor's counts (_early_counts)
        self.counts_note = ""  # why the counts could not be cached, if so
        self.trial_signature: list[Any] | None = None  # the trial inputs' (all alike), or None

    def cache_root(self) -> str:
        return cache_root_of(self.opts)

    def extensions_dir(self) -> str:
        """torch's extension builds, one directory per candidate source (set at "load")."""
        return prebuild.extensions_dir(self.cache_root(), self.candidate_source)

    def candidate_env(self) -> dict[str, str]:
        """The candidate process's environment; the same for every candidate of one launch key,
        so a spare started before the candidate was known fits."""
        env = candidate_env_of(self.opts, self.cache_root())
        if self.device.startswith("cuda") and "TORCH_CUDA_ARCH_LIST" not in env:
            import torch

            major, minor = torch.cuda.get_device_capability(torch.device(self.device))
            env["TORCH_CUDA_ARCH_LIST"] = f"{major}.{minor}"  # build for this GPU only
        return env

    def launch_key(self) -> tuple[Any, ...]:
        """What a candidate process's start depends on (SparePool)."""
        o = self.opts
        return (sys.executable, self.device, o.no_sandbox, o.timeout_s, o.trials,
                o.timing_budget_s, o.threads, self.cache_root())

    def _new_process(self, gpu_later: bool = False,
                     profiler_anytime: bool = False) -> CandidateProcess:
        scratch = tempfile.mkdtemp(prefix="openkernel-cand-")
        try:
            return CandidateProcess(scratch, self.candidate_env(), self.opts, self.device,
                                    gpu_later, profiler_anytime)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise

    def _launch_early(self) -> None:
        """Takes a spare or starts a new candidate process before the reference is built, so
        that its start-up (torch's import: seconds) overlaps the reference's build and, on a
        GPU, the bandwidth for the physical floor (_start_candidate). A new process on a GPU
        starts with its imports only (no device work) until _start_candidate asks for the rest.
        Left in EARLY until _start_candidate adopts it: if the reference fails to build, the
        next evaluation (or the worker's exit) discards it."""
        while EARLY:
            discard(EARLY.pop())
        if getattr(self, "candidate_defect", None) is not None:
            return  # no candidate will run
        cand = SPARE.take(self.launch_key())
        if cand is not None:
            self.process_start = "spare"
        else:
            cand = self._new_process(gpu_later=self.device.startswith("cuda"))
        EARLY.append(cand)
        self.cand, self.scratch = cand, cand.scratch

    def _start_candidate(self, ref_model: Any = None) -> None:
        """The process _launch_early started (or, without one, a spare when one fits and is
        alive, else a new one); either way started up ("warm") before the candidate is loaded.
        A new process on a GPU gets the device's bandwidth measured (or checked against the
        cache) while it imports, before its own device work starts; then, while it starts up,
        the floor's counts are taken (_early_counts: no measurement runs then). A spare that
        fails to start is replaced once; a new process that cannot start is the machine's
        problem (EnvironmentProblem), not the candidate's: no candidate code has run."""
        cand = self.cand if self.cand is not None and self.cand in EARLY else None
        if cand is not None:
            EARLY.remove(cand)
        else:
            cand = SPARE.take(self.launch_key())
            self.process_start = "spare" if cand is not None else "fresh"
            cand = cand or self._new_process()
        self.cand, self.scratch = cand, cand.scratch
        if self.process_start == "fresh" and self.device.startswith("cuda"):
            self._ceilings()  # the process is still importing: the device is quiet
            cand.start_gpu()  # nothing below measures: its device stage may start
        self._early_counts(ref_model, count=self.process_start == "fresh")
        reply, why = cand.wait_warm(self.opts.timeout_s)
        if reply is None and self.process_start == "spare":
            discard(cand)
            self.process_start = "fresh"
            cand = self._new_process()
            self.cand, self.scratch = cand, cand.scratch
            reply, why = cand.wait_warm(self.opts.timeout_s)
        if reply is None:
            raise EnvironmentProblem(f"the candidate process could not start: {why}")

    def _early_counts(self, ref_model: Any, count: bool) -> None:
        """The physical floor's counts (floor_counts.py) from this worker's memo or the disk
        cache, or with `count` (a new process is still starting: seconds in which the worker
        would only wait) counted now on fresh inputs. The reference's buffers (a BatchNorm's
        running statistics) are restored afterwards, so the trials see the model as built.
        Any failure leaves the counts to _physical_floor, which meets and reports it as
        before."""
        import torch

        if ref_model is None:
            return
        try:
            k = floor_counts.key(self.ref.source_hash, self.ref.overrides, self.device, ref_model)
            got = floor_counts.lookup(self.cache_root(), k)
            if got is None and count:
                buffers = ([(b, b.detach().clone()) for b in ref_model.buffers()]
                           if isinstance(ref_model, torch.nn.Module) else [])
                seed = (Random(f"{self.opts.seed}/floor").getrandbits(31)
                        if self.opts.seed is not None else secrets.randbits(31))
                inputs = make_inputs(self.ref.module, seed, self.device)
                got = floor_counts.count(ref_model, inputs)
                del inputs
                with torch.no_grad():
                    for b, saved in buffers:
                        b.copy_(saved)
                self.counts_note = floor_counts.remember(self.cache_root(), k, got)
            self.counts = got
        except Exception:  # noqa: BLE001 - counted (and reported) again at the floor
            self.counts = None

    def _stage_files(self) -> tuple[str, str]:
        """Copies of the candidate and the reference inside the candidate's scratch directory,
        the only place (besides the caches) its sandbox can see."""
        paths = []
        for role, src in (("candidate", self.opts.candidate), ("reference", self.ref.path)):
            folder = os.path.join(self.scratch, role)
            os.makedirs(folder, exist_ok=True)
            dst = os.path.join(folder, os.path.basename(src))
            shutil.copyfile(src, dst)
            paths.append(dst)
        return paths[0], paths[1]

    @contextlib.contextmanager
    def _phase(self, name: str) -> Iterator[None]:
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.monotonic() - t0

    def run(self) -> dict[str, Any]:
        import torch

        start = time.monotonic()
        self._launch_early()
        with self._phase("reference"):
            set_reference_precision()
            if self.opts.threads > 0:
                torch.set_num_threads(self.opts.threads)
            init_seed = self.trial_rng.getrandbits(31)
            self.init_seed = init_seed
            ref_model = build_reference(self.ref, init_seed, self.device, self.opts.timeout_s)
        self.result = {"runtime_us": timing.stats([]), "ref_runtime_us": timing.stats([]),
                       "speedup": None, "compile_s": None}
        if self.candidate_defect is not None:
            self._fail("compile_error", self.candidate_defect)
            return self._finish(time.monotonic() - start)
        try:
            with self._phase("process_start"):
                self._start_candidate(ref_model)
                if self.opts.spare:  # spares start up during load and trials (SparePool)
                    SPARE.fill(self.launch_key(), self.device, self._new_process)
                SPARE.open_window()
            lock = self._wait_for_prebuild()
            try:
                with self._phase("load"):
                    loaded = self._load(init_seed)
            finally:
                if lock is not None:
                    lock.release()
            with self._phase("trials"):
                checked = loaded and self._trials(ref_model)
            with self._phase("profile"):
                profiled = checked and self._profile()
            if profiled:
                with self._phase("quiesce"):
                    SPARE.quiesce(self.device, self.opts.timeout_s)
                with self._phase("timing"):
                    self._time(ref_model)
                if self._graph_wanted():
                    with self._phase("graph_timing"):
                        self._time_graph(ref_model)
                with self._phase("floor"):
                    self._physical_floor(ref_model)
                if self.opts.compile_baseline and self.out.verdict == "correct":
                    with self._phase("compile_baseline"):
                        self._compile_baseline(ref_model)
        finally:
            with self._phase("cleanup"):
                if self.cand is not None:
                    self.cand.close()
                    shutil.rmtree(self.cand.scratch, ignore_errors=True)
                if self.device.startswith("cuda"):
                    torch.cuda.empty_cache()
                SPARE.open_window()  # measurements are over
        return self._finish(time.monotonic() - start)

    def _wait_for_prebuild(self) -> "prebuild.BuildLock | None":
        """The source's build lock (prebuild.py), held while the candidate loads, so that a
        pre-build of the same source still running finishes first and this load finds its
        objects in the cache instead of building them again beside it. The wait shows as
        phases_s.prebuild_wait. None for candidates that build no extension. A lock held past
        timeout_s is the environment's problem (a stuck build of the same source), reported as
        such: loading anyway could cost the candidate a second timeout it did not cause."""
        if not prebuild.wants_build(self.candidate_source):
            return None
        lock = prebuild.BuildLock(self.cache_root(), prebuild.source_key(self.candidate_source))
        waited = lock.acquire(self.opts.timeout_s)
        if waited is None:
            raise EnvironmentProblem(
                f"the build lock of this candidate's source was held for more than "
                f"{self.opts.timeout_s:g} s by another build of the same source (a pre-build or "
                f"an evaluation); the candidate was not loaded")
        if waited > 0.01:  # it had to wait
            self.phases["prebuild_wait"] = waited
        prebuild.remove_stale_batons(self.extensions_dir())  # from a build killed earlier
        return lock

    def _fail(self, verdict: str, reason: str) -> bool:
        self.out.verdict = verdict
        self.out.reasons.append(reason)
        return False

    def _ask(self, message: dict[str, Any], what: str) -> dict[str, Any] | None:
        assert self.cand is not None
        try:
            return self.cand.request(message, self.opts.timeout_s)
        except CandidateTimeout:
            self._fail("timeout", f"the candidate did not finish {what} within "
                                  f"{self.opts.timeout_s:g} s and was killed")
        except CandidateDied as e:
            self._fail("runtime_error", f"{e} (during {what})")
        return None

    def _error_reason(self, reply: dict[str, Any], what: str) -> str:
        where = f" at line {reply['line']}" if reply.get("line") else ""
        message = reply.get("message", "unknown error")
        return f"{what} failed{where}: {reply.get('error_type', 'Error')}: {message}"

    def _inline_builder(self) -> Any:
        """The load_inline build server for this candidate (docs/evaluation.md, "Compile
        caches"); opt-in with OPENKERNEL_INLINE_BUILD=1, else None (torch's own build in the
        candidate's sandbox): it has not yet built a CUDA candidate on the GPU machine."""
        if os.environ.get("OPENKERNEL_INLINE_BUILD", "0") != "1":
            return None
        from .inline_cache import Builder

        assert self.cand is not None
        self.cand.build_roots = [self.extensions_dir(), self.scratch]
        return Builder(os.path.join(self.cache_root(), "inline"), self.candidate_env(),
                       sandboxed=not self.opts.no_sandbox, timeout_s=self.opts.timeout_s)

    def _load(self, init_seed: int) -> bool:
        candidate, reference = self._stage_files()
        assert self.cand is not None
        self.cand.builder = self._inline_builder()
        reply = self._ask({"op": "load", "candidate": candidate, "reference": reference,
                           "overrides": self.opts.overrides, "device": self.device,
                           "init_seed": init_seed, "threads": self.opts.threads,
                           "extensions_dir": self.extensions_dir(),
                           "inline_build": self.cand.builder is not None},
                          "compiling and loading")
        self.cand.builder = None
        if reply is None:
            if self.out.verdict == "runtime_error":
                self.out.verdict = "compile_error"
            return False
        if not reply.get("ok"):
            if reply.get("compile"):
                return self._fail("compile_error", self._error_reason(reply, "compiling the candidate"))
            self.out.compiled = True
            return self._fail("runtime_error", self._error_reason(reply, "building ModelNew"))
        self.out.compiled = True
        self.result["compile_s"] = reply.get("compile_s")
        return True

    def _run_error(self, reply: dict[str, Any], what: str) -> bool:
        if reply.get("compile"):
            self.out.compiled = False
            return self._fail("compile_error", self._error_reason(reply, what))
        reason = self._error_reason(reply, what)
        if reply.get("oom"):
            reason += " (the device ran out of memory)"
        return self._fail("runtime_error", reason)

    def _trials(self, ref_model: Any) -> bool:
        import torch

        comparison = self.out.comparison
        for trial in range(self.opts.trials):
            seed = self.trial_rng.getrandbits(31)
            inputs = make_inputs(self.ref.module, seed, self.device)
            sig = floor_counts.signature(inputs)
            if trial == 0 or self.trial_signature != sig:
                self.trial_signature = sig if trial == 0 else None  # the floor's counts fit?
            expected = self._expected(ref_model, seed, inputs)
            reply = self._ask({"op": "run", "seed": seed}, f"correctness trial {trial + 1}")
            if reply is None:
                return False
            if not reply.get("ok"):
                return self._run_error(reply, f"running correctness trial {trial + 1}")
            if not self._check_outputs(reply.get("outputs"), expected, f"trial {trial + 1}",
                                       comparison):
                self.out.verdict = "incorrect"
                self.out.reasons.extend(r for r in comparison.reasons if r not in self.out.reasons)
                return False
            try:
                theirs = [rebuild(d, self.scratch) for d in reply.get("inputs", [])]
            except (ValueError, KeyError, TypeError, RuntimeError) as e:
                self.out.flag("input_transfer", f"the candidate's inputs could not be read back: {e}",
                              reject=True)
                return False
            if not same_inputs(inputs, theirs):
                self.out.flag("input_mutated", f"the candidate changed its inputs in trial "
                                               f"{trial + 1}", reject=True)
            del theirs, expected, inputs
            self._ask({"op": "release"}, "releasing outputs")
        self.out.correct = True
        return True

    def _check_outputs(self, descs: Any, expected: list[Any], where: str, comparison: Comparison,
                       ) -> bool:
        if not isinstance(descs, list):
            comparison.fail(f"{where}: the candidate returned no outputs")
            return False
        if len(descs) != len(expected):
            comparison.fail(f"{where}: the candidate returned {len(descs)} output(s), the "
                            f"reference {len(expected)}")
            return False
        for i, (desc, exp) in enumerate(zip(descs, expected)):
            label = f"{where}, output {i}"
            if isinstance(desc, dict) and desc.get("kind") == "tensor":
                if not desc.get("exact_type"):
                    comparison.fail(f"{label}: returned a {desc.get('type')}, not exactly "
                                    f"torch.Tensor")
                    continue
                if str(desc.get("device", "")).split(":")[0] != self.device.split(":")[0]:
                    comparison.fail(f"{label}: on device {desc.get('device')}, expected "
                                    f"{self.device}")
                    continue
            try:
                value = rebuild(desc, self.scratch)
            except (ValueError, KeyError, TypeError, RuntimeError) as e:
                comparison.fail(f"{label}: {e}")
                continue
            compare_values(exp, value, label, comparison)
            del value
        return comparison.ok

    def _profile(self) -> bool:
        """Fallback to PyTorch, changed global state, persisting L2 (see integrity.py)."""
        reply = self._ask({"op": "profile", "seed": self.rng.getrandbits(31)}, "profiling")
        if reply is None:
            return False
        if not reply.get("ok"):
            return self._run_error(reply, "profiling")
        before, after = reply.get("state_before") or {}, reply.get("state_after") or {}
        changed = sorted(k for k in before if before.get(k) != after.get(k))
        if changed:
            self.out.flag("global_state_changed", "the candidate changed global torch state: " +
                          ", ".join(f"{k} {before[k]} -> {after.get(k)}" for k in changed) +
                          " (it cannot affect the reference, which runs in another process)",
                          reject=False)
        # The device's default limit is not zero (11.25 MiB on an H200): only a raise counts.
        l2, l2_before = reply.get("persisting_l2_bytes"), reply.get("persisting_l2_bytes_before")
        if isinstance(l2, int) and l2 > (l2_before if isinstance(l2_before, int) else 0):
            self.out.flag("persisting_l2", f"the candidate raised the persisting-L2 limit from "
                          f"{l2_before} to {l2} bytes; persisting lines survive the cache flush "
                          "between timed runs", reject=True)
        prof = reply.get("profile") or {}
        ops = [o for o in prof.get("ops", []) if isinstance(o, dict)]
        compute = [o for o in ops if str(o.get("name")) not in NON_COMPUTE_OPS]
        names = sorted({str(o.get("name")) for o in compute})
        self.result["profile"] = {"torch_ops": names[:20],
                                  "kernels": sorted({str(k.get("name"))[:80] for k in
                                                     prof.get("kernels", [])})[:20],
                                  "kernel_table": kernel_table(prof.get("kernels", [])),
                                  "op_table": sorted(({"name": str(o.get("name")),
                                                       "self_cpu_us": o.get("self_cpu_us"),
                                                       "count": o.get("count")} for o in compute),
                                                     key=lambda o: -(o["self_cpu_us"] or 0))[:10],
                                  "forward_cpu_us": prof.get("forward_cpu_us")}
        if self.device.startswith("cuda"):
            kernels = [k for k in prof.get("kernels", []) if isinstance(k, dict)]
            defined = defined_kernel_names(self.candidate_source)
            custom = [k for k in kernels
                      if not is_library_kernel(str(k.get("name", "")), defined)]
            if not custom:
                self.out.flag("no_custom_kernel", "no custom GPU kernel ran in the candidate's "
                              "forward; it only launched PyTorch or library kernels" +
                              (f" ({', '.join(names[:5])})" if names else ""), reject=True)
            elif compute:
                self.out.flag("torch_ops_in_forward", "besides its own kernels the candidate runs "
                              f"PyTorch compute ops: {', '.join(names[:5])}", reject=False)
        else:
            by_torch = prof.get("outputs_by_torch") or []
            if compute and by_torch and all(by_torch):
                self.out.flag("no_custom_kernel", "the candidate's outputs are produced by "
                              f"PyTorch ops ({', '.join(names[:5])}), not by a custom kernel",
                              reject=True)
            elif compute:
                self.out.flag("torch_ops_in_forward", "besides its own kernel the candidate runs "
                              f"PyTorch compute ops: {', '.join(names[:5])}", reject=False)
        return True

    def _ping_us(self) -> float:
        """Median round trip of an empty request to the candidate process."""
        samples = []
        for _ in range(7):
            t0 = time.monotonic()
            if self._ask({"op": "ping"}, "a ping") is None:
                return 0.0
            samples.append((time.monotonic() - t0) * 1e6)
        samples.sort()
        return samples[len(samples) // 2]

    def _ceilings(self) -> dict[str, Any]:
        """The device's bandwidth and peak FLOP rate (roofline.ceilings), once per evaluation,
        through the cache in the worker's cache directory (bandwidth_cache.py)."""
        if self.ceil is None:
            self.ceil = roofline.ceilings(self.device, self.cache_root())
        return self.ceil

    def _physical_floor(self, ref_model: Any) -> None:
        """The floor check, with the counts taken early (_early_counts) when they were counted
        on inputs shaped like the trials', else counted now on fresh inputs."""
        import torch

        c = self.result["runtime_us"]["median"]
        if not c:
            return
        counted_now = not floor_counts.usable(self.counts, self.trial_signature)
        if counted_now:
            inputs = make_inputs(self.ref.module, self.rng.getrandbits(31), self.device)
            counts = floor_counts.count(ref_model, inputs)
            del inputs
            if counts.input_signature == self.trial_signature:  # the next evaluation's
                k = floor_counts.key(self.ref.source_hash, self.ref.overrides, self.device,
                                     ref_model)
                self.counts_note = floor_counts.remember(self.cache_root(), k, counts)
        else:
            assert self.counts is not None
            counts = self.counts
        flops, nbytes = counts.flops, floor_counts.unavoidable_bytes(counts, ref_model)
        ceil = self._ceilings()
        floor = roofline.floor_us(flops, nbytes, ceil)
        self.result["roofline"] = {"flops": flops, "bytes": nbytes, "floor_us": floor,
                                   "counts_source": counts.source,
                                   "bandwidth_bytes_per_s": ceil["bandwidth"],
                                   "bandwidth_source": ceil["bandwidth_source"],
                                   "bandwidth_s": ceil["bandwidth_s"],
                                   "peak_flops": ceil["peak_flops"],
                                   "fraction_of_speed_of_light": floor / c}
        if ceil.get("bandwidth_note"):
            self.result["roofline"]["bandwidth_note"] = ceil["bandwidth_note"]
        if c < floor * 0.9:
            self.out.flag("below_physical_floor", f"the candidate's median {c:.1f} us is below the "
                          f"physical floor of {floor:.1f} us ({nbytes} bytes at the measured "
                          f"{ceil['bandwidth'] / 1e9:.0f} GB/s, {flops} FLOP)", reject=True)
        if self.counts_note:
            self.result["roofline"]["counts_note"] = self.counts_note
        if counted_now and self.device.startswith("cuda"):
            torch.cuda.empty_cache()

    def _time(self, ref_model: Any) -> None:
        """Interleaved blocks; each block first gives every pool entry new contents (in place, for
        both sides, untimed), then runs each entry once. Every timed call therefore sees inputs
        never seen before, and the outputs of randomly chosen blocks, picked after the candidate
        replied, are compared with the reference's."""
        import torch

        opts = self.opts
        probe = make_inputs(self.ref.module, 0, self.device)
        per_set = max(tensor_nbytes(probe), 1)
        del probe
        if self.device != "cpu":
            budget = torch.cuda.mem_get_info(torch.device(self.device))[0] * 0.08
        else:
            budget = 256 << 20
        pool_size = int(max(1, min(8, budget // (2 * per_set))))
        pool = [make_inputs(self.ref.module, self.rng.getrandbits(31), self.device)
                for _ in range(pool_size)]
        flush = timing.flush_buffer(self.device)
        flush_us = timing.flush_cost_us(self.device, flush)
        timing.time_block(ref_model, pool, 3, self.device, flush, keep_outputs=False)  # warm-up
        reply = self._ask({"op": "prepare", "seeds": [self.rng.getrandbits(31) for _ in pool],
                           "warmup": 3}, "warm-up before timing")
        if reply is None:
            return
        if not reply.get("ok"):
            self._run_error(reply, "warming up")
            return
        self.ping_us = self._ping_us()
        cand_pids = timing.descendants(self.cand.proc.pid) if self.cand is not None else []
        self.flush_cpu_us = timing.flush_cpu_us(flush) if self.device == "cpu" else 0.0
        cand_cpu_us = 0.0
        # Back-to-back series ("b2b") and rested series ("rest"); the first block is always back
        # to back, and decides whether rested blocks follow (alternating with back-to-back ones).
        ref_times: dict[str, list[float]] = {"b2b": [], "rest": []}
        cand_times: dict[str, list[float]] = {"b2b": [], "rest": []}
        walls: dict[str, list[TimedBlock]] = {"b2b": [], "rest": []}
        rested = False
        idle_us = 0.0  # the rested gap, the same for both sides (from the reference's median)
        deadline = time.monotonic() + opts.timing_budget_s
        blocks = checked = 0
        while True:
            # Both series need enough samples (the back-to-back one carries the checks); the
            # reported one's relative standard errors decide; the cap counts both.
            series = "rest" if rested else "b2b"  # the series the result will report
            total = len(cand_times["b2b"]) + len(cand_times["rest"])
            final = (time.monotonic() >= deadline
                     or total + pool_size > opts.max_timing_samples
                     or (all(len(cand_times[k]) >= opts.min_timing_samples
                             for k in (("b2b", "rest") if rested else ("b2b",)))
                         and timing.relative_stderr(ref_times[series]) < opts.target_rse
                         and timing.relative_stderr(cand_times[series]) < opts.target_rse))
            kind = "rest" if rested and blocks % 2 == 1 else "b2b"
            seeds = [self.rng.getrandbits(31) for _ in pool]
            for entry, seed in zip(pool, seeds):
                refresh_inputs(entry, self.ref.module, seed, self.device)
            times, _, ref_outs = timing.time_block(
                ref_model, pool, pool_size, self.device, flush, keep_outputs=True,
                idle_us=idle_us if kind == "rest" else 0.0)
            ref_times[kind] += times
            reply = self._ask({"op": "refresh", "seeds": seeds}, "refreshing timing inputs")
            if reply is None or not reply.get("ok"):
                if reply is not None:
                    self._run_error(reply, "refreshing timing inputs")
                return
            request: dict[str, Any] = {"op": "time"}
            if kind == "rest":
                request["idle_us"] = idle_us
            cpu_before = timing.tree_cpu_us(cand_pids)
            sent = time.monotonic()
            reply = self._ask(request, "a timed run")
            outside_us = (time.monotonic() - sent) * 1e6
            cand_cpu_us += timing.tree_cpu_us(cand_pids) - cpu_before
            if reply is None:
                return
            if not reply.get("ok"):
                self._run_error(reply, "timing")
                return
            got = reply.get("times_us")
            rests = reply.get("rest_us") if kind == "rest" else []
            if not _durations(got, pool_size) or not _durations(rests, len(got) if kind ==
                                                                 "rest" else 0):
                self.out.flag("timer_mismatch", "the candidate process returned malformed timings",
                              reject=True)
                return
            if kind == "rest" and not self._check_rests(outside_us, got, rests, idle_us):
                return
            cand_times[kind] += [float(t) for t in got]
            # A rested block's outside time also holds its gaps: expected, but not part of the
            # claimed time that the proportional allowance grows with (each gap counted at most
            # twice the length asked for, whatever the candidate reports).
            gaps = float(sum(min(float(r), 2.0 * idle_us) for r in rests))
            walls[kind].append(TimedBlock(outside_us, float(sum(got)), pool_size, gaps))
            blocks += 1
            if final or blocks == 1 or self.rng.random() < 0.2:
                checked += 1
                reply = self._ask({"op": "timed_outputs"}, "exporting timed outputs")
                if reply is None:
                    return
                if not self._check_timed_outputs(reply.get("outputs"), ref_outs, blocks):
                    break
            del ref_outs
            if blocks == 1 and self._rested_wanted(ref_times["b2b"]):
                rested = True
                idle_us = timing.rest_gap_us(statistics.median(ref_times["b2b"]))
                continue  # the decision was made on one block: time the rested series too
            if final:
                break
        self._cross_check(walls["b2b"], flush_us)
        if walls["rest"]:
            self._cross_check(walls["rest"], flush_us, result_key="rested_wall_check")
        if self.device == "cpu":
            self._cpu_check(walls["b2b"], cand_cpu_us)
        info: dict[str, Any] = {"mode": "events", "pool_size": pool_size, "blocks": blocks,
                                "checked_blocks": checked, "flush_bytes": flush.numel() * 4,
                                "flush_us": flush_us}
        series = "b2b"
        if rested:
            series = self._rested_verdict(info, ref_times, cand_times, idle_us,
                                          len(walls["rest"]))
        self.result["runtime_us"] = timing.stats(cand_times[series])
        self.result["ref_runtime_us"] = timing.stats(ref_times[series])
        c = self.result["runtime_us"]["median"]
        r = self.result["ref_runtime_us"]["median"]
        if c and r:
            self.result["speedup"] = r / c
            if r / c > 50:
                self.out.flag("excessive_speedup", f"a {r / c:.1f}x speedup over the reference is "
                              "implausibly large; check the kernel by hand", reject=False)
        self.result["timing"] = info
        self._ask({"op": "release"}, "releasing outputs")

    def _rested_wanted(self, ref_b2b: list[float]) -> bool:
        """Rested timing (timing.time_block's idle_us) for CUDA, when asked ("on") or, by default
        ("auto"), when the reference's back-to-back median in the first block reaches
        REST_AUTO_US: there a power-limited kernel slows under sustained load (an 8192^3 bf16
        matmul on the H200: 1.16x ncu's time back to back, CV 5.4%; rested 1.003x, CV 0.1%).
        Decided on the reference alone, as `openkernel baseline` does, so the candidate cannot
        ask for it by being slow in the first block."""
        mode = self.opts.rested
        if mode == "off" or not self.device.startswith("cuda") or not ref_b2b:
            return False
        return mode == "on" or statistics.median(ref_b2b) >= REST_AUTO_US

    def _check_rests(self, outside_us: float, got: list[float], rests: list[float],
                     idle_us: float) -> bool:
        """A rested block's gaps must have happened, each at least half as long as asked:
        skipping them would leave room in the block's wall time for work hidden from the
        events."""
        n = len(got)
        short = sum(1 for r in rests if r < 0.5 * idle_us)
        if short or outside_us < sum(got) + 0.5 * n * idle_us:
            self.out.flag("timer_mismatch", f"the candidate's rested block took "
                          f"{outside_us / 1e3:.2f} ms for {n} calls it timed at "
                          f"{sum(got) / 1e3:.2f} ms, with {short} of its {n} gaps shorter than "
                          f"half the {idle_us:.1f} us asked for: the harness was changed",
                          reject=True)
            return False
        return True

    def _rested_verdict(self, info: dict[str, Any], ref_times: dict[str, list[float]],
                        cand_times: dict[str, list[float]], idle_us: float,
                        rest_blocks: int) -> str:
        """Which series the result reports. The rested one, unless the candidate gains more from
        the rest than power throttling explains: its rested / back-to-back median ratio must be
        at least REST_MIN_RATIO and at most REST_REF_SLACK below the reference's. Work that
        escapes the events only when the device idles between calls would look like that, so
        then both sides' back-to-back figures stand, with the flag rested_gap. A rested median
        of zero is a lie (timer_mismatch)."""
        def med(xs: list[float]) -> float | None:
            return statistics.median(xs) if xs else None

        c_rest, c_b2b = med(cand_times["rest"]), med(cand_times["b2b"])
        r_rest, r_b2b = med(ref_times["rest"]), med(ref_times["b2b"])
        ratio = c_rest / c_b2b if c_rest is not None and c_b2b else None
        ref_ratio = r_rest / r_b2b if r_rest is not None and r_b2b else None
        rest = {"ok": False, "idle_us": idle_us, "blocks": rest_blocks, "ratio": ratio,
                "ref_ratio": ref_ratio, "reason": None,
                "back_to_back": {"runtime_us": timing.stats(cand_times["b2b"]),
                                 "ref_runtime_us": timing.stats(ref_times["b2b"])}}
        info["rested"] = rest
        if c_rest is None or r_rest is None:
            rest["reason"] = "no rested block finished within the timing budget"
            return "b2b"
        if c_rest <= 0:
            rest["reason"] = "the candidate's rested median is zero"
            self.out.flag("timer_mismatch", "the candidate's rested calls took no time by its own "
                          "events: a patched timer or work moved out of the timed call",
                          reject=True)
            return "b2b"
        floor = max(REST_MIN_RATIO, (ref_ratio or 1.0) - REST_REF_SLACK)
        if ratio is not None and ratio < floor:
            rest["reason"] = f"rested {ratio:.2f}x of back to back, below {floor:.2f}"
            self.out.flag("rested_gap", f"with an idle gap before each call the candidate takes "
                          f"{c_rest:.1f} us, {ratio:.2f}x its back-to-back time ({c_b2b:.1f} us; "
                          f"the reference: {ref_ratio or 0:.2f}x): more than power throttling "
                          "explains, as if work escaped the timer while the device idled; the "
                          "back-to-back figures are reported", reject=False)
            return "b2b"
        rest["ok"] = True
        info["mode"] = "events_rested"
        return "rest"

    def _check_timed_outputs(self, descs: Any, ref_outputs: list[Any], block: int,
                             what: str = "timed block") -> bool:
        if not isinstance(descs, list) or len(descs) != len(ref_outputs):
            self.out.flag("timed_output_mismatch", "the candidate did not return its timed outputs",
                          reject=True)
            return False
        comparison = Comparison()
        for i, (d, exp) in enumerate(zip(descs, ref_outputs)):
            self._check_outputs(d, flatten(exp), f"{what} {block}, input set {i + 1}",
                                comparison)
        if not comparison.ok:
            self.out.flag("timed_output_mismatch", "outputs produced while timed differ from the "
                          "reference (memoisation, batching across calls, or different behaviour "
                          "when timed): " + "; ".join(comparison.reasons[:2]), reject=True)
        return comparison.ok

    # -- reference outputs reused across candidates (refcache.py) --------------------------------

    def _problem_key(self) -> tuple[Any, ...]:
        import torch

        return (self.ref.source_hash,
                tuple(sorted((k, repr(v)) for k, v in self.ref.overrides.items())),
                self.device, refcache.PRECISION_POLICY, torch.__version__,
                self.opts.threads if self.device == "cpu" else 0, self.init_seed)

    def _expected(self, ref_model: Any, seed: int, inputs: list[Any]) -> list[Any]:
        """The reference's outputs for a trial: from the worker's cache when this problem and seed
        were run before, else computed (and kept unless the reference changes its inputs)."""
        import torch

        problem = self._problem_key()
        key = (problem, seed)
        cap = refcache.cap_bytes(self.device)
        cacheable = cap > 0 and problem not in refcache.CACHE.uncacheable
        if cacheable:
            hit = refcache.CACHE.get(key)
            if hit is not None:
                self.cache_stats["hits"] += 1
                return hit
        before = refcache.fingerprint(inputs) if cacheable else None
        with torch.no_grad():
            expected = flatten(ref_model(*inputs))
        timing.synchronize(self.device)
        self.cache_stats["misses"] += 1
        if before is not None:
            if refcache.fingerprint(inputs) != before:
                refcache.CACHE.uncacheable.add(problem)
            else:
                refcache.CACHE.put(key, [e.detach() if isinstance(e, torch.Tensor) else e
                                         for e in expected], cap)
        return expected

    # -- CUDA-graph timing ------------------------------------------------------------------------

    def _ask_soft(self, message: dict[str, Any], what: str) -> tuple[dict[str, Any] | None, str]:
        """Like _ask, but a dead or hung candidate is only reported, not a verdict: used where a
        failure means falling back (graph timing), not that the candidate is wrong."""
        assert self.cand is not None
        try:
            return self.cand.request(message, self.opts.timeout_s), ""
        except CandidateTimeout:
            return None, f"the candidate did not finish {what} within {self.opts.timeout_s:g} s"
        except CandidateDied as e:
            return None, str(e)

    def _graph_wanted(self) -> bool:
        info = self.result.get("timing")
        if self.out.verdict != "correct" or not isinstance(info, dict):
            return False
        mode = self.opts.cuda_graph
        if mode == "off":
            return False
        if not self.device.startswith("cuda"):
            if mode == "on":
                info["cuda_graph"] = {"ok": False, "reason": "CUDA graphs need a CUDA device"}
            return False
        median = (self.result.get("runtime_us") or {}).get("median")
        if mode == "auto" and not (median and median < GRAPH_AUTO_US):
            return False
        return True

    def _graph_fallback(self, reason: str) -> None:
        """Graph timing failed: the eager (events) timing, which carries every check, stands. Flagged
        graph_fallback with the reason; the flag never rejects, not even under --strict."""
        info = self.result["timing"]
        info["cuda_graph"] = {"ok": False, "reason": reason[:1500]}
        info.setdefault("notes", []).append("CUDA-graph timing not used: " + reason[:300])
        self.out.flag("graph_fallback", "CUDA-graph timing not used, events timing stands: " +
                      reason[:600], reject=False)

    def _capture_notes(self, *notes: Any) -> None:
        """Notes of either side's GraphTimer (no blocking capture stream could be made)."""
        info = self.result["timing"]
        for note in notes:
            if isinstance(note, str) and note:
                info.setdefault("notes", []).append("CUDA-graph capture: " + note[:300])

    def _time_graph(self, ref_model: Any) -> None:
        """Both sides capture one forward per entry of a pool of input buffers in a CUDA graph and
        are timed by replay; before each replay both overwrite every entry in place with inputs
        from fresh seeds (untimed) and flush the cache. The replayed outputs of the first, the
        last and one in five random replays (chosen after the candidate replied) are checked
        against the reference's replayed outputs."""
        import torch

        opts = self.opts
        info = self.result["timing"]
        probe = make_inputs(self.ref.module, 0, self.device)
        per_set = max(tensor_nbytes(probe), 1)
        del probe
        free = torch.cuda.mem_get_info(torch.device(self.device))[0]
        k = timing.graph_pool_size(per_set, free)
        pool = [make_inputs(self.ref.module, self.rng.getrandbits(31), self.device)
                for _ in range(k)]
        try:
            ref_graph = timing.GraphTimer(ref_model, pool, self.device)
        except Exception as e:  # noqa: BLE001 - any capture failure means: no graph timing
            del pool
            try:
                torch.cuda.synchronize(torch.device(self.device))
            except RuntimeError:
                pass
            self._graph_fallback("the reference cannot be captured in a CUDA graph: "
                                 f"{type(e).__name__}: {e}")
            return
        self._capture_notes(ref_graph.note)
        try:
            self._graph_blocks(ref_graph, pool, k)
        finally:
            ref_graph.close()
            del pool
            torch.cuda.empty_cache()

    def _graph_blocks(self, ref_graph: Any, pool: list[list[Any]], k: int) -> None:
        opts = self.opts
        info = self.result["timing"]
        reply, why = self._ask_soft({"op": "graph_prepare",
                                     "seeds": [self.rng.getrandbits(31) for _ in pool]},
                                    "capturing its forward in a CUDA graph")
        if reply is None or not reply.get("ok"):
            if reply is not None:
                why = f"{reply.get('error_type', 'Error')}: {reply.get('message', '')}"
            self._graph_fallback(f"the candidate cannot be captured in a CUDA graph: {why}")
            return
        if reply.get("forwards") != k:
            self._graph_fallback("the candidate captured a graph of the wrong size")
            return
        self._capture_notes(reply.get("note"))
        streams = {"reference": ref_graph.capture_stream,
                   "candidate": reply.get("capture_stream") if reply.get("capture_stream") in
                   ("blocking", "torch") else None}
        flush = timing.flush_buffer(self.device)
        flush_us = timing.flush_cost_us(self.device, flush)
        ref_times: list[float] = []
        cand_times: list[float] = []
        walls: list[TimedBlock] = []
        deadline = time.monotonic() + max(1.0, opts.timing_budget_s / 2)
        blocks = checked = 0
        while True:
            final = (time.monotonic() >= deadline
                     or len(cand_times) >= opts.max_timing_samples
                     or (len(cand_times) >= opts.min_timing_samples
                         and timing.relative_stderr(ref_times) < opts.target_rse
                         and timing.relative_stderr(cand_times) < opts.target_rse))
            seeds = [self.rng.getrandbits(31) for _ in pool]
            for entry, seed in zip(pool, seeds):
                refresh_inputs(entry, self.ref.module, seed, self.device)
            ref_us, _ = ref_graph.replay(flush)
            ref_times.append(ref_us / k)
            reply, why = self._ask_soft({"op": "refresh", "seeds": seeds, "pool": "graph"},
                                        "refreshing graph inputs")
            if reply is None or not reply.get("ok"):
                self._graph_fallback("refreshing the graph's inputs failed: " +
                                     (why or str((reply or {}).get("message", ""))))
                return
            sent = time.monotonic()
            reply, why = self._ask_soft({"op": "graph_time"}, "a timed graph replay")
            outside_us = (time.monotonic() - sent) * 1e6
            if reply is None or not reply.get("ok"):
                self._graph_fallback(f"a graph replay failed: "
                                     f"{why or (reply or {}).get('message', '')}")
                return
            got = reply.get("graph_us")
            if not isinstance(got, (int, float)) or isinstance(got, bool) or not got >= 0:
                self.out.flag("timer_mismatch", "the candidate process returned a malformed "
                              "graph timing", reject=True)
                return
            cand_times.append(float(got) / k)
            walls.append(TimedBlock(outside_us, float(got), 1))  # one flush per replay
            blocks += 1
            if final or blocks == 1 or self.rng.random() < 0.2:
                checked += 1
                reply, why = self._ask_soft({"op": "timed_outputs"}, "exporting replayed outputs")
                if reply is None:
                    self._graph_fallback(f"exporting replayed outputs failed: {why}")
                    return
                if not self._check_timed_outputs(reply.get("outputs"), ref_graph.outputs,
                                                 blocks, "replayed CUDA graph"):
                    # Rejected. The graph missed or changed work, so its numbers mean nothing
                    # (nor may the physical floor judge them): the eager numbers stay reported.
                    self._ask_soft({"op": "graph_release"}, "releasing the graph")
                    info["cuda_graph"] = {"ok": False, "replays": blocks, "reason": "the "
                                          "replayed outputs differ from the reference's; the "
                                          "eager numbers stand"}
                    return
            if final:
                break
        self._ask_soft({"op": "graph_release"}, "releasing the graph")
        self._cross_check(walls, flush_us, result_key="graph_wall_check")
        eager = {"runtime_us": self.result["runtime_us"],
                 "ref_runtime_us": self.result["ref_runtime_us"],
                 "speedup": self.result.get("speedup")}
        self.result["runtime_us"] = timing.stats(cand_times)
        self.result["ref_runtime_us"] = timing.stats(ref_times)
        info.update({"mode": "cuda_graph", "events": eager,
                     "cuda_graph": {"ok": True, "forwards_per_replay": k, "replays": blocks,
                                    "checked_replays": checked, "flush_us": flush_us,
                                    "capture_stream": streams}})
        c = self.result["runtime_us"]["median"]
        r = self.result["ref_runtime_us"]["median"]
        self.result["speedup"] = r / c if c and r else None
        if c and r and r / c > 50:
            self.out.flag("excessive_speedup", f"a {r / c:.1f}x speedup over the reference is "
                          "implausibly large; check the kernel by hand", reject=False)
        e = (eager["runtime_us"] or {}).get("median")
        if c and e and e / c > GRAPH_EAGER_RATIO:
            self.out.flag("graph_much_faster", f"replayed in a CUDA graph the candidate takes "
                          f"{c:.2f} us per forward, {e / c:.1f}x less than timed eagerly "
                          f"({e:.2f} us); launch overhead explains some of it, batching work "
                          "across the graph's forwards would explain more: check by hand",
                          reject=False)

    # -- torch.compile baseline ---------------------------------------------------------------------

    def _compile_baseline(self, ref_model: Any) -> None:
        """Times torch.compile(reference) with the method the candidate was timed with; reports
        compile_runtime_us and speedup_compile, or null with a reason. Kept per worker and
        problem, so a search pays the compile once."""
        import torch

        mode = (self.result.get("timing") or {}).get("mode", "events")
        key = (self._problem_key(), mode)
        info = refcache.COMPILE_BASELINES.get(key)
        if info is not None:
            info = {**info, "cached": True}
        else:
            info = {"ok": False, "reason": None, "method": mode, "compile_s": None,
                    "runtime_us": None, "cached": False}
            if not callable(getattr(torch, "compile", None)):
                info["reason"] = f"torch {torch.__version__} has no torch.compile"
            else:
                try:
                    info.update(self._time_compiled(ref_model, mode))
                except Exception as e:  # noqa: BLE001 - the baseline is optional
                    info["reason"] = (f"torch.compile of the reference failed: "
                                      f"{type(e).__name__}: {str(e)[:800]}")
                finally:
                    dynamo = getattr(torch, "_dynamo", None)
                    if dynamo is not None and hasattr(dynamo, "reset"):
                        dynamo.reset()
                    if self.device.startswith("cuda"):
                        torch.cuda.empty_cache()
            refcache.COMPILE_BASELINES[key] = info
        self.result["compile_baseline"] = info
        if not info.get("ok"):
            return
        self.result["compile_runtime_us"] = info["runtime_us"]
        timing_info = self.result.get("timing") or {}
        cand = self.result.get("runtime_us") or {}
        if info.get("method") != timing_info.get("mode"):  # compiled graph capture failed
            cand = ((timing_info.get("events") or {}).get("runtime_us")) or cand
        c, k = cand.get("median"), (info["runtime_us"] or {}).get("median")
        self.result["speedup_compile"] = k / c if c and k else None

    def _time_compiled(self, ref_model: Any, mode: str) -> dict[str, Any]:
        budget = max(1.0, self.opts.timing_budget_s / 2)
        return time_compiled(ref_model, self.ref.module, self.device, self.rng, mode, budget,
                             self.opts)

    def _cpu_check(self, walls: list[TimedBlock], cpu_us: float) -> None:
        """CPU candidates: the CPU time the kernel charged to the candidate's processes (read
        from /proc by this process) cannot exceed what its claimed times allow on its threads.
        The flush's own CPU time grows with memory contention, so a moderate excess is only
        reported; three times the allowance rejects."""
        claimed = sum(w.claimed_us for w in walls)
        n = sum(w.calls for w in walls)
        threads = max(1, self.opts.threads or (os.cpu_count() or 1))
        allowed = ((claimed * threads * 1.2 + n * (self.flush_cpu_us * 1.5 + 200.0)
                    + len(walls) * 3000.0) * 1.5 + 50_000.0)
        self.result["cpu_check"] = {"cpu_us": cpu_us, "allowed_us": allowed, "threads": threads}
        message = (f"the candidate's processes used {cpu_us / 1e3:.1f} ms of CPU time for {n} "
                   f"timed runs it claims took {claimed / 1e3:.1f} ms on {threads} thread(s)")
        if cpu_us > 3 * allowed:
            self.out.flag("timer_mismatch", message + ": a patched timer or work outside the "
                          "timed call", reject=True)
        elif cpu_us > allowed:
            self.out.flag("cpu_time_excess", message + " (more than expected; on a busy machine "
                          "the cache flush costs more)", reject=False)

    def _cross_check(self, walls: list[TimedBlock], flush_us: float,
                     result_key: str = "wall_check") -> None:
        """The candidate's own timings against the worker's clock around each block. Rested
        blocks' gaps are expected in the outside time but do not grow the allowance, which is a
        share of the claimed time.

        Each block's excess (outside time less claimed time and gaps) is set against that block's
        allowance; the median block decides, as the reported time is a median: work hidden from
        the timer in most calls shows in most blocks, while a host-side stall (another process,
        the OS) lengthens a few. A total excess over twice the total allowance also rejects."""
        per_block = 3.0 * getattr(self, "ping_us", 0.0) + 1000.0
        excess: list[float] = []
        allowances: list[float] = []
        for w in walls:
            allow = per_block + w.calls * (flush_us * 1.5 + 100.0) + 0.25 * w.claimed_us
            if self.device == "cpu":
                # The CPU-time check is the precise one there; wall time only catches gross
                # escapes, since a busy machine stretches it.
                allow = 3.0 * (w.claimed_us + allow)
            excess.append(w.outside_us - w.claimed_us - w.gaps_us)
            allowances.append(allow)
        outside = sum(w.outside_us for w in walls)
        claimed = sum(w.claimed_us for w in walls)
        n = sum(w.calls for w in walls)
        gaps = sum(w.gaps_us for w in walls)
        allowance = sum(allowances)
        over = statistics.median([e - a for e, a in zip(excess, allowances)]) if walls else 0.0
        of_gaps = f" and {gaps / 1e3:.1f} ms of gaps" if gaps else ""
        if claimed + gaps > outside * 1.05 + 1000:
            self.out.flag("timer_mismatch", f"the candidate's timings ({claimed / 1e3:.1f} ms"
                          f"{of_gaps}) exceed the wall time measured outside it "
                          f"({outside / 1e3:.1f} ms)", reject=True)
        elif over > 0 or outside - claimed - gaps > 2 * allowance:
            self.out.flag("timer_mismatch", f"wall time measured outside the candidate "
                          f"({outside / 1e3:.1f} ms for {n} runs in {len(walls)} blocks) is far "
                          f"above its own timings ({claimed / 1e3:.1f} ms{of_gaps}; the median "
                          f"block is {max(over, 0.0) / 1e3:.2f} ms over its allowance): work "
                          f"escaping the timer (another stream, a thread) or a patched timer",
                          reject=True)
        self.result[result_key] = {"claimed_us": claimed, "outside_us": outside, "runs": n,
                                   "blocks": len(walls), "gaps_us": gaps,
                                   "allowance_us": allowance, "median_block_over_us": over,
                                   "ping_us": getattr(self, "ping_us", None)}

    def _finish(self, wall_s: float) -> dict[str, Any]:
        o = self.out
        if o.verdict == "correct" and not o.correct:
            o.verdict = "runtime_error"
        if self.opts.strict and set(o.flags) - STRICT_EXEMPT and o.verdict == "correct":
            o.verdict = "rejected"
            o.reasons.append("strict mode rejects any flag")
        correct = o.verdict == "correct"
        if o.verdict == "correct" and not o.reasons:
            o.reasons.append(f"matched the reference on {self.opts.trials} trials with fresh inputs")
        if self.cand is not None and not self.cand.launch.enabled:  # after strict: not a rejection
            o.flag("no_sandbox", self.cand.launch.reason, reject=False)
        res = self.result
        return {
            "verdict": o.verdict,
            "compiled": o.compiled,
            "correct": correct,
            "valid": o.verdict != "rejected",
            "flags": o.flags,
            "reasons": o.reasons,
            "max_abs_error": o.comparison.max_abs_error if o.compiled else None,
            "max_rel_error": o.comparison.max_rel_error if o.compiled else None,
            "runtime_us": res.get("runtime_us"),
            "ref_runtime_us": res.get("ref_runtime_us"),
            "speedup": res.get("speedup") if correct else None,
            "device": self.device,
            "backend": self.opts.backend,
            "sandbox": self.cand.launch.describe() if self.cand is not None else None,
            "tolerance": o.comparison.tolerance or {dtype_name("float32"): {"atol": 1e-3, "rtol": 1e-3}},
            "trials": self.opts.trials,
            "seed": self.master_seed,
            "compile_s": res.get("compile_s"),
            "timing": res.get("timing"),
            "profile": res.get("profile"),
            "roofline": res.get("roofline"),
            "wall_check": res.get("wall_check"),
            "cpu_check": res.get("cpu_check"),
            "graph_wall_check": res.get("graph_wall_check"),
            "rested_wall_check": res.get("rested_wall_check"),
            "compile_runtime_us": res.get("compile_runtime_us"),
            "speedup_compile": res.get("speedup_compile") if correct else None,
            "compile_baseline": res.get("compile_baseline"),
            "reference_cache": {**self.cache_stats, "entries": len(refcache.CACHE.entries),
                                "bytes": refcache.CACHE.bytes},
            "worker_wall_s": wall_s,
            "phases_s": {k: round(v, 4) for k, v in self.phases.items()},
            "inline_build": (prebuild.summarize_builds(self.cand.served)
                             if self.cand is not None and self.cand.served else None),
            "candidate_process": self.process_start,
            "process_warm_s": dict(self.cand.warm_seconds) if self.cand is not None else {},
            "problem": {"path": self.ref.path, "source_hash": self.ref.source_hash,
                        "source": self.ref.source,
                        "overrides": {k: repr(v) for k, v in self.ref.overrides.items()}},
            "candidate": {"path": self.opts.candidate, "source": self.candidate_source,
                          "source_hash": self.candidate_hash},
        }


def time_compiled(ref_model: Any, module: Any, device: str, rng: Random, mode: str,
                  budget_s: float, opts: Options) -> dict[str, Any]:
    """Compiles ref_model with torch.compile, checks it against ref_model on fresh inputs and
    times it with time_in_worker. {ok, reason, compile_s, method, runtime_us}."""
    import torch

    compiled = torch.compile(ref_model)
    inputs = make_inputs(module, rng.getrandbits(31), device)
    t0 = time.monotonic()
    with torch.no_grad():
        got = flatten(compiled(*inputs))
    timing.synchronize(device)
    compile_s = time.monotonic() - t0
    with torch.no_grad():
        expected = flatten(ref_model(*inputs))
    comparison = Comparison()
    if len(got) != len(expected):
        comparison.fail(f"{len(got)} outputs instead of {len(expected)}")
    for i, (e, g) in enumerate(zip(expected, got)):
        compare_values(e, g, f"output {i}", comparison)
    del got, expected, inputs
    if not comparison.ok:
        return {"ok": False, "compile_s": compile_s,
                "reason": "torch.compile(reference) disagrees with the reference: " +
                          "; ".join(comparison.reasons[:2])}
    out = time_in_worker(compiled, module, device, rng, mode, budget_s, opts)
    return {"ok": True, "reason": None, "compile_s": compile_s, **out}


def time_in_worker(fn: Any, module: Any, device: str, rng: Random, mode: str, budget_s: float,
                   opts: Options) -> dict[str, Any]:
    """Times a trusted callable in this process (the torch.compile baseline, `openkernel
    baseline`) the way candidates are timed: a pool of input sets refreshed with new contents
    before each block, the cache flushed before each call, events per call (rested, with an idle
    gap as long as the call before each one, for "events_rested") or ("cuda_graph") one graph
    replay per block. Stops at budget_s, max_timing_samples, or once the relative
    standard error falls below target_rse. {method, runtime_us[, note]}."""
    import torch

    probe = make_inputs(module, 0, device)
    per_set = max(tensor_nbytes(probe), 1)
    del probe
    if device.startswith("cuda"):
        free = torch.cuda.mem_get_info(torch.device(device))[0]
    else:
        free = 256 << 20
    size = timing.graph_pool_size(per_set, free, cap=16 if mode == "cuda_graph" else 8)
    pool = [make_inputs(module, rng.getrandbits(31), device) for _ in range(size)]
    flush = timing.flush_buffer(device)
    method, note = mode, None
    graph = None
    if mode == "cuda_graph":
        try:
            graph = timing.GraphTimer(fn, pool, device)
        except Exception as e:  # noqa: BLE001
            method, note = "events", f"CUDA-graph capture failed: {type(e).__name__}: {e}"
    idle_us = 0.0
    if graph is None:
        timing.time_block(fn, pool, min(3, size), device, flush, keep_outputs=False)  # warm-up
        if mode == "events_rested":
            if device.startswith("cuda"):
                first, _, _ = timing.time_block(fn, pool, size, device, flush, keep_outputs=False)
                idle_us = timing.rest_gap_us(statistics.median(first))
            else:
                method = "events"
    samples: list[float] = []
    deadline = time.monotonic() + budget_s
    while True:
        for entry in pool:
            refresh_inputs(entry, module, rng.getrandbits(31), device)
        if graph is not None:
            us, _ = graph.replay(flush)
            samples.append(us / size)
        else:
            times, _, _ = timing.time_block(fn, pool, size, device, flush, keep_outputs=False,
                                            idle_us=idle_us)
            samples += times
        if (time.monotonic() >= deadline or len(samples) >= opts.max_timing_samples
                or (len(samples) >= opts.min_timing_samples
                    and timing.relative_stderr(samples) < opts.target_rse)):
            break
    if graph is not None:
        graph.close()
    out: dict[str, Any] = {"method": method, "runtime_us": timing.stats(samples)}
    if note:
        out["note"] = note[:500]
    return out


def evaluate(req: dict[str, Any]) -> dict[str, Any]:
    return Evaluation(Options.from_request(req)).run()
