"""Level 2's tails in the epilogue, end to end on the CPU backend: `openkernel optimize --model
builtin` on KernelBench level 2 problems at reduced sizes (tests/fixtures/generate/
level2_problems.tsv) must come back `correct` with a candidate that launches one kernel, the GEMM
(nn.Linear) or convolution with its pointwise tail in the epilogue, and keeps no PyTorch module
call. The default suite runs a GEMM, a convolution and a 3d transposed convolution whose tail reads
a second input and its own output twice; the rest carry the `slow` marker. The problems with
logsumexp, clone/detach, dropout (eval) or adaptive average pooling (tests/fixtures/generate/
level2_more_problems.tsv) must come back `correct` with no PyTorch call for those ops, and
logsumexp must keep PyTorch's values on rows of -inf and +inf. The problems whose GEMM runs its row
tail (softmax, a row reduction, a GroupNorm) in the epilogue (tests/fixtures/generate/
level2_row_problems.tsv, and references with random norm weights, a batched input and a product
also read by a scan) must come back `correct` as one kernel. The tests that write their own
references (logsumexp's infinities, the per-channel values, the row epilogues) need the binary
alone, not KernelBench.

    /usr/bin/python3 -m pytest -q tests/integration/test_builtin_level2.py
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from builtin_support import (KERNELBENCH, NEEDS_BINARY, NEEDS_KERNELBENCH, optimize_builtin,
                             problems)
from locations import ROOT

TABLE = ROOT / "tests/fixtures/generate/level2_problems.tsv"
MORE = ROOT / "tests/fixtures/generate/level2_more_problems.tsv"
ROWS = ROOT / "tests/fixtures/generate/level2_row_problems.tsv"
ROWS_CHOSEN = ["l2_99_gemm_gelu_softmax", "l2_14_gemm_div_sum_scale"]
MORE_CHOSEN = ["l2_45_gemm_sigmoid_gemm_lse", "l2_40_gemm_clone_residual",
               "l2_67_conv_gelu_adaptive_avg"]
CHOSEN = ["l2_12_gemm_mul_leaky", "l2_1_conv_relu_bias", "l2_26_convt3d_add_hardswish",
          "l2_73_conv_bn_scale"]
VENDOR = re.compile(r"_ok_torch\.(nn\.functional\.|matmul|mm|conv|logsumexp|clone|detach|dropout|"
                    r"adaptive)|F\.(linear|conv)|self\.\w+\(|_ok_attr\(self, ")

pytestmark = NEEDS_BINARY  # the KernelBench problems also NEEDS_KERNELBENCH


def module_reference(tmp_path: Path, init: str, forward: str, inputs: str) -> Path:
    """A one-input reference in tmp_path: a Model whose __init__ runs the statements `init` (after
    super().__init__()) and whose forward is `forward` (statements over x, the last a return), on
    the input `inputs` (a Python expression)."""
    indent = "\n        "
    ref = tmp_path / "reference.py"
    ref.write_text(f"""import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        {indent.join(init.splitlines())}

    def forward(self, x):
        {indent.join(forward.splitlines())}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
""")
    return ref


def check_one_fused_kernel(source: str, row: bool = False) -> None:
    pattern = re.search(r"^# pattern: (\S+)$", source, re.M)
    ending = r":epilogue\[[^\]]*\]" if row else ":epilogue"
    assert pattern and re.fullmatch(r"\S*" + ending, pattern.group(1)), source[:400]
    forward = source[source.index("class ModelNew(Model):"):]
    assert len(re.findall(r"_ok_lib\.ok_\w+\(", forward)) == 1, forward


@NEEDS_KERNELBENCH
@pytest.mark.parametrize("name", CHOSEN)
def test_level2_tail_runs_in_the_epilogue_and_is_correct(tmp_path: Path, name: str) -> None:
    ref, sets = problems(TABLE)[name]
    check_one_fused_kernel(optimize_builtin(tmp_path, KERNELBENCH / ref, sets, VENDOR))


@pytest.mark.slow
@NEEDS_KERNELBENCH
@pytest.mark.parametrize("name", sorted(set(problems(TABLE)) - set(CHOSEN)))
def test_every_listed_level2_problem_is_correct(tmp_path: Path, name: str) -> None:
    ref, sets = problems(TABLE)[name]
    check_one_fused_kernel(optimize_builtin(tmp_path, KERNELBENCH / ref, sets, VENDOR))


@NEEDS_KERNELBENCH
@pytest.mark.parametrize("name", [n if n in MORE_CHOSEN else pytest.param(n, marks=pytest.mark.slow)
                                  for n in sorted(problems(MORE))])
def test_logsumexp_clone_dropout_and_adaptive_pool_problems_are_correct(tmp_path: Path,
                                                                          name: str) -> None:
    ref, sets = problems(MORE)[name]
    optimize_builtin(tmp_path, KERNELBENCH / ref, sets, VENDOR)


# logsumexp over a middle dim with and without keepdim, on rows of -inf (PyTorch: -inf, not NaN)
# and rows holding +inf (+inf).
@pytest.mark.parametrize("forward", ["torch.logsumexp(x, dim=1)",
                                     "torch.logsumexp(x, 1, keepdim=True) * 2"])
def test_logsumexp_keeps_pytorchs_infinities(tmp_path: Path, forward: str) -> None:
    ref = tmp_path / "reference.py"
    ref.write_text(f"""import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return {forward}


def get_inputs():
    x = torch.randn(3, 40, 7) * 30
    x[0, :, 2] = float("-inf")
    x[1, 5, 3] = float("inf")
    return [x]


def get_init_inputs():
    return []
""")
    optimize_builtin(tmp_path, ref, [], VENDOR)


# Per-channel values recomputed per element in the epilogue (an eval-mode BatchNorm's
# rsqrt(running_var + eps), plan.hpp's KernelGroup::broadcast) must index their [C] buffers by
# channel: running statistics, weight and bias are random here (KernelBench's are 0, 1, 1, 0); after
# a convolution, after nn.Linear (both one kernel), and alone (a pointwise kernel of the forward's
# input). The planner falls back to kernels of their own where such a value is read outside its
# group: exp(v) read inline and after a reduction; sigmoid(b) and abs(b) read through a view; and
# where a value read inline by another would need two shapes (s at [2, 3, 4] and, through t, at
# [8, 3, 1]).
@pytest.mark.parametrize("init,forward,inputs,one_kernel", [
    ("self.conv = nn.Conv2d(3, 6, 3)\nself.bn = nn.BatchNorm2d(6)",
     "return self.bn(self.conv(x)) * 2.0", "torch.randn(2, 3, 9, 11)", True),
    ("self.fc = nn.Linear(20, 12)\nself.bn = nn.BatchNorm1d(12)",
     "return torch.relu(self.bn(self.fc(x) * 0.5))", "torch.randn(5, 20)", True),
    ("self.bn = nn.BatchNorm2d(4)", "return self.bn(x) * 2.0", "torch.randn(2, 4, 5, 6)", False),
    ("self.v = nn.Parameter(torch.randn(8))",
     "y = torch.relu(x)\ne = torch.exp(self.v)\nreturn (y * e).sum(1, keepdim=True) * e",
     "torch.randn(4, 8)", False),
    ("self.conv = nn.Conv2d(3, 6, 3)\nself.b = nn.Parameter(torch.randn(6))",
     "y = torch.relu(self.conv(x)) * torch.sigmoid(self.b).view(1, -1, 1, 1)\n"
     "return y * torch.rsqrt(self.b.abs().view(6, 1, 1) + 1e-5)", "torch.randn(2, 3, 9, 11)",
     False),
    ("self.b = nn.Parameter(torch.randn(3, 1))",
     "r = torch.relu(x)\ns = torch.sigmoid(self.b)\ny = r * s\nt = s * 2.0\n"
     "return y.reshape(8, 3, 1) * t", "torch.randn(2, 3, 4)", False),
])
def test_per_channel_values_inline_in_the_epilogue(tmp_path: Path, init: str, forward: str,
                                                    inputs: str, one_kernel: bool) -> None:
    randomise = ("for m in self.modules():\n"
                 "    if isinstance(m, nn.modules.batchnorm._BatchNorm):\n"
                 "        m.running_mean.normal_()\n        m.running_var.uniform_(0.5, 2.0)\n"
                 "        m.weight.data.normal_()\n        m.bias.data.normal_()")
    ref = module_reference(tmp_path, init + "\n" + randomise, forward, inputs)
    source = optimize_builtin(tmp_path, ref, [], VENDOR)
    if one_kernel:
        check_one_fused_kernel(source)


@NEEDS_KERNELBENCH
@pytest.mark.parametrize("name", [n if n in ROWS_CHOSEN else pytest.param(n, marks=pytest.mark.slow)
                                  for n in sorted(problems(ROWS))])
def test_row_tails_run_in_the_gemm_epilogue_and_are_correct(tmp_path: Path, name: str) -> None:
    ref, sets = problems(ROWS)[name]
    check_one_fused_kernel(optimize_builtin(tmp_path, KERNELBENCH / ref, sets, VENDOR), row=True)


# Row epilogues on what KernelBench's problems leave out: GroupNorm weights and biases that are not
# 1 and 0 (indexed per channel inside the row's segments), a 3d input (the product's batch folded
# into its rows), log_softmax over the last dim, and a product that a scan also reads (the
# epilogue's second output; two more kernels follow).
@pytest.mark.parametrize("init,forward,inputs,one", [
    ("self.fc = nn.Linear(40, 32)\nself.gn = nn.GroupNorm(4, 32)\n"
     "self.gn.weight.data.normal_()\nself.gn.bias.data.normal_()",
     "return torch.tanh(self.gn(self.fc(x)))", "torch.randn(5, 40)", True),
    ("self.fc = nn.Linear(40, 24)", "return torch.log_softmax(self.fc(x) * 3.0, dim=-1)",
     "torch.randn(2, 3, 40)", True),
    ("self.fc = nn.Linear(40, 24)",
     "y = self.fc(x)\nreturn torch.softmax(y, dim=1) + torch.cumsum(y, dim=1)",
     "torch.randn(3, 40)", False),
])
def test_row_epilogue_references(tmp_path: Path, init: str, forward: str, inputs: str,
                                 one: bool) -> None:
    source = optimize_builtin(tmp_path, module_reference(tmp_path, init, forward, inputs), [],
                              VENDOR)
    assert ":epilogue[" in re.search(r"^# pattern: (\S+)$", source, re.M).group(1), source[:400]
    if one:
        check_one_fused_kernel(source, row=True)
