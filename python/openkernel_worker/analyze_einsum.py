"""einsum equations that are matrix products, for `analyze` (analyze_builder.py): an einsum of
two operands becomes permutes plus a `matmul` in the graph IR when its equation is one."""
from __future__ import annotations


def einsum_as_matmul(equation: str) -> tuple[list[int], list[int]] | None:
    """For "A,B->C" that is a matrix product, the permutations that bring A to [batch..., m, k]
    and B to [batch..., k, n] (or [k, n]) so that C = matmul: each operand's own letters, one
    contracted letter, C = A's free letters then B's last. None for anything else (sums over a
    letter of one operand, repeated letters, outer products, ellipses)."""
    if "->" not in equation or "." in equation:
        return None
    lhs, out = equation.split("->")
    parts = lhs.split(",")
    if len(parts) != 2:
        return None
    a, b = parts
    if any(len(set(t)) != len(t) for t in (a, b, out)):
        return None
    shared = [c for c in a if c in b and c not in out]
    if len(shared) != 1 or len(out) < 2:
        return None
    k = shared[0]
    n = out[-1]
    if n not in b or n in a:
        return None
    batch_m = out[:-1]
    if sorted(a.replace(k, "")) != sorted(batch_m):
        return None
    m = batch_m[-1]
    batch = batch_m[:-1]
    b_batch = [c for c in b if c not in (k, n)]
    if b_batch and b_batch != list(batch[len(batch) - len(b_batch):]):
        return None
    if any(c in b for c in batch_m if c not in b_batch) or m in b:
        return None
    perm_a = [a.index(c) for c in batch + m + k]
    perm_b = [b.index(c) for c in b_batch + [k, n]]
    return perm_a, perm_b
