"""KernelBench problems, found as `openkernel problems` and `--level/--problem` find them."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from . import _core


@dataclass(frozen=True)
class Problem:
    """A reference program: its name, path, KernelBench level and number, and source."""

    name: str
    path: str
    level: Optional[int]
    problem: Optional[int]
    source: str = field(repr=False)
    overrides: Dict[str, str] = field(default_factory=dict)


def load(level: Optional[int] = None, problem: Optional[int] = None, *,
         kernelbench_dir: Optional[str] = None, reference: Optional[str] = None) -> Problem:
    """KernelBench problem ``problem`` of ``level`` (from ``kernelbench_dir``, else
    $OPENKERNEL_KERNELBENCH_DIR, else the config's kernelbench_dir), or the file ``reference``."""
    options = {k: v for k, v in (("level", level), ("problem", problem),
                                 ("kernelbench_dir", kernelbench_dir), ("reference", reference))
               if v is not None}
    p = _core.load_problem(options)
    return Problem(name=p["name"], path=p["path"], level=p["level"], problem=p["problem"],
                   source=p["source"], overrides=dict(p["overrides"]))


def list(level: int, *, kernelbench_dir: Optional[str] = None) -> List[Dict[str, Any]]:
    """The problems of a level: ``problems list --json``'s objects (level, problem, name, path)."""
    return [dict(p) for p in _core.list_problems(level, kernelbench_dir or "")]
