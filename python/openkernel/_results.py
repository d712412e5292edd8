"""Typed results of the Python API, mirroring the CLI's JSON contracts (docs/cli.md,
docs/optimize.md, docs/store.md "events"). Each keeps the whole JSON object in ``raw`` and gives
it back with ``to_dict()``: a field the dataclass does not name is still there."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Type, TypeVar

T = TypeVar("T")


def _fields_from(cls: Type[T], data: Mapping[str, Any], **converted: Any) -> T:
    """An instance of the dataclass ``cls`` from ``data``: each field from the key of its name
    (None when absent), ``converted`` values in place of the raw ones, the whole object as raw."""
    values: Dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name == "raw":
            values["raw"] = dict(data)
        elif f.name in converted:
            values[f.name] = converted[f.name]
        else:
            values[f.name] = data.get(f.name)
    return cls(**values)


@dataclass(frozen=True)
class RuntimeStats:
    """A timing summary in microseconds (``runtime_us``, ``ref_runtime_us``)."""

    median: Optional[float]
    mean: Optional[float]
    stderr: Optional[float]
    min: Optional[float]
    n: int

    @staticmethod
    def from_json(data: Any) -> Optional["RuntimeStats"]:
        if not isinstance(data, dict):
            return None
        return RuntimeStats(median=data.get("median"), mean=data.get("mean"),
                            stderr=data.get("stderr"), min=data.get("min"),
                            n=int(data.get("n") or 0))


@dataclass(frozen=True)
class EvalResult:
    """One evaluation: the fields of ``openkernel evaluate --json`` (docs/cli.md)."""

    verdict: str
    compiled: bool
    correct: bool
    valid: bool
    flags: List[Any]
    reasons: List[str]
    max_abs_error: Optional[float]
    max_rel_error: Optional[float]
    runtime_us: Optional[RuntimeStats]
    ref_runtime_us: Optional[RuntimeStats]
    speedup: Optional[float]
    device: Optional[str]
    backend: Optional[str]
    tolerance: Optional[Dict[str, Any]]
    trials: Optional[int]
    seed: Optional[int]
    compile_s: Optional[float]
    wall_s: Optional[float]
    worker_wall_s: Optional[float]
    phases_s: Optional[Dict[str, float]]
    candidate_process: Optional[str]
    process_warm_s: Optional[Dict[str, float]]
    inline_build: Optional[Dict[str, Any]]
    timing: Optional[Dict[str, Any]]
    wall_check: Optional[Dict[str, Any]]
    rested_wall_check: Optional[Dict[str, Any]]
    graph_wall_check: Optional[Dict[str, Any]]
    compile_runtime_us: Optional[RuntimeStats]
    speedup_compile: Optional[float]
    compile_baseline: Optional[Dict[str, Any]]
    roofline: Optional[Dict[str, Any]]
    profile: Optional[Dict[str, Any]]  # the tier that ran and its evidence (docs/profiling.md)
    reference_cache: Optional[Dict[str, Any]]
    problem: Optional[Dict[str, Any]]
    candidate: Optional[Dict[str, Any]]
    versions: Optional[Dict[str, Any]]
    sandbox: Optional[Dict[str, Any]]
    evaluation_id: Optional[int]
    db: Optional[str]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> "EvalResult":
        return _fields_from(
            EvalResult, data,
            flags=list(data.get("flags") or []), reasons=list(data.get("reasons") or []),
            compiled=bool(data.get("compiled")), correct=bool(data.get("correct")),
            valid=bool(data.get("valid")),
            runtime_us=RuntimeStats.from_json(data.get("runtime_us")),
            ref_runtime_us=RuntimeStats.from_json(data.get("ref_runtime_us")),
            compile_runtime_us=RuntimeStats.from_json(data.get("compile_runtime_us")))

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object exactly as ``evaluate --json`` prints it."""
        return dict(self.raw)


@dataclass(frozen=True)
class Attempt:
    """One attempt of an optimize session (the report's ``history``, docs/optimize.md)."""

    number: int
    generator: Optional[str]
    verdict: str
    correct: bool
    speedup: Optional[float]
    runtime_us: Optional[float]
    error: Optional[str]
    cost_usd: Optional[float]
    wall_s: Optional[float]
    description: Optional[str]
    params: Any
    path: Optional[str]
    bottleneck: Optional[str]
    evaluation_id: Optional[int]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> "Attempt":
        return _fields_from(Attempt, data, correct=bool(data.get("correct")))


@dataclass(frozen=True)
class Report:
    """An optimize session's report: report.json's keys (docs/optimize.md)."""

    session: str
    status: str
    stop_reason: Optional[str]
    verdict: str
    problem: Dict[str, Any]
    backend: str
    model: str
    mode: Optional[str]
    device: Optional[str]
    speedup: Optional[float]
    runtime_us: Optional[float]
    eager_runtime_us: Optional[float]
    compile_runtime_us: Optional[float]
    speedup_compile: Optional[float]
    fraction_of_speed_of_light: Optional[float]
    bandwidth_fraction: Optional[float]
    flags: List[str]
    best_candidate: Optional[str]
    best_attempt: Optional[int]
    attempts: int
    cost_usd: float
    out_dir: Optional[str]
    db: Optional[str]
    report_md: Optional[str]
    report_json: Optional[str]
    search: Any
    history: List[Attempt]
    error: Optional[str]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> "Report":
        return _fields_from(
            Report, data, flags=list(data.get("flags") or []),
            attempts=int(data.get("attempts") or 0), cost_usd=float(data.get("cost_usd") or 0),
            history=[Attempt.from_json(a) for a in data.get("history") or []])

    def to_dict(self) -> Dict[str, Any]:
        """report.json's object (what ``optimize --json`` prints)."""
        return dict(self.raw)


@dataclass(frozen=True)
class Standing:
    """The running figures most events carry."""

    total: int
    best_speedup: Optional[float]
    cost_usd: float
    elapsed_s: float
    recorded: int


@dataclass(frozen=True)
class Event:
    """One engine event, as the store's events table records it (docs/store.md, "events"):
    ``kind`` is the Observer method (started, strategy, generating, model_text, model_retry,
    evaluating, attempt_finished, diagnosed, search_decision, warning, control, stopped)."""

    kind: str
    number: int
    total: int
    text: str
    payload: Dict[str, Any]

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> "Event":
        return Event(kind=str(data["kind"]), number=int(data.get("number") or 0),
                     total=int(data.get("total") or 0), text=str(data.get("text") or ""),
                     payload=dict(data.get("payload") or {}))

    @property
    def standing(self) -> Optional[Standing]:
        """The running figures, for the kinds that carry them."""
        p = self.payload
        if "elapsed_s" not in p:
            return None
        return Standing(total=self.total, best_speedup=p.get("best_speedup"),
                        cost_usd=float(p.get("cost_usd") or 0),
                        elapsed_s=float(p.get("elapsed_s") or 0),
                        recorded=int(p.get("recorded") or 0))

    @property
    def attempt(self) -> Optional[Dict[str, Any]]:
        """The recorded attempt (attempt_finished)."""
        a = self.payload.get("attempt")
        return a if isinstance(a, dict) else None
