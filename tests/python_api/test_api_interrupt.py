"""Ctrl-C during an evaluation, an optimize() and a sweep(): KeyboardInterrupt in the caller once
the engine stopped, and no process of the run left running (the worker, its sandbox, the
candidate, the sweep's `openkernel optimize` children)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import API_DIR, FIXTURES, SWISH

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


# optimize() and sweep() interrupted once their work has started: a child Python process runs one
# of them (the builtin model on the CPU, more iterations than it can finish), telling the test by
# a file when its on_event callback is first called; the test waits for that and for the run's
# processes, then sends SIGINT to the child (as Ctrl-C in a terminal does: the engine's processes
# run in process groups of their own, so the engine must stop its workers, candidates and sweep
# children itself). The child must die of the KeyboardInterrupt within a few seconds, and no
# process whose command line or environment names the run's unique marker may be left. A sweep's
# SIGINT lands while its first child's worker is still starting, as a rule.
SESSION_SCRIPT = """
import os, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import openkernel
kind, work, bench = sys.argv[2], Path(sys.argv[3]), sys.argv[4]
started = work / "started"
def on_event(event):
    if not started.exists():
        started.write_text("called")
quick = {"trials": 2, "timing_budget": 0.3, "timeout": 120.0, "db": str(work / "db.sqlite")}
if kind == "optimize":
    openkernel.optimize(reference=sys.argv[5], model="builtin", iterations=500, backend="cpu",
                        out=str(work / "out"), no_compile_baseline=True, on_event=on_event, **quick)
else:
    openkernel.sweep(level=1, problems=[1, 2, 3], output=work / "results/mini.tsv", backend="cpu",
                     model="builtin", iterations=500, kernelbench_dir=bench, on_event=on_event,
                     **quick)
print("finished", flush=True)
"""


def marked(marker: str) -> dict[int, str]:
    """The processes whose command line or environment holds `marker`, with their start times."""
    found: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            seen = any(marker.encode() in Path(f"/proc/{entry}/{part}").read_bytes()
                       for part in ("cmdline", "environ"))
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if seen and fields[0] != "Z":
            found[int(entry)] = fields[19]
    return found


@pytest.mark.parametrize("kind", ["optimize", "sweep"])
def test_ctrl_c_stops_optimize_and_sweep_and_leaves_nothing_running(tmp_path: Path,
                                                                     kind: str) -> None:
    marker = f"ok-interrupt-{uuid.uuid4().hex}"
    work = tmp_path / marker
    work.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", SESSION_SCRIPT, str(API_DIR), kind, str(work),
         str(FIXTURES / "minibench"), str(SWISH / "reference.py")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, "OK_TEST_MARKER": marker})
    try:
        # Started work: the callback was called and the run's processes below the child exist.
        deadline = time.monotonic() + 120
        seen: dict[int, str] = {}
        while time.monotonic() < deadline and proc.poll() is None and not (
                (work / "started").exists() and set(descendants(proc.pid))):
            time.sleep(0.1)
        time.sleep(0.5)
        assert proc.poll() is None, proc.communicate()
        assert (work / "started").exists()
        seen.update(descendants(proc.pid))
        seen.update(marked(marker))
        assert len(seen) > 1, seen  # at least the child and one process of the run
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # Python dies of an uncaught KeyboardInterrupt by SIGINT, after printing its traceback.
    assert proc.returncode == -signal.SIGINT, (proc.returncode, out, err)
    assert "KeyboardInterrupt" in err.splitlines()[-1], err
    assert "finished" not in out
    assert took < 10, f"{took:.1f} s from SIGINT to exit"
    # The engine's own processes (workers, the sweep's children) are gone when the call returns;
    # only sandboxed candidate processes may outlive it for a moment (bwrap's --die-with-parent
    # has the kernel stop them once their worker is gone; a spare being set up then ends at its
    # input's end).
    def alive() -> dict[int, str]:
        return {**marked(marker), **{pid: s for pid, s in seen.items() if running(pid, s)}}

    engine = [(pid, cmdline(pid)) for pid in alive() if not sandboxed(cmdline(pid))]
    assert not engine, f"running after the call returned: {engine}; {err}"
    deadline = time.monotonic() + 10
    while (left := alive()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"left running: {[(pid, cmdline(pid)) for pid in left]}; {err}"


def sandboxed(command: str) -> bool:
    return command.startswith("/usr/bin/bwrap ") or "openkernel_worker.candidate" in command or \
        "openkernel_worker.sandbox" in command
