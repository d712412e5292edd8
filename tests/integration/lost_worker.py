"""What the remote tests' lost-worker cases share (test_remote_ssh.py, test_remote_slurm.py): one
evaluation run while a thread loses its worker once or twice (kills it, cancels its job), and the
outcome the engine owes either way (docs/remote.md). Lost once, the request is retried on a fresh
worker and the verdict is the usual one; lost twice, the loss is recorded as the evaluator's
failure (evaluator_error, flagged remote_lost, the reason saying twice), never as the candidate's,
and the engine exits 3 naming the host."""
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
