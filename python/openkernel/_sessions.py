"""optimize(), sweep() and score(): `openkernel optimize`, `sweep` and `score` from Python
(docs/python.md)."""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Union

from . import _core
from ._evaluate import _sets
from ._results import Event, Report
from ._sources import Code, as_path

EventCallback = Callable[[Event], Any]
ProgressCallback = Callable[[Dict[str, Any]], Any]


def _present(options: Mapping[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in options.items() if v is not None}


def optimize(reference: Optional[Code] = None, *, level: Optional[int] = None,
             problem: Optional[int] = None, kernelbench_dir: Optional[str] = None,
             sets: Optional[Mapping[str, Any]] = None, model: Optional[str] = None,
             iterations: Optional[int] = None, backend: Optional[str] = None,
             on_event: Optional[EventCallback] = None, **options: Any) -> Report:
    """`openkernel optimize`: generates, verifies and times kernels for one reference and keeps
    the fastest correct one; returns the session's report (report.json). ``reference`` is a path
    or source text; or give ``level`` and ``problem``. ``model``: ``"builtin"`` (the offline
    generator) or a registry model. ``on_event(Event)`` is called with each engine event as it
    happens (from the engine's threads, one at a time); if it raises, the session stops as on
    Ctrl-C (resumable with ``resume=``) and the exception is raised. Other options, as the CLI's
    flags: mode, out, resume, session, seed, trials, timeout, timing_budget, threads, no_sandbox,
    search, in_flight, budget_usd, budget_wall_s, budget_device_s, strategy, stop_at_sol,
    no_compile_baseline, prebuild, prompt_budget_tokens, no_skills, base_url, api_key_env, python, db,
    eval_host ("ssh://[user@]host[:port]" or "slurm[:SRUN-ARGS]": where candidates are evaluated;
    docs/remote.md)."""
    args = _present({
        "reference": as_path(reference, "reference") if reference is not None else None,
        "level": level, "problem": problem, "kernelbench_dir": kernelbench_dir,
        "set": _sets(sets), "model": model, "iterations": iterations, "backend": backend,
        **options})
    callback = None if on_event is None else (lambda e: on_event(Event.from_json(e)))
    return Report.from_json(_core.optimize(args, callback))


def sweep(level: int, problems: Union[str, Iterable[int], None] = None, *,
          output: Optional[Union[str, "os.PathLike[str]"]] = None, backend: Optional[str] = None,
          model: Optional[str] = None, iterations: Optional[int] = None,
          executor: str = "local", gpus: Optional[Iterable[Union[int, str]]] = None,
          on_event: Optional[ProgressCallback] = None, binary: Optional[str] = None,
          **options: Any) -> Dict[str, Any]:
    """`openkernel sweep`: optimizes a KernelBench level's problems (``problems`` as "1-20,35"
    or a list of numbers; default all) into the results TSV ``output``, one `openkernel
    optimize` child per problem (``binary``: which executable; default this build's), resumable
    by calling it again. Returns ``sweep --json``'s summary (output, work_dir, db, planned,
    skipped, ran, failed, interrupted, wall_s, score). ``on_event(dict)`` gets the progress
    (kind planned, started, finished, failed, warning, stopped; task, row, done, total, ...).
    Other options, as the CLI's flags: kernelbench_dir, mode, budget_usd, jobs, slurm_args,
    python, seed, trials, timeout, timing_budget, threads, no_sandbox, base_url,
    prompt_budget_tokens, no_skills, db, eval_host (a host, or a list of them: one slot each, as
    ``--eval-host`` repeated; docs/remote.md)."""
    if problems is not None and not isinstance(problems, str):
        problems = ",".join(str(int(p)) for p in problems)
    args = _present({
        "level": level, "problems": problems,
        "output": os.fspath(output) if output is not None else None, "backend": backend,
        "model": model, "iterations": iterations, "executor": executor,
        "gpus": ",".join(str(g) for g in gpus) if gpus is not None else None, **options})
    return dict(_core.sweep(args, on_event, binary or ""))


def score(tsv: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
    """`openkernel score --json`: KernelBench's metrics (n, correct, correct_rate, fast_p,
    geomean_speedup, geomean_speedup_fallback, ci, levels) of a results TSV (docs/tsv.md)."""
    return dict(_core.score(os.fspath(tsv)))
