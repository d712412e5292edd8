"""The candidate's processes: one `python -m openkernel_worker.candidate` per evaluation, in its
sandbox, spoken to in JSON lines (CandidateProcess), and the pool of such processes started ahead
of time for the next evaluations (SparePool, the module's SPARE).

Ownership: an evaluation owns the process it adopted and closes it (discard() also removes its
scratch directory); SPARE owns the spares until one is taken; EARLY holds the one process an
evaluation started before its reference was built, until the evaluation adopts it; DYING the
killed processes not yet reaped. All of it is per worker process and single-threaded; the
worker's exit discards whatever is left.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

from .options import EnvironmentProblem, Options


class CandidateDied(Exception):
    """The candidate process exited, was killed, or broke the protocol (a runtime_error)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class CandidateTimeout(Exception):
    """No reply within the deadline (the process was killed unless asked not to)."""


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
        self.boot = False  # started at the worker's start for an announced request (boot.py)
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

    def wait_device_stages(self, timeout_s: float) -> None:
        """Before a measurement by the worker: waits for the start-up stages asked for that may
        not overlap one (SparePool.overlap: the CUDA context by default, the whole start-up under
        "imports" and "none", nothing under "all"); stages not asked for yet stay so. A failure
        is left for wait_warm to report."""
        mode = SparePool.overlap(self.device)
        if mode != "all" and self.gpu_in_flight():
            self.wait_warm(timeout_s, device_only=mode == "context")

    def warm_report(self, started_before: float | None) -> dict[str, float]:
        """Its start-up, step by step (the process's own account, and start_to_ready), plus
        `spawned_before_s` when it was started before an evaluation that began at
        `started_before` (monotonic): the head start it had."""
        out = dict(self.warm_seconds)
        if started_before is not None:
            out["spawned_before_s"] = round(max(0.0, started_before - self.spawned), 3)
        return out

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


def start_process(env: dict[str, str], opts: Options, device: str, gpu_later: bool = False,
                  profiler_anytime: bool = False) -> CandidateProcess:
    """A new candidate process in a new scratch directory (removed again if it cannot start)."""
    scratch = tempfile.mkdtemp(prefix="openkernel-cand-")
    try:
        return CandidateProcess(scratch, env, opts, device, gpu_later, profiler_anytime)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


DYING: list[subprocess.Popen[bytes]] = []  # killed candidate processes not yet reaped
EARLY: list[CandidateProcess] = []  # started by Evaluation._launch_early, not yet
# adopted (at most one)


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

    def start_boot(self, key: tuple[Any, ...], device: str, opts: Options,
                   env: dict[str, str]) -> None:
        """The one spare the worker starts for the request its start announced (boot.py), before
        any request: nothing is measured yet, so its whole start-up is asked for at once, on a
        CUDA device stage by stage (imports, device, profiler), so that the evaluation can wait
        for the device stage alone before its first measurement."""
        self.clear()
        self.key = key
        cuda = device.startswith("cuda")
        proc = start_process(env, opts, device, gpu_later=cuda, profiler_anytime=cuda)
        proc.boot = True
        proc.start_gpu()
        self.procs.append(proc)

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
