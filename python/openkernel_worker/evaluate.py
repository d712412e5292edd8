"""One evaluation: reference in this (trusted) process, candidate in a child, verdict from checks.

Flow (Evaluation.run): load and validate the reference; start the candidate process
(candidate_process.py, often a spare started ahead of time) and let it import (compile) the
candidate; run correctness trials on fresh inputs from a secret seed, comparing outputs and
returned inputs here; profile its forward; then time reference and candidate in interleaved
blocks (timing_series.py) and cross-check the candidate's own timings against wall time measured
from this side; last the physical floor and, if asked, the torch.compile baseline
(trusted_timing.py). The rules that turn what was seen into flags and a verdict are verdicts.py;
the options and the outcome they write into, options.py. See docs/evaluation.md.

The names the worker's other modules and its tests know from here (Options, SPARE,
CandidateProcess, ...) are re-exported below.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import sys
import time
from random import Random
from typing import Any, Iterator

from . import (boot, floor_counts, integrity, physical_floor, prebuild, profiling, refcache,
               roofline, timing, verdicts)
from .candidate_process import (EARLY, MAX_BUILDS_PER_LOAD, SPARE, CandidateDied,
                                CandidateProcess, CandidateTimeout, SparePool, discard,
                                start_process)
from .compare import dtype_name, flatten
from .options import (BACKENDS, CUDA_GRAPH_MODES, GRAPH_AUTO_US, REST_AUTO_US, REST_MODES,
                      BadInput, EnvironmentProblem, Options, Outcome, TimedBlock, cache_root_of,
                      candidate_env_of, launch_key_of, resolve_device, tensor_nbytes)
from .problem import (Reference, SourceDefect, build_reference, load_reference, make_inputs,
                      read_source)
from .timing_series import EventSeries, GraphSeries, graph_wanted, rested_wanted
from .timing_series import valid_durations as _durations
from .transfer import rebuild
from .trusted_timing import compile_baseline, time_compiled, time_in_worker
from .verdicts import kernel_table, same_inputs

__all__ = [  # the flow, and the names the worker's other modules and its tests know from here
    "BACKENDS", "CUDA_GRAPH_MODES", "EARLY", "GRAPH_AUTO_US", "MAX_BUILDS_PER_LOAD", "REST_AUTO_US",
    "REST_MODES", "SPARE", "BadInput", "CandidateDied", "CandidateProcess", "CandidateTimeout",
    "EnvironmentProblem", "Evaluation", "Options", "Outcome", "SparePool", "TimedBlock",
    "_durations", "cache_root_of", "candidate_env_of", "discard", "evaluate", "kernel_table",
    "resolve_device", "same_inputs", "time_compiled", "time_in_worker"]


class Evaluation:
    """One evaluate request, run once (run()). It owns the reference model, the candidate's
    process while it runs (closed at the end) and the Outcome the checks write into; the
    timing series (timing_series.py) work on it through the requests and the bound verdict
    rules below (the Evaluating protocol there)."""

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
        self.process_start = "fresh"  # "spare": started earlier; "boot": at the worker's start
        self.started = time.monotonic()  # run()'s start
        self.ceil: dict[str, Any] | None = None  # _ceilings()
        self.counts: floor_counts.Counts | None = None  # the floor's counts (_early_counts)
        self.counts_note = ""  # why the counts could not be cached, if so
        self.trial_signature: list[Any] | None = None  # the trial inputs' (all alike), or None
        self.ping_us: float | None = None  # the candidate's round trip, before timing
        self.flush_cpu_us = 0.0  # the cache flush's CPU time (CPU device), before timing
        self.output_bytes = 0  # the largest reference output a trial saw (sizes timing pools)

    def cache_root(self) -> str:
        return cache_root_of(self.opts)

    def extensions_dir(self) -> str:
        """torch's extension builds, one directory per candidate source (set at "load")."""
        return prebuild.extensions_dir(self.cache_root(), self.candidate_source)

    def candidate_env(self) -> dict[str, str]:
        """A build's environment for this candidate (the load_inline build server): a candidate
        process's (candidate_env_of) plus, on a GPU, TORCH_CUDA_ARCH_LIST for this GPU only,
        which the process itself gets with "load" (it may start before the worker has torch)."""
        env = candidate_env_of(self.opts, self.cache_root())
        if self.device.startswith("cuda") and "TORCH_CUDA_ARCH_LIST" not in env:
            import torch

            major, minor = torch.cuda.get_device_capability(torch.device(self.device))
            env["TORCH_CUDA_ARCH_LIST"] = f"{major}.{minor}"  # build for this GPU only
        return env

    def launch_key(self) -> tuple[Any, ...]:
        """What a candidate process's start depends on (SparePool)."""
        return launch_key_of(self.opts, self.device, sys.executable)

    def _new_process(self, gpu_later: bool = False,
                     profiler_anytime: bool = False) -> CandidateProcess:
        """A candidate process; its environment is the same for every candidate of one launch
        key, so a spare started before the candidate was known fits."""
        return start_process(candidate_env_of(self.opts, self.cache_root()), self.opts,
                             self.device, gpu_later, profiler_anytime)

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
            self.process_start = "boot" if cand.boot else "spare"
        else:
            cand = self._new_process(gpu_later=self.device.startswith("cuda"))
        EARLY.append(cand)
        self.cand, self.scratch = cand, cand.scratch

    def _start_candidate(self, ref_model: Any = None) -> None:
        """The process _launch_early started or took (or, without one, a spare when one fits and
        is alive, else a new one); either way started up ("warm") before the candidate is
        loaded. On a GPU, a new process (and the worker's boot process) gets the device's
        bandwidth measured (or checked against the cache) first: a new one while it imports,
        before its own device work starts; the boot process, whose start-up was asked for
        whole at the worker's start, once the stages that may not overlap a measurement are
        done (wait_device_stages). Then, while it starts up, the floor's counts are taken
        (_early_counts: no measurement runs then). A process started before this evaluation
        that fails to start is replaced once; a new one that cannot start is the machine's
        problem (EnvironmentProblem), not the candidate's: no candidate code has run."""
        cand = self.cand if self.cand is not None and self.cand in EARLY else None
        if cand is not None:
            EARLY.remove(cand)
        else:
            cand = SPARE.take(self.launch_key())
            self.process_start = "spare" if cand is not None else "fresh"
            cand = cand or self._new_process()
        self.cand, self.scratch = cand, cand.scratch
        if self.process_start != "spare" and self.device.startswith("cuda"):
            cand.wait_device_stages(self.opts.timeout_s)
            self._ceilings()  # a new process is still importing: the device is quiet
            cand.start_gpu()  # nothing below measures: its device stage may start
        self._early_counts(ref_model, count=self.process_start != "spare")
        reply, why = cand.wait_warm(self.opts.timeout_s)
        if reply is None and self.process_start != "fresh":
            discard(cand)
            self.process_start = "fresh"
            cand = self._new_process()
            self.cand, self.scratch = cand, cand.scratch
            reply, why = cand.wait_warm(self.opts.timeout_s)
        if reply is None:
            raise EnvironmentProblem(f"the candidate process could not start: {why}")

    def _early_counts(self, ref_model: Any, count: bool) -> None:
        """The floor's counts before the trials (physical_floor.count_early), counted now only
        with `count`; kept for _physical_floor."""
        if ref_model is None:
            return
        self.counts, note = physical_floor.count_early(self.ref, self.device, self.cache_root(),
                                                       self.opts.seed, ref_model, count)
        if note is not None:
            self.counts_note = note

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

        start = self.started = time.monotonic()
        self._launch_early()
        ref_model = self._build_reference()
        self.result = {"runtime_us": timing.stats([]), "ref_runtime_us": timing.stats([]),
                       "speedup": None, "compile_s": None}
        if self.candidate_defect is not None:
            self._fail("compile_error", self.candidate_defect)
            return self._finish(time.monotonic() - start)
        try:
            if self._check(ref_model):
                self._measure(ref_model)
        finally:
            with self._phase("cleanup"):
                if self.cand is not None:
                    self.cand.close()
                    shutil.rmtree(self.cand.scratch, ignore_errors=True)
                if self.device.startswith("cuda"):
                    torch.cuda.empty_cache()
                SPARE.open_window()  # measurements are over
        profiling.attach(self)  # its own process, after the candidate's has gone
        return self._finish(time.monotonic() - start)

    def _build_reference(self) -> Any:
        import torch

        with self._phase("reference"):
            integrity.set_precision_policy()
            if self.opts.threads > 0:
                torch.set_num_threads(self.opts.threads)
            self.init_seed = self.trial_rng.getrandbits(31)
            return build_reference(self.ref, self.init_seed, self.device, self.opts.timeout_s)

    def _check(self, ref_model: Any) -> bool:
        """The candidate's process started, the candidate loaded, its trials and its profile:
        whether it got through them (else the verdict says why)."""
        with self._phase("process_start"):
            self._start_candidate(ref_model)
            if self.opts.spare:  # spares start up during load and trials (SparePool)
                SPARE.fill(self.launch_key(), self.device, self._new_process)
            SPARE.open_window()
        lock = self._wait_for_prebuild()
        try:
            with self._phase("load"):
                loaded = self._load(self.init_seed)
        finally:
            if lock is not None:
                lock.release()
        with self._phase("trials"):
            checked = loaded and self._trials(ref_model)
        with self._phase("profile"):
            return checked and self._profile()

    def _measure(self, ref_model: Any) -> None:
        """The timing series, the physical floor and the torch.compile baseline, once the
        spares' start-up that may not overlap a measurement is done."""
        with self._phase("quiesce"):
            SPARE.quiesce(self.device, self.opts.timeout_s)
        with self._phase("timing"):
            EventSeries(self, ref_model).run()
        if graph_wanted(self.opts, self.device, self.out, self.result):
            with self._phase("graph_timing"):
                GraphSeries(self).run(ref_model)
        with self._phase("floor"):
            self._physical_floor(ref_model)
        if self.opts.compile_baseline and self.out.verdict == "correct":
            with self._phase("compile_baseline"):
                compile_baseline(self.result, self._problem_key(), ref_model, self.ref.module,
                                 self.device, self.rng, self.opts)

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
        arch = (self.candidate_env().get("TORCH_CUDA_ARCH_LIST")
                if self.device.startswith("cuda") else None)
        reply = self._ask({"op": "load", "candidate": candidate, "reference": reference,
                           "overrides": self.opts.overrides, "device": self.device,
                           "cuda_arch_list": arch,
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
        comparison = self.out.comparison
        for trial in range(self.opts.trials):
            seed = self.trial_rng.getrandbits(31)
            inputs = make_inputs(self.ref.module, seed, self.device)
            sig = floor_counts.signature(inputs)
            if trial == 0 or self.trial_signature != sig:
                self.trial_signature = sig if trial == 0 else None  # the floor's counts fit?
            expected = self._expected(ref_model, seed, inputs)
            self.output_bytes = max(self.output_bytes, tensor_nbytes(expected))
            reply = self._ask({"op": "run", "seed": seed}, f"correctness trial {trial + 1}")
            if reply is None:
                return False
            if not reply.get("ok"):
                return self._run_error(reply, f"running correctness trial {trial + 1}")
            if not verdicts.check_outputs(reply.get("outputs"), expected, f"trial {trial + 1}",
                                          comparison, self.device, self.scratch):
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

    def _profile(self) -> bool:
        """Fallback to PyTorch, changed global state, persisting L2 (see integrity.py)."""
        reply = self._ask({"op": "profile", "seed": self.rng.getrandbits(31)}, "profiling")
        if reply is None:
            return False
        if not reply.get("ok"):
            return self._run_error(reply, "profiling")
        verdicts.judge_state(self.out, reply)
        self.result["profile"] = verdicts.judge_profile(self.out, reply.get("profile") or {},
                                                        self.device, self.candidate_source)
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
        if self.ceil is None:  # a boot process may still be starting: a full measurement
            cand = self.cand if self.process_start == "boot" else None  # (kept on disk) waits
            self.ceil = roofline.ceilings(self.device, self.cache_root(), cand and (
                lambda: cand.wait_warm(self.opts.timeout_s)))
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
        physical_floor.judge(self.out, self.result, c, counts, ref_model, self._ceilings(),
                             self.counts_note)
        if counted_now and self.device.startswith("cuda"):
            torch.cuda.empty_cache()

    # -- the verdict rules (verdicts.py) bound to this evaluation, as the timing series use them --

    def _rested_wanted(self, ref_b2b: list[float]) -> bool:
        return rested_wanted(self.opts.rested, self.device, ref_b2b)

    def _check_rests(self, outside_us: float, got: list[float], rests: list[float],
                     idle_us: float) -> bool:
        return verdicts.check_rests(self.out, outside_us, got, rests, idle_us)

    def _rested_verdict(self, info: dict[str, Any], ref_times: dict[str, list[float]],
                        cand_times: dict[str, list[float]], idle_us: float,
                        rest_blocks: int) -> str:
        return verdicts.rested_verdict(self.out, info, ref_times, cand_times, idle_us,
                                       rest_blocks)

    def _check_timed_outputs(self, descs: Any, ref_outputs: list[Any], block: int,
                             what: str = "timed block") -> bool:
        return verdicts.check_timed_outputs(self.out, descs, ref_outputs, block, self.device,
                                            self.scratch, what)

    def _cross_check(self, walls: list[TimedBlock], flush_us: float,
                     result_key: str = "wall_check") -> None:
        self.result[result_key] = verdicts.cross_check(self.out, walls, flush_us, self.device,
                                                       getattr(self, "ping_us", None))

    def _cpu_check(self, walls: list[TimedBlock], cpu_us: float) -> None:
        self.result["cpu_check"] = verdicts.cpu_check(self.out, walls, cpu_us, self.opts.threads,
                                                      self.flush_cpu_us)

    def _graph_blocks(self, ref_graph: Any, pool: list[list[Any]], k: int) -> None:
        """GraphSeries.replay: the graph timing after both sides' capture (ref_graph: the
        reference's timing.GraphTimer over `pool`, k forwards)."""
        GraphSeries(self).replay(ref_graph, pool, k)

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

    def _finish(self, wall_s: float) -> dict[str, Any]:
        """The verdict settled (verdicts.settle) and the evaluate reply's result
        (docs/worker-protocol.md)."""
        o = self.out
        correct = verdicts.settle(o, self.opts.strict, self.opts.trials,
                                  self.cand.launch if self.cand is not None else None)
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
            "tolerance": (o.comparison.tolerance
                          or {dtype_name("float32"): {"atol": 1e-3, "rtol": 1e-3}}),
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
            "process_warm_s": (self.cand.warm_report(
                None if self.process_start == "fresh" else self.started)
                if self.cand is not None else {}),
            "worker_start_s": boot.take_steps(),
            "problem": {"path": self.ref.path, "source_hash": self.ref.source_hash,
                        "source": self.ref.source,
                        "overrides": {k: repr(v) for k, v in self.ref.overrides.items()}},
            "candidate": {"path": self.opts.candidate, "source": self.candidate_source,
                          "source_hash": self.candidate_hash},
        }


def evaluate(req: dict[str, Any]) -> dict[str, Any]:
    return Evaluation(Options.from_request(req)).run()
