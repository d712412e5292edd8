"""The candidate process: imports (compiles) one candidate, runs it on request, exports outputs.

Started by the worker as `python -m openkernel_worker.candidate SCRATCH`. It is untrusted once the
candidate's code has been imported: everything it reports is checked by the worker. Requests and
replies are JSON lines (docs/worker-protocol.md, "candidate channel").
"""
from __future__ import annotations

import time

STARTED = time.monotonic()  # before the imports below

import os  # noqa: E402
import sys  # noqa: E402
import traceback
from typing import Any, Callable

from . import integrity, timing  # timing captures the clock before any candidate code is imported
from .problem import (build_model, load_module, load_reference, make_init_inputs, make_inputs,
                      refresh_inputs)
from .protocol import Channel, clean_floats, private_stdio_channel
from .transfer import Exporter

# Set by main(): the imports above cost STARTED_MAIN - STARTED, torch's TORCH_READY - STARTED_MAIN.
STARTED_MAIN = TORCH_READY = STARTED


class _Step:
    """Times one start-up step into `seconds` and names it in `done` once it succeeded."""

    def __init__(self, name: str, seconds: dict[str, float], done: list[str]) -> None:
        self.name, self.seconds, self.done = name, seconds, done

    def __enter__(self) -> None:
        self.t0 = time.monotonic()

    def __exit__(self, kind: Any, *_: Any) -> None:
        self.seconds[self.name] = round(time.monotonic() - self.t0, 3)
        if kind is None:
            self.done.append(self.name)


def error_reply(exc: BaseException, phase: str) -> dict[str, Any]:
    kind = type(exc).__name__
    module = type(exc).__module__ or ""
    tb = traceback.extract_tb(exc.__traceback__)
    message = str(exc).strip() or kind
    reply: dict[str, Any] = {"ok": False, "phase": phase, "error_type": kind,
                             "message": message[-4000:],
                             "traceback": "".join(traceback.format_exception(type(exc), exc,
                                                                             exc.__traceback__))[-4000:]}
    if isinstance(exc, SyntaxError):
        reply["line"] = exc.lineno
        reply["compile"] = True
    if "triton" in module and "Compil" in kind:
        reply["compile"] = True
    text = message.lower()
    if "out of memory" in text:
        reply["oom"] = True
    if "error building extension" in text or "compilation" in kind.lower():
        reply["compile"] = True
    for frame in reversed(tb):
        if frame.filename == CandidateState.candidate_path:
            reply.setdefault("line", frame.lineno)
            break
    return reply


class CandidateState:
    candidate_path = ""
    channel: Channel | None = None

    def __init__(self, scratch: str) -> None:
        self.scratch = scratch
        self.exporter = Exporter(scratch)
        self.model: Any = None
        self.reference: Any = None
        self.device = "cpu"
        self.pool: list[list[Any]] = []
        self.timed_outputs: list[Any] = []
        self.flush: Any = None
        self.state_before: dict[str, Any] = {}
        self.l2_before: int | None = None
        self.graph_pool: list[list[Any]] = []
        self.graph: Any = None  # timing.GraphTimer
        self.clone_timed = False  # graph outputs live in the graph's pool: export copies
        import torch

        # Bound before any candidate code runs: a patched Tensor.clone (or a subclass's) cannot
        # do the forward's work at export time, outside the timed replay.
        self._tensor = torch.Tensor
        self._clone = torch.Tensor.clone

    def warm(self, req: dict[str, Any]) -> dict[str, Any]:
        """Pays the process's one-time costs before any candidate is known, in three stages:
        "cpu" (Triton's and the profiler's imports: no device work), "gpu" (the CUDA context and
        a first kernel) and "profiler" (the profiler's first start, seconds of CUPTI set-up). A
        spare process (candidate_process.py) runs its "cpu" stage whenever it likes and the others
        as its SparePool.overlap() mode allows; no candidate code has run yet. `stages` defaults to
        all. Failures are reported, not fatal: load and the later steps meet the same problem
        and report it in context. The reply's
        `seconds` says what each step cost."""
        import torch

        device = str(req.get("device") or "cpu")
        stages = req.get("stages") or ["cpu", "gpu", "profiler"]
        cuda = device.startswith("cuda")
        seconds: dict[str, float] = {}
        done: list[str] = []

        def step(name: str) -> Any:
            return _Step(name, seconds, done)

        try:
            if "cpu" in stages:
                seconds["module_imports"] = round(STARTED_MAIN - STARTED, 3)
                seconds["torch_import"] = round(TORCH_READY - STARTED_MAIN, 3)
                if cuda:
                    try:
                        with step("triton_import"):
                            import triton  # noqa: F401 - the import alone takes about a second
                    except ImportError:
                        pass
                with step("profiler_import"):
                    import torch.profiler  # noqa: F401
            if "gpu" in stages and cuda:
                with step("cuda_context"):
                    torch.cuda.init()
                    torch.empty(1, device=device)
                with step("first_kernel"):
                    torch.empty(1, device=device).add_(1)
                    torch.cuda.synchronize(device)
            if "profiler" in stages:
                from torch.profiler import ProfilerActivity, profile

                activities = [ProfilerActivity.CPU]
                if cuda:
                    activities.append(ProfilerActivity.CUDA)
                with step("profiler_start"):
                    with profile(activities=activities):
                        torch.ones(8, device=device).sum().item()
        except BaseException as e:  # noqa: BLE001
            return {**error_reply(e, "warm"), "done": done, "seconds": seconds}
        return {"ok": True, "done": done, "seconds": seconds,
                "warm_s": round(sum(seconds.values()), 3)}

    def load(self, req: dict[str, Any]) -> dict[str, Any]:
        import torch

        self.device = req["device"]
        if req.get("extensions_dir"):  # per candidate source; read by torch at build time
            os.environ["TORCH_EXTENSIONS_DIR"] = str(req["extensions_dir"])
        if req.get("cuda_arch_list"):  # this GPU's; here since the process may predate torch's
            # import in the worker (boot.py)
            os.environ["TORCH_CUDA_ARCH_LIST"] = str(req["cuda_arch_list"])
        if req.get("inline_build") and CandidateState.channel is not None:
            from . import inline_build  # load_inline builds through the worker's cache

            inline_build.install(_ask_worker)
        threads = int(req.get("threads") or 0)
        if threads > 0:
            torch.set_num_threads(threads)
        self.reference = load_reference(req["reference"], req.get("overrides") or {},
                                        module_name="openkernel_reference_copy")
        path = req["candidate"]
        CandidateState.candidate_path = path
        with open(path) as f:
            source = f.read()
        integrity.set_precision_policy()  # the reference's flags, before the candidate's import
        self.state_before = integrity.global_state()
        if self.device.startswith("cuda"):
            torch.cuda.init()
            self.l2_before = integrity.persisting_l2_bytes()
            integrity.pending_cuda_error()  # pending before the import: not the candidate's
        t0 = time.perf_counter()
        try:
            module = load_module(path, source, "openkernel_candidate")
        except BaseException as e:  # noqa: BLE001 - any failure to import is a compile error
            reply = error_reply(e, "compile")
            reply["compile"] = True
            return reply
        compile_s = time.perf_counter() - t0
        cls = getattr(module, "ModelNew", None)
        if not isinstance(cls, type):
            return {"ok": False, "phase": "compile", "compile": True, "error_type": "MissingModelNew",
                    "message": "the candidate defines no class ModelNew"}
        init_seed = int(req["init_seed"])
        try:
            init_inputs = make_init_inputs(self.reference.module, init_seed)
            self.model = build_model(cls, init_inputs, init_seed, self.device)
        except BaseException as e:  # noqa: BLE001
            return error_reply(e, "build")
        if self.device.startswith("cuda"):
            pending = integrity.pending_cuda_error()
            if pending is not None:
                return {"ok": False, "phase": "build", "error_type": "CudaError",
                        "message": "the candidate's import or ModelNew's construction left a "
                                   f"failed CUDA call's error pending: {pending}"}
        return {"ok": True, "compile_s": compile_s}

    def profile(self, req: dict[str, Any]) -> dict[str, Any]:
        """Which ops and kernels one forward runs, global state changes, persisting L2."""
        self.exporter.release()
        inputs = make_inputs(self.reference.module, int(req["seed"]), self.device)
        reply: dict[str, Any] = {"ok": True, "state_before": self.state_before,
                                 "state_after": integrity.global_state()}
        try:
            reply["profile"] = integrity.profile_forward(self.model, inputs, self.device)
        except BaseException as e:  # noqa: BLE001
            return error_reply(e, "profile")
        if self.device.startswith("cuda"):
            reply["persisting_l2_bytes"] = integrity.persisting_l2_bytes()
            reply["persisting_l2_bytes_before"] = self.l2_before
        return reply

    def ping(self) -> dict[str, Any]:
        return {"ok": True}

    def run(self, req: dict[str, Any]) -> dict[str, Any]:
        import torch

        self.exporter.release()
        inputs = make_inputs(self.reference.module, int(req["seed"]), self.device)
        try:
            with torch.no_grad():
                out = self.model(*inputs)
            timing.synchronize(self.device)
        except BaseException as e:  # noqa: BLE001
            return error_reply(e, "run")
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        return {"ok": True, "outputs": [self.exporter.describe(o) for o in outs],
                "output_container": type(out).__name__,
                "inputs": [self.exporter.describe(i) for i in inputs]}

    def prepare(self, req: dict[str, Any]) -> dict[str, Any]:
        """Builds the timing input pool and warms up; not part of any timed measurement."""
        import torch

        self.exporter.release()
        seeds = [int(s) for s in req["seeds"]]
        self.pool = []
        self.timed_outputs = []
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()
        self.pool = [make_inputs(self.reference.module, s, self.device) for s in seeds]
        self.flush = timing.flush_buffer(self.device) if req.get("flush", True) else None
        try:
            timing.time_block(self.model, self.pool, int(req.get("warmup", 3)), self.device,
                              self.flush, keep_outputs=False)
        except BaseException as e:  # noqa: BLE001
            return error_reply(e, "warm-up")
        return {"ok": True}

    def refresh(self, req: dict[str, Any]) -> dict[str, Any]:
        """New contents for every pool entry, in place (untimed)."""
        self.exporter.release()
        self.timed_outputs = []
        pool = self.graph_pool if req.get("pool") == "graph" else self.pool
        for entry, seed in zip(pool, req["seeds"]):
            refresh_inputs(entry, self.reference.module, int(seed), self.device)
        if self.device.startswith("cuda"):
            # Lines a persisting-L2 window kept survive the cache flush: cleared before every
            # timed block or replay (a refresh precedes each). Here rather than in the timed
            # request, whose outside wall time the worker checks: it can cost milliseconds.
            integrity.reset_persisting_l2()
        timing.synchronize(self.device)
        return {"ok": True}

    def time(self, req: dict[str, Any]) -> dict[str, Any]:
        """Runs each pool entry once and keeps every output; whether they are checked is decided
        by the worker after the reply. `idle_us` > 0 asks for rested timing (timing.time_block);
        the gaps' own times come back in `rest_us`."""
        idle_us = float(req.get("idle_us") or 0.0) if self.device.startswith("cuda") else 0.0
        rests: list[float] = []
        try:
            times, wall_us, outputs = timing.time_block(
                self.model, self.pool, len(self.pool), self.device, self.flush, keep_outputs=True,
                idle_us=idle_us, rest_out=rests)
        except BaseException as e:  # noqa: BLE001
            return error_reply(e, "time")
        self.timed_outputs = outputs
        self.clone_timed = False
        reply: dict[str, Any] = {"ok": True, "times_us": times, "wall_us": wall_us}
        if idle_us > 0:
            reply["rest_us"] = rests
        return reply

    def graph_prepare(self, req: dict[str, Any]) -> dict[str, Any]:
        """Draws a pool of input buffers and captures one forward per entry in a CUDA graph
        (timing.GraphTimer, on a blocking stream: see capture.py); a capture failure is reported,
        and the worker falls back to the eager timing."""
        import torch

        self.exporter.release()
        self.graph_release()
        self.pool = []  # the eager timing pool is done with
        torch.cuda.empty_cache()
        self.graph_pool = [make_inputs(self.reference.module, int(s), self.device)
                           for s in req["seeds"]]
        try:
            self.graph = timing.GraphTimer(self.model, self.graph_pool, self.device)
        except BaseException as e:  # noqa: BLE001
            self.graph = None
            return error_reply(e, "graph_capture")
        return {"ok": True, "forwards": self.graph.forwards,
                "capture_stream": self.graph.capture_stream, "note": self.graph.note}

    def graph_time(self) -> dict[str, Any]:
        """One replay: every forward of the graph on the pool's current contents."""
        if self.graph is None:
            return {"ok": False, "phase": "graph_time", "error_type": "NoGraph",
                    "message": "no graph was captured"}
        try:
            graph_us, wall_us = self.graph.replay(self.flush)
        except BaseException as e:  # noqa: BLE001
            return error_reply(e, "graph_time")
        self.timed_outputs = self.graph.outputs
        self.clone_timed = True
        return {"ok": True, "graph_us": graph_us, "times_us": [graph_us / self.graph.forwards],
                "wall_us": wall_us}

    def graph_release(self) -> dict[str, Any]:
        self.timed_outputs = []
        if self.graph is not None:
            self.graph.close()
            self.graph = None
        self.graph_pool = []
        return {"ok": True}

    def export_timed(self) -> dict[str, Any]:
        self.exporter.release()
        def copy(o: Any) -> Any:  # only exact tensors; anything else is exported (and failed) as is
            return self._clone(o) if self.clone_timed and type(o) is self._tensor else o

        return {"ok": True, "outputs": [
            [self.exporter.describe(copy(o))
             for o in (list(out) if isinstance(out, (tuple, list)) else [out])]
            for out in self.timed_outputs]}


def _release(state: CandidateState, _req: dict[str, Any]) -> dict[str, Any]:
    state.exporter.release()
    return {"ok": True}


# The candidate channel's ops (docs/worker-protocol.md); those without arguments ignore the request.
_HANDLERS: dict[str, Callable[[CandidateState, dict[str, Any]], dict[str, Any]]] = {
    "warm": CandidateState.warm,
    "load": CandidateState.load,
    "run": CandidateState.run,
    "prepare": CandidateState.prepare,
    "profile": CandidateState.profile,
    "refresh": CandidateState.refresh,
    "time": CandidateState.time,
    "graph_prepare": CandidateState.graph_prepare,
    "ping": lambda state, _req: state.ping(),
    "timed_outputs": lambda state, _req: state.export_timed(),
    "graph_time": lambda state, _req: state.graph_time(),
    "graph_release": lambda state, _req: state.graph_release(),
    "release": _release,
}


def _ask_worker(request: dict[str, Any]) -> dict[str, Any]:
    """A nested request to the worker during load (op "build"): sent on the result channel,
    answered on the request channel before the worker reads load's own reply."""
    channel = CandidateState.channel
    assert channel is not None
    channel.send(request)
    reply = channel.receive()
    return reply if isinstance(reply, dict) else {"ok": False, "message": "no reply"}


def main() -> int:
    global STARTED_MAIN, TORCH_READY
    STARTED_MAIN = time.monotonic()
    timing.tune_allocator()
    channel: Channel = private_stdio_channel()
    CandidateState.channel = channel
    scratch = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
    state = CandidateState(scratch)  # imports torch
    TORCH_READY = time.monotonic()
    while True:
        req = channel.receive()
        if req is None or req.get("op") == "exit":
            return 0
        op = req.get("op")
        try:
            handler = _HANDLERS.get(str(op))
            if handler is None:
                reply = {"ok": False, "phase": "protocol", "error_type": "UnknownOp",
                         "message": f"unknown op {op!r}"}
            else:
                reply = handler(state, req)
        except BaseException as e:  # noqa: BLE001 - report, never die silently
            reply = error_reply(e, str(op))
        channel.send(clean_floats(reply))


if __name__ == "__main__":
    sys.exit(main())
