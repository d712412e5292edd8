"""The `conv` family of `analyze`: F.conv1d-3d, F.conv_transpose1d-3d and the nn.Conv / nn.ConvTranspose
modules as one canonical op of docs/graph-ir.md,
`conv {dims, stride, padding, dilation, groups, transposed, output_padding}` over
[input, weight, bias | None], every per-dim parameter a list of `dims` ints: table entries
(analyze_ops.table_entries), module forms (analyze_ops.module_form) and the Builder's family (a
mixin of analyze_builder.Builder).
"""
from __future__ import annotations

import inspect as pyinspect
from typing import TYPE_CHECKING, Any, Iterator

from .analyze_ops import AttrRef, Spec

if TYPE_CHECKING:  # analyze_builder imports this module's ConvFamilies
    from .analyze_builder import Builder


def conv_entries() -> Iterator[tuple[list[str], Spec]]:
    """F.conv1d-3d and F.conv_transpose1d-3d: `conv` with its dims and transposed fixed."""
    sig = pyinspect.signature
    standard = sig(lambda input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1: None)
    transposed = sig(lambda input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1: None)
    for d in (1, 2, 3):
        yield ([f"torch.nn.functional.conv{d}d", f"torch.conv{d}d"],
               Spec("conv", standard, "conv", {"dims": d, "transposed": False}))
        yield ([f"torch.nn.functional.conv_transpose{d}d", f"torch.conv_transpose{d}d"],
               Spec("conv", transposed, "conv", {"dims": d, "transposed": True}))


def conv_module_form(mod: Any, path: str) -> tuple[Any, dict[str, Any]] | None:
    """nn.Conv1d-3d and nn.ConvTranspose1d-3d with zero padding -> (their functional form, its
    arguments but the input); None for any other module (or another padding_mode)."""
    import torch.nn as nn
    import torch.nn.functional as F

    standard = {nn.Conv1d: F.conv1d, nn.Conv2d: F.conv2d, nn.Conv3d: F.conv3d}
    transposed = {nn.ConvTranspose1d: F.conv_transpose1d, nn.ConvTranspose2d: F.conv_transpose2d,
                  nn.ConvTranspose3d: F.conv_transpose3d}
    kind = type(mod)
    if kind not in standard and kind not in transposed:
        return None
    if getattr(mod, "padding_mode", "zeros") != "zeros":
        return None
    params: dict[str, Any] = {
        "weight": AttrRef(f"{path}.weight"),
        "bias": AttrRef(f"{path}.bias") if getattr(mod, "bias", None) is not None else None,
        "stride": tuple(mod.stride), "dilation": tuple(mod.dilation), "groups": mod.groups,
        "padding": mod.padding if isinstance(mod.padding, str) else tuple(mod.padding)}
    if kind in transposed:
        params["output_padding"] = tuple(mod.output_padding)
        return transposed[kind], params
    return standard[kind], params


def _per_dim(builder: Builder, b: dict[str, Any], name: str, dims: int) -> list[int]:
    """An int for every dim or a sequence of `dims` ints, as a list."""
    from .analyze_builder import Unsupported

    v = builder.constant(b.get(name, 0), name)
    v = [v] * dims if isinstance(v, int) and not isinstance(v, bool) else list(v)
    if len(v) != dims or not all(isinstance(i, int) and not isinstance(i, bool) for i in v):
        raise Unsupported(f"{name}={v!r} is not {dims} ints")
    return [int(i) for i in v]


def _padding(builder: Builder, b: dict[str, Any], dims: int, dilation: list[int],
             kernel: list[int]) -> list[int]:
    """The leading padding of each dim; "valid" is none and "same" half the kernel's span, which
    is reported where torch would pad one side more than the other."""
    from .analyze_builder import Unsupported

    padding = builder.constant(b["padding"], "padding")
    if padding == "valid":
        return [0] * dims
    if padding == "same":
        total = [d * (k - 1) for d, k in zip(dilation, kernel)]
        if any(t % 2 for t in total):
            raise Unsupported("padding='same' pads one side more than the other here")
        return [t // 2 for t in total]
    if isinstance(padding, str):
        raise Unsupported(f"padding={padding!r}")
    return _per_dim(builder, b, "padding", dims)


def conv_node(builder: Builder, spec: Spec, b: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The IR args and kwargs of one convolution from its bound arguments `b`."""
    from .analyze_builder import Unsupported

    dims, transposed = spec.fixed["dims"], spec.fixed["transposed"]
    x, w, bias = b["input"], b["weight"], b["bias"]
    args = [builder.tensor_arg(x, "the input"), builder.tensor_arg(w, "the weight"),
            builder.tensor_arg(bias, "the bias") if bias is not None else {"value": None}]
    kernel = [int(k) for k in builder.tensor_info(w).shape[2:]]
    if len(kernel) != dims:
        raise Unsupported(f"a conv{dims}d weight of shape {builder.tensor_info(w).shape}")
    stride = _per_dim(builder, b, "stride", dims)
    dilation = _per_dim(builder, b, "dilation", dims)
    groups = builder.constant(b["groups"], "groups")
    if not isinstance(groups, int) or isinstance(groups, bool):
        raise Unsupported(f"groups={groups!r} is not an int")
    kwargs = {"dims": dims, "stride": stride,
              "padding": _padding(builder, b, dims, dilation, kernel), "dilation": dilation,
              "groups": groups, "transposed": transposed,
              "output_padding": _per_dim(builder, b, "output_padding", dims) if transposed
              else [0] * dims}
    return args, kwargs


class ConvFamilies:
    """The Builder's conv family (self is an analyze_builder.Builder)."""

    def family_conv(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        """F.convNd / F.conv_transposeNd and their modules: `conv`."""
        args, kwargs = conv_node(self, spec, b)
        self.emit(node.name, "conv", args, kwargs, node)
