"""GPU variants of the adversarial suite (label gpu). Skips, saying so, without a CUDA device."""
from __future__ import annotations

from typing import Any

import pytest

from conftest import HERE, evaluate_all

try:
    import torch

    HAVE_GPU = torch.cuda.is_available()
except ImportError:
    HAVE_GPU = False

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU on this machine: GPU "
                                 "adversarial cases skipped")]

FOLDER = HERE / "gpu"
CASES: dict[str, tuple[str, set[str], set[str]]] = {
    "honest": ("cand_honest.py", {"correct"}, set()),
    "side_stream": ("cand_side_stream.py", {"rejected", "incorrect"}, set()),
    "persisting_l2": ("cand_persisting_l2.py", {"rejected"}, {"persisting_l2"}),
    "torch_fallback": ("cand_torch_fallback.py", {"rejected"}, {"no_custom_kernel"}),
    "event_patch": ("cand_event_patch.py", {"rejected"}, set()),
    "uninitialised": ("cand_uninitialised.py", {"incorrect"}, set()),
    # The 1 GiB ReLU takes ~600 us, so rested timing (an idle gap before each call) applies.
    "rest_side_stream": ("cand_rest_side_stream.py", {"rejected", "incorrect"}, set()),
    "rest_skip": ("cand_rest_skip.py", {"rejected"}, {"timer_mismatch"}),
    "rest_zero": ("cand_rest_zero.py", {"rejected"}, {"timer_mismatch"}),
    # Hides ~15% in the gaps: flagged, and the back-to-back figures (honest there) are reported.
    "rest_overlap": ("cand_rest_overlap.py", {"correct", "rejected"}, {"rested_gap"}),
}


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, Any]]:
    cases = {n: {"candidate": c, "reference": "ref_relu.py"} for n, (c, _, _) in CASES.items()}
    return evaluate_all(cases, FOLDER, {"backend": "triton", "trials": 3, "timing_budget_s": 1.0,
                                        "timeout_s": 120},
                        workers=1)  # one at a time: candidates sharing the GPU skew each other


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(results: dict[str, dict[str, Any]], name: str) -> None:
    _, verdicts, flags = CASES[name]
    r = results[name]
    assert r["verdict"] in verdicts, (name, r["verdict"], r["reasons"])
    assert flags <= set(r["flags"]), (name, r["flags"], r["reasons"])
    if "rested_gap" in flags:  # the figures reported are the back-to-back ones
        assert r["timing"]["mode"] == "events" and not r["timing"]["rested"]["ok"], r["timing"]


def test_honest_long_kernel_is_timed_rested(results: dict[str, dict[str, Any]]) -> None:
    """~600 us per call: the reported figures come from rested blocks, with back-to-back blocks
    interleaved for the checks, and both series agree for a memory-bound kernel."""
    r = results["honest"]
    t = r["timing"]
    assert t["mode"] == "events_rested", t
    rest = t["rested"]
    assert rest["ok"] and rest["blocks"] >= 1 and rest["idle_us"] > 100, rest
    assert r["runtime_us"]["n"] >= 10 and rest["back_to_back"]["runtime_us"]["n"] >= 10, rest
    assert 0.9 < rest["ratio"] < 1.1 and 0.9 < rest["ref_ratio"] < 1.1, rest
    assert r["rested_wall_check"]["runs"] >= 1 and r["wall_check"]["runs"] >= 1


# CUDA-graph timing (cuda_graph "auto" picks it for microsecond kernels): a tiny ReLU.
# name: (candidate, cuda_graph, verdicts, flags, timing mode)
GRAPH_CASES: dict[str, tuple[str, str, set[str], set[str], str]] = {
    "graph_honest": ("cand_honest.py", "auto", {"correct"}, set(), "cuda_graph"),
    "graph_partial": ("cand_graph_partial.py", "on", {"rejected"}, {"timed_output_mismatch"},
                      "cuda_graph"),
    "graph_stale": ("cand_graph_stale.py", "on", {"rejected"}, {"timed_output_mismatch"},
                    "cuda_graph"),
    "graph_uncapturable": ("cand_graph_uncapturable.py", "on", {"correct"}, set(), "events"),
}


@pytest.fixture(scope="module")
def graph_results() -> dict[str, dict[str, Any]]:
    cases = {n: {"candidate": c, "reference": "ref_relu_small.py", "cuda_graph": g}
             for n, (c, g, _, _, _) in GRAPH_CASES.items()}
    return evaluate_all(cases, FOLDER, {"backend": "triton", "trials": 3, "timing_budget_s": 1.0,
                                        "timeout_s": 120}, workers=1)


@pytest.mark.parametrize("name", sorted(GRAPH_CASES))
def test_graph_case(graph_results: dict[str, dict[str, Any]], name: str) -> None:
    _, _, verdicts, flags, mode = GRAPH_CASES[name]
    r = graph_results[name]
    assert r["verdict"] in verdicts, (name, r["verdict"], r["reasons"])
    assert flags <= set(r["flags"]), (name, r["flags"], r["reasons"])
    if r["verdict"] == "correct":
        t = r["timing"]
        assert t["mode"] == mode, (name, t)
        if mode == "cuda_graph":
            assert t["cuda_graph"]["ok"] and t["cuda_graph"]["checked_replays"] >= 1, t
            assert t["events"]["runtime_us"]["median"] > 0 and r["runtime_us"]["n"] >= 1, t
            assert r["speedup"] and r["speedup"] > 0
        else:
            assert t["cuda_graph"]["ok"] is False and t["cuda_graph"]["reason"], t
