"""analyze_ops.py: the worker's tables hold to the graph IR's one vocabulary, "ir_ops" of
data/skills/elementwise_ops.json, which the C++ generator lowers from (tests/cpp/test_generate.cpp
checks that side)."""
from __future__ import annotations

import json

from openkernel_worker.analyze_ops import (OP_TABLE, OWN_SIGNATURE, plain_unary, table_entries,
                                           vocabulary)


def test_the_ops_the_worker_emits_are_the_vocabulary() -> None:
    words = {op for ops in vocabulary().values() for op in ops}
    # Specs of the maxmin family never appear under their own name: max/min become maximum, amax or
    # argmax (and the min forms); module and unknown carry the calls the tables do not cover.
    emitted = {spec.op for _, spec in table_entries() if spec.family != "maxmin"}
    emitted |= {"maximum", "minimum", "amax", "amin", "argmax", "argmin", "module", "unknown"}
    # `view`: the generator accepts it as a synonym; the worker spells every view `reshape`.
    assert emitted == words - {"view"}


def test_each_op_is_in_one_family_and_primitives_cover_pointwise() -> None:
    with open(OP_TABLE, encoding="utf-8") as f:
        table = json.load(f)
    listed = [op for ops in table["ir_ops"].values() for op in ops]
    assert len(listed) == len(set(listed))
    assert OWN_SIGNATURE <= set(vocabulary()["pointwise"])
    # A plain pointwise or binary op is lowered to the op table's op of the same name.
    primitives = set(table["ops"])
    assert set(plain_unary()) <= primitives
    assert set(vocabulary()["binary"]) <= primitives


def test_plain_unary_ops_exist_in_torch() -> None:
    import torch
    import torch.nn.functional as F

    for op in plain_unary():
        assert any(hasattr(m, op) for m in (torch, torch.Tensor, F)), op
