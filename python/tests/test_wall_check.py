"""The worker's outside wall-clock check of a candidate's timed blocks (Evaluation._cross_check):
work hidden from the timer in most calls rejects; a host-side stall in a few blocks does not."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from openkernel_worker.evaluate import Evaluation, Options, Outcome, TimedBlock


def fake(device: str = "cuda:0") -> Any:
    opts = Options(reference="r.py", candidate="c.py", backend="triton")
    return SimpleNamespace(opts=opts, device=device, out=Outcome(), result={}, ping_us=50.0)


# One call of 2.4 ms per block (a pool of one, as for inputs of gigabytes): the allowance per
# block is 1150 + 1 * (1.5 * 40 + 100) + 600 = 1910 us.
def block(excess_us: float) -> TimedBlock:
    return TimedBlock(2400.0 + excess_us, 2400.0, 1)


def test_a_few_stalled_blocks_do_not_reject() -> None:
    ev = fake()
    walls = [block(1000.0)] * 8 + [block(6000.0)] * 2  # two blocks met a 5 ms host stall
    Evaluation._cross_check(ev, walls, 40.0)
    assert not ev.out.flags, ev.out.reasons
    check = ev.result["wall_check"]
    assert check["blocks"] == 10 and check["median_block_over_us"] < 0


def test_work_hidden_in_most_calls_rejects() -> None:
    ev = fake()
    walls = [block(1000.0)] * 3 + [block(3000.0)] * 7  # 2 ms escaping in 7 calls of 10
    Evaluation._cross_check(ev, walls, 40.0)
    assert ev.out.flags == ["timer_mismatch"] and ev.out.verdict == "rejected"
    assert "median block" in ev.out.reasons[0]


def test_gross_escape_in_a_minority_still_rejects() -> None:
    ev = fake()
    walls = [block(1000.0)] * 7 + [block(40_000.0)] * 3  # 40 ms outside the timer, 3 times
    Evaluation._cross_check(ev, walls, 40.0)
    assert ev.out.flags == ["timer_mismatch"]


def test_timings_longer_than_the_wall_time_reject() -> None:
    ev = fake()
    Evaluation._cross_check(ev, [TimedBlock(1000.0, 5000.0, 1)] * 4, 40.0)
    assert ev.out.flags == ["timer_mismatch"] and "exceed the wall time" in ev.out.reasons[0]
