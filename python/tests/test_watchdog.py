"""The worker's watchdog (watchdog.py): with OPENKERNEL_WORKER_WATCHDOG=1 a real worker stops, with
its candidate process, when its input ends mid-evaluation, when its parent goes away, or on
SIGTERM; without it, requests piped in before the end of input are all served."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from openkernel_worker import watchdog

PKG = str(Path(__file__).resolve().parents[1])
SLOW_CANDIDATE = """
import time
time.sleep(60)
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return x
"""


def worker_env(on: bool) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=PKG, PYTHONDONTWRITEBYTECODE="1")
    env.pop(watchdog.ENV, None)
    if on:
        env[watchdog.ENV] = "1"
    return env


def evaluate_line(tmp_path: Path, candidate: str, rid: int = 1) -> bytes:
    from conftest import TINY_REFERENCE

    ref = tmp_path / "reference.py"
    ref.write_text(TINY_REFERENCE)
    cand = tmp_path / f"candidate{rid}.py"
    cand.write_text(candidate)
    return (json.dumps({"id": rid, "op": "evaluate", "reference": str(ref),
                        "candidate": str(cand), "backend": "cpu", "trials": 1,
                        "timing_budget_s": 0.1, "timeout_s": 120, "threads": 1,
                        "no_sandbox": True}) + "\n").encode()


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def wait_for_candidate(worker_pid: int, timeout_s: float = 30) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = [p for p in watchdog.descendants(worker_pid)
                 if b"openkernel_worker.candidate" in Path(f"/proc/{p}/cmdline").read_bytes()]
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("the worker started no candidate process")


def gone_within(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def start(on: bool) -> subprocess.Popen[bytes]:
    w = subprocess.Popen([sys.executable, "-u", "-m", "openkernel_worker"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=worker_env(on))
    assert w.stdout is not None
    hello = json.loads(w.stdout.readline())
    assert hello["ok"] and hello["pid"] == w.pid
    return w


@pytest.mark.parametrize("how", ["eof", "sigterm"])
def test_worker_stops_with_its_candidate_mid_evaluation(tmp_path: Path, how: str) -> None:
    w = start(True)
    assert w.stdin is not None
    w.stdin.write(evaluate_line(tmp_path, SLOW_CANDIDATE))
    w.stdin.flush()
    candidates = wait_for_candidate(w.pid)
    if how == "eof":
        w.stdin.close()
    else:
        w.send_signal(signal.SIGTERM)
    assert w.wait(10) == 0
    assert gone_within(candidates, 5)
    assert b"stopping" in w.stderr.read()  # type: ignore[union-attr]


def test_worker_stops_when_its_parent_goes_away(tmp_path: Path) -> None:
    # sh starts the worker on sh's own stdin (our pipe, still open after sh is killed).
    sh = subprocess.Popen(["sh", "-c", f"exec 3<&0; {sys.executable} -u -m openkernel_worker <&3 3<&- & "
                           "echo $! >&2; wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=worker_env(True))
    assert sh.stdin is not None and sh.stdout is not None and sh.stderr is not None
    worker = int(sh.stderr.readline())
    assert json.loads(sh.stdout.readline())["ok"]
    sh.stdin.write(evaluate_line(tmp_path, SLOW_CANDIDATE))
    sh.stdin.flush()
    candidates = wait_for_candidate(worker)
    sh.kill()
    sh.wait()
    assert gone_within([worker, *candidates], 5 + watchdog.PARENT_POLL_S)
    sh.stdin.close()


def test_piped_requests_are_all_served_without_the_watchdog(tmp_path: Path) -> None:
    from conftest import TINY_REFERENCE

    quick = TINY_REFERENCE.replace("class Model(", "class ModelNew(")
    lines = evaluate_line(tmp_path, quick, 1) + evaluate_line(tmp_path, quick, 2)
    p = subprocess.run([sys.executable, "-u", "-m", "openkernel_worker"], input=lines,
                       capture_output=True, env=worker_env(False), timeout=300)
    replies = [json.loads(line) for line in p.stdout.splitlines()[1:]]
    assert p.returncode == 0 and [r["id"] for r in replies] == [1, 2], p.stderr[-2000:]
    assert all(r["ok"] and r["result"]["verdict"] for r in replies), replies  # each evaluated
