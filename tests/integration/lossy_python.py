"""A stand-in for the evaluation host's Python that loses the first workers it starts at a known
moment: with an evaluation in flight. test_remote_ssh.py's optimize case needs one evaluation lost
twice (once, then again on the fresh worker it is retried on); a thread killing workers from outside
can only guess when an evaluation is in flight (a worker keeps spare candidate processes between
evaluations, and a retried evaluation may end before the guess), so there the loss is made here.

Usage: python lossy_python.py COUNT_FILE LOSSES REAL_PYTHON ARGS...
Runs REAL_PYTHON ARGS. A worker started on the host (`-m openkernel_worker`, OPENKERNEL_REMOTE_CACHE
set by the engine's launch command) is run as a child whose protocol lines pass through; the first
LOSSES such workers (counted in COUNT_FILE) are killed with SIGKILL half a second after an
"evaluate" request has been passed to them (nothing they send after it is passed back), and the
stand-in exits, so the engine's channel closes with the request in flight, as when a host loses
its worker. Anything else is exec'd unchanged.
"""
from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO


def launch_number(count_file: Path) -> int:
    """This worker's number, 1 for the first, counted under a lock."""
    with open(count_file, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        n = int(f.read().strip() or 0) + 1
        f.seek(0)
        f.truncate()
        f.write(str(n))
        return n


def relay(source: IO[bytes], sink: IO[bytes], lost: threading.Event) -> None:
    for line in iter(source.readline, b""):
        if lost.is_set():  # nothing of the lost evaluation reaches the engine, its reply included
            return
        sink.write(line)
        sink.flush()


def is_evaluate(line: bytes) -> bool:
    try:
        message = json.loads(line)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("op") == "evaluate"


def main() -> int:
    count_file, losses, real, args = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    worker = "-m" in args and "openkernel_worker" in args and "OPENKERNEL_REMOTE_CACHE" in os.environ
    if not worker or launch_number(count_file) > losses:
        os.execv(real, [real, *args])
    child = subprocess.Popen([real, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    lost = threading.Event()
    out = threading.Thread(target=relay, args=(child.stdout, sys.stdout.buffer, lost), daemon=True)
    out.start()
    for line in iter(sys.stdin.buffer.readline, b""):
        if is_evaluate(line):
            lost.set()
        child.stdin.write(line)
        child.stdin.flush()
        if lost.is_set():
            time.sleep(0.5)  # the worker is at work on it
            child.send_signal(signal.SIGKILL)
            child.wait()
            os._exit(137)
    child.stdin.close()
    code = child.wait()
    out.join()
    return code


if __name__ == "__main__":
    sys.exit(main())
