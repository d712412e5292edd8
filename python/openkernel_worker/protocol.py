"""JSON-lines framing shared by the worker (engine side) and the candidate channel.

Every message is one JSON object on one line. The worker keeps the protocol on a private file
descriptor and points fd 1 at stderr, so stray prints from references or kernels never corrupt it.
"""
from __future__ import annotations

import json
import math
import os
import sys
from typing import IO, Any

MAX_LINE_BYTES = 16 << 20  # a longer request line is refused (and skipped) unparsed


class RequestError(ValueError):
    """A request (or one of its fields) is malformed; the message names the field."""


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
        """The next message; None at the end of input. RequestError (the line consumed, the
        channel still usable) for a line over MAX_LINE_BYTES, not UTF-8, not JSON (or nested
        too deep to parse) or not a JSON object."""
        line = self._reader.readline(MAX_LINE_BYTES + 1)
        if not line:
            return None
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):  # skip the rest of the line, boundedly
                line = self._reader.readline(MAX_LINE_BYTES)
            raise RequestError(f"a protocol line longer than {MAX_LINE_BYTES} bytes was skipped")
        try:
            message = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise RequestError(f"not UTF-8 at byte {e.start}") from None
        except RecursionError:
            raise RequestError("JSON nested too deeply") from None
        except ValueError as e:
            raise RequestError(f"not JSON: {e}") from None
        if not isinstance(message, dict):
            raise RequestError("protocol message is not a JSON object")
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


# Typed request fields: each returns the field's value, or `default` when it is absent or null,
# and raises RequestError naming the field when its type or range is wrong.

def req_str(req: dict[str, Any], key: str, default: str | None = None, *,
            required: bool = False) -> str | None:
    value = req.get(key)
    if value is None:
        if required:
            raise RequestError(f"request lacks {key!r}")
        return default
    if not isinstance(value, str) or "\0" in value:
        raise RequestError(f"{key} must be a string without NUL characters, not "
                           f"{_show(value)}")
    return value


def req_int(req: dict[str, Any], key: str, default: int | None, lo: int, hi: int) -> int | None:
    value = req.get(key)
    if value is None:
        return default
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit() and len(value) < 40:
        value = int(value)  # numbers written as text are accepted
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise RequestError(f"{key} must be an integer from {lo} to {hi}, not {_show(value)}")
    return value


def req_float(req: dict[str, Any], key: str, default: float, lo: float, hi: float) -> float:
    value = req.get(key)
    if value is None:
        return default
    if isinstance(value, str) and len(value) < 40:
        try:
            value = float(value)  # numbers written as text are accepted
        except ValueError:
            pass
    if (not isinstance(value, (int, float)) or isinstance(value, bool)
            or not math.isfinite(value) or not lo <= value <= hi):
        raise RequestError(f"{key} must be a number from {lo:g} to {hi:g}, not {_show(value)}")
    return float(value)


def req_bool(req: dict[str, Any], key: str, default: bool = False) -> bool:
    value = req.get(key)
    if value is None:
        return default
    if value in (0, 1) and isinstance(value, (bool, int)):  # 0 and 1 as JSON clients write them
        return bool(value)
    raise RequestError(f"{key} must be true or false, not {_show(value)}")


def req_overrides(req: dict[str, Any]) -> dict[str, str]:
    """`overrides`: {name: value}, values as text (numbers are written as JSON wrote them)."""
    value = req.get("overrides")
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
            isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value.values()):
        raise RequestError(f"overrides must be an object of names to text or numbers, not "
                           f"{_show(value)}")
    return {str(k): str(v) for k, v in value.items()}


def _show(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return "an object" if isinstance(value, dict) else "an array"
    text = json.dumps(value) if isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
