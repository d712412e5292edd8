"""Seeded fuzz loops over the worker's inputs: protocol lines, request fields, reference sources.

Each loop is deterministic for a seed and bounded by a count, so the default suite runs a short one
(python/tests/test_fuzz.py) and tests/integration/test_slow_inputs.py a long one. Every loop checks
the same rule: a malformed input is reported as bad input, never as an internal error, a hang or a
dead worker.
"""
from __future__ import annotations

import io
import json
import os
import random
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

PYTHON_DIR = Path(__file__).resolve().parents[1]
ODD_VALUES: list[Any] = [None, True, False, 0, -1, 1, 2**70, -2**70, 1e308, -1e-308, 0.5, "",
                         "x", "nan", "inf", "-1", "1e9", "\0", "\udcff", "\u2028", "😀" * 50,
                         "x" * 5000, [], [1, "a"], {}, {"a": {"b": [None]}}, {"n": [1]},
                         {"rows": "3"}, {"": ""}, "/", "/nonexistent/ref.py", "cuda:99",
                         "cuda:x", "cpu", "cuda", "triton", "on", "off", "auto"]
OPS = ["evaluate", "inspect", "analyze", "baseline", "device_info", "ping", "", None, 7,
       "shutdown!", ["evaluate"]]
FIELDS = ["reference", "candidate", "backend", "device", "trials", "seed", "timeout_s",
          "overrides", "timing_budget_s", "threads", "strict", "cache_dir", "no_sandbox",
          "cuda_graph", "rested", "compile_baseline", "spare", "compile", "min_timing_samples",
          "max_timing_samples", "target_rse", "id"]


def random_request(rng: random.Random, reference: str) -> dict[str, Any]:
    """An op with a random subset of fields set to odd values; the reference is `reference`
    unless the reference field itself was drawn (so every evaluate stops at bad input)."""
    req: dict[str, Any] = {"op": rng.choice(OPS), "reference": reference,
                           "candidate": reference + ".missing"}
    for key in rng.sample(FIELDS, rng.randint(1, 6)):
        req[key] = rng.choice(ODD_VALUES)
    return req


def random_line(rng: random.Random) -> bytes:
    """One protocol line that is not a well-formed request."""
    kind = rng.randrange(8)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 300))).replace(b"\n", b" ")
    if kind == 1:
        text = json.dumps(random_request(rng, "/nonexistent/ref.py"))
        return text[:rng.randint(0, max(0, len(text) - 1))].encode()
    if kind == 2:
        depth = rng.choice([10, 1000, 100_000])
        return b"[" * depth + b"]" * rng.choice([0, depth])
    if kind == 3:
        return json.dumps(rng.choice(ODD_VALUES[:24])).encode()
    if kind == 4:
        return b'{"op": "ping", "id": ' + str(rng.random()).encode() + b", " + b"\xff\xfe" + b"}"
    if kind == 5:
        return b'{"op": "ping", "id": 1, "x": "' + b"a" * rng.randint(1, 200_000) + b'"'
    if kind == 6:
        return b'{"op": "ping"' * rng.randint(1, 50)
    return b"\x00" * rng.randint(1, 100)


def mutate_source(rng: random.Random, source: bytes) -> bytes:
    """A reference source with one to three random edits: flipped, deleted, inserted or repeated
    bytes, a truncation, or a Python token spliced in."""
    tokens = [b"(", b")", b":", b"\n", b"    ", b"return ", b"None", b"[]", b"0", b"-1", b"**",
              b"torch.", b"def ", b"class ", b"import ", b"lambda: 1", b"'", b'"""', b"\\",
              b"raise ", b"yield ", b"*", b"\xff", b"\x00", b"1e400", b"9" * 30]
    data = bytearray(source)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(max(1, len(data)))
        op = rng.randrange(6)
        if op == 0 and data:
            data[at] = rng.randrange(256)
        elif op == 1:
            del data[at:at + rng.randint(1, 20)]
        elif op == 2:
            data[at:at] = rng.choice(tokens)
        elif op == 3:
            del data[at:]
        elif op == 4:
            data[at:at] = data[at:at + rng.randint(1, 40)]
        else:
            data[at:at] = bytes(rng.randrange(32, 127) for _ in range(rng.randint(1, 8)))
    return bytes(data)


def channel_lines(lines: list[bytes]) -> io.BufferedReader:
    return io.BufferedReader(io.BytesIO(b"".join(line + b"\n" for line in lines)))


class WorkerProcess:
    """`python -m openkernel_worker` over pipes, as the engine runs it."""

    def __init__(self, python: str = sys.executable) -> None:
        env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR), PYTHONDONTWRITEBYTECODE="1")
        self.proc = subprocess.Popen([python, "-u", "-m", "openkernel_worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self._buffer = b""
        hello = self.read(120)
        assert hello is not None and hello.get("type") == "hello", hello

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def read(self, timeout_s: float) -> dict[str, Any] | None:
        """The next reply line as JSON, or None when none came within `timeout_s`."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def replies_until(self, wanted_id: int, timeout_s: float) -> Iterator[dict[str, Any]]:
        """Every reply up to and including the one with `wanted_id`; AssertionError on a hang."""
        while True:
            reply = self.read(timeout_s)
            assert reply is not None, f"no reply within {timeout_s} s (worker alive: " \
                                      f"{self.proc.poll() is None})"
            yield reply
            if reply.get("id") == wanted_id:
                return

    def close(self) -> int:
        try:
            self.send(b'{"op": "shutdown"}')
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def fuzz_worker(worker: WorkerProcess, rng: random.Random, count: int, reference: str) -> dict:
    """Sends `count` malformed lines and odd requests, each followed by a ping; checks that every
    reply is bad input (or ok), never internal, and that the ping is answered. Returns counts."""
    seen: dict[str, int] = {}
    for i in range(count):
        if rng.random() < 0.5:
            worker.send(random_line(rng))
        else:
            req = random_request(rng, reference)
            if req.get("op") == "shutdown":
                continue
            worker.send(json.dumps(req).encode())
        ping_id = 1_000_000 + i
        worker.send(json.dumps({"op": "ping", "id": ping_id}).encode())
        for reply in worker.replies_until(ping_id, 120):
            kind = "ok" if reply.get("ok") else reply.get("error", {}).get("kind")
            assert kind in ("ok", "bad_input", "environment"), reply
            seen[kind] = seen.get(kind, 0) + 1
    return seen
