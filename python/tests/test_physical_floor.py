"""The rejecting physical floor (roofline.floor_bandwidth, verdicts.below_floor): a bound on what
the device can do, never an estimate a good kernel beats. The case that set the rule: on an H200
torch's copy measured 2858 GB/s while an honest shared-memory row softmax moved its 64 MiB in
20.3 us (3.3 TB/s) and was rejected by a floor built on the copy."""
from __future__ import annotations

import pytest

from openkernel_worker import roofline, verdicts
from openkernel_worker.options import Outcome

H200_COPY = 2.858e12
SOFTMAX_BYTES, SOFTMAX_FLOPS, SOFTMAX_US = 64 << 20, 8 << 20, 20.3


def test_a_known_part_is_bounded_by_its_peak_not_by_the_copy() -> None:
    assert roofline.floor_bandwidth(H200_COPY, "NVIDIA H200") == (4.8e12, "peak")
    # GH200 and H200 NVL are H200s; an L40S or an L40 is not an L4.
    assert roofline.floor_bandwidth(1e12, "NVIDIA GH200 480GB")[0] == 4.8e12
    assert roofline.floor_bandwidth(1e11, "NVIDIA L40S")[0] == 8.64e11
    assert roofline.floor_bandwidth(1e11, "NVIDIA L40")[0] == 8.64e11
    assert roofline.floor_bandwidth(1e11, "NVIDIA L4")[0] == 3.0e11


@pytest.mark.parametrize("name, peak", [
    ("NVIDIA H100 80GB HBM3", 3.35e12), ("NVIDIA H100 PCIe", 2.0e12), ("NVIDIA H100 NVL", 3.9e12),
    ("NVIDIA A100-SXM4-80GB", 2.04e12), ("NVIDIA A100 80GB PCIe", 2.04e12),
    ("NVIDIA A100-SXM4-40GB", 1.555e12), ("NVIDIA A100-PCIE-40GB", 1.555e12),
    ("NVIDIA RTX 6000 Ada Generation", 9.6e11), ("Quadro RTX 6000", 6.72e11)])
def test_each_variant_gets_its_own_peak_not_its_familys_fastest(name: str, peak: float) -> None:
    # A faster variant's peak would loosen a slower one's floor: a cheat skipping part of its
    # traffic would pass.
    assert roofline.floor_bandwidth(1e9, name) == (peak, "peak")


def test_a_copy_above_the_table_wins_and_unknown_parts_get_a_margin() -> None:
    assert roofline.floor_bandwidth(5e12, "NVIDIA H200") == (5e12, "copy")
    assert roofline.floor_bandwidth(1e11, None) == (1.6e11, "copy x 1.6")
    assert roofline.floor_bandwidth(1e12, "Some Future GPU") == (1.6e12, "copy x 1.6")


def ceil(name: str | None, copy: float = H200_COPY) -> dict:
    bw, source = roofline.floor_bandwidth(copy, name)
    return {"bandwidth": copy, "floor_bandwidth": bw, "floor_bandwidth_source": source,
            "peak_flops": 1.98e15}


def judge(cand_us: float, c: dict) -> Outcome:
    out = Outcome()
    verdicts.below_floor(out, cand_us, roofline.floor_us(SOFTMAX_FLOPS, SOFTMAX_BYTES, c,
                                                         "floor_bandwidth"),
                         SOFTMAX_BYTES, SOFTMAX_FLOPS, c["floor_bandwidth"],
                         c["floor_bandwidth_source"], c["bandwidth"])
    return out


def test_the_honest_softmax_that_beat_the_copy_passes() -> None:
    # Its copy-based floor was 23.5 us: below 90% of it is where the old rule rejected.
    assert roofline.floor_us(SOFTMAX_FLOPS, SOFTMAX_BYTES, ceil("NVIDIA H200")) == pytest.approx(
        23.48, abs=0.01)
    assert "below_physical_floor" not in judge(SOFTMAX_US, ceil("NVIDIA H200")).flags


@pytest.mark.parametrize("name", ["NVIDIA H200", None])
def test_a_timing_no_memory_allows_is_still_rejected(name: str | None) -> None:
    out = judge(5.0, ceil(name))  # 64 MiB in 5 us: 13 TB/s
    assert "below_physical_floor" in out.flags and out.verdict == "rejected"
    text = out.reasons[-1]
    if name:
        assert "at the device's peak 4800 GB/s; copy measured 2858 GB/s" in text
    else:
        assert "at the measured copy x 1.6 4573 GB/s" in text


def test_the_roofline_position_still_uses_the_copy() -> None:
    c = ceil("NVIDIA H200")
    sol = roofline.floor_us(SOFTMAX_FLOPS, SOFTMAX_BYTES, c) / SOFTMAX_US
    assert sol == pytest.approx(1.157, abs=0.01)  # above 1: the kernel beat torch's copy
