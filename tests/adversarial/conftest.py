"""Shared machinery for the adversarial suite: builds self-contained candidate files and runs
evaluations through real worker processes (`python -m openkernel_worker`), two at a time."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PYTHON = os.environ.get("OPENKERNEL_PYTHON", sys.executable)


def inline_kernels(candidate: Path, kernels: Path) -> str:
    """The candidate with its `from kernels import ...` replaced by kernels.py's source, so that
    each candidate is one file like any KernelBench candidate."""
    source = candidate.read_text()
    return re.sub(r"^from kernels import .*$", kernels.read_text(), source, flags=re.M)


def run_worker(requests: list[dict[str, Any]], timeout: float = 600) -> list[dict[str, Any]]:
    """Sends requests to one fresh worker process and returns its replies in order."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    lines = "".join(json.dumps({"id": i, **r}) + "\n" for i, r in enumerate(requests))
    proc = subprocess.run([PYTHON, "-m", "openkernel_worker"], input=lines + '{"op":"shutdown"}\n',
                          capture_output=True, text=True, env=env, timeout=timeout, check=False)
    replies = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert replies and replies[0].get("type") == "hello", proc.stderr[-2000:]
    return replies[1:]


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped (with a reason) without")
    config.addinivalue_line("markers", "slow: builds a load_inline extension (about a minute "
                            "cold); deselect with -m 'not slow'")


def evaluate_all(cases: dict[str, dict[str, Any]], folder: Path, defaults: dict[str, Any],
                 workers: int = 2) -> dict[str, dict[str, Any]]:
    """Evaluates every case (name -> request fields) in `workers` parallel worker processes."""
    tmp = Path(tempfile.mkdtemp(prefix="openkernel-adversarial-"))
    requests: dict[str, dict[str, Any]] = {}
    for name, case in cases.items():
        path = tmp / f"{name}.py"
        path.write_text(inline_kernels(folder / case["candidate"], folder / "kernels.py"))
        if os.environ.get("OPENKERNEL_NO_SANDBOX") == "1":  # machines where bwrap cannot run
            case = {**case, "no_sandbox": True}
        requests[name] = {"op": "evaluate", **defaults, **case, "candidate": str(path),
                          "reference": str(folder / case["reference"]),
                          "cache_dir": str(tmp / "cache")}
    names = list(requests)
    halves = [names[i::workers] for i in range(workers)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        outs = list(pool.map(lambda part: run_worker([requests[n] for n in part]), halves))
    results: dict[str, dict[str, Any]] = {}
    for part, replies in zip(halves, outs):
        for name, reply in zip(part, replies):
            assert reply.get("ok"), f"{name}: {reply.get('error')}"
            results[name] = reply["result"]
    dump = os.environ.get("OPENKERNEL_ADVERSARIAL_OUT")
    if dump:  # a record of every verdict, for reports from GPU runs
        with open(dump, "a") as f:
            for name, r in results.items():
                f.write(json.dumps({"case": name, "verdict": r["verdict"], "flags": r["flags"],
                                    "reasons": r["reasons"]}) + "\n")
    return results
