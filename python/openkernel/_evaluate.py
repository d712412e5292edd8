"""evaluate(), Evaluator and reward(): `openkernel evaluate` from Python (docs/python.md)."""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import _core
from ._results import EvalResult
from ._sources import Code, as_path

Request = Mapping[str, Any]


def _sets(values: Optional[Mapping[str, Any]]) -> Optional[List[str]]:
    """``--set NAME=VALUE`` flags from a dict of the reference's constants."""
    if values is None:
        return None
    return [f"{k}={v}" for k, v in values.items()]


def _request(candidate: Code, reference: Optional[Code] = None, *,
             level: Optional[int] = None, problem: Optional[int] = None,
             kernelbench_dir: Optional[str] = None, sets: Optional[Mapping[str, Any]] = None,
             device: Optional[str] = None, trials: Optional[int] = None,
             seed: Optional[int] = None, timeout: Optional[float] = None,
             timing_budget: Optional[float] = None, threads: Optional[int] = None,
             strict: Optional[bool] = None, no_sandbox: Optional[bool] = None,
             cuda_graph: Optional[str] = None, rested: Optional[str] = None,
             compile_baseline: Optional[bool] = None,
             profile: Optional[str] = None) -> Dict[str, Any]:
    """One evaluation's options for the engine: the flags of `openkernel evaluate`."""
    options = {
        "candidate": as_path(candidate, "candidate"),
        "reference": as_path(reference, "reference") if reference is not None else None,
        "level": level, "problem": problem, "kernelbench_dir": kernelbench_dir,
        "set": _sets(sets), "device": device, "trials": trials, "seed": seed,
        "timeout": timeout, "timing_budget": timing_budget, "threads": threads,
        "strict": strict, "no_sandbox": no_sandbox, "cuda_graph": cuda_graph, "rested": rested,
        "compile_baseline": compile_baseline, "profile": profile,
    }
    return {k: v for k, v in options.items() if v is not None}


def _from_core(value: Mapping[str, Any]) -> Union[EvalResult, Exception]:
    error = value.get("error") if isinstance(value, dict) and "verdict" not in value else None
    if isinstance(error, dict):
        cls = _core.BadInput if error.get("exit_code") == 2 else _core.InternalError
        exc = cls(error.get("message", ""))
        exc.kind = error.get("kind")  # type: ignore[attr-defined]
        exc.exit_code = error.get("exit_code")  # type: ignore[attr-defined]
        return exc
    return EvalResult.from_json(value)


class Evaluator:
    """A long-lived evaluator: one evaluation worker kept warm across calls, with the next
    candidate process started ahead of time, as ``optimize`` evaluates. Thread-safe (calls from
    several threads take turns on the one worker); the GIL is released while one runs. Close it
    (or use it as a context manager) to stop the worker; a worker that died is restarted.

    ``backend`` (cpu, cuda or triton; default cuda with a GPU, else cpu), ``python`` (the
    worker's interpreter), ``db`` (the store every evaluation is recorded in) and ``eval_host``
    (where the worker runs: ``"ssh://[user@]host[:port]"`` or ``"slurm[:SRUN-ARGS]"``, as
    ``--eval-host``; default the config file's eval_host, else this machine; docs/remote.md)
    hold for every call; the other arguments of :func:`evaluate` are defaults that each call may
    override."""

    def __init__(self, *, backend: Optional[str] = None, python: Optional[str] = None,
                 db: Optional[str] = None, eval_host: Optional[str] = None,
                 **defaults: Any) -> None:
        _request("x", **defaults)  # checks the defaults' names now
        self._defaults = defaults
        engine = _engine(backend, python, db, eval_host)
        self._core = _core.Evaluator(engine, True)

    def evaluate(self, candidate: Code, reference: Optional[Code] = None,
                 **options: Any) -> EvalResult:
        """One candidate against a reference (a path or source text, or ``level`` and
        ``problem``); the arguments are :func:`evaluate`'s."""
        request = _request(candidate, reference, **{**self._defaults, **options})
        return EvalResult.from_json(self._core.evaluate(request))

    def evaluate_many(self, items: Iterable[Union[Code, Request]],
                      reference: Optional[Code] = None, *, return_exceptions: bool = False,
                      **options: Any) -> List[Any]:
        """Evaluates each item in turn on the warm worker and returns the results in order. An
        item is a candidate (path or source text) against ``reference``, or a dict of
        :meth:`evaluate`'s arguments (``candidate`` required). A bad item raises its error after
        the batch ran, or with ``return_exceptions`` stands in the list as that exception."""
        requests = []
        for item in items:
            if isinstance(item, Mapping):
                args = {**self._defaults, **options, **item}
                args.setdefault("reference", reference)
                requests.append(_request(**args))
            else:
                requests.append(_request(item, reference, **{**self._defaults, **options}))
        results = [_from_core(r) for r in self._core.evaluate_many(requests)]
        if not return_exceptions:
            for r in results:
                if isinstance(r, Exception):
                    raise r
        return results

    def info(self) -> Dict[str, Any]:
        """The backend, the worker's greeting (python, torch, device), whether it is alive, db."""
        return dict(self._core.info())

    def close(self) -> None:
        """Stops the worker and its spare process."""
        self._core.close()

    def __enter__(self) -> "Evaluator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _engine(backend: Optional[str], python: Optional[str], db: Optional[str],
            eval_host: Optional[str]) -> Dict[str, Any]:
    return {k: v for k, v in (("backend", backend), ("python", python), ("db", db),
                              ("eval_host", eval_host)) if v is not None}


def evaluate(candidate: Code, reference: Optional[Code] = None, *,
             backend: Optional[str] = None, python: Optional[str] = None,
             db: Optional[str] = None, eval_host: Optional[str] = None,
             **options: Any) -> EvalResult:
    """`openkernel evaluate`: checks and times one candidate against a reference and records it
    in the store. ``candidate`` and ``reference`` are paths or source text (a str with a line
    break); or give ``level`` and ``problem`` (and ``kernelbench_dir``) for a KernelBench
    reference. Options, as the CLI's flags: backend, device, trials, seed, timeout,
    timing_budget, threads, sets (a dict: ``--set``), strict, no_sandbox, cuda_graph, rested,
    compile_baseline, profile (``basic``, ``proton`` or ``deep``: ``--profile``, the result's
    ``profile`` then names the tier that ran; docs/profiling.md), python, db, eval_host
    (:class:`Evaluator`). A fresh worker serves the call and stops after it; use an
    :class:`Evaluator` for many."""
    request = _request(candidate, reference, **options)
    engine = _engine(backend, python, db, eval_host)
    core = _core.Evaluator(engine, False)
    try:
        return EvalResult.from_json(core.evaluate(request))
    finally:
        core.close()


def reward(result: Union[EvalResult, Mapping[str, Any]], baseline: str = "eager") -> Optional[float]:
    """The training reward of an evaluation (score::reward, the trace export's): -1 when it was
    rejected (a cheat or a lie), 0 for any other failure, clip(ln speedup, -1, 3) when correct,
    against eager PyTorch (``baseline="eager"``, ``speedup``) or torch.compile
    (``baseline="compile"``, ``speedup_compile``); None when correct but that baseline was not
    timed."""
    data = result.raw if isinstance(result, EvalResult) else result
    if baseline not in ("eager", "compile"):
        raise _core.BadInput(f"baseline: '{baseline}' is not one of eager, compile")
    speedup = data.get("speedup" if baseline == "eager" else "speedup_compile")
    return _core.reward(str(data.get("verdict") or ""),
                        float(speedup) if isinstance(speedup, (int, float)) else None)
