"""Timing of callables the worker trusts, with the method candidates are timed with: the
reference under torch.compile (the evaluation's compile_baseline, and `openkernel baseline`,
baseline.py) and the reference itself (baseline.py).

Everything runs in this process; nothing here is cross-checked, since nothing here is the
candidate's. time_in_worker mirrors timing_series.py's blocks: a pool of input sets refreshed
before each block, the cache flushed before each call.
"""
from __future__ import annotations

import statistics
import time
from random import Random
from typing import Any

from . import refcache, timing
from .compare import Comparison, compare_values, flatten
from .options import Options, tensor_nbytes
from .problem import make_inputs, refresh_inputs


def compile_baseline(result: dict[str, Any], problem_key: tuple[Any, ...], ref_model: Any,
                     module: Any, device: str, rng: Random, opts: Options) -> None:
    """Times torch.compile(reference) with the method the candidate was timed with (the
    result's timing mode); reports compile_runtime_us and speedup_compile in `result`, or null
    with a reason. Kept per worker and problem (refcache.COMPILE_BASELINES), so a search pays
    the compile once."""
    mode = (result.get("timing") or {}).get("mode", "events")
    key = (problem_key, mode)
    info = refcache.COMPILE_BASELINES.get(key)
    if info is not None:
        info = {**info, "cached": True}
    else:
        info = _compiled_info(ref_model, module, device, rng, mode,
                              max(1.0, opts.timing_budget_s / 2), opts)
        refcache.COMPILE_BASELINES[key] = info
    result["compile_baseline"] = info
    if not info.get("ok"):
        return
    result["compile_runtime_us"] = info["runtime_us"]
    timing_info = result.get("timing") or {}
    cand = result.get("runtime_us") or {}
    if info.get("method") != timing_info.get("mode"):  # compiled graph capture failed
        cand = ((timing_info.get("events") or {}).get("runtime_us")) or cand
    c, k = cand.get("median"), (info["runtime_us"] or {}).get("median")
    result["speedup_compile"] = k / c if c and k else None


def _compiled_info(ref_model: Any, module: Any, device: str, rng: Random, mode: str,
                   budget_s: float, opts: Options) -> dict[str, Any]:
    """time_compiled's report, or why there is none; torch.compile's state is reset after."""
    import torch

    info: dict[str, Any] = {"ok": False, "reason": None, "method": mode, "compile_s": None,
                            "runtime_us": None, "cached": False}
    if not callable(getattr(torch, "compile", None)):
        info["reason"] = f"torch {torch.__version__} has no torch.compile"
        return info
    try:
        info.update(time_compiled(ref_model, module, device, rng, mode, budget_s, opts))
    except Exception as e:  # noqa: BLE001 - the baseline is optional
        info["reason"] = (f"torch.compile of the reference failed: "
                          f"{type(e).__name__}: {str(e)[:800]}")
    finally:
        reset_dynamo()
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    return info


def reset_dynamo() -> None:
    """Drops what torch.compile keeps (its compiled graphs and guards) after a baseline."""
    import torch

    dynamo = getattr(torch, "_dynamo", None)
    if dynamo is not None and hasattr(dynamo, "reset"):
        dynamo.reset()


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
    with torch.no_grad():  # a first call (a warm-up too): its outputs size the pool as well
        outputs = flatten(fn(*probe))
    timing.synchronize(device)
    per_set = max(tensor_nbytes(probe), tensor_nbytes(outputs), 1)
    del probe, outputs
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
