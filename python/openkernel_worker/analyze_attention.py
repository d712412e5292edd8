"""`analyze`'s decomposition of F.scaled_dot_product_attention (docs/graph-ir.md, "Attention"):
no op of its own, but the IR nodes it equals, as einsum's matrix products are: `permute` of K's
last two dims, `matmul` Q K^T, `mul` by the scale, `softmax` over the last dim, `matmul` by V.
Table entries (analyze_ops.table_entries) and the Builder's family (a mixin of
analyze_builder.Builder). A torch without the function (before 2.0) has no entry.
"""
from __future__ import annotations

import inspect as pyinspect
import math
from typing import Any, Iterator

from .analyze_ops import Spec, resolve

SDPA = "torch.nn.functional.scaled_dot_product_attention"


def attention_entries() -> Iterator[tuple[list[str], Spec]]:
    """F.scaled_dot_product_attention with torch's keyword arguments (2.5's full list)."""
    if resolve(SDPA) is None:
        return
    sig = pyinspect.signature(lambda query, key, value, attn_mask=None, dropout_p=0.0,
                              is_causal=False, scale=None, enable_gqa=False: None)
    yield [SDPA], Spec("matmul", sig, "attention")


class AttentionFamilies:
    """The Builder's family for attention (self is an analyze_builder.Builder)."""

    def family_attention(self, node: Any, spec: Any, b: dict[str, Any]) -> None:
        """softmax(Q K^T * scale) V over Q [..., L, E], K [..., S, E], V [..., S, Ev] with the
        same batch dims; scale 1/sqrt(E) unless given as a number. A mask, dropout, is_causal,
        enable_gqa or broadcast batch dims are Unsupported (the call stays `unknown`)."""
        from .analyze_builder import Unsupported
        from .analyze_trace import TensorInfo

        if b.get("attn_mask") is not None:
            raise Unsupported("scaled_dot_product_attention with attn_mask")
        for name, default in (("dropout_p", 0.0), ("is_causal", False), ("enable_gqa", False)):
            given = self.constant(b.get(name, default), name)
            if given != default:
                raise Unsupported(f"scaled_dot_product_attention with {name}={given!r}")
        scale = self.constant(b.get("scale"), "scale")
        if scale is not None and not isinstance(scale, (int, float)):
            raise Unsupported(f"scaled_dot_product_attention with scale={scale!r}")
        q, k, v = (self.tensor_info(b[n]) for n in ("query", "key", "value"))
        rank = len(q.shape)
        if rank < 2 or len(k.shape) != rank or len(v.shape) != rank:
            raise Unsupported("scaled_dot_product_attention of operands of different ranks")
        if not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]) or q.shape[-1] != k.shape[-1] \
                or k.shape[-2] != v.shape[-2]:
            raise Unsupported(f"scaled_dot_product_attention of Q {q.shape}, K {k.shape}, V "
                              f"{v.shape} (broadcast batch dims or mismatched sizes)")
        if scale is None:
            scale = 1.0 / math.sqrt(q.shape[-1])
        batch, length, keys = q.shape[:-2], q.shape[-2], k.shape[-2]
        dims = list(range(rank - 2)) + [rank - 1, rank - 2]
        kt = self.fresh_name(f"{node.name}_kt")
        self.emit(kt, "permute", [self.tensor_arg(b["key"], "the key")], {"dims": dims},
                  TensorInfo(batch + [k.shape[-1], keys], k.dtype))
        scores = TensorInfo(batch + [length, keys], q.dtype)
        names = [self.fresh_name(f"{node.name}_{part}") for part in ("scores", "scaled", "weights")]
        self.emit(names[0], "matmul", [self.tensor_arg(b["query"], "the query"), {"node": kt}], {},
                  scores)
        self.emit(names[1], "mul", [{"node": names[0]}, {"scalar": float(scale)}], {}, scores)
        self.emit(names[2], "softmax", [{"node": names[1]}], {"dim": rank - 1}, scores)
        value = self.tensor_arg(b["value"], "the value")
        self.emit(node.name, "matmul", [{"node": names[2]}, value], {}, node)
