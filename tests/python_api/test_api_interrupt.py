"""Ctrl-C during an evaluation: KeyboardInterrupt in the caller once the engine stopped, and no
process of the evaluation left running (the worker, its sandbox, the candidate)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import API_DIR, FIXTURES

SCRIPT = """
import sys, time
sys.path.insert(0, sys.argv[1])
import openkernel
e = openkernel.Evaluator(backend="cpu", db=sys.argv[2], trials=1, timeout=300.0)
print("evaluating", flush=True)
start = time.monotonic()
try:
    e.evaluate(sys.argv[3], sys.argv[4])
    print("finished", flush=True)
except KeyboardInterrupt:
    print(f"interrupted after {time.monotonic() - start:.1f} s", flush=True)
    print("alive", e.info()["worker_alive"], flush=True)
"""


def descendants(pid: int) -> dict[int, str]:
    """Every process below `pid`, with its start time (to tell a reused pid apart)."""
    parents: dict[int, list[int]] = {}
    starts: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        parents.setdefault(int(fields[1]), []).append(int(entry))
        starts[int(entry)] = fields[19]
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found[child] = starts[child]
            todo.append(child)
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""


def running(pid: int, start: str) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat[stat.rindex(")") + 2:].split()
    return fields[19] == start and fields[0] != "Z"


def test_ctrl_c_raises_keyboard_interrupt_and_leaves_nothing_running(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(API_DIR), str(tmp_path / "db.sqlite"),
         str(FIXTURES / "cand_infinite_loop.py"), str(FIXTURES / "ref_scaled_relu.py")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "evaluating"
    # Wait until the candidate runs (its process is the worker's child, inside the sandbox), then
    # give it time to be in its endless forward.
    deadline = time.monotonic() + 120
    seen: dict[int, str] = {}
    while time.monotonic() < deadline and proc.poll() is None and not any(
            "openkernel_worker.candidate" in cmdline(pid) for pid in seen):
        seen.update(descendants(proc.pid))
        time.sleep(0.2)
    time.sleep(2.0)
    seen.update(descendants(proc.pid))
    assert any("openkernel_worker.candidate" in cmdline(pid) for pid in seen), seen
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert "interrupted after" in out, out + err
    assert "alive False" in out  # the worker was stopped; a next call starts another
    # A sandbox that dies with its parent is told so by the kernel: allow it a moment to exit.
    deadline = time.monotonic() + 10
    while (left := [pid for pid, start in seen.items() if running(pid, start)]) and \
            time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"left running: {[(pid, cmdline(pid)) for pid in left]}; {err}"
