"""The evaluator must never fail an honest kernel: every pair in honest_cases.py goes through the
real CLI (`openkernel evaluate --json`) and must end `correct` with no rejecting flag.

CPU cases run in the default suite; GPU cases are marked gpu and skip, saying so, without a CUDA
device. Environment:
  OPENKERNEL_BIN            the engine (default build/release/bin/openkernel)
  OPENKERNEL_PYTHON         the worker's python (default: this interpreter)
  OPENKERNEL_HONEST_GROUPS  only these groups (e.g. "cuda_a triton"); others skip
  OPENKERNEL_HONEST_CACHE   compile cache shared by the cases (default: a temporary folder)
  OPENKERNEL_HONEST_OUT     a folder: honest.tsv (a row per case) and <case>.json/.err
  OPENKERNEL_HONEST_CASE_LIMIT_S  seconds per evaluation (default 420 load_inline, 240 others)
  OPENKERNEL_NO_SANDBOX=1   evaluate with --no-sandbox (machines where bwrap cannot run)

    python3 -m pytest -q tests/honest                # CPU cases
    python3 -m pytest -q -rs -m gpu tests/honest     # GPU cases (tests/gpu/run_h200_honest.sh)
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from honest_cases import CASES, HERE, HonestCase

ROOT = HERE.parent.parent
BINARY = Path(os.environ.get("OPENKERNEL_BIN") or ROOT / "build/release/bin/openkernel")
PYTHON = os.environ.get("OPENKERNEL_PYTHON") or sys.executable
TSV_COLUMNS = ["case", "verdict", "flags", "timing_mode", "speedup", "seconds", "reasons"]

try:
    import torch

    HAVE_GPU = bool(torch.cuda.is_available())
except ImportError:
    HAVE_GPU = False


def rejecting_flags() -> set[str]:
    """The flags docs/evaluation.md's rules table marks as rejecting (column "rejects": yes)."""
    table = (ROOT / "docs/evaluation.md").read_text()
    return set(re.findall(r"^\| `(\w+)` \| yes \|", table, flags=re.M))


def _cache_dir() -> Path:
    chosen = os.environ.get("OPENKERNEL_HONEST_CACHE")
    if chosen:
        return Path(chosen)
    return Path(tempfile.mkdtemp(prefix="openkernel-honest-cache-"))


CACHE = _cache_dir()  # one per session: the three dispatch cases share one extension build


def environment(base: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENKERNEL_CONFIG", "OPENKERNEL_DB", "OPENKERNEL_HOME")}
    env.update({"OPENKERNEL_PYTHON": PYTHON, "XDG_CONFIG_HOME": str(base / "config"),
                "XDG_DATA_HOME": str(base / "data"), "XDG_CACHE_HOME": str(CACHE)})
    return env


def command(case: HonestCase, db: Path) -> list[str]:
    args = [str(BINARY), "evaluate", "--reference", str(HERE / case.reference),
            "--candidate", str(HERE / case.candidate), "--backend", case.backend, "--json",
            "--db", str(db), "--timeout", "300"]
    # The CPU cases share two cores with everything else here: a shorter timing phase.
    args += ["--trials", "3", "--timing-budget", "1"] if not case.gpu else ["--timing-budget", "2"]
    if os.environ.get("OPENKERNEL_NO_SANDBOX") == "1":
        args.append("--no-sandbox")
    return args


def run_case(name: str, case: HonestCase, base: Path) -> tuple[int | None, str, str, float]:
    """(exit status or None on the per-case time limit, stdout, stderr, seconds); on the limit the
    whole process group (engine, worker, candidate) is killed."""
    limit = float(os.environ.get("OPENKERNEL_HONEST_CASE_LIMIT_S") or case.limit_s)
    start = time.monotonic()
    proc = subprocess.Popen(command(case, base / f"{name}.db"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=environment(base), cwd=base,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        rc, err = None, err + f"\n[case limit: killed after {limit:.0f} s]"
    return rc, out, err, time.monotonic() - start


def record(name: str, result: dict[str, Any], verdict: str, out: str, err: str,
           seconds: float) -> None:
    """Appends the case's row to $OPENKERNEL_HONEST_OUT/honest.tsv and keeps its output."""
    folder = os.environ.get("OPENKERNEL_HONEST_OUT")
    if not folder:
        return
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    (path / f"{name}.json").write_text(out)
    (path / f"{name}.err").write_text(err)
    speedup = result.get("speedup")
    row = [name, verdict, ",".join(result.get("flags") or []),
           str((result.get("timing") or {}).get("mode") or ""),
           "" if speedup is None else f"{speedup:.3f}", f"{seconds:.1f}",
           " | ".join(result.get("reasons") or [])[:300].replace("\t", " ").replace("\n", " ")]
    tsv = path / "honest.tsv"
    new = not tsv.exists()
    with tsv.open("a") as f:
        if new:
            f.write("\t".join(TSV_COLUMNS) + "\n")
        f.write("\t".join(row) + "\n")


def _marks(case: HonestCase) -> list[Any]:
    if not case.gpu:
        return []
    return [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU on this "
                                                "machine: GPU honest cases skipped")]


@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(c)) for n, c in CASES.items()])
def test_honest_case_is_correct(name: str, tmp_path: Path) -> None:
    if not BINARY.is_file():
        pytest.skip(f"no openkernel binary at {BINARY}; build it or set OPENKERNEL_BIN")
    case = CASES[name]
    groups = os.environ.get("OPENKERNEL_HONEST_GROUPS", "").split()
    if groups and case.group not in groups:
        pytest.skip(f"group {case.group} not in OPENKERNEL_HONEST_GROUPS={' '.join(groups)}")
    rc, out, err, seconds = run_case(name, case, tmp_path)
    result: dict[str, Any] = {}
    if rc == 0:
        try:
            result = json.loads(out)
        except json.JSONDecodeError:
            pass
    verdict = str(result.get("verdict") or ("case_timeout" if rc is None else f"exit_{rc}"))
    record(name, result, verdict, out, err, seconds)
    context = f"{name} ({case.candidate} vs {case.reference}): exit {rc}, {seconds:.0f} s\n" \
              f"reasons: {result.get('reasons')}\nstderr: {err[-3000:]}\nstdout: {out[-1500:]}"
    assert rc == 0 and result, context
    assert verdict == "correct" and result.get("valid") is True, context
    assert not set(result.get("flags") or []) & rejecting_flags(), context


def test_rejecting_flags_are_read_from_the_docs() -> None:
    flags = rejecting_flags()
    assert {"no_custom_kernel", "timed_output_mismatch", "below_physical_floor"} <= flags, flags
    assert "torch_ops_in_forward" not in flags and "no_sandbox" not in flags, flags


def test_manifest_lists_every_case_and_files_exist() -> None:
    """README.md's table is the manifest: one row per case, no row without a case."""
    readme = (HERE / "README.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \|", readme, flags=re.M)
    assert sorted(rows) == sorted(CASES), (sorted(set(rows) ^ set(CASES)))
    for name, case in CASES.items():
        assert (HERE / case.reference).is_file() and (HERE / case.candidate).is_file(), name
        assert case.backend in ("cpu", "cuda", "triton") and case.group, name
        assert (case.group == "cpu") == (not case.gpu), name
    files = {p.name for p in HERE.glob("*.py") if p.name.startswith(("ref_", "cand_"))}
    used = {c.reference for c in CASES.values()} | {c.candidate for c in CASES.values()}
    assert files == used, files ^ used


def test_direct_check_compare_tells_right_from_wrong() -> None:
    """direct_check.py's comparison (the engine-free judge of the corpus) passes equal values in
    any layout and fails 1% errors, other shapes, other dtypes and unequal integers."""
    import torch

    from direct_check import compare

    want = torch.randn(64, 48)
    assert compare(want.t().contiguous().t(), want) == ""
    assert compare(want.clone(), want) == ""
    assert "elements off" in compare(want * 1.01, want)
    assert compare(want[:, :24], want) and compare(want.double(), want)
    assert compare(torch.arange(6), torch.arange(6)) == ""
    assert compare(torch.arange(6), torch.arange(6) + 1) == "integer outputs differ"
    assert "not a torch.Tensor" in compare(want.numpy(), want)


def test_direct_check_passes_the_native_cpu_cases() -> None:
    """The corpus's own kernels are right without the engine (the compile_cpp cases: fast)."""
    names = [n for n, c in CASES.items() if c.group == "cpu" and "native" in c.candidate]
    proc = subprocess.run([sys.executable, str(HERE / "direct_check.py"), "--jobs", "1", *names],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert sum(line.split("\t")[1] == "True" for line in proc.stdout.splitlines()[1:]) == \
        len(names) == 3, proc.stdout
