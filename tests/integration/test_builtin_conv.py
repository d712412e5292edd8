"""The builtin generator's convolutions end to end on the CPU backend: `openkernel optimize --model
builtin` on KernelBench level 1's convolution problems (50, 54-87) at reduced sizes (the overrides
of tests/fixtures/generate/conv_problems.tsv) must come back `correct`, with a candidate that
computes the convolution itself (no torch conv call and no submodule call in ModelNew.forward).
The default suite runs one problem of each kind; all 35 carry the `slow` marker.

    /usr/bin/python3 -m pytest -q tests/integration/test_builtin_conv.py
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from builtin_support import KERNELBENCH, SKIPS, optimize_builtin, problems, write_reference
from locations import ROOT

TABLE = ROOT / "tests/fixtures/generate/conv_problems.tsv"
# 2d with a bias, stride 4 and padding; 3d asymmetric; 1d transposed; 3d transposed strided,
# padded and grouped; 2d transposed strided, padded, dilated and grouped; depthwise;
# depthwise-separable (two convolutions).
CHOSEN = ["conv50_stride4_bias", "conv60_3d_asym", "conv64_t1d", "conv72_t3d_grouped",
          "conv75_t2d_all", "conv85_depthwise_asym", "conv86_separable"]
VENDOR = re.compile(r"_ok_torch\.(nn\.functional\.)?conv|F\.conv|self\.\w+\(|_ok_attr\(self, ")

pytestmark = SKIPS


@pytest.mark.parametrize("name", CHOSEN)
def test_builtin_conv_problem_is_correct_on_the_cpu(tmp_path: Path, name: str) -> None:
    ref, sets = problems(TABLE)[name]
    optimize_builtin(tmp_path, KERNELBENCH / ref, sets, VENDOR)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(problems(TABLE)) - set(CHOSEN)))
def test_every_level1_conv_problem_is_correct_on_the_cpu(tmp_path: Path, name: str) -> None:
    ref, sets = problems(TABLE)[name]
    optimize_builtin(tmp_path, KERNELBENCH / ref, sets, VENDOR)


# Functional forms: F.conv2d with a bias, padding="same", groups and dilation, then a
# conv_transpose1d of an input weight with output_padding, a bias and a pointwise tail.
FUNCTIONAL = {
    "same_grouped_bias": ("return F.conv2d(x, self.w, self.b, padding='same', dilation=2, groups=2)",
                          "torch.randn(6, 2, 3, 5)", "torch.randn(6)", "torch.randn(2, 4, 9, 11)"),
    "transposed_tail": ("return torch.relu(F.conv_transpose1d(x, self.w, self.b, stride=3, "
                        "padding=2, output_padding=1, dilation=2)) * 2.0",
                        "torch.randn(4, 5, 3)", "torch.randn(5)", "torch.randn(2, 4, 17)"),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONAL))
def test_functional_convs_are_correct(tmp_path: Path, name: str) -> None:
    ref = write_reference(tmp_path / f"{name}.py", *FUNCTIONAL[name])
    optimize_builtin(tmp_path, ref, [], VENDOR)
