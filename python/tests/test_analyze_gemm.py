"""analyze on matrix products (docs/graph-ir.md, "Matrix products", "Attention"): KernelBench
level 1's GEMM problems 1-18 and attention (97) at the reduced sizes of
tests/fixtures/generate/gemm_problems.tsv give the IR of their fixtures; transposes, einsum, diag,
tril/triu, number arguments and scaled_dot_product_attention in their IR forms."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

import pytest
import torch

from openkernel_worker.analyze import analyze
from openkernel_worker.analyze_einsum import einsum_as_matmul

from test_analyze import Write, ops, reference, run

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "generate"
KERNELBENCH = Path(os.environ.get("OPENKERNEL_KERNELBENCH_DIR") or ROOT.parent / "shared/kernelbench")


def gemm_problems() -> list[tuple[str, str, str]]:
    rows = []
    for line in (FIXTURES / "gemm_problems.tsv").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, ref, sets = line.split("\t")
            rows.append((name, ref, sets))
    return rows


@pytest.mark.parametrize("name,ref,sets", gemm_problems())
def test_kernelbench_gemm_problems_give_their_fixtures(name: str, ref: str, sets: str) -> None:
    path = KERNELBENCH / ref.removeprefix("kb:")
    if not path.is_file():
        pytest.skip(f"no KernelBench at {KERNELBENCH}")
    if name == "attention" and not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        pytest.skip(f"torch {torch.__version__} has no F.scaled_dot_product_attention")
    overrides = dict(s.split("=") for s in sets.split())
    got = json.loads(json.dumps(analyze(str(path), overrides)))
    assert got == json.loads((FIXTURES / f"{name}.json").read_text())
    assert got["traceable"], got["reason"]
    assert "unknown" not in ops(got)


def test_transposes_are_permutes(write: Write) -> None:
    r = run(write, reference("return torch.matmul(x.T, y.t()) + x.transpose(0, 1).sum()",
                             params="x, y", inputs="[torch.randn(4, 8), torch.randn(3, 4)]"))
    perms = [n for n in r["nodes"] if n["op"] == "permute"]
    assert [p["kwargs"]["dims"] for p in perms] == [[1, 0], [1, 0], [1, 0]]
    r = run(write, reference("return x.permute(0, 2, 1) @ x.mT.mT",
                             inputs="[torch.randn(2, 4, 8)]"))
    assert [n["kwargs"].get("dims") for n in r["nodes"]] == [[0, 2, 1], [0, 2, 1], [0, 2, 1], None]
    assert ops(r) == ["permute", "permute", "permute", "matmul"]


def test_diag_and_triangles(write: Write) -> None:
    r = run(write, reference("return torch.triu(torch.diag(d) @ x, diagonal=1)", params="d, x",
                             inputs="[torch.randn(4), torch.randn(4, 4)]"))
    assert ops(r) == ["diag", "matmul", "triu"]
    assert r["nodes"][0]["kwargs"] == {"diagonal": 0} and r["nodes"][0]["shape"] == [4, 4]
    assert r["nodes"][2]["kwargs"] == {"diagonal": 1}


def test_einsum_matrix_products_and_others() -> None:
    assert einsum_as_matmul("bijl,lk->bijk") == ([0, 1, 2, 3], [0, 1])
    assert einsum_as_matmul("ki,kj->ij") == ([1, 0], [0, 1])
    assert einsum_as_matmul("bik,bjk->bij") == ([0, 1, 2], [0, 2, 1])
    for other in ("ii->i", "ij,ij->ij", "ij,jk", "i,j->ij", "...ij,jk->...ik", "ijk,kl->il"):
        assert einsum_as_matmul(other) is None, other


def test_einsum_in_the_graph(write: Write) -> None:
    r = run(write, reference('return torch.einsum("kb,kn->bn", x, y)', params="x, y",
                             inputs="[torch.randn(8, 4), torch.randn(8, 3)]"))
    assert ops(r) == ["permute", "matmul"] and r["nodes"][1]["shape"] == [4, 3]
    r = run(write, reference('return torch.einsum("ij,ij->i", x, x)'))
    assert ops(r) == ["unknown"] and "not a matrix product" in r["nodes"][0]["kwargs"]["reason"]


def test_number_arguments_are_constants(write: Write) -> None:
    r = run(write, reference("return x * s", params="x, s", inputs="[torch.randn(4, 8), 2.5]"))
    assert r["traceable"], r["reason"]
    assert r["inputs"] == [{"name": "x", "index": 0, "shape": [4, 8], "dtype": "float32"}]
    assert r["constants"] == [{"name": "s", "index": 1, "value": 2.5}]
    assert r["nodes"][0]["args"] == [{"input": "x"}, {"scalar": 2.5}]


SDPA = pytest.mark.skipif(not hasattr(torch.nn.functional, "scaled_dot_product_attention"),
                          reason=f"torch {torch.__version__} has no scaled_dot_product_attention")


@SDPA
def test_attention_is_its_products_and_softmax(write: Write) -> None:
    """F.scaled_dot_product_attention: K transposed, Q K^T, the scale, softmax, the product by V;
    a numeric scale= is read, a mask or causal attention leaves the call unknown with why."""
    qkv = "[torch.rand(2, 5, 8), torch.rand(2, 7, 8), torch.rand(2, 7, 3)]"
    r = run(write, reference("return F.scaled_dot_product_attention(q, k, v, scale=0.5)",
                             params="q, k, v", inputs=qkv))
    assert ops(r) == ["permute", "matmul", "mul", "softmax", "matmul"]
    assert r["nodes"][0]["kwargs"] == {"dims": [0, 2, 1]}
    assert r["nodes"][2]["args"][1] == {"scalar": 0.5}
    assert [n["shape"] for n in r["nodes"]] == [[2, 8, 7], [2, 5, 7], [2, 5, 7], [2, 5, 7],
                                                [2, 5, 3]]
    for call, why in (("is_causal=True", "is_causal=True"), ("attn_mask=q[:, :, :1] > 0",
                                                             "attn_mask")):
        r = run(write, reference(f"return F.scaled_dot_product_attention(q, k, v, {call})",
                                 params="q, k, v", inputs=qkv))
        unknown = [n for n in r["nodes"] if n["op"] == "unknown"]
        assert unknown and why in unknown[-1]["kwargs"]["reason"], r["nodes"]
