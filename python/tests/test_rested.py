"""Rested timing's decisions in the worker (evaluate.Evaluation): when it applies, when a rested
block's gaps count as skipped, and which series a result reports. The GPU side (the gaps
themselves) is covered by tests/adversarial/test_adversarial_gpu.py."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from openkernel_worker import evaluate
from openkernel_worker.evaluate import Evaluation, Options, Outcome, TimedBlock, _durations


def fake(device: str = "cuda:0", rested: str = "auto") -> Any:
    opts = Options(reference="r.py", candidate="c.py", backend="triton", rested=rested)
    return SimpleNamespace(opts=opts, device=device, out=Outcome())


def test_rested_applies_from_100_us_of_the_reference_on_cuda_only() -> None:
    wanted = Evaluation._rested_wanted
    assert wanted(fake(), [150.0, 160.0])
    assert not wanted(fake(), [50.0, 60.0])  # a slow candidate cannot ask for it
    assert wanted(fake(rested="on"), [5.0])
    assert not wanted(fake(rested="off"), [5000.0])
    assert not wanted(fake(device="cpu", rested="on"), [5000.0])
    assert not wanted(fake(), [])


def test_rested_option_is_validated() -> None:
    assert Options.from_request({"reference": "r", "candidate": "c"}).rested == "auto"
    assert Options.from_request({"reference": "r", "candidate": "c", "rested": "off"}).rested \
        == "off"
    try:
        Options.from_request({"reference": "r", "candidate": "c", "rested": "sometimes"})
    except evaluate.BadInput as e:
        assert "rested must be one of auto, on, off" in str(e)
    else:
        raise AssertionError("a bad rested mode was accepted")


def test_skipped_gaps_are_a_changed_harness() -> None:
    ev = fake()
    # Four calls of 500 us with 500 us gaps asked: an honest block takes at least 4 ms.
    assert Evaluation._check_rests(ev, 4300.0, [500.0] * 4, [505.0] * 4, 500.0)
    assert not ev.out.flags
    assert not Evaluation._check_rests(ev, 4300.0, [500.0] * 4, [0.01] * 4, 500.0)
    assert ev.out.flags == ["timer_mismatch"] and ev.out.verdict == "rejected"
    ev = fake()  # one gap skipped is enough
    assert not Evaluation._check_rests(ev, 4300.0, [500.0] * 4, [505.0] * 3 + [10.0], 500.0)
    ev = fake()  # gaps reported, but the block was too short for them to have happened
    assert not Evaluation._check_rests(ev, 2100.0, [500.0] * 4, [505.0] * 4, 500.0)
    assert ev.out.flags == ["timer_mismatch"]


def test_rested_wall_check_expects_the_gaps_without_widening_the_allowance() -> None:
    ev = fake()
    ev.result, ev.ping_us = {}, 100.0
    # 8 calls of 1 ms with 1 ms gaps: 16 ms expected, the allowance grows with the 8 ms claimed.
    Evaluation._cross_check(ev, [TimedBlock(16_500.0, 8000.0, 8, 8000.0)], 30.0, "rested_wall_check")
    assert not ev.out.flags
    check = ev.result["rested_wall_check"]
    assert check["gaps_us"] == 8000.0
    assert check["allowance_us"] == 1300.0 + 8 * 145.0 + 0.25 * 8000.0  # not 0.25 * 16000
    # 5 ms of work hidden beyond the gaps: caught, as it would be back to back.
    Evaluation._cross_check(ev, [TimedBlock(21_000.0, 8000.0, 8, 8000.0)], 30.0, "rested_wall_check")
    assert ev.out.flags == ["timer_mismatch"]


def series(b2b: float, rest: float, n: int = 8) -> dict[str, list[float]]:
    return {"b2b": [b2b] * n, "rest": [rest] * n}


def test_rested_series_is_reported_when_consistent() -> None:
    ev, info = fake(), {"mode": "events"}
    # A throttled compute-bound kernel: 14% faster rested on both sides.
    got = Evaluation._rested_verdict(ev, info, series(1600.0, 1380.0), series(1600.0, 1380.0),
                                     1600.0, 4)
    assert got == "rest" and info["mode"] == "events_rested"
    assert info["rested"]["ok"] and abs(info["rested"]["ratio"] - 1380 / 1600) < 1e-9
    assert info["rested"]["back_to_back"]["runtime_us"]["median"] == 1600.0
    assert not ev.out.flags


def test_much_faster_rested_falls_back_to_back_to_back_with_a_flag() -> None:
    ev, info = fake(), {"mode": "events"}
    got = Evaluation._rested_verdict(ev, info, series(600.0, 600.0), series(600.0, 300.0),
                                     600.0, 4)
    assert got == "b2b" and info["mode"] == "events"
    assert not info["rested"]["ok"] and "below" in info["rested"]["reason"]
    assert ev.out.flags == ["rested_gap"] and ev.out.verdict == "correct"


def test_rested_gain_is_bounded_by_the_references() -> None:
    """A memory-bound reference gains nothing from the rest: a candidate that gains 15% does
    more than throttling explains (work hidden in the gaps), though it is above 0.8."""
    ev, info = fake(), {"mode": "events"}
    got = Evaluation._rested_verdict(ev, info, series(600.0, 600.0), series(600.0, 510.0),
                                     600.0, 4)
    assert got == "b2b" and ev.out.flags == ["rested_gap"]
    assert "below 0.90" in info["rested"]["reason"]


def test_zero_rested_median_is_a_lie() -> None:
    ev, info = fake(), {"mode": "events"}
    got = Evaluation._rested_verdict(ev, info, series(600.0, 600.0), series(600.0, 0.0),
                                     600.0, 4)
    assert got == "b2b" and ev.out.flags == ["timer_mismatch"] and ev.out.verdict == "rejected"


def test_no_rested_block_keeps_back_to_back() -> None:
    ev, info = fake(), {"mode": "events"}
    cand = {"b2b": [600.0] * 8, "rest": []}
    assert Evaluation._rested_verdict(ev, info, series(600.0, 600.0), cand, 600.0, 0) == "b2b"
    assert info["rested"]["reason"].startswith("no rested block")


def test_durations_must_be_exactly_n_non_negative_numbers() -> None:
    assert _durations([1.0, 2], 2)
    assert not _durations([1.0], 2)
    assert not _durations([1.0, -1.0], 2)
    assert not _durations([1.0, True], 2)
    assert not _durations("fast", 2)
    assert _durations(None, 0) and _durations([], 0)
    assert not _durations([1.0], 0)
