"""`baseline` op: the reference's own times on this device, eager and under torch.compile, with
the evaluator's timing method (trusted_timing.time_in_worker), so a sweep compares kernels against
baselines measured on the same machine (`openkernel baseline`, docs/sweep.md).

Method: eager timed with CUDA events per call (or wall clock on the CPU); on a GPU, when the eager
median is below options.GRAPH_AUTO_US and cuda_graph is not "off" (or cuda_graph is "on"), both
are timed again by CUDA-graph replay, as the evaluator times a microsecond candidate, and the
graph figures stand; when it is REST_AUTO_US or more (or rested is "on"), both are timed again
rested (an idle gap before each call, as the evaluator does there), and those figures stand.
torch.compile is checked against the eager reference before it is timed; a
compile that fails or disagrees gives a null compile time with the reason.
"""
from __future__ import annotations

import time
from random import Random
from typing import Any

from . import integrity, timing
from .candidate_process import SPARE
from .options import GRAPH_AUTO_US, REST_AUTO_US, Options, resolve_device
from .trusted_timing import reset_dynamo, time_compiled, time_in_worker
from .problem import BadInput, build_model, load_reference, make_init_inputs, make_inputs


def baseline(req: dict[str, Any]) -> dict[str, Any]:
    import torch

    opts = Options.from_request({**req, "candidate": ""})
    compile_too = bool(req.get("compile", True))
    device = resolve_device(opts.backend, opts.device)
    start = time.monotonic()
    integrity.set_precision_policy()
    if opts.threads > 0:
        torch.set_num_threads(opts.threads)
    seed = opts.seed if opts.seed is not None else 0
    rng = Random(f"{seed}/baseline")
    ref = load_reference(opts.reference, opts.overrides)
    try:
        model = build_model(ref.module.Model, make_init_inputs(ref.module, seed), seed, device)
    except BadInput:
        raise
    except Exception as e:  # noqa: BLE001 - a broken reference is the user's input
        raise BadInput(f"building the reference's Model failed: {type(e).__name__}: {e}") from None
    with torch.no_grad():
        try:
            model(*make_inputs(ref.module, seed, device))
        except Exception as e:  # noqa: BLE001
            raise BadInput(f"the reference's forward failed: {type(e).__name__}: {e}") from None
        timing.synchronize(device)

        budget = max(1.0, opts.timing_budget_s)
        SPARE.quiesce(device, opts.timeout_s)  # no spare starts up on the device meanwhile
        eager = time_in_worker(model, ref.module, device, rng, "events", budget, opts)
        method = "events"
        median = (eager.get("runtime_us") or {}).get("median")
        graph_note = None
        if device.startswith("cuda") and opts.cuda_graph != "off" and (
                opts.cuda_graph == "on" or (median and median < GRAPH_AUTO_US)):
            graph = time_in_worker(model, ref.module, device, rng, "cuda_graph", budget, opts)
            if graph["method"] == "cuda_graph":
                eager, method = graph, "cuda_graph"
            else:
                graph_note = graph.get("note")
        elif device.startswith("cuda") and opts.rested != "off" and (
                opts.rested == "on" or (median and median >= REST_AUTO_US)):
            eager = time_in_worker(model, ref.module, device, rng, "events_rested", budget, opts)
            method = "events_rested"

        compiled: dict[str, Any] = {"ok": False, "reason": "not requested", "method": method,
                                    "compile_s": None, "runtime_us": None}
        if compile_too:
            if not callable(getattr(torch, "compile", None)):
                compiled["reason"] = f"torch {torch.__version__} has no torch.compile"
            else:
                try:
                    compiled = time_compiled(model, ref.module, device, rng, method, budget, opts)
                except Exception as e:  # noqa: BLE001 - the compile baseline is optional
                    compiled = {"ok": False, "method": method, "compile_s": None,
                                "runtime_us": None,
                                "reason": f"torch.compile of the reference failed: "
                                          f"{type(e).__name__}: {str(e)[:800]}"}
                finally:
                    reset_dynamo()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    out: dict[str, Any] = {
        "device": device,
        "device_name": (torch.cuda.get_device_name(torch.device(device))
                        if device.startswith("cuda") else "cpu"),
        "method": method,
        "eager_runtime_us": eager["runtime_us"],
        "compile": compiled,
        "compile_runtime_us": compiled.get("runtime_us") if compiled.get("ok") else None,
        "threads": torch.get_num_threads(),
        "versions": {"torch": torch.__version__},
        "problem": {"path": ref.path, "source_hash": ref.source_hash, "source": ref.source},
        "worker_wall_s": time.monotonic() - start,
    }
    if graph_note:
        out["note"] = graph_note
    return out
