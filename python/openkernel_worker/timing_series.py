"""The timing series of one evaluation: reference and candidate timed in interleaved blocks.

EventSeries times both sides eagerly (CUDA events or the wall clock per call, the cache flushed
before each): back to back, and on CUDA also rested (an idle gap before each call) when
rested_wanted() says so. GraphSeries times both by CUDA-graph replay after an eager series, when
graph_wanted() says so; any failure there falls back to the eager figures (graph_fallback).

Before each block both sides give every entry of a pool of input sets new contents (in place,
untimed), so every timed call sees inputs never seen before; the outputs of randomly chosen
blocks, picked after the candidate replied, are compared with the reference's. The series write
the result's runtime_us, ref_runtime_us, speedup and timing; the rules that judge what they saw
(verdicts.py) are reached through the evaluation, which binds them to its outcome. Single-threaded,
one series at a time per evaluation. See docs/evaluation.md, "Timing".
"""
from __future__ import annotations

import statistics
import time
from random import Random
from typing import Any, Protocol

from . import timing, verdicts
from .candidate_process import CandidateProcess
from .options import GRAPH_AUTO_US, REST_AUTO_US, Options, Outcome, TimedBlock, tensor_nbytes
from .problem import Reference, make_inputs, refresh_inputs


class Evaluating(Protocol):
    """What a series uses of its evaluation (evaluate.Evaluation): its settings and state, its
    requests to the candidate (_ask: a failure is a verdict; _ask_soft: a failure is only
    reported) and the verdict rules bound to its outcome."""
    opts: Options
    device: str
    ref: Reference
    rng: Random
    out: Outcome
    result: dict[str, Any]
    cand: CandidateProcess | None
    ping_us: float | None
    flush_cpu_us: float
    output_bytes: int

    def _ask(self, message: dict[str, Any], what: str) -> dict[str, Any] | None: ...
    def _ask_soft(self, message: dict[str, Any],
                  what: str) -> tuple[dict[str, Any] | None, str]: ...
    def _run_error(self, reply: dict[str, Any], what: str) -> bool: ...
    def _ping_us(self) -> float: ...
    def _check_timed_outputs(self, descs: Any, ref_outputs: list[Any], block: int,
                             what: str = ...) -> bool: ...
    def _check_rests(self, outside_us: float, got: list[float], rests: list[float],
                     idle_us: float) -> bool: ...
    def _cross_check(self, walls: list[TimedBlock], flush_us: float,
                     result_key: str = ...) -> None: ...
    def _cpu_check(self, walls: list[TimedBlock], cpu_us: float) -> None: ...
    def _rested_verdict(self, info: dict[str, Any], ref_times: dict[str, list[float]],
                        cand_times: dict[str, list[float]], idle_us: float,
                        rest_blocks: int) -> str: ...
    def _rested_wanted(self, ref_b2b: list[float]) -> bool: ...


def valid_durations(values: Any, n: int) -> bool:
    """A candidate's reply holds exactly n non-negative times."""
    if n == 0:
        return values is None or values == []
    return isinstance(values, list) and len(values) == n and all(
        isinstance(t, (int, float)) and not isinstance(t, bool) and t >= 0 for t in values)


def rested_wanted(mode: str, device: str, ref_b2b: list[float]) -> bool:
    """Rested timing (timing.time_block's idle_us) for CUDA, when asked ("on") or, by default
    ("auto"), when the reference's back-to-back median in the first block reaches
    REST_AUTO_US: there a power-limited kernel slows under sustained load (an 8192^3 bf16
    matmul on the H200: 1.16x ncu's time back to back, CV 5.4%; rested 1.003x, CV 0.1%).
    Decided on the reference alone, as `openkernel baseline` does, so the candidate cannot
    ask for it by being slow in the first block."""
    if mode == "off" or not device.startswith("cuda") or not ref_b2b:
        return False
    return mode == "on" or statistics.median(ref_b2b) >= REST_AUTO_US


def graph_wanted(opts: Options, device: str, out: Outcome, result: dict[str, Any]) -> bool:
    """Whether GraphSeries follows the eager series: a correct candidate on CUDA, with
    cuda_graph "on", or "auto" and an eager median below GRAPH_AUTO_US. "on" without a CUDA
    device is noted in the result's timing."""
    info = result.get("timing")
    if out.verdict != "correct" or not isinstance(info, dict):
        return False
    if opts.cuda_graph == "off":
        return False
    if not device.startswith("cuda"):
        if opts.cuda_graph == "on":
            info["cuda_graph"] = {"ok": False, "reason": "CUDA graphs need a CUDA device"}
        return False
    median = (result.get("runtime_us") or {}).get("median")
    return not (opts.cuda_graph == "auto" and not (median and median < GRAPH_AUTO_US))


# The eager pool's memory on the CPU (inputs and outputs of every entry); a GPU's is 8% of its free
# memory.
CPU_POOL_BYTES = 256 << 20


def per_set_bytes(ev: Evaluating) -> int:
    """The larger of one input set's bytes (a probe made and dropped at once) and one forward's
    outputs (the largest the correctness trials saw): each pool entry holds an input set and,
    while a block is checked, its outputs, on both sides. Outputs can dwarf the inputs (a GEMM
    with a small K: 16 MB in, 4 GiB out), and a pool sized by its inputs alone filled an
    80 GB device."""
    probe = make_inputs(ev.ref.module, 0, ev.device)
    per_set = max(tensor_nbytes(probe), ev.output_bytes, 1)
    del probe
    return per_set


def new_pool(ev: Evaluating, size: int) -> list[list[Any]]:
    return [make_inputs(ev.ref.module, ev.rng.getrandbits(31), ev.device) for _ in range(size)]


def refresh_pool(ev: Evaluating, pool: list[list[Any]]) -> list[int]:
    """New contents for every entry, in place; the seeds, for the candidate to do the same."""
    seeds = [ev.rng.getrandbits(31) for _ in pool]
    for entry, seed in zip(pool, seeds):
        refresh_inputs(entry, ev.ref.module, seed, ev.device)
    return seeds


class EventSeries:
    """The eager series: back-to-back blocks ("b2b") and, when rested timing applies, rested
    blocks ("rest") alternating with them. The first block is always back to back and decides
    whether rested blocks follow."""

    def __init__(self, ev: Evaluating, ref_model: Any) -> None:
        self.ev, self.ref_model = ev, ref_model
        self.ref_times: dict[str, list[float]] = {"b2b": [], "rest": []}
        self.cand_times: dict[str, list[float]] = {"b2b": [], "rest": []}
        self.walls: dict[str, list[TimedBlock]] = {"b2b": [], "rest": []}
        self.rested = False
        self.idle_us = 0.0  # the rested gap, the same for both sides (from the reference's median)
        self.blocks = self.checked = 0
        self.cand_cpu_us = 0.0
        self.cand_pids: list[int] = []

    def run(self) -> None:
        ev = self.ev
        if not self._set_up():
            return
        deadline = time.monotonic() + ev.opts.timing_budget_s
        while True:
            final = self._final(deadline)
            kind = "rest" if self.rested and self.blocks % 2 == 1 else "b2b"
            ref_outs = self._block(kind)
            if ref_outs is None:
                return
            if final or self.blocks == 1 or ev.rng.random() < 0.2:
                self.checked += 1
                reply = ev._ask({"op": "timed_outputs"}, "exporting timed outputs")
                if reply is None:
                    return
                if not ev._check_timed_outputs(reply.get("outputs"), ref_outs, self.blocks):
                    break
            del ref_outs
            if self.blocks == 1 and ev._rested_wanted(self.ref_times["b2b"]):
                self.rested = True
                self.idle_us = timing.rest_gap_us(statistics.median(self.ref_times["b2b"]))
                continue  # the decision was made on one block: time the rested series too
            if final:
                break
        self._conclude()

    def _set_up(self) -> bool:
        """The pool (as many input sets as fit in 8% of free device memory, 1 to 8), the flush
        buffer, both sides warmed up, the ping and the candidate's processes for the checks."""
        import torch

        ev = self.ev
        per_set = per_set_bytes(ev)
        if ev.device != "cpu":
            budget = torch.cuda.mem_get_info(torch.device(ev.device))[0] * 0.08
        else:
            budget = CPU_POOL_BYTES
        self.pool_size = int(max(1, min(8, budget // (2 * per_set))))
        self.pool = new_pool(ev, self.pool_size)
        self.flush = timing.flush_buffer(ev.device)
        self.flush_us = timing.flush_cost_us(ev.device, self.flush)
        timing.time_block(self.ref_model, self.pool, 3, ev.device, self.flush,
                          keep_outputs=False)  # warm-up
        reply = ev._ask({"op": "prepare", "seeds": [ev.rng.getrandbits(31) for _ in self.pool],
                         "warmup": 3}, "warm-up before timing")
        if reply is None:
            return False
        if not reply.get("ok"):
            ev._run_error(reply, "warming up")
            return False
        ev.ping_us = ev._ping_us()
        self.cand_pids = timing.descendants(ev.cand.proc.pid) if ev.cand is not None else []
        ev.flush_cpu_us = timing.flush_cpu_us(self.flush) if ev.device == "cpu" else 0.0
        return True

    def _final(self, deadline: float) -> bool:
        """Whether the next block is the last: the budget is spent, the sample cap (both series
        together) reached, or both series hold enough samples and the reported one's relative
        standard errors are below target."""
        opts = self.ev.opts
        series = "rest" if self.rested else "b2b"  # the series the result will report
        total = len(self.cand_times["b2b"]) + len(self.cand_times["rest"])
        return (time.monotonic() >= deadline
                or total + self.pool_size > opts.max_timing_samples
                or (all(len(self.cand_times[k]) >= opts.min_timing_samples
                        for k in (("b2b", "rest") if self.rested else ("b2b",)))
                    and timing.relative_stderr(self.ref_times[series]) < opts.target_rse
                    and timing.relative_stderr(self.cand_times[series]) < opts.target_rse))

    def _block(self, kind: str) -> list[Any] | None:
        """One block of each side; the reference's outputs, or None when the series must stop
        (the verdict or flag already set)."""
        ev = self.ev
        seeds = refresh_pool(ev, self.pool)
        idle_us = self.idle_us if kind == "rest" else 0.0
        times, _, ref_outs = timing.time_block(self.ref_model, self.pool, self.pool_size,
                                               ev.device, self.flush, keep_outputs=True,
                                               idle_us=idle_us)
        self.ref_times[kind] += times
        reply = ev._ask({"op": "refresh", "seeds": seeds}, "refreshing timing inputs")
        if reply is None or not reply.get("ok"):
            if reply is not None:
                ev._run_error(reply, "refreshing timing inputs")
            return None
        return ref_outs if self._candidate_block(kind) else None

    def _candidate_block(self, kind: str) -> bool:
        """The candidate's block, timed from outside too (wall clock; on the CPU its processes'
        CPU time); False when the series must stop."""
        ev = self.ev
        request: dict[str, Any] = {"op": "time"}
        if kind == "rest":
            request["idle_us"] = self.idle_us
        cpu_before = timing.tree_cpu_us(self.cand_pids)
        sent = time.monotonic()
        reply = ev._ask(request, "a timed run")
        outside_us = (time.monotonic() - sent) * 1e6
        self.cand_cpu_us += timing.tree_cpu_us(self.cand_pids) - cpu_before
        if reply is None:
            return False
        if not reply.get("ok"):
            ev._run_error(reply, "timing")
            return False
        got = reply.get("times_us")
        rests = reply.get("rest_us") if kind == "rest" else []
        if not valid_durations(got, self.pool_size) or not valid_durations(
                rests, len(got) if kind == "rest" else 0):
            ev.out.flag("timer_mismatch", "the candidate process returned malformed timings",
                        reject=True)
            return False
        if kind == "rest" and not ev._check_rests(outside_us, got, rests, self.idle_us):
            return False
        self.cand_times[kind] += [float(t) for t in got]
        # A rested block's outside time also holds its gaps: expected, but not part of the
        # claimed time that the proportional allowance grows with (each gap counted at most
        # twice the length asked for, whatever the candidate reports).
        gaps = float(sum(min(float(r), 2.0 * self.idle_us) for r in rests))
        self.walls[kind].append(TimedBlock(outside_us, float(sum(got)), self.pool_size, gaps))
        self.blocks += 1
        return True

    def _conclude(self) -> None:
        """The cross-checks, the series reported, the speedup; the candidate's outputs
        released."""
        ev, walls = self.ev, self.walls
        ev._cross_check(walls["b2b"], self.flush_us)
        if walls["rest"]:
            ev._cross_check(walls["rest"], self.flush_us, result_key="rested_wall_check")
        if ev.device == "cpu":
            ev._cpu_check(walls["b2b"], self.cand_cpu_us)
        info: dict[str, Any] = {"mode": "events", "pool_size": self.pool_size,
                                "blocks": self.blocks, "checked_blocks": self.checked,
                                "flush_bytes": self.flush.numel() * 4, "flush_us": self.flush_us}
        series = "b2b"
        if self.rested:
            series = ev._rested_verdict(info, self.ref_times, self.cand_times, self.idle_us,
                                        len(walls["rest"]))
        ev.result["runtime_us"] = timing.stats(self.cand_times[series])
        ev.result["ref_runtime_us"] = timing.stats(self.ref_times[series])
        speedup = verdicts.speedup(ev.out, ev.result["ref_runtime_us"]["median"],
                                   ev.result["runtime_us"]["median"])
        if speedup is not None:
            ev.result["speedup"] = speedup
        ev.result["timing"] = info
        ev._ask({"op": "release"}, "releasing outputs")


class GraphSeries:
    """Both sides capture one forward per entry of a pool of input buffers in a CUDA graph and
    are timed by replay; before each replay both overwrite every entry in place with inputs
    from fresh seeds (untimed) and flush the cache. The replayed outputs of the first, the
    last and one in five random replays (chosen after the candidate replied) are checked
    against the reference's replayed outputs. Runs after EventSeries, whose figures it
    replaces only when every replay is consistent."""

    def __init__(self, ev: Evaluating) -> None:
        self.ev = ev
        self.info: dict[str, Any] = ev.result["timing"]
        self.ref_times: list[float] = []
        self.cand_times: list[float] = []
        self.walls: list[TimedBlock] = []
        self.replays = self.checked = 0

    def run(self, ref_model: Any) -> None:
        """Captures the reference (a failure falls back), then times both sides (replay())."""
        import torch

        ev = self.ev
        per_set = per_set_bytes(ev)
        k = timing.graph_pool_size(per_set, torch.cuda.mem_get_info(torch.device(ev.device))[0])
        pool = new_pool(ev, k)
        try:
            ref_graph = timing.GraphTimer(ref_model, pool, ev.device)
        except Exception as e:  # noqa: BLE001 - any capture failure means: no graph timing
            pool.clear()  # the inputs go before the device is synchronized
            try:
                torch.cuda.synchronize(torch.device(ev.device))
            except RuntimeError:
                pass
            self.fallback("the reference cannot be captured in a CUDA graph: "
                          f"{type(e).__name__}: {e}")
            return
        self.capture_notes(ref_graph.note)
        try:
            self.replay(ref_graph, pool, k)
        finally:
            ref_graph.close()
            del pool
            torch.cuda.empty_cache()

    def fallback(self, reason: str) -> None:
        """Graph timing failed: the eager (events) timing, which carries every check, stands.
        Flagged graph_fallback with the reason; the flag never rejects, not even under
        --strict."""
        self.info["cuda_graph"] = {"ok": False, "reason": reason[:1500]}
        self.info.setdefault("notes", []).append("CUDA-graph timing not used: " + reason[:300])
        self.ev.out.flag("graph_fallback", "CUDA-graph timing not used, events timing stands: " +
                         reason[:600], reject=False)

    def capture_notes(self, *notes: Any) -> None:
        """Notes of either side's GraphTimer (no blocking capture stream could be made)."""
        for note in notes:
            if isinstance(note, str) and note:
                self.info.setdefault("notes", []).append("CUDA-graph capture: " + note[:300])

    def replay(self, ref_graph: Any, pool: list[list[Any]], k: int) -> None:
        """The candidate captures its graph; then replays of both sides until the budget (half
        the eager one, at least 1 s), the sample cap or the target error; then the figures."""
        ev, opts = self.ev, self.ev.opts
        streams = self._capture_candidate(ref_graph, pool, k)
        if streams is None:
            return
        flush = timing.flush_buffer(ev.device)
        flush_us = timing.flush_cost_us(ev.device, flush)
        deadline = time.monotonic() + max(1.0, opts.timing_budget_s / 2)
        while True:
            final = (time.monotonic() >= deadline
                     or len(self.cand_times) >= opts.max_timing_samples
                     or (len(self.cand_times) >= opts.min_timing_samples
                         and timing.relative_stderr(self.ref_times) < opts.target_rse
                         and timing.relative_stderr(self.cand_times) < opts.target_rse))
            if not self._replay_once(ref_graph, pool, k, flush):
                return
            if final or self.replays == 1 or ev.rng.random() < 0.2:
                if not self._check_replay(ref_graph):
                    return
            if final:
                break
        ev._ask_soft({"op": "graph_release"}, "releasing the graph")
        ev._cross_check(self.walls, flush_us, result_key="graph_wall_check")
        self._conclude(k, streams, flush_us)

    def _capture_candidate(self, ref_graph: Any, pool: list[list[Any]],
                           k: int) -> dict[str, Any] | None:
        """The candidate's capture of k forwards; the capture streams of both sides, or None
        after a fallback."""
        ev = self.ev
        reply, why = ev._ask_soft({"op": "graph_prepare",
                                   "seeds": [ev.rng.getrandbits(31) for _ in pool]},
                                  "capturing its forward in a CUDA graph")
        if reply is None or not reply.get("ok"):
            if reply is not None:
                why = f"{reply.get('error_type', 'Error')}: {reply.get('message', '')}"
            self.fallback(f"the candidate cannot be captured in a CUDA graph: {why}")
            return None
        if reply.get("forwards") != k:
            self.fallback("the candidate captured a graph of the wrong size")
            return None
        self.capture_notes(reply.get("note"))
        return {"reference": ref_graph.capture_stream,
                "candidate": reply.get("capture_stream") if reply.get("capture_stream") in
                ("blocking", "torch") else None}

    def _replay_once(self, ref_graph: Any, pool: list[list[Any]], k: int, flush: Any) -> bool:
        """One replay of each side on new inputs; False when the series must stop."""
        ev = self.ev
        seeds = refresh_pool(ev, pool)
        ref_us, _ = ref_graph.replay(flush)
        self.ref_times.append(ref_us / k)
        reply, why = ev._ask_soft({"op": "refresh", "seeds": seeds, "pool": "graph"},
                                  "refreshing graph inputs")
        if reply is None or not reply.get("ok"):
            self.fallback("refreshing the graph's inputs failed: " +
                          (why or str((reply or {}).get("message", ""))))
            return False
        sent = time.monotonic()
        reply, why = ev._ask_soft({"op": "graph_time"}, "a timed graph replay")
        outside_us = (time.monotonic() - sent) * 1e6
        if reply is None or not reply.get("ok"):
            self.fallback(f"a graph replay failed: {why or (reply or {}).get('message', '')}")
            return False
        got = reply.get("graph_us")
        if not isinstance(got, (int, float)) or isinstance(got, bool) or not got >= 0:
            ev.out.flag("timer_mismatch", "the candidate process returned a malformed "
                        "graph timing", reject=True)
            return False
        self.cand_times.append(float(got) / k)
        self.walls.append(TimedBlock(outside_us, float(got), 1))  # one flush per replay
        self.replays += 1
        return True

    def _check_replay(self, ref_graph: Any) -> bool:
        """The last replay's outputs against the reference's; False when the series must
        stop."""
        ev = self.ev
        self.checked += 1
        reply, why = ev._ask_soft({"op": "timed_outputs"}, "exporting replayed outputs")
        if reply is None:
            self.fallback(f"exporting replayed outputs failed: {why}")
            return False
        if not ev._check_timed_outputs(reply.get("outputs"), ref_graph.outputs, self.replays,
                                       "replayed CUDA graph"):
            # Rejected. The graph missed or changed work, so its numbers mean nothing (nor may
            # the physical floor judge them): the eager numbers stay reported.
            ev._ask_soft({"op": "graph_release"}, "releasing the graph")
            self.info["cuda_graph"] = {"ok": False, "replays": self.replays, "reason": "the "
                                       "replayed outputs differ from the reference's; the "
                                       "eager numbers stand"}
            return False
        return True

    def _conclude(self, k: int, streams: dict[str, Any], flush_us: float) -> None:
        """The graph figures replace the eager ones, which the timing keeps under `events`."""
        ev = self.ev
        eager = {"runtime_us": ev.result["runtime_us"],
                 "ref_runtime_us": ev.result["ref_runtime_us"],
                 "speedup": ev.result.get("speedup")}
        ev.result["runtime_us"] = timing.stats(self.cand_times)
        ev.result["ref_runtime_us"] = timing.stats(self.ref_times)
        self.info.update({"mode": "cuda_graph", "events": eager,
                          "cuda_graph": {"ok": True, "forwards_per_replay": k,
                                         "replays": self.replays,
                                         "checked_replays": self.checked, "flush_us": flush_us,
                                         "capture_stream": streams}})
        c = ev.result["runtime_us"]["median"]
        ev.result["speedup"] = verdicts.speedup(ev.out, ev.result["ref_runtime_us"]["median"], c)
        verdicts.graph_gain(ev.out, c, (eager["runtime_us"] or {}).get("median"))
