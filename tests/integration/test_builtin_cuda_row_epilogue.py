"""The builtin generator's CUDA row epilogues, run without a GPU: a GEMM whose row tail (softmax, a
row reduction, a GroupNorm with its groups inside the row) runs in its kernel (the block's rows
through a scratch copy of the product, then the row kernel's passes with block reductions),
compiled by g++ against the CPU model of CUDA's execution (cuda_emulate.py, warp shuffles of a
block in lockstep included) and compared with the reference's PyTorch output, for the first three
points of the fused plan. Problems: tests/fixtures/generate/level2_row_problems.tsv (KernelBench at
reduced sizes); the default run takes two, `-m slow` the rest.

    /usr/bin/python3 -m pytest -q tests/integration/test_builtin_cuda_row_epilogue.py
"""
from __future__ import annotations

from pathlib import Path

import pytest

from builtin_support import KERNELBENCH, problems, write_reference
from locations import ROOT
from test_builtin_cuda_conv import GENERATE, candidates, run_candidates, torch

TABLE = ROOT / "tests/fixtures/generate/level2_row_problems.tsv"
CHOSEN = ["l2_30_gemm_groupnorm_hardtanh", "l2_99_gemm_gelu_softmax"]
pytestmark = pytest.mark.skipif(not GENERATE.is_file(),
                                reason=f"no generate_candidates at {GENERATE}")


@pytest.mark.skipif(not KERNELBENCH.is_dir(), reason=f"no KernelBench at {KERNELBENCH}")
@pytest.mark.parametrize("name", [n if n in CHOSEN else pytest.param(n, marks=pytest.mark.slow)
                                  for n in sorted(problems(TABLE))])
def test_cuda_row_epilogue_matches_torch_on_the_cpu_model(tmp_path: Path, name: str) -> None:
    rel, sets = problems(TABLE)[name]
    ref, overrides = KERNELBENCH / rel, dict(s.split("=", 1) for s in sets)
    files, params = candidates(tmp_path, ref, overrides)
    fused = [k for k, f in enumerate(files) if "ep_scratch" in f.read_text()][:3]
    assert fused, "some candidate runs the row tail in the GEMM"

    def random_norm_weights(model: torch.nn.Module) -> None:  # not KernelBench's 1 and 0
        for m in model.modules():
            if isinstance(m, torch.nn.GroupNorm):
                m.weight.data.normal_()
                m.bias.data.normal_()

    run_candidates(ref, overrides, files, params, fused, random_norm_weights, atol=1e-5)


# Shapes KernelBench's reduced problems leave out: rows wider than the column tile (the block loops
# over column tiles into its scratch rows, the last tile partial: N = 1000) and more rows than one
# block holds (M = 70: a second, partly full block), for a log_softmax and a keepdim logsumexp.
# The last case's row max reads the product itself (no bias between them); its sum of exp(y - max)
# is taken in the max's pass (online softmax, docs/graph-ir.md).
@pytest.mark.parametrize("body", ["y = x @ self.w + self.b\n        return torch.log_softmax(y, dim=1)",
                                  "y = x @ self.w + self.b\n"
                                  "        return torch.logsumexp(y, dim=1, keepdim=True)",
                                  "return torch.softmax(x @ self.w, dim=1)"])
def test_cuda_row_epilogue_over_column_tiles_and_blocks(tmp_path: Path, body: str) -> None:
    ref = write_reference(tmp_path / "reference.py", body, "torch.randn(16, 1000) * 0.3",
                          "torch.randn(1000)", "torch.randn(70, 16)")
    files, params = candidates(tmp_path, ref, {})
    fused = [k for k, f in enumerate(files) if "ep_scratch" in f.read_text()]
    assert fused, "some candidate runs the row tail in the GEMM"
    run_candidates(ref, {}, files, params, fused[:1], atol=1e-5)
