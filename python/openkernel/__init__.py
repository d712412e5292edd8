"""OpenKernel from Python: evaluate candidates, optimize references and sweep KernelBench through
the C++ engine (the extension ``openkernel._core``), with typed results mirroring the CLI's JSON.
docs/python.md has the guide; the CLI's documentation (docs/cli.md) has every field.

Errors: :class:`BadInput` (a ValueError: what the CLI exits 2 for) and :class:`InternalError`
(a RuntimeError: exit 1), each with ``kind`` and ``exit_code``; Ctrl-C raises KeyboardInterrupt
once the engine has stopped what it was running."""
from __future__ import annotations

try:
    from . import _core
except ImportError as e:  # the source folder (python/openkernel) has no extension in it
    raise ImportError(
        f"openkernel: the extension openkernel._core is not beside {__file__}: import the package "
        "the build assembles (build/release/python, which scripts/setup.sh puts on the path; "
        "docs/python.md), not the source folder") from e
from . import problems
from ._core import BadInput, InternalError
from ._evaluate import Evaluator, evaluate, reward
from ._results import Attempt, EvalResult, Event, Report, RuntimeStats, Standing
from ._sessions import optimize, score, sweep

BadInput.__module__ = __name__
InternalError.__module__ = __name__

REWARD_REJECTED: float = _core.REWARD_REJECTED
REWARD_MIN: float = _core.REWARD_MIN
REWARD_MAX: float = _core.REWARD_MAX

__all__ = [
    "Attempt", "BadInput", "EvalResult", "Evaluator", "Event", "InternalError", "Report",
    "RuntimeStats", "Standing", "evaluate", "optimize", "problems", "reward", "score", "sweep",
    "REWARD_REJECTED", "REWARD_MIN", "REWARD_MAX",
]
