"""What the remote tests' lost-worker cases share (test_remote_ssh.py, test_remote_slurm.py): one
evaluation run while a thread loses its worker once or twice (kills it, cancels its job), and the
outcome the engine owes either way (docs/remote.md). Lost once, the request is retried on a fresh
worker and the verdict is the usual one; lost twice, the loss is recorded as the evaluator's
failure (evaluator_error, flagged remote_lost, the reason saying twice), never as the candidate's,
and the engine exits 3 naming the host. Also when a worker is at work on an evaluation
(`evaluating`), for the tests that lose it then."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import threading
from pathlib import Path
from typing import Callable

# lose(times, lost, stop): loses the worker `times` times, appending each lost worker to `lost`,
# until done or `stop` is set.
Lose = Callable[[int, list, threading.Event], None]


def descendants(root: int) -> list[int]:
    """Every process below `root`, by the parent each /proc/PID/stat names."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_bytes() if entry.name.isdigit() else b""
        except OSError:
            continue
        if stat:
            children.setdefault(int(stat.rsplit(b")", 1)[1].split()[1]), []).append(int(entry.name))
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def evaluating(worker: int, name: str) -> bool:
    """Whether worker process `worker` is evaluating a candidate file called `name`: one of its
    candidate processes (`-m openkernel_worker.candidate SCRATCH`, under the sandbox or not) has
    the file in SCRATCH/candidate, where the worker copies it when an evaluate request arrives.
    That a worker has child processes says nothing of the kind: it starts a spare candidate
    process before its greeting and keeps one between evaluations, so a test losing a worker
    that merely has children may lose it while it starts (the engine's first start fails) or
    between evaluations. A killed worker's candidate processes are no longer its own."""
    for pid in descendants(worker):
        try:
            args = [a for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
        except OSError:
            continue
        if b"openkernel_worker.candidate" in args and (
                Path(args[-1].decode(errors="replace")) / "candidate" / name).is_file():
            return True
    return False


def check_evaluation_losing_its_worker(times: int, lose: Lose,
                                       evaluate: Callable[[], subprocess.CompletedProcess[str]],
                                       db: Path, host: str) -> None:
    """Runs `evaluate` (an `openkernel evaluate` of a correct candidate recording into `db`) while
    `lose` loses its worker `times` (1 or 2) times; `host` is how the engine names the host (or
    the start of it)."""
    lost: list = []
    stop = threading.Event()
    loser = threading.Thread(target=lose, args=(times, lost, stop))
    loser.start()
    try:
        p = evaluate()
    finally:
        stop.set()
        loser.join()
    assert len(lost) == times, lost
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT verdict, flags, reasons FROM evaluations").fetchall()
    assert len(rows) == 1
    if times == 1:  # retried once on a fresh worker: the verdict as usual
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["verdict"] == "correct" and rows[0][0] == "correct"
    else:  # lost twice: recorded as the evaluator's failure, never as the candidate's
        assert p.returncode == 3, p.stderr
        assert "lost the evaluation worker on " + host in p.stderr and "twice" in p.stderr
        assert rows[0][0] == "evaluator_error" and json.loads(rows[0][1]) == ["remote_lost"]
        assert "twice" in json.loads(rows[0][2])[0]
