"""timing.py: statistics over samples, the pinned clock and CPU block timing."""
from __future__ import annotations

import math
import time

import pytest
import torch

from openkernel_worker import timing


def test_stats_of_nothing_is_empty() -> None:
    assert timing.stats([]) == {"median": None, "mean": None, "stderr": None, "min": None, "n": 0}


def test_stats_of_one_sample_has_zero_stderr() -> None:
    assert timing.stats([5.0]) == {"median": 5.0, "mean": 5.0, "stderr": 0.0, "min": 5.0, "n": 1}


def test_stats_of_several_samples() -> None:
    s = timing.stats([4.0, 1.0, 3.0, 2.0])
    assert s["n"] == 4
    assert s["median"] == 2.5
    assert s["mean"] == 2.5
    assert s["min"] == 1.0
    # sample standard deviation sqrt(5/3), divided by sqrt(4)
    assert s["stderr"] == pytest.approx(math.sqrt(5 / 3) / 2)


def test_stats_median_of_odd_count_and_outlier() -> None:
    s = timing.stats([1.0, 1.0, 1000.0])
    assert s["median"] == 1.0
    assert s["mean"] == pytest.approx(334.0)


def test_relative_stderr() -> None:
    assert timing.relative_stderr([]) == math.inf
    assert timing.relative_stderr([3.0]) == math.inf
    assert timing.relative_stderr([2.0, 2.0, 2.0]) == 0.0
    assert timing.relative_stderr([0.0, 0.0]) == 0.0
    samples = [1.0, 2.0, 3.0]
    assert timing.relative_stderr(samples) == pytest.approx((1.0 / math.sqrt(3)) / 2.0)


def test_clock_is_captured_before_patching(monkeypatch) -> None:
    monkeypatch.setattr(time, "perf_counter_ns", lambda: 0)
    a = timing.now_ns()
    time.sleep(0.001)
    assert timing.now_ns() > a > 0


def test_cpu_llc_size_is_positive() -> None:
    assert timing.cpu_llc_bytes() > 0


def test_flush_buffer_is_twice_the_cache() -> None:
    buf = timing.flush_buffer("cpu")
    assert buf.dtype == torch.float32
    assert buf.numel() * 4 == 2 * timing.cpu_llc_bytes()


def test_time_block_on_cpu_times_each_call_and_keeps_outputs() -> None:
    calls = []

    def fn(x):
        calls.append(x)
        return x * 2

    pool = [[torch.ones(2)], [torch.full((2,), 3.0)]]
    times, wall_us, outputs = timing.time_block(fn, pool, 5, "cpu", None, keep_outputs=True)
    assert len(times) == 5 and all(t >= 0 for t in times)
    assert wall_us >= sum(times)
    assert len(calls) == 5
    assert calls[0] is pool[0][0] and calls[1] is pool[1][0] and calls[2] is pool[0][0]
    assert torch.equal(outputs[0], torch.full((2,), 2.0))  # last output of pool entry 0 (call 5)
    assert torch.equal(outputs[1], torch.full((2,), 6.0))


def test_time_block_measures_sleep() -> None:
    times, _, outputs = timing.time_block(lambda: time.sleep(0.01), [[]], 2, "cpu", None,
                                         keep_outputs=False)
    assert outputs == []
    assert all(t >= 9000 for t in times)


def test_flush_cost_is_zero_without_flush() -> None:
    assert timing.flush_cost_us("cpu", None) == 0.0
    assert timing.flush_cost_us("cpu", torch.empty(1024)) > 0.0


def test_rest_gap_is_the_call_itself_capped() -> None:
    assert timing.rest_gap_us(None) == 0.0
    assert timing.rest_gap_us(0.0) == 0.0
    assert timing.rest_gap_us(250.0) == 250.0
    assert timing.rest_gap_us(1e6) == timing.REST_MAX_US


def test_time_block_ignores_the_rested_gap_on_cpu() -> None:
    rests: list[float] = []
    times, _, _ = timing.time_block(lambda: None, [[]], 3, "cpu", None, keep_outputs=False,
                                    idle_us=1000.0, rest_out=rests)
    assert len(times) == 3 and rests == []
