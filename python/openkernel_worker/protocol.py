"""JSON-lines framing shared by the worker (engine side) and the candidate channel.

Every message is one JSON object on one line. The worker keeps the protocol on a private file
descriptor and points fd 1 at stderr, so stray prints from references or kernels never corrupt it.
"""
from __future__ import annotations

import json
import os
import sys
from typing import IO, Any


class Channel:
    """A line-oriented JSON channel over two binary file objects."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self._reader = reader
        self._writer = writer

    def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, separators=(",", ":"), allow_nan=False, default=_default)
        self._writer.write(data.encode() + b"\n")
        self._writer.flush()

    def receive(self) -> dict[str, Any] | None:
        line = self._reader.readline()
        if not line:
            return None
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError("protocol message is not a JSON object")
        return message


def _default(value: Any) -> Any:
    if isinstance(value, float):
        return None
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def clean_floats(value: Any) -> Any:
    """Replaces NaN and infinities (not valid JSON) with None, recursively."""
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return {k: clean_floats(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_floats(v) for v in value]
    return value


def private_stdio_channel() -> Channel:
    """Moves the protocol off fds 0/1 and sends fd 1 to stderr. Returns the channel."""
    in_fd = os.dup(0)
    out_fd = os.dup(1)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    return Channel(os.fdopen(in_fd, "rb"), os.fdopen(out_fd, "wb"))
