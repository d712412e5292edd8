"""CUDA-graph capture on a blocking stream, so work launched outside the capture fails the capture.

torch captures on a stream from its pool, created non-blocking. A kernel launched with no stream
argument (`kernel<<<grid, block>>>(...)`, KernelBench's own few-shot style) goes to the legacy
default stream, which does not synchronise with non-blocking streams: it runs once, eagerly,
outside the graph, and every replay then returns stale outputs. On a *blocking* stream (created
with default flags) the same launch would make the legacy stream wait on a capturing stream,
which CUDA forbids: the capture is invalidated and ends with an error, which GraphTimer turns
into a fallback to events timing with a reason that says what happened.

torch cannot create a blocking stream, so one is made through the CUDA runtime that torch itself
loaded (libcudart, found in this process's memory map first, then next to torch, in the nvidia
wheels, or on the loader's path), else through the driver (libcuda), and wrapped with
torch.cuda.ExternalStream. Without either, capture keeps torch's stream and a note says so.

A failed capture leaves torch's CUDA generator in capture mode (a later torch.randn on the device
raises "Offset increment outside graph capture encountered unexpectedly"), and inputs are drawn
on the device with it: heal() resets the failed graph and runs one tiny successful capture, whose
end takes the generator out of capture mode.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import glob
import os
import sys
from typing import Any, Callable

CAPTURE_NONE, CAPTURE_ACTIVE, CAPTURE_INVALIDATED = 0, 1, 2  # cudaStreamCaptureStatus (= CU's)

ESCAPED_REASON = ("its forward launched work outside the stream it was called on (for instance "
                  "kernel<<<grid, block>>>(...) with no stream argument, which runs on the legacy "
                  "default stream), which CUDA-graph timing cannot capture; events timing used. "
                  "Launch on torch.cuda.current_stream() to be timed by graph replay")


class CaptureFailed(RuntimeError):
    """A forward could not be captured; `escaped` when work left the capture stream."""

    def __init__(self, message: str, escaped: bool) -> None:
        super().__init__(message)
        self.escaped = escaped


class StreamApi:
    """The few CUDA calls capture needs, from the runtime (cuda*) or the driver (cu*) library;
    both take a stream handle and write the same capture-status enum."""

    def __init__(self, lib: Any, path: str, driver: bool) -> None:
        self.lib, self.path, self.driver = lib, path, driver
        prefix = "cu" if driver else "cuda"
        self._create = getattr(lib, prefix + "StreamCreate")
        self._is_capturing = getattr(lib, prefix + "StreamIsCapturing")
        self._create.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint] if driver else \
            [ctypes.POINTER(ctypes.c_void_p)]
        self._is_capturing.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        self._last_error = None if driver else getattr(lib, "cudaGetLastError", None)

    def create_blocking_stream(self) -> int:
        """A new stream with default flags (blocking: it synchronises with the legacy stream) on
        the current device; raises OSError with the CUDA error code on failure."""
        handle = ctypes.c_void_p()
        err = self._create(ctypes.byref(handle), 0) if self.driver else \
            self._create(ctypes.byref(handle))
        if err != 0 or not handle.value:
            raise OSError(f"{'cuStreamCreate' if self.driver else 'cudaStreamCreate'} "
                          f"returned error {err}")
        return int(handle.value)

    def capture_status(self, handle: int) -> int | None:
        status = ctypes.c_int(-1)
        if self._is_capturing(ctypes.c_void_p(handle), ctypes.byref(status)) != 0:
            return None
        return status.value

    def clear_last_error(self) -> None:
        """Clears the runtime's sticky-until-read launch error of this thread (runtime only)."""
        if self._last_error is not None:
            self._last_error()


def loaded_libraries(maps_text: str, stem: str) -> list[str]:
    """Paths of mapped shared libraries whose name starts with `stem` (e.g. "libcudart", which
    also matches the wheels' "libcudart-<hash>.so.12"), in the order /proc/PID/maps lists them,
    each once."""
    found: list[str] = []
    for line in maps_text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6:
            path = parts[5].strip()
            name = os.path.basename(path)
            if name.startswith(stem) and ".so" in name and path not in found:
                found.append(path)
    return found


def cudart_candidates(maps_text: str | None = None,
                      search_path: list[str] | None = None) -> list[str]:
    """Where libcudart may be, best first: the one this process already mapped (torch's own),
    torch's lib folder, the nvidia wheels in site-packages, then the loader's search path."""
    if maps_text is None:
        try:
            with open("/proc/self/maps") as f:
                maps_text = f.read()
        except OSError:
            maps_text = ""
    found = loaded_libraries(maps_text, "libcudart")
    for base in search_path if search_path is not None else sys.path:
        if not base or not os.path.isdir(base):
            continue
        for pattern in ("torch/lib/libcudart*.so*", "nvidia/cuda_runtime/lib/libcudart*.so*",
                        "nvidia/*/lib/libcudart*.so*"):
            found.extend(p for p in sorted(glob.glob(os.path.join(base, pattern)))
                         if p not in found)
    name = ctypes.util.find_library("cudart")
    if name and name not in found:
        found.append(name)
    return found


_API: list[StreamApi | None] = []  # loaded once per process
_API_NOTE: list[str] = []


def stream_api() -> tuple[StreamApi | None, str]:
    """The runtime's (or else the driver's) stream calls, and a note when neither loads."""
    if _API:
        return _API[0], _API_NOTE[0]
    api, tried = None, []
    for path in cudart_candidates():
        try:
            api = StreamApi(ctypes.CDLL(path), path, driver=False)
            break
        except (OSError, AttributeError) as e:
            tried.append(f"{path}: {e}")
    if api is None:
        try:
            api = StreamApi(ctypes.CDLL("libcuda.so.1"), "libcuda.so.1", driver=True)
        except (OSError, AttributeError) as e:
            tried.append(f"libcuda.so.1: {e}")
    note = "" if api is not None else (
        "no libcudart or libcuda could be loaded (" + "; ".join(tried)[:300] + "): graphs are "
        "captured on torch's non-blocking stream, where a launch on the legacy default stream "
        "escapes the capture (its stale replays then fail the output check)")
    _API.append(api)
    _API_NOTE.append(note)
    return api, note


_STREAMS: dict[int, Any] = {}  # device index -> torch.cuda.ExternalStream, one per process


def blocking_stream(device: Any) -> tuple[Any, StreamApi | None, str]:
    """(a blocking torch.cuda.ExternalStream on `device`, its API, "") or (None, None, why not)."""
    import torch

    dev = torch.device(device)
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    api, note = stream_api()
    if api is None:
        return None, None, note
    if index not in _STREAMS:
        try:
            with torch.cuda.device(index):
                torch.cuda.current_stream().synchronize()  # the context exists and is current
                handle = api.create_blocking_stream()
        except OSError as e:
            return None, None, f"a blocking capture stream could not be created ({e}); graphs " \
                               "are captured on torch's non-blocking stream"
        _STREAMS[index] = torch.cuda.ExternalStream(handle, device=torch.device("cuda", index))
    return _STREAMS[index], api, ""


def failure_reason(invalidated_after: int | None, raised: BaseException | None,
                   final: BaseException, forwards: int) -> tuple[str, bool]:
    """Why a capture failed, and whether work escaped the capture stream. `invalidated_after`: the
    index of the first forward that returned normally yet left the capture invalidated (it
    launched on, or synchronised with, the legacy stream); `raised`: what a forward raised;
    `final`: what the capture raised in the end."""
    cause = raised if raised is not None else final
    detail = f"{type(cause).__name__}: {str(cause).strip()[:400]}"
    if invalidated_after is not None:
        return (f"{ESCAPED_REASON} (forward {invalidated_after + 1} of {forwards} invalidated "
                f"the capture; {detail})"), True
    text = str(cause).lower()
    if "legacy stream" in text or "capture_implicit" in text or "captureimplicit" in text:
        return f"{ESCAPED_REASON} ({detail})", True
    return detail, False


def capture_forwards(graph: Any, fn: Callable[..., Any], pool: list[list[Any]], stream: Any,
                     api: StreamApi | None, device: Any) -> list[Any]:
    """Captures fn once per pool entry into `graph` on `stream` (None: torch's own) and returns
    the captured outputs. On any failure: heals the process (heal()) and raises CaptureFailed."""
    import torch

    invalidated_after: int | None = None
    raised: BaseException | None = None
    previous = torch.cuda.current_stream(torch.device(device))
    handle = int(stream.cuda_stream) if stream is not None else 0
    try:
        with torch.no_grad(), torch.cuda.graph(graph, stream=stream):
            outputs = []
            for i, inputs in enumerate(pool):
                try:
                    outputs.append(fn(*inputs))
                except BaseException as e:
                    raised = e
                    raise
                if api is not None and handle and \
                        api.capture_status(handle) == CAPTURE_INVALIDATED:
                    invalidated_after = i  # the rest cannot be captured either: end it here
                    break
    except Exception as e:  # noqa: BLE001 - every capture failure is reported the same way
        reason, escaped = failure_reason(invalidated_after, raised, e, len(pool))
        note = heal(graph, api, device, previous)
        raise CaptureFailed(reason + (f" ({note})" if note else ""), escaped) from None
    return outputs


def heal(graph: Any, api: StreamApi | None, device: Any, previous: Any) -> str:
    """After a failed capture: drops the graph, clears the runtime's pending launch error, makes
    `previous` the current stream again (torch.cuda.graph leaves the capture stream current when
    its capture_end raises), and runs one tiny capture whose successful end takes torch's CUDA
    generator out of capture mode (inputs are drawn with it afterwards). Returns "" or what could
    not be restored."""
    import torch

    with contextlib.suppress(Exception):
        graph.reset()
    if api is not None:
        with contextlib.suppress(Exception):
            api.clear_last_error()
    with contextlib.suppress(Exception):
        torch.cuda.set_stream(previous)
    try:
        dev = torch.device(device)
        torch.cuda.synchronize(dev)
        with torch.cuda.device(dev):
            scratch = torch.zeros(1, device=dev)
            probe = torch.cuda.CUDAGraph()
            with torch.cuda.graph(probe):
                scratch.add_(1)
            torch.cuda.synchronize(dev)
            probe.reset()
    except Exception as e:  # noqa: BLE001 - reported, the eager timing still stands
        return f"restoring the CUDA generator after the failed capture failed: " \
               f"{type(e).__name__}: {str(e)[:200]}"
    return ""
