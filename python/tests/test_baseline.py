"""The `baseline` op: the reference's own eager (and torch.compile) times with the evaluator's
timing method, as `openkernel baseline` stores them."""
from __future__ import annotations

from pathlib import Path

import pytest

from openkernel_worker.__main__ import handle
from openkernel_worker.baseline import baseline
from openkernel_worker.problem import BadInput

REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return []
"""

FAILING = REFERENCE.replace("return torch.relu(x) * 2", "raise ValueError('nope')")


def write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_baseline_times_the_reference_on_the_cpu(tmp_path: Path) -> None:
    import torch

    r = baseline({"reference": write(tmp_path, "ref.py", REFERENCE), "backend": "cpu",
                  "timing_budget_s": 0.3, "threads": 1, "seed": 0})
    assert r["device"] == "cpu" and r["method"] == "events"
    eager = r["eager_runtime_us"]
    assert eager["n"] >= 10 and 0 < eager["median"] < 1e6
    assert r["threads"] == 1
    assert r["problem"]["source_hash"] and "relu" in r["problem"]["source"]
    if callable(getattr(torch, "compile", None)):
        assert r["compile"]["ok"] is True or r["compile"]["reason"]
    else:  # this torch has no torch.compile: a null figure with the reason, not a failure
        assert r["compile_runtime_us"] is None
        assert "no torch.compile" in r["compile"]["reason"]


def test_baseline_can_skip_the_compile(tmp_path: Path) -> None:
    r = baseline({"reference": write(tmp_path, "ref.py", REFERENCE), "backend": "cpu",
                  "timing_budget_s": 0.2, "compile": False})
    assert r["compile"]["reason"] == "not requested" and r["compile_runtime_us"] is None


def test_a_failing_reference_is_bad_input_through_the_protocol(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="forward failed: ValueError: nope"):
        baseline({"reference": write(tmp_path, "bad.py", FAILING), "backend": "cpu"})
    reply = handle({"op": "baseline", "reference": str(tmp_path / "missing.py"), "backend": "cpu"})
    assert reply["ok"] is False and reply["error"]["kind"] == "bad_input"
