"""The builtin generator's GEMM family end to end on the CPU backend: `openkernel optimize --model
builtin` on KernelBench level 1's matrix-product problems at reduced sizes (the overrides of
tests/fixtures/generate/gemm_problems.tsv) must come back `correct`, with a candidate that computes
the product itself (no torch.matmul / @ / einsum / mm / bmm in ModelNew.forward).

    /usr/bin/python3 -m pytest -q tests/integration/test_builtin_gemm.py
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from builtin_support import KERNELBENCH, SKIPS, optimize_builtin, problems
from locations import PYTHON, ROOT

TABLE = ROOT / "tests/fixtures/generate/gemm_problems.tsv"
# Square, batched, matrix-vector, scalar, both operands transposed, 4D einsum, lower triangle,
# diagonal: one of each shape family the generator handles (all 18 pass; these keep CI short).
CHOSEN = ["gemm_square", "bmm", "matvec", "scalar_mul", "gemm_tab", "gemm_4d_einsum",
          "gemm_tril", "diag_scale"]
VENDOR = re.compile(r"torch\.(matmul|mm|bmm|einsum|tril|triu)\(|\s@\s")

pytestmark = SKIPS


@pytest.mark.parametrize("name", CHOSEN)
def test_builtin_gemm_problem_is_correct_on_the_cpu(tmp_path: Path, name: str) -> None:
    ref, sets = problems(TABLE)[name]
    optimize_builtin(tmp_path, KERNELBENCH / ref, sets, VENDOR)


# A vector times a column ([K] @ [K, 1]) and times a batch of columns ([2] @ [4, 2, 1], where the
# wrong broadcast [2] * [4, 2, 1] -> [4, 2, 2] summed over dim 0 has the right element count): the
# vector side must be read as K values per batch.
@pytest.mark.parametrize("a_shape,b_shape", [((64,), (64, 1)), ((2,), (4, 2, 1))])
def test_vector_times_columns_is_correct(tmp_path: Path, a_shape: tuple, b_shape: tuple) -> None:
    ref = tmp_path / "vector_columns.py"
    ref.write_text(f"""import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn{a_shape}, torch.randn{b_shape}]


def get_init_inputs():
    return []
""")
    optimize_builtin(tmp_path, ref, [], VENDOR)


def _torch_has_sdpa() -> bool:
    """Whether the worker's torch has F.scaled_dot_product_attention (torch 2.0 and later)."""
    code = "import torch.nn.functional as F; print(hasattr(F, 'scaled_dot_product_attention'))"
    p = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=120)
    return p.stdout.strip() == "True"


ATTENTION_VENDOR = re.compile(VENDOR.pattern + r"|scaled_dot_product_attention|softmax\(")


def test_attention_decomposition_is_correct(tmp_path: Path) -> None:
    """softmax(Q K^T * scale) V over [B, H, L, E]: the nodes scaled_dot_product_attention is
    written as (docs/graph-ir.md, "Attention"), spelled out so that any torch runs it: a batched
    product with K read transposed, the scale and softmax in one row kernel, the product by V."""
    ref = tmp_path / "attention.py"
    ref.write_text("""import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1) * 0.125, dim=-1) @ v


def get_inputs():
    return [torch.rand(2, 3, 20, 64), torch.rand(2, 3, 24, 64), torch.rand(2, 3, 24, 16)]


def get_init_inputs():
    return []
""")
    optimize_builtin(tmp_path, ref, [], ATTENTION_VENDOR)


def test_kernelbench_attention_is_correct(tmp_path: Path) -> None:
    """Level 1's problem 97 itself at a reduced size; needs a torch with the function."""
    if not _torch_has_sdpa():
        pytest.skip("the worker's torch has no F.scaled_dot_product_attention")
    ref, sets = problems(TABLE)["attention"]
    optimize_builtin(tmp_path, KERNELBENCH / ref, sets, ATTENTION_VENDOR)
