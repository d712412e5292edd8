"""The builtin generator's CUDA convolutions, run without a GPU: each candidate's kernels compiled
by g++ against the CPU model of CUDA's execution (cuda_emulate.py: blocks in turn, a block's
threads as threads, __syncthreads a barrier) and its ModelNew compared with the reference's
PyTorch output. That checks the implicit GEMM's gather (groups, stride, padding, dilation,
transposed taps and the phase order whose tiles skip unreachable ones, 1d-3d), its tile edges,
the thread tiles' vector runs and the double buffering, the direct kernel, and the fused
epilogue (an eval BatchNorm's per-channel values computed in it too). Candidates come from
generate_candidates over the graph IR analyze gives in this process.

    /usr/bin/python3 -m pytest -q tests/integration/test_builtin_cuda_conv.py

The default run checks the forms' first points and a few tile shapes; `-m slow` adds every
reduced KernelBench level-1 convolution problem."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from builtin_support import KERNELBENCH, problems, write_reference
from cuda_emulate import load_candidate
from locations import BINARY, ROOT

torch = pytest.importorskip("torch")
sys.path.insert(0, str(ROOT / "python"))
from openkernel_worker.analyze import analyze  # noqa: E402
from openkernel_worker.problem import load_reference  # noqa: E402

GENERATE = BINARY.parent / "generate_candidates"
TABLE = ROOT / "tests/fixtures/generate/conv_problems.tsv"
pytestmark = pytest.mark.skipif(not GENERATE.is_file(),
                                reason=f"no generate_candidates at {GENERATE}")

# Each a reference of its own: a stride, padding, dilation, groups, 1d-3d, transposed and a
# level-2 tail, at shapes where M, N and K are no multiple of any tile; 16 and 8 input channels a
# group (strided_3d_tail, transposed_2d_*) take the GEMM's per-slice tap test where BK divides
# them, 3 and 17 input channels (and BK 32) the per-element one; transposed_2d_* have strided
# phases of 168 and 108 pixels, so tiles of one phase skip the taps it cannot reach.
FUNCTIONAL = {
    "grouped_dilated_same_bias": (
        "return F.conv2d(x, self.w, self.b, padding='same', dilation=2, groups=2)",
        "torch.randn(36, 3, 3, 5)", "torch.randn(36)", "torch.randn(2, 6, 13, 11)"),
    "strided_3d_tail": (
        "y = F.conv3d(x, self.w, None, stride=(1, 2, 2), padding=(1, 0, 2), dilation=(2, 1, 1))\n"
        "        return torch.sigmoid(y + self.b.view(1, -1, 1, 1, 1)) * y",
        "torch.randn(20, 16, 3, 2, 3)", "torch.randn(20)", "torch.randn(3, 16, 6, 9, 8)"),
    "transposed_1d_tail": (
        "return torch.relu(F.conv_transpose1d(x, self.w, self.b, stride=3, padding=2, "
        "output_padding=1, dilation=2)) * 2.0",
        "torch.randn(17, 33, 3)", "torch.randn(33)", "torch.randn(2, 17, 29)"),
    "transposed_2d_strided": (
        "return F.conv_transpose2d(x, self.w, self.b, stride=3, padding=1, dilation=2)",
        "torch.randn(16, 9, 3, 3)", "torch.randn(9)", "torch.randn(1, 16, 12, 14)"),
    "transposed_2d_grouped": (
        "return F.conv_transpose2d(x, self.w, self.b, stride=(2, 1), padding=(1, 2), groups=3, "
        "dilation=(1, 2))",
        "torch.randn(24, 7, 3, 4)", "torch.randn(21)", "torch.randn(2, 24, 9, 10)"),
}
# Reduced KernelBench problems: strided and padded 2d with a bias; 3d; strided, padded, grouped
# 3d transposed; everything 2d transposed (grouped; and with stride 5, where the GEMM skips the
# taps a phase cannot reach); depthwise; depthwise-separable.
CHOSEN = ["conv50_stride4_bias", "conv60_3d_asym", "conv72_t3d_grouped", "conv75_t2d_all",
          "conv81_t2d_all", "conv85_depthwise_asym", "conv86_separable"]


def candidates(tmp_path: Path, ref: Path, overrides: dict[str, str]) -> tuple[list[Path], list]:
    """Every cuda candidate of the reference (analyze in this process, then generate_candidates),
    with the proposal's parameter points."""
    ir = tmp_path / "ir.json"
    ir.write_text(json.dumps(analyze(str(ref), overrides)))
    out = tmp_path / "cuda"
    p = subprocess.run([str(GENERATE), str(ir), str(ref), "cuda", str(out), "0"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    proposal = json.loads((out / "proposal.json").read_text())
    found = proposal["candidates"]
    return [out / c["file"] for c in found], [c["params"] for c in found]


def chosen(params: list, extra_tiles: int) -> list[int]:
    """The first point of each form, then `extra_tiles` more implicit-GEMM points spread over the
    rest of the prior order, each with a block and thread tile not yet chosen."""
    picks, tiles = [], set()
    for form in ("gemm", "direct"):
        k = next((i for i, p in enumerate(params) if p["cuda-conv"]["form"] == form), None)
        if k is not None:
            picks.append(k)
    gemm = [i for i, p in enumerate(params) if p["cuda-conv"]["form"] == "gemm"]

    def tile(i: int) -> tuple:
        return tuple(params[i]["cuda-conv"][k] for k in ("BM", "BN", "BK", "TM", "TN"))

    tiles.update(tile(i) for i in picks if i in gemm)
    for step in range(1, extra_tiles + 1):
        for i in gemm[len(gemm) * step // (extra_tiles + 1):]:
            if tile(i) not in tiles:
                tiles.add(tile(i))
                picks.append(i)
                break
    return picks


def run_candidates(ref: Path, overrides: dict[str, str], files: list[Path], params: list,
                   picks: list[int], prepare=None, atol: float = 1e-4) -> None:
    """Runs the picked candidates on the CPU model against the reference's PyTorch output (its
    Model built with seed 0, then `prepare(model)` when given, its weights loaded into each)."""
    reference = load_reference(str(ref), overrides, module_name=f"ref_{ref.stem}")
    torch.manual_seed(0)
    model = reference.module.Model(*reference.module.get_init_inputs()).eval()  # as evaluated
    if prepare:
        prepare(model)
    inputs = reference.module.get_inputs()
    with torch.no_grad():
        want = model(*inputs)
    for k in picks:
        cand = load_candidate(files[k], f"cand_{ref.stem}_{k}", reference.overrides)
        new = cand.ModelNew(*cand.get_init_inputs()).eval()
        new.load_state_dict(model.state_dict())
        with torch.no_grad():
            got = new(*inputs)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=atol,
                                   msg=lambda m: f"{ref.stem} {params[k]}: {m}")


def check(tmp_path: Path, ref: Path, overrides: dict[str, str], extra_tiles: int) -> set[str]:
    """Runs the chosen candidates against the reference; returns the kernel forms they had."""
    files, params = candidates(tmp_path, ref, overrides)
    picks = chosen(params, extra_tiles)
    run_candidates(ref, overrides, files, params, picks)
    return {params[k]["cuda-conv"]["form"] for k in picks}


@pytest.mark.parametrize("name", sorted(FUNCTIONAL))
def test_cuda_conv_kernels_match_torch_on_the_cpu_model(tmp_path: Path, name: str) -> None:
    forms = check(tmp_path, write_reference(tmp_path / f"{name}.py", *FUNCTIONAL[name]), {},
                  extra_tiles=3)
    assert forms == {"gemm", "direct"}


def test_eval_batch_norm_in_the_epilogue_matches_torch(tmp_path: Path) -> None:
    # An eval-mode BatchNorm after a grouped, strided convolution, its statistics, weight and bias
    # random: its per-channel rsqrt(running_var + eps) is computed inline in the epilogue of both
    # forms (plan.hpp's KernelGroup::broadcast), indexed by each output's channel.
    ref = tmp_path / "conv_bn.py"
    ref.write_text("""import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(6, 10, 3, stride=2, padding=1, groups=2)
        self.bn = nn.BatchNorm2d(10)
        self.bn.running_mean.normal_()
        self.bn.running_var.uniform_(0.5, 2.0)
        self.bn.weight.data.normal_()
        self.bn.bias.data.normal_()

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x))) * 2.0


def get_inputs():
    return [torch.randn(2, 6, 11, 9)]


def get_init_inputs():
    return []
""")
    assert check(tmp_path, ref, {}, extra_tiles=0) == {"gemm", "direct"}
    assert json.loads((tmp_path / "cuda" / "proposal.json").read_text())["pattern"] == \
        "conv:epilogue"


def kernelbench(name: str) -> tuple[Path, dict[str, str]]:
    ref, sets = problems(TABLE)[name]
    return KERNELBENCH / ref, dict(s.split("=", 1) for s in sets)


@pytest.mark.skipif(not KERNELBENCH.is_dir(), reason=f"no KernelBench at {KERNELBENCH}")
@pytest.mark.parametrize("name", CHOSEN)
def test_level1_cuda_conv_kernels_match_torch(tmp_path: Path, name: str) -> None:
    check(tmp_path, *kernelbench(name), extra_tiles=1)


@pytest.mark.slow
@pytest.mark.skipif(not KERNELBENCH.is_dir(), reason=f"no KernelBench at {KERNELBENCH}")
@pytest.mark.parametrize("name", sorted(set(problems(TABLE)) - set(CHOSEN)))
def test_every_level1_cuda_conv_problem_matches_torch(tmp_path: Path, name: str) -> None:
    check(tmp_path, *kernelbench(name), extra_tiles=1)
