"""The worker's watchdog: the worker ends, with every process it started, as soon as whoever
started it is gone, even in the middle of an evaluation.

The engine's launches (local, over ssh, inside srun) set OPENKERNEL_WORKER_WATCHDOG=1; a worker
started by hand (requests piped in, then the end of input) serves every request as before. With
the watchdog on, the protocol is read on a thread of its own (Inbox) and the worker stops at once:
- when its input ends while it serves a request or before the next one is taken (an engine never
  closes the channel while it waits for a reply: the engine was killed, the ssh channel dropped,
  srun lost its step); input that ends while the worker waits for a request is the ordinary
  shutdown;
- when its parent process goes away (it is adopted by another), e.g. an engine killed while
  something else still holds the worker's stdin open, or the sshd session that started it;
- on SIGTERM or SIGHUP (the engine's cleanup of a lost remote worker, docs/remote.md).
Stopping kills every descendant (candidate and spare processes, their sandboxes, compilers,
profilers): each one's process group, then each one, found through /proc (Linux), and exits.
"""
from __future__ import annotations

import contextlib
import os
import queue
import signal
import sys
import threading
import time
from typing import Any

from .protocol import Channel, RequestError

ENV = "OPENKERNEL_WORKER_WATCHDOG"
PARENT_POLL_S = 0.5


def enabled() -> bool:
    return os.environ.get(ENV) == "1"


def descendants(root: int) -> list[int]:
    """The processes below `root`, from /proc (empty where there is none)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
            ppid = int(stat.rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def kill_descendants() -> int:
    """SIGKILLs every descendant's process group (not the worker's own) and then each
    descendant. Returns how many there were."""
    pids = descendants(os.getpid())
    own = os.getpgrp()
    groups = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            groups.add(os.getpgid(pid))
    for group in groups - {own}:
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return len(pids)


_stopping = threading.Lock()


def stop(why: str) -> None:
    """Kills the worker's descendants, removes the candidates' scratch folders and exits."""
    if not _stopping.acquire(blocking=False):
        return  # another thread is stopping the worker
    n = kill_descendants()
    time.sleep(0.05)
    n += kill_descendants()  # one the main thread was starting meanwhile
    with contextlib.suppress(Exception):
        sys.stderr.write(f"openkernel_worker: {why}; stopping (killed {n} processes)\n")
        sys.stderr.flush()
    candidates = sys.modules.get(__package__ + ".candidate_process")
    if candidates is not None:
        with contextlib.suppress(Exception):
            candidates._exit_cleanup()  # type: ignore[attr-defined]
    os._exit(0)


def install_signals() -> None:
    """SIGTERM and SIGHUP stop the worker (stop): from its first moments, so that a worker
    stopped while it starts (the boot process already running, boot.py) leaves nothing behind."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: stop(f"signal {signum}"))


class Inbox:
    """The requests, read from `channel` on a thread; watches the input, the parent and the
    stopping signals (the module's docstring). Single consumer: the main loop."""

    def __init__(self, channel: Channel) -> None:
        self._queue: queue.Queue[Any] = queue.Queue()
        self._lock = threading.Lock()
        self._busy = False
        self._ended = False
        self._parent = os.getppid()
        install_signals()
        threading.Thread(target=self._read, args=(channel,), daemon=True).start()
        threading.Thread(target=self._watch_parent, daemon=True).start()

    def _read(self, channel: Channel) -> None:
        while True:
            try:
                message: Any = channel.receive()
            except RequestError as e:
                message = e
            except Exception:  # noqa: BLE001 - an unreadable input is an ended one
                message = None
            if message is None:
                with self._lock:
                    self._ended = True
                    busy = self._busy
                if busy:
                    stop("its input ended while it served a request")
                self._queue.put(None)
                return
            self._queue.put(message)

    def _watch_parent(self) -> None:
        while True:
            time.sleep(PARENT_POLL_S)
            if os.getppid() != self._parent:
                stop(f"its parent process {self._parent} went away")

    def receive(self) -> dict[str, Any] | None:
        """The next request (None: the input ended); raises RequestError for a malformed line.
        Marks the worker busy until the next call."""
        with self._lock:
            self._busy = False
        item = self._queue.get()
        if item is None:
            return None
        with self._lock:
            if self._ended:
                stop("its input ended before it served a request")
            self._busy = True
        if isinstance(item, RequestError):
            raise item
        return item
