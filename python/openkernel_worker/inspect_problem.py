"""`problems show`: a reference's name, input and output shapes and dtypes, FLOPs and bytes.

FLOPs are counted by intercepting aten ops while the model runs (matmuls and convolutions exactly,
2*M*N*K; other ops as one FLOP per output element). Bytes are the unavoidable traffic: inputs,
parameters and outputs read or written once. Runs on the CPU at the problem's size (use --set to
shrink it).
"""
from __future__ import annotations

import math
import os
from typing import Any

from .compare import dtype_name, flatten
from .problem import build_model, load_reference, make_init_inputs, make_inputs


def _numel(shape: Any) -> int:
    return math.prod(int(s) for s in shape)


def _matmul_flops(func_name: str, args: Any, out: Any) -> int | None:
    import torch

    if func_name in ("mm", "bmm", "matmul") and len(args) >= 2:
        a, b = args[0], args[1]
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            return 2 * out.numel() * a.shape[-1]
    if func_name in ("addmm", "baddbmm") and len(args) >= 3:
        a = args[1]
        return 2 * out.numel() * a.shape[-1]
    if func_name in ("convolution", "_convolution", "conv2d", "conv1d", "conv3d"):
        w = args[1]
        transposed = bool(args[6]) if len(args) > 6 else False
        if transposed:
            x = args[0]
            return 2 * x.numel() * w.shape[1] * _numel(w.shape[2:]) // max(1, int(args[8]) if len(args) > 8 else 1) * w.shape[0] // max(1, x.shape[1])
        return 2 * out.numel() * _numel(w.shape[1:])
    return None


def count_flops(model: Any, inputs: list[Any]) -> tuple[int, Any, dict[str, int]]:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    totals: dict[str, int] = {}

    class Counter(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            out = func(*args, **(kwargs or {}))
            name = func.__name__.split(".")[0] if hasattr(func, "__name__") else str(func)
            name = getattr(func, "_overloadpacket", func).__name__ if hasattr(func, "_overloadpacket") else name
            first = out[0] if isinstance(out, (tuple, list)) and out else out
            if isinstance(first, torch.Tensor):
                flops = _matmul_flops(name, args, first)
                if flops is None:
                    flops = 0 if name in ("view", "reshape", "permute", "transpose", "t", "expand",
                                          "detach", "clone", "contiguous", "_to_copy", "copy_",
                                          "empty", "zeros", "ones", "as_strided", "slice",
                                          "select", "unsqueeze", "squeeze", "alias", "_unsafe_view",
                                          "empty_like", "zeros_like", "lift_fresh") else first.numel()
                totals[name] = totals.get(name, 0) + int(flops)
            return out

    with torch.no_grad(), Counter():
        out = model(*inputs)
    return sum(totals.values()), out, totals


def describe_value(v: Any) -> dict[str, Any]:
    import torch

    if isinstance(v, torch.Tensor):
        return {"shape": list(v.shape), "dtype": dtype_name(v.dtype), "bytes": v.numel() * v.element_size()}
    return {"value": repr(v)}


def inspect(path: str, overrides: dict[str, str]) -> dict[str, Any]:
    import torch

    ref = load_reference(path, overrides)
    init = make_init_inputs(ref.module, 0)
    model = build_model(ref.module.Model, init, 0, "cpu")
    inputs = make_inputs(ref.module, 0, "cpu")
    flops, out, by_op = count_flops(model, inputs)
    outputs = flatten(out)
    params = sum(p.numel() * p.element_size() for p in model.parameters()) if isinstance(
        model, torch.nn.Module) else 0
    ins = [describe_value(v) for v in inputs]
    outs = [describe_value(v) for v in outputs]
    nbytes = sum(d.get("bytes", 0) for d in ins + outs) + params
    name = os.path.splitext(os.path.basename(path))[0]
    return {"name": name, "path": path, "inputs": ins, "outputs": outs,
            "init_inputs": [repr(v) for v in init], "parameter_bytes": params, "flops": flops,
            "bytes": nbytes, "arithmetic_intensity": flops / nbytes if nbytes else None,
            "flops_by_op": by_op, "overrides": {k: repr(v) for k, v in ref.overrides.items()}}
