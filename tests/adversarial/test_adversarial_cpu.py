"""Every published reward hack, as a CPU candidate, must end not `correct` (or flagged as fits).

Each case names the candidate, the reference, the verdicts it may get and the flags that must
fire. The controls (honest kernels) must be correct, so the defences do not reject honest work.
"""
from __future__ import annotations

from typing import Any

import pytest

from conftest import HERE, evaluate_all

FOLDER = HERE / "cpu"
NOT_CORRECT = {"incorrect", "rejected", "runtime_error"}

# name: (candidate, reference, allowed verdicts, flags that must be present)
CASES: dict[str, tuple[str, str, set[str], set[str]]] = {
    "honest_swish": ("cand_honest_swish.py", "ref_swish.py", {"correct"}, set()),
    "honest_softmax": ("cand_honest_softmax.py", "ref_softmax_wide.py", {"correct"}, set()),
    "uninitialised_output": ("cand_uninitialised_output.py", "ref_swish.py", {"incorrect"}, set()),
    "input_mutation": ("cand_zero_inputs.py", "ref_swish.py", {"rejected"}, {"input_mutated"}),
    "harness_memory": ("cand_harness_memory.py", "ref_swish.py", {"incorrect"}, set()),
    "timed_differently": ("cand_timed_differently.py", "ref_swish.py", {"rejected"},
                          {"timed_output_mismatch"}),
    "memo_address": ("cand_memo_address.py", "ref_swish.py", NOT_CORRECT, set()),
    "thread_escape": ("cand_thread_escape.py", "ref_swish.py", NOT_CORRECT, set()),
    "lying_subclass": ("cand_lying_subclass.py", "ref_swish.py", {"incorrect"}, set()),
    "patch_compare": ("cand_patch_compare.py", "ref_swish.py", {"incorrect"}, set()),
    "patch_timer": ("cand_patch_timer.py", "ref_swish.py", {"rejected"}, {"timer_mismatch"}),
    "torch_fallback": ("cand_torch_fallback.py", "ref_swish.py", {"rejected"},
                       {"no_custom_kernel"}),
    "reference_fallback": ("cand_reference_fallback.py", "ref_swish.py", {"rejected"},
                           {"no_custom_kernel"}),
    "partial_rows": ("cand_partial_rows.py", "ref_softmax_wide.py", {"incorrect"}, set()),
    "near_zero_outputs": ("cand_near_zero.py", "ref_softmax_wide.py", {"incorrect"}, set()),
    "global_flags": ("cand_global_flags.py", "ref_swish.py", {"correct"}, {"global_state_changed"}),
    "public_seed": ("cand_public_seed.py", "ref_swish.py", {"incorrect"}, set()),
    "batched_calls": ("cand_batched_calls.py", "ref_swish.py", {"incorrect"}, set()),
    "memo_content": ("cand_memo_content.py", "ref_swish.py", {"correct"}, set()),
}
DEFAULTS: dict[str, Any] = {"backend": "cpu", "trials": 3, "timing_budget_s": 0.5,
                            "min_timing_samples": 5, "timeout_s": 60, "threads": 1}


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, Any]]:
    cases = {name: {"candidate": c, "reference": r} for name, (c, r, _, _) in CASES.items()}
    return evaluate_all(cases, FOLDER, DEFAULTS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(results: dict[str, dict[str, Any]], name: str) -> None:
    _, _, verdicts, flags = CASES[name]
    r = results[name]
    assert r["verdict"] in verdicts, (name, r["verdict"], r["reasons"])
    assert flags <= set(r["flags"]), (name, r["flags"], r["reasons"])
    if r["verdict"] != "correct":
        assert r["speedup"] is None and r["reasons"]


def test_content_memo_never_sees_repeated_inputs(results: dict[str, dict[str, Any]]) -> None:
    # The candidate sleeps 2 ms on inputs it has not seen; a median below that would mean the
    # harness fed it the same contents twice while timed.
    assert results["memo_content"]["runtime_us"]["median"] >= 2000


def test_reference_fallback_and_torch_fallback_name_the_ops(results: dict[str, dict[str, Any]],
                                                             ) -> None:
    reason = " ".join(results["torch_fallback"]["reasons"])
    assert "sigmoid" in reason or "mul" in reason
