"""The tables of `analyze`: which torch callables, Tensor methods and nn modules are which canonical
op of docs/graph-ir.md, and the IR's vocabulary they are held to.

The vocabulary is "ir_ops" of data/skills/elementwise_ops.json, the one list the C++ generator
lowers from (src/generate/graph.cpp): the pointwise ops whose torch forms take the input alone are
read from it, so an op added there is recognised here under every torch spelling.
"""
from __future__ import annotations

import functools
import inspect as pyinspect
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

# The op table beside the python/ folder (the engine puts that folder on PYTHONPATH).
OP_TABLE = Path(__file__).resolve().parents[2] / "data" / "skills" / "elementwise_ops.json"

# Parameters that never change a result's values: dropped silently.
IGNORED = frozenset({"_stacklevel", "cudnn_enable", "memory_format"})
# Parameters the canonical forms cannot express: a call is only normalised while they keep their
# default (a `dtype=` cast inside a reduction, `rounding_mode=`, `round(decimals=)`).
DEFAULT_ONLY = frozenset({"dtype", "rounding_mode", "decimals", "out"})
# Tensor methods that reshape without touching data: all become `reshape` with the output shape.
VIEW_METHODS = ("view", "reshape", "squeeze", "unsqueeze")


@dataclass(frozen=True)
class AttrRef:
    """A module weight handed to a normalised op (nn.LayerNorm's weight becomes an attr arg)."""
    path: str


@dataclass(frozen=True)
class Spec:
    """How one callable becomes a canonical op: its signature (self first for methods), the family
    that turns bound arguments into args and kwargs, and kwargs the callable implies."""
    op: str
    sig: pyinspect.Signature
    family: str
    fixed: dict[str, Any] = field(default_factory=dict)


@functools.lru_cache(maxsize=None)
def vocabulary() -> dict[str, tuple[str, ...]]:
    """The IR's canonical ops by family, as the op table's "ir_ops" lists them."""
    with open(OP_TABLE, encoding="utf-8") as f:
        return {family: tuple(ops) for family, ops in json.load(f)["ir_ops"].items()}


# Pointwise ops whose torch forms take more than the input: each has its own entries below.
OWN_SIGNATURE = frozenset({"round", "gelu", "softplus", "elu", "leaky_relu", "hardtanh", "clamp",
                           "threshold"})
# Unary ops whose torch.nn.functional form takes `inplace=`.
FUNCTIONAL_INPLACE = ("relu", "silu", "mish", "selu", "hardsigmoid", "hardswish")


def plain_unary() -> tuple[str, ...]:
    """The pointwise ops whose torch.X, torch.special.X, Tensor.X and F.X take the input alone."""
    return tuple(op for op in vocabulary()["pointwise"] if op not in OWN_SIGNATURE)


# ---------------------------------------------------------------------------------------------
# The tables: which callables and modules are which canonical op.
# ---------------------------------------------------------------------------------------------

def resolve(dotted: str) -> Any:
    """`torch.nn.functional.relu` -> the object, or None where this torch version lacks it."""
    import importlib

    parts = dotted.split(".")
    obj: Any = importlib.import_module(parts[0])
    for p in parts[1:]:
        obj = getattr(obj, p, None)
        if obj is None:
            return None
    return obj


def _signature(fn: Callable[..., Any]) -> pyinspect.Signature:
    return pyinspect.signature(fn)


Entries = Iterator[tuple[list[str], Spec]]


def table_entries() -> Entries:
    """(callables by dotted name, method names prefixed `Tensor.`) -> Spec; the first entry to name a
    callable wins."""
    from .analyze_attention import attention_entries
    from .analyze_conv import conv_entries
    from .analyze_norms import norm_and_loss_entries
    from .analyze_window import window_entries

    yield from _elementwise_entries()
    yield from _reduction_entries()
    yield from _row_shape_and_vendor_entries()
    yield from norm_and_loss_entries()
    yield from conv_entries()
    yield from window_entries()
    yield from attention_entries()


def _elementwise_entries() -> Entries:
    u = _signature(lambda input: None)
    u_inplace = _signature(lambda input, inplace=False: None)
    for name in plain_unary():
        yield [f"torch.{name}", f"torch.special.{name}", f"Tensor.{name}"], Spec(name, u, "unary")
        functional = u_inplace if name in FUNCTIONAL_INPLACE else u
        yield [f"torch.nn.functional.{name}"], Spec(name, functional, "unary")
    yield ["torch.negative", "Tensor.negative", "operator.neg"], Spec("neg", u, "unary")
    yield ["torch.absolute", "Tensor.absolute", "operator.abs"], Spec("abs", u, "unary")
    yield ["torch.special.expit"], Spec("sigmoid", u, "unary")
    yield (["torch.round", "Tensor.round"],
           Spec("round", _signature(lambda input, decimals=0: None), "unary"))
    yield (["torch.nn.functional.gelu", "torch._C._nn.gelu"],
           Spec("gelu", _signature(lambda input, approximate="none": None), "unary"))
    yield (["torch.nn.functional.softplus", "torch._C._nn.softplus"],
           Spec("softplus", _signature(lambda input, beta=1.0, threshold=20.0: None), "unary"))
    yield (["torch.nn.functional.elu"],
           Spec("elu", _signature(lambda input, alpha=1.0, inplace=False: None), "unary"))
    yield (["torch.nn.functional.leaky_relu", "torch._C._nn.leaky_relu"],
           Spec("leaky_relu", _signature(lambda input, negative_slope=0.01, inplace=False: None),
                "unary"))
    yield (["torch.nn.functional.hardtanh", "torch._C._nn.hardtanh"],
           Spec("hardtanh", _signature(lambda input, min_val=-1.0, max_val=1.0, inplace=False: None),
                "unary"))
    yield (["torch.nn.functional.relu6"],
           Spec("hardtanh", u_inplace, "unary", {"min_val": 0.0, "max_val": 6.0}))
    yield (["torch.clamp", "torch.clip", "Tensor.clamp", "Tensor.clip"],
           Spec("clamp", _signature(lambda input, min=None, max=None: None), "unary"))
    yield (["torch.clamp_min", "Tensor.clamp_min"],
           Spec("clamp", _signature(lambda input, min: None), "unary", {"max": None}))
    yield (["torch.clamp_max", "Tensor.clamp_max"],
           Spec("clamp", _signature(lambda input, max: None), "unary", {"min": None}))
    yield (["torch.nn.functional.threshold"],
           Spec("threshold", _signature(lambda input, threshold, value, inplace=False: None), "unary"))
    yield (["torch.threshold"],
           Spec("threshold", _signature(lambda input, threshold, value: None), "unary"))

    with_alpha = _signature(lambda input, other, alpha=1: None)
    plain = _signature(lambda input, other: None)
    yield ["torch.add", "Tensor.add"], Spec("add", with_alpha, "binary")
    yield (["torch.sub", "torch.subtract", "Tensor.sub", "Tensor.subtract"],
           Spec("sub", with_alpha, "binary"))
    yield ["operator.add"], Spec("add", plain, "binary")
    yield ["operator.sub"], Spec("sub", plain, "binary")
    yield (["torch.mul", "torch.multiply", "Tensor.mul", "Tensor.multiply", "operator.mul"],
           Spec("mul", plain, "binary"))
    yield (["torch.div", "torch.divide", "Tensor.div", "Tensor.divide"],
           Spec("div", _signature(lambda input, other, rounding_mode=None: None), "binary"))
    yield ["torch.true_divide", "Tensor.true_divide", "operator.truediv"], Spec("div", plain, "binary")
    yield (["torch.pow", "Tensor.pow", "operator.pow"],
           Spec("pow", _signature(lambda input, exponent: None), "binary"))
    yield ["torch.maximum", "Tensor.maximum"], Spec("maximum", plain, "binary")
    yield ["torch.minimum", "Tensor.minimum"], Spec("minimum", plain, "binary")
    yield ["torch.where"], Spec("where", _signature(lambda condition, input, other: None), "where")


def _reduction_entries() -> Entries:
    sig = _signature
    with_dtype = sig(lambda input, dim=None, keepdim=False, dtype=None: None)
    for name in ("sum", "mean", "prod"):
        yield [f"torch.{name}", f"Tensor.{name}"], Spec(name, with_dtype, "reduce")
    for name in ("amax", "amin"):
        yield ([f"torch.{name}", f"Tensor.{name}"],
               Spec(name, sig(lambda input, dim=(), keepdim=False: None), "reduce"))
    yield (["torch.logsumexp", "torch.special.logsumexp", "Tensor.logsumexp"],
           Spec("logsumexp", sig(lambda input, dim, keepdim=False: None), "reduce"))
    for name in ("argmax", "argmin"):
        yield ([f"torch.{name}", f"Tensor.{name}"],
               Spec(name, sig(lambda input, dim=None, keepdim=False: None), "reduce"))
    for name in ("var", "std"):
        yield ([f"torch.{name}", f"Tensor.{name}"],
               Spec(name, sig(lambda input, dim=None, unbiased=None, keepdim=False, correction=None:
                              None), "var"))
    for name in ("max", "min"):
        yield ([f"torch.{name}", f"Tensor.{name}"],
               Spec(name, sig(lambda input, *args, **kwargs: None), "maxmin"))
    yield (["torch.norm", "Tensor.norm"],
           Spec("norm", sig(lambda input, p="fro", dim=None, keepdim=False, out=None, dtype=None:
                            None), "norm"))
    yield (["torch.linalg.vector_norm"],
           Spec("norm", sig(lambda input, ord=2, dim=None, keepdim=False, dtype=None: None), "norm"))
    yield (["torch.linalg.norm"],
           Spec("norm", sig(lambda input, ord=None, dim=None, keepdim=False, dtype=None: None),
                "norm"))


def _row_shape_and_vendor_entries() -> Entries:
    sig = _signature
    plain = sig(lambda input, other: None)
    for name in ("softmax", "log_softmax"):
        yield ([f"torch.nn.functional.{name}"],
               Spec(name, sig(lambda input, dim=None, _stacklevel=3, dtype=None: None), "softmax"))
        yield ([f"torch.{name}", f"torch.special.{name}", f"Tensor.{name}"],
               Spec(name, sig(lambda input, dim, dtype=None: None), "softmax"))
    yield (["torch.nn.functional.layer_norm", "torch.layer_norm"],
           Spec("layer_norm", sig(lambda input, normalized_shape, weight=None, bias=None, eps=1e-5,
                                  cudnn_enable=True: None), "layer_norm"))

    yield ["torch.reshape"], Spec("reshape", sig(lambda input, shape: None), "reshape")
    yield ([f"Tensor.{m}" for m in VIEW_METHODS] + ["torch.squeeze", "torch.unsqueeze"],
           Spec("reshape", sig(lambda input, *shape, **kwargs: None), "reshape"))
    yield (["torch.flatten", "Tensor.flatten"],
           Spec("flatten", sig(lambda input, start_dim=0, end_dim=-1: None), "flatten"))
    yield (["Tensor.contiguous", "torch.clone", "Tensor.clone"],
           Spec("contiguous", sig(lambda input, memory_format=None: None), "unary"))
    yield ["torch.detach", "Tensor.detach"], Spec("contiguous", sig(lambda input: None), "unary")
    for name in ("dropout", "dropout1d", "dropout2d", "dropout3d"):
        yield ([f"torch.nn.functional.{name}"],
               Spec("contiguous", sig(lambda input, p=0.5, training=True, inplace=False: None),
                    "dropout"))
    for name in ("alpha_dropout", "feature_alpha_dropout"):  # PyTorch's default: not training
        yield ([f"torch.nn.functional.{name}"],
               Spec("contiguous", sig(lambda input, p=0.5, training=False, inplace=False: None),
                    "dropout"))

    yield (["torch.nn.functional.linear", "torch._C._nn.linear"],
           Spec("linear", sig(lambda input, weight, bias=None: None), "vendor"))
    yield ["torch.matmul", "Tensor.matmul", "operator.matmul"], Spec("matmul", plain, "vendor")
    for name in ("mm", "bmm"):
        yield ([f"torch.{name}", f"Tensor.{name}"],
               Spec(name, sig(lambda input, mat2: None), "vendor"))
    yield from _matmul_structure_entries()


def _matmul_structure_entries() -> Entries:
    """What a matrix product's operands and result go through: transposes (all `permute`), the
    diagonal matrix of a vector, the triangle of a product, and einsum's matrix products."""
    sig = _signature
    yield ["torch.t", "Tensor.t"], Spec("permute", sig(lambda input: None), "permute")
    yield (["torch.transpose", "Tensor.transpose", "torch.swapaxes", "Tensor.swapaxes",
            "torch.swapdims", "Tensor.swapdims"],
           Spec("permute", sig(lambda input, dim0, dim1: None), "permute"))
    yield (["torch.permute", "Tensor.permute"],
           Spec("permute", sig(lambda input, *dims: None), "permute"))
    yield ["torch.diag", "Tensor.diag"], Spec("diag", sig(lambda input, diagonal=0: None), "unary")
    for name in ("tril", "triu"):
        yield ([f"torch.{name}", f"Tensor.{name}"],
               Spec(name, sig(lambda input, diagonal=0: None), "unary"))
    yield ["torch.einsum"], Spec("matmul", sig(lambda equation, *operands: None), "einsum")


_FUNCTIONS: dict[Any, Spec] = {}
_METHODS: dict[str, Spec] = {}


def tables() -> tuple[dict[Any, Spec], dict[str, Spec]]:
    """Functions by identity and Tensor methods by name, built once."""
    if not _FUNCTIONS:
        for names, spec in table_entries():
            for dotted in names:
                if dotted.startswith("Tensor."):
                    _METHODS.setdefault(dotted[len("Tensor."):], spec)
                    continue
                fn = resolve(dotted)
                if fn is not None:
                    _FUNCTIONS.setdefault(fn, spec)
    return _FUNCTIONS, _METHODS


def module_form(mod: Any, path: str,
                rank: int | None = None) -> tuple[Any, dict[str, Any]] | None:
    """A module that is one of the canonical ops -> (the functional it equals, its arguments but
    the input), or None for every other module (kept as op `module`); `rank` is the input's rank
    where it is a tensor (a norm module's form depends on it)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    kind = type(mod)
    inplace = {"inplace": bool(getattr(mod, "inplace", False))}
    plain = {nn.Sigmoid: torch.sigmoid, nn.Tanh: torch.tanh, nn.Softsign: F.softsign}
    with_inplace = {nn.ReLU: F.relu, nn.SiLU: F.silu, nn.Mish: F.mish, nn.SELU: F.selu,
                    nn.Hardsigmoid: F.hardsigmoid, nn.Hardswish: F.hardswish}
    if kind in plain:
        return plain[kind], {}
    if kind in with_inplace:
        return with_inplace[kind], inplace
    if kind is nn.GELU:
        return F.gelu, {"approximate": getattr(mod, "approximate", "none")}
    if kind is nn.Softplus:
        return F.softplus, {"beta": mod.beta, "threshold": mod.threshold}
    if kind is nn.ELU:
        return F.elu, {"alpha": mod.alpha, **inplace}
    if kind is nn.LeakyReLU:
        return F.leaky_relu, {"negative_slope": mod.negative_slope, **inplace}
    if kind in (nn.Hardtanh, nn.ReLU6):
        return F.hardtanh, {"min_val": mod.min_val, "max_val": mod.max_val, **inplace}
    if kind is nn.Threshold:
        return F.threshold, {"threshold": mod.threshold, "value": mod.value, **inplace}
    if kind is nn.Softmax:
        return F.softmax, {"dim": mod.dim}
    if kind is nn.LogSoftmax:
        return F.log_softmax, {"dim": mod.dim}
    if isinstance(mod, nn.modules.dropout._DropoutNd):
        functional = {nn.Dropout1d: F.dropout1d, nn.Dropout2d: F.dropout2d,
                      nn.Dropout3d: F.dropout3d, nn.AlphaDropout: F.alpha_dropout,
                      nn.FeatureAlphaDropout: F.feature_alpha_dropout}.get(kind, F.dropout)
        return functional, {"p": mod.p, "training": mod.training, **inplace}
    if kind is nn.Flatten:
        return torch.flatten, {"start_dim": mod.start_dim, "end_dim": mod.end_dim}
    if kind is nn.LayerNorm:
        weight = AttrRef(f"{path}.weight") if getattr(mod, "weight", None) is not None else None
        bias = AttrRef(f"{path}.bias") if getattr(mod, "bias", None) is not None else None
        return F.layer_norm, {"normalized_shape": list(mod.normalized_shape), "weight": weight,
                              "bias": bias, "eps": mod.eps}
    from .analyze_conv import conv_module_form
    from .analyze_norms import norm_or_loss_module
    from .analyze_window import window_module_form

    return (window_module_form(mod) or conv_module_form(mod, path)
            or norm_or_loss_module(mod, path, rank))
