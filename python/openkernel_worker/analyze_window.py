"""`analyze`'s window and scan ops (docs/graph-ir.md, "Pooling, scans and index views"): max and
average pooling in 1-3 spatial dims (adaptive too), cumulative sums and products, and the index
views around them (flip, narrow, select, zeros_like, cat), as table entries
(analyze_ops.table_entries), module forms (analyze_ops.module_form) and the Builder's families (a
mixin of analyze_builder.Builder).
"""
from __future__ import annotations

import inspect as pyinspect
from typing import Any, Iterator

Entries = Iterator[tuple[list[str], Any]]


def _sig(fn: Any) -> pyinspect.Signature:
    return pyinspect.signature(fn)


def window_entries() -> Entries:
    """(callables by dotted name, `Tensor.` methods) -> Spec for the window family's ops."""
    from .analyze_ops import Spec

    for n in (1, 2, 3):
        yield ([f"torch.nn.functional.max_pool{n}d", f"torch.max_pool{n}d"],
               Spec("max_pool", _sig(lambda input, kernel_size, stride=None, padding=0, dilation=1,
                                     ceil_mode=False, return_indices=False: None), "pool",
                    {"rank": n}))
        yield ([f"torch.nn.functional.max_pool{n}d_with_indices"],
               Spec("max_pool", _sig(lambda input, kernel_size, stride=None, padding=0, dilation=1,
                                     ceil_mode=False, return_indices=True: None), "pool",
                    {"rank": n}))
    yield (["torch.nn.functional.avg_pool1d", "torch.avg_pool1d"],
           Spec("avg_pool", _sig(lambda input, kernel_size, stride=None, padding=0,
                                 ceil_mode=False, count_include_pad=True: None), "pool", {"rank": 1}))
    for n in (2, 3):
        yield ([f"torch.nn.functional.avg_pool{n}d", f"torch._C._nn.avg_pool{n}d"],
               Spec("avg_pool", _sig(lambda input, kernel_size, stride=None, padding=0,
                                     ceil_mode=False, count_include_pad=True,
                                     divisor_override=None: None), "pool", {"rank": n}))
    for n in (1, 2, 3):
        yield ([f"torch.nn.functional.adaptive_avg_pool{n}d",
                f"torch._C._nn.adaptive_avg_pool{n}d"] + (["torch.adaptive_avg_pool1d"] if n == 1
                                                           else []),
               Spec("adaptive_avg_pool", _sig(lambda input, output_size: None), "adaptive_pool",
                    {"rank": n}))
        yield ([f"torch.nn.functional.adaptive_max_pool{n}d"],
               Spec("adaptive_max_pool", _sig(lambda input, output_size, return_indices=False:
                                              None), "adaptive_pool", {"rank": n}))
    with_dtype = _sig(lambda input, dim, dtype=None: None)
    yield ["torch.cumsum", "Tensor.cumsum"], Spec("scan", with_dtype, "scan", {"combine": "sum"})
    yield ["torch.cumprod", "Tensor.cumprod"], Spec("scan", with_dtype, "scan", {"combine": "prod"})
    yield (["torch.flip", "Tensor.flip"],
           Spec("flip", _sig(lambda input, *dims: None), "flip"))
    yield (["torch.narrow", "Tensor.narrow"],
           Spec("narrow", _sig(lambda input, dim, start, length: None), "narrow"))
    yield (["torch.select", "Tensor.select"],
           Spec("select", _sig(lambda input, dim, index: None), "narrow"))
    yield (["torch.zeros_like"],
           Spec("zeros_like", _sig(lambda input, dtype=None, layout=None, device=None,
                                   requires_grad=False, memory_format=None: None), "zeros_like"))
    yield (["torch.cat", "torch.concat", "torch.concatenate"],
           Spec("cat", _sig(lambda tensors, dim=0: None), "cat"))


def window_module_form(mod: Any) -> tuple[Any, dict[str, Any]] | None:
    """nn.MaxPoolNd / nn.AvgPoolNd / nn.Adaptive{Avg,Max}PoolNd -> (the functional, its arguments
    but the input), else None."""
    import torch.nn as nn
    import torch.nn.functional as F

    for n, (mp, ap) in enumerate(((nn.MaxPool1d, nn.AvgPool1d), (nn.MaxPool2d, nn.AvgPool2d),
                                  (nn.MaxPool3d, nn.AvgPool3d)), start=1):
        if type(mod) is mp:
            return getattr(F, f"max_pool{n}d"), {
                "kernel_size": mod.kernel_size, "stride": mod.stride, "padding": mod.padding,
                "dilation": mod.dilation, "ceil_mode": mod.ceil_mode,
                "return_indices": mod.return_indices}
        if type(mod) is ap:
            params = {"kernel_size": mod.kernel_size, "stride": mod.stride,
                      "padding": mod.padding, "ceil_mode": mod.ceil_mode,
                      "count_include_pad": mod.count_include_pad}
            if n > 1:
                params["divisor_override"] = mod.divisor_override
            return getattr(F, f"avg_pool{n}d"), params
    adaptive = {nn.AdaptiveAvgPool1d: 1, nn.AdaptiveAvgPool2d: 2, nn.AdaptiveAvgPool3d: 3}
    if type(mod) in adaptive:
        return getattr(F, f"adaptive_avg_pool{adaptive[type(mod)]}d"), {
            "output_size": mod.output_size}
    adaptive = {nn.AdaptiveMaxPool1d: 1, nn.AdaptiveMaxPool2d: 2, nn.AdaptiveMaxPool3d: 3}
    if type(mod) in adaptive:
        return getattr(F, f"adaptive_max_pool{adaptive[type(mod)]}d"), {
            "output_size": mod.output_size, "return_indices": mod.return_indices}
    return None


def _ints(value: Any, rank: int, what: str) -> list[int]:
    """An int or a tuple of `rank` ints (a 1-tuple is repeated) as a list of `rank` ints."""
    from .analyze_builder import Unsupported

    vals = [value] if isinstance(value, int) else list(value)
    if len(vals) == 1:
        vals = vals * rank
    if len(vals) != rank or not all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
        raise Unsupported(f"{what} {value!r} is not {rank} constant ints")
    return [int(v) for v in vals]


class WindowFamilies:
    """The Builder's families for the window ops (self is an analyze_builder.Builder)."""

    def family_pool(self, node: Any, spec: Any, b: dict[str, Any]) -> None:
        from .analyze_builder import Unsupported

        rank = spec.fixed["rank"]
        x = b["input"]
        if self.rank(x) not in (rank + 1, rank + 2):
            raise Unsupported(f"{spec.op} over {rank} dims of a rank-{self.rank(x)} input")
        if bool(self.constant(b.get("return_indices", False), "return_indices")):
            raise Unsupported("return_indices=True returns a (values, indices) pair")
        kernel = _ints(self.constant(b["kernel_size"], "kernel_size"), rank, "kernel_size")
        stride = self.constant(b.get("stride"), "stride")
        kwargs: dict[str, Any] = {
            "kernel_size": kernel,
            "stride": kernel if stride is None or stride == [] or stride == () else
            _ints(stride, rank, "stride"),
            "padding": _ints(self.constant(b.get("padding", 0), "padding"), rank, "padding"),
            "ceil_mode": bool(self.constant(b.get("ceil_mode", False), "ceil_mode"))}
        if spec.op == "max_pool":
            kwargs["dilation"] = _ints(self.constant(b.get("dilation", 1), "dilation"), rank,
                                       "dilation")
        else:
            kwargs["count_include_pad"] = bool(self.constant(b.get("count_include_pad", True),
                                                             "count_include_pad"))
            divisor = self.constant(b.get("divisor_override"), "divisor_override")
            kwargs["divisor_override"] = None if divisor is None else int(divisor)
        self.emit(node.name, spec.op, [self.tensor_arg(x, "the input")], kwargs, node)

    def family_adaptive_pool(self, node: Any, spec: Any, b: dict[str, Any]) -> None:
        """adaptive_avg_pool / adaptive_max_pool {output_size}: one int per pooled dim, a None
        entry resolved to the input's extent; Unsupported (the call kept) where an extent does
        not divide its input extent, windows of uneven sizes that no lowering computes."""
        from .analyze_builder import Unsupported

        rank = spec.fixed["rank"]
        x = b["input"]
        shape = self.tensor_info(x).shape
        if len(shape) not in (rank + 1, rank + 2):
            raise Unsupported(f"{spec.op} over {rank} dims of a rank-{len(shape)} input")
        if bool(self.constant(b.get("return_indices", False), "return_indices")):
            raise Unsupported("return_indices=True returns a (values, indices) pair")
        size = self.constant(b["output_size"], "output_size")
        size = [size] * rank if isinstance(size, int) or size is None else list(size)
        if len(size) == 1:
            size = size * rank
        size = _ints([shape[len(shape) - rank + i] if s is None else s
                      for i, s in enumerate(size)], rank, "output_size")
        for extent, out in zip(shape[len(shape) - rank:], size):
            if out < 1 or extent % out != 0:  # PyTorch's floor/ceil windows, which overlap
                raise Unsupported(f"{spec.op} of extent {extent} to {out}: windows of uneven "
                                  "sizes")
        self.emit(node.name, spec.op, [self.tensor_arg(x, "the input")], {"output_size": size},
                  node)

    def family_scan(self, node: Any, spec: Any, b: dict[str, Any]) -> None:
        from .analyze_builder import _one_dim

        x = b["input"]
        dim = _one_dim(self.constant(b["dim"], "dim"), self.rank(x))
        self.emit(node.name, "scan", [self.tensor_arg(x, "the input")],
                  {"combine": spec.fixed["combine"], "dim": dim}, node)

    def family_flip(self, node: Any, spec: Any, b: dict[str, Any]) -> None:
        from .analyze_builder import _dims

        x = b["input"]
        given = self.constant(b.get("dims", ()), "dims")
        if len(given) == 1 and isinstance(given[0], (list, tuple)):
            given = given[0]
        dims = _dims(list(given), self.rank(x)) or []
        self.emit(node.name, "flip", [self.tensor_arg(x, "the input")], {"dims": dims}, node)

    def family_narrow(self, node: Any, spec: Any, b: dict[str, Any]) -> None:
        """narrow {dim, start, length}; select {dim, index} (the dim dropped)."""
        from .analyze_builder import Unsupported, _one_dim

        x = b["input"]
        size = self.tensor_info(x).shape
        dim = _one_dim(self.constant(b["dim"], "dim"), len(size))
        key = "start" if spec.op == "narrow" else "index"
        start = self.constant(b[key], key)
        if not isinstance(start, int):
            raise Unsupported(f"{key} {start!r} is not a constant int")
        start = start + size[dim] if start < 0 else start
        kwargs = {"dim": dim, key: start}
        if spec.op == "narrow":
            kwargs["length"] = int(self.constant(b["length"], "length"))
        self.emit(node.name, spec.op, [self.tensor_arg(x, "the input")], kwargs, node)

    def family_zeros_like(self, node: Any, spec: Any, b: dict[str, Any]) -> None:
        """zeros_like(x): only the shape is read (a dtype= was refused by DEFAULT_ONLY)."""
        self.emit(node.name, "zeros_like", [self.tensor_arg(b["input"], "the input")], {}, node)

    def family_cat(self, node: Any, spec: Any, b: dict[str, Any]) -> None:
        from .analyze_builder import Unsupported, _one_dim

        tensors = list(b["tensors"])
        if not tensors or not all(self.is_tensor(t) for t in tensors):
            raise Unsupported("cat of something other than a list of tensors")
        dim = _one_dim(self.constant(b.get("dim", 0), "dim"), self.rank(tensors[0]))
        self.emit(node.name, "cat", [self.form(t) for t in tensors], {"dim": dim}, node)
