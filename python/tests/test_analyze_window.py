"""analyze on pooling, scans and the index views around them (docs/graph-ir.md, "Pooling, scans
and index views"): KernelBench level 1's problems 41-46, 51, 52, 89-93 at the reduced sizes of
tests/fixtures/generate/window_problems.tsv give the IR of their fixtures; the module and
functional forms and their defaults."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from openkernel_worker.analyze import analyze

from test_analyze import Write, node, ops, reference, run

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "generate"
KERNELBENCH = Path(os.environ.get("OPENKERNEL_KERNELBENCH_DIR") or ROOT.parent / "shared/kernelbench")


def window_problems() -> list[tuple[str, str, str, str]]:
    rows = []
    for line in (FIXTURES / "window_problems.tsv").read_text().splitlines():
        if line and not line.startswith("#"):
            rows.append(tuple(line.split("\t")))
    return rows


@pytest.mark.parametrize("name,fixture,ref,sets", window_problems())
def test_kernelbench_window_problems_give_their_fixtures(name: str, fixture: str, ref: str,
                                                         sets: str) -> None:
    path = KERNELBENCH / ref.removeprefix("kb:")
    if not path.is_file():
        pytest.skip(f"no KernelBench at {KERNELBENCH}")
    overrides = dict(s.split("=") for s in sets.split())
    got = json.loads(json.dumps(analyze(str(path), overrides)))
    assert got == json.loads((FIXTURES / fixture).read_text())
    assert got["traceable"], got["reason"]
    assert "unknown" not in ops(got) and "module" not in ops(got)


def test_pooling_modules_and_functionals_spell_every_parameter(write: Write) -> None:
    r = run(write, reference("return self.p(x) + F.max_pool2d(x, 3, 1, 1)",
                             init="self.p = nn.MaxPool2d(3, stride=1, padding=1)",
                             inputs="[torch.randn(2, 3, 8, 8)]"))
    assert ops(r) == ["max_pool", "max_pool", "add"]
    for n in r["nodes"][:2]:
        assert n["kwargs"] == {"kernel_size": [3, 3], "stride": [1, 1], "padding": [1, 1],
                               "ceil_mode": False, "dilation": [1, 1]}
    r = run(write, reference("return self.p(x)", init="self.p = nn.AvgPool1d(4)",
                             inputs="[torch.randn(2, 3, 9)]"))
    assert node(r, "avg_pool")["kwargs"] == {
        "kernel_size": [4], "stride": [4], "padding": [0], "ceil_mode": False,
        "count_include_pad": True, "divisor_override": None}
    assert node(r, "avg_pool")["shape"] == [2, 3, 2]
    r = run(write, reference("return F.avg_pool3d(x, (1, 2, 2), divisor_override=3, "
                             "count_include_pad=False, ceil_mode=True)",
                             inputs="[torch.randn(2, 3, 5, 5)]"))
    assert node(r, "avg_pool")["kwargs"] == {
        "kernel_size": [1, 2, 2], "stride": [1, 2, 2], "padding": [0, 0, 0], "ceil_mode": True,
        "count_include_pad": False, "divisor_override": 3}


def test_adaptive_pooling_gives_one_output_extent_per_pooled_dim(write: Write) -> None:
    r = run(write, reference("return self.p(x) + F.adaptive_avg_pool2d(x, 1) + "
                             "F.adaptive_max_pool2d(x, (None, 1)).mean(-2, keepdim=True)",
                             init="self.p = nn.AdaptiveAvgPool2d((1, 1))",
                             inputs="[torch.randn(2, 3, 8, 6)]"))
    assert [(n["op"], n["kwargs"], n["shape"]) for n in r["nodes"] if "pool" in n["op"]] == [
        ("adaptive_avg_pool", {"output_size": [1, 1]}, [2, 3, 1, 1]),
        ("adaptive_avg_pool", {"output_size": [1, 1]}, [2, 3, 1, 1]),
        ("adaptive_max_pool", {"output_size": [8, 1]}, [2, 3, 8, 1])]
    r = run(write, reference("return self.p(x)", init="self.p = nn.AdaptiveAvgPool3d((1, 2, 3))",
                             inputs="[torch.randn(2, 4, 4, 6)]"))
    assert node(r, "adaptive_avg_pool")["kwargs"] == {"output_size": [1, 2, 3]}
    r = run(write, reference("return self.p(x)[0]",
                             init="self.p = nn.AdaptiveMaxPool1d(2, return_indices=True)",
                             inputs="[torch.randn(2, 3, 8)]"))
    assert "adaptive_max_pool" not in ops(r)


def test_adaptive_pooling_of_uneven_windows_stays_a_pytorch_call(write: Write) -> None:
    # 13 to 5 or 7 gives windows of uneven sizes (PyTorch's floor/ceil bounds), which no lowering
    # computes: the module stays a module node, the functional an unknown node with the reason;
    # output extents of 1 and divisors pool as before.
    r = run(write, reference("return self.p(x) + F.adaptive_max_pool2d(x, (5, 7)).sum() + "
                             "F.adaptive_avg_pool2d(x, (1, 13)).sum()",
                             init="self.p = nn.AdaptiveAvgPool2d((5, 7))",
                             inputs="[torch.randn(2, 3, 13, 13)]"))
    assert ops(r)[:2] == ["module", "unknown"]
    assert "uneven" in r["nodes"][1]["kwargs"]["reason"]
    assert node(r, "adaptive_avg_pool")["kwargs"] == {"output_size": [1, 13]}


def test_pooling_with_indices_is_unknown_with_a_reason(write: Write) -> None:
    r = run(write, reference("return self.p(x)[0]",
                             init="self.p = nn.MaxPool1d(2, return_indices=True)",
                             inputs="[torch.randn(2, 3, 8)]"))
    assert "max_pool" not in ops(r)
    r = run(write, reference("return F.max_pool1d(x, 2, return_indices=True)[0]",
                             inputs="[torch.randn(2, 3, 8)]"))
    assert "max_pool" not in ops(r)


def test_scans_and_index_views(write: Write) -> None:
    r = run(write, reference("return torch.cumsum(x, -1) + x.cumprod(dim=0) + x.flip(0, 1)"))
    scans = [n for n in r["nodes"] if n["op"] == "scan"]
    assert [n["kwargs"] for n in scans] == [{"combine": "sum", "dim": 1},
                                           {"combine": "prod", "dim": 0}]
    assert node(r, "flip")["kwargs"] == {"dims": [0, 1]}
    r = run(write, reference("return torch.cat([x.narrow(1, -3, 2), torch.zeros_like(x)], dim=-1)"))
    assert ops(r) == ["narrow", "zeros_like", "cat"]
    assert node(r, "narrow")["kwargs"] == {"dim": 1, "start": 5, "length": 2}
    assert node(r, "cat")["kwargs"] == {"dim": 1} and node(r, "cat")["shape"] == [4, 10]
    r = run(write, reference("return torch.cumsum(x, 1, dtype=torch.float64)"))
    assert ops(r) == ["unknown"] and "dtype" in r["nodes"][0]["kwargs"]["reason"]
