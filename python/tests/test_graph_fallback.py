"""CUDA-graph timing that cannot capture the candidate (capture.py, Evaluation._graph_blocks): the
reasons given, the graph_fallback flag (never rejecting, not even under --strict), and replayed
outputs that differ keeping the eager numbers. The parts that need a device run in
tests/adversarial/test_adversarial_gpu.py; these use fakes for the device side."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from openkernel_worker import capture, timing, timing_series
from openkernel_worker.evaluate import Evaluation, Options

MAPS = """\
7f00-7f01 r--p 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libc.so.6
7f02-7f03 r-xp 00001000 08:01 456 /venv/site-packages/nvidia/cu13/lib/libcudart.so.13
7f03-7f04 r--p 00002000 08:01 456 /venv/site-packages/nvidia/cu13/lib/libcudart.so.13
7f05-7f06 rw-p 00000000 00:00 0
7f07-7f08 r-xp 00000000 08:01 789 /opt/libcudart_static_helper.txt
"""


def test_loaded_libraries_reads_the_memory_map_once_per_file() -> None:
    assert capture.loaded_libraries(MAPS, "libcudart") == [
        "/venv/site-packages/nvidia/cu13/lib/libcudart.so.13"]
    assert capture.loaded_libraries("", "libcudart") == []


def test_cudart_candidates_put_the_loaded_runtime_first(tmp_path: Path) -> None:
    wheel = tmp_path / "nvidia" / "cuda_runtime" / "lib"
    wheel.mkdir(parents=True)
    (wheel / "libcudart.so.12").write_text("")
    bundled = tmp_path / "torch" / "lib"
    bundled.mkdir(parents=True)
    (bundled / "libcudart-1234.so.12").write_text("")
    found = capture.cudart_candidates(MAPS, [str(tmp_path), str(tmp_path / "missing")])
    assert found[0] == "/venv/site-packages/nvidia/cu13/lib/libcudart.so.13"
    assert str(bundled / "libcudart-1234.so.12") in found
    assert str(wheel / "libcudart.so.12") in found
    assert len(found) == len(set(found))


def test_a_forward_that_invalidates_the_capture_is_reported_as_escaped_work() -> None:
    final = RuntimeError("CUDA error: operation failed due to a previous error during capture")
    reason, escaped = capture.failure_reason(0, None, final, 16)
    assert escaped
    assert "outside the stream it was called on" in reason and "no stream argument" in reason
    assert "events timing used" in reason and "forward 1 of 16" in reason
    assert "previous error during capture" in reason


def test_a_checked_legacy_launch_error_is_reported_as_escaped_work() -> None:
    raised = RuntimeError("CUDA error: operation would make the legacy stream depend on a "
                          "capturing blocking stream")
    reason, escaped = capture.failure_reason(None, raised, RuntimeError("later"), 4)
    assert escaped and "legacy default stream" in reason and "legacy stream depend" in reason


def test_a_host_sync_is_reported_as_itself() -> None:
    raised = RuntimeError("CUDA error: operation not permitted when stream is capturing")
    reason, escaped = capture.failure_reason(None, raised, RuntimeError("invalidated"), 4)
    assert not escaped
    assert reason == "RuntimeError: CUDA error: operation not permitted when stream is capturing"


class FakeApi:
    """Capture status of the fake stream: invalidated once a forward "launched on the legacy
    stream"."""

    def __init__(self) -> None:
        self.invalidated = False

    def capture_status(self, handle: int) -> int:
        assert handle == 77
        return capture.CAPTURE_INVALIDATED if self.invalidated else capture.CAPTURE_ACTIVE


class FakeCapture:
    """torch.cuda.graph as far as capture_forwards uses it: the end of an invalidated capture
    raises, like cudaStreamEndCapture."""

    def __init__(self, api: FakeApi) -> None:
        self.api = api

    def __call__(self, graph: Any, stream: Any = None) -> "FakeCapture":
        assert stream is not None and stream.cuda_stream == 77
        return self

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        if self.api.invalidated:
            raise RuntimeError("CUDA error: operation failed due to a previous error during "
                               "capture")


def fake_cuda(monkeypatch: pytest.MonkeyPatch, api: FakeApi) -> list[Any]:
    healed: list[Any] = []
    monkeypatch.setattr(torch.cuda, "graph", FakeCapture(api))
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: "torch-stream")
    monkeypatch.setattr(capture, "heal", lambda *args: healed.append(args) or "")
    return healed


def test_capture_forwards_names_the_forward_that_escaped(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi()
    healed = fake_cuda(monkeypatch, api)
    stream = type("Stream", (), {"cuda_stream": 77})()
    calls: list[int] = []

    def forward(x: int) -> int:
        calls.append(x)
        if x == 2:
            api.invalidated = True  # kernel<<<grid, block>>> with no stream, unchecked
        return x

    with pytest.raises(capture.CaptureFailed) as err:
        capture.capture_forwards("graph", forward, [[1], [2], [3]], stream, api, "cuda:0")
    assert err.value.escaped and "forward 2 of 3" in str(err.value)
    assert calls == [1, 2]  # an invalidated capture ends at once
    assert healed == [("graph", api, "cuda:0", "torch-stream")]  # the stream made current again


def test_capture_forwards_returns_the_outputs_of_a_clean_capture(
        monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi()
    healed = fake_cuda(monkeypatch, api)
    stream = type("Stream", (), {"cuda_stream": 77})()
    assert capture.capture_forwards("graph", lambda x: x * 2, [[1], [2]], stream, api,
                                    "cuda:0") == [2, 4]
    assert healed == []


def test_capture_forwards_reports_what_a_forward_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi()
    healed = fake_cuda(monkeypatch, api)
    stream = type("Stream", (), {"cuda_stream": 77})()

    def forward(x: int) -> int:
        api.invalidated = True
        raise RuntimeError("CUDA error: operation not permitted when stream is capturing")

    with pytest.raises(capture.CaptureFailed) as err:
        capture.capture_forwards("graph", forward, [[1]], stream, api, "cuda:0")
    assert not err.value.escaped and "not permitted when stream is capturing" in str(err.value)
    assert len(healed) == 1


# -- the worker's side: Evaluation._graph_blocks with a scripted candidate ------------------------

EAGER = {"median": 20.0, "mean": 20.0, "stderr": 0.1, "min": 19.0, "n": 30}


class FakeRefGraph:
    capture_stream = "blocking"
    note = ""
    outputs: list[Any] = []

    def replay(self, flush: Any) -> tuple[float, float]:
        return 16.0, 40.0  # 4 forwards of 4 us


def evaluation(tiny_reference: str, write: Any, monkeypatch: pytest.MonkeyPatch,
               replies: dict[str, Any], strict: bool = False,
               outputs_match: bool = True) -> tuple[Evaluation, list[str]]:
    """An Evaluation after correct trials and eager timing, whose candidate answers `replies`
    (op -> reply) and whose replayed outputs match or not."""
    cand = write("cand.py", "x = 1\n")
    ev = Evaluation(Options(reference=tiny_reference, candidate=cand, backend="cpu",
                            strict=strict, seed=3))
    ev.device = "cuda:0"
    ev.out.correct = ev.out.compiled = True
    ev.result = {"runtime_us": dict(EAGER), "ref_runtime_us": dict(EAGER), "speedup": 1.0,
                 "timing": {"mode": "events"}}
    asked: list[str] = []

    def ask_soft(message: dict[str, Any], what: str) -> tuple[dict[str, Any] | None, str]:
        asked.append(message["op"])
        return replies.get(message["op"], {"ok": True}), ""

    def check(descs: Any, ref_outputs: Any, block: int, what: str = "") -> bool:
        if not outputs_match:
            ev.out.flag("timed_output_mismatch", "replayed outputs differ", reject=True)
        return outputs_match

    monkeypatch.setattr(ev, "_ask_soft", ask_soft)
    monkeypatch.setattr(ev, "_check_timed_outputs", check)
    monkeypatch.setattr(ev, "_cross_check", lambda walls, flush_us, result_key="": None)
    monkeypatch.setattr(timing_series, "refresh_inputs", lambda entry, module, seed, device: None)
    monkeypatch.setattr(timing, "flush_buffer", lambda device: None)
    monkeypatch.setattr(timing, "flush_cost_us", lambda device, flush: 0.0)
    return ev, asked


ESCAPED = {"ok": False, "error_type": "CaptureFailed",
           "message": capture.ESCAPED_REASON + " (forward 1 of 4 invalidated the capture)"}


@pytest.mark.parametrize("strict", [False, True])
def test_an_uncapturable_candidate_is_flagged_graph_fallback_and_stays_correct(
        tiny_reference: str, write: Any, monkeypatch: pytest.MonkeyPatch, strict: bool) -> None:
    ev, asked = evaluation(tiny_reference, write, monkeypatch, {"graph_prepare": ESCAPED},
                           strict=strict)
    Evaluation._graph_blocks(ev, FakeRefGraph(), [[0]] * 4, 4)
    r = ev._finish(1.0)
    assert asked == ["graph_prepare"]
    assert r["verdict"] == "correct" and r["valid"] and r["flags"] == ["graph_fallback"]
    assert "outside the stream it was called on" in r["reasons"][0]
    assert "events timing stands" in r["reasons"][0]
    t = r["timing"]
    assert t["mode"] == "events" and t["cuda_graph"]["ok"] is False
    assert "CaptureFailed" in t["cuda_graph"]["reason"]
    assert r["runtime_us"] == EAGER and r["speedup"] == 1.0


def test_strict_still_rejects_any_other_flag_next_to_graph_fallback(
        tiny_reference: str, write: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ev, _ = evaluation(tiny_reference, write, monkeypatch, {"graph_prepare": ESCAPED},
                       strict=True)
    Evaluation._graph_blocks(ev, FakeRefGraph(), [[0]] * 4, 4)
    ev.out.flag("excessive_speedup", "too fast", reject=False)
    r = ev._finish(1.0)
    assert r["verdict"] == "rejected" and "strict mode rejects any flag" in r["reasons"]


def test_replays_that_differ_reject_and_keep_the_eager_numbers(
        tiny_reference: str, write: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A graph that missed work replays fast and wrong: rejected, and its numbers are not
    reported (so neither the speedup nor the physical floor judges them)."""
    ev, asked = evaluation(tiny_reference, write, monkeypatch,
                           {"graph_prepare": {"ok": True, "forwards": 4},
                            "graph_time": {"ok": True, "graph_us": 0.4},
                            "timed_outputs": {"ok": True, "outputs": []}},
                           outputs_match=False)
    Evaluation._graph_blocks(ev, FakeRefGraph(), [[0]] * 4, 4)
    r = ev._finish(1.0)
    assert r["verdict"] == "rejected" and r["flags"] == ["timed_output_mismatch"]
    assert r["runtime_us"] == EAGER and r["timing"]["mode"] == "events"
    assert r["timing"]["cuda_graph"]["ok"] is False and "eager numbers stand" in \
        r["timing"]["cuda_graph"]["reason"]
    assert asked[-1] == "graph_release"


def test_matching_replays_report_the_graph_numbers(
        tiny_reference: str, write: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ev, _ = evaluation(tiny_reference, write, monkeypatch,
                       {"graph_prepare": {"ok": True, "forwards": 4,
                                          "capture_stream": "blocking", "note": ""},
                        "graph_time": {"ok": True, "graph_us": 12.0},
                        "timed_outputs": {"ok": True, "outputs": []}})
    ev.opts.max_timing_samples = 1  # two replays: the first, and the final one
    Evaluation._graph_blocks(ev, FakeRefGraph(), [[0]] * 4, 4)
    r = ev._finish(1.0)
    assert r["verdict"] == "correct" and "graph_fallback" not in r["flags"]
    t = r["timing"]
    assert t["mode"] == "cuda_graph" and t["events"]["runtime_us"] == EAGER
    assert t["cuda_graph"]["capture_stream"] == {"reference": "blocking",
                                                 "candidate": "blocking"}
    assert r["runtime_us"]["median"] == 3.0 and r["ref_runtime_us"]["median"] == 4.0


def test_a_missing_capture_stream_is_noted(tiny_reference: str, write: Any,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    note = "no libcudart or libcuda could be loaded (...)"
    ev, _ = evaluation(tiny_reference, write, monkeypatch,
                       {"graph_prepare": {"ok": True, "forwards": 4, "capture_stream": "torch",
                                          "note": note},
                        "graph_time": {"ok": True, "graph_us": 12.0},
                        "timed_outputs": {"ok": True, "outputs": []}})
    ev.opts.max_timing_samples = 1
    Evaluation._graph_blocks(ev, FakeRefGraph(), [[0]] * 4, 4)
    t = ev.result["timing"]
    assert "CUDA-graph capture: " + note in t["notes"]
    assert t["cuda_graph"]["capture_stream"]["candidate"] == "torch"



def test_the_runtime_library_binds_and_reports_errors_as_values() -> None:
    """Where a libcudart is installed (this CPU machine may have one without a device), the
    calls bind by name; without a device, creating a stream fails with CUDA's error code."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("cudart")
    if not name:
        pytest.skip("no libcudart on this machine's loader path")
    api = capture.StreamApi(ctypes.CDLL(name), name, driver=False)
    api.clear_last_error()
    if torch.cuda.is_available():
        assert api.create_blocking_stream() != 0
    else:
        with pytest.raises(OSError, match="cudaStreamCreate returned error"):
            api.create_blocking_stream()
